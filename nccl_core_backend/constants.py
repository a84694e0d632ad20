"""Enums and constants of the ``nccl.core``-style API (values are NCCL's)."""

from __future__ import annotations

import enum

import torch

NCCL_SPLIT_NOCOLOR = -1
NCCL_UNDEF_INT = -2147483648


class Result(enum.IntEnum):
    """``ncclResult_t``: what :meth:`Communicator.get_async_error` reports."""

    Success = 0
    UnhandledCudaError = 1
    SystemError = 2
    InternalError = 3
    InvalidArgument = 4
    InvalidUsage = 5
    RemoteError = 6
    InProgress = 7
    NumResults = 8


class NcclDataType(enum.IntEnum):
    """``ncclDataType_t``."""

    INT8 = 0
    CHAR = 0
    UINT8 = 1
    INT32 = 2
    INT = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    HALF = 6
    FLOAT32 = 7
    FLOAT = 7
    FLOAT64 = 8
    DOUBLE = 8
    BFLOAT16 = 9
    FLOAT8E4M3 = 10
    FLOAT8E5M2 = 11

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return _ITEMSIZE[self]

    @property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype with the same bits."""
        return _TO_TORCH[self]

    @classmethod
    def from_torch(cls, dtype: torch.dtype) -> NcclDataType:
        """NCCL type of a torch dtype (bool as UINT8); NcclInvalid if none."""
        from nccl_core_backend.errors import NcclInvalid

        try:
            return _FROM_TORCH[dtype]
        except KeyError:
            raise NcclInvalid(
                f"Unsupported torch dtype {dtype} has no NCCL equivalent"
            ) from None


_ITEMSIZE = {0: 1, 1: 1, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 1, 11: 1}
_TO_TORCH = {
    0: torch.int8,
    1: torch.uint8,
    2: torch.int32,
    3: torch.uint32,
    4: torch.int64,
    5: torch.uint64,
    6: torch.float16,
    7: torch.float32,
    8: torch.float64,
    9: torch.bfloat16,
    10: torch.float8_e4m3fn,
    11: torch.float8_e5m2,
}
_FROM_TORCH = {t: NcclDataType(k) for k, t in _TO_TORCH.items()}
_FROM_TORCH[torch.bool] = NcclDataType.UINT8


class NcclRedOp(enum.IntEnum):
    """Built-in ``ncclRedOp_t`` values."""

    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4


SUM, PROD, MAX, MIN, AVG = (NcclRedOp.SUM, NcclRedOp.PROD, NcclRedOp.MAX, NcclRedOp.MIN,
                            NcclRedOp.AVG)
INT8, CHAR, UINT8 = NcclDataType.INT8, NcclDataType.CHAR, NcclDataType.UINT8
INT32, INT, UINT32 = NcclDataType.INT32, NcclDataType.INT, NcclDataType.UINT32
INT64, UINT64 = NcclDataType.INT64, NcclDataType.UINT64
FLOAT16, HALF = NcclDataType.FLOAT16, NcclDataType.HALF
FLOAT32, FLOAT = NcclDataType.FLOAT32, NcclDataType.FLOAT
FLOAT64, DOUBLE = NcclDataType.FLOAT64, NcclDataType.DOUBLE
BFLOAT16 = NcclDataType.BFLOAT16
FLOAT8E4M3, FLOAT8E5M2 = NcclDataType.FLOAT8E4M3, NcclDataType.FLOAT8E5M2


class ScalarResidence(enum.IntEnum):
    """``ncclScalarResidence_t``: where a PreMulSum scalar lives."""

    Device = 0
    HostImmediate = 1


class WindowFlag(enum.IntFlag):
    """Flags of :meth:`Communicator.register_window`."""

    DEFAULT = 0
    COLL_SYMMETRIC = 1
    STRICT_ORDERING = 2  # NCCL >= 2.29.7
    Default = 0
    CollSymmetric = 1
    StrictOrdering = 2


class NcclCommMemStat(enum.IntEnum):
    """Selector of :meth:`Communicator.get_mem_stat` (``ncclCommMemStat_t``)."""

    GPU_MEM_SUSPEND = 0
    GPU_MEM_SUSPENDED = 1
    GPU_MEM_PERSIST = 2
    GPU_MEM_TOTAL = 3
    GpuMemSuspend = 0
    GpuMemSuspended = 1
    GpuMemPersist = 2
    GpuMemTotal = 3


class NcclGinType(enum.IntEnum):
    """``ncclGinType_t``: device-side network transport of a communicator."""

    NONE = 0
    PROXY = 2
    GDAKI = 3
    GPI = 4
    EFA_GDA = 5


class NcclGinConnectionType(enum.IntEnum):
    """``ncclGinConnectionType_t``: peers that must be reachable over GIN."""

    NONE = 0
    FULL = 1
    RAIL = 2
    CUSTOM_STRIDE = 3


class NcclCftCap(enum.IntFlag):
    """``ncclCftCap_t``: the CFT capabilities a device communicator asks for."""

    NONE = 0x0
    CFT = 0x1
    MULTIMEM = 0x2


class NcclCftTeamMode(enum.IntEnum):
    """``ncclCftTeamMode_t``: which ranks of the CFT unicast group ``team_cft`` holds."""

    FLAT = 0
    HIER_MULTIMEM = 1
    HIER_LSA = 2


class CTAPolicy(enum.IntFlag):
    """``NCCL_CTA_POLICY_*``."""

    DEFAULT = 0
    EFFICIENCY = 1
    ZERO = 2
    Default = 0
    Efficiency = 1
    Zero = 2


class CommShrinkFlag(enum.IntEnum):
    """``NCCL_SHRINK_*``."""

    DEFAULT = 0
    ABORT = 1
    Default = 0
    Abort = 1
