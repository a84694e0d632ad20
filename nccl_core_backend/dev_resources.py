"""Device resources of a device communicator, as nccl.core names them: what
``NCCLDevCommRequirements.resources`` asks for, and the handles NCCL gives
back in ``DevCommResource.resource_handles``, one per entry, in order; the
teams ``NCCLDevCommRequirements.teams`` asks for, and the multicast handle
``DevCommResource.multimem_handle(team)`` gives for those with multimem.

Each requirement becomes a node of ``ncclDevCommRequirements``' resource
list through NCCL's own helper (``ncclLsaBarrierCreateRequirement``,
``ncclGinBarrierCreateRequirement``, ``ncclLLA2ACreateRequirement`` after
``ncclLLA2ACalcSlots``); ``ncclDevCommCreate`` then completes the handles.
A handle's fields are what a kernel's barrier or all-to-all session takes:
pass them to your kernel (``to_bytes()`` gives NCCL's 8-byte struct).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from nccl_core_backend.team import NCCLTeam

__all__ = [
    "GinBarrierHandle",
    "GinBarrierRequirement",
    "LLA2AHandle",
    "LLA2ARequirement",
    "LsaBarrierHandle",
    "LsaBarrierRequirement",
    "MultimemHandle",
    "TeamRequirement",
]


@dataclass(frozen=True)
class LsaBarrierRequirement:
    """``n_barriers`` LSA barriers on ``team``; gives a :class:`LsaBarrierHandle`."""

    team: NCCLTeam
    n_barriers: int


@dataclass(frozen=True)
class GinBarrierRequirement:
    """``n_barriers`` GIN barriers on ``team``; gives a :class:`GinBarrierHandle`."""

    team: NCCLTeam
    n_barriers: int


@dataclass(frozen=True)
class LLA2ARequirement:
    """A low-latency all-to-all of ``n_blocks`` blocks, sized for up to
    ``max_elements`` elements of at most ``max_element_size`` bytes each
    (NCCL's ``ncclLLA2ACalcSlots`` gives the slots); gives an :class:`LLA2AHandle`."""

    n_blocks: int
    max_elements: int
    max_element_size: int


@dataclass(frozen=True)
class LsaBarrierHandle:
    """``ncclLsaBarrierHandle``: the barriers' buffer and their count."""

    buf_handle: int
    """Buffer resource offset assigned during device communicator creation."""
    n_barriers: int

    def to_bytes(self) -> bytes:
        return struct.pack("<Ii", self.buf_handle, self.n_barriers)


@dataclass(frozen=True)
class GinBarrierHandle:
    """``ncclGinBarrierHandle``: the barriers' first GIN signal."""

    signal0: int
    """Starting GIN signal index assigned during device communicator creation."""
    buf_handle: int = 0
    """The barriers' buffer on NCCL 2.28; a field NCCL leaves unused from 2.30."""

    def to_bytes(self) -> bytes:
        return struct.pack("<II", self.signal0, self.buf_handle)


@dataclass(frozen=True)
class LLA2AHandle:
    """``ncclLLA2AHandle``: the all-to-all's buffer and its slot count."""

    buf_handle: int
    """Buffer resource offset assigned during device communicator creation."""
    n_slots: int

    def to_bytes(self) -> bytes:
        return struct.pack("<II", self.buf_handle, self.n_slots)


@dataclass(frozen=True)
class TeamRequirement:
    """A team the device communicator prepares; with ``multimem``, NCCL also
    gives the team a multicast handle (``DevCommResource.multimem_handle``)."""

    team: NCCLTeam
    multimem: bool = False


@dataclass(frozen=True)
class MultimemHandle:
    """``ncclMultimemHandle``: a team's multicast base, for device-side
    multimem operations and ``RegisteredWindowHandle.get_multimem_device_pointer``."""

    mc_base_pointer: int
    """Multicast base pointer written by NCCL; ``0`` means none was provided."""

    def to_bytes(self) -> bytes:
        return struct.pack("<Q", self.mc_base_pointer)
