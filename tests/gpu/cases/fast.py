"""The fast path: groups with `fast_path_max_bytes` run small
all_reduce, reduce_scatter_tensor, all_gather_into_tensor, broadcast and even
all_to_all_single calls as one nccl_core kernel.  Every output element is
compared with a float64 CPU reference, below and above the threshold, aligned
and not; then back-to-back calls (the two scratch halves), CUDA graphs, and a
rank that never arrives."""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import (capture_all_reduces, check, env_paths, expect_raises, fail,
                                    make, poison, reduce_ref, sanity, table_group)
from tests.gpu.registry import Skip, case

THRESHOLD = 1 << 14
REDUCE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                 torch.uint8, torch.int32, torch.int64, torch.bool]
COPY_DTYPES = [torch.float32, torch.bfloat16, torch.uint8, torch.int64]
FLOAT_TYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
OPS = ("SUM", "PRODUCT", "MIN", "MAX", "AVG")
# Element counts: tiny, odd, exactly at a 16-byte multiple, and (for 4-byte
# types) above the threshold so the same group also takes NCCL's path.
SIZES = (1, 7, 1031, 2048, 4097)


def _group(ctx, timeout=None):
    opts = nc.Options()
    opts.fast_path_max_bytes = THRESHOLD
    opts.push_max_bytes = 0  # the fast path alone (the path table would push mid sizes)
    kw = {"timeout": timeout} if timeout else {}
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts, **kw)


def _placed(ctx, t: torch.Tensor, misalign: bool) -> torch.Tensor:
    """`t` on the GPU, one element past an aligned start when `misalign`."""
    base = torch.zeros(t.numel() + 1, dtype=t.dtype, device=ctx.device)
    out = base[1:] if misalign else base[: t.numel()]
    out.copy_(t.to(ctx.device))
    return out


def _path(nbytes: int) -> str:
    return "fast" if nbytes <= THRESHOLD else "nccl"


def _taken(ctx, g) -> int:
    """Calls of group `g` that took the fast path so far."""
    return g._get_backend(ctx.device)._fast_path_calls()


def _expect_taken(ctx, g, n: int, what: str) -> None:
    got = _taken(ctx, g)
    if got != n:
        fail(f"{what}: {got} calls took the fast path, expected {n}")


@case(nvlink=True, min_world=1)
def fast_path_reductions_match_reference(ctx):
    w, r = ctx.world, ctx.rank
    g = _group(ctx)
    fast = 0
    for n in SIZES:
        for dtype in REDUCE_DTYPES:
            elem = torch.empty(0, dtype=dtype).element_size()
            for op in OPS:
                if op == "AVG" and dtype not in FLOAT_TYPES:
                    continue
                red = getattr(dist.ReduceOp, op)
                misalign = n in (1031, 2048)
                # all_reduce
                inputs = [make(ctx, q, dtype, n=n, op=op, salt=n + 7) for q in range(w)]
                t = _placed(ctx, inputs[r], misalign)
                dist.all_reduce(t, op=red, group=g)
                fast += _path(n * elem) == "fast"
                check(t, reduce_ref(inputs, op, dtype), dtype, op, w,
                      f"all_reduce ({_path(n * elem)}) n={n}")
                # reduce_scatter_tensor: each rank contributes w blocks of n
                inputs = [make(ctx, q, dtype, n=n * w, op=op, salt=n + 11) for q in range(w)]
                src = _placed(ctx, inputs[r], misalign)
                out = poison((n,), dtype, ctx.device)
                dist.reduce_scatter_tensor(out, src, op=red, group=g)
                fast += _path(n * w * elem) == "fast"
                ref = reduce_ref(inputs, op, dtype).reshape(w, n)[r]
                check(out, ref, dtype, op, w, f"reduce_scatter_tensor ({_path(n * w * elem)}) n={n}")
    _expect_taken(ctx, g, fast, "reductions")
    dist.destroy_process_group(g)
    sanity(ctx)


