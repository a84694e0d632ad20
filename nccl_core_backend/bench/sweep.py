"""The side-by-side sweep: every op at every size on both backends.

Per row: both backends get their own buffers, each is checked on fresh data
(before and after its timed calls), then the timed calls alternate between
the backends in rounds (timing.interleaved).  A row's time is the median µs
per call; its ratio is nccl_core / nccl (below 1: nccl_core is faster).  With
an anchor (anchor.py), all_reduce rows also time torch's SymmetricMemory
kernels in the same rounds; ``anchor_ratio`` is nccl_core / each of them.
"""

from __future__ import annotations

import random

import torch

from nccl_core_backend.bench.collectives import ALLOCATORS, Case, GraphCase, bandwidth, graph_op
from nccl_core_backend.bench.data import pattern_for
from nccl_core_backend.bench.job import CORE, NCCL
from nccl_core_backend.bench.kernel_times import kernel_times
from nccl_core_backend.bench.prime import prime
from nccl_core_backend.bench.sizes import format_bytes
from nccl_core_backend.bench.timing import EventPool, interleaved, summary


def auto_iters(size: int) -> int:
    """Timed calls per backend for a size when --iters is not given: 200 for
    small sizes, fewer from 16 MiB so that a 1 GiB row takes seconds, at least 10."""
    return max(10, min(200, (2 << 30) // max(size, 1)))


def _timing(job, op: str, nbytes: int, samples: list, per: int = 1) -> dict:
    t = summary([s / per for s in samples])
    t["algbw"], t["busbw"] = bandwidth(op, nbytes, t["us"], job.world)
    return t


def graph_rows_wanted(sizes: list[int], count: int, max_bytes: int) -> list[int]:
    """Sizes that get a CUDA-graph row: --graph given and the size at most --graph-max-bytes."""
    return [s for s in sizes if count and s <= max_bytes]


def run_sweep(job, ops: list[str], sizes: list[int], dtype, iters: int | None, warmup: int,
              rounds: int, graph_count: int, graph_max_bytes: int, progress,
              memory: str = "plain", anchor=None, host_phases: bool = False,
              kernels: bool = False) -> list[dict]:
    """Rows of the sweep, this rank's view (correctness flags are this rank's;
    __main__ combines every rank's).  `anchor`: an anchor.Anchor or None.
    `host_phases`: eager rows also get nccl_core's host µs per call by phase.
    `kernels`: every row also gets each kind's GPU µs per call (kernel_times.py)."""
    alloc = ALLOCATORS[memory]
    pool = EventPool()
    pat = pattern_for(dtype, job.world)
    rng = random.Random(job.shared_seed())
    dname = str(dtype).replace("torch.", "")
    rows = []
    core = _core_backend(job)
    prime(job)
    for op in ops:
        for size in sizes:
            n_iter = iters or auto_iters(size)
            cases = {name: Case(op, size, job.world, job.rank, job.device, dtype, alloc)
                     for name in job.groups}
            before = _path_counts(core)
            ok = {name: cases[name].check(g, pat, rng.randrange(pat.k)) for name, g in job.groups.items()}
            extra = {}
            if anchor is not None and op == "all_reduce":
                extra = {k: anchor.case(k, cases[CORE].n) for k in anchor.kinds(cases[CORE].bytes)}
            ok.update({k: c.check(pat, rng.randrange(pat.k)) for k, c in extra.items()})
            calls = {name: (lambda c=cases[name], g=g: c.call(g)) for name, g in job.groups.items()}
            calls.update({k: c.call for k, c in extra.items()})
            profile = HostPhases(host_phases)
            samples = interleaved(calls, n_iter, warmup, rounds, job.sync, pool)
            phases = profile.take()
            gpu = kernel_times(calls, job.sync) if kernels else None
            for name, g in job.groups.items():
                ok[name] = cases[name].check(g, pat, rng.randrange(pat.k)) and ok[name]
            for k, c in extra.items():
                ok[k] = c.check(pat, rng.randrange(pat.k)) and ok[k]
            nbytes = cases[CORE].bytes
            rows.append(_row(job, op, nbytes, dname, n_iter, samples, ok))
            if phases:
                rows[-1]["host_phases"] = phases
            if gpu:
                rows[-1]["kernel_times"] = gpu
            rows[-1]["path"] = _path_taken(before, _path_counts(core))
            del cases, extra
            if size >= 64 << 20:
                torch.cuda.empty_cache()
            progress.step(f"{op} {format_bytes(nbytes)}")
    for op, size in ((op, size) for op in ops
                     for size in graph_rows_wanted(sizes, graph_count, graph_max_bytes)):
        n_iter = iters or auto_iters(size * graph_count)  # replays
        before = _path_counts(core)
        cases = {name: GraphCase(op, size, graph_count, job.world, job.rank, job.device, dtype, g,
                                 alloc)
                 for name, g in job.groups.items()}
        if anchor is not None and op == "all_reduce":
            cases.update({k: anchor.graph_case(k, cases[CORE].n, graph_count)
                          for k in anchor.kinds(cases[CORE].bytes)})
        ok = {name: c.check(pat, rng.randrange(pat.k)) for name, c in cases.items()}
        replays = {name: c.call for name, c in cases.items()}
        samples = interleaved(replays, n_iter, min(warmup, 3), rounds, job.sync, pool)
        gpu = kernel_times(replays, job.sync, per=graph_count, loop=5) if kernels else None
        for name, c in cases.items():
            ok[name] = c.check(pat, rng.randrange(pat.k)) and ok[name]
        row = _row(job, graph_op(op), cases[CORE].bytes, dname, n_iter, samples, ok,
                   per=graph_count)
        row["count"] = graph_count
        if gpu:
            row["kernel_times"] = gpu
        row["path"] = _path_taken(before, _path_counts(core))  # counted at warm-up and capture
        rows.append(row)
        del cases
        progress.step(f"graph of {graph_count} {op} calls, {format_bytes(row['bytes'])} each")
    return rows


class HostPhases:
    """nccl_core's host time per call by phase (csrc/util/host_profile.h)
    over one row's timed calls; nothing where not asked for."""

    def __init__(self, on: bool):
        self.on = on
        if on:
            from nccl_core_backend import _C

            _C._host_profile(enable=True, reset=True)

    def take(self) -> dict:
        """{phase: mean µs per call} of the phases that ran; profiling off again."""
        if not self.on:
            return {}
        from nccl_core_backend import _C

        snap = _C._host_profile(enable=False, reset=True)
        return {name: round(us, 3) for name, (calls, us) in snap.items() if calls}


def _core_backend(job):
    """nccl_core's backend of the job, for its path counters (None elsewhere)."""
    try:
        backend = job.groups[CORE]._get_backend(job.device)
    except (RuntimeError, AttributeError):
        return None
    return backend if hasattr(backend, "_push_calls") else None


def _path_counts(backend) -> tuple[int, int]:
    """(fast-path calls, push calls) so far; the fast count includes pushes."""
    if backend is None:
        return (0, 0)
    return (backend._fast_path_calls(), backend._push_calls())


def _path_taken(before: tuple[int, int], after: tuple[int, int]) -> str:
    """Where nccl_core ran a row's calls: ``push``, ``fast`` or ``nccl``
    (nccl_core_backend.paths)."""
    if after[1] > before[1]:
        return "push"
    if after[0] > before[0]:
        return "fast"
    return "nccl"


def _per(a: dict, b: dict):
    return a["us"] / b["us"] if b["us"] > 0 else None


def _row(job, op, nbytes, dname, n_iter, samples, ok, per: int = 1) -> dict:
    row = {"op": op, "bytes": nbytes, "dtype": dname, "iters": n_iter}
    for name in samples:
        row[name] = _timing(job, op, nbytes, samples[name], per)
    row["ratio"] = _per(row[CORE], row[NCCL])
    anchors = [name for name in samples if name not in job.groups]
    if anchors:
        row["anchor_ratio"] = {k: _per(row[CORE], row[k]) for k in anchors}
    row["correct"] = dict(ok)
    return row
