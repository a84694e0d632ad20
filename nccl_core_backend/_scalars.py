"""The scalar of :meth:`Communicator.create_pre_mul_sum` as a one-element tensor."""

from __future__ import annotations

import numbers

import torch

from nccl_core_backend.constants import NcclDataType, ScalarResidence
from nccl_core_backend.errors import NcclInvalid


def _torch_dtype(datatype) -> torch.dtype | None:
    if datatype is None:
        return None
    if isinstance(datatype, torch.dtype):
        NcclDataType.from_torch(datatype)  # refuses dtypes NCCL lacks
        return datatype
    try:
        return NcclDataType(int(datatype)).torch_dtype
    except (ValueError, TypeError):
        raise NcclInvalid(f"Unsupported data type: {datatype!r}") from None


def _integral_factor(scalar, dtype: torch.dtype) -> int:
    """An integer factor for an integer ``dtype``, refusing what conversion
    would change: 0.5 truncated to 0 for int8, -1 wrapped to 255 for uint8."""
    if isinstance(scalar, numbers.Integral):
        value = int(scalar)
    else:
        f = float(scalar)
        if not f.is_integer():
            raise NcclInvalid(
                f"PreMulSum factor {scalar!r} is not an integer; a {dtype} factor would "
                f"truncate it (use a floating datatype)"
            )
        value = int(f)
    info = torch.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise NcclInvalid(
            f"PreMulSum factor {value} does not fit {dtype} ({info.min} to {info.max})"
        )
    return value


def premul_scalar(scalar, datatype, residence, device: int) -> torch.Tensor:
    """One-element tensor holding ``scalar``: on the CPU for a host-immediate
    scalar, on ``device`` for a device scalar (read when the op runs)."""
    dtype = _torch_dtype(datatype)
    if residence is not None:
        try:
            residence = ScalarResidence(int(residence))
        except (ValueError, TypeError):
            raise NcclInvalid(f"Invalid ScalarResidence: {residence!r}") from None
    if isinstance(scalar, bool):
        raise NcclInvalid("scalar must be a number or a one-element buffer, got a bool")
    if dtype == torch.bool:
        raise NcclInvalid("PreMulSum is not defined for torch.bool (SUM of flags is logical OR)")
    if isinstance(scalar, numbers.Number):
        if isinstance(scalar, complex):
            raise NcclInvalid("scalar must be real, got a complex number")
        if dtype is None:
            dtype = torch.float64 if isinstance(scalar, numbers.Real) and not isinstance(
                scalar, numbers.Integral) else torch.int64
        if not dtype.is_floating_point:
            scalar = _integral_factor(scalar, dtype)
        t = torch.tensor([scalar], dtype=dtype)
        if residence == ScalarResidence.Device:
            t = t.to(f"cuda:{device}")
        return t
    if not isinstance(scalar, torch.Tensor):
        if hasattr(scalar, "__dlpack__"):
            scalar = torch.from_dlpack(scalar)
        elif hasattr(scalar, "__array__"):
            scalar = torch.as_tensor(scalar)
        else:
            raise NcclInvalid(
                "scalar must be int, float, a numpy array or a one-element tensor/buffer, "
                f"got {type(scalar).__name__}"
            )
    if scalar.numel() != 1:
        raise NcclInvalid(f"scalar must contain exactly 1 element, got {scalar.numel()} elements")
    if dtype is not None and scalar.dtype != dtype:
        raise NcclInvalid(f"scalar datatype {scalar.dtype} doesn't match requested datatype {dtype}")
    t = scalar.reshape(1)
    if residence == ScalarResidence.Device and not t.is_cuda:
        t = t.to(f"cuda:{device}")
    elif residence == ScalarResidence.HostImmediate and t.is_cuda:
        t = t.cpu()
    return t.contiguous()
