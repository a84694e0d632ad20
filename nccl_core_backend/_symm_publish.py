"""nccl_core communicators for torch's NCCL symmetric memory.

torch >= 2.15 lets a communicator that is not a ``ProcessGroupNCCL`` be found
by ``torch.distributed._symmetric_memory`` through
``torch.distributed._symmetric_memory._nccl.register_external_nccl_comm``.
``install()`` hooks the C++ backend so that every nccl_core group's
communicator is published under the group's name when it is created and
withdrawn before it is finalized or aborted; then
``set_backend("NCCL")`` + ``rendezvous(t, group)`` works over nccl_core groups.

torch 2.11 has no such entry point: its NCCL symmetric-memory backend only
accepts ``ProcessGroupNCCL``, and nothing is installed (``available()`` is
False).  torch's CUDA backend works over nccl_core groups on any torch; it is
the default for CUDA tensors, and torch 2.11 refuses ``set_backend("CUDA")``
while it is (the default is not registered by name): check
``get_backend(device)`` before setting it.

A communicator aborted by the watchdog stays published until the group is
destroyed or aborted (``destroy_process_group``), as with torch's own backend.
A group whose name is already published (a shrunk group keeps its parent's)
is not published again.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_installed = False
# (group_name, device) -> (comm_ptr, torch's NcclCommRegistration)
_published: dict[tuple[str, int], tuple[int, object]] = {}


def available() -> bool:
    """Whether this torch can publish an external NCCL communicator."""
    try:
        from torch._C._distributed_c10d import _register_external_nccl_comm  # noqa: F401
        from torch.distributed._symmetric_memory._nccl import (  # noqa: F401
            register_external_nccl_comm,
        )
    except ImportError:
        return False
    return True


def install() -> bool:
    """Installs the publisher once per process; False where torch cannot publish."""
    global _installed
    with _lock:
        if _installed:
            return True
        if not available():
            return False
        from nccl_core_backend import _C

        _C._set_comm_listener(_on_communicator)
        _installed = True
        return True


def published() -> dict[tuple[str, int], int]:
    """{(group_name, device): comm_ptr} of the communicators published now."""
    with _lock:
        return {key: ptr for key, (ptr, _) in _published.items()}


def _on_communicator(group_name: str, comm_ptr: int, device: int, up: bool) -> None:
    import torch
    from torch.distributed._symmetric_memory._nccl import register_external_nccl_comm

    key = (group_name, device)
    with _lock:
        if up:
            if key in _published:
                return
            reg = register_external_nccl_comm(group_name, comm_ptr, torch.device("cuda", device))
            _published[key] = (comm_ptr, reg)
            return
        entry = _published.get(key)
        if entry is None or entry[0] != comm_ptr:
            return  # published by another communicator under this name
        del _published[key]
    entry[1].unregister()
