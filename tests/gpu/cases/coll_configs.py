"""Per-call collective configs (NCCLCollConfig, NCCL 2.31.2+) on real NCCL:
config= on every raw collective and coll_config(...) around dist.* calls.

Each result is checked against a float64 CPU reference; that NCCL acted on
the config is seen where it shows: an algorithm selection it cannot satisfy
is refused when forced and falls back when not, and a launch completion
event is recorded behind a busy stream.  A configured call never takes
nccl_core's fast path."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from nccl_core_backend.coll_config import NCCLCollConfig, VendorOption, coll_config
from tests.gpu.cases.common import expect_raises, fail, sanity
from tests.gpu.cases.native_rma import fresh_group, need, payload
from tests.gpu.registry import case

N = 4096  # elements per rank block
TUNED = dict(min_ctas=1, max_ctas=2, cta_policy=nc.CTAPolicy.DEFAULT, user_profiler_tag=0x5EED,
             vendor_options=(VendorOption(0x123456, 1, int_value=7),))


def blocks(ctx, salt):
    """Every rank's random float32 block of N elements (CPU, rebuildable anywhere)."""
    return [payload(ctx, r, N, torch.float32, salt) for r in range(ctx.world)]


def close(got, want, what):
    if not torch.allclose(got.double().cpu(), want.double(), rtol=1e-5, atol=1e-4):
        worst = (got.double().cpu() - want.double()).abs().max().item()
        fail(f"{what}: off by up to {worst}")


def fast_calls():
    return nc.get_backend()._fast_path_calls()


@case(min_world=1)
def raw_collectives_take_a_config(ctx):
    """Each raw collective with config= gives the reference's result, through
    NCCL (the fast path's count stays)."""
    need((2, 31, 2), "NCCLCollConfig")
    comm = nc.get_communicator()
    config = NCCLCollConfig(**TUNED)
    before = fast_calls()
    w, r, dev = ctx.world, ctx.rank, ctx.device
    mine = blocks(ctx, 11)
    total = sum(b.double() for b in mine)

    x = mine[r].to(dev)
    out = torch.empty_like(x)
    comm.allreduce(x, out, nc.SUM, config=config)
    close(out, total, "allreduce")

    comm.reduce(x, out, nc.SUM, root=0, config=config)
    if r == 0:
        close(out, total, "reduce")

    y = mine[0].to(dev) if r == 0 else torch.zeros(N, device=dev)
    comm.broadcast(y, y, 0, config=config)
    close(y, mine[0], "broadcast")

    gathered = torch.empty(w * N, device=dev)
    comm.allgather(x, gathered, config=config)
    close(gathered, torch.cat(mine), "allgather")

    gathered.zero_()
    comm.gather(x, gathered, root=0, config=config)
    if r == 0:
        close(gathered, torch.cat(mine), "gather")

    rows = blocks(ctx, 12)
    send = torch.cat([payload(ctx, r, N, torch.float32, 100 + p) for p in range(w)]).to(dev)
    want_rs = sum(payload(ctx, q, N, torch.float32, 100 + r).double() for q in range(w))
    part = torch.empty(N, device=dev)
    comm.reduce_scatter(send, part, nc.SUM, config=config)
    close(part, want_rs, "reduce_scatter")

    swapped = torch.empty(w * N, device=dev)
    comm.alltoall(send, swapped, config=config)
    want_a2a = torch.cat([payload(ctx, q, N, torch.float32, 100 + r) for q in range(w)])
    close(swapped, want_a2a, "alltoall")

    src = torch.cat(rows).to(dev) if r == 0 else None
    piece = torch.empty(N, device=dev)
    comm.scatter(src, piece, 0, config=config)
    close(piece, rows[r], "scatter")

    torch.cuda.synchronize()
    if fast_calls() != before:
        fail(f"configured calls took the fast path ({fast_calls() - before} calls)")
    sanity(ctx)


@case(min_world=2)
def forced_selection_nccl_cannot_meet_is_refused(ctx):
    """alg_selection="nvls" with NVLS off: refused by NCCL when forced (the
    call names ncclAllReduceConfig), NCCL's own choice when not."""
    need((2, 31, 2), "NCCLCollConfig")
    group, comm = fresh_group(ctx)
    x = payload(ctx, ctx.rank, N, torch.float32, 21).to(ctx.device)
    want = sum(payload(ctx, q, N, torch.float32, 21).double() for q in range(ctx.world))
    out = torch.empty_like(x)
    comm.allreduce(x, out, nc.SUM, config=NCCLCollConfig(alg_selection="nvls",
                                                          force_alg_selection=False))
    close(out, want, "allreduce falling back from nvls")
    expect_raises(nc.NcclError,
                  lambda: comm.allreduce(x, out, nc.SUM,
                                         config=NCCLCollConfig(alg_selection="nvls")),
                  "ncclAllReduceConfig")
    torch.cuda.synchronize()
    dist.destroy_process_group(group)
    sanity(ctx)


