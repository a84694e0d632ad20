"""What NCCL reports about a communicator: :class:`NCCLCommProperties`,
returned by ``Communicator.properties`` (``ncclCommQueryProperties``)."""

from __future__ import annotations

from dataclasses import dataclass

from nccl_core_backend.constants import NcclGinConnectionType, NcclGinType

__all__ = ["NCCLCommProperties"]


@dataclass(frozen=True)
class NCCLCommProperties:
    """The fields of ``ncclCommProperties`` for one rank.

    They are fixed for the communicator's life.  A field that a later NCCL
    release added is ``None`` when the loaded NCCL is older than that release.
    """

    rank: int
    """This rank within the communicator."""
    n_ranks: int
    """Number of ranks."""
    cuda_dev: int
    """CUDA device of the communicator."""
    nvml_dev: int
    """NVML index of the GPU (NVML's numbering, which may differ from CUDA's)."""
    device_api_support: bool
    """Whether device communicators can be created."""
    multimem_support: bool
    """Whether the LSA team can use NVLink multicast (multimem)."""
    gin_type: NcclGinType
    """GIN transport reaching every rank (``NONE`` unless a full connection exists)."""
    n_lsa_teams: int | None = None
    """Number of LSA teams (NCCL 2.29.7+)."""
    host_rma_support: bool | None = None
    """Whether NCCL's host-side one-sided calls work (NCCL 2.29.7+)."""
    railed_gin_type: NcclGinType | None = None
    """GIN transport reaching the ranks of this rail (NCCL 2.29.7+)."""
    comm_hash: int | None = None
    """Hash of the communicator, the same on every rank (NCCL 2.31.2+)."""
    gin_min_stride: int | None = None
    """Granularity of a custom GIN stride (NCCL 2.31.2+)."""
    gin_connection_type: NcclGinConnectionType | None = None
    """Widest GIN connection this communicator supports (NCCL 2.31.2+)."""
    available_gin_types: frozenset[NcclGinType] | None = None
    """The GIN transports this communicator can use; empty without GIN (NCCL 2.31.2+)."""
    dev_comm_runtime_version_size: int | None = None
    """Size in bytes of ``ncclDevComm`` in the loaded NCCL (NCCL 2.31.2+)."""
    cft_support: bool | None = None
    """Whether every rank supports CFT unicast endpoints (NCCL 2.32.3+)."""
    cft_multicast_support: bool | None = None
    """Whether every rank supports CFT multicast endpoints (NCCL 2.32.3+)."""
    cft_counted_support: bool | None = None
    """Whether every rank supports counted CFT operations (NCCL 2.32.3+)."""
