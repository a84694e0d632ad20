"""The push all-reduce's staging slots across calls of different sizes
(nvlink/push.h).

A rank copies its peers' reduced chunks out of its result slots after it has
told them it is done with its inputs, so a fast peer may already run the next
call.  When slots were cut from each call's own chunk, a larger next call's
input slots covered a smaller call's result slots: the fast peer's stores
landed where the slow rank was still copying out, and a whole chunk (or some
block slices) of the smaller call came out wrong.  DDP under GPU contention
did that with its 8 MB bucket followed by a 31 MB one.

Here a rank is made slow the way contention does it: another process keeps
its GPU busy, so the driver time-slices the two contexts and the push kernel
stops for whole time slices, at times in the middle of its copy-out.  Every
rank gets such a neighbour, and the kernel runs on one block so that its
copy-out is long enough to be cut often.  Pairs of calls, small then four
times larger, each on fresh data (int32, exact), are counted on the GPU and
read back once after the loop.  On the old layout it failed in most runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import fail, make, reduce_ref
from tests.gpu.registry import case

SMALL = (16 << 20) // 4  # int32 elements: 16 MiB
LARGE = 4 * SMALL  # its input slots cover the small call's result slots (old layout)
PAIRS = 100

# A neighbour process that keeps one GPU busy with matrix products for a
# while: the driver then time-slices it with the rank's own context.
_NEIGHBOUR = """
import sys, time, torch
torch.cuda.set_device(int(sys.argv[1]))
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + float(sys.argv[2])
print("busy", flush=True)
while time.time() < end:
    for _ in range(16):
        a = a @ a
        a = a / a.norm()
    torch.cuda.synchronize()
"""


def _start_neighbour(ctx, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _NEIGHBOUR, str(ctx.device.index or 0),
                             str(seconds)], stdout=subprocess.PIPE, env=dict(os.environ))
    proc.stdout.readline()  # its context exists and its first products are queued
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()  # only the process this case started, by its handle
    proc.wait()


def _bases(ctx, n: int, salt: int) -> list[torch.Tensor]:
    return [make(ctx, q, torch.int32, n=n, salt=salt) for q in range(ctx.world)]


@case(nvlink=True, timeout=300)
def push_calls_of_different_sizes_keep_their_results(ctx):
    opts = nc.Options()
    opts.fast_path_max_bytes = 16 << 10
    opts.push_min_bytes = 1 << 20
    opts.push_max_bytes = LARGE * 4
    opts.push_ctas = 1
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
    backend = g._get_backend(ctx.device)
    small_bases, large_bases = _bases(ctx, SMALL, 1), _bases(ctx, LARGE, 2)
    # Reference sums in int64 on the CPU; pair i adds i * (q + 1) on rank q.
    small_ref = reduce_ref(small_bases, "SUM", torch.int32).to(ctx.device)
    large_ref = reduce_ref(large_bases, "SUM", torch.int32).to(ctx.device)
    step = ctx.world * (ctx.world + 1) // 2
    mine_small = small_bases[ctx.rank].to(ctx.device)
    mine_large = large_bases[ctx.rank].to(ctx.device)
    # Grow the staging for the larger call once, before the race.
    warm = mine_large.clone()
    dist.all_reduce(warm, group=g)
    pushes = backend._push_calls()
    wrong = torch.zeros(PAIRS, 2, dtype=torch.long, device=ctx.device)
    neighbour = _start_neighbour(ctx, 120.0)
    try:
        dist.barrier(group=g)
        for i in range(PAIRS):
            s = mine_small + i * (ctx.rank + 1)
            big = mine_large + i * (ctx.rank + 1)
            dist.all_reduce(s, group=g)
            dist.all_reduce(big, group=g)
            # Counted on the GPU after both calls: nothing waits in the loop.
            wrong[i, 0] = ((s.long() - i * step) != small_ref).sum()
            wrong[i, 1] = ((big.long() - i * step) != large_ref).sum()
        counts = wrong.cpu()
    finally:
        _stop(neighbour)
    if backend._push_calls() - pushes != 2 * PAIRS:
        fail(f"{backend._push_calls() - pushes} of {2 * PAIRS} calls took the push")
    for i in range(PAIRS):
        for k, (what, n) in enumerate((("small", SMALL), ("large", LARGE))):
            if counts[i, k]:
                fail(f"pair {i}, {what} call of {n} int32: {int(counts[i, k])} elements wrong")
    dist.destroy_process_group(g)
