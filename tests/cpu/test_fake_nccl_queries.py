"""The nccl4py 0.6 calls that only ask NCCL or end a communicator's work,
on the lab's fake NCCL (no GPU): revoke, properties in each release's layout,
teams, NCCL's parameters and group simulation.

Each test fails when the control path breaks: a call not handed to NCCL (or
handed wrong arguments), a refusal missing or naming the wrong release, a
field of a later release read from an older one, a team rank mapped without
its checks, a simulated group that launches or leaks its hold."""

from __future__ import annotations


import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import _testing  # noqa: E402

V2_29_2, V2_29_7, V2_30_7, V2_31_2, V2_32_3 = 22902, 22907, 23007, 23102, 23203


# --- revoke ---------------------------------------------------------------------------


def test_revoke_reaches_nccl_and_then_finalize_is_refused_but_destroy_works(fake):
    comm = _testing._fake_communicator(2, 0)
    comm.revoke()
    assert fake.calls_to("CommRevoke") == ["CommRevoke(flags=0)"]
    with pytest.raises(nc.NcclInvalid, match=r"finalize\(\) after revoke\(\) is invalid"):
        comm.finalize()
    assert fake.calls_to("CommFinalize") == []
    assert comm.is_valid
    comm.destroy()
    assert fake.calls_to("CommDestroy") == ["CommDestroy"]
    assert fake.live_comms == 0


def test_revoke_refuses_flags_and_an_nccl_without_it(fake):
    comm = _testing._fake_communicator(2, 1)
    with pytest.raises(nc.NcclInvalid, match="reserved: must be 0"):
        comm.revoke(1)
    fake.hide("ncclCommRevoke")
    with pytest.raises(nc.NcclUnsupported, match=r"revoke needs NCCL 2\.28\.7"):
        comm.revoke()
    assert fake.calls_to("CommRevoke") == []
    comm.finalize()  # never revoked: finalize as usual
    assert fake.calls_to("CommFinalize") == ["CommFinalize"]


# --- properties ------------------------------------------------------------------------


def properties_at(fake, version):
    fake.set_version(version)
    comm = _testing._fake_communicator(4, 2)
    fake.clear_calls()
    p = comm.properties
    (query,) = fake.calls_to("CommQueryProperties")
    comm.abort()
    return p, query


def test_properties_need_2_29_2(fake):
    comm = _testing._fake_communicator(2, 0)
    for what in ("properties", "cuda_dev", "gin_type"):
        with pytest.raises(nc.NcclUnsupported, match=r"needs NCCL 2\.29\.2"):
            getattr(comm, what)
    assert fake.calls_to("CommQueryProperties") == []
    comm.abort()


def test_properties_of_2_29_2_claim_its_layout_and_leave_later_fields_none(fake):
    p, query = properties_at(fake, V2_29_2)
    # 2.29.2's struct ends before hostRmaSupport (byte 44).
    assert query == "CommQueryProperties(size=44, version=22902)"
    assert (p.rank, p.n_ranks, p.cuda_dev, p.nvml_dev) == (2, 4, 3, 5)
    assert p.device_api_support is True and p.multimem_support is False
    assert p.gin_type is nc.NcclGinType.GDAKI
    assert p.n_lsa_teams is None and p.host_rma_support is None and p.railed_gin_type is None
    assert p.comm_hash is None and p.available_gin_types is None and p.cft_support is None


def test_properties_of_2_29_7_and_2_30_7(fake):
    p, query = properties_at(fake, V2_29_7)
    assert query == "CommQueryProperties(size=56, version=22907)"
    assert (p.n_lsa_teams, p.host_rma_support, p.railed_gin_type) == (1, True, nc.NcclGinType.PROXY)
    assert p.comm_hash is None
    p, query = properties_at(fake, V2_30_7)
    # From 2.30 the loaded release is claimed, with room for its whole struct.
    assert query.startswith("CommQueryProperties(size=") and query.endswith(", version=23007)")
    assert int(query.split("size=")[1].split(",")[0]) > 152
    assert p.host_rma_support is True and p.comm_hash is None and p.gin_connection_type is None


