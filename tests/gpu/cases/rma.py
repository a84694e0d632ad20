"""One-sided communication: put_signal / signal / wait_signal on windows."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from nccl_core_backend import WaitSignalDesc
from tests.gpu.cases.common import expect_raises, fail, sanity, window
from tests.gpu.registry import case


def _window(comm, ctx, n, dtype=torch.float32):
    return window(comm, ctx, n, dtype, skip_if_missing=False)


def _data(ctx, rank, n, dtype, salt):
    g = ctx.gen(rank, salt)
    return torch.randint(-100, 100, (n,), generator=g).to(dtype)


@case(nvlink=True)
def rma_ping_pong(ctx):
    comm = nc.get_communicator()
    w = ctx.world
    buf, win = _window(comm, ctx, 1 << 18)
    partner = ctx.rank ^ 1
    if partner >= w:
        partner = ctx.rank
    lead = ctx.rank % 2 == 0
    for it, (n, dtype, off) in enumerate([(1, torch.float32, 0), (1000, torch.float32, 17),
                                          (1 << 16, torch.bfloat16, 3), (1 << 18, torch.float32, 0),
                                          (333, torch.int8, 5)]):
        for step in range(2):  # ping, then pong
            sender = (step == 0) == lead
            src_rank = ctx.rank if sender else partner
            x = _data(ctx, src_rank, n, dtype, salt=it * 2 + step)
            if sender:
                comm.put_signal(x.to(ctx.device), partner, win, off)
            else:
                comm.wait_signal(WaitSignalDesc(partner))
                got = buf.view(dtype)[off:off + n].cpu()
                if not torch.equal(got, x):
                    bad = (got != x).nonzero()
                    fail(f"ping-pong it={it} step={step} {dtype} n={n} off={off}: {bad.shape[0]} "
                         f"elements wrong, first {bad[0].item()}")
    torch.cuda.synchronize()
    dist.barrier()
    win.close()


@case(nvlink=True, min_world=1)
def rma_fan_in(ctx):
    comm = nc.get_communicator()
    n = 4099
    buf, win = _window(comm, ctx, n * ctx.world)
    if ctx.rank != 0:
        comm.put_signal(_data(ctx, ctx.rank, n, torch.float32, 1).to(ctx.device), 0, win, ctx.rank * n)
    else:
        comm.wait_signal([WaitSignalDesc(r) for r in range(1, ctx.world)])
        for r in range(1, ctx.world):
            if not torch.equal(buf[r * n:(r + 1) * n].cpu(), _data(ctx, r, n, torch.float32, 1)):
                fail(f"fan-in block from rank {r} wrong")
        if not torch.all(buf[:n] == -7):
            fail("fan-in wrote into rank 0's own block")
    torch.cuda.synchronize()
    dist.barrier()
    win.close()


@case(nvlink=True, min_world=1)
def rma_ordering_of_many_puts(ctx):
    comm = nc.get_communicator()
    k, n = 300, 256
    buf, win = _window(comm, ctx, (k + 1) * n)
    nxt, prv = (ctx.rank + 1) % ctx.world, (ctx.rank - 1) % ctx.world
    src = torch.empty(n, device=ctx.device)
    for i in range(k):
        src.fill_(float(i))
        comm.put_signal(src, nxt, win, i * n)       # a distinct slot per put
        comm.put_signal(src, nxt, win, k * n)       # and the same slot every time
    comm.wait_signal(WaitSignalDesc(prv, op_count=2 * k))
    got = buf.view(k + 1, n).cpu()
    exp = torch.arange(k, dtype=torch.float32).unsqueeze(1).expand(k, n)
    if not torch.equal(got[:k], exp):
        fail("distinct-slot puts arrived wrong")
    if not torch.all(got[k] == k - 1):
        fail(f"puts to one slot out of order: last value {got[k][:4].tolist()}, expected {k - 1}")
    torch.cuda.synchronize()
    dist.barrier()
    win.close()


@case(nvlink=True, min_world=1)
def rma_stress_10000_ops(ctx):
    """10,000 puts per rank around the ring with credit-based flow control;
    the receiver checksums everything it got on the GPU."""
    comm = nc.get_communicator()
    batch, n = 50, 64
    rounds = 10000 // batch
    buf, win = _window(comm, ctx, batch * n, torch.float64)
    nxt, prv = (ctx.rank + 1) % ctx.world, (ctx.rank - 1) % ctx.world
    src = torch.empty(n, dtype=torch.float64, device=ctx.device)
    ramp = torch.arange(n, dtype=torch.float64, device=ctx.device)
    checksum = torch.zeros((), dtype=torch.float64, device=ctx.device)
    for r in range(rounds):
        if r > 0:
            comm.wait_signal(WaitSignalDesc(nxt))   # credit: nxt consumed the last batch
        for j in range(batch):
            i = r * batch + j
            torch.add(ramp, float(ctx.rank * 100003 + i), out=src)
            comm.put_signal(src, nxt, win, j * n)
        comm.wait_signal(WaitSignalDesc(prv, op_count=batch))
        checksum += buf.sum()
        comm.signal(prv)                            # give prv its credit back
    comm.wait_signal(WaitSignalDesc(nxt))           # the last credit
    total = rounds * batch
    exp = sum(float(prv * 100003 + i) * n + n * (n - 1) / 2 for i in range(total))
    if checksum.item() != exp:
        fail(f"stress checksum {checksum.item()} != expected {exp}")
    torch.cuda.synchronize()
    dist.barrier()
    win.close()


@case(nvlink=True, min_world=1)
def rma_interleaved_with_collectives(ctx):
    comm = nc.get_communicator()
    n = 1 << 14
    buf, win = _window(comm, ctx, n)
    nxt, prv = (ctx.rank + 1) % ctx.world, (ctx.rank - 1) % ctx.world
    for it in range(20):
        x = torch.full((n,), float(ctx.rank * 1000 + it), device=ctx.device)
        comm.put_signal(x, nxt, win)
        t = torch.full((1024,), float(ctx.rank + it), device=ctx.device)
        dist.all_reduce(t)
        comm.wait_signal(WaitSignalDesc(prv))
        got = buf.clone()
        dist.all_reduce(got, op=dist.ReduceOp.MAX)  # collective on window memory too
        exp_t = float(sum(r + it for r in range(ctx.world)))
        if not torch.all(t == exp_t):
            fail(f"all_reduce between puts: {t[0].item()} != {exp_t}")
        if not torch.all(buf == float(prv * 1000 + it)):
            fail(f"it={it}: window holds {buf[0].item()}, expected {prv * 1000 + it}")
        if not torch.all(got == float((ctx.world - 1) * 1000 + it)):
            fail(f"it={it}: all_reduce MAX of windows gave {got[0].item()}")
        dist.barrier()  # nobody overwrites a window before its owner has read it
    torch.cuda.synchronize()
    win.close()


@case(nvlink=True)
def rma_bad_input(ctx):
    comm = nc.get_communicator()
    buf, win = _window(comm, ctx, 1024)
    x = torch.ones(16, device=ctx.device)
    nxt = (ctx.rank + 1) % ctx.world
    other = torch.device("cuda", (ctx.device.index + 1) % torch.cuda.device_count())
    cases = [
        (lambda: comm.put_signal(x, nxt, win, signal_index=1), "signal_index"),
        (lambda: comm.put_signal(x, nxt, win, context=2), "context"),
        (lambda: comm.put_signal(x, nxt, win, flags=1), "flags"),
        (lambda: comm.put_signal(x, nxt, win, 1020), "does not fit"),
        (lambda: comm.put_signal(torch.ones(2000, device=ctx.device), nxt, win), "does not fit"),
        (lambda: comm.put_signal(x, nxt, win, -1), ">= 0"),
        (lambda: comm.put_signal(x, ctx.world, win), "peer"),
        (lambda: comm.put_signal(torch.ones(16), nxt, win), "CUDA"),
        (lambda: comm.put_signal(torch.ones(16, device=other), nxt, win), "device"),
        (lambda: comm.put_signal(x, nxt, "window"), "RegisteredWindowHandle"),
        (lambda: comm.signal(-1), "peer"),
        (lambda: comm.signal(nxt, flags=3), "flags"),
        (lambda: comm.wait_signal(WaitSignalDesc(ctx.world)), "peer"),
        (lambda: comm.wait_signal([1, 2]), "WaitSignalDesc"),
        (lambda: WaitSignalDesc(-1), "peer"),
        (lambda: WaitSignalDesc(0, op_count=0), "op_count"),
        (lambda: WaitSignalDesc(0, signal_index=1), "signal_index"),
        (lambda: WaitSignalDesc(0, context=1), "context"),
        (lambda: WaitSignalDesc("0"), "int"),
    ]
    for fn, match in cases:
        expect_raises(nc.NcclInvalid, fn, match)
    sub = dist.new_group(list(range(ctx.world)))
    sub_comm = nc.get_communicator(sub)
    expect_raises(nc.NcclInvalid, lambda: sub_comm.put_signal(x, nxt, win), "another communicator")
    dist.destroy_process_group(sub)
    torch.cuda.synchronize()
    dist.barrier()
    win.close()
    expect_raises(nc.NcclInvalid, lambda: comm.put_signal(x, nxt, win), "closed")
    sanity(ctx)


@case(nvlink=True)
def rma_wait_for_a_signal_that_never_comes_ends_on_abort(ctx):
    """A wait_signal whose signal never arrives blocks its stream until the
    communicator is aborted; then the kernel ends and the GPU drains."""
    import threading
    import time

    g = dist.new_group(list(range(ctx.world)), backend="nccl_core")
    comm = nc.get_communicator(g)
    buf, win = _window(comm, ctx, 64)
    if ctx.rank == 0:
        stream = torch.cuda.Stream(device=ctx.device)
        comm.wait_signal(WaitSignalDesc(1 % ctx.world), stream=stream)
        timer = threading.Timer(1.0, comm.abort)
        t0 = time.time()
        timer.start()
        stream.synchronize()
        timer.join()
        took = time.time() - t0
        if took > 15:
            fail(f"the wait kernel ended {took:.1f}s after the abort")
        if comm.is_valid:
            fail("the communicator is still valid after abort()")
    dist.barrier()
    del buf, win
