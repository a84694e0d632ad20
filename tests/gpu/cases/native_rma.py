"""NCCL's own one-sided route: Communicator.rma_route / NCCL_CORE_RMA_ROUTE,
put_signal / signal / wait_signal through ncclPutSignal & co. to NVLink peers
(itself included, so one rank exercises it), STRICT_ORDERING windows.

Every put's data is fresh random data, checked byte by byte over the whole
destination window (untouched bytes must keep their poison)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from nccl_core_backend import WaitSignalDesc
from tests.gpu.cases.common import expect_raises, fail, sanity
from tests.gpu.registry import Skip, case

ENV = "NCCL_CORE_RMA_ROUTE"
POISON = 0xA5
SYM = nc.WindowFlag.COLL_SYMMETRIC


def need(version: tuple[int, int, int], what: str) -> None:
    if nc.nccl_version() < version:
        raise Skip(f"{what} needs NCCL {'.'.join(map(str, version))} or newer; "
                   f"the loaded NCCL is {'.'.join(map(str, nc.nccl_version()))}")


def payload(ctx, src_rank: int, n: int, dtype, salt: int) -> torch.Tensor:
    """Rank `src_rank`'s random CPU data for one put (any rank can rebuild it)."""
    g = ctx.gen(src_rank, salt)
    if dtype.is_floating_point:
        return torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2 ** 31)), min(info.max, 2 ** 31 - 1)
    return torch.randint(lo, hi, (n,), generator=g, dtype=torch.int64).to(dtype)


def poisoned_window(comm, ctx, nbytes: int, flags):
    buf = nc.torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
    buf.fill_(POISON)
    torch.cuda.synchronize()
    win = comm.register_window(buf, flags)
    if win is None:
        raise AssertionError("register_window returned None on an NVLink machine")
    return buf, win


def compare_bytes(got: torch.Tensor, exp: torch.Tensor, what: str) -> None:
    got = got.cpu()
    bad = (got != exp).nonzero()
    if bad.numel():
        i = bad[0].item()
        fail(f"{what}: {bad.shape[0]} of {got.numel()} bytes wrong, first at byte {i}: "
             f"got {got[i].item():#x} expected {exp[i].item():#x}")


def fresh_group(ctx):
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core")
    return g, nc.get_communicator(g)


def exchange_round(ctx, comm, dst, dst_win, src, n, dtype, off, salt, image):
    """Every rank puts its block for p at element rank * n + off of p's window,
    waits for every peer's block, and checks its whole window against `image`
    (the expected bytes, updated here)."""
    esz = torch.empty((), dtype=dtype).element_size()
    for p in range(ctx.world):
        s = src.view(dtype)[p * n:(p + 1) * n]
        s.copy_(payload(ctx, ctx.rank, n, dtype, salt * 1000 + p))
        comm.put_signal(s, p, dst_win, ctx.rank * n + off)
    comm.wait_signal([WaitSignalDesc(p) for p in range(ctx.world)])
    for q in range(ctx.world):
        block = payload(ctx, q, n, dtype, salt * 1000 + ctx.rank).view(torch.uint8)
        start = (q * n + off) * esz
        image[start:start + block.numel()] = block
    torch.cuda.current_stream().synchronize()
    compare_bytes(dst, image, f"round salt={salt} {dtype} n={n} off={off}")