def test_properties_of_2_31_2_and_2_32_3_read_the_appended_fields(fake):
    p, _ = properties_at(fake, V2_31_2)
    assert p.comm_hash == 0x5EED0000 + 4
    assert p.gin_min_stride == 1
    assert p.gin_connection_type is nc.NcclGinConnectionType.FULL
    assert p.available_gin_types == frozenset({nc.NcclGinType.PROXY, nc.NcclGinType.GDAKI})
    assert p.dev_comm_runtime_version_size == 248
    assert p.cft_support is None and p.cft_counted_support is None
    p, _ = properties_at(fake, V2_32_3)
    assert (p.cft_support, p.cft_multicast_support, p.cft_counted_support) == (True, False, True)
    assert isinstance(p, nc.NCCLCommProperties)
    with pytest.raises(AttributeError):
        p.rank = 0  # frozen, as nccl4py's


def test_single_field_accessors(fake):
    fake.set_version(V2_29_2)
    comm = _testing._fake_communicator(2, 1)
    assert (comm.cuda_dev, comm.nvml_dev) == (3, 5)
    assert comm.device_api_support is True and comm.multimem_support is False
    assert comm.gin_type is nc.NcclGinType.GDAKI
    for what in ("n_lsa_teams", "host_rma_support", "railed_gin_type"):
        with pytest.raises(nc.NcclUnsupported, match=r"2\.29\.7"):
            getattr(comm, what)
    comm.abort()
    fake.set_version(V2_29_7)
    comm = _testing._fake_communicator(2, 1)
    assert (comm.n_lsa_teams, comm.host_rma_support) == (1, True)
    assert comm.railed_gin_type is nc.NcclGinType.PROXY
    comm.abort()


# --- teams ------------------------------------------------------------------------------


def test_teams_come_from_nccl(fake):
    comm = _testing._fake_communicator(4, 2)
    assert comm.team_world == nc.NCCLTeam(4, 2, 1)
    assert comm.team_lsa == nc.NCCLTeam(4, 2, 1)
    assert comm.team_rail == nc.NCCLTeam(1, 0, 4)
    assert [c for c in fake.calls if c.startswith("Team")] == ["TeamWorld", "TeamLsa", "TeamRail"]
    comm.abort()


def test_team_rank_to_world_and_lsa_map_through_nccl_after_their_checks(fake):
    comm = _testing._fake_communicator(4, 2)
    world = comm.team_world
    assert [comm.team_rank_to_world(world, r) for r in range(4)] == [0, 1, 2, 3]
    assert comm.team_rank_to_lsa(comm.team_lsa, 0) == 0
    assert fake.calls_to("TeamRankToWorld")[3] == "TeamRankToWorld(team=(4,2,1), team_rank=3)"
    fake.clear_calls()
    with pytest.raises(nc.NcclInvalid, match="team_rank 4 is outside the team of 4 ranks"):
        comm.team_rank_to_world(world, 4)
    with pytest.raises(nc.NcclInvalid, match="team_rank -1 is outside"):
        comm.team_rank_to_lsa(world, -1)
    # A team anchored at another rank puts team rank 3 at world rank 5.
    with pytest.raises(nc.NcclInvalid, match="at world rank 5.*not a team of rank 2"):
        comm.team_rank_to_world(nc.NCCLTeam(4, 0, 1), 3)
    with pytest.raises(nc.NcclInvalid, match="is no team"):
        comm.team_rank_to_world(nc.NCCLTeam(0, 0, 1), 0)
    with pytest.raises(nc.NcclInvalid, match="team must be an NCCLTeam"):
        comm.team_rank_to_world((4, 2, 1), 0)
    with pytest.raises(nc.NcclInvalid):
        comm.team_rank_to_world(world, 1.5)
    assert fake.calls_to("TeamRankToWorld") == fake.calls_to("TeamRankToLsa") == []
    comm.abort()


