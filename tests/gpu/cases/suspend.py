"""Suspend and resume (ncclCommSuspend / ncclCommResume, NCCL 2.29.7): the
communicator's suspendable memory is released and reported as suspended,
collectives after resume() are right, and older NCCL refuses by name."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import expect_raises, fail, sanity
from tests.gpu.cases.native_rma import fresh_group
from tests.gpu.registry import case

SUSPEND_SINCE = (2, 29, 7)


def _checked_sum(ctx, group, n: int, salt: int) -> None:
    """An all_reduce of fresh random data on `group`, every element against
    the float64 sum of every rank's data."""
    data = [torch.randn(n, generator=ctx.gen(r, salt), dtype=torch.float64) for r in range(ctx.world)]
    t = data[ctx.rank].to(torch.float32).to(ctx.device)
    dist.all_reduce(t, group=group)
    want = sum(d.to(torch.float32).double() for d in data)
    err = (t.double().cpu() - want).abs().max().item()
    if err > 1e-4 * ctx.world:
        fail(f"all_reduce after resume: max error {err}")


@case(min_world=1)
def suspend_resume_round_trip(ctx):
    g, comm = fresh_group(ctx)
    backend = g._get_backend(ctx.device)
    if nc.nccl_version() < SUSPEND_SINCE:
        # Refused by name, before NCCL is called; the group stays usable.
        expect_raises(nc.NcclUnsupported, comm.suspend, "2.29.7")
        expect_raises(nc.NcclUnsupported, comm.resume, "2.29.7")
        expect_raises(nc.NcclUnsupported, backend.suspend, "2.29.7")
        sanity(ctx, g)
        return
    T = nc.NcclCommMemStat
    expect_raises(nc.NcclInvalid, lambda: comm.suspend(2), "suspend flags")
    for rnd, suspender in enumerate((comm, backend)):
        _checked_sum(ctx, g, 1 << 20, salt=rnd)  # connections exist: suspendable memory
        torch.cuda.synchronize()
        dist.barrier(group=g)
        before = comm.get_mem_stat(T.GPU_MEM_SUSPEND)
        if comm.get_mem_stat(T.GPU_MEM_SUSPENDED) != 0:
            fail(f"round {rnd}: suspended before suspend()")
        suspender.suspend()
        if comm.get_mem_stat(T.GPU_MEM_SUSPENDED) != 1:
            fail(f"round {rnd}: GPU_MEM_SUSPENDED is not 1 after suspend() ({before} suspendable bytes)")
        suspender.resume()
        if comm.get_mem_stat(T.GPU_MEM_SUSPENDED) != 0:
            fail(f"round {rnd}: GPU_MEM_SUSPENDED is not 0 after resume()")
        # Collectives after resume are right, on fresh data and odd sizes.
        for k, n in enumerate((7, 1031, 3 << 20)):
            _checked_sum(ctx, g, n, salt=100 * (rnd + 1) + k)
    stats = backend.memory_stats()
    if stats["gpu_mem_suspended"] != 0:
        fail(f"backend.memory_stats() after resume: {stats}")
    dist.destroy_process_group(g)
