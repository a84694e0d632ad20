"""CuPy arrays in NCCL memory (``nccl_core_backend.cupy``); CuPy loads lazily."""

from __future__ import annotations

import math
from typing import Literal

import torch

from nccl_core_backend.constants import NcclDataType
from nccl_core_backend.errors import NcclInvalid

__all__ = ["empty", "resolve_array"]

# numpy dtype name -> NCCL type; bool travels as one byte.
_BY_NAME = {
    "bool": NcclDataType.UINT8,
    "int8": NcclDataType.INT8,
    "uint8": NcclDataType.UINT8,
    "int32": NcclDataType.INT32,
    "uint32": NcclDataType.UINT32,
    "int64": NcclDataType.INT64,
    "uint64": NcclDataType.UINT64,
    "float16": NcclDataType.FLOAT16,
    "float32": NcclDataType.FLOAT32,
    "float64": NcclDataType.FLOAT64,
    "bfloat16": NcclDataType.BFLOAT16,
    "float8_e4m3fn": NcclDataType.FLOAT8E4M3,
    "float8_e5m2": NcclDataType.FLOAT8E5M2,
}


def _cupy():
    try:
        import cupy
    except ImportError:
        raise ModuleNotFoundError(
            "CuPy is not installed; install cupy-cuda13x to use nccl_core_backend.cupy"
        ) from None
    return cupy


def empty(shape, dtype=float, order: Literal["C", "F"] = "C"):
    """Uninitialised CuPy array in ``ncclMemAlloc`` memory on the current device.

    The memory is freed when the array (and every view of it) is garbage
    collected.
    """
    cupy = _cupy()
    if order not in ("C", "F"):
        raise NcclInvalid(f"order must be 'C' or 'F', got {order!r}")
    dt = cupy.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = math.prod(shape) * dt.itemsize
    from nccl_core_backend import _C

    raw = _C._empty([nbytes], torch.uint8, cupy.cuda.Device().id, False)
    flat = cupy.from_dlpack(raw)  # shares the allocation and keeps it alive
    return flat.view(dt).reshape(shape, order=order)


def resolve_array(array) -> tuple[int, int, NcclDataType, int]:
    """``(ptr, count, NcclDataType, device_id)`` of a contiguous CuPy array."""
    cupy = _cupy()
    if not isinstance(array, cupy.ndarray):
        raise NcclInvalid(f"expected a cupy.ndarray, got {type(array).__name__}")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise NcclInvalid("the array must be contiguous")
    try:
        dtype = _BY_NAME[array.dtype.name]
    except KeyError:
        raise NcclInvalid(f"Unsupported CuPy dtype {array.dtype} has no NCCL equivalent") from None
    return array.data.ptr, array.size, dtype, array.device.id
