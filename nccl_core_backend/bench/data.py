"""Exact test data for checking collectives on every element.

Rank r's element i holds ``(i + shift) % k + r % m``: small whole numbers,
so every sum a reduction forms is exact in the chosen dtype, whatever order
the backend adds in, and a result can be compared bit for bit with its
expected value.  ``shift`` is random per check (the same on every rank), so a
buffer left over from an earlier call cannot pass for a fresh result.  Index
arithmetic is in int64 and chunked: float32 cannot count past 2**24, and a
1 GiB buffer's indices would take 2 GiB at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Largest whole number each dtype holds exactly, with every smaller one
# (uint8 keeps 255 free: it is the "never written" fill).
EXACT_LIMIT = {
    torch.float64: 2**53, torch.float32: 2**24, torch.float16: 2048, torch.bfloat16: 256,
    torch.int64: 2**62, torch.int32: 2**31 - 1, torch.int8: 127, torch.uint8: 254,
}
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64,
          "int8": torch.int8, "uint8": torch.uint8}
CHUNK = 1 << 24  # elements per chunk of index arithmetic


@dataclass(frozen=True)
class Pattern:
    """Values ``(i + shift) % k + r % m`` (see the module docstring)."""

    k: int
    m: int
    world: int

    def offset(self, r: int) -> int:
        return r % self.m

    def offsets_sum(self) -> int:
        """What the rank offsets add up to in a sum over every rank."""
        return sum(self.offset(r) for r in range(self.world))


def pattern_for(dtype: torch.dtype, world: int) -> Pattern:
    """The widest pattern whose sums over `world` ranks stay exact in `dtype`
    (k distinct values per rank, up to 1024; m distinct rank offsets, up to 8)."""
    limit = EXACT_LIMIT[dtype]
    for m in (min(world, 8), 2, 1):
        p = Pattern(k=2, m=m, world=world)
        spare = limit - p.offsets_sum()
        k = min(1024, spare // world + 1) if spare >= 0 else 0
        if k >= 2:
            return Pattern(k=k, m=m, world=world)
    raise ValueError(f"{dtype} cannot hold exact sums over {world} ranks; "
                     f"use --dtype float32 to check results at this world size")


def fill(t: torch.Tensor, values) -> None:
    """t[i] = values(idx) for int64 index chunks idx (t is 1-D and contiguous)."""
    n = t.numel()
    for start in range(0, n, CHUNK):
        idx = torch.arange(start, min(n, start + CHUNK), device=t.device, dtype=torch.int64)
        t[start:start + idx.numel()].copy_(values(idx))


def matches(t: torch.Tensor, values) -> bool:
    """Whether t[i] == values(idx) for every element (exact)."""
    n = t.numel()
    for start in range(0, n, CHUNK):
        idx = torch.arange(start, min(n, start + CHUNK), device=t.device, dtype=torch.int64)
        want = values(idx).to(t.dtype)
        if not torch.equal(t[start:start + idx.numel()], want):
            return False
    return True


def never_written(dtype: torch.dtype) -> float:
    """A value no expected result holds: output buffers start with it."""
    return 255 if dtype == torch.uint8 else -1
