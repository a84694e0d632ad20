"""Bad input: each case feeds one input that used to wrap, truncate,
copy or race, and checks that it is refused with a message naming the
problem (or, where the fix makes it work, that the result is right).  Each
fails on the code before the fix: the comments say how."""

from __future__ import annotations

import threading
import time

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d

import nccl_core_backend as nc
from nccl_core_backend import simhosts
from nccl_core_backend import WaitSignalDesc, device
from tests.gpu.cases.common import check, expect_raises, fail, make, reduce_ref, sanity, window
from tests.gpu.registry import Skip, case

I = nc.NcclInvalid  # noqa: E741


def _window(comm, ctx, n, dtype=torch.float32):
    return window(comm, ctx, n, dtype, skip_if_missing=True)


class _CAIOnly:
    """A buffer that speaks only __cuda_array_interface__ (Numba-style)."""

    def __init__(self, t: torch.Tensor):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


@case(nvlink=True, min_world=1)
def bad_input_offsets_that_wrap(ctx):
    """peer_window_offset * element size wrapped before the bounds check
    (1 << 62 floats = 2**64 bytes = offset 0): the put landed at the start of
    the peer's window.  The same for device-collective offsets and
    nc.torch.empty sizes (which allocated 0 bytes for 2**62 floats)."""
    comm = nc.get_communicator()
    buf, win = _window(comm, ctx, 4096)
    x = torch.ones(16, device=ctx.device)
    me = ctx.rank
    expect_raises(I, lambda: comm.put_signal(x, me, win, 1 << 62), "overflows")
    expect_raises(I, lambda: comm.put_signal(x.double(), me, win, 1 << 61), "overflows")
    expect_raises(I, lambda: comm.put_signal(x, me, win, 1 << 63), "64-bit")
    expect_raises(I, lambda: comm.put_signal(x, me, win, -1), ">= 0")
    torch.cuda.synchronize()
    if not torch.all(buf == -7):
        fail("a refused put_signal wrote into the window")
    expect_raises(I, lambda: nc.torch.empty(1 << 62, device=ctx.device), "overflows")
    expect_raises(I, lambda: nc.torch.empty(1 << 40, 1 << 40, device=ctx.device), "overflows")
    if device.kernels_available():
        dev = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=4))
        out = torch.empty(16, device=ctx.device)
        expect_raises(I, lambda: device.all_reduce(dev, win, out, offset=1 << 62), "overflows")
        expect_raises(I, lambda: device.all_gather(dev, win, torch.empty(16 * ctx.world, device=ctx.device),
                                                   offset=1 << 62), "overflows")
        dev.close()
    torch.cuda.synchronize()
    dist.barrier()
    win.close()
    sanity(ctx)


@case(nvlink=True)
def bad_input_peer_window_smaller(ctx):
    """Only this rank's window size was checked: a put into a smaller peer
    window stored past its end.  Every rank's size is now exchanged at
    registration; a put that fits the peer's window (even when it would not
    fit this rank's) goes through."""
    comm = nc.get_communicator()
    n = 1024 * (ctx.rank + 1)  # rank r registers (r + 1) KiB floats
    buf, win = _window(comm, ctx, n)
    if win.size != n * 4:
        fail(f"window size {win.size}, expected {n * 4}")
    peer = (ctx.rank + 1) % ctx.world
    src = (ctx.rank - 1) % ctx.world
    peer_n = 1024 * (peer + 1)
    x = torch.full((100,), float(ctx.rank + 1), device=ctx.device)
    # Past the end of the peer's window (inside ours when we are the larger).
    expect_raises(I, lambda: comm.put_signal(x, peer, win, peer_n - 50), f"rank {peer}'s window")
    expect_raises(I, lambda: win.get_peer_device_pointer(peer, peer_n * 4), "outside")
    # The last 100 floats of the peer's window: always allowed.
    comm.put_signal(x, peer, win, peer_n - 100)
    comm.wait_signal(WaitSignalDesc(src))
    torch.cuda.synchronize()
    got = buf[n - 100:]
    if not torch.all(got == float(src + 1)):
        fail(f"put into the last 100 floats of a {n}-float window: {got[:4].tolist()}")
    if not torch.all(buf[: n - 100] == -7):
        fail("a put wrote outside the range it was given")
    dist.barrier()
    win.close()
    sanity(ctx)