@case(nvlink=True, min_world=3)
def fast_path_large_all_reduce_two_shot(ctx):
    """From 1 MiB over more than two ranks all_reduce takes two shots (each
    rank reduces one chunk): chunk edges must agree between ranks whatever
    each rank's local alignment."""
    w, r = ctx.world, ctx.rank
    opts = nc.Options()
    opts.fast_path_max_bytes = 4 << 20
    opts.push_max_bytes = 0
    g = dist.new_group(list(range(w)), backend="nccl_core", pg_options=opts)
    cases = [(torch.float32, 1 << 18, False), (torch.float32, (1 << 18) + 3, False),
             (torch.bfloat16, 1 << 20, True), (torch.int32, (1 << 19) + 5, True),
             (torch.float64, 1 << 19, r % 2 == 1)]
    for dtype, n, misalign in cases:
        for op in ("SUM", "MAX", "AVG"):
            if op == "AVG" and dtype not in FLOAT_TYPES:
                continue
            inputs = [make(ctx, q, dtype, n=n, op=op, salt=n % 97) for q in range(w)]
            t = _placed(ctx, inputs[r], misalign)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g)
            check(t, reduce_ref(inputs, op, dtype), dtype, op, w,
                  f"large all_reduce n={n} misaligned={misalign}")
    _expect_taken(ctx, g, sum(3 if d in FLOAT_TYPES else 2 for d, _, _ in cases), "large all_reduce")
    dist.destroy_process_group(g)
    sanity(ctx)


@case(nvlink=True, min_world=1)
def fast_path_copies_match_reference(ctx):
    w, r = ctx.world, ctx.rank
    g = _group(ctx)
    fast = 0
    for n in SIZES:
        for dtype in COPY_DTYPES:
            elem = torch.empty(0, dtype=dtype).element_size()
            misalign = n in (7, 2048)
            inputs = [make(ctx, q, dtype, n=n, salt=n + 3) for q in range(w)]
            # all_gather_into_tensor
            src = _placed(ctx, inputs[r], misalign)
            out = poison((n * w,), dtype, ctx.device)
            dist.all_gather_into_tensor(out, src, group=g)
            fast += _path(n * elem) == "fast"
            check(out, torch.cat(inputs), dtype, "SUM", 1, f"all_gather ({_path(n * elem)}) n={n}")
            # broadcast from every root
            for root in range(w):
                t = _placed(ctx, inputs[r], misalign)
                dist.broadcast(t, root, group=g)
                fast += _path(n * elem) == "fast"
                check(t, inputs[root], dtype, "SUM", 1,
                      f"broadcast root={root} ({_path(n * elem)}) n={n}")
            # all_to_all_single, even splits: block q of rank p goes to rank q
            blocks = [make(ctx, q, dtype, n=n * w, salt=n + 5) for q in range(w)]
            src = _placed(ctx, blocks[r], misalign)
            out = poison((n * w,), dtype, ctx.device)
            dist.all_to_all_single(out, src, group=g)
            fast += _path(n * w * elem) == "fast"
            ref = torch.cat([blocks[p].reshape(w, n)[r] for p in range(w)])
            check(out, ref, dtype, "SUM", 1, f"all_to_all_single ({_path(n * w * elem)}) n={n}")
    _expect_taken(ctx, g, fast, "copies")
    dist.destroy_process_group(g)
    sanity(ctx)


