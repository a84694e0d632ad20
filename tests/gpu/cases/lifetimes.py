"""Tensor lifetimes: nothing of nccl_core keeps a tensor alive
after the program dropped it.

A plain call's tensors are ordered by the caller's stream and held by
nothing of ours once the call returns; an async call's are released by
wait().  So right after ``synchronize()`` and ``gc.collect()`` (no sleep: the
watchdog's sweep must not be what frees them) the caching allocator holds
exactly what it held before the program ran, for every op family, plain and
async.  Each family first runs once unmeasured (first-use state such as a
communicator's connections), then three rounds are measured, and the last
round's results are checked against a float64 reference.

What a communicator keeps goes with the last thing that holds it (a Work
kept past its group's end, say), and letting it go never waits for the GPU.
"""

from __future__ import annotations

import gc
import threading

import torch
import torch.distributed as dist

from nccl_core_backend import _testing

from tests.gpu.cases.common import fail
from tests.gpu.cases.native_rma import fresh_group
from tests.gpu.registry import case

N = 1 << 18  # float32 elements per rank: 1 MiB, far above any rounding


def _full(ctx, value, n=N):
    return torch.full((n,), float(value), device=ctx.device)


def _finish(works):
    for w in works:
        if w is not None:
            w.wait()


def _expect(name, got, want):
    if not torch.equal(got.double().cpu(), torch.full_like(got.double().cpu(), float(want))):
        fail(f"{name}: wrong values (want {want}, got {got.flatten()[:4].tolist()}...)")


def _reductions(ctx, async_op):
    w, r = ctx.world, ctx.rank
    total = w * (w + 1) / 2
    a = _full(ctx, r + 1)
    b = _full(ctx, r + 1)
    c = _full(ctx, r + 1 if r == 0 else -1)
    _finish([dist.all_reduce(a, async_op=async_op),
             dist.reduce(b, dst=0, async_op=async_op),
             dist.broadcast(c, src=0, async_op=async_op)])
    _expect("all_reduce", a, total)
    if r == 0:
        _expect("reduce", b, total)
    _expect("broadcast", c, 1)


def _gathers(ctx, async_op):
    w, r = ctx.world, ctx.rank
    x = _full(ctx, r + 1)
    out = torch.empty(w * N, device=ctx.device)
    outs = [torch.empty(N, device=ctx.device) for _ in range(w)]
    gl = [torch.empty(N, device=ctx.device) for _ in range(w)] if r == 0 else None
    _finish([dist.all_gather_into_tensor(out, x, async_op=async_op),
             dist.all_gather(outs, x, async_op=async_op),
             dist.gather(x, gl, dst=0, async_op=async_op)])
    for k in range(w):
        _expect("all_gather_into_tensor", out[k * N:(k + 1) * N], k + 1)
        _expect("all_gather", outs[k], k + 1)
        if r == 0:
            _expect("gather", gl[k], k + 1)


def _scatters(ctx, async_op):
    w, r = ctx.world, ctx.rank
    total = w * (w + 1) / 2
    big = _full(ctx, r + 1, w * N)
    out = torch.empty(N, device=ctx.device)
    ins = [_full(ctx, r + 1) for _ in range(w)]
    out2 = torch.empty(N, device=ctx.device)
    sc = [_full(ctx, k + 1) for k in range(w)] if r == 0 else None
    out3 = torch.empty(N, device=ctx.device)
    _finish([dist.reduce_scatter_tensor(out, big, async_op=async_op),
             dist.reduce_scatter(out2, ins, async_op=async_op),
             dist.scatter(out3, sc, src=0, async_op=async_op)])
    _expect("reduce_scatter_tensor", out, total)
    _expect("reduce_scatter", out2, total)
    _expect("scatter", out3, r + 1)