@case()
def bad_input_push_allocations_of_different_sizes(ctx):
    """The push all-reduce once stored into every peer's allocation at this
    rank's offset, trusting equal sizes and offsets.  It now stores into the
    peers' staging windows only: allocations of different sizes,
    with the tensor at different offsets, push like any other call and give
    every element right."""
    from tests.gpu.cases.push import BYTES, _group

    g = _group(ctx)
    be = g._get_backend(ctx.device)
    d = ctx.device

    def reduce(t, salt, what):
        inputs = [make(ctx, q, t.dtype, n=t.numel(), salt=salt) for q in range(ctx.world)]
        t.copy_(inputs[ctx.rank])
        dist.all_reduce(t, group=g)
        check(t, reduce_ref(inputs, "SUM", t.dtype), t.dtype, "SUM", ctx.world, what)

    equal = nc.torch.empty(BYTES // 4, device=d)
    reduce(equal, 1, "equal allocations")
    pushes = be._push_calls()
    if pushes == 0:
        dist.destroy_process_group(g)
        why = simhosts.nvlink_peers_missing()
        if why:
            raise Skip(f"the push all-reduce needs NVLink peers: {why}")
        fail("the push all-reduce did not run on NVLink peers (0 push calls)")
        return
    # Rank 0's allocation holds exactly the tensor; the others' are 64 KiB
    # larger, with the tensor at their end (offset 64 KiB): a push into peers'
    # tensors at this rank's offset would land 64 KiB past rank 0's tensor.
    extra = 0 if ctx.rank == 0 else (64 << 10) // 4
    bigger = nc.torch.empty(extra + BYTES // 4, device=d)
    guard = bigger[: BYTES // 4].clone() if ctx.rank != 0 else None
    reduce(bigger[extra:], 2, "allocations of different sizes")
    reduce(bigger[extra:], 3, "allocations of different sizes, again")
    reduce(equal, 4, "equal allocations, again")
    torch.cuda.synchronize()
    if be._push_calls() != pushes + 3:
        fail(f"{be._push_calls() - pushes} push all-reduces of 3 (the path must not depend on "
             "where the tensors lie)")
    if guard is not None and extra > 0 and not torch.equal(bigger[: BYTES // 4][:extra], guard[:extra]):
        fail("memory before the tensor changed: a peer stored at its own offset")
    del bigger
    dist.destroy_process_group(g)
    sanity(ctx)


@case(min_world=1)
def bad_input_raw_layouts(ctx):
    """Raw operations took x.t() and other dense but non-C-contiguous layouts
    and ran them in memory order (the wrong element order)."""
    comm = nc.get_communicator()
    d = ctx.device
    a = torch.arange(12, dtype=torch.float32, device=d).reshape(3, 4)
    y = torch.zeros(4, 3, device=d)
    expect_raises(I, lambda: comm.allreduce(a.t(), y, nc.SUM), "sendbuf must be contiguous")
    expect_raises(I, lambda: comm.allreduce(y, a.t(), nc.SUM), "recvbuf must be contiguous")
    f = nc.torch.empty((4, 6), morder="F", device=d)
    expect_raises(I, lambda: comm.broadcast(f, f, 0), "contiguous")
    expect_raises(I, lambda: comm.allgather(a.t(), torch.empty(12 * ctx.world, device=d)), "contiguous")
    expect_raises(I, lambda: comm.send(a.t(), ctx.rank), "contiguous")
    # A byte range may still be any dense layout: registration and resolve_tensor.
    if nc.torch.resolve_tensor(f)[1] != 24:
        fail("resolve_tensor of a Fortran-ordered tensor")
    comm.register_buffer(f).close()
    # In C order the same data works.
    out = torch.empty(4, 3, device=d)
    comm.allreduce(a.t().contiguous(), out, nc.SUM)
    torch.cuda.synchronize()
    if not torch.equal(out, a.t() * ctx.world):
        fail(f"allreduce of a.t().contiguous(): {out.tolist()}")


@case(min_world=1)
def bad_input_cuda_array_interface_is_zero_copy(ctx):
    """A buffer with only __cuda_array_interface__ went through
    torch.as_tensor(obj, device="cuda"), which copies it whenever the current
    device is not the buffer's: NCCL then wrote the copy and the user's
    buffer stayed unchanged (or the call was refused for the copy's device).
    It is now wrapped in place on its own device."""
    comm = nc.get_communicator()
    d = ctx.device
    x = torch.full((257,), float(ctx.rank + 1), device=d)
    backing = torch.zeros(257, device=d)
    y = _CAIOnly(backing)
    ptr, count, _, dev = nc._C._resolve_tensor(y)
    if (ptr, count, dev) != (backing.data_ptr(), 257, d.index):
        fail(f"resolve of a CAI buffer: {(ptr, count, dev)}")
    comm.allreduce(x, y, nc.SUM)
    torch.cuda.synchronize()
    want = float(sum(range(1, ctx.world + 1)))
    if not torch.all(backing == want):
        fail(f"allreduce into a CAI buffer left it at {backing[:4].tolist()}")
    expect_raises(I, lambda: comm.allreduce(x, _CAIOnly(torch.zeros(4, 3, device=d).t()), nc.SUM),
                  "contiguous")
    if torch.cuda.device_count() < 2:
        return
    other = (d.index + 1) % torch.cuda.device_count()
    with torch.cuda.device(other):  # the current device is not the buffer's
        ptr, _, _, dev = nc._C._resolve_tensor(y)
    if (ptr, dev) != (backing.data_ptr(), d.index):
        fail(f"CAI buffer resolved to {hex(ptr)} on device {dev} while cuda:{other} was "
             f"current: a copy")


@case(min_world=1)
def bad_input_premul_integer_factors(ctx):
    """create_pre_mul_sum(0.5, torch.int8) truncated the factor to 0 and -1
    became 255 for uint8: refused now; integral factors that fit still work."""
    comm = nc.get_communicator()
    d = ctx.device
    expect_raises(I, lambda: comm.create_pre_mul_sum(0.5, torch.int8), "not an integer")
    expect_raises(I, lambda: comm.create_pre_mul_sum(-1, torch.uint8), "does not fit")
    expect_raises(I, lambda: comm.create_pre_mul_sum(1 << 40, torch.int32), "does not fit")
    expect_raises(I, lambda: comm.create_pre_mul_sum(1, torch.bool), "bool")
    op = comm.create_pre_mul_sum(3.0, torch.int32)
    x = torch.full((64,), ctx.rank + 1, dtype=torch.int32, device=d)
    y = torch.zeros_like(x)
    comm.allreduce(x, y, op)
    torch.cuda.synchronize()
    want = 3 * sum(range(1, ctx.world + 1))
    if not torch.all(y == want):
        fail(f"PreMulSum(3) int32: {y[:4].tolist()} expected {want}")
    op.close()


@case()
def bad_input_raw_bool_ops(ctx):
    """Raw ops on bool buffers ran SUM on bytes: True everywhere summed to
    the world size inside a bool.  They now reduce as logic, as the backend
    does (SUM = OR, PROD = AND); AVG and PreMulSum are refused."""
    comm = nc.get_communicator()
    d = ctx.device
    w = ctx.world
    ones = torch.ones(64, dtype=torch.bool, device=d)
    mine = torch.zeros(64, dtype=torch.bool, device=d)
    mine[ctx.rank] = True
    for op, x, want in ((nc.SUM, ones, torch.ones(64, dtype=torch.uint8)),
                        (dist.ReduceOp.SUM, mine, (torch.arange(64) < w).to(torch.uint8)),
                        (nc.PROD, mine, torch.zeros(64, dtype=torch.uint8)),
                        (nc.PROD, ones, torch.ones(64, dtype=torch.uint8)),
                        (nc.MAX, mine, (torch.arange(64) < w).to(torch.uint8))):
        y = torch.empty(64, dtype=torch.bool, device=d)
        comm.allreduce(x, y, op)
        torch.cuda.synchronize()
        got = y.view(torch.uint8).cpu()
        if not torch.equal(got, want):
            fail(f"bool allreduce {op}: bytes {got[:8].tolist()}, expected {want[:8].tolist()}")
    rs = torch.empty(64 // w if 64 % w == 0 else 1, dtype=torch.bool, device=d)
    if 64 % w == 0:
        comm.reduce_scatter(ones, rs, nc.SUM)
        torch.cuda.synchronize()
        if not torch.all(rs.view(torch.uint8) == 1):
            fail(f"bool reduce_scatter SUM: bytes {rs.view(torch.uint8)[:8].tolist()}")
    y = torch.empty(64, dtype=torch.bool, device=d)
    expect_raises(I, lambda: comm.allreduce(ones, y, nc.AVG), "AVG")
    red = comm.create_pre_mul_sum(2, torch.uint8)
    expect_raises(I, lambda: comm.allreduce(ones, y, red), "bool")
    red.close()
    expect_raises(I, lambda: comm.allreduce(ones, torch.empty(64, dtype=torch.uint8, device=d), nc.SUM),
                  "Dtype mismatch")
    sanity(ctx)


@case(min_world=1)
def bad_input_ranks_and_ints_range_checked_first(ctx):
    """Roots and similar ints were narrowed to int before the range check:
    2**32 became root 0 (gather/scatter ran on rank 0) and a pybind cast
    error (RuntimeError) for the raw reduce's root."""
    comm = nc.get_communicator()
    d = ctx.device
    x = torch.ones(8, device=d)
    y = torch.zeros(8 * ctx.world, device=d)
    be = dist.group.WORLD._get_backend(d)
    g = c10d.GatherOptions()
    g.rootRank = 1 << 32
    expect_raises(ValueError, lambda: be.gather([[torch.empty(8, device=d)] * ctx.world], [x], g),
                  "root 4294967296")
    s = c10d.ScatterOptions()
    s.rootRank = 1 << 32
    expect_raises(ValueError, lambda: be.scatter([x], [[torch.empty(8, device=d)] * ctx.world], s),
                  "root 4294967296")
    expect_raises(I, lambda: comm.reduce(x, y[:8], nc.SUM, root=1 << 32), "root")
    expect_raises(I, lambda: comm.gather(x, y, root=1 << 32), "root")
    expect_raises(I, lambda: comm.broadcast(x, x, 1 << 32), "root")
    expect_raises(I, lambda: comm.allreduce(x, x, 1 << 32), "operator")
    expect_raises(I, lambda: comm.allreduce(x, x, 1 << 70), "64-bit")
    expect_raises(I, lambda: nc.NCCLDevCommRequirements(gin_connection_type=1 << 32),
                  "gin_connection_type")
    expect_raises(I, lambda: nc.get_error_string(1 << 32), "nccl_result")
    sanity(ctx)


@case()
def bad_input_shrink_duplicate_ranks(ctx):
    """ranks_to_exclude = [r, r] was counted twice: the new group got a wrong
    size and this rank a wrong new rank."""
    be = dist.group.WORLD._get_backend(ctx.device)
    other = (ctx.rank + 1) % ctx.world
    expect_raises(ValueError, lambda: be.shrink([other, other], 0, None), "listed twice")
    comm = nc.get_communicator()
    expect_raises(I, lambda: comm.shrink([other, other]), "twice")
    # NCCL's shrink removes at least one rank: no list, or an empty one, is named.
    expect_raises(I, lambda: comm.shrink(), "names no rank")
    expect_raises(I, lambda: comm.shrink([]), "names no rank")
    expect_raises(ValueError, lambda: be.shrink([], 0, None), "names no rank")
    sanity(ctx)


@case(min_world=1)
def bad_input_group_keeps_its_buffers(ctx):
    """A grouped raw op only queues; NCCL reads its buffers at group_end.  A
    send buffer whose last reference died inside the group went back to the
    caching allocator, and the next allocation overwrote it before NCCL ran."""
    comm = nc.get_communicator()
    d = ctx.device
    n = 1 << 20
    y = torch.zeros(n, device=d)
    with nc.group():
        comm.allreduce(torch.full((n,), 3.0, device=d), y, nc.SUM)
        # Same size, same stream: would reuse the dropped send buffer's block.
        scratch = torch.full((n,), -1.0, device=d)
    torch.cuda.synchronize()
    want = 3.0 * ctx.world
    if not torch.all(y == want):
        fail(f"grouped allreduce of a dropped send buffer: {y[:4].tolist()} expected {want}")
    del scratch
    sanity(ctx)


@case(min_world=1)
def bad_input_finalize_waits_for_the_open_group(ctx):
    """finalize() on another thread freed the communicator under this
    thread's open group (group_end then used a dead handle); in the same
    thread it did the same.  Now the same thread is refused, and another
    thread waits until group_end."""
    g = dist.new_group(list(range(ctx.world)))
    sanity(ctx, g)
    comm = nc.get_communicator(g)
    d = ctx.device
    x = torch.full((4096,), float(ctx.rank + 1), device=d)
    y = torch.zeros(4096, device=d)
    nc.group_start()
    try:
        comm.allreduce(x, y, nc.SUM)
        expect_raises(I, comm.finalize, "open group")
        errors = []

        def closer():
            try:
                torch.cuda.set_device(d)
                comm.finalize()
            except Exception as e:  # noqa: BLE001
                errors.append(f"{type(e).__name__}: {e}")

        t = threading.Thread(target=closer)
        t.start()
        time.sleep(0.5)
        if not t.is_alive():
            fail(f"finalize on another thread did not wait for group_end ({errors})")
    finally:
        nc.group_end()
    t.join(60)
    torch.cuda.synchronize()
    want = float(sum(range(1, ctx.world + 1)))
    if not torch.all(y == want):
        fail(f"grouped allreduce before finalize: {y[:4].tolist()} expected {want}")
    if t.is_alive() or errors:
        fail(f"finalize after group_end: alive={t.is_alive()} errors={errors}")
    if comm.is_valid:
        fail("communicator still valid after finalize")
    expect_raises(I, lambda: comm.allreduce(x, y, nc.SUM), "destroyed")
    dist.destroy_process_group(g)
    sanity(ctx)


@case(min_world=1)
def bad_input_close_races_an_operation(ctx):
    """finalize() / abort() on one thread while another thread runs raw
    operations on the same communicator: the handle was used without a lock
    with the GIL released, so close could free it mid-call.  Now close
    waits for the call in flight, and later calls raise NcclInvalid.  Each
    rank races on a communicator of its own (a one-rank group), so the calls
    need no peers."""
    d = ctx.device
    solo = {}
    for how in ("finalize", "abort"):
        for r in range(ctx.world):  # every rank creates every group, in order
            grp = dist.new_group([r])
            if r == ctx.rank:
                solo[how] = grp
    for how, grp in solo.items():
        comm = nc.get_communicator(grp)
        x = torch.ones(1 << 18, device=d)
        y = torch.empty_like(x)
        comm.allreduce(x, y, nc.SUM)  # connected before the race
        torch.cuda.synchronize()
        calls, errors = [0], []
        started = threading.Event()

        def worker():
            torch.cuda.set_device(d)
            started.set()
            while True:
                try:
                    comm.allreduce(x, y, nc.SUM)
                    calls[0] += 1
                except nc.NcclInvalid as e:
                    errors.append(str(e))
                    return
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{type(e).__name__}: {e}")
                    return

        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        time.sleep(0.2)
        getattr(comm, how)()
        t.join(60)
        if t.is_alive():
            fail(f"{how}: the worker thread is still running")
        elif not errors or not any(w in errors[0] for w in ("destroyed", "aborted", "finalized")):
            fail(f"{how}: the worker ended with {errors}")
        if calls[0] == 0:
            fail(f"{how}: no call ran before the race")
        torch.cuda.synchronize()
    for grp in solo.values():
        dist.destroy_process_group(grp)
    sanity(ctx)
