"""grow (ncclCommGrow, ncclCommGetUniqueId) on the lab's fake NCCL (no GPU):
the three roles nccl.core gives the call -- the leading existing rank with
the unique id, the other existing ranks without it, a new rank from a null
Communicator() -- and the refusals before NCCL is called; and grow_group,
the same grow for torch.distributed: its checks of the ranks and their
layout, and the plan its creator hands to the grown group alone.

Each test fails when the grow path breaks: an argument handed wrong to NCCL
(the id, the rank, the parent), a role mixed up, a refusal missing or naming
the wrong release, or a grown communicator with the wrong rank and size."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import _testing  # noqa: E402
from nccl_core_backend.unique_id import UniqueId  # noqa: E402

V2_29_2 = 22902


def test_unique_id_round_trips_as_bytes_and_pickle():
    uid = UniqueId(bytes(range(128)))
    assert bytes(uid) == uid.as_bytes == bytes(range(128))
    assert UniqueId.from_bytes(bytes(uid)) == uid
    assert pickle.loads(pickle.dumps(uid)) == uid
    with pytest.raises(nc.NcclInvalid, match="a UniqueId has 128 bytes, got 5"):
        UniqueId(b"12345")
    with pytest.raises(nc.NcclInvalid, match="made of bytes, got str"):
        UniqueId("x" * 128)
    assert nc.UniqueId is UniqueId and "UniqueId" in nc.__all__


def test_the_three_roles_reach_ncclCommGrow(fake):
    fake.set_version(V2_29_2)
    leader = _testing._fake_communicator(2, 0)
    other = _testing._fake_communicator(2, 1)
    fake.clear_calls()
    uid = leader.get_unique_id()
    assert isinstance(uid, UniqueId) and bytes(uid) == b"g" * 128
    assert fake.calls_to("CommGetUniqueId") == ["CommGetUniqueId"]
    grown = [leader.grow(3, uid), other.grow(3), nc.Communicator().grow(3, uid, rank=2)]
    assert fake.calls_to("CommGrow") == [
        "CommGrow(nranks=3, id=grow, rank=-1, parent=yes)",
        "CommGrow(nranks=3, id=none, rank=-1, parent=yes)",
        "CommGrow(nranks=3, id=grow, rank=2, parent=no)",
    ]
    assert [(g.rank, g.nranks) for g in grown] == [(0, 3), (1, 3), (2, 3)]
    assert leader.is_valid and other.is_valid  # the parents live on
    for c in grown + [leader, other]:
        c.abort()


def test_a_null_communicator_is_for_joining_only(fake):
    null = nc.Communicator()
    assert not null.is_valid
    with pytest.raises(nc.NcclInvalid, match=r"not initialized \(Communicator\(\)\)"):
        null.get_unique_id()
    with pytest.raises(nc.NcclInvalid, match="Existing ranks must use an initialized communicator"):
        null.grow(3)
    null.destroy()  # nothing to end: idempotent
    null.abort()


def test_bad_arguments_are_refused_before_nccl(fake):
    fake.set_version(V2_29_2)
    comm = _testing._fake_communicator(2, 0)
    uid = comm.get_unique_id()
    fake.clear_calls()
    cases = [
        (lambda: comm.grow(3, uid, rank=2), "New ranks must use a null communicator"),
        (lambda: comm.grow(2, uid), "grow to 2 ranks: the communicator has 2 already"),
        (lambda: comm.grow(0), "nranks must be positive"),
        (lambda: comm.grow(2**31), "nranks 2147483648 does not fit a 32-bit int"),
        (lambda: comm.grow(3, b"g" * 128), "unique_id must be a UniqueId"),
        (lambda: comm.grow(3, config=5), "config must be a nccl_core_backend.Options"),
        (lambda: nc.Communicator().grow(3, rank=2), "a new rank needs the unique_id"),
        (lambda: nc.Communicator().grow(3, uid, rank=3), "rank 3 is outside the grown communicator"),
        (lambda: nc.Communicator().grow(3, uid, rank=-1), "rank -1 is outside"),
        (lambda: nc.Communicator().grow("3", uid, rank=2), "nranks must be an int"),
    ]
    for call, message in cases:
        with pytest.raises(nc.NcclInvalid, match=message):
            call()
    assert fake.calls_to("CommGrow") == []
    comm.abort()


def test_an_nccl_without_grow_refuses_naming_2_29_2(fake):
    comm = _testing._fake_communicator(2, 0)
    fake.hide("ncclCommGrow")
    fake.hide("ncclCommGetUniqueId")
    with pytest.raises(nc.NcclUnsupported, match=r"get_unique_id needs NCCL 2\.29\.2"):
        comm.get_unique_id()
    with pytest.raises(nc.NcclUnsupported, match=r"Communicator\.grow needs NCCL 2\.29\.2"):
        comm.grow(3)
    with pytest.raises(nc.NcclUnsupported, match=r"Communicator\.grow needs NCCL 2\.29\.2"):
        nc.Communicator().grow(3, UniqueId(), rank=2)
    assert fake.calls_to("CommGrow") == [] and fake.calls_to("CommGetUniqueId") == []
    comm.abort()


def test_a_failing_grow_names_ncclCommGrow(fake):
    fake.set_version(V2_29_2)
    fake.fail("CommGrow", 5)
    fake.set_last_error("the grow id was used already")
    comm = _testing._fake_communicator(2, 1)
    with pytest.raises(nc.NcclError, match="ncclCommGrow") as info:
        comm.grow(3)
    assert "the grow id was used already" in str(info.value)
    with pytest.raises(nc.NcclError, match="ncclCommGrow failed"):
        nc.Communicator().grow(3, UniqueId(), rank=2)
    comm.abort()


# --- grow_group: the same grow for torch.distributed -----------------------------


def test_grow_group_refuses_an_nccl_without_grow_first(fake):
    fake.set_version(22809)
    needs = r"grow_group needs NCCL 2\.29\.2 or newer; the loaded NCCL is 2\.28\.9"
    with pytest.raises(nc.NcclUnsupported, match=needs):
        nc.grow_group(None, [0, 1])
    assert "grow_group" in nc.features()["grow"].api


def test_grow_group_needs_torch_distributed_and_a_group(fake):
    fake.set_version(V2_29_2)
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is initialized in this process")
    with pytest.raises(nc.NcclInvalid, match="torch.distributed is not initialized"):
        nc.grow_group(object(), [0, 1])


@pytest.mark.parametrize("ranks, message", [
    ([0, 0, 1], "a rank is listed twice"),
    ([0, 4], "rank 4 is outside the default group of 4"),
    ([-1, 0], "rank -1 is outside"),
    ([0, True], "ranks must be ints, got bool"),
    ([0, 1.0], "ranks must be ints, got float"),
    (3, "ranks must be a list of ints, got int"),
])
def test_grow_group_checks_its_ranks(ranks, message):
    from nccl_core_backend.grow import _ranks_of

    with pytest.raises(nc.NcclInvalid, match=message):
        _ranks_of(ranks, 4)


def test_grow_group_ranks_come_sorted():
    from nccl_core_backend.grow import _ranks_of

    assert _ranks_of(range(3, -1, -1), 4) == [0, 1, 2, 3]
    assert _ranks_of((2, 0), 4) == [0, 2]


@pytest.mark.parametrize("grown, members, problem", [
    ([0, 1, 2], [0, 1], None),
    ([0, 1, 3], [0, 1], None),
    ([1, 2, 3], [1, 2], None),
    ([0, 1], [0, 1], "a grow adds ranks: the group that grows has 2, ranks has 2"),
    ([0, 1, 2], [1, 2], "must be the first ranks of the grown group"),
    ([0, 2, 3], [0, 1], "must be the first ranks of the grown group"),
    ([0, 1, 2], [0, 2], "must be the first ranks of the grown group"),
])
def test_grow_group_layout_keeps_the_members_ranks(grown, members, problem):
    from nccl_core_backend.grow import _layout_problem

    got = _layout_problem(grown, members)
    assert (got is None) if problem is None else (problem in got), got


class _Opts:  # what torch hands a backend's creator
    def __init__(self, rank, size, ranks):
        import torch.distributed as dist

        self.store = dist.HashStore()
        self.group_rank, self.group_size = rank, size
        self.global_ranks_in_group = ranks
        self.group_id = "grown"
        from datetime import timedelta

        self.timeout = timedelta(seconds=30)


def test_the_creator_gives_a_grow_plan_to_its_group_alone(fake):
    """The creator hands grow_group's plan to the group of its ranks: a parent
    that cannot become the group's rank is refused there, so a plan ignored
    would raise nothing; another group's creation leaves the plan alone."""
    from nccl_core_backend import _registration

    fake.set_version(V2_29_2)
    parent = _testing._fake_communicator(2, 1)
    uid = b"g" * 128
    _registration.pending_grow = _registration.GrowPlan([0, 1, 2], parent, uid)
    try:
        with pytest.raises(ValueError, match="rank 1 of 2 cannot become rank 0 of 3"):
            _registration.create_backend(_Opts(0, 3, [0, 1, 2]), None)
        _registration.create_backend(_Opts(0, 3, [0, 1, 3]), None)  # not the plan's group
        assert _registration.pending_grow is not None
        _registration.create_backend(_Opts(1, 3, [0, 1, 2]), None)  # rank 1 keeps its rank
        assert _registration.pending_grow is None  # taken, as grow_group checks
    finally:
        _registration.pending_grow = None
    parent.abort()


