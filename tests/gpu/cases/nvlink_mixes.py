"""nccl_core's NVLink kernels mixed the ways programs mix them: the fast path and the push back to back, copy collectives on several
streams, two groups at once, future chains, and collectives after send/recv
that only some ranks made (3+ ranks).  Every result is kept and
checked after the loop (no wait in between), on int32 data that any order of
summation keeps exact (common.make's integers); the path counters show the kernels ran.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, reduce_ref
from tests.gpu.registry import case

ROUNDS = 40


def _group(ctx, push: bool = True):
    opts = nc.Options()
    opts.fast_path_max_bytes = 256 << 10
    if push:
        opts.push_min_bytes = 512 << 10
        opts.push_max_bytes = 16 << 20
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)


def _ints(ctx, rank, n, salt):
    return make(ctx, rank, torch.int32, n=n, salt=salt)


def _sum(ctx, n, salt):
    return reduce_ref([_ints(ctx, q, n, salt) for q in range(ctx.world)], "SUM", torch.int32)


def _expect_equal(ctx, got, want, what):
    check(got, want, torch.int32, "SUM", ctx.world, what)  # exact for integers


@case(nvlink=True, timeout=300)
def fast_path_and_push_back_to_back(ctx):
    g = _group(ctx)
    be = g._get_backend(ctx.device)
    sizes = (16 << 10, 4 << 20, 200 << 10, 1 << 20)  # bytes: fast, push, fast, push
    fast0, push0 = be._fast_path_calls(), be._push_calls()
    outs = []
    for i in range(ROUNDS):
        for k, nbytes in enumerate(sizes):
            salt = 10 * i + k
            t = _ints(ctx, ctx.rank, nbytes // 4, salt).to(ctx.device)
            dist.all_reduce(t, group=g)
            outs.append((t, nbytes, salt))
    torch.cuda.synchronize(ctx.device)
    pushes = be._push_calls() - push0
    staged = be._fast_path_calls() - fast0 - pushes
    if pushes != 2 * ROUNDS or staged != 2 * ROUNDS:
        fail(f"{staged} fast-path and {pushes} push calls, expected {2 * ROUNDS} of each")
    for t, nbytes, salt in outs:
        _expect_equal(ctx, t, _sum(ctx, nbytes // 4, salt), f"all_reduce of {nbytes} B (salt {salt})")
    dist.destroy_process_group(g)


@case(nvlink=True, timeout=300)
def copy_collectives_on_several_streams(ctx):
    g = _group(ctx, push=False)
    be = g._get_backend(ctx.device)
    streams = [torch.cuda.Stream(device=ctx.device) for _ in range(3)]
    n = (32 << 10) // 4
    before = be._fast_path_calls()
    kept = []
    for i in range(ROUNDS):
        s = streams[i % len(streams)]
        mine = _ints(ctx, ctx.rank, n, 1000 + i).to(ctx.device)
        s.wait_stream(torch.cuda.current_stream(ctx.device))  # its copy to the GPU
        with torch.cuda.stream(s):
            gathered = torch.empty(n * ctx.world, dtype=torch.int32, device=ctx.device)
            dist.all_gather_into_tensor(gathered, mine, group=g)
            root = i % ctx.world
            b = mine.clone()
            dist.broadcast(b, root, group=g)
            swapped = torch.empty(n, dtype=torch.int32, device=ctx.device)
            dist.all_to_all_single(swapped, mine, group=g)
        kept.append((i, root, gathered, b, swapped, mine))  # mine: read on s
    torch.cuda.synchronize(ctx.device)
    if be._fast_path_calls() - before != 3 * ROUNDS:
        fail(f"{be._fast_path_calls() - before} fast-path calls, expected {3 * ROUNDS}")
    w, chunk = ctx.world, n // ctx.world
    for i, root, gathered, b, swapped, _ in kept:
        inputs = [_ints(ctx, q, n, 1000 + i) for q in range(w)]
        _expect_equal(ctx, gathered, torch.cat(inputs), f"all_gather round {i}")
        _expect_equal(ctx, b, inputs[root], f"broadcast from {root}, round {i}")
        want = torch.cat([inputs[q][ctx.rank * chunk:(ctx.rank + 1) * chunk] for q in range(w)])
        _expect_equal(ctx, swapped, want, f"all_to_all_single round {i}")
    dist.destroy_process_group(g)


@case(nvlink=True, timeout=300)
def two_groups_at_once(ctx):
    groups = [_group(ctx), _group(ctx)]
    streams = [torch.cuda.Stream(device=ctx.device) for _ in groups]
    outs = []
    for i in range(ROUNDS):
        for k, (g, s) in enumerate(zip(groups, streams)):
            nbytes = (64 << 10) if (i + k) % 2 else (2 << 20)  # fast path or push
            salt = 2000 + 10 * i + k
            t = _ints(ctx, ctx.rank, nbytes // 4, salt).to(ctx.device)
            s.wait_stream(torch.cuda.current_stream(ctx.device))  # its copy to the GPU
            with torch.cuda.stream(s):
                dist.all_reduce(t, group=g)
            outs.append((t, nbytes, salt))
    torch.cuda.synchronize(ctx.device)
    for t, nbytes, salt in outs:
        _expect_equal(ctx, t, _sum(ctx, nbytes // 4, salt), f"all_reduce of {nbytes} B (salt {salt})")
    for g in groups:
        if g._get_backend(ctx.device)._push_calls() != ROUNDS // 2:
            fail(f"a group made {g._get_backend(ctx.device)._push_calls()} push calls, "
                 f"expected {ROUNDS // 2}")
        dist.destroy_process_group(g)


@case(nvlink=True, timeout=300)
def future_chains_on_both_kernels(ctx):
    g = _group(ctx)
    chained = []
    for i, nbytes in enumerate((32 << 10, 3 << 20) * 8):
        salt = 3000 + i
        t = _ints(ctx, ctx.rank, nbytes // 4, salt).to(ctx.device)
        fut = dist.all_reduce(t, group=g, async_op=True).get_future()
        # Each link runs on streams ordered after the one before.
        doubled = fut.then(lambda f: f.value()[0] * 2)
        plus = doubled.then(lambda f: f.value() + 1)
        chained.append((plus, nbytes, salt))
    for fut, nbytes, salt in chained:
        got = fut.wait()
        _expect_equal(ctx, got, _sum(ctx, nbytes // 4, salt) * 2 + 1,
                      f"then() chain after an all_reduce of {nbytes} B")
    dist.destroy_process_group(g)


def _uneven_sends(ctx, g, round_: int) -> None:
    """Send/recv that only some ranks make, a different number on each: a
    pipeline's stages (rank r sends to r + 1, round_ + 1 times; the last
    rank sends nothing, the first receives nothing).  Checked at once."""
    nxt, prv = ctx.rank + 1, ctx.rank - 1
    for k in range(round_ + 1):
        salt = 3000 + 10 * round_ + k
        if nxt < ctx.world:
            dist.send(_ints(ctx, ctx.rank, 64, salt).to(ctx.device), dst=nxt, group=g)
        if prv >= 0:
            got = torch.empty(64, dtype=torch.int32, device=ctx.device)
            dist.recv(got, src=prv, group=g)
            _expect_equal(ctx, got, _ints(ctx, prv, 64, salt), f"recv {k} of round {round_}")


@case(min_world=3, nvlink=True, timeout=300)
def fast_path_after_sends_some_ranks_made(ctx):
    """Each rank's seq counts its sends and receives too, so at 3+ ranks the
    ranks' seqs differ at the same collective; the kernels compare the
    group's collective count instead (a seq there made every call after the
    sends a 'desync').  Both kernels (barrier, one way), eager and captured."""
    for one_way in (0, 64 << 10):
        opts = nc.Options()
        opts.fast_path_max_bytes = 256 << 10
        opts.push_max_bytes = 0
        opts.one_way_max_bytes = one_way
        g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
        be = g._get_backend(ctx.device)
        before = be._fast_path_calls()
        kept = []
        for i in range(8):
            _uneven_sends(ctx, g, i)
            n = (1 << 10) if i % 2 else (48 << 10)  # bytes / 4: 4 KiB and 192 KiB
            t = _ints(ctx, ctx.rank, n, 4000 + i).to(ctx.device)
            dist.all_reduce(t, group=g)
            mine = _ints(ctx, ctx.rank, n, 5000 + i).to(ctx.device)
            gathered = torch.empty(n * ctx.world, dtype=torch.int32, device=ctx.device)
            dist.all_gather_into_tensor(gathered, mine, group=g)
            kept.append((i, n, t, gathered))
        # Captured after the sends too: the graph's calls are counted by the
        # engine, its replays run after more uneven sends.
        x = torch.empty(1 << 10, dtype=torch.int32, device=ctx.device)
        stream = torch.cuda.Stream(device=ctx.device)
        stream.wait_stream(torch.cuda.current_stream(ctx.device))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            dist.all_reduce(x, group=g)
        for i in range(8, 11):
            _uneven_sends(ctx, g, i)
            x.copy_(_ints(ctx, ctx.rank, 1 << 10, 4000 + i).to(ctx.device))
            graph.replay()
            _expect_equal(ctx, x, _sum(ctx, 1 << 10, 4000 + i), f"captured all_reduce, replay {i}")
        torch.cuda.synchronize(ctx.device)
        taken = be._fast_path_calls() - before
        if taken < 16:
            fail(f"one_way {one_way}: {taken} fast-path calls, expected at least 16")
        for i, n, t, gathered in kept:
            what = f"one_way {one_way}, round {i}"
            _expect_equal(ctx, t, _sum(ctx, n, 4000 + i), f"all_reduce, {what}")
            want = torch.cat([_ints(ctx, q, n, 5000 + i) for q in range(ctx.world)])
            _expect_equal(ctx, gathered, want, f"all_gather, {what}")
        del graph
        dist.destroy_process_group(g)
