"""Descriptors of one-sided operations (``Communicator.wait_signal``)."""

from __future__ import annotations

from dataclasses import dataclass

from nccl_core_backend.errors import NcclInvalid


def _int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NcclInvalid(f"{name} must be an int, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class WaitSignalDesc:
    """Wait for ``op_count`` signals from ``peer`` (``put_signal`` or ``signal``).

    ``signal_index`` and ``context`` are reserved by NCCL and must be 0.
    """

    peer: int
    op_count: int = 1
    signal_index: int = 0
    context: int = 0

    def __post_init__(self) -> None:
        if _int("peer", self.peer) < 0:
            raise NcclInvalid(f"peer must be >= 0, got {self.peer}")
        if _int("op_count", self.op_count) < 1:
            raise NcclInvalid(f"op_count must be >= 1, got {self.op_count}")
        if _int("signal_index", self.signal_index) != 0:
            raise NcclInvalid(f"signal_index must be 0 (NCCL reserves it), got {self.signal_index}")
        if _int("context", self.context) != 0:
            raise NcclInvalid(f"context must be 0 (NCCL reserves it), got {self.context}")
