"""Device communicators: create_dev_comm and its resource life,
requirements the loaded NCCL lacks, multimem refused with NVLS off, GIN type
queries, and the device-API collectives checked against float64 references."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from nccl_core_backend import simhosts
from nccl_core_backend import device
from tests.gpu.cases.common import check, expect_raises, fail, make, reduce_ref, sanity
from tests.gpu.registry import Skip, case

DEVICE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                 torch.int8, torch.uint8, torch.int32, torch.int64]
DEVICE_OPS = {"SUM": nc.SUM, "PRODUCT": nc.PROD, "MIN": nc.MIN, "MAX": nc.MAX, "AVG": nc.AVG}
FLOAT_TYPES = {torch.float32, torch.float64, torch.float16, torch.bfloat16}


@case(nvlink=True, min_world=1)
def dev_comm_resources_come_back_as_handles(ctx):
    """resources= reaches NCCL's helpers: two LSA barrier resources and a
    low-latency all-to-all on the LSA team come back as the handles NCCL
    completed (the barrier counts kept, the slots NCCL computed, a distinct
    buffer each), and the requirements keep the entries."""
    comm = nc.get_communicator()
    lsa = comm.team_lsa
    wanted = (nc.LsaBarrierRequirement(lsa, 2), nc.LsaBarrierRequirement(lsa, 5),
              nc.LLA2ARequirement(n_blocks=1, max_elements=64, max_element_size=8))
    with comm.create_dev_comm(nc.NCCLDevCommRequirements(resources=wanted)) as dc:
        got = dc.resource_handles
        if [type(h).__name__ for h in got] != ["LsaBarrierHandle", "LsaBarrierHandle",
                                                "LLA2AHandle"]:
            fail(f"resource_handles {got}")
        if (got[0].n_barriers, got[1].n_barriers) != (2, 5):
            fail(f"barrier counts {got[0].n_barriers}, {got[1].n_barriers}")
        if got[2].n_slots <= 0:
            fail(f"the all-to-all has {got[2].n_slots} slots")
        buffers = {h.buf_handle for h in got}
        if len(buffers) != 3:
            fail(f"the resources share buffers: {got}")
        if dc.requirements.resources != wanted:
            fail(f"requirements.resources {dc.requirements.resources}")
    sanity(ctx)


@case(nvlink=True, min_world=1)
def dev_comm_teams_reach_nccl(ctx):
    """teams= reaches ncclDevCommCreate: the world, LSA and rail teams (one
    twice) make a device communicator NCCL accepts, the requirements keep the
    entries, no team has a multimem handle it did not ask for, and a team
    with multimem is refused while NVLink multicast is off."""
    comm = nc.get_communicator()
    world, lsa = comm.team_world, comm.team_lsa
    if (world.n_ranks, world.rank) != (ctx.world, ctx.rank):
        fail(f"team_world {world} on rank {ctx.rank} of {ctx.world}")
    wanted = (nc.TeamRequirement(world), nc.TeamRequirement(lsa), nc.TeamRequirement(world))
    with comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=1,
                                                         teams=wanted)) as dc:
        if not dc.ptr or dc.requirements.teams != wanted:
            fail(f"ptr {dc.ptr:#x}, teams {dc.requirements.teams}")
        for team in (world, lsa):
            expect_raises(KeyError, lambda: dc.multimem_handle(team), "multimem=True")
    if os.environ.get("NCCL_NVLS_ENABLE") == "0":
        mm = nc.NCCLDevCommRequirements(teams=(nc.TeamRequirement(lsa, multimem=True),))
        expect_raises(nc.NcclUnsupported, lambda: comm.create_dev_comm(mm), "multicast")
    sanity(ctx)


@case(nvlink=True, min_world=1)
def dev_comm_lifecycle(ctx):
    comm = nc.get_communicator()
    before = comm._resource_count()
    a = comm.create_dev_comm()
    world_barriers = nc.NCCLDevCommRequirements(lsa_barrier_count=8, barrier_count=2)
    if nc.nccl_version() >= (2, 29, 7):
        # From 2.29.7 world barriers are GIN resources: without a GIN connection
        # NCCL refuses them, and that refusal must arrive as an exception.
        expect_raises(nc.NcclError, lambda: comm.create_dev_comm(world_barriers), "GIN")
        b = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=8))
    else:
        b = comm.create_dev_comm(world_barriers)
    if not (a.ptr and b.ptr and a.ptr != b.ptr):
        fail(f"device communicators need distinct non-null pointers: {a.ptr:#x} {b.ptr:#x}")
    if a.dev_comm.ptr != a.ptr:
        fail("resource.dev_comm.ptr differs from resource.ptr")
    if b.requirements.lsa_barrier_count != 8:
        fail("requirements not kept on the resource")
    if comm._resource_count() != before + 2:
        fail(f"expected {before + 2} tracked resources, got {comm._resource_count()}")
    b.close()
    b.close()  # idempotent
    expect_raises(nc.NcclInvalid, lambda: b.ptr, "closed")
    if comm._resource_count() != before + 1:
        fail("a closed device communicator is still tracked")
    # The communicator releases the rest when it closes its resources.
    with comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=1)) as c:
        if not c.is_valid:
            fail("context-managed device communicator not valid inside the block")
    if c.is_valid:
        fail("context manager did not close the device communicator")
    sub = dist.new_group(list(range(ctx.world)))
    sc = nc.get_communicator(sub)
    d = sc.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=4))
    dist.destroy_process_group(sub)
    if d.is_valid:
        fail("destroying the group did not release its device communicator")
    a.close()
    sanity(ctx)


@case(nvlink=True, min_world=1)
def dev_comm_requirements_checked(ctx):
    comm = nc.get_communicator()
    expect_raises(nc.NcclInvalid, lambda: nc.NCCLDevCommRequirements(lsa_barrier_count=-1),
                  "lsa_barrier_count")
    expect_raises(nc.NcclInvalid, lambda: nc.NCCLDevCommRequirements(gin_connection_type=7),
                  "gin_connection_type")
    r = nc.NCCLDevCommRequirements(gin_connection_type=nc.NcclGinConnectionType.FULL)
    if r.gin_connection_type != nc.NcclGinConnectionType.FULL:
        fail("gin_connection_type does not round-trip as NcclGinConnectionType")
    if nc.nccl_version() < (2, 29, 7):
        expect_raises(nc.NcclUnsupported, lambda: comm.create_dev_comm(r), "2.29.7")
        expect_raises(nc.NcclUnsupported,
                      lambda: comm.create_dev_comm(nc.NCCLDevCommRequirements(gin_queue_depth=8)),
                      "gin_queue_depth")
    # The fields later releases appended reach NCCL in its layout (signal
    # flags that ask for less are valid everywhere they exist), and are
    # refused, naming the release, before it.
    signals = nc.NCCLDevCommRequirements(lsa_barrier_count=1, gin_strong_signals_required=False,
                                         gin_va_signals_required=False)
    if nc.nccl_version() >= (2, 30, 7):
        comm.create_dev_comm(signals).close()
    else:
        expect_raises(nc.NcclUnsupported, lambda: comm.create_dev_comm(signals), "2.30.7")
    # With NVLink multicast off (always so on the shared machines): a clear
    # error before NCCL is asked for anything.  Never asked where it is on.
    if os.environ.get("NCCL_NVLS_ENABLE") == "0":
        expect_raises(nc.NcclUnsupported,
                      lambda: comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_multimem=True)),
                      "multicast")
    sanity(ctx)


@case(nvlink=True, min_world=1)
def gin_type_queries(ctx):
    comm = nc.get_communicator()
    if nc.nccl_version() < (2, 29, 2):
        expect_raises(nc.NcclUnsupported, lambda: comm.gin_type, "2.29.2")
    else:
        t = comm.gin_type
        if not isinstance(t, nc.NcclGinType):
            fail(f"gin_type returned {t!r}, not an NcclGinType")
    if nc.nccl_version() < (2, 29, 7):
        expect_raises(nc.NcclUnsupported, lambda: comm.railed_gin_type, "2.29.7")
    elif not isinstance(comm.railed_gin_type, nc.NcclGinType):
        fail("railed_gin_type is not an NcclGinType")


def _setup(n_bytes: int, barriers: int = 32):
    comm = nc.get_communicator()
    if not device.kernels_available():
        raise Skip(nc._C._device_kernels_mismatch())
    dev = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=barriers))
    buf = nc.torch.empty(n_bytes, dtype=torch.uint8, device=comm.device)
    win = comm.register_window(buf)
    if win is None:
        dev.close()
        why = simhosts.nvlink_peers_missing()
        if why:
            raise Skip(f"ncclCommWindowRegister returned NULL: {why}")
        raise AssertionError("ncclCommWindowRegister returned NULL on NVLink peers")
    return comm, dev, buf, win


@case(nvlink=True, min_world=1)
def device_all_reduce_every_dtype_and_op(ctx):
    w, d = ctx.world, ctx.device
    comm, dev, buf, win = _setup(1 << 22)
    try:
        for n in (1, 1031, 4096, 65536 + 8):
            for dtype in DEVICE_DTYPES:
                elem = torch.empty(0, dtype=dtype).element_size()
                for name, op in DEVICE_OPS.items():
                    if name == "AVG" and dtype not in FLOAT_TYPES:
                        continue
                    inputs = [make(ctx, r, dtype, n=n, op=name, salt=n) for r in range(w)]
                    # input at an element offset (not 16-byte aligned for odd offsets)
                    offset = 3 if n == 1031 else 0
                    view = buf[offset * elem:(offset + n) * elem].view(dtype)
                    view.copy_(inputs[ctx.rank].to(d))
                    out = torch.full((n,), 0, dtype=dtype, device=d)
                    device.all_reduce(dev, win, out, offset=offset, op=op)
                    ref = reduce_ref(inputs, name, dtype)
                    check(out, ref, dtype, name, w, f"device all_reduce n={n} offset={offset}")
        # torch.distributed.ReduceOp is accepted too.
        x = torch.ones(256, device=d)
        buf[:1024].view(torch.float32).copy_(x)
        out = torch.empty_like(x)
        device.all_reduce(dev, win, out, op=dist.ReduceOp.SUM)
        if not torch.equal(out, x * w):
            fail("device all_reduce with dist.ReduceOp.SUM is wrong")
    finally:
        win.close()
        dev.close()
    sanity(ctx)


@case(nvlink=True, min_world=1)
def device_all_gather(ctx):
    w, d = ctx.world, ctx.device
    comm, dev, buf, win = _setup(1 << 22)
    try:
        for n in (1, 7, 1031, 65536):
            for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.uint8):
                elem = torch.empty(0, dtype=dtype).element_size()
                inputs = [make(ctx, r, dtype, n=n, salt=n + 1) for r in range(w)]
                offset = 5 if n == 7 else 0
                buf[offset * elem:(offset + n) * elem].view(dtype).copy_(inputs[ctx.rank].to(d))
                out = torch.zeros(w * n, dtype=dtype, device=d)
                device.all_gather(dev, win, out, offset=offset)
                if not torch.equal(out.cpu(), torch.cat(inputs)):
                    fail(f"device all_gather n={n} dtype={dtype} offset={offset} wrong")
    finally:
        win.close()
        dev.close()
    sanity(ctx)


@case(nvlink=True)
def device_collectives_bad_input(ctx):
    d = ctx.device
    comm, dev, buf, win = _setup(1 << 16)
    other = torch.device("cuda", (d.index + 1) % torch.cuda.device_count())
    no_barriers = comm.create_dev_comm()
    try:
        out = torch.empty(1024, device=d)
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(dev, win, torch.empty(1 << 15, device=d)),
                      "do not fit")
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(dev, win, out, offset=1 << 14),
                      "do not fit")
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(dev, win, out, offset=-1), ">= 0")
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(dev, win, torch.empty(8, device=other)),
                      "device")
        expect_raises(nc.NcclInvalid,
                      lambda: device.all_reduce(dev, win, out.to(torch.int32), op=nc.AVG), "AVG")
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(dev, win, out, op=17), "operator")
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(no_barriers, win, out),
                      "lsa_barrier_count")
        expect_raises(nc.NcclInvalid,
                      lambda: device.all_gather(dev, win, torch.empty(ctx.world * 4 + 1, device=d)),
                      "multiple")
        sub = dist.new_group(list(range(ctx.world)))
        foreign = nc.get_communicator(sub).create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=1))
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(foreign, win, out),
                      "different communicators")
        dist.destroy_process_group(sub)
        closed = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=1))
        closed.close()
        expect_raises(nc.NcclInvalid, lambda: device.all_reduce(closed, win, out), "closed")
    finally:
        no_barriers.close()
        win.close()
        dev.close()
    # Nothing above was enqueued: the window and communicator still work.
    sanity(ctx)