@case(min_world=2)
def launch_completion_event_follows_the_kernel(ctx):
    """NCCL records the config's event when the kernel has launched: behind a
    busy stream it is not complete yet.  (Two ranks or more: one rank's call
    may be a copy with no kernel of NCCL's.)"""
    need((2, 32, 3), "NCCLCollConfig.launch_completion_event")
    comm = nc.get_communicator()
    stream = torch.cuda.current_stream()
    event = torch.cuda.Event()
    event.record(stream)  # torch makes the CUDA event at its first record
    torch.cuda.synchronize()
    x = payload(ctx, ctx.rank, N, torch.float32, 31).to(ctx.device)
    out = torch.empty_like(x)
    torch.cuda._sleep(200_000_000)  # ~0.1 s of a busy stream
    comm.allreduce(x, out, nc.SUM, stream=stream,
                   config=NCCLCollConfig(launch_completion_event=event))
    if event.query():
        fail("the launch completion event was complete before the kernel could launch")
    torch.cuda.synchronize()
    if not event.query():
        fail("the launch completion event never completed")
    close(out, sum(payload(ctx, q, N, torch.float32, 31).double() for q in range(ctx.world)),
          "allreduce with an event")
    sanity(ctx)


@case(min_world=1)
def dist_collectives_take_the_blocks_config(ctx):
    """Inside coll_config(...) the group's collectives run through NCCL with
    the config and give the reference's results; the block gives back the
    group's earlier config (none) when it ends, an error included."""
    need((2, 31, 2), "NCCLCollConfig")
    backend = nc.get_backend()
    w, r, dev = ctx.world, ctx.rank, ctx.device
    mine = blocks(ctx, 41)
    before = fast_calls()
    with coll_config(NCCLCollConfig(**TUNED)):
        x = mine[r].to(dev)
        dist.all_reduce(x)
        close(x, sum(b.double() for b in mine), "dist.all_reduce")
        y = mine[0].to(dev) if r == 0 else torch.zeros(N, device=dev)
        dist.broadcast(y, 0)
        close(y, mine[0], "dist.broadcast")
        g = torch.empty(w * N, device=dev)
        dist.all_gather_into_tensor(g, mine[r].to(dev))
        close(g, torch.cat(mine), "dist.all_gather_into_tensor")
        send = torch.cat([payload(ctx, r, N, torch.float32, 200 + p) for p in range(w)]).to(dev)
        part = torch.empty(N, device=dev)
        dist.reduce_scatter_tensor(part, send)
        close(part, sum(payload(ctx, q, N, torch.float32, 200 + r).double() for q in range(w)),
              "dist.reduce_scatter_tensor")
        torch.cuda.synchronize()
    if fast_calls() != before:
        fail(f"dist calls in the block took the fast path ({fast_calls() - before} calls)")
    if backend._swap_coll_config(None) is not None:
        fail("the block left its config on the group")
    expect_raises(nc.NcclInvalid, lambda: coll_config({"max_ctas": 2}).__enter__(),
                  "config must be an NCCLCollConfig")
    if backend._swap_coll_config(None) is not None:
        fail("a refused block left a config on the group")
    sanity(ctx)


@case(min_world=2)
def dist_forced_selection_is_a_dist_backend_error(ctx):
    """A forced selection NCCL cannot meet, given to a group's all_reduce,
    ends as DistBackendError naming the call; outside the block the group's
    calls are as before."""
    need((2, 31, 2), "NCCLCollConfig")
    group, _ = fresh_group(ctx)
    x = payload(ctx, ctx.rank, N, torch.float32, 51).to(ctx.device)
    with coll_config(NCCLCollConfig(alg_selection="nvls"), group=group):
        expect_raises(dist.DistBackendError, lambda: dist.all_reduce(x.clone(), group=group),
                      "ncclAllReduceConfig")
    torch.cuda.synchronize()
    dist.destroy_process_group(group)
    sanity(ctx)
