"""PyTorch tensors in NCCL memory (``nccl_core_backend.torch``)."""

from __future__ import annotations

from typing import Literal, Sequence

import torch

from nccl_core_backend.constants import NcclDataType
from nccl_core_backend.errors import NcclInvalid

__all__ = ["empty", "resolve_tensor"]


def _device_index(device) -> int:
    if device is None:
        return torch.cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise NcclInvalid(f"invalid device {device!r}") from None
    if dev.type != "cuda":
        raise NcclInvalid(f"NCCL tensors must be on a CUDA device, got {dev}")
    return torch.cuda.current_device() if dev.index is None else dev.index


def _shape(size) -> list[int]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    shape = []
    for s in size:
        if isinstance(s, bool) or not isinstance(s, int):
            raise NcclInvalid(f"size must be integers, got {s!r}")
        if s < 0:
            raise NcclInvalid(f"empty: negative dimension {s}")
        if s >= 1 << 63:
            raise NcclInvalid(f"empty: dimension {s} does not fit a 64-bit int")
        shape.append(int(s))
    return shape


def empty(
    *size: int | Sequence[int],
    dtype: torch.dtype | None = None,
    device: torch.device | int | str | None = None,
    morder: Literal["C", "F"] = "C",
) -> torch.Tensor:
    """Uninitialised tensor whose memory comes from ``ncclMemAlloc``.

    The memory is freed (``ncclMemFree``) when the tensor is garbage
    collected.  NCCL memory is what windows and NCCL's symmetric kernels
    need; register it with ``register_buffer`` / ``register_window``.
    """
    if morder not in ("C", "F"):
        raise NcclInvalid(f"morder must be 'C' or 'F', got {morder!r}")
    if dtype is None:
        dtype = torch.get_default_dtype()
    if not isinstance(dtype, torch.dtype):
        raise NcclInvalid(f"dtype must be a torch.dtype, got {dtype!r}")
    from nccl_core_backend import _C

    return _C._empty(_shape(size), dtype, _device_index(device), morder == "F")


def resolve_tensor(tensor: torch.Tensor) -> tuple[int, int, NcclDataType, int]:
    """``(ptr, count, NcclDataType, device_id)`` of a contiguous CUDA tensor."""
    if not isinstance(tensor, torch.Tensor):
        raise NcclInvalid(f"expected a torch.Tensor, got {type(tensor).__name__}")
    from nccl_core_backend import _C

    ptr, count, code, device = _C._resolve_tensor(tensor)
    return ptr, count, NcclDataType(code), device
