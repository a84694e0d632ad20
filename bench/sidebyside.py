"""What every side-by-side benchmark shares: the job setup and GPU timing."""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend  # noqa: E402,F401  (registers the backend)


def init_side_by_side():
    """Default group on nccl_core (CUDA) + gloo (CPU), and a backend-nccl group
    over the same ranks (nccl_core_backend.bench.job.init_side_by_side).
    Returns (device, rank, world, nccl_group)."""
    from nccl_core_backend.bench.job import init_side_by_side as init

    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return (device, *init(device))


def burst_us(fn, bursts: int = 100, size: int = 32) -> float:
    """Host µs per call: median over bursts of `size` calls, each burst started
    on an idle GPU (ranks need not be in step: a kernel waiting for a peer
    does not hold up the host below the queue's depth)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    per_call = []
    for _ in range(bursts):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(size):
            fn()
        per_call.append((time.perf_counter() - t0) / size * 1e6)
    torch.cuda.synchronize()
    dist.barrier()
    return statistics.median(per_call)


def gpu_seconds(fn, iters: int, warmup: int = 1, barrier: bool = False) -> float:
    """Seconds per call of fn(), between CUDA events on the current stream."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if barrier:
        dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def checked_sum(name: str, x: torch.Tensor, call, rank: int, world: int) -> bool:
    """One all_reduce (SUM) `call` on fresh data in float32 `x`: True when every
    element is the sum of the ranks' values (the pattern counts in int64:
    float32 stops at 2**24 elements)."""
    x.copy_(torch.arange(x.numel(), device=x.device).remainder_(97) + rank)
    call()
    torch.cuda.synchronize()
    want = (torch.arange(x.numel(), device=x.device, dtype=torch.float64).remainder_(97)
            * world + world * (world - 1) / 2)
    ok = bool(torch.equal(x.double(), want))
    if not ok:
        print(f"rank {rank}: WRONG {name} at {x.numel() * 4} bytes", flush=True)
    return ok


def best_of_rounds(calls: dict, iters: int, rounds: int = 3, warmup: int = 3) -> dict:
    """GPU µs per call of each named call, best of `rounds` that alternate them."""
    best: dict = {}
    for _ in range(rounds):
        for name, call in calls.items():
            us = gpu_seconds(call, iters, warmup=warmup, barrier=True) * 1e6
            best[name] = min(us, best.get(name, us))
    return best


def ratio_table(rows: list, base: str) -> list:
    """Markdown lines: µs per path and size, each with its ratio base / path."""
    names = [k for k in rows[0] if k != "bytes"]
    lines = ["| bytes | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
    for r in rows:
        cells = [f"{r[k]:.1f}" + ("" if k == base else f" ({r[base] / r[k]:.2f})")
                 for k in names if k in r]
        lines.append(f"| {r['bytes']} | " + " | ".join(cells) + " |")
    return lines


def report(rows: list, title: str, out: str | None, ok: bool) -> bool:
    """Rank 0 prints the ratio table against "nccl plain" (and writes `out`);
    returns whether every rank's checks passed."""
    import json

    import nccl_core_backend as nc

    world = dist.get_world_size()
    if dist.get_rank() == 0:
        print(f"world={world} torch={torch.__version__} nccl={nc.nccl_version()}")
        print(f"{title} (ratio: nccl plain / path, higher is faster)")
        print("\n".join(ratio_table(rows, "nccl plain")))
        if out:
            with open(out, "w") as f:
                json.dump({"world": world, "rows": rows}, f, indent=1)
    flags = [None] * world
    dist.all_gather_object(flags, ok)
    return all(flags)
