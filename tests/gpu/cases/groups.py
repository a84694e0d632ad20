"""Subgroups, splits, sequence numbers, timeouts, group lifecycle and the
settings every rank of a group must share."""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import expect_raises, fail, sanity
from tests.gpu.registry import case


def _backend(group, ctx):
    return group._get_backend(ctx.device)


@case(min_world=1)
def registration_and_backend_identity(ctx):
    assert dist.get_backend() == "cpu:gloo,cuda:nccl_core" or "nccl_core" in dist.get_backend()
    b = _backend(dist.group.WORLD, ctx)
    import nccl_core_backend

    assert isinstance(b, nccl_core_backend.ProcessGroupNcclCore)
    assert b.supports_splitting and b.supports_coalescing
    assert b._has_communicator() != ctx.lazy or ctx.lazy, "eager launch must have a communicator"
    if not ctx.lazy:
        assert b._has_communicator(), "device_id= must create the communicator eagerly"
    sanity(ctx)
    # CPU tensors go to gloo in the mixed default group.
    c = torch.ones(3) * (ctx.rank + 1)
    dist.all_reduce(c)
    assert torch.all(c == ctx.world * (ctx.world + 1) / 2)


@case()
def new_group_subsets(ctx):
    w = ctx.world
    pairs = [[0, 1]] + ([[1, 3], [0, 2, 3]] if w >= 4 else [])
    for ranks in pairs:
        g = dist.new_group(ranks=ranks, backend="nccl_core")
        if ctx.rank in ranks:
            sanity(ctx, g)
            x = torch.full((5,), float(ctx.rank), device=ctx.device)
            dist.broadcast(x, src=ranks[-1], group=g)
            assert torch.all(x == ranks[-1]), "subgroup broadcast wrong"
            out = [torch.empty(5, device=ctx.device) for _ in ranks]
            dist.all_gather(out, torch.full((5,), float(ctx.rank), device=ctx.device), group=g)
            assert [int(o[0]) for o in out] == ranks, "subgroup all_gather order wrong"
        dist.destroy_process_group(g) if ctx.rank in ranks else None
    sanity(ctx)


@case()
def new_subgroups(ctx):
    sub, _ = dist.new_subgroups(group_size=2)
    sanity(ctx, sub)
    sanity(ctx)