def test_cft_teams_take_a_mode_and_need_2_31_2(fake):
    comm = _testing._fake_communicator(2, 0)
    assert comm.team_cft() == nc.NCCLTeam(2, 0, 1)
    comm.team_cft(nc.NcclCftTeamMode.HIER_LSA)
    assert fake.calls_to("TeamCft") == ["TeamCft(mode=0)", "TeamCft(mode=2)"]
    assert comm.team_cft_multimem == nc.NCCLTeam(2, 0, 1)
    with pytest.raises(nc.NcclInvalid, match="Invalid NcclCftTeamMode: 3"):
        comm.team_cft(3)
    fake.hide("ncclTeamCft")
    fake.hide("ncclTeamCftMultimem")
    with pytest.raises(nc.NcclUnsupported, match=r"team_cft needs NCCL 2\.31\.2"):
        comm.team_cft()
    with pytest.raises(nc.NcclUnsupported, match=r"team_cft_multimem needs NCCL 2\.31\.2"):
        comm.team_cft_multimem
    comm.abort()


# --- parameters -------------------------------------------------------------------------


def test_params_read_nccls_values_by_name(fake):
    fake.set_param("NCCL_DEBUG", "WARN")
    fake.set_param("NCCL_BUFFSIZE", "4194304")
    assert nc.params["NCCL_DEBUG"] == "WARN"
    assert nc.params["NCCL_BUFFSIZE"] == "4194304"
    assert sorted(nc.params) == ["NCCL_BUFFSIZE", "NCCL_DEBUG"] and len(nc.params) == 2
    assert "NCCL_NOT_A_PARAMETER" not in nc.params
    with pytest.raises(KeyError):
        nc.params["NCCL_NOT_A_PARAMETER"]
    assert dict(nc.params) == {"NCCL_BUFFSIZE": "4194304", "NCCL_DEBUG": "WARN"}
    with pytest.raises(nc.NcclInvalid, match="parameter names are str"):
        nc.params[3]
    nc.dump_params()
    assert fake.calls_to("ParamDumpAll") == ["ParamDumpAll"]


def test_params_need_2_30_4(fake):
    fake.hide("ncclParamGetParameter")
    for read in (lambda: nc.params["NCCL_DEBUG"], lambda: list(nc.params), nc.dump_params):
        with pytest.raises(nc.NcclUnsupported, match=r"needs NCCL 2\.30\.4"):
            read()
    assert fake.calls_to("ParamGetParameter") == fake.calls_to("ParamDumpAll") == []


# --- group simulation -------------------------------------------------------------------


def test_group_end_simulate_returns_nccls_estimate_and_launches_nothing(fake):
    nc.group_start()
    info = nc.group_end(simulate=True)
    assert info == nc.GroupSimInfo(estimated_time=42.5)
    assert fake.calls_to("GroupSimulateEnd") == ["GroupSimulateEnd"]
    assert fake.calls_to("GroupEnd") == []
    assert nc.communicator._ext()._group_depth() == 0
    assert nc.group_end.__defaults__ is None  # keyword-only, as nccl4py's


def test_group_end_simulate_refuses_misuse(fake):
    with pytest.raises(nc.NcclInvalid, match="without a matching group_start"):
        nc.group_end(simulate=True)
    nc.group_start()
    nc.group_start()
    with pytest.raises(nc.NcclInvalid, match="outermost group only"):
        nc.group_end(simulate=True)
    nc.group_end()
    with pytest.raises(nc.NcclInvalid, match="simulate must be a bool"):
        nc.group_end(simulate=1)
    nc.group_end()
    assert fake.calls_to("GroupSimulateEnd") == []
    assert nc.communicator._ext()._group_depth() == 0