@case(nvlink=True, min_world=1)
def fast_path_back_to_back_and_graphs(ctx):
    """Many calls with no host sync in between (the two scratch halves take
    turns), mixed with NCCL-path calls; then CUDA graphs: a first call under
    capture goes to NCCL, and replays of captured fast calls stay correct."""
    w, r, d = ctx.world, ctx.rank, ctx.device
    g = _group(ctx)
    n = 1000
    outs, refs = [], []
    for i in range(300):
        inputs = [make(ctx, q, torch.float32, n=n, salt=i) for q in range(w)]
        t = inputs[r].to(d)
        dist.all_reduce(t, group=g)
        outs.append(t)
        refs.append(reduce_ref(inputs, "SUM", torch.float32))
        if i % 50 == 0:
            big = torch.full((THRESHOLD,), float(r), device=d)  # 64 KiB: NCCL's path
            dist.all_reduce(big, group=g)
            outs.append(big)
            refs.append(torch.full((THRESHOLD,), float(sum(range(w))), dtype=torch.float64))
    for i, (o, ref) in enumerate(zip(outs, refs)):
        check(o, ref, torch.float32, "SUM", w, f"back-to-back call {i}")
    _expect_taken(ctx, g, 300, "back-to-back")
    dist.destroy_process_group(g)

    # A fresh group's first eligible call is captured: it must go to NCCL.
    g = _group(ctx)
    stream = torch.cuda.Stream(device=d)
    x = torch.full((n,), float(r + 1), device=d)
    # Connect NCCL for this call eagerly: calls in a coalescing block never
    # take the fast path, so this one does not set it up.
    warm = torch.zeros(n, device=d)
    with dist._coalescing_manager(group=g, device=d):
        dist.all_reduce(warm, group=g)
    torch.cuda.synchronize(d)
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize(d)
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            dist.all_reduce(x, group=g)
    graph.replay()
    torch.cuda.synchronize(d)
    check(x, torch.full((n,), float(sum(range(1, w + 1))), dtype=torch.float64), torch.float32,
          "SUM", w, "first call captured")
    _expect_taken(ctx, g, 0, "a first call under capture")
    # Eager call sets the fast path up; captured fast calls then replay.
    y = torch.ones(n, device=d)
    dist.all_reduce(y, group=g)
    check(y, torch.full((n,), float(w), dtype=torch.float64), torch.float32, "SUM", w, "set-up call")
    _expect_taken(ctx, g, 1, "the set-up call")
    bufs = [torch.zeros(n, device=d) for _ in range(5)]
    graph2 = torch.cuda.CUDAGraph()
    torch.cuda.synchronize(d)
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph2, stream=stream):
            for b in bufs:
                dist.all_reduce(b, group=g)
    _expect_taken(ctx, g, 6, "captured calls")
    for rep in range(4):
        inputs = [make(ctx, q, torch.float32, n=n * 5, salt=100 + rep) for q in range(w)]
        for k, b in enumerate(bufs):
            b.copy_(inputs[r][k * n:(k + 1) * n].to(d))
        graph2.replay()
        torch.cuda.synchronize(d)
        ref = reduce_ref(inputs, "SUM", torch.float32)
        for k, b in enumerate(bufs):
            check(b, ref[k * n:(k + 1) * n], torch.float32, "SUM", w, f"replay {rep} call {k}")
    del graph, graph2
    dist.destroy_process_group(g)
    sanity(ctx)


def _group_for_a_missing_rank(ctx):
    """A group with a 4 s timeout whose fast path every rank has set up, and a
    tensor for it: rank 0 then calls alone."""
    if ctx.world < 2:
        raise Skip("needs two ranks")
    # Set-up (the communicator, the fast path's buffers) gets a long timeout:
    # on a loaded host it can take more than 4 s (seen in the quick tier).
    g = _group(ctx, timeout=datetime.timedelta(seconds=120))
    t = torch.ones(16, device=ctx.device)
    dist.all_reduce(t, group=g)  # every rank: sets the fast path up
    torch.cuda.synchronize(ctx.device)
    g._get_backend(ctx.device)._set_default_timeout(datetime.timedelta(seconds=4))
    return g, t


