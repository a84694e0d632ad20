"""NCCLDevCommRequirements.resources and DevCommResource.resource_handles on
the lab's fake NCCL (no GPU): each requirement reaches NCCL's own helper with
its team and counts, the nodes reach ncclDevCommCreate as one list in order,
and each handle comes back as NCCL completed it, on every release the fake
plays (the unversioned 2.28 requirements and the versioned ones after).

Each test fails when the resource path breaks: a helper not called or given
the wrong team or count, a node left out of the list or out of order, a handle
read from the wrong field or of the wrong kind, or bad input let through."""

from __future__ import annotations

import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import _testing  # noqa: E402
from nccl_core_backend.dev_resources import (  # noqa: E402
    GinBarrierHandle,
    GinBarrierRequirement,
    LLA2AHandle,
    LLA2ARequirement,
    LsaBarrierHandle,
    LsaBarrierRequirement,
)

TEAM = nc.NCCLTeam(2, 0, 1)
RESOURCES = (
    LsaBarrierRequirement(TEAM, 4),
    GinBarrierRequirement(nc.NCCLTeam(2, 0, 1), 3),
    LLA2ARequirement(n_blocks=2, max_elements=10, max_element_size=16),
)


@pytest.mark.parametrize("version", [22809, 22907, 23007, 23203])
def test_each_resource_reaches_its_helper_and_comes_back_as_a_handle(fake, version):
    fake.set_version(version)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    try:
        req = nc.NCCLDevCommRequirements(lsa_barrier_count=1, resources=RESOURCES)
        assert req.resources == RESOURCES
        dc = comm.create_dev_comm(req)
        assert fake.calls_to("LsaBarrierCreateRequirement") == [
            "LsaBarrierCreateRequirement(team=(2,0,1), n=4)"]
        assert fake.calls_to("GinBarrierCreateRequirement") == [
            "GinBarrierCreateRequirement(team=(2,0,1), n=3)"]
        assert fake.calls_to("LLA2ACalcSlots") == ["LLA2ACalcSlots(10, 16)"]
        assert fake.calls_to("LLA2ACreateRequirement") == [
            "LLA2ACreateRequirement(blocks=2, slots=20)"]
        (create,) = fake.calls_to("DevCommCreate")
        assert "resources=3" in create  # one list of three nodes
        # The fake's create gives node i buffer handle 0x100 + i and GIN
        # signal start 0x200 + i; the helpers set the counts.
        assert dc.resource_handles == (
            LsaBarrierHandle(buf_handle=0x100, n_barriers=4),
            GinBarrierHandle(signal0=0x201),
            LLA2AHandle(buf_handle=0x102, n_slots=20),
        )
        assert dc.requirements.resources == RESOURCES
        assert dc.resource_handles[0].to_bytes() == (0x100).to_bytes(4, "little") + (4).to_bytes(
            4, "little")
        dc.close()
    finally:
        comm.abort()


def test_no_resources_sends_no_list(fake):
    fake.set_version(23203)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    try:
        dc = comm.create_dev_comm(nc.NCCLDevCommRequirements())
        (create,) = fake.calls_to("DevCommCreate")
        assert "resources=" not in create and fake.calls_to("LsaBarrierCreateRequirement") == []
        assert dc.resource_handles == ()
        dc.close()
    finally:
        comm.abort()


def test_a_failing_helper_names_itself_and_creates_nothing(fake):
    fake.set_version(23203)
    comm = _testing._fake_communicator(2, 0)
    fake.fail("GinBarrierCreateRequirement", 5)
    try:
        with pytest.raises(nc.NcclError, match="ncclGinBarrierCreateRequirement"):
            comm.create_dev_comm(nc.NCCLDevCommRequirements(resources=RESOURCES))
        assert fake.calls_to("DevCommCreate") == []
    finally:
        comm.abort()


@pytest.mark.parametrize("resources, message", [
    ([5], "holds LsaBarrierRequirement, GinBarrierRequirement or LLA2ARequirement, got int"),
    ("lsa", "resources must be a tuple, got str"),
    ((LsaBarrierRequirement((2, 0, 1), 4),), "a barrier's team must be an NCCLTeam, got tuple"),
    ((LsaBarrierRequirement(TEAM, -1),), "n_barriers must be >= 0, got -1"),
    ((LLA2ARequirement(2, -3, 8),), "max_elements must be >= 0, got -3"),
    ((LLA2ARequirement(2**31, 1, 8),), "n_blocks"),
])
def test_bad_resources_are_refused_naming_the_problem(resources, message):
    with pytest.raises((nc.NcclInvalid, ValueError, OverflowError), match=message):
        nc.NCCLDevCommRequirements(resources=resources)
    req = nc.NCCLDevCommRequirements()
    with pytest.raises((nc.NcclInvalid, ValueError, OverflowError), match=message):
        req.resources = resources
    assert req.resources == ()


def test_the_names_are_nccl_cores():
    for name in ("LsaBarrierRequirement", "GinBarrierRequirement", "LLA2ARequirement",
                 "LsaBarrierHandle", "GinBarrierHandle", "LLA2AHandle"):
        assert name in nc.__all__ and getattr(nc, name).__module__ == "nccl_core_backend.dev_resources"
