"""Collectives written with NCCL's device API, on a device communicator.

They prove that :meth:`Communicator.create_dev_comm` gives kernels real
work to do, and they are small enough to read as a template for your own
(see ``examples/device_kernel/``).  Both run one-shot over the LSA team: every
rank reads its peers' copies of a symmetric window through load/store
pointers, between two LSA barriers.  They need:

- a device communicator with ``lsa_barrier_count >= 1`` (one barrier per
  thread block; up to 32 blocks are used);
- a window registered on the same communicator over NCCL memory, holding this
  rank's input at element ``offset`` (in elements of ``out``'s dtype);
- every rank reachable by load/store (one NVLink domain);
- nccl_core built against the NCCL release family that is loaded (the
  ncclDevComm layout is release-specific).

Example::

    comm = nccl_core_backend.get_communicator()
    dev = comm.create_dev_comm(NCCLDevCommRequirements(lsa_barrier_count=32))
    buf = nccl_core_backend.torch.empty(n, device="cuda")
    win = comm.register_window(buf)
    buf.copy_(x)
    out = torch.empty_like(buf)
    nccl_core_backend.device.all_reduce(dev, win, out)      # out = sum over ranks
"""

from __future__ import annotations

from typing import Any

from nccl_core_backend.constants import NcclRedOp

__all__ = ["all_reduce", "all_gather", "kernels_available"]


def _red_op(op: Any) -> int:
    import torch.distributed as dist

    from nccl_core_backend.errors import NcclInvalid

    if isinstance(op, dist.ReduceOp.RedOpType):
        mapping = {dist.ReduceOp.SUM: NcclRedOp.SUM, dist.ReduceOp.PRODUCT: NcclRedOp.PROD,
                   dist.ReduceOp.MAX: NcclRedOp.MAX, dist.ReduceOp.MIN: NcclRedOp.MIN,
                   dist.ReduceOp.AVG: NcclRedOp.AVG}
        if op not in mapping:
            raise NcclInvalid(f"device all_reduce does not support {op}")
        return int(mapping[op])
    if isinstance(op, bool) or not isinstance(op, int):
        raise NcclInvalid("op must be an NcclRedOp, int or torch.distributed.ReduceOp, "
                          f"got {type(op).__name__}")
    return int(op)


def all_reduce(dev_comm, window, out, *, offset: int = 0, op: Any = NcclRedOp.SUM, stream=None) -> None:
    """``out[i] = op over ranks of window[offset + i]`` for every element of ``out``.

    Args:
        dev_comm: a :class:`DevCommResource` with ``lsa_barrier_count >= 1``.
        window: a :class:`RegisteredWindowHandle` of the same communicator.
        out: CUDA tensor (or DLPack / CUDA Array Interface object) receiving
            the result; its dtype and element count define the operation.
            float32/64, float16, bfloat16, int8/32/64 and uint8.
        offset: where this rank's input starts in the window, in elements of
            ``out``'s dtype.
        op: SUM, PROD, MAX, MIN, or AVG (floating types); NcclRedOp, int or
            ``torch.distributed.ReduceOp``.
        stream: where to enqueue (None: torch's current stream).

    Raises:
        NcclInvalid: closed or foreign resources, sizes outside the window,
            wrong device, unsupported dtype/op, no LSA barriers.
    """
    from nccl_core_backend import _C

    _C._device_all_reduce(dev_comm, window, out, offset, _red_op(op), stream)


def all_gather(dev_comm, window, out, *, offset: int = 0, stream=None) -> None:
    """``out`` = every rank's ``out.numel() // nranks`` elements at ``offset``
    in its copy of ``window``, in rank order.

    Args and errors as :func:`all_reduce` (any dtype; ``out.numel()`` must be
    a multiple of the number of ranks).
    """
    from nccl_core_backend import _C

    _C._device_all_gather(dev_comm, window, out, offset, stream)


def kernels_available() -> bool:
    """Whether these kernels match the loaded NCCL (same release family as the
    headers nccl_core was built with)."""
    from nccl_core_backend import _C

    return bool(_C._device_kernels_available())
