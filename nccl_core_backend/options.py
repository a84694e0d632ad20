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
                              SHRINK_ABORT)); 1 end the process (the end
                              releases the communicator); 2 raise, aborting
                              it as the error is raised; 3 end the process
                              (default; torchrun sets 1 where unset).
                              "fail" and "abort" mean 0 and 2.
NCCL_CORE_CALL_CHECK_MS       -                       period of the cross-rank
                                                      call check (ms; 0 off;
                                                      default 1000)
NCCL_CORE_UNRAISED_ERROR_GRACE_MS -                   0 and 2: an error no
                                                      program thread raised
                                                      within this ends the
                                                      process (default 2000)
NCCL_CORE_ENABLE_MONITORING   TORCH_NCCL_ENABLE_MONITORING  heartbeat monitor
NCCL_CORE_HEARTBEAT_TIMEOUT_SEC TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC  its limit
NCCL_CORE_TRACE_BUFFER_SIZE   TORCH_NCCL_TRACE_BUFFER_SIZE  ops each rank keeps
                                                      for the desync report
NCCL_CORE_ENABLE_TIMING       TORCH_NCCL_ENABLE_TIMING  ops timed on the GPU
                                                      (work._get_duration())
NCCL_CORE_NAN_CHECK           TORCH_NCCL_NAN_CHECK    scan what ops send for
                                                      NaN on the GPU and raise
                                                      it as the group's error;
                                                      "strict" (nccl_core only):
                                                      wait for the scan and
                                                      refuse the op first
NCCL_CORE_REGISTER_ALLOCATOR_SEGMENTS
                              TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK
                              (and torch's older NCCL_USE_TENSOR_REGISTER_
                              ALLOCATOR_HOOK): every caching-allocator segment
                              is registered with the group's communicator
============================  ======================  =========================