def _all_to_all(ctx, async_op):
    w, r = ctx.world, ctx.rank
    even_in = _full(ctx, r + 1, w * N)
    even_out = torch.empty(w * N, device=ctx.device)
    # Uneven: rank r sends k + 1 blocks of 1024 to rank k.
    send = [(k + 1) * 1024 for k in range(w)]
    recv = [(r + 1) * 1024 for _ in range(w)]
    un_in = _full(ctx, r + 1, sum(send))
    un_out = torch.empty(sum(recv), device=ctx.device)
    lst_in = [_full(ctx, r + 1) for _ in range(w)]
    lst_out = [torch.empty(N, device=ctx.device) for _ in range(w)]
    _finish([dist.all_to_all_single(even_out, even_in, async_op=async_op),
             dist.all_to_all_single(un_out, un_in, recv, send, async_op=async_op),
             dist.all_to_all(lst_out, lst_in, async_op=async_op)])
    off = 0
    for k in range(w):
        _expect("all_to_all_single", even_out[k * N:(k + 1) * N], k + 1)
        _expect("all_to_all_single uneven", un_out[off:off + recv[k]], k + 1)
        _expect("all_to_all", lst_out[k], k + 1)
        off += recv[k]


def _p2p(ctx, async_op):
    w, r = ctx.world, ctx.rank
    if w < 2:
        return
    nxt, prv = (r + 1) % w, (r - 1) % w
    x = _full(ctx, r + 1)
    y = torch.empty(N, device=ctx.device)
    if async_op:
        ops = [dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv)]
        _finish(dist.batch_isend_irecv(ops))
    elif r % 2 == 0:
        dist.send(x, nxt)
        dist.recv(y, prv)
    else:
        dist.recv(y, prv)
        dist.send(x, nxt)
    _expect("send/recv", y, prv + 1)


def _coalesced(ctx, async_op):
    w, r = ctx.world, ctx.rank
    total = w * (w + 1) / 2
    ts = [_full(ctx, r + 1) for _ in range(3)]
    with dist._coalescing_manager(device=ctx.device, async_ops=async_op) as cm:
        for t in ts:
            dist.all_reduce(t)
    if async_op:
        cm.wait()
    for t in ts:
        _expect("coalesced all_reduce", t, total)


def _small(ctx, async_op):
    """Calls the fast path takes where the ranks are NVLink peers (64 KiB)."""
    w, r = ctx.world, ctx.rank
    n = 1 << 14
    total = w * (w + 1) / 2
    a = _full(ctx, r + 1, n)
    g = torch.empty(w * n, device=ctx.device)
    x = _full(ctx, r + 1, w * n)
    rs = torch.empty(n, device=ctx.device)
    b = _full(ctx, r + 1 if r == 0 else -1, n)
    _finish([dist.all_reduce(a, async_op=async_op),
             dist.all_gather_into_tensor(g, _full(ctx, r + 1, n), async_op=async_op),
             dist.reduce_scatter_tensor(rs, x, async_op=async_op),
             dist.broadcast(b, src=0, async_op=async_op)])
    _expect("small all_reduce", a, total)
    for k in range(w):
        _expect("small all_gather_into_tensor", g[k * n:(k + 1) * n], k + 1)
    _expect("small reduce_scatter_tensor", rs, total)
    _expect("small broadcast", b, 1)


FAMILIES = {"reductions": _reductions, "gathers": _gathers, "scatters": _scatters,
            "all_to_all": _all_to_all, "p2p": _p2p, "coalesced": _coalesced, "small": _small}


def _nccl_memory(ctx, async_op):
    """Tensors in NCCL memory (nc.torch.empty) through the collectives."""
    import nccl_core_backend as nc

    w, r = ctx.world, ctx.rank
    total = w * (w + 1) / 2
    a = nc.torch.empty(N, device=ctx.device)
    a.fill_(r + 1)
    g = nc.torch.empty(w * N, device=ctx.device)
    x = nc.torch.empty(N, device=ctx.device)
    x.fill_(r + 1)
    _finish([dist.all_reduce(a, async_op=async_op),
             dist.all_gather_into_tensor(g, x, async_op=async_op)])
    _expect("all_reduce on NCCL memory", a, total)
    for k in range(w):
        _expect("all_gather_into_tensor on NCCL memory", g[k * N:(k + 1) * N], k + 1)