# torch splits only from a default group bound to a device (device_id=).
@case(timeout=120)
def subgroups_of_other_backends(ctx):
    # torch 2.11 split every new group from an eager default group's backend:
    # new_group(backend="nccl") raised a TypeError, and the ranks outside a
    # gloo subgroup ran a no-color split its members never joined (a hang at
    # the next default-group call).  nccl_core_backend/_split_rule.py.
    every = dist.new_group(list(range(ctx.world)), backend="nccl")
    x = torch.full((7,), float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(x, group=every)
    assert torch.all(x.cpu() == ctx.world * (ctx.world + 1) / 2), "all_reduce on a nccl group: wrong sum"
    first_gloo = dist.new_group([0], backend="gloo")
    first_nccl = dist.new_group([0], backend="nccl")
    if ctx.rank == 0:
        c = torch.ones(3)
        dist.all_reduce(c, group=first_gloo)
        y = torch.ones(3, device=ctx.device)
        dist.all_reduce(y, group=first_nccl)
        assert torch.all(c == 1) and torch.all(y.cpu() == 1), "one-rank groups: wrong sum"
    sanity(ctx)  # the default group: a stray no-color split would hang it
    for g in (every, first_gloo, first_nccl):
        if g is not dist.GroupMember.NON_GROUP_MEMBER:
            dist.destroy_process_group(g)


@case(mode="eager")
def split_group_and_split_of_split(ctx):
    w = ctx.world
    split_group = getattr(dist, "split_group", None) or dist.distributed_c10d.split_group
    split_ranks = [[r for r in range(w) if r % 2 == 0], [r for r in range(w) if r % 2 == 1]]
    g = split_group(split_ranks=split_ranks, timeout=datetime.timedelta(seconds=60))
    assert g is not None
    mine = split_ranks[ctx.rank % 2]
    assert dist.get_world_size(g) == len(mine)
    assert dist.get_rank(g) == mine.index(ctx.rank)
    sanity(ctx, g)
    # Split of a split.
    if w >= 4:
        g2 = split_group(parent_pg=g, split_ranks=[[0], [1]])
        assert dist.get_world_size(g2) == 1
        sanity(ctx, g2)
    sanity(ctx)


@case(min_world=1)
def sequence_numbers_count_collectives(ctx):
    # As backend nccl's: collectives only, so the number is the same on every
    # rank even where the ranks made different sends and receives.
    b = _backend(dist.group.WORLD, ctx)
    before = b._get_sequence_number_for_group()
    t = torch.ones(4, device=ctx.device)
    for _ in range(5):
        dist.all_reduce(t)
    after = b._get_sequence_number_for_group()
    assert after - before == 5, f"sequence advanced by {after - before}, expected 5"
    if ctx.world > 1:
        # Rank 0 sends twice, rank 1 receives twice, the others do nothing.
        x = torch.ones(4, device=ctx.device)
        for _ in range(2):
            if ctx.rank == 0:
                dist.send(x, dst=1)
            elif ctx.rank == 1:
                dist.recv(x, src=0)
        if b._get_sequence_number_for_group() != after:
            fail(f"send/recv moved the sequence number from {after} to "
                 f"{b._get_sequence_number_for_group()}")
        numbers = [None] * ctx.world
        dist.all_gather_object(numbers, after)
        if len(set(numbers)) != 1:
            fail(f"ranks' sequence numbers differ: {numbers}")
    b._set_sequence_number_for_group()  # a no-op that must exist


@case(min_world=1)
def abort_then_ops_raise_dist_backend_error(ctx):
    g = dist.new_group(backend="nccl_core")
    sanity(ctx, g)
    # Every rank is done with g before one aborts it: a rank whose part of
    # the ring is done can abort while its last send still sits in NCCL's
    # socket proxy, and the peer then sees "connection closed" (NCCL 2.30.7).
    sanity(ctx)
    b = _backend(g, ctx)
    b.abort()
    t = torch.ones(4, device=ctx.device)
    expect_raises(dist.DistBackendError, lambda: b.allreduce([t]).wait(), "abort")
    sanity(ctx)  # the parent is unaffected


@case()
def skipped_collective_times_out_cleanly(ctx):
    # One rank never joins: the others get DistBackendError within the timeout.
    g = dist.new_group(backend="nccl_core", timeout=datetime.timedelta(seconds=4))
    sanity(ctx, g)
    b = _backend(g, ctx)
    if ctx.rank == 0:
        import time

        t0 = time.time()
        t = torch.ones(1 << 20, device=ctx.device)

        def wait_until_failed():
            # The first NCCL call of a kind connects to its peers on the host,
            # so the timeout may end the call itself or, later, its work.
            work = dist.all_reduce(t, group=g, async_op=True)
            while not work.is_completed():
                time.sleep(0.05)
                if time.time() - t0 > 30:
                    raise AssertionError("no timeout after 30 s")
            work.wait()
        e = expect_raises(dist.DistBackendError, wait_until_failed, "timed out")
        assert time.time() - t0 < 4 + 10, f"took {time.time() - t0:.1f}s"
        expect_raises(dist.DistBackendError, lambda: dist.all_reduce(t, group=g))
        del e
    sanity(ctx)


@case(mode="lazy")
def missing_rank_at_init_times_out(ctx):
    # Lazy init: rank 1 never creates its communicator; rank 0's init must
    # fail within the group's timeout instead of hanging.
    import time

    g = dist.new_group(backend="nccl_core", timeout=datetime.timedelta(seconds=4))
    if ctx.rank == 0:
        t0 = time.time()
        t = torch.ones(4, device=ctx.device)
        expect_raises(dist.DistBackendError, lambda: dist.all_reduce(t, group=g))
        assert time.time() - t0 < 4 + 10, f"took {time.time() - t0:.1f}s"
    sanity(ctx)


@case(min_world=1)
def set_timeout_and_options(ctx):
    import nccl_core_backend

    opts = nccl_core_backend.Options()
    opts.is_high_priority_stream = True
    g = dist.new_group(backend="nccl_core", pg_options=opts)
    b = _backend(g, ctx)
    assert b.nccl_core_options.is_high_priority_stream
    b.set_timeout(datetime.timedelta(seconds=123))
    assert b.options._timeout == datetime.timedelta(seconds=123)
    sanity(ctx, g)
    dist.destroy_process_group(g)


@case()
def fast_path_settings_that_differ_between_ranks_are_refused(ctx):
    """Each rank chooses every call's path from its group's settings alone, so
    ranks whose settings differ would split between our kernels and NCCL's
    and wait until the timeout: the group is refused where it gets its
    communicator, with a ValueError on every rank."""
    opts = nc.Options()
    opts.fast_path_max_bytes = (64 << 10) if ctx.rank == 0 else (32 << 10)

    def make_and_use():
        g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
        dist.all_reduce(torch.ones(4, device=ctx.device), group=g)

    expect_raises(ValueError, make_and_use, match="fast-path settings differ")
    sanity(ctx)