``pg_options`` may also be torch's ``ProcessGroupNCCL.Options``: its fields map
onto ours (see ``from_torch_nccl_options``), and a field nccl_core cannot
honour raises a ``ValueError`` naming it.
"""

from __future__ import annotations

import copy
import os
import warnings
from datetime import timedelta
from typing import Mapping

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_flag(env: Mapping[str, str], names: tuple[str, ...]) -> bool | None:
    """The first of `names` that `env` sets, as a boolean (1/true/yes/on,
    0/false/no/off/empty); None where none is set; ValueError naming the
    variable for anything else."""
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
    blocking = env_flag(env, ("NCCL_CORE_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"))
    if blocking is not None:
        out["blocking_wait"] = blocking
    nonblocking = env_flag(env, ("NCCL_CORE_COMM_NONBLOCKING", "TORCH_NCCL_USE_COMM_NONBLOCKING"))
    if nonblocking is not None:
        out["blocking"] = not nonblocking
    segments = env_flag(env, ("NCCL_CORE_REGISTER_ALLOCATOR_SEGMENTS",
                              "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK",
                              "NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"))
    if segments is not None:
        out["register_allocator_segments"] = segments
    high = env_flag(env, ("NCCL_CORE_HIGH_PRIORITY", "TORCH_NCCL_HIGH_PRIORITY"))
    if high is not None:
        out["is_high_priority_stream"] = high
    handling = _error_handling(env)
    if handling is not None:
        out["error_handling"] = handling
    fast = _nonnegative_int(env, "NCCL_CORE_FAST_PATH_MAX_BYTES")
    if fast is not None:
        out["fast_path_max_bytes"] = fast
    eager = _nonnegative_int(env, "NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES")
    if eager is not None:
        out["eager_fast_path_max_bytes"] = eager
    for key in ("push_min_bytes", "push_max_bytes"):
        value = _nonnegative_int(env, "NCCL_CORE_" + key.upper())
        if value is not None:
            out[key] = value
    two_shot = _nonnegative_int(env, "NCCL_CORE_TWO_SHOT_MIN_BYTES")
    if two_shot is not None:
        out["two_shot_min_bytes"] = two_shot
    one_way = _nonnegative_int(env, "NCCL_CORE_ONE_WAY_MAX_BYTES")
    if one_way is not None:
        out["one_way_max_bytes"] = one_way
    ctas = _positive_int(env, "NCCL_CORE_PUSH_CTAS")
    if ctas is not None:
        out["push_ctas"] = ctas
    trace = None
    for name in ("NCCL_CORE_TRACE_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        trace = _nonnegative_int(env, name)
        if trace is not None:
            out["trace_buffer_size"] = trace
            break
    timing = env_flag(env, ("NCCL_CORE_ENABLE_TIMING", "TORCH_NCCL_ENABLE_TIMING"))
    if timing is not None:
        out["enable_timing"] = timing
    if env.get("NCCL_CORE_NAN_CHECK", "").strip().lower() == "strict":
        out["nan_check"] = out["nan_check_strict"] = True
    else:
        nan_check = env_flag(env, ("NCCL_CORE_NAN_CHECK", "TORCH_NCCL_NAN_CHECK"))
        if nan_check is not None:
            out["nan_check"] = nan_check
    monitoring = env_flag(env, ("NCCL_CORE_ENABLE_MONITORING", "TORCH_NCCL_ENABLE_MONITORING"))
    for name in ("NCCL_CORE_HEARTBEAT_TIMEOUT_SEC", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"):
        seconds = _positive_int(env, name)
        if seconds is not None:
            out["heartbeat_timeout"] = timedelta(seconds=seconds)
            break
    if monitoring is False:
        out["heartbeat_timeout"] = timedelta(0)
    check = _nonnegative_int(env, "NCCL_CORE_CALL_CHECK_MS")
    if check is not None:
        out["call_check_interval"] = timedelta(milliseconds=check)
    grace = _nonnegative_int(env, "NCCL_CORE_UNRAISED_ERROR_GRACE_MS")
    if grace is not None:
        out["unraised_error_grace"] = timedelta(milliseconds=grace)
    period = _positive_int(env, "NCCL_CORE_WATCHDOG_MS")
    if period is not None:
        out["watchdog_interval"] = timedelta(milliseconds=period)
    return out


_UNSET = -(2**31)  # NCCL_CONFIG_UNDEF_INT: torch's NCCLConfig leaves the field to NCCL
# NCCLConfig fields copied as they are when set.
_CONFIG_INTS = ("cga_cluster_size", "min_ctas", "max_ctas", "split_share", "cta_policy",
                "traffic_class")
# NCCLConfig fields nccl_core does not pass to NCCL, and why.
_CONFIG_REFUSED = {
    "nvls_ctas": "nccl_core never creates NVLink SHARP (NVLS) resources",
    "collnet_enable": "nccl_core does not configure CollNet",
    "max_p2p_peers": "nccl_core does not pass maxP2pPeers to NCCL",
}


def from_torch_nccl_options(torch_opts, options_type=None):
    """``nccl_core_backend.Options`` equivalent to torch's ``ProcessGroupNCCL.Options``.

    Mapped: ``is_high_priority_stream``, ``_timeout``, and ``config``'s
    ``blocking``, ``cga_cluster_size``, ``min_ctas``, ``max_ctas``,
    ``split_share``, ``cta_policy``, ``traffic_class``, ``net_name``,
    ``comm_name`` (unset fields stay NCCL's defaults).  A field set to what
    nccl_core cannot honour raises ``ValueError`` naming it: ``split_from``
    (nccl_core splits from the default group by itself), ``config.nvls_ctas``,
    ``config.collnet_enable``, ``config.max_p2p_peers``, ``lazy_init``,
    ``use_pg_for_symm_mem_rendezvous``.  ``enable_reconfigure`` (torch >= 2.15)
    carries over.
    """
    if options_type is None:
        from nccl_core_backend._C import Options as options_type
    opts = options_type()
    opts.is_high_priority_stream = bool(torch_opts.is_high_priority_stream)
    opts._timeout = torch_opts._timeout
    if getattr(torch_opts, "split_from", None) is not None:
        raise ValueError(
            "ProcessGroupNCCL.Options.split_from cannot be honoured by nccl_core: it names a "
            "ProcessGroupNCCL; nccl_core groups split from the default group by themselves "
            "(leave split_from unset)")
    if getattr(torch_opts, "enable_reconfigure", False):
        # torch >= 2.15: the group waits for dist._reconfigure (backend/reconfigure.cpp).
        opts.enable_reconfigure = True
    for name in ("lazy_init", "use_pg_for_symm_mem_rendezvous"):
        if getattr(torch_opts, name, False):
            raise ValueError(
                f"ProcessGroupNCCL.Options.{name}=True cannot be honoured by nccl_core "
                "(leave it False)")
    config = torch_opts.config
    blocking = getattr(config, "blocking", _UNSET)
    if blocking not in (_UNSET, None):
        if blocking not in (0, 1):
            raise ValueError(f"ProcessGroupNCCL.Options.config.blocking must be 0 or 1, got {blocking}")
        opts.blocking = bool(blocking)
    for name in _CONFIG_INTS:
        value = getattr(config, name, _UNSET)
        if value not in (_UNSET, None):
            setattr(opts, name, int(value))
    for name in ("net_name", "comm_name"):
        value = getattr(config, name, None)
        if value:
            setattr(opts, name, str(value))
    for name, why in _CONFIG_REFUSED.items():
        value = getattr(config, name, _UNSET)
        if value not in (_UNSET, None):
            raise ValueError(
                f"ProcessGroupNCCL.Options.config.{name}={value} cannot be honoured: {why} "
                "(leave it unset)")
    return opts


def _is_torch_nccl_options(pg_options) -> bool:
    try:
        from torch.distributed import ProcessGroupNCCL
    except ImportError:
        return False
    return isinstance(pg_options, ProcessGroupNCCL.Options)


# torch's NCCL variables that nccl_core reads differently or not at all, and
# what it does instead (docs/migrating.md has the whole table).
UNHONOURED_TORCH_ENV = {
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "the flight recorder's entries and the desync report are "
                                  "part of the timeout error itself; nothing is dumped to files",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "no dump files (see TORCH_NCCL_DUMP_ON_TIMEOUT)",
    "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "no dump files (see TORCH_NCCL_DUMP_ON_TIMEOUT)",
    "TORCH_NCCL_EXTRA_DUMP_ON_EXEC": "no dump files (see TORCH_NCCL_DUMP_ON_TIMEOUT)",
    "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": "no dump files; the desync report waits "
                                           "Options.desync_report_wait",
    "TORCH_NCCL_DESYNC_DEBUG": "the desync report is always on (Options.trace_buffer_size > 0)",
    "TORCH_NCCL_BCAST_UNIQUEID": "the unique id always travels through the store",
    "TORCH_NCCL_RANKS_PER_ROOT": "communicators are created with ncclCommInitRankConfig",
    "TORCH_NCCL_PROPAGATE_ERROR": "errors are not propagated between ranks through the store; "
                                  "peers of a failed rank time out and report a desync",
    "TORCH_NCCL_TRACE_CPP_STACK": "no C++ stacks in the flight recorder",
    "TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN": "no C++ stacks are logged",
    "TORCH_NCCL_COORD_CHECK_MILSEC": "no cross-rank dump coordination",
    "TORCH_NCCL_RETHROW_CUDA_ERRORS": "CUDA errors are always raised",
    "TORCH_NCCL_NONBLOCKING_TIMEOUT": "non-blocking communicators use the group's timeout",
    "NCCL_CORE_SYMMETRIC_MAX_BYTES": "automatic symmetric windows are gone (they "
                                     "relied on the ranks' allocators looking alike); the push "
                                     "all-reduce covers those sizes for any memory, and "
                                     "Communicator.register_window(..., WindowFlag.COLL_SYMMETRIC) "
                                     "gives NCCL's symmetric kernels a window",
}
_warned_env: set[str] = set()


def warn_unhonoured_env(env: Mapping[str, str] | None = None) -> list[str]:
    """Warns once per variable about set TORCH_NCCL_* variables nccl_core does
    not read, and retired NCCL_CORE_* ones (so a setting never passes in silence); returns their names."""
    env = os.environ if env is None else env
    names = [n for n in UNHONOURED_TORCH_ENV if n in env and n not in _warned_env]
    for n in names:
        _warned_env.add(n)
        warnings.warn(f"nccl_core does not read {n}: {UNHONOURED_TORCH_ENV[n]}", stacklevel=3)
    return names


def make_options(pg_options=None, timeout=None, env: Mapping[str, str] | None = None):
    """The ``Options`` a new group is built with.

    ``pg_options`` (copied, never mutated) must be ``nccl_core_backend.Options``,
    torch's ``ProcessGroupNCCL.Options`` (mapped by ``from_torch_nccl_options``)
    or None; environment settings apply on top; ``timeout`` (a timedelta or
    seconds) is the group's timeout.
    """
    from nccl_core_backend._C import Options

    if pg_options is None:
        opts = Options()
    elif isinstance(pg_options, Options):
        opts = copy.copy(pg_options)
    elif _is_torch_nccl_options(pg_options):
        opts = from_torch_nccl_options(pg_options, Options)
    else:
        raise TypeError(
            "pg_options for backend nccl_core must be nccl_core_backend.Options or "
            f"torch.distributed.ProcessGroupNCCL.Options, got {type(pg_options).__name__}"
        )
    for key, value in env_settings(env).items():
        setattr(opts, key, value)
    warn_unhonoured_env(env)
    if timeout is not None:
        if not isinstance(timeout, timedelta):
            timeout = timedelta(seconds=float(timeout))
        if timeout.total_seconds() <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        opts._timeout = timeout
    return opts