@case(nvlink=True, min_world=1)
def native_route_option(ctx):
    """rma_route and NCCL_CORE_RMA_ROUTE: refused with the release needed before
    2.29.2; on 2.29.2+ the route is agreed at the first register_window, every
    peer then goes through NCCL, and another route is refused while windows live."""
    table = nc.features()
    has = nc.nccl_version() >= (2, 29, 2)
    want = "native" if has else "unsupported"
    if table["rma_native_route"].status != want:
        fail(f"features()['rma_native_route'] is {table['rma_native_route'].status}, expected {want}")
    if table["rma_native_route"].needs != "2.29.2":
        fail(f"rma_native_route needs {table['rma_native_route'].needs}")
    old = os.environ.pop(ENV, None)
    try:
        g, gc = fresh_group(ctx)
        if gc.rma_route != "auto":
            fail(f"default route {gc.rma_route!r}")
        expect_raises(nc.NcclInvalid, lambda: setattr(gc, "rma_route", "sideways"), "native")
        expect_raises(nc.NcclInvalid, lambda: setattr(gc, "rma_route", 1), "native")
        if not has:
            expect_raises(nc.NcclUnsupported, lambda: setattr(gc, "rma_route", "native"), "2.29.2")
            os.environ[ENV] = "native"
            e = expect_raises(nc.NcclUnsupported, lambda: poisoned_window(gc, ctx, 4096, SYM), "2.29.2")
            if e is not None and ENV not in str(e):
                fail(f"the refusal does not name {ENV}: {e}")
            os.environ.pop(ENV)
            sanity(ctx, g)
            dist.destroy_process_group(g)
            return
        gc.rma_route = " Native "
        if gc.rma_route != "native":
            fail(f"rma_route reads {gc.rma_route!r} after setting native")
        buf, win = poisoned_window(gc, ctx, 4096, SYM)
        for p in range(ctx.world):
            if gc._rma_served_by_kernels(p):
                fail(f"route native: peer {p} still served by nccl_core's kernels")
        expect_raises(nc.NcclInvalid, lambda: setattr(gc, "rma_route", "auto"), "cannot change")
        gc.rma_route = "native"  # the agreed one: accepted
        # After close_all_resources the route may change; auto serves NVLink
        # peers with our kernels again.
        torch.cuda.synchronize()
        gc.close_all_resources()
        gc.rma_route = "auto"
        buf, win = poisoned_window(gc, ctx, 4096, SYM)
        lsa_all = win.lsa_size == ctx.world
        for p in range(ctx.world):
            if lsa_all and not gc._rma_served_by_kernels(p):
                fail(f"route auto: NVLink peer {p} not served by nccl_core's kernels")
        torch.cuda.synchronize()
        dist.barrier(group=g)
        gc.close_all_resources()
        sanity(ctx, g)
        dist.destroy_process_group(g)

        # The environment variable, read at the first register_window.
        os.environ[ENV] = "native"
        g, gc = fresh_group(ctx)
        buf, win = poisoned_window(gc, ctx, 4096, SYM)
        if gc.rma_route != "native" or any(gc._rma_served_by_kernels(p) for p in range(ctx.world)):
            fail(f"{ENV}=native: route {gc.rma_route}")
        torch.cuda.synchronize()
        dist.barrier(group=g)
        dist.destroy_process_group(g)

        # Ranks that disagree, or a bad value on one rank: every rank raises.
        if ctx.world > 1:
            for value, match in (("native", "different one-sided routes"), ("bogus", ENV)):
                os.environ[ENV] = value if ctx.rank == 0 else "auto"
                g, gc = fresh_group(ctx)
                before = gc._resource_count()
                expect_raises(nc.NcclInvalid, lambda: poisoned_window(gc, ctx, 4096, SYM), match)
                if gc._resource_count() != before:
                    fail(f"a refused agreement left {gc._resource_count() - before} resources")
                sanity(ctx, g)  # the communicator is still healthy
                dist.destroy_process_group(g)
    finally:
        os.environ.pop(ENV, None)
        if old is not None:
            os.environ[ENV] = old
    sanity(ctx)


