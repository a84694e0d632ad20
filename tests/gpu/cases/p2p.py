"""send/recv, batch_isend_irecv and barrier."""

from __future__ import annotations

import torch
import torch.distributed as dist

from tests.gpu.cases.common import DTYPES, check, make, poison, wide
from tests.gpu.registry import case


@case()
def send_recv_ring_every_dtype(ctx):
    w = ctx.world
    nxt, prv = (ctx.rank + 1) % w, (ctx.rank - 1) % w
    for di, dtype in enumerate(DTYPES + [torch.complex128]):
        if dtype.is_complex:
            mine = torch.randn(99, generator=ctx.gen(ctx.rank, di), dtype=dtype)
            theirs = torch.randn(99, generator=ctx.gen(prv, di), dtype=dtype)
        else:
            mine = make(ctx, ctx.rank, dtype, n=99, salt=di)
            theirs = make(ctx, prv, dtype, n=99, salt=di)
        out = poison((99,), dtype, ctx.device)
        if ctx.rank % 2 == 0:
            dist.send(mine.to(ctx.device), dst=nxt)
            dist.recv(out, src=prv)
        else:
            dist.recv(out, src=prv)
            dist.send(mine.to(ctx.device), dst=nxt)
        check(out, wide(theirs), dtype, "SUM", 1, "send/recv ring")


@case()
def isend_irecv_and_batch(ctx):
    w = ctx.world
    nxt, prv = (ctx.rank + 1) % w, (ctx.rank - 1) % w
    x = make(ctx, ctx.rank, torch.float32, n=1000).to(ctx.device)
    y = poison((1000,), torch.float32, ctx.device)
    ops = [dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    check(y, wide(make(ctx, prv, torch.float32, n=1000)), torch.float32, "SUM", 1, "batch_isend_irecv")
    # Every rank exchanges with every other rank in one batch.
    outs = {p: poison((64,), torch.int32, ctx.device) for p in range(w) if p != ctx.rank}
    ops = []
    for p in range(w):
        if p == ctx.rank:
            continue
        ops.append(dist.P2POp(dist.isend, make(ctx, ctx.rank, torch.int32, 64, salt=p).to(ctx.device), p))
        ops.append(dist.P2POp(dist.irecv, outs[p], p))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, o in outs.items():
        check(o, wide(make(ctx, p, torch.int32, 64, salt=ctx.rank)), torch.int32, "SUM", 1, f"all-pairs from {p}")
    # isend/irecv outside a batch
    z = poison((1000,), torch.float32, ctx.device)
    if ctx.rank == 0:
        dist.isend(x, dst=1).wait()
    elif ctx.rank == 1:
        dist.irecv(z, src=0).wait()
        check(z, wide(make(ctx, 0, torch.float32, n=1000)), torch.float32, "SUM", 1, "isend/irecv")


@case(min_world=1)
def barrier_orders_host(ctx):
    import time

    path = f"/tmp/nccl_core_barrier_{ctx.seed}_{ctx.world}"
    import os

    # A pure nccl_core group: the default group sends barrier() to gloo.
    g = dist.new_group(backend="nccl_core")
    if ctx.rank == 0:
        time.sleep(0.5)
        open(path, "w").write("x")
    dist.barrier(group=g, device_ids=[ctx.device.index])
    assert os.path.exists(path), "barrier returned before rank 0 arrived"
    dist.barrier(group=g, device_ids=[ctx.device.index])
    if ctx.rank == 0:
        os.remove(path)
    dist.destroy_process_group(g)
