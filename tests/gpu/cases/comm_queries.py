"""The communicator's own queries and ends of work (nccl4py 0.6's calls) on
real NCCL: teams against the layout of the ranks, a revoked communicator
destroyed while the group goes on, a revoked group's pending work failing,
a communicator grown by a new rank, a simulated group that launches nothing,
and NCCL's parameters read back."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import expect_raises, fail, sanity
from tests.gpu.cases.native_rma import fresh_group, need, payload
from tests.gpu.registry import case


@case(min_world=1)
def teams_follow_the_ranks_layout(ctx):
    """team_world is every rank in order; the LSA and rail teams tile the world
    (on simulated hosts each rank is its own LSA team); each team rank maps to
    a distinct world rank, this rank's to this rank."""
    comm = nc.get_communicator()
    world = comm.team_world
    if world != nc.NCCLTeam(ctx.world, ctx.rank, 1):
        fail(f"team_world {world}")
    if [comm.team_rank_to_world(world, r) for r in range(ctx.world)] != list(range(ctx.world)):
        fail("team_rank_to_world of team_world is not the identity")
    lsa, rail = comm.team_lsa, comm.team_rail
    if lsa.n_ranks * rail.n_ranks != ctx.world:
        fail(f"LSA team {lsa} and rail team {rail} do not tile {ctx.world} ranks")
    for team in (lsa, rail):
        mapped = [comm.team_rank_to_world(team, r) for r in range(team.n_ranks)]
        if len(set(mapped)) != team.n_ranks or mapped[team.rank] != ctx.rank:
            fail(f"team {team} maps to world ranks {mapped}")
    if comm.team_rank_to_lsa(lsa, lsa.rank) != lsa.rank:
        fail("team_rank_to_lsa of this rank in its LSA team")
    expect_raises(nc.NcclInvalid, lambda: comm.team_rank_to_world(world, ctx.world), "outside the team")
    if nc.nccl_version() >= (2, 29, 7) and comm.n_lsa_teams * lsa.n_ranks != ctx.world:
        fail(f"{comm.n_lsa_teams} LSA teams of {lsa.n_ranks} ranks for {ctx.world} ranks")
    if nc.nccl_version() < (2, 31, 2):
        expect_raises(nc.NcclUnsupported, lambda: comm.team_cft(), "2.31.2")
    sanity(ctx)


@case(min_world=1)
def revoked_communicator_is_destroyed_and_the_world_goes_on(ctx):
    """revoke() on a fresh group's communicator: finalize() is refused, the
    group's teardown ends it, and the world group still computes right."""
    need((2, 28, 7), "revoke")
    g, comm = fresh_group(ctx)
    x = payload(ctx, ctx.rank, 4096, torch.float32, 1).to(ctx.device)
    dist.all_reduce(x, group=g)
    torch.cuda.synchronize()
    dist.barrier()
    comm.revoke()
    expect_raises(nc.NcclInvalid, comm.finalize, "after revoke")
    if not comm.is_valid:
        fail("a revoked communicator is no longer valid before destroy")
    dist.destroy_process_group(g)
    if comm.is_valid:
        fail("the revoked communicator outlived its group")
    sanity(ctx)


@case(min_world=2)
def revoked_group_fails_its_pending_work(ctx):
    """A group's all_reduce that rank 0 alone issued stays pending until the
    group is revoked (get_backend(group).revoke()); then it ends with
    DistBackendError, so does every later call on the group, and the world
    group still computes right.  Several rounds, each on a fresh group: the
    watchdog sweeps while NCCL revokes, and a work it saw end before it was
    failed would pass for a success."""
    need((2, 28, 7), "revoke")
    for _ in range(4):
        g = fresh_group(ctx)[0]
        x = payload(ctx, ctx.rank, 4096, torch.float32, 3).to(ctx.device)
        dist.all_reduce(x, group=g)  # connected
        torch.cuda.synchronize()
        # The barrier below runs while rank 0's lone all_reduce spins on the
        # GPU: its kernels load now, as a module load waits for the GPU's
        # running kernels (CUDA's lazy loading) and would wait forever then.
        dist.barrier()
        work = dist.all_reduce(x, group=g, async_op=True) if ctx.rank == 0 else None
        dist.barrier()
        if work is not None and work.is_completed():
            fail("an all_reduce no peer joined completed")
        nc.get_backend(g).revoke()
        if work is not None:
            expect_raises(dist.DistBackendError, work.wait, "revoked")
        expect_raises(dist.DistBackendError, lambda: dist.all_reduce(x, group=g), "revoked")
        dist.destroy_process_group(g)
    sanity(ctx)