@case(nvlink=True)
def fast_path_missing_rank_aborts_cleanly(ctx):
    """Rank 0's fast all_reduce waits for peers that never come: the watchdog
    times it out, the abort flag ends the kernel, and the GPU is free again."""
    g, t = _group_for_a_missing_rank(ctx)
    if ctx.rank == 0:
        t0 = time.time()
        work = dist.all_reduce(t, group=g, async_op=True)

        def wait_until_failed():
            while not work.is_completed():
                time.sleep(0.05)
                if time.time() - t0 > 30:
                    raise AssertionError("no timeout after 30 s")
            work.wait()

        expect_raises(dist.DistBackendError, wait_until_failed, "timed out")
        # The kernel ended: the device drains instead of spinning forever.
        torch.cuda.synchronize(ctx.device)
        assert time.time() - t0 < 4 + 10, f"took {time.time() - t0:.1f}s"
    sanity(ctx)


@case(nvlink=True)
def fast_path_missing_rank_plain_call_times_out(ctx):
    """A plain call on the fast path reports its own completion (no end event,
    no work for the watchdog): the watchdog's progress check must still time
    it out when a peer never comes, and the abort must end its kernel."""
    g, t = _group_for_a_missing_rank(ctx)
    if ctx.rank == 0:
        t0 = time.time()
        dist.all_reduce(t, group=g)  # returns at once; its kernel waits on the GPU
        if g._get_backend(ctx.device)._pending_works() != 0:
            fail("a plain fast-path call left a work for the watchdog")

        def later_call_fails():
            while time.time() - t0 < 30:
                time.sleep(0.5)
                dist.all_reduce(t, group=g)  # raises once the group has failed
            raise AssertionError("no timeout after 30 s")

        expect_raises(dist.DistBackendError, later_call_fails, "timed out")
        torch.cuda.synchronize(ctx.device)  # the kernels ended
        assert time.time() - t0 < 4 + 10, f"took {time.time() - t0:.1f}s"
    sanity(ctx)