def _allocated(ctx) -> int:
    torch.cuda.synchronize(ctx.device)
    gc.collect()
    return torch.cuda.memory_allocated(ctx.device)


@case(min_world=1)
def dropped_tensors_return_at_once(ctx):
    """Every op family, plain and async: allocated bytes back to the
    baseline right after synchronize() + gc (no tensor outlives the program's
    last reference through nccl_core: not the Work, the watchdog, the flight
    recorder, nor a temporary)."""
    for name, run in FAMILIES.items():
        for async_op in (False, True):
            how = f"{name} ({'async, waited' if async_op else 'plain'})"
            run(ctx, async_op)  # first use: connections, lazily made state
            base = _allocated(ctx)
            for _ in range(3):
                run(ctx, async_op)
            held = _allocated(ctx) - base
            if held != 0:
                fail(f"{how}: {held} bytes still allocated after the program dropped every "
                     f"tensor (baseline {base})")
    # NCCL memory is not the caching allocator's: its live bytes come back
    # once the GPU has run the work that used it (memory/allocator.h).
    import nccl_core_backend as nc

    for async_op in (False, True):
        how = f"NCCL memory ({'async, waited' if async_op else 'plain'})"
        _nccl_memory(ctx, async_op)
        torch.cuda.synchronize(ctx.device)
        gc.collect()
        base = nc._C._mem_live_bytes()
        for _ in range(3):
            _nccl_memory(ctx, async_op)
        torch.cuda.synchronize(ctx.device)
        gc.collect()
        held = nc._C._mem_live_bytes() - base
        if held != 0:
            fail(f"{how}: {held} bytes of NCCL memory still live after the program dropped "
                 f"every tensor (baseline {base})")


@case(min_world=2)
def a_destroyed_groups_last_work_drops_while_the_gpu_waits(ctx):
    """A Work kept past its group's destroy_process_group() holds the group's
    communicator; dropping it frees what the communicator kept (its progress
    words and abort flag, pinned host memory).  That drop must not wait for
    the device: here rank 0 drops it while its own all_reduce on another
    group waits on the GPU for rank 1, who joins only once the drop returned.
    The blocks the drop freed are back in the cache, so the release ran."""
    store = dist.distributed_c10d._get_default_store()
    old = fresh_group(ctx)[0]
    x = torch.full((4096,), 1.0, device=ctx.device)
    kept = [dist.all_reduce(x, group=old, async_op=True)]
    kept[0].wait()
    torch.cuda.synchronize(ctx.device)
    dist.barrier()
    dist.destroy_process_group(old)
    del old  # the kept Work is now all that holds the communicator
    gc.collect()
    new = fresh_group(ctx)[0]
    y = torch.full((4096,), float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(y, group=new)  # connected
    torch.cuda.synchronize(ctx.device)
    dist.barrier()  # every kernel the drop could need is loaded (lazy loading)
    key = "a_destroyed_groups_last_work_drops/dropped"
    want = float(sum(range(1, ctx.world + 1)) * ctx.world)
    if ctx.rank == 0:
        pending = dist.all_reduce(y, group=new, async_op=True)  # waits for rank 1
        cached_before = _testing._mapped_host_blocks()
        dropper = threading.Thread(target=kept.clear, daemon=True)
        dropper.start()
        dropper.join(timeout=20)
        blocked = dropper.is_alive()
        cached_after = _testing._mapped_host_blocks()
        store.set(key, "1")  # rank 1 joins the pending all_reduce now
        pending.wait()
        dropper.join()
    else:
        kept.clear()
        store.wait([key])
        dist.all_reduce(y, group=new)
    torch.cuda.synchronize(ctx.device)
    if ctx.rank == 0:
        if blocked:
            fail("dropping a destroyed group's last Work waited for the GPU (> 20 s)")
        if cached_after <= cached_before:
            fail(f"the dropped Work freed no pinned block ({cached_before} -> {cached_after} "
                 "cached): its communicator outlived it")
    if not torch.equal(y.cpu(), torch.full((4096,), want)):
        fail(f"the pending all_reduce gave {y[:4].tolist()}, want {want}")
    dist.destroy_process_group(new)