@case(min_world=3)
def grow_adds_ranks_that_sum_right(ctx):
    """A communicator of ranks 0 and 1 grows to the world: rank 0 leads with
    its unique id, rank 1 follows, the others join from Communicator(); each
    keeps its rank, and the grown communicator's all_reduce sums every rank's
    data."""
    need((2, 29, 2), "grow")
    w = ctx.world
    pair = dist.new_group([0, 1], backend="nccl_core")
    small = nc.get_communicator(pair) if ctx.rank < 2 else None  # made by both members first
    shared = [bytes(small.get_unique_id()) if ctx.rank == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    uid = nc.UniqueId.from_bytes(shared[0])
    if ctx.rank == 0:
        grown = small.grow(w, uid)
    elif ctx.rank == 1:
        grown = small.grow(w)
    else:
        grown = nc.Communicator().grow(w, uid, rank=ctx.rank)
    if (grown.rank, grown.nranks) != (ctx.rank, w):
        fail(f"grown communicator: rank {grown.rank} of {grown.nranks}")
    x = payload(ctx, ctx.rank, 4096, torch.float32, 61).to(ctx.device)
    grown.allreduce(x, x, nc.SUM, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    want = sum(payload(ctx, r, 4096, torch.float32, 61).double() for r in range(w))
    if not torch.allclose(x.double().cpu(), want, rtol=1e-5, atol=1e-4):
        fail("the grown communicator's all_reduce summed wrong")
    grown.destroy()
    if ctx.rank < 2:
        dist.destroy_process_group(pair)
    sanity(ctx)


@case(min_world=3)
def grow_group_gives_a_dist_group_with_the_new_ranks(ctx):
    """nc.grow_group grows the group of ranks 0 and 1 into a dist group of
    every rank but the last (world 3: all three), whose all_reduce sums the
    members' data; the small group still works; a group whose ranks do not
    come first is refused on every rank alike, before any collective."""
    need((2, 29, 2), "grow")
    w, me = ctx.world, ctx.rank
    pair = dist.new_group([0, 1], backend="nccl_core")
    ranks = list(range(w if w == 3 else w - 1))
    grown = nc.grow_group(pair, ranks)
    if me in ranks:
        if (dist.get_rank(grown), dist.get_world_size(grown)) != (me, len(ranks)):
            fail(f"grown group: rank {dist.get_rank(grown)} of {dist.get_world_size(grown)}")
        comm = nc.get_communicator(grown)
        if (comm.rank, comm.nranks) != (me, len(ranks)):
            fail(f"grown communicator: rank {comm.rank} of {comm.nranks}")
        x = payload(ctx, me, 4096, torch.float32, 71).to(ctx.device)
        dist.all_reduce(x, group=grown)
        want = sum(payload(ctx, r, 4096, torch.float32, 71).double() for r in ranks)
        if not torch.allclose(x.double().cpu(), want, rtol=1e-5, atol=1e-4):
            fail("the grown group's all_reduce summed wrong")
    elif grown is not dist.GroupMember.NON_GROUP_MEMBER:
        fail("a rank left out of the grown group got a group")
    if me < 2:
        y = payload(ctx, me, 1024, torch.float32, 72).to(ctx.device)
        dist.all_reduce(y, group=pair)
        want = sum(payload(ctx, r, 1024, torch.float32, 72).double() for r in (0, 1))
        if not torch.allclose(y.double().cpu(), want, rtol=1e-5, atol=1e-4):
            fail("the group that grew no longer sums right")
    late = dist.new_group([1, 2], backend="nccl_core")
    expect_raises(nc.NcclInvalid, lambda: nc.grow_group(late, [0, 1, 2]),
                  "must be the first ranks of the grown group")
    torch.cuda.synchronize()
    for g in (grown, pair, late):
        if g is not dist.GroupMember.NON_GROUP_MEMBER:
            dist.destroy_process_group(g)
    sanity(ctx)


@case(min_world=1)
def simulated_group_launches_nothing(ctx):
    """group_end(simulate=True) gives NCCL's estimate and leaves the buffer as
    it was; the same group then runs for real."""
    comm = nc.get_communicator()
    x = payload(ctx, ctx.rank, 1 << 20, torch.float32, 2).to(ctx.device)
    before = x.clone()
    nc.group_start()
    comm.allreduce(x, x, nc.SUM)
    info = nc.group_end(simulate=True)
    torch.cuda.synchronize()
    # One rank has no algorithm to model: NCCL leaves the estimate at its
    # undefined value, NCCL_UNDEF_FLOAT (-1.0).
    expected = (lambda t: t > 0) if ctx.world > 1 else (lambda t: t == -1.0)
    if not isinstance(info, nc.GroupSimInfo) or not expected(info.estimated_time):
        fail(f"simulated group at {ctx.world} ranks gave {info}")
    if not torch.equal(x, before):
        fail("a simulated all_reduce changed its buffer")
    with nc.group():
        comm.allreduce(x, x, nc.SUM)
    torch.cuda.synchronize()
    want = sum(payload(ctx, r, 1 << 20, torch.float32, 2).double() for r in range(ctx.world))
    if not torch.allclose(x.double().cpu(), want, rtol=1e-5, atol=1e-4):
        fail("the group after the simulation summed wrong")
    sanity(ctx)


@case(min_world=1, max_world=2)
def params_read_nccls_parameters(ctx):
    need((2, 30, 4), "params")
    keys = list(nc.params)
    if not keys or any(not isinstance(nc.params[k], str) for k in keys):
        fail(f"params: {len(keys)} keys, values {[type(nc.params[k]) for k in keys[:3]]}")
    sanity(ctx)
