"""Registry of GPU test cases, shared by the harness and pytest."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

CASES: list[tuple[str, object, dict]] = []


class Skip(Exception):
    """Raised by a case that cannot run in this configuration."""


def case(name: str | None = None, *, min_world: int = 2, max_world: int | None = None,
         mode: str | None = None, timeout: float | None = None, nvlink: bool = False):
    """Registers a case; ``mode`` limits it to "eager" or "lazy" launches,
    ``max_world`` to small launches (for long runs that gain nothing from more
    ranks); ``timeout`` overrides NCCL_CORE_CASE_TIMEOUT; ``nvlink`` marks a
    case that needs its ranks on NVLink peers (nccl_core's own kernels, LSA
    windows): skipped, with the reason, on simulated hosts."""

    def wrap(fn):
        CASES.append((name or fn.__name__, fn, {"min_world": min_world, "max_world": max_world,
                                                 "mode": mode, "timeout": timeout,
                                                 "nvlink": nvlink}))
        return fn

    return wrap


@dataclass
class Ctx:
    rank: int
    world: int
    device: torch.device
    seed: int
    lazy: bool
    case_index: int = 0
    extra: dict = field(default_factory=dict)

    def gen(self, rank: int | None = None, salt: int = 0) -> torch.Generator:
        """CPU generator for `rank`'s data in this case: any rank can rebuild
        any other rank's inputs to compute references locally."""
        r = self.rank if rank is None else rank
        g = torch.Generator()
        g.manual_seed((self.seed * 1000003 + self.case_index * 7919 + r * 131 + salt) % (2**62))
        return g


