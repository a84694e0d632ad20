"""NCCL teams: :class:`NCCLTeam`, a ``(n_ranks, rank, stride)`` view of a
communicator anchored at the calling rank (``Communicator.team_world``,
``team_lsa``, ``team_rail``, ``team_cft``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NCCLTeam"]


@dataclass(frozen=True)
class NCCLTeam:
    """A team of ranks: ``n_ranks`` ranks, this one at ``rank``, neighbours
    ``stride`` world ranks apart (``ncclTeam``)."""

    n_ranks: int
    rank: int
    stride: int
