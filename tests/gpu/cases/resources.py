"""Communicator resources: registered buffers, windows, PreMulSum ops, lifecycle."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import (check, expect_raises, fail, make, reduce_ref, sanity,
                                    skip_without_window)
from tests.gpu.registry import case

PREMUL_TYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _view(ptr: int, n: int) -> torch.Tensor:
    """n float32 at a device address (a peer's window) as a tensor.  CuPy
    wraps the address without asking the driver which device owns it (torch's
    CUDA Array Interface import does, and refuses NCCL's flat LSA mapping)."""
    try:
        import cupy
    except ImportError:
        from tests.gpu.registry import Skip

        raise Skip("CuPy is needed to view raw device addresses")
    dev = torch.cuda.current_device()
    mem = cupy.cuda.UnownedMemory(ptr, n * 4, owner=None, device_id=dev)
    with cupy.cuda.Device(dev):
        arr = cupy.ndarray((n,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))
    return torch.from_dlpack(arr)


def _check_closed(res, attr: str):
    if res.is_valid:
        fail(f"{type(res).__name__} still valid after close")
    expect_raises(nc.NcclInvalid, lambda: getattr(res, attr), "closed")
    e = expect_raises(RuntimeError, lambda: getattr(res, attr), "closed")
    del e


@case(min_world=1)
def register_buffer_zero_copy(ctx):
    comm = nc.get_communicator()
    for alloc in ("nccl", "torch"):
        n = 1 << 16
        buf = nc.torch.empty(n, device=ctx.device) if alloc == "nccl" else torch.empty(n, device=ctx.device)
        h = comm.register_buffer(buf)
        if h.size != n * 4 or h.handle == 0 or not h.is_valid:
            fail(f"{alloc}: handle size={h.size} handle={h.handle}")
        inputs = [make(ctx, r, torch.float32, n, salt=5) for r in range(ctx.world)]
        buf.copy_(inputs[ctx.rank])
        dist.all_reduce(buf)  # the group's collectives see the registration
        check(buf, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              f"all_reduce on registered {alloc} buffer")
        buf.copy_(inputs[ctx.rank])
        comm.allreduce(buf, buf, nc.SUM)
        torch.cuda.synchronize()
        check(buf, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              f"raw allreduce on registered {alloc} buffer")
        h.close()
        h.close()  # idempotent
        _check_closed(h, "handle")
    with comm.register_buffer(torch.empty(100, device=ctx.device)) as h2:
        pass
    if h2.is_valid:
        fail("context-managed buffer handle still valid")
    expect_raises(nc.NcclInvalid, lambda: comm.register_buffer(torch.ones(4)), "CUDA")


@case(nvlink=True, min_world=1)
def register_window_pointers(ctx):
    comm = nc.get_communicator()
    n = 4096
    buf = nc.torch.empty(n, device=ctx.device)
    buf.fill_(100.0 * ctx.rank)
    buf[: ctx.world] = torch.arange(ctx.world, device=ctx.device, dtype=torch.float32) + ctx.rank
    torch.cuda.synchronize()
    win = comm.register_window(buf)
    if win is None:
        fail("register_window returned None on an NVLink machine")
        return
    if win.size != n * 4 or win.user_ptr != buf.data_ptr() or win.handle == 0:
        fail(f"window size={win.size} user_ptr={win.user_ptr:#x} buf={buf.data_ptr():#x}")
    if win.lsa_size != ctx.world:
        fail(f"lsa_size {win.lsa_size}, expected {ctx.world} (all GPUs are NVLink peers)")
    dist.barrier()
    # Read every peer's window through its LSA and peer pointers.
    for peer in range(ctx.world):
        p = win.get_peer_device_pointer(peer)
        q = win.get_lsa_device_pointer(peer - ctx.rank + win.lsa_rank)
        if p is None or p != q:
            fail(f"peer {peer}: peer pointer {p} vs lsa pointer {q}")
            continue
        got = _view(p, n).clone()
        exp = torch.full((n,), 100.0 * peer, device=ctx.device)
        exp[: ctx.world] = torch.arange(ctx.world, device=ctx.device, dtype=torch.float32) + peer
        if not torch.equal(got, exp):
            fail(f"reading peer {peer} through its window pointer: {got[:4].tolist()}")
        off = win.get_peer_device_pointer(peer, 8)
        if off != p + 8:
            fail(f"offset pointer {off} != {p} + 8")
    dist.barrier()
    # Write into the next rank's window (one-sided store), then check locally.
    nxt = (ctx.rank + 1) % ctx.world
    dst = _view(win.get_peer_device_pointer(nxt, 4 * 1024), 16)
    dst.copy_(torch.full((16,), -1.0 - ctx.rank, device=ctx.device))
    torch.cuda.synchronize()
    dist.barrier()
    prv = (ctx.rank - 1) % ctx.world
    if not torch.all(buf[1024:1040] == -1.0 - prv):
        fail(f"store from rank {prv} not seen: {buf[1024:1028].tolist()}")
    if win.get_lsa_multimem_device_pointer() is not None:
        fail("multimem pointer reported although NVLink multicast is off")
    # A team's handle: NCCL answers no address while multicast is off, and
    # refuses a handle without a base (checked here before NCCL is asked).
    handle = nc.MultimemHandle(mc_base_pointer=1 << 40)
    if nc.nccl_version() >= (2, 29, 2):
        if win.get_multimem_device_pointer(handle, 8) is not None:
            fail("multimem pointer through a handle although NVLink multicast is off")
        expect_raises(nc.NcclInvalid,
                      lambda: win.get_multimem_device_pointer(nc.MultimemHandle(0)), "base")
    else:
        expect_raises(nc.NcclUnsupported, lambda: win.get_multimem_device_pointer(handle), "2.29.2")
    expect_raises(nc.NcclInvalid, lambda: win.get_multimem_device_pointer(1 << 40), "MultimemHandle")
    expect_raises(nc.NcclInvalid, lambda: win.get_lsa_device_pointer(win.lsa_size), "lsa_rank")
    expect_raises(nc.NcclInvalid, lambda: win.get_peer_device_pointer(ctx.world), "peer")
    expect_raises(nc.NcclInvalid, lambda: win.get_peer_device_pointer(0, n * 4), "outside")
    expect_raises(nc.NcclInvalid, lambda: win.get_lsa_device_pointer(0, -1), "offset")
    dist.barrier()
    win.close()
    win.close()
    _check_closed(win, "handle")
    expect_raises(nc.NcclInvalid, lambda: win.get_lsa_device_pointer(0), "closed")
    expect_raises(nc.NcclInvalid, lambda: win.user_ptr, "closed")
    # Only NCCL (VMM) memory makes a window; refused before the collective.
    expect_raises(nc.NcclInvalid, lambda: comm.register_window(torch.empty(n, device=ctx.device)), "VMM")
    expect_raises(nc.NcclInvalid, lambda: comm.register_window(buf, 8), "WindowFlag")
    sanity(ctx)


@case(min_world=1)
def symmetric_window_collectives(ctx):
    comm = nc.get_communicator()
    for n in (1024, 1 << 20):
        buf = nc.torch.empty(n, device=ctx.device)
        win = comm.register_window(buf, nc.WindowFlag.COLL_SYMMETRIC)
        if win is None:
            skip_without_window(ctx)
            fail("symmetric window registration returned None")
            return
        for salt, dtype in enumerate((torch.float32, torch.bfloat16, torch.float16)):
            view = buf.view(dtype)[: n]
            inputs = [make(ctx, r, dtype, n, salt=salt) for r in range(ctx.world)]
            view.copy_(inputs[ctx.rank])
            dist.all_reduce(view)
            check(view, reduce_ref(inputs, "SUM", dtype), dtype, "SUM", ctx.world,
                  f"all_reduce on a symmetric window n={n}")
        win.close()


@case(min_world=1)
def pre_mul_sum_every_float_type(ctx):
    comm = nc.get_communicator()
    n = 515
    for i, dtype in enumerate(PREMUL_TYPES):
        factor = 0.25 + 0.125 * (i + 1)
        inputs = [make(ctx, r, dtype, n * ctx.world, salt=i) for r in range(ctx.world)]
        ref = reduce_ref(inputs, "PREMUL_SUM", dtype, factor)
        host = comm.create_pre_mul_sum(factor, dtype)
        dev_scalar = torch.tensor([factor], dtype=dtype, device=ctx.device)
        dev = comm.create_pre_mul_sum(dev_scalar)
        if host.residence != nc.ScalarResidence.HostImmediate or dev.residence != nc.ScalarResidence.Device:
            fail(f"residences {host.residence} {dev.residence}")
        for op, name in ((host, "host"), (dev, "device")):
            x = inputs[ctx.rank].to(ctx.device)
            out = torch.empty_like(x)
            comm.allreduce(x, out, op)
            torch.cuda.synchronize()
            check(out, ref, dtype, "PREMUL_SUM", ctx.world, f"raw PreMulSum ({name}) allreduce")
            rs = torch.empty(n, dtype=dtype, device=ctx.device)
            comm.reduce_scatter(x, rs, op)
            torch.cuda.synchronize()
            check(rs, ref[ctx.rank * n:(ctx.rank + 1) * n], dtype, "PREMUL_SUM", ctx.world,
                  f"raw PreMulSum ({name}) reduce_scatter")
            # The same factor through torch.distributed.
            y = inputs[ctx.rank].to(ctx.device)
            dist.all_reduce(y, op=op.reduce_op)
            check(y, ref, dtype, "PREMUL_SUM", ctx.world, f"dist.all_reduce with {name} reduce_op")
            z = torch.empty(n, dtype=dtype, device=ctx.device)
            dist.reduce_scatter_tensor(z, inputs[ctx.rank].to(ctx.device), op=op.reduce_op)
            check(z, ref[ctx.rank * n:(ctx.rank + 1) * n], dtype, "PREMUL_SUM", ctx.world,
                  f"dist.reduce_scatter_tensor with {name} reduce_op")
        # A device scalar is read when the op runs: changing it changes the result.
        dev_scalar.fill_(2.0)
        x = inputs[ctx.rank].to(ctx.device)
        comm.allreduce(x, x, dev)
        torch.cuda.synchronize()
        check(x, reduce_ref(inputs, "PREMUL_SUM", dtype, 2.0), dtype, "PREMUL_SUM", ctx.world,
              "device PreMulSum after updating its scalar")
        expect_raises(nc.NcclInvalid, lambda: comm.allreduce(x.float() if dtype != torch.float32 else x.double(),
                                                             x.float() if dtype != torch.float32 else x.double(), host),
                      "created for")
        host.close()
        dev.close()
        _check_closed(host, "op")
        expect_raises(nc.NcclInvalid, lambda: comm.allreduce(x, x, host), "closed")
    expect_raises(nc.NcclInvalid, lambda: comm.create_pre_mul_sum(torch.ones(2, device=ctx.device)), "1 element")
    expect_raises(nc.NcclInvalid, lambda: comm.create_pre_mul_sum(1.0, torch.int16), "int16")
    expect_raises(nc.NcclInvalid, lambda: comm.create_pre_mul_sum(torch.ones(1, dtype=torch.float64), torch.float32),
                  "doesn't match")
    expect_raises(nc.NcclInvalid, lambda: comm.create_pre_mul_sum("x"), "scalar")
    sanity(ctx)


def _with_resources(comm, ctx):
    buf = comm.register_buffer(torch.empty(256, device=ctx.device))
    win = comm.register_window(nc.torch.empty(4096, device=ctx.device))
    if win is None:
        skip_without_window(ctx)
    red = comm.create_pre_mul_sum(0.5, torch.float32)
    return [buf, win, red]


@case(min_world=1)
def communicator_lifecycle(ctx):
    world = nc.get_communicator()
    for how in ("close_all", "destroy", "abort", "finalize"):
        g = dist.new_group(list(range(ctx.world)))
        t = torch.ones(8, device=ctx.device)
        dist.all_reduce(t, group=g)  # connect
        torch.cuda.synchronize()
        comm = nc.get_communicator(g)
        base = comm._resource_count()  # the fast path's scratch window, if any
        res = _with_resources(comm, ctx)
        # 3, plus the one-sided signal area and its window
        if comm._resource_count() - base != 5:
            fail(f"{how}: {comm._resource_count() - base} tracked resources added")
        if how == "close_all":
            comm.close_all_resources()
            comm.close_all_resources()
        else:
            getattr(comm, how)()
            getattr(comm, how)()  # idempotent
        for r in res:
            if r.is_valid:
                fail(f"{how}: {type(r).__name__} still valid")
        if comm._resource_count() != 0:
            fail(f"{how}: resources still tracked")
        if how == "close_all":
            if not comm.is_valid:
                fail("close_all_resources invalidated the communicator")
            dist.all_reduce(t, group=g)
        else:
            if comm.is_valid or comm.ptr != 0:
                fail(f"{how}: communicator still valid")
            expect_raises(nc.NcclInvalid, lambda: comm.allreduce(t, t, nc.SUM), "communicator")
            expect_raises(nc.NcclInvalid, lambda: comm.register_buffer(t), "communicator")
            expect_raises(dist.DistBackendError, lambda: dist.all_reduce(t, group=g))
        dist.destroy_process_group(g)
    if not world.is_valid:
        fail("the world communicator was affected")
    sanity(ctx)


@case(min_world=1)
def strict_ordering_window_and_features(ctx):
    # WindowFlag.STRICT_ORDERING needs NCCL 2.29.7 (2.28 ignores the flag): refused
    # before the collective on older releases; features() reports the same.
    comm = nc.get_communicator()
    table = nc.features()
    buf = nc.torch.empty(4096, device=ctx.device)
    if nc.nccl_version() < (2, 29, 7):
        expect_raises(nc.NcclUnsupported,
                      lambda: comm.register_window(buf, nc.WindowFlag.STRICT_ORDERING), "2.29.7")
        want = "unsupported"
    else:
        win = comm.register_window(buf, nc.WindowFlag.STRICT_ORDERING)
        if win is None:
            skip_without_window(ctx)
            fail("STRICT_ORDERING window registration returned None")
        else:
            if win.flags != nc.WindowFlag.STRICT_ORDERING:
                fail(f"window flags {win.flags}")
            dist.barrier()
            win.close()
        want = "native"
    if table["window_strict_ordering"].status != want:
        fail(f"features() says {table['window_strict_ordering']}, expected {want}")
    for name, probe in (("gin_type", lambda: comm.gin_type),
                        ("railed_gin_type", lambda: comm.railed_gin_type),
                        ("get_mem_stat", lambda: comm.get_mem_stat(nc.NcclCommMemStat.GPU_MEM_TOTAL))):
        try:
            probe()
            works = True
        except nc.NcclUnsupported:
            works = False
        if works != table[name].available:
            fail(f"{name}: works={works} but features() says {table[name].status}")
    if (table["device_collectives"].status == "nccl_core") != nc.device.kernels_available():
        fail("features()['device_collectives'] disagrees with device.kernels_available()")
    sanity(ctx)


@case(min_world=1)
def mem_stat_and_versions(ctx):
    comm = nc.get_communicator()
    if nc.nccl_version() < (2, 29, 7):
        e = expect_raises(nc.NcclUnsupported, lambda: comm.get_mem_stat(nc.NcclCommMemStat.GPU_MEM_TOTAL), "2.29.7")
        if e is not None and "get_mem_stat" not in str(e):
            fail(f"unsupported message does not name the feature: {e}")
    else:
        vals = {s: comm.get_mem_stat(s) for s in nc.NcclCommMemStat}
        if vals[nc.NcclCommMemStat.GPU_MEM_TOTAL] <= 0 or vals[nc.NcclCommMemStat.GPU_MEM_SUSPENDED] not in (0, 1):
            fail(f"mem stats {vals}")
    expect_raises(nc.NcclInvalid, lambda: comm.get_mem_stat(7), "NcclCommMemStat")
