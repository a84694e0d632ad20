"""The collectives the bench times, their bus bandwidth and their checks.

A size is the larger of a call's buffers in bytes, as nccl-tests counts it:
the output of all_gather_into_tensor, the input of reduce_scatter_tensor,
the whole buffer of the others.  It is rounded down to whole elements, a
multiple of the world size (at least one element per rank), so the bytes a
row reports can be a little off the requested size at the smallest sizes.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.distributed as dist

from nccl_core_backend.bench.data import Pattern, fill, matches, never_written

OPS = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
       "broadcast")
GRAPH_SUFFIX = "_graph"  # a row of N calls of an op captured in one CUDA graph (--graph)


def graph_op(op: str) -> str:
    """The row name of `op`'s graph rows."""
    return op + GRAPH_SUFFIX


def base_op(op: str) -> str:
    """The op a row times, graph or not."""
    return op[: -len(GRAPH_SUFFIX)] if op.endswith(GRAPH_SUFFIX) else op


def _nccl_memory(n: int, dtype, device) -> torch.Tensor:
    import nccl_core_backend as nc

    return nc.torch.empty(n, dtype=dtype, device=device)


# --memory: where the buffers live.  NCCL memory (ncclMemAlloc) is what
# nccl_core's symmetric and push all-reduce paths act on; every rank
# allocates the same buffers in the same order, as their contract asks.
ALLOCATORS = {"plain": lambda n, dt, dev: torch.empty(n, dtype=dt, device=dev),
              "nccl": _nccl_memory}


def bus_factor(op: str, world: int) -> float:
    """Bus bandwidth / algorithm bandwidth, as nccl-tests defines it (its
    PERFORMANCE.md): what each rank's links carry relative to the size."""
    n = world
    op = base_op(op)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"):
        return (n - 1) / n
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown op {op!r}")


def bandwidth(op: str, nbytes: int, us: float, world: int) -> tuple[float, float]:
    """(algorithm, bus) bandwidth in GB/s (10**9 bytes) of one call of `us` µs."""
    algbw = nbytes / (us * 1e-6) / 1e9 if us > 0 else 0.0
    return algbw, algbw * bus_factor(op, world)


def element_count(op: str, size: int, elem: int, world: int) -> int:
    """Elements of the larger buffer for a size in bytes (see the module docstring)."""
    n = max(size // elem, world)
    return n - n % world


class Case:
    """Buffers and the call of one (op, size) configuration on one backend.

    `alloc(numel, dtype, device)` makes the buffers (torch.empty by default;
    ALLOCATORS["nccl"] for NCCL memory)."""

    def __init__(self, op: str, size: int, world: int, rank: int, device, dtype=torch.float32,
                 alloc: Callable | None = None):
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}")
        alloc = alloc or (lambda n, dt, dev: torch.empty(n, dtype=dt, device=dev))
        self.op, self.world, self.rank, self.dtype = op, world, rank, dtype
        elem = torch.empty((), dtype=dtype).element_size()
        self.n = n = element_count(op, size, elem, world)
        small = n // world
        if op == "all_gather_into_tensor":
            self.inp, self.out = alloc(small, dtype, device), alloc(n, dtype, device)
        elif op == "reduce_scatter_tensor":
            self.inp, self.out = alloc(n, dtype, device), alloc(small, dtype, device)
        elif op in ("all_reduce", "broadcast"):
            self.inp = self.out = alloc(n, dtype, device)  # in place, as the ops are
        else:
            self.inp, self.out = alloc(n, dtype, device), alloc(n, dtype, device)
        self.bytes = n * elem

    def call(self, group) -> None:
        op = self.op
        if op == "all_reduce":
            dist.all_reduce(self.inp, group=group)
        elif op == "all_gather_into_tensor":
            dist.all_gather_into_tensor(self.out, self.inp, group=group)
        elif op == "reduce_scatter_tensor":
            dist.reduce_scatter_tensor(self.out, self.inp, group=group)
        elif op == "all_to_all_single":
            dist.all_to_all_single(self.out, self.inp, group=group)
        else:
            dist.broadcast(self.inp, 0, group=group)

    def check(self, group, pat: Pattern, shift: int) -> bool:
        """Runs the op once on fresh exact data and compares every output element."""
        self.prepare(pat, shift)
        self.call(group)
        if self.inp.is_cuda:
            torch.cuda.synchronize(self.inp.device)
        return self.verify(pat, shift)

    def prepare(self, pat: Pattern, shift: int) -> None:
        """Fresh exact data in the input, a value no result has in the output."""
        k = pat.k
        if self.op == "broadcast" and self.rank != 0:
            fill(self.inp, lambda i: (i + shift + 1) % k)  # differs from the root's everywhere
        else:
            fill(self.inp, lambda i: (i + shift) % k + pat.offset(self.rank))
        if self.out is not self.inp:
            self.out.fill_(never_written(self.dtype))

    def verify(self, pat: Pattern, shift: int) -> bool:
        """Every output element of one call on prepare()'s data, compared."""
        w, r, k, op = self.world, self.rank, pat.k, self.op
        c = self.n // w  # elements per rank's chunk

        def base(idx):
            return (idx + shift) % k

        total = pat.offsets_sum()
        if op == "all_reduce":
            return matches(self.out, lambda i: w * base(i) + total)
        if op == "reduce_scatter_tensor":
            return matches(self.out, lambda i: w * base(i + r * c) + total)
        if op == "all_gather_into_tensor":  # chunk q is rank q's input
            return matches(self.out, lambda i: base(i % c) + (i // c) % pat.m)
        if op == "all_to_all_single":  # chunk q is rank q's chunk r
            return matches(self.out, lambda i: base(i % c + r * c) + (i // c) % pat.m)
        return matches(self.out, base)  # broadcast: the root's data


class GraphCase:
    """`count` calls of `op` of `size` bytes each, on buffers of their own,
    captured in one CUDA graph; a replay runs them all."""

    def __init__(self, op: str, size: int, count: int, world: int, rank: int, device, dtype,
                 group, alloc: Callable | None = None):
        self.count = count
        self.cases = [Case(op, size, world, rank, device, dtype, alloc) for _ in range(count)]
        self.n, self.bytes = self.cases[0].n, self.cases[0].bytes
        for c in self.cases:
            c.inp.zero_()  # the warm-up calls read defined data
        # Capture needs the communicator and NCCL's connections set up, and
        # NCCL memory its window registered (a collective call, not allowed in
        # a capture): every buffer's call runs once eagerly first, on a side
        # stream as torch asks.
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for c in self.cases:
                c.call(group)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for c in self.cases:
                c.call(group)
        torch.cuda.synchronize()

    def call(self) -> None:
        self.graph.replay()

    def check(self, pat: Pattern, shift: int) -> bool:
        """One replay on fresh data in every call's buffers (shifted per call);
        every output element of every call compared."""
        for j, c in enumerate(self.cases):
            c.prepare(pat, shift + j)
        self.graph.replay()
        torch.cuda.synchronize()
        return all(c.verify(pat, shift + j) for j, c in enumerate(self.cases))