def test_a_grow_source_is_checked_when_given(fake):
    import torch.distributed as dist

    fake.set_version(V2_29_2)
    backend = nc.ProcessGroupNcclCore(dist.HashStore(), 2, 3, nc.Options())
    with pytest.raises(ValueError, match="a unique id has 128 bytes, got 4"):
        backend._set_grow_source(None, b"abcd")
    big = _testing._fake_communicator(3, 2)
    with pytest.raises(ValueError, match="rank 2 of 3 cannot become rank 2 of 3"):
        backend._set_grow_source(big, b"g" * 128)
    big.abort()
    with pytest.raises(ValueError, match="has no live communicator"):
        backend._set_grow_source(big, b"g" * 128)
    backend._set_grow_source(None, b"g" * 128)  # a new rank: no parent


def _claims(*pairs):
    return [{"grown": g, "members": m} for g, m in pairs]


@pytest.mark.parametrize("claims, problem", [
    (_claims(([0, 1, 2], [0, 1]), ([0, 1, 2], [0, 1]), ([0, 1, 2], None)), None),
    ([{"error": "rank 5 is outside"}] + _claims(([0, 1], None)), "rank 0: rank 5 is outside"),
    (_claims(([0, 1, 2], [0, 1]), ([0, 1], [0, 1]), ([0, 1, 2], None)),
     "the ranks passed different rank lists"),
    (_claims(([0, 1], None), ([0, 1], None)), "no rank passed the group that grows"),
    (_claims(([0, 1, 2], [0]), ([0, 1, 2], [1]), ([0, 1, 2], None)),
     "the ranks passed different groups"),
    (_claims(([0, 1, 2], [0, 1]), ([0, 1, 2], None), ([0, 1, 2], None)),
     r"ranks \[1\] of the group that grows passed NON_GROUP_MEMBER"),
    (_claims(([0, 1, 2], None), ([0, 1, 2], [1, 2]), ([0, 1, 2], [1, 2])),
     "must be the first ranks of the grown group"),
])
def test_every_rank_judges_the_grow_from_every_ranks_claim(claims, problem):
    """One verdict from all ranks' claims, so that a rank whose arguments are
    wrong makes every rank refuse, not leave the others waiting."""
    import re

    from nccl_core_backend.grow import _claims_problem

    got = _claims_problem(claims)
    assert (got is None) if problem is None else bool(re.search(problem, got)), got


@pytest.fixture
def one_rank_world():
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is initialized in this process")
    dist.init_process_group("nccl_core", store=dist.HashStore(), rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


def test_grow_group_refuses_through_the_store_before_any_collective(fake, one_rank_world):
    """At one rank, with no GPU: each refusal comes from the published claims,
    before any communicator is made (there is none to make here)."""
    dist = one_rank_world
    fake.set_version(V2_29_2)
    cases = [
        (dist.GroupMember.NON_GROUP_MEMBER, [0], "no rank passed the group that grows"),
        (None, [0], "rank 0: name the group that grows"),
        (dist.group.WORLD, [0], "a grow adds ranks: the group that grows has 1, ranks has 1"),
        (dist.group.WORLD, [0, 1], "rank 0: rank 1 is outside the default group of 1"),
    ]
    for group, ranks, message in cases:
        with pytest.raises(nc.NcclInvalid, match=message):
            nc.grow_group(group, ranks)
