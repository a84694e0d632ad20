"""Process-group options of nccl_core and the environment variables they read.

``NCCL_CORE_*`` variables win over their ``TORCH_NCCL_*`` equivalents.

============================  ======================  =========================
variable                      torch equivalent        effect
============================  ======================  =========================
NCCL_CORE_BLOCKING_WAIT       TORCH_NCCL_BLOCKING_WAIT wait() blocks the CPU
NCCL_CORE_HIGH_PRIORITY       TORCH_NCCL_HIGH_PRIORITY high-priority stream
NCCL_CORE_WATCHDOG_MS         -                       watchdog period (ms)
NCCL_CORE_ERROR_HANDLING      TORCH_NCCL_ASYNC_ERROR_HANDLING
                              torch's values: 0 fail the work, keep the
                              communicator (for dist.shrink_group(...,
                              SHRINK_ABORT)); 1 abort it and end the process;
                              2 abort it and raise; 3 end the process (default).
                              "fail" and "abort" mean 0 and 2.
NCCL_CORE_ENABLE_MONITORING   TORCH_NCCL_ENABLE_MONITORING  heartbeat monitor
NCCL_CORE_HEARTBEAT_TIMEOUT_SEC TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC  its limit
NCCL_CORE_TRACE_BUFFER_SIZE   TORCH_NCCL_TRACE_BUFFER_SIZE  ops each rank keeps
                                                      for the desync report
NCCL_CORE_REGISTER_ALLOCATOR_SEGMENTS
                              TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK
                              (and torch's older NCCL_USE_TENSOR_REGISTER_
                              ALLOCATOR_HOOK): every caching-allocator segment
                              is registered with the group's communicator
============================  ======================  =========================
"""

from __future__ import annotations

import copy
import os
from datetime import timedelta
from typing import Mapping

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _flag(env: Mapping[str, str], names: tuple[str, ...]) -> bool | None:
    for name in names:
        if name in env:
            value = env[name].strip().lower()
            if value in _TRUE:
                return True
            if value in _FALSE:
                return False
            raise ValueError(f"{name}={env[name]!r} is not a boolean (use 0 or 1)")
    return None


def _int_at_least(env: Mapping[str, str], name: str, low: int) -> int | None:
    if name not in env:
        return None
    try:
        value = int(env[name])
    except ValueError:
        raise ValueError(f"{name}={env[name]!r} is not an integer") from None
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


def _positive_int(env: Mapping[str, str], name: str) -> int | None:
    return _int_at_least(env, name, 1)


def _nonnegative_int(env: Mapping[str, str], name: str) -> int | None:
    return _int_at_least(env, name, 0)


_HANDLING = {"0": 0, "1": 1, "2": 2, "3": 3, "fail": 0, "abort": 2}


def _error_handling(env: Mapping[str, str]) -> int | None:
    for name in ("NCCL_CORE_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"):
        value = env.get(name)
        if value is None:
            continue
        mode = _HANDLING.get(value.strip().lower())
        if mode is None or (name.startswith("TORCH") and not value.strip().isdigit()):
            raise ValueError(f"{name} must be 0-3 (or 'fail' / 'abort' for "
                             f"NCCL_CORE_ERROR_HANDLING), got {value!r}")
        return mode
    return None


def env_settings(env: Mapping[str, str] | None = None) -> dict:
    """Settings from the environment: only the variables that are set."""
    env = os.environ if env is None else env
    out = {}
    blocking = _flag(env, ("NCCL_CORE_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"))
    if blocking is not None:
        out["blocking_wait"] = blocking
    nonblocking = _flag(env, ("NCCL_CORE_COMM_NONBLOCKING", "TORCH_NCCL_USE_COMM_NONBLOCKING"))
    if nonblocking is not None:
        out["blocking"] = not nonblocking
    segments = _flag(env, ("NCCL_CORE_REGISTER_ALLOCATOR_SEGMENTS",
                           "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK",
                           "NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"))
    if segments is not None:
        out["register_allocator_segments"] = segments
    high = _flag(env, ("NCCL_CORE_HIGH_PRIORITY", "TORCH_NCCL_HIGH_PRIORITY"))
    if high is not None:
        out["is_high_priority_stream"] = high
    handling = _error_handling(env)
    if handling is not None:
        out["error_handling"] = handling
    fast = _nonnegative_int(env, "NCCL_CORE_FAST_PATH_MAX_BYTES")
    if fast is not None:
        out["fast_path_max_bytes"] = fast
    symmetric = _nonnegative_int(env, "NCCL_CORE_SYMMETRIC_MAX_BYTES")
    if symmetric is not None:
        out["symmetric_max_bytes"] = symmetric
    for key in ("push_min_bytes", "push_max_bytes"):
        value = _nonnegative_int(env, "NCCL_CORE_" + key.upper())
        if value is not None:
            out[key] = value
    ctas = _positive_int(env, "NCCL_CORE_PUSH_CTAS")
    if ctas is not None:
        out["push_ctas"] = ctas
    trace = None
    for name in ("NCCL_CORE_TRACE_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        trace = _nonnegative_int(env, name)
        if trace is not None:
            out["trace_buffer_size"] = trace
            break
    monitoring = _flag(env, ("NCCL_CORE_ENABLE_MONITORING", "TORCH_NCCL_ENABLE_MONITORING"))
    for name in ("NCCL_CORE_HEARTBEAT_TIMEOUT_SEC", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"):
        seconds = _positive_int(env, name)
        if seconds is not None:
            out["heartbeat_timeout"] = timedelta(seconds=seconds)
            break
    if monitoring is False:
        out["heartbeat_timeout"] = timedelta(0)
    period = _positive_int(env, "NCCL_CORE_WATCHDOG_MS")
    if period is not None:
        out["watchdog_interval"] = timedelta(milliseconds=period)
    return out


def make_options(pg_options=None, timeout=None, env: Mapping[str, str] | None = None):
    """The ``Options`` a new group is built with.

    ``pg_options`` (copied, never mutated) must be ``nccl_core_backend.Options``
    or None; environment settings apply on top; ``timeout`` (a timedelta or
    seconds) is the group's timeout.
    """
    from nccl_core_backend._C import Options

    if pg_options is None:
        opts = Options()
    elif isinstance(pg_options, Options):
        opts = copy.copy(pg_options)
    else:
        raise TypeError(
            "pg_options for backend nccl_core must be nccl_core_backend.Options, "
            f"got {type(pg_options).__name__}"
        )
    for key, value in env_settings(env).items():
        setattr(opts, key, value)
    if timeout is not None:
        if not isinstance(timeout, timedelta):
            timeout = timedelta(seconds=float(timeout))
        if timeout.total_seconds() <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        opts._timeout = timeout
    return opts
