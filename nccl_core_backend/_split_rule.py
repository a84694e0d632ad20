"""Which backend a new group may split its communicator from.

A new group on an eagerly initialised default group (``device_id=``) is made
by splitting the default group's communicator, and the ranks left out of it
call ``perform_nocolor_split`` on that same communicator.  A split keeps the
parent's backend, so it is right only when the new group asks for the
parent's backend on that device.

torch >= 2.15 checks this (``_get_split_source(pg, requested_backend)``).
Older torch (2.11 on the GPU hosts) returns the default group's backend
whatever the new group asks for, which breaks mixing backends:

* ``new_group(backend="nccl")`` under a default ``nccl_core`` group hands our
  backend to ``ProcessGroupNCCL.Options.split_from`` (a ``TypeError``);
* the ranks outside a ``gloo`` or ``nccl`` subgroup run a no-color split on
  the parent that its members never join (they wait until the timeout).

On such a torch, :func:`install` gives torch's rule the check of newer
releases: ``_new_process_group_helper`` records the backend it was asked for,
and ``_get_split_source`` returns no source when the names differ.
"""

from __future__ import annotations

import contextvars
import functools
import inspect

# The backend that the _new_process_group_helper running now was asked for.
_requested: contextvars.ContextVar = contextvars.ContextVar("nccl_core_requested_backend", default=None)


def backend_name_for_device(backend, device_type: str) -> str | None:
    """The backend name ``backend`` (``"nccl_core"``, ``"cpu:gloo,cuda:nccl"``,
    a ``dist.Backend``) uses on ``device_type``, or None where it names none."""
    text = str(backend).strip().lower() if backend is not None else ""
    if not text:
        return None
    if ":" not in text:
        return text
    for entry in text.split(","):
        device, _, name = entry.partition(":")
        if device.strip() == device_type:
            return name.strip() or None
    return None


def _takes_requested_backend(rule) -> bool:
    return len(inspect.signature(rule).parameters) >= 2


def split_source(pg, requested):
    """torch's split source for a new group asking for ``requested``, None where
    the new group must build its own communicator.  On torch < 2.15,
    ``requested`` None gives torch's answer unchanged (a caller that did not
    say what it creates)."""
    from torch.distributed import distributed_c10d as c10d

    rule = _original_rule(c10d)
    if _takes_requested_backend(rule):
        return rule(pg, requested)
    source = rule(pg)
    if source is None or requested is None:
        return source
    parent = _parent_name(c10d, pg)  # None without a bound device
    if parent is None or backend_name_for_device(requested, pg.bound_device_id.type) != parent:
        return None
    return source


def _parent_name(c10d, pg) -> str | None:
    state = c10d._world.pg_map.get(pg)
    device = pg.bound_device_id
    if state is None or device is None:
        return None
    return backend_name_for_device(state[0], device.type)


def _original_rule(c10d):
    rule = c10d._get_split_source
    return getattr(rule, "__wrapped_by_nccl_core__", rule)


def install() -> bool:
    """Gives an older torch's split rule the backend check (idempotent).
    Returns whether torch needed it."""
    from torch.distributed import distributed_c10d as c10d

    rule = getattr(c10d, "_get_split_source", None)
    helper = getattr(c10d, "_new_process_group_helper", None)
    if rule is None or helper is None or _takes_requested_backend(_original_rule(c10d)):
        return False
    if getattr(rule, "__wrapped_by_nccl_core__", None) is not None:
        return True
    helper_signature = inspect.signature(helper)

    @functools.wraps(helper)
    def new_process_group_helper(*args, **kwargs):
        try:
            requested = helper_signature.bind_partial(*args, **kwargs).arguments.get("backend")
        except TypeError:
            requested = None  # torch raises its own error for these arguments
        token = _requested.set(requested)
        try:
            return helper(*args, **kwargs)
        finally:
            _requested.reset(token)

    @functools.wraps(rule)
    def get_split_source(pg):
        return split_source(pg, _requested.get())

    get_split_source.__wrapped_by_nccl_core__ = rule
    c10d._new_process_group_helper = new_process_group_helper
    c10d._get_split_source = get_split_source
    return True