@case(nvlink=True, min_world=1)
def fast_path_plain_call_work_without_end_event(ctx):
    """The Work of a plain fast-path call (ProcessGroup.allreduce with
    asyncOp=False) has no end event: is_completed, wait from another stream,
    and its future still follow the kernel's own report."""
    w, d = ctx.world, ctx.device
    g = _group(ctx)
    before = _taken(ctx, g)
    inputs = [make(ctx, q, torch.float32, n=1031, salt=77) for q in range(w)]
    t = inputs[ctx.rank].to(d)
    opts = dist.AllreduceOptions()
    opts.asyncOp = False
    work = g.allreduce([t], opts)
    work.wait()
    _expect_taken(ctx, g, before + 1, "a plain call through ProcessGroup.allreduce")
    # torch >= 2.15's flight recorder hooks every group's completions, and a
    # group with completion hooks has its watchdog see every op end.
    recorded = g in getattr(dist.distributed_c10d._world, "pg_flight_recorder_hooks", {})
    if not recorded and g._get_backend(d)._pending_works() != 0:
        fail("a plain fast-path call left a work for the watchdog")
    torch.cuda.synchronize(d)
    deadline = time.time() + 10
    while not work.is_completed():
        if time.time() > deadline:
            fail("is_completed() stayed False after the stream synchronized")
            break
        time.sleep(0.01)
    check(t, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", w, "plain work")
    # From another stream, wait() must order that stream after the kernel.
    u = inputs[ctx.rank].to(d)
    work2 = g.allreduce([u], opts)
    side = torch.cuda.Stream(device=d)
    with torch.cuda.stream(side):
        work2.wait()
        v = u * 2
    fut = work2.get_future()
    value = fut.wait()
    torch.cuda.synchronize(d)
    check(v, 2 * reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", w,
          "read on another stream after wait()")
    # The future's value is the reduced tensor itself.
    if len(value) != 1 or value[0].data_ptr() != u.data_ptr():
        fail("the future's value is not the all_reduce's tensor")
    check(value[0], reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", w,
          "the future's value")
    dist.destroy_process_group(g)


@case(nvlink=True, min_world=1)
def fast_path_on_by_default_and_ordered_across_streams(ctx):
    """A group created with no options takes the fast path in eager calls up
    to NCCL_CORE_FAST_PATH_MAX_BYTES or NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES
    (the GPU suite sets 256 KiB, tests/gpu/launch.py) or, where neither is
    set, the path table's eager limit.  A
    plain `dist.all_reduce` runs on the caller's current stream: calls issued
    from three streams, with no host sync between them, still take turns on
    the scratch window, and each call sees the work queued before it on its
    own stream."""
    w, r, d = ctx.world, ctx.rank, ctx.device
    limit = env_paths(w)["eager_fast_max_bytes"]["all_reduce"]
    g = dist.new_group(list(range(w)), backend="nccl_core")
    streams = [torch.cuda.Stream(device=d) for _ in range(3)]
    outs = []
    for i in range(90):
        with torch.cuda.stream(streams[i % 3]):
            if i % 10 == 0:
                torch.cuda._sleep(200_000)  # the fill below must wait for this
            t = torch.full((1024,), float(r + i), device=d)
            dist.all_reduce(t, group=g)
            outs.append(t)
    big = torch.full((max(limit, 4096) // 4 + 1,), float(r), device=d)  # past the limit: NCCL
    dist.all_reduce(big, group=g)
    torch.cuda.synchronize(d)
    for i, t in enumerate(outs):
        exp = float(w * i + w * (w - 1) // 2)
        check(t, torch.full((1024,), exp, dtype=torch.float64), torch.float32, "SUM", w,
              f"call {i} on stream {i % 3}")
    check(big, torch.full(big.shape, float(w * (w - 1) // 2), dtype=torch.float64),
          torch.float32, "SUM", w, "just past the limit")
    _expect_taken(ctx, g, 90 if limit >= 4096 else 0, "default group, three streams")
    dist.destroy_process_group(g)
    sanity(ctx)


@case(nvlink=True, min_world=1)
def fast_path_by_mode_from_the_path_table(ctx):
    """With no option and no NCCL_CORE_*FAST_PATH_MAX_BYTES, the path table
    decides per mode (csrc/nvlink/path_table.cpp): at 2-4 ranks a small eager
    all_reduce goes to NCCL (the fast path's launch costs more host time than
    NCCL's whole call) yet sets the fast path up, and the same call captured
    into a CUDA graph runs as our kernel; every replay is correct."""
    from nccl_core_backend import paths

    w, r, d, n = ctx.world, ctx.rank, ctx.device, 1024
    g = table_group(ctx, ("NCCL_CORE_FAST_PATH_MAX_BYTES", "NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"))
    eager = paths.path_of("all_reduce", 4 * n, w) == "fast"
    captured = paths.path_of("all_reduce", 4 * n, w, graph=True) == "fast"
    stream = torch.cuda.Stream(device=d)
    x = torch.zeros(n, device=d)
    for i in range(20):  # eager: also the capture's warm-up, on its stream
        inputs = [make(ctx, q, torch.float32, n=n, salt=i) for q in range(w)]
        with torch.cuda.stream(stream):
            x.copy_(inputs[r].to(d))
            dist.all_reduce(x, group=g)
        stream.synchronize()
        check(x, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", w, f"eager call {i}")
    _expect_taken(ctx, g, 20 if eager else 0, "eager calls")
    graph = capture_all_reduces(x, g, stream, 3)
    _expect_taken(ctx, g, (20 if eager else 0) + (3 if captured else 0), "captured calls")
    for rep in range(10):
        inputs = [make(ctx, q, torch.float32, n=n, salt=100 + rep) for q in range(w)]
        x.copy_(inputs[r].to(d))
        graph.replay()
        torch.cuda.synchronize(d)
        ref = reduce_ref(inputs, "SUM", torch.float32).double()
        check(x, ref * w * w, torch.float32, "SUM", w, f"replay {rep} (three sums)")
    del graph
    dist.destroy_process_group(g)
    sanity(ctx)
