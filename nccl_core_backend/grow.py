"""A process group grown from a smaller one: ``grow_group``, ncclCommGrow
(NCCL >= 2.29.2) through ``torch.distributed``.

torch has no call that adds ranks to a group, so the grown group is a new
``ProcessGroup``, made by ``dist.new_group`` over the larger rank list, whose
communicator NCCL grows from the smaller group's instead of creating one from
nothing: the smaller group's members keep their ranks and connections, and the
new ranks join them.  The smaller group stays as it was.

Before any collective, every rank publishes what it was given in the default
group's store and checks every rank's, so a refused grow is refused on every
rank alike; then the smaller group's rank 0 publishes the grow's unique id.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Iterable

import torch.distributed as dist
from torch.distributed.constants import default_pg_timeout

from nccl_core_backend.errors import NcclError, NcclInvalid, NcclUnsupported

__all__ = ["grow_group"]

_calls = 0  # grow_group calls so far; every rank makes the same ones, in order


def _ranks_of(ranks: Iterable[int], world: int) -> list[int]:
    try:
        given = list(ranks)
    except TypeError:
        raise NcclInvalid("grow_group: ranks must be a list of ints, "
                          f"got {type(ranks).__name__}") from None
    for r in given:
        if isinstance(r, bool) or not isinstance(r, int):
            raise NcclInvalid(f"grow_group: ranks must be ints, got {type(r).__name__}")
        if not 0 <= r < world:
            raise NcclInvalid(f"grow_group: rank {r} is outside the default group of {world}")
    if len(set(given)) != len(given):
        raise NcclInvalid("grow_group: a rank is listed twice in ranks; list each once")
    return sorted(given)


def _layout_problem(grown: list[int], members: list[int]) -> str | None:
    """Why the group of ``members`` cannot grow into ``grown``, or None."""
    if len(members) >= len(grown):
        return (f"a grow adds ranks: the group that grows has {len(members)}, "
                f"ranks has {len(grown)}")
    if grown[:len(members)] != members:
        return (f"the group that grows (global ranks {members}) must be the first ranks of "
                f"the grown group ({grown}): NCCL keeps its members' ranks and numbers the "
                f"new ranks after them")
    return None


def _claim(group: Any, ranks: Iterable[int], me: int, world: int) -> dict:
    """What this rank brings to the grow: the grown ranks, and the smaller
    group's ranks if it is a member; or what is wrong with its arguments."""
    from torch.distributed import distributed_c10d as c10d

    from nccl_core_backend.communicator import get_backend

    try:
        grown = _ranks_of(ranks, world)
        if group is None:
            raise NcclInvalid("grow_group: name the group that grows (None would be the "
                              "default group, which holds every rank already)")
        members = None
        if group is not c10d.GroupMember.NON_GROUP_MEMBER:
            get_backend(group)  # NcclInvalid unless nccl_core's
            members = dist.get_process_group_ranks(group)
            if me not in members:
                raise NcclInvalid("grow_group: this rank is not in the group it was given")
    except NcclInvalid as e:
        return {"error": str(e).removeprefix("grow_group: ")}
    return {"grown": grown, "members": members}


def _claims_problem(claims: list[dict]) -> str | None:
    """Why the world's claims make no grow, or None; the same on every rank."""
    for rank, claim in enumerate(claims):
        if "error" in claim:
            return f"rank {rank}: {claim['error']}"
    if len({tuple(c["grown"]) for c in claims}) > 1:
        return "the ranks passed different rank lists; every rank passes the same ranks"
    groups = {tuple(c["members"]) for c in claims if c["members"] is not None}
    if not groups:
        return ("no rank passed the group that grows: its members pass the group, the other "
                "ranks GroupMember.NON_GROUP_MEMBER")
    if len(groups) > 1:
        return f"the ranks passed different groups: {sorted(groups)}"
    members = list(groups.pop())
    missing = [r for r in members if claims[r]["members"] is None]
    if missing:
        return f"ranks {missing} of the group that grows passed NON_GROUP_MEMBER"
    return _layout_problem(claims[0]["grown"], members)


def grow_group(
    group: Any,
    ranks: Iterable[int],
    *,
    timeout: datetime.timedelta | None = None,
    pg_options: Any = None,
) -> Any:
    """A new nccl_core group over ``ranks`` (global ranks), whose communicator
    NCCL grows from ``group``'s (``ncclCommGrow``).

    Every process of the default group calls it, as with ``dist.new_group``,
    with the same ``ranks``; ``group`` is what each process holds for the
    group that grows: the group on its members, ``GroupMember.NON_GROUP_MEMBER``
    on the others.  The group's ranks must be the smallest of ``ranks``, so
    that its members keep their ranks (rank ``i`` of ``group`` is rank ``i`` of
    the grown group) and the new ranks follow.  The grown group has its
    communicator when the call returns, on the new ranks' current devices;
    ``group`` is unchanged and stays usable.  Non-members of the grown group get
    ``GroupMember.NON_GROUP_MEMBER``.

    Every rank publishes what it was given in the default group's store and
    reads every other rank's, so a refusal is the same on every rank and comes
    before any collective.

    Raises NcclUnsupported where the loaded NCCL has no ncclCommGrow (2.29.2),
    and NcclInvalid, on every rank, for arguments of any rank that make no
    grow: ``group`` None or not nccl_core's, ranks that are not distinct ints of
    the default group or differ between ranks, no rank or more than one group
    passed as the one that grows, or a layout NCCL cannot grow into (the
    group's ranks not first, or no rank added).
    """
    global _calls
    from torch.distributed import distributed_c10d as c10d

    from nccl_core_backend import _registration
    from nccl_core_backend.communicator import get_communicator
    from nccl_core_backend.compatibility import features

    feature = features()["grow"]
    if feature.status == "unsupported":
        from nccl_core_backend import nccl_version

        loaded = ".".join(map(str, nccl_version()))
        raise NcclUnsupported(f"grow_group needs NCCL {feature.needs} or newer; "
                              f"the loaded NCCL is {loaded}")
    if not dist.is_initialized():
        raise NcclInvalid("torch.distributed is not initialized; call init_process_group")
    me, world = dist.get_rank(), dist.get_world_size()
    key = f"nccl_core/grow_group/{_calls}"
    _calls += 1
    store = c10d._get_default_store()
    wait = timeout or default_pg_timeout
    store.set(f"{key}/{me}", json.dumps(_claim(group, ranks, me, world)))
    store.wait([f"{key}/{r}" for r in range(world)], wait)
    claims = [json.loads(store.get(f"{key}/{r}")) for r in range(world)]
    problem = _claims_problem(claims)
    if problem:
        raise NcclInvalid(f"grow_group: {problem}")

    grown, members = claims[me]["grown"], claims[me]["members"]
    parent = None  # the smaller group's communicator, on its members
    if members is not None:
        parent = get_communicator(group)  # collective over its members: all are here
        if me == members[0]:
            store.set(f"{key}/id", bytes(parent.get_unique_id()).hex())
    store.wait([f"{key}/id"], wait)
    uid = bytes.fromhex(store.get(f"{key}/id").decode())

    plan = _registration.GrowPlan(grown, parent, uid) if me in grown else None
    _registration.pending_grow = plan
    try:
        new = dist.new_group(grown, timeout=timeout, backend="nccl_core", pg_options=pg_options)
        if plan is not None and _registration.pending_grow is plan:
            raise NcclError("grow_group: torch made the group without nccl_core's creator, "
                            "so its communicator did not grow")
    finally:
        _registration.pending_grow = None
    if me in grown:
        get_communicator(new)  # collective over the grown group: every member is here
    return new
