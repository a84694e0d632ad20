"""The push all-reduce (nvlink/push.h).

all_reduce calls of push_min_bytes..push_max_bytes of whole 16-byte packs run
as nccl_core's own kernel, which stores through NVLink into the peers'
staging windows only.  Whether a call pushes depends on its arguments alone:
plain or NCCL memory, any offset and alignment, and ranks whose tensors lie in
different memory at different offsets (their allocators differ) all push and
agree.  Every output element is checked against a float64 CPU reference on
fresh random data, for every dtype and op the kernel covers; the push counter
shows which calls took it."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import capture_all_reduces, check, fail, make, reduce_ref, table_group
from tests.gpu.registry import Skip, case

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.uint8, torch.int32, torch.int64, torch.bool]
OPS = ("SUM", "PRODUCT", "MIN", "MAX", "AVG")
# 12289 packs of 16 bytes: an odd count, so chunks and block slices are uneven.
BYTES = 16 * 12289


def _group(ctx, push_min=32 << 10, push_max=8 << 20, ctas=None):
    opts = nc.Options()
    opts.fast_path_max_bytes = 16 << 10
    opts.push_min_bytes = push_min
    opts.push_max_bytes = push_max
    if ctas is not None:
        opts.push_ctas = ctas
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)


def _pushes(ctx, g) -> int:
    return g._get_backend(ctx.device)._push_calls()


class _Expect:
    """Counts the calls that should push; compares with the backend."""

    def __init__(self, ctx, g):
        self.ctx, self.g, self.n = ctx, g, _pushes(ctx, g)

    def __call__(self, pushed: bool | int, what: str) -> None:
        self.n += int(pushed)
        got = _pushes(self.ctx, self.g)
        if got != self.n:
            fail(f"{what}: {got} push all-reduces so far, expected {self.n}")


def _inputs(ctx, dtype, n, op, salt):
    return [make(ctx, q, dtype, n=n, op=op, salt=salt) for q in range(ctx.world)]


def _reduce(ctx, g, t, op, salt, what, **kw):
    inputs = _inputs(ctx, t.dtype, t.numel(), op, salt)
    t.copy_(inputs[ctx.rank])
    work = dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g, **kw)
    if work is not None:
        work.wait()
    check(t, reduce_ref(inputs, op, t.dtype), t.dtype, op, ctx.world, what)


@case(nvlink=True)
def push_all_reduce_matches_reference(ctx):
    g = _group(ctx)
    expect = _Expect(ctx, g)
    # One allocation, viewed as each dtype: one window for the whole case.
    buf = nc.torch.empty(BYTES + 64, dtype=torch.uint8, device=ctx.device)
    salt = 0
    for dtype in DTYPES:
        t = buf[:BYTES].view(dtype)
        for op in OPS:
            if op == "AVG" and not dtype.is_floating_point:
                continue  # refused by torch.distributed's contract (tested elsewhere)
            salt += 1
            _reduce(ctx, g, t, op, salt, f"push all_reduce {dtype} {op}")
            expect(True, f"{dtype} {op}")
    # Any view of whole packs pushes, wherever it lies: 16 bytes in, 4 bytes
    # in (not 16-byte aligned), plain memory.  A size that is not whole
    # packs, or outside [push_min, push_max], goes to NCCL.
    f = buf.view(torch.float32)
    _reduce(ctx, g, f[4:4 + BYTES // 4], "SUM", 100, "view at 16 bytes")
    expect(True, "view at 16 bytes")
    _reduce(ctx, g, f[1:1 + BYTES // 4], "SUM", 101, "view at 4 bytes")
    expect(True, "view at 4 bytes")
    h = buf.view(torch.float16)
    _reduce(ctx, g, h[1:1 + BYTES // 2], "MAX", 105, "float16 view at 2 bytes")
    expect(True, "float16 view at 2 bytes")
    _reduce(ctx, g, buf[3:3 + BYTES], "MIN", 106, "uint8 view at 3 bytes")
    expect(True, "uint8 view at 3 bytes")
    _reduce(ctx, g, f[: BYTES // 4 - 1], "SUM", 102, "size not whole packs")
    expect(False, "size not whole packs")
    _reduce(ctx, g, torch.empty(BYTES // 4, device=ctx.device), "SUM", 103, "plain memory")
    expect(True, "plain memory")
    _reduce(ctx, g, f[: (16 << 10) // 4 + 4], "SUM", 104, "below push_min_bytes")
    expect(False, "below push_min_bytes")
    # Larger calls, on more blocks: the staging window grows (every rank
    # re-creates it at the same call).
    for mib, ctas in ((3, None), (9, None)):
        big = nc.torch.empty((mib << 20) // 4 - 4 * 37, device=ctx.device)
        _reduce(ctx, g, big, "SUM", 200 + mib, f"{mib} MiB all_reduce (push_max 8 MiB)")
        expect(mib <= 8, f"{mib} MiB")
    dist.destroy_process_group(g)
    g = _group(ctx, push_max=16 << 20, ctas=128)
    expect = _Expect(ctx, g)
    big = nc.torch.empty((12 << 20) // 2, dtype=torch.bfloat16, device=ctx.device)
    for op in ("SUM", "MAX", "AVG"):
        _reduce(ctx, g, big, op, 300, f"12 MiB bfloat16 {op} on 128 blocks")
        expect(True, f"12 MiB bfloat16 {op}")
    dist.destroy_process_group(g)


@case(nvlink=True)
def push_all_reduce_ranks_in_different_memory(ctx):
    """The ranks' tensors lie in different memory at different
    offsets (NCCL memory on even ranks, the caching allocator on odd ones,
    each at an offset of its own, and NCCL-memory allocations of sizes of
    their own).  Nothing may depend on the allocators looking alike: every
    rank takes the same path (no hang), every element right."""
    g = _group(ctx)
    expect = _Expect(ctx, g)
    for rnd in range(4):
        off = (ctx.rank * 5 + rnd * 3) % 16  # floats
        host = nc.torch.empty if (ctx.rank + rnd) % 2 == 0 else torch.empty
        backing = host(BYTES // 4 + 16 + 1024 * ctx.rank, device=ctx.device)
        _reduce(ctx, g, backing[off:off + BYTES // 4], "SUM", 110 + rnd,
                f"ranks at different memory and offsets, round {rnd}")
        expect(True, f"different memory and offsets, round {rnd}")
    dist.destroy_process_group(g)


@case(nvlink=True)
def push_all_reduce_back_to_back_streams_and_graphs(ctx):
    g = _group(ctx, push_max=16 << 20)
    expect = _Expect(ctx, g)
    n = BYTES // 4
    ts = [nc.torch.empty(n, device=ctx.device) for _ in range(4)]
    # Back to back with no host sync: each call reuses the staging window and
    # the flags of the one before it.
    for rnd in range(3):
        ins = [_inputs(ctx, torch.float32, n, "SUM", 400 + 10 * rnd + i) for i in range(4)]
        for t, inp in zip(ts, ins):
            t.copy_(inp[ctx.rank])
        for t in ts:
            dist.all_reduce(t, group=g)
        expect(len(ts), f"back-to-back round {rnd}")
        for i, (t, inp) in enumerate(zip(ts, ins)):
            check(t, reduce_ref(inp, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
                  f"back-to-back push {rnd}.{i}")
    # async (the group's stream), then plain (the caller's), then async.
    ins = [_inputs(ctx, torch.float32, n, "MAX", 500 + i) for i in range(3)]
    for t, inp in zip(ts, ins):
        t.copy_(inp[ctx.rank])
    w1 = dist.all_reduce(ts[0], op=dist.ReduceOp.MAX, group=g, async_op=True)
    dist.all_reduce(ts[1], op=dist.ReduceOp.MAX, group=g)
    w3 = dist.all_reduce(ts[2], op=dist.ReduceOp.MAX, group=g, async_op=True)
    w1.wait()
    w3.wait()
    expect(3, "across streams")
    for i in range(3):
        check(ts[i], reduce_ref(ins[i], "MAX", torch.float32), torch.float32, "MAX", ctx.world,
              f"push across streams, call {i}")
    # Captured: the staging window exists (same size as above), so the
    # captured calls push; replays advance the kernel's counters.
    s = torch.cuda.Stream(device=ctx.device)
    s.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        dist.all_reduce(ts[0], group=g)
        dist.all_reduce(ts[1], op=dist.ReduceOp.MIN, group=g)
    expect(2, "captured calls")
    for rep in range(3):
        a = _inputs(ctx, torch.float32, n, "SUM", 600 + rep)
        b = _inputs(ctx, torch.float32, n, "MIN", 700 + rep)
        ts[0].copy_(a[ctx.rank])
        ts[1].copy_(b[ctx.rank])
        graph.replay()
        torch.cuda.synchronize()
        check(ts[0], reduce_ref(a, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              f"replay {rep}, SUM")
        check(ts[1], reduce_ref(b, "MIN", torch.float32), torch.float32, "MIN", ctx.world,
              f"replay {rep}, MIN")
    expect(False, "replays add no host calls")
    # A plain call after the replays still agrees with the peers' counters.
    _reduce(ctx, g, ts[2], "SUM", 800, "push after replays")
    expect(True, "after replays")
    # A call needing a larger staging window while capturing goes to NCCL
    # (no registration under capture), on every rank alike.
    big = nc.torch.empty((6 << 20) // 4, device=ctx.device)
    _reduce(ctx, g, big, "SUM", 850, "6 MiB before capture")  # staging for 8 MiB
    expect(True, "6 MiB before capture")
    bigger = nc.torch.empty((12 << 20) // 4, device=ctx.device)
    _reduce(ctx, g, bigger[: (7 << 20) // 4], "MAX", 851,
            "7 MiB before capture")  # fits the 8 MiB staging
    expect(True, "7 MiB before capture")
    graph2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph2, stream=s):
        dist.all_reduce(bigger, group=g)  # 12 MiB: staging would have to grow: NCCL's
    expect(False, "captured call that needs more staging")
    c = _inputs(ctx, torch.float32, bigger.numel(), "SUM", 900)
    bigger.copy_(c[ctx.rank])
    graph2.replay()
    torch.cuda.synchronize()
    check(bigger, reduce_ref(c, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
          "replayed 12 MiB all_reduce on NCCL's path")
    _reduce(ctx, g, bigger, "SUM", 901, "12 MiB after the capture: staging grows")
    expect(True, "12 MiB after the capture")
    del graph, graph2
    dist.destroy_process_group(g)


@case(nvlink=True, min_world=1)
def push_all_reduce_off(ctx):
    g = _group(ctx, push_max=0)
    t = torch.empty(BYTES // 4, device=ctx.device)
    _reduce(ctx, g, t, "SUM", 1, "all_reduce, push off")
    if _pushes(ctx, g) != 0:
        fail("push_max_bytes = 0, yet calls pushed")
    dist.destroy_process_group(g)


@case(nvlink=True)
def push_by_mode_from_the_path_table(ctx):
    """With no push option and no NCCL_CORE_PUSH_* variable, the path table
    gives the push a minimum per mode (csrc/nvlink/path_table.cpp; at 3-4
    ranks 2 MiB captured, 4 MiB eager).  An eager call of a size only captured
    calls push goes to NCCL yet sets the staging up (a capture cannot), and the
    same call captured pushes; every eager call and every replay is correct,
    and the counter shows which pushed."""
    from nccl_core_backend import paths

    w, r, d = ctx.world, ctx.rank, ctx.device
    g = table_group(ctx, ("NCCL_CORE_PUSH_MIN_BYTES", "NCCL_CORE_PUSH_MAX_BYTES"))
    choice = paths.for_world(w)
    if not choice["push_max_bytes"]:
        raise Skip(f"the path table has no push at {w} ranks")
    nbytes = choice["push_min_bytes"]  # the smallest captured push
    n = nbytes // 4
    eager = paths.path_of("all_reduce", nbytes, w) == "push"
    expect = _Expect(ctx, g)
    stream = torch.cuda.Stream(device=d)
    x = torch.zeros(n, device=d)
    for i in range(5):  # eager: also the capture's warm-up, on its stream
        inputs = _inputs(ctx, torch.float32, n, "SUM", 400 + i)
        with torch.cuda.stream(stream):
            x.copy_(inputs[r].to(d))
            dist.all_reduce(x, group=g)
        stream.synchronize()
        check(x, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", w,
              f"eager {nbytes} B call {i}")
        expect(eager, f"eager {nbytes} B call {i}")
    graph = capture_all_reduces(x, g, stream, 2)
    expect(2, f"two captured {nbytes} B calls")
    for rep in range(8):
        inputs = _inputs(ctx, torch.float32, n, "SUM", 500 + rep)
        x.copy_(inputs[r].to(d))
        graph.replay()
        torch.cuda.synchronize(d)
        ref = reduce_ref(inputs, "SUM", torch.float32).double()
        check(x, ref * w, torch.float32, "SUM", w, f"replay {rep} (two sums)")
    del graph
    dist.destroy_process_group(g)
