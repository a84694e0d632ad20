"""The hazards a review of the NVLink engine named, one case each where a GPU can show them
(hazard e, one rank out of memory for the push's staging, has none: starving
one GPU would starve the other jobs the tiers run on it):

b. a graph captured on a push call, replayed after an eager call grew the
   staging window (the old window was closed and freed under the graph).
   It passed on 217b9d7 as well (2xH200, NCCL 2.28.9): the freed window
   still answered the replays there, so this case guards the fix (the
   window is kept while a graph uses it) without showing the old failure;
g. register_mem_pool(symm=True) with as many segments on every rank but of
   other sizes (the k-th windows paired memory of different sizes);
h. the first fast-path call of a group behind a long kernel on the caller's
   stream (its set-up once synchronised that stream).
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import expect_raises, fail, make, reduce_ref, sanity
from tests.gpu.registry import case


def _ints(ctx, rank, n, salt):
    return make(ctx, rank, torch.int32, n=n, salt=salt)


def _sum(ctx, n, salt):
    return reduce_ref([_ints(ctx, q, n, salt) for q in range(ctx.world)], "SUM", torch.int32)


def _push_group(ctx):
    opts = nc.Options()
    opts.fast_path_max_bytes = 0
    opts.push_min_bytes = 256 << 10
    opts.push_max_bytes = 64 << 20
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)


@case(nvlink=True, timeout=240)
def hazard_b_graph_replayed_after_staging_grew(ctx):
    g = _push_group(ctx)
    be = g._get_backend(ctx.device)
    n = (2 << 20) // 4
    t = torch.empty(n, dtype=torch.int32, device=ctx.device)
    t.copy_(_ints(ctx, ctx.rank, n, 1).to(ctx.device))
    dist.all_reduce(t, group=g)  # staging for 2 MiB calls
    s = torch.cuda.Stream(device=ctx.device)
    s.wait_stream(torch.cuda.current_stream(ctx.device))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        dist.all_reduce(t, group=g)
    pushes = be._push_calls()
    big = _ints(ctx, ctx.rank, (24 << 20) // 4, 2).to(ctx.device)
    dist.all_reduce(big, group=g)  # grows the staging: the graph keeps the old window
    if be._push_calls() != pushes + 1:
        fail("the 24 MiB call did not take the push")
    for rep in range(3):
        t.copy_(_ints(ctx, ctx.rank, n, 10 + rep).to(ctx.device))
        graph.replay()
        torch.cuda.synchronize(ctx.device)
        if not torch.equal(t.cpu().long(), _sum(ctx, n, 10 + rep)):
            fail(f"replay {rep} after the staging grew: wrong sum")
    if not torch.equal(big.cpu().long(), _sum(ctx, big.numel(), 2)):
        fail("the 24 MiB push: wrong sum")
    t.copy_(_ints(ctx, ctx.rank, n, 20).to(ctx.device))
    dist.all_reduce(t, group=g)  # eager again, on the new window
    if not torch.equal(t.cpu().long(), _sum(ctx, n, 20)):
        fail("an eager 2 MiB push after the replays: wrong sum")
    del graph
    dist.destroy_process_group(g)


@case(nvlink=True, timeout=240)
def hazard_g_symmetric_pool_of_other_segment_sizes(ctx):
    opts = nc.Options()
    opts.fast_path_max_bytes = 0
    opts.push_max_bytes = 0
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
    sanity(ctx, g)
    be = g._get_backend(ctx.device)
    pool = torch.cuda.MemPool(be.mem_allocator)
    # One segment on every rank; 16 MiB on rank 0, 32 MiB on the others.  (The
    # caching allocator gives every request from 1 to 10 MiB a 20 MiB segment:
    # 4 and 8 MiB would make segments of one size.)
    mib = 16 if ctx.rank == 0 else 32
    with torch.cuda.use_mem_pool(pool):
        held = torch.empty((mib << 20) // 4, device=ctx.device)
    t0 = time.time()
    expect_raises(ValueError, lambda: be.register_mem_pool(pool, symm=True), match="other sizes")
    if time.time() - t0 > 60:
        fail("the refusal took more than 60 s: a rank waited in a window collective")
    sanity(ctx, g)  # the group still works on every rank
    del held
    dist.destroy_process_group(g)


@case(nvlink=True, timeout=240)
def hazard_h_first_fast_call_behind_a_long_kernel(ctx):
    opts = nc.Options()
    opts.fast_path_max_bytes = 64 << 10
    opts.push_max_bytes = 0  # the warm-up call must go to NCCL
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
    x = _ints(ctx, ctx.rank, 1024, 5).to(ctx.device)
    # The communicator first, through NCCL (above the fast path's size).
    warm = torch.ones(64 << 10, device=ctx.device)
    dist.all_reduce(warm, group=g)
    torch.cuda.synchronize(ctx.device)
    if g._get_backend(ctx.device)._fast_path_calls() != 0:
        fail("the warm-up call took the fast path")
    torch.cuda._sleep(4_000_000_000)  # about 2 s on the caller's stream
    t0 = time.time()
    dist.all_reduce(x, group=g)  # the group's first fast-path call: sets the path up
    host = time.time() - t0
    torch.cuda.synchronize(ctx.device)
    if not torch.equal(x.cpu().long(), _sum(ctx, 1024, 5)):
        fail("the first fast-path call: wrong sum")
    if host > 1.0:
        fail(f"the first fast-path call held the host {host:.2f} s: its set-up waited for "
             f"the caller's stream")
    dist.destroy_process_group(g)
