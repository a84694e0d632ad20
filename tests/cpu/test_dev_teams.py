"""NCCLDevCommRequirements.teams and DevCommResource.multimem_handle on the
lab's fake NCCL (no GPU): the teams reach ncclDevCommCreate as one list, each
distinct team once in first-appearance order with multimem where any entry
asks, the multicast handles NCCL fills in come back per team, and multimem is
refused before NCCL is asked wherever NVLink multicast is off.

Each test fails when the team path breaks: a team left out of the list, sent
twice or out of order, multimem lost in the merge, a handle read for the wrong
team or given for a team that did not ask, a multimem request let through with
multicast off, or bad input let through."""

from __future__ import annotations

import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import _testing  # noqa: E402
from nccl_core_backend.dev_resources import MultimemHandle, TeamRequirement  # noqa: E402

WORLD = nc.NCCLTeam(4, 1, 1)
PAIR = nc.NCCLTeam(2, 1, 1)
RAIL = nc.NCCLTeam(2, 0, 2)


@pytest.fixture
def comm(fake):
    c = _testing._fake_communicator(4, 1)
    fake.clear_calls()
    yield c
    c.abort()


@pytest.mark.parametrize("version", [22809, 22907, 23007, 23203])
def test_teams_reach_the_create_once_each_in_order(fake, comm, version):
    fake.set_version(version)
    teams = (TeamRequirement(PAIR), TeamRequirement(WORLD), TeamRequirement(PAIR),
             TeamRequirement(RAIL))
    req = nc.NCCLDevCommRequirements(teams=teams)
    assert req.teams == teams  # kept as given; merged at the create
    dc = comm.create_dev_comm(req)
    (create,) = fake.calls_to("DevCommCreate")
    assert "teams=(2,1,1),(4,1,1),(2,0,2)" in create, create
    assert ",mm)" not in create
    for team in (PAIR, WORLD, RAIL):
        with pytest.raises(KeyError, match="multimem=True"):
            dc.multimem_handle(team)
    dc.close()


def test_no_teams_sends_no_list(fake, comm):
    dc = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=1))
    (create,) = fake.calls_to("DevCommCreate")
    assert "teams=" not in create
    dc.close()


def test_multimem_merges_and_each_team_gets_its_handle(fake, comm, monkeypatch):
    # The fake plays 2.28.9 (no properties query) with multicast not disabled:
    # the one setting where a multimem request reaches NCCL.
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    teams = (TeamRequirement(WORLD), TeamRequirement(PAIR, multimem=True),
             TeamRequirement(WORLD, multimem=True), TeamRequirement(RAIL))
    dc = comm.create_dev_comm(nc.NCCLDevCommRequirements(teams=teams))
    (create,) = fake.calls_to("DevCommCreate")
    assert "teams=(4,1,1,mm),(2,1,1,mm),(2,0,2)" in create, create
    # The fake's create gives the i-th team node the base 0x10000 * (i + 1).
    assert dc.multimem_handle(WORLD) == MultimemHandle(0x10000)
    assert dc.multimem_handle(nc.NCCLTeam(2, 1, 1)) == MultimemHandle(0x20000)
    with pytest.raises(KeyError, match="not requested"):
        dc.multimem_handle(RAIL)
    assert dc.multimem_handle(PAIR).to_bytes() == (0x20000).to_bytes(8, "little")
    dc.close()
    with pytest.raises(nc.NcclInvalid, match="closed"):
        dc.multimem_handle(WORLD)


def test_multimem_is_refused_with_nvls_off(fake, comm, monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    req = nc.NCCLDevCommRequirements(teams=(TeamRequirement(PAIR), TeamRequirement(PAIR, True)))
    with pytest.raises(nc.NcclUnsupported, match="team with multimem.*NCCL_NVLS_ENABLE=0"):
        comm.create_dev_comm(req)
    assert fake.calls_to("DevCommCreate") == []


def test_multimem_is_refused_where_the_communicator_has_no_multicast(fake, comm, monkeypatch):
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    fake.set_version(23203)  # its properties say multimemSupport = false
    req = nc.NCCLDevCommRequirements(teams=(TeamRequirement(WORLD, multimem=True),))
    with pytest.raises(nc.NcclUnsupported, match="multimemSupport = false"):
        comm.create_dev_comm(req)
    assert fake.calls_to("DevCommCreate") == []


@pytest.mark.parametrize("teams, message", [
    ([TeamRequirement(WORLD), "world"], "TeamRequirement entries, got str"),
    ((TeamRequirement((4, 1, 1)),), "TeamRequirement.team must be an NCCLTeam, got tuple"),
    ((TeamRequirement(WORLD, multimem=1),), "multimem must be a bool, got int"),
    ((TeamRequirement(nc.NCCLTeam(2, 2, 1)),), "team of 2 ranks cannot hold rank 2"),
    ((TeamRequirement(nc.NCCLTeam(0, 0, 1)),), "team of 0 ranks"),
    (TeamRequirement(WORLD), "teams must be a tuple, got TeamRequirement"),
])
def test_bad_teams_are_refused(teams, message):
    with pytest.raises(nc.NcclInvalid, match=message):
        nc.NCCLDevCommRequirements(teams=teams)
    req = nc.NCCLDevCommRequirements(teams=(TeamRequirement(PAIR),))
    with pytest.raises(nc.NcclInvalid, match=message):
        req.teams = teams
    assert req.teams == (TeamRequirement(PAIR),)  # a refused assignment changes nothing


def test_multimem_handle_takes_a_team(fake, comm):
    dc = comm.create_dev_comm(nc.NCCLDevCommRequirements())
    with pytest.raises(nc.NcclInvalid, match="multimem_handle: team must be an NCCLTeam"):
        dc.multimem_handle((4, 1, 1))
    dc.close()


def test_the_names_match_nccl_core():
    assert nc.TeamRequirement is TeamRequirement and nc.MultimemHandle is MultimemHandle
    assert TeamRequirement(WORLD).multimem is False
    assert MultimemHandle(0).mc_base_pointer == 0
