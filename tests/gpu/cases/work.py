"""Work objects: async ops, futures, tensor lifetime and CUDA graphs."""

from __future__ import annotations

import torch
import torch.distributed as dist

from tests.gpu.cases.common import check, make, wide
from tests.gpu.registry import case


@case(min_world=1)
def async_ops_wait_on_stream(ctx):
    w = ctx.world
    ins = [make(ctx, r, torch.float32, n=1 << 18) for r in range(w)]
    t = ins[ctx.rank].to(ctx.device)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is not False
    # wait() made the current stream wait: reading t on it is safe.
    check(t, sum(x.double() for x in ins), torch.float32, "SUM", w, "async all_reduce")
    torch.cuda.synchronize()
    # (Work.exception() has no Python binding that can return its value.)
    assert work.is_completed() and work.is_success()
    # A side stream: the op follows work queued there, and wait() orders the
    # consumer stream after it.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.full((1 << 20,), float(ctx.rank + 1), device=ctx.device)
        work = dist.all_reduce(x, async_op=True)
        work.wait()
        y = x * 2
    torch.cuda.current_stream().wait_stream(s)
    assert torch.all(y == w * (w + 1)), "side-stream async all_reduce wrong"


@case(min_world=1)
def futures_return_output_lists(ctx):
    w = ctx.world
    t = torch.full((1000,), float(ctx.rank + 1), device=ctx.device)
    fut = dist.all_reduce(t, async_op=True).get_future()
    val = fut.wait()
    assert isinstance(val, list) and len(val) == 1 and val[0] is not None
    assert torch.all(val[0] == w * (w + 1) / 2)
    # then() callbacks (DDP comm hooks) see the finished tensor.
    t2 = torch.full((1000,), 1.0, device=ctx.device)
    fut2 = dist.all_reduce(t2, async_op=True).get_future().then(lambda f: f.value()[0] / w)
    out = fut2.wait()
    assert torch.all(out == 1.0), "future then() result wrong"
    # all_gather_into_tensor future value
    o = torch.empty(w * 3, device=ctx.device)
    fut3 = dist.all_gather_into_tensor(o, torch.full((3,), float(ctx.rank), device=ctx.device),
                                       async_op=True).get_future()
    v = fut3.wait()
    assert isinstance(v, list) and torch.equal(v[0].cpu(), torch.arange(w).repeat_interleave(3).float())


@case(min_world=1)
def dropped_tensors_stay_alive(ctx):
    w = ctx.world
    n = 1 << 22
    works = []
    for i in range(4):
        works.append(dist.all_reduce(torch.full((n,), float(ctx.rank + i), device=ctx.device), async_op=True))
    # Churn the caching allocator: freed blocks would be reused right here.
    junk = [torch.full((n,), -7.0, device=ctx.device) for _ in range(8)]
    del junk
    for i, work in enumerate(works):
        work.wait()
        res = work.result()[0]
        exp = sum(r + i for r in range(w))
        assert torch.all(res == exp), f"dropped-input all_reduce {i} corrupted"


@case(min_world=1)
def cuda_graph_capture_and_replay(ctx):
    w = ctx.world
    dev = ctx.device
    static_in = torch.zeros(4096, device=dev)
    static_gather = torch.zeros(w * 16, device=dev)
    small = torch.zeros(16, device=dev)
    # Warm up outside capture (connections are set up lazily by NCCL).
    dist.all_reduce(static_in)
    dist.all_gather_into_tensor(static_gather, small)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g, stream=s):
            dist.all_reduce(static_in)
            dist.all_gather_into_tensor(static_gather, small)
            for _ in range(10):
                dist.all_reduce(small)
    torch.cuda.current_stream().wait_stream(s)
    for it in range(3):
        static_in.copy_(make(ctx, ctx.rank, torch.float32, n=4096, salt=it).to(dev))
        small.fill_(float(ctx.rank + it))
        g.replay()
        torch.cuda.synchronize()
        ref = sum(make(ctx, r, torch.float32, n=4096, salt=it).double() for r in range(w))
        check(static_in, ref, torch.float32, "SUM", w, f"graph replay {it} all_reduce")
        gat = torch.tensor([float(r + it) for r in range(w)]).repeat_interleave(16)
        assert torch.equal(static_gather.cpu(), gat), f"graph replay {it} all_gather wrong"
        exp = float(sum(r + it for r in range(w))) * (w ** 9)
        assert torch.allclose(small.cpu().double(), torch.full((16,), exp, dtype=torch.float64)), \
            f"graph replay {it}: 10 chained all_reduces wrong"


@case(min_world=1)
def many_small_async_ops(ctx):
    w = ctx.world
    ts = [torch.full((64,), float(i), device=ctx.device) for i in range(500)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for wk in works:
        wk.wait()
    for i, t in enumerate(ts):
        assert torch.all(t == i * w), f"op {i} wrong"
    b = dist.group.WORLD._get_backend(ctx.device)
    import time

    deadline = time.time() + 5
    while b._pending_works() > 0 and time.time() < deadline:
        time.sleep(0.05)
    assert b._pending_works() == 0, "watchdog did not retire finished work"
    _ = wide
