"""Zero-copy all_reduce on NCCL memory (issue 6, fast/zero_copy.h).

Calls of at least `zero_copy_min_bytes` on a tensor in NCCL memory run in
place on every rank's copy of the allocation, mapped through a window the
backend registers at the first such call.  Every output element is checked
against a float64 CPU reference for every dtype and reduce op, aligned and
not, on symmetric and on plain windows, back to back, on another stream, and
replayed from a CUDA graph; the zero-copy call count shows which path ran."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, reduce_ref
from tests.gpu.registry import case

MIN_BYTES = 1 << 16
SYMMETRIC_MAX = 1 << 20
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.uint8, torch.int32, torch.int64, torch.bool]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
OPS = ("SUM", "PRODUCT", "MIN", "MAX", "AVG")


def _group(ctx, min_bytes=MIN_BYTES):
    opts = nc.Options()
    opts.zero_copy_min_bytes = min_bytes
    opts.symmetric_max_bytes = SYMMETRIC_MAX
    opts.fast_path_max_bytes = 0
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)


def _calls(ctx, g) -> int:
    return g._get_backend(ctx.device)._zero_copy_calls()


def _reduce(ctx, g, t, op, salt, what, zero_copy: bool, **kw) -> None:
    """Fresh inputs into `t`, one all_reduce, every element checked, and the
    path it took."""
    inputs = [make(ctx, q, t.dtype, n=t.numel(), op=op, salt=salt) for q in range(ctx.world)]
    t.copy_(inputs[ctx.rank])
    before = _calls(ctx, g)
    work = dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g, **kw)
    if work is not None:
        work.wait()
    check(t, reduce_ref(inputs, op, t.dtype), t.dtype, op, ctx.world, what)
    took = _calls(ctx, g) - before
    if took != int(zero_copy):
        fail(f"{what} {t.dtype} {op}: {took} zero-copy calls, expected {int(zero_copy)}")


def _numel(dtype, nbytes: int) -> int:
    return max(1, nbytes // torch.empty(0, dtype=dtype).element_size())


@case()
def zero_copy_all_reduce_every_dtype_and_op(ctx):
    g = _group(ctx)
    salt = 0
    for dtype in DTYPES:
        # 16-byte packs (an even count past a 1 KiB chunk boundary), then an
        # odd count that is no whole number of packs (element by element).
        for n in (_numel(dtype, 3 * MIN_BYTES // 2) + 64, _numel(dtype, MIN_BYTES) + 3):
            t = nc.torch.empty(n, dtype=dtype, device=ctx.device)
            for op in OPS:
                if op == "AVG" and dtype not in FLOATS:
                    continue
                salt += 1
                _reduce(ctx, g, t, op, salt, f"zero-copy n={n}", zero_copy=True)
            del t
    dist.destroy_process_group(g)


@case()
def zero_copy_windows_views_streams_and_graphs(ctx):
    g = _group(ctx)
    n = MIN_BYTES // 4 * 3
    # A symmetric window (allocation <= SYMMETRIC_MAX): zero-copy from
    # MIN_BYTES, NCCL's symmetric kernels below.
    t = nc.torch.empty(n, device=ctx.device)
    _reduce(ctx, g, t, "SUM", 1, "first call, registers", zero_copy=True)
    _reduce(ctx, g, t[: n // 8], "SUM", 2, "below zero_copy_min_bytes", zero_copy=False)
    # A view one element in: unaligned, element by element, peers at the
    # same offset.
    _reduce(ctx, g, t[1:], "MAX", 3, "a misaligned view", zero_copy=True)
    # A plain window (allocation above SYMMETRIC_MAX), and plain memory.
    big = nc.torch.empty(SYMMETRIC_MAX // 4 * 3, device=ctx.device)
    _reduce(ctx, g, big, "SUM", 4, "a large allocation", zero_copy=True)
    _reduce(ctx, g, big[: n // 8], "SUM", 5, "small call on a plain window", zero_copy=False)
    p = torch.empty(n, device=ctx.device)
    _reduce(ctx, g, p, "SUM", 6, "plain memory", zero_copy=False)
    windows = g._get_backend(ctx.device)._symmetric_windows()
    if windows != 2:
        fail(f"{windows} windows registered, expected 2")
    # Back to back, alternating tensors, and async on the backend's stream.
    for i in range(6):
        x = t if i % 2 == 0 else big
        _reduce(ctx, g, x, "SUM", 10 + i, f"back to back #{i}", zero_copy=True,
                async_op=i >= 3)
    # A MemPool tensor on the backend's allocator.
    pool = torch.cuda.MemPool(g._get_backend(ctx.device).mem_allocator)
    with torch.cuda.use_mem_pool(pool):
        m = torch.empty(n, device=ctx.device)
    _reduce(ctx, g, m, "AVG", 20, "a MemPool tensor", zero_copy=True)
    # 16 MiB, the sizes the path is for.
    large = nc.torch.empty(4 << 20, device=ctx.device)
    _reduce(ctx, g, large, "SUM", 21, "16 MiB", zero_copy=True)
    # Graph capture on a registered allocation: replays read fresh inputs.
    inputs = [make(ctx, q, torch.float32, n=n, salt=30) for q in range(ctx.world)]
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    before = _calls(ctx, g)
    with torch.cuda.graph(graph):
        dist.all_reduce(t, group=g)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g)
    if _calls(ctx, g) - before != 2:
        fail("captured all_reduces did not take the zero-copy path")
    for r in range(3):
        t.copy_(inputs[ctx.rank])
        graph.replay()
        torch.cuda.synchronize()
        # The MAX of equal copies of the sum is the sum.
        check(t, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world, f"replay {r}")
    del graph, m, pool
    dist.destroy_process_group(g)


@case()
def zero_copy_off(ctx):
    g = _group(ctx, min_bytes=0)
    t = nc.torch.empty(MIN_BYTES, device=ctx.device)
    _reduce(ctx, g, t, "SUM", 1, "zero_copy_min_bytes = 0", zero_copy=False)
    dist.destroy_process_group(g)
