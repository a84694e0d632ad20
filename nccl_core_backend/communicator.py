"""The communicator of a process group, and NCCL group calls.

The ``Communicator``, resource classes and raw operations are implemented in
C++ (``nccl_core_backend._C``); this module finds a group's communicator and
adds the ``group()`` context manager.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Literal, overload

import torch
import torch.distributed as dist

from nccl_core_backend.errors import NcclInvalid

if TYPE_CHECKING:
    from nccl_core_backend._C import Communicator


def _ext():
    from nccl_core_backend import _C

    return _C


def get_backend(group: dist.ProcessGroup | None = None):
    """The ``ProcessGroupNcclCore`` behind ``group`` (default: the world group)."""
    if group is None:
        if not dist.is_initialized():
            raise NcclInvalid("torch.distributed is not initialized; call init_process_group")
        group = dist.distributed_c10d._get_default_group()
    try:
        backend = group._get_backend(torch.device("cuda"))
    except RuntimeError as e:
        raise NcclInvalid(f"this group has no CUDA backend: {e}") from None
    from nccl_core_backend._registration import unwrap

    backend = unwrap(backend)  # TORCH_DISTRIBUTED_DEBUG=DETAIL wraps it
    if not isinstance(backend, _ext().ProcessGroupNcclCore):
        raise NcclInvalid(
            f"this group's CUDA backend is {type(backend).__name__}, not nccl_core; "
            'create it with backend="nccl_core"'
        )
    return backend


def get_communicator(group: dist.ProcessGroup | None = None) -> Communicator:
    """The live :class:`Communicator` of ``group``'s nccl_core backend.

    The process group and the returned object share one NCCL communicator, so
    buffers registered here also speed up ``dist.*`` calls on the group.  If
    the group has not connected yet, this creates the communicator, which is
    collective: every rank of the group must call it.
    """
    return get_backend(group).communicator()


def group_start() -> None:
    """``ncclGroupStart``: queue raw operations until :func:`group_end`."""
    _ext().group_start()


@dataclass(frozen=True)
class GroupSimInfo:
    """What :func:`group_end` with ``simulate=True`` returns."""

    estimated_time: float
    """NCCL's estimate of the group's time (``ncclSimInfo_t.estimatedTime``)."""


@overload
def group_end(*, simulate: Literal[False] = False) -> None: ...
@overload
def group_end(*, simulate: Literal[True]) -> GroupSimInfo: ...
@overload
def group_end(*, simulate: bool) -> GroupSimInfo | None: ...
def group_end(*, simulate: bool = False) -> GroupSimInfo | None:
    """``ncclGroupEnd``: launch the queued operations.

    With ``simulate=True`` (``ncclGroupSimulateEnd``) the outermost group ends
    without launching anything, and NCCL's estimate of its time comes back in
    a :class:`GroupSimInfo`.  A communicator of one rank has no algorithm
    to model, and NCCL leaves the estimate at -1.0 (``NCCL_UNDEF_FLOAT``).
    """
    if not isinstance(simulate, bool):
        raise NcclInvalid(f"simulate must be a bool, got {type(simulate).__name__}")
    if not simulate:
        _ext().group_end()
        return None
    return GroupSimInfo(estimated_time=_ext().group_simulate_end())


@contextlib.contextmanager
def group() -> Iterator[None]:
    """``with group(): ...`` brackets raw operations with group_start/group_end
    (no simulation: call group_end(simulate=True) yourself for that)."""
    group_start()
    try:
        yield
    finally:
        group_end()


def get_error_string(nccl_result) -> str:
    """Human-readable string of an NCCL result code (``Result`` or int)."""
    return _ext().get_error_string(nccl_result)
