"""Automatic symmetric windows over NCCL memory (issue 6, registration/symmetric.h).

all_reduce calls on NCCL's path (above the fast path) whose tensor lies in NCCL
memory of at most `symmetric_max_bytes` register the allocation once as a
symmetric window.  Every output element is checked against a float64 CPU
reference, on first use (the registering call) and on reuse; the window count
shows what was registered, and NCCL's live bytes show that the memory of dead
tensors comes back."""

from __future__ import annotations

import gc
import time

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, reduce_ref
from tests.gpu.registry import case

# Above the fast path's 256 KiB for every dtype below (2-byte types: 400 KB),
# odd so that no size is a round number of packs.
N = 200003
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32]
OPS = ("SUM", "MAX", "MIN", "AVG", "PRODUCT")


def _windows(ctx, g) -> int:
    return g._get_backend(ctx.device)._symmetric_windows()


def _expect_windows(ctx, g, n: int, what: str) -> None:
    got = _windows(ctx, g)
    if got != n:
        fail(f"{what}: {got} symmetric windows, expected {n}")


def _settle(ctx, g) -> None:
    """Until every rank's watchdog has retired its works: a work keeps its
    tensors alive, so a dead tensor is only released on every rank after this."""
    gc.collect()
    torch.cuda.synchronize()
    be = g._get_backend(ctx.device)
    deadline = time.monotonic() + 10
    while be._pending_works() and time.monotonic() < deadline:
        time.sleep(0.01)
    if be._pending_works():
        fail(f"{be._pending_works()} works still pending after 10 s")
    dist.barrier(group=g)
    torch.cuda.synchronize()


def _reduce(ctx, g, t: torch.Tensor, op: str, salt: int, what: str) -> None:
    """Fresh inputs into `t`, one all_reduce, every element checked."""
    inputs = [make(ctx, q, t.dtype, n=t.numel(), op=op, salt=salt) for q in range(ctx.world)]
    t.copy_(inputs[ctx.rank])
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g)
    check(t, reduce_ref(inputs, op, t.dtype), t.dtype, op, ctx.world, what)


@case(nvlink=True)
def symmetric_windows_for_nccl_memory(ctx):
    gc.collect()
    torch.cuda.synchronize()
    opts = nc.Options()
    opts.push_max_bytes = 0  # its windows are counted in tests/gpu/cases/push.py
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
    base_live = nc._C._mem_live_bytes()
    salt = 0
    for dtype in DTYPES:
        for op in OPS:
            if op == "AVG" and not dtype.is_floating_point:
                continue
            salt += 1
            _settle(ctx, g)
            t = nc.torch.empty(N, dtype=dtype, device=ctx.device)
            _reduce(ctx, g, t, op, salt, f"all_reduce registering NCCL memory {dtype}")
            # The previous tensor died and its work retired on every rank: its
            # window went at this registration, so one window is left.
            _expect_windows(ctx, g, 1, f"{dtype} {op}, first use")
            _reduce(ctx, g, t, op, salt + 100, f"all_reduce on a registered window {dtype}")
            _expect_windows(ctx, g, 1, f"{dtype} {op}, reuse")
            del t
    # The last tensor is dead but still mapped by its window (pinned) until
    # the next registration: one more registration returns it.
    _settle(ctx, g)
    t = nc.torch.empty(N, device=ctx.device)
    _reduce(ctx, g, t, "SUM", 900, "all_reduce after the sweep")
    _expect_windows(ctx, g, 1, "after the sweep")
    grown = nc._C._mem_live_bytes() - base_live
    if grown > 2 * N * 4:
        fail(f"NCCL memory grew by {grown} bytes over the dtype/op loop: dead windows kept")
    # A view at an offset (the same on every rank), misaligned.
    v = t[3:]
    _reduce(ctx, g, v, "SUM", 901, "all_reduce on a view of a registered allocation")
    _expect_windows(ctx, g, 1, "a view of a registered allocation")
    # Plain memory, and an NCCL allocation above symmetric_max_bytes: not registered.
    p = torch.empty(N, device=ctx.device)
    _reduce(ctx, g, p, "SUM", 902, "all_reduce on plain memory")
    big = nc.torch.empty((9 << 20) // 4, device=ctx.device)
    _reduce(ctx, g, big, "SUM", 903, "all_reduce on NCCL memory above the limit")
    _expect_windows(ctx, g, 1, "plain memory and a large allocation")
    # A MemPool on the backend's allocator: the pool's segment is registered.
    backend = g._get_backend(ctx.device)
    pool = torch.cuda.MemPool(backend.mem_allocator)
    with torch.cuda.use_mem_pool(pool):
        m = torch.empty(N, device=ctx.device)
    _reduce(ctx, g, m, "SUM", 904, "all_reduce on a MemPool tensor")
    _expect_windows(ctx, g, 2, "a MemPool segment")
    # The user's own window on a registered allocation, next to ours.
    win = nc.get_communicator(g).register_window(t)
    _reduce(ctx, g, t, "SUM", 905, "all_reduce with a user window on the same memory")
    if win is not None:
        win.close()
    _reduce(ctx, g, t, "SUM", 906, "all_reduce after the user's window closed")
    # Graph capture: no registration while capturing; replays are right.
    c = nc.torch.empty(N, device=ctx.device)
    inputs = [make(ctx, q, torch.float32, n=N, salt=907) for q in range(ctx.world)]
    s = torch.cuda.Stream(device=ctx.device)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        dist.all_reduce(torch.ones(N, device=ctx.device), group=g)  # connects outside capture
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dist.all_reduce(c, group=g)
    _expect_windows(ctx, g, 2, "a captured all_reduce")
    for _ in range(2):
        c.copy_(inputs[ctx.rank])
        graph.replay()
        torch.cuda.synchronize()
        check(c, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              "replayed all_reduce on NCCL memory")
    del graph
    # A registered allocation whose tensor dies stays mapped (every rank's
    # window still points at it) until the windows are deregistered: here,
    # when the group ends.
    torch.cuda.synchronize()
    live = nc._C._mem_live_bytes()
    del t, v
    gc.collect()
    if nc._C._mem_live_bytes() != live:
        fail("a registered allocation was freed while its window was live")
    dist.destroy_process_group(g)
    gc.collect()
    if live - nc._C._mem_live_bytes() < N * 4:
        fail(f"NCCL memory {nc._C._mem_live_bytes()} after the group ended, {live} before: "
             "the pinned allocation was not freed")
    del m, pool, p, big, c


@case(nvlink=True, min_world=1)
def symmetric_windows_off(ctx):
    opts = nc.Options()
    opts.symmetric_max_bytes = 0
    opts.push_max_bytes = 0  # the push all-reduce registers windows of its own
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
    t = nc.torch.empty(N, device=ctx.device)
    _reduce(ctx, g, t, "SUM", 1, "all_reduce on NCCL memory, symmetric windows off")
    _expect_windows(ctx, g, 0, "symmetric_max_bytes = 0")
    dist.destroy_process_group(g)