@case(nvlink=True, min_world=1)
def native_put_signal_exchange(ctx):
    """put_signal / signal / wait_signal through NCCL to every NVLink peer and to
    itself, on fresh random data of several dtypes, sizes and offsets."""
    need((2, 29, 2), "the native one-sided route")
    g, comm = fresh_group(ctx)
    comm.rma_route = "native"
    cap = 1 << 16  # elements per block at most
    nbytes = (ctx.world * cap + 64) * 8
    dst, dst_win = poisoned_window(comm, ctx, nbytes, SYM)
    src, src_win = poisoned_window(comm, ctx, ctx.world * cap * 8, SYM)
    if any(comm._rma_served_by_kernels(p) for p in range(ctx.world)):
        fail("route native, but a peer is served by nccl_core's kernels")
    image = torch.full((nbytes,), POISON, dtype=torch.uint8)
    configs = [(1, torch.float32, 0), (1000, torch.float32, 17), (4099, torch.bfloat16, 3),
               (cap, torch.float64, 0), (333, torch.int8, 5), (2048, torch.int64, 1),
               (cap, torch.float32, 64)]
    for salt, (n, dtype, off) in enumerate(configs):
        exchange_round(ctx, comm, dst, dst_win, src, n, dtype, off, salt, image)
        dist.barrier(group=g)  # nobody overwrites a window before its owner has read it
    # Signals alone: two to every peer, then one more put round on top.
    for _ in range(2):
        for p in range(ctx.world):
            comm.signal(p)
    comm.wait_signal([WaitSignalDesc(p, op_count=2) for p in range(ctx.world)])
    exchange_round(ctx, comm, dst, dst_win, src, 777, torch.float16, 9, len(configs), image)
    dist.barrier(group=g)

    # What NCCL's route refuses, before NCCL sees it.
    plain = torch.ones(16, device=ctx.device)
    expect_raises(nc.NcclInvalid, lambda: comm.put_signal(plain, 0, dst_win), "COLL_SYMMETRIC")
    other, other_win = poisoned_window(comm, ctx, 4096, nc.WindowFlag.DEFAULT)
    expect_raises(nc.NcclInvalid, lambda: comm.put_signal(other.view(torch.float32)[:16], 0, dst_win),
                  "COLL_SYMMETRIC")
    tail = src.view(torch.float32)[-8:]
    expect_raises(nc.NcclInvalid, lambda: comm.put_signal(tail, 0, dst_win, nbytes // 4 - 4),
                  "does not fit")
    stream = torch.cuda.Stream(device=ctx.device)
    graph = torch.cuda.CUDAGraph()
    head = src.view(torch.float32)[:16]
    with torch.cuda.graph(graph, stream=stream):  # nothing gets captured: an empty graph
        for fn in (lambda: comm.put_signal(head, 0, dst_win), lambda: comm.signal(0),
                   lambda: comm.wait_signal(WaitSignalDesc(0))):
            expect_raises(nc.NcclInvalid, fn, "CUDA graph")
    torch.cuda.synchronize()
    dist.barrier(group=g)
    # The data path still works after the refusals.
    exchange_round(ctx, comm, dst, dst_win, src, 4096, torch.float32, 0, len(configs) + 1, image)
    torch.cuda.synchronize()
    dist.barrier(group=g)
    dist.destroy_process_group(g)
    sanity(ctx)


@case(nvlink=True, min_world=2)
def native_route_some_ranks_only(ctx):
    """NCCL sets up its one-sided state collectively at a rank's first
    one-sided call; nccl_core does it at the agreement instead, so one rank
    can use the native route while the others make no one-sided call."""
    need((2, 29, 2), "the native one-sided route")
    g, comm = fresh_group(ctx)
    comm.rma_route = "native"
    n = 3001
    dst, dst_win = poisoned_window(comm, ctx, n * 4, SYM)
    src, src_win = poisoned_window(comm, ctx, n * 4, SYM)
    if ctx.rank == 0:  # the only rank that puts, to itself and to rank 1
        x = payload(ctx, 0, n, torch.float32, 11)
        src.view(torch.float32).copy_(x)
        comm.put_signal(src.view(torch.float32), 0, dst_win)
        comm.wait_signal(WaitSignalDesc(0))
        torch.cuda.current_stream().synchronize()
        compare_bytes(dst, x.view(torch.uint8), "rank 0's put to itself")
    dist.barrier(group=g)
    if ctx.rank == 0:
        comm.put_signal(src.view(torch.float32), 1, dst_win)
    elif ctx.rank == 1:
        comm.wait_signal(WaitSignalDesc(0))
        torch.cuda.current_stream().synchronize()
        compare_bytes(dst, payload(ctx, 0, n, torch.float32, 11).view(torch.uint8),
                      "rank 0's put to rank 1")
    torch.cuda.synchronize()
    dist.barrier(group=g)
    dist.destroy_process_group(g)
    sanity(ctx)


@case(nvlink=True, min_world=1)
def native_route_switch_keeps_signals_consistent(ctx):
    """native, then auto (our signal area), then native again on one
    communicator: each side's counters stay in step across the switches."""
    need((2, 29, 2), "the native one-sided route")
    g, comm = fresh_group(ctx)
    n = 2500
    salt = 0
    for route in ("native", "auto", "native", "auto"):
        comm.rma_route = route
        nbytes = ctx.world * n * 4
        dst, dst_win = poisoned_window(comm, ctx, nbytes, SYM)
        src, src_win = poisoned_window(comm, ctx, nbytes, SYM)
        if comm.rma_route != route:
            fail(f"route reads {comm.rma_route}, set {route}")
        image = torch.full((nbytes,), POISON, dtype=torch.uint8)
        for _ in range(3):
            exchange_round(ctx, comm, dst, dst_win, src, n, torch.float32, 0, salt, image)
            salt += 1
            dist.barrier(group=g)
        torch.cuda.synchronize()
        comm.close_all_resources()
    dist.destroy_process_group(g)
    sanity(ctx)


def ordered_sequence(ctx, comm, g, route, flags, k=48, n0=4096, step=61):
    """k puts of shrinking length to one place of the next rank's window, each
    also to a slot of its own; the receiver waits for them one at a time."""
    nxt, prv = (ctx.rank + 1) % ctx.world, (ctx.rank - 1) % ctx.world
    lengths = [n0 - i * step for i in range(k)]
    nbytes = (n0 + k * n0) * 4
    dst, dst_win = poisoned_window(comm, ctx, nbytes, flags)
    src, src_win = poisoned_window(comm, ctx, k * n0 * 4, SYM)
    for i, m in enumerate(lengths):
        s = src.view(torch.float32)[i * n0:i * n0 + m]
        s.copy_(payload(ctx, ctx.rank, m, torch.float32, 500 + i))
        comm.put_signal(s, nxt, dst_win, 0)              # the shared place, overwritten
        comm.put_signal(s, nxt, dst_win, n0 + i * n0)    # slot i, written once
    got_all = dst.view(torch.float32)
    for i, m in enumerate(lengths):
        # 2 (i + 1) signals seen: put i (and every put before it) has landed.
        comm.wait_signal(WaitSignalDesc(prv, op_count=2))
        torch.cuda.current_stream().synchronize()
        got = got_all[n0 + i * n0:n0 + i * n0 + m].cpu()
        exp = payload(ctx, prv, m, torch.float32, 500 + i)
        if not torch.equal(got, exp):
            bad = (got != exp).nonzero()
            fail(f"{route}: slot {i} incomplete after its signal: {bad.shape[0]} of {m} "
                 f"elements wrong, first {bad[0].item()}")
    # The shared place: element j holds the last put that covered it.
    image = torch.full((nbytes,), POISON, dtype=torch.uint8)
    img = image.view(torch.float32)
    for i, m in enumerate(lengths):
        block = payload(ctx, prv, m, torch.float32, 500 + i)
        img[:m] = block
        img[n0 + i * n0:n0 + i * n0 + m] = block
    compare_bytes(dst, image, f"{route}: overwritten place / slots after {k} ordered puts")
    torch.cuda.synchronize()
    dist.barrier(group=g)


@case(nvlink=True, min_world=1)
def native_strict_ordering_puts(ctx):
    """WindowFlag.STRICT_ORDERING windows (NCCL 2.29.7) under a put_signal
    sequence whose result depends on order, on both routes."""
    need((2, 29, 7), "WindowFlag.STRICT_ORDERING")
    flags = SYM | nc.WindowFlag.STRICT_ORDERING
    for route in ("native", "auto"):
        g, comm = fresh_group(ctx)
        comm.rma_route = route
        ordered_sequence(ctx, comm, g, route, flags)
        dist.destroy_process_group(g)
    sanity(ctx)
