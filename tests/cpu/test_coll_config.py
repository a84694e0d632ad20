"""NCCLCollConfig (``config=`` on every collective of the raw Communicator):
its checks in Python, and what reaches NCCL's nccl*Config calls on the lab's
fake NCCL (no GPU), in the layout of the release the fake plays.

Each test fails when the config path breaks: a bad field let through, a
collective that calls the plain entry point (or none) with a config, a field
laid out wrong or read past the release's size, vendor options out of order,
or a refusal that does not name the release it needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

import nccl_core_backend as nc
from nccl_core_backend.coll_config import NCCLCollConfig, VendorOption

V2_31_2, V2_32_3 = 23102, 23203
UNDEF = -(2**31)  # NCCL_CONFIG_UNDEF_INT
# sizeof(ncclCollConfig_t): 2.31 ends at userProfilerTag, 2.32 adds the event.
SIZE_2_31, SIZE_2_32 = 64, 72

COLLECTIVES = {
    "allreduce": "AllReduceConfig",
    "reduce": "ReduceConfig",
    "broadcast": "BroadcastConfig",
    "allgather": "AllGatherConfig",
    "gather": "GatherConfig",
    "reduce_scatter": "ReduceScatterConfig",
    "alltoall": "AlltoAllConfig",
    "scatter": "ScatterConfig",
}


# --- the Python checks ------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"min_ctas": "4"}, "min_ctas must be an int or None, got str"),
        ({"max_ctas": True}, "max_ctas must be an int or None, got bool"),
        ({"nvls_ctas": 1.0}, "nvls_ctas must be an int or None, got float"),
        ({"alg_selection": 3}, "alg_selection must be a str or None, got int"),
        ({"force_alg_selection": 1}, "force_alg_selection must be a bool or None, got int"),
        ({"cta_policy": "zero"}, "cta_policy must be an int or None, got str"),
        ({"user_profiler_tag": -1}, r"user_profiler_tag -1 is outside \[0, 2\*\*64\)"),
        ({"user_profiler_tag": 2**64}, r"user_profiler_tag 18446744073709551616 is outside"),
        ({"vendor_options": VendorOption(1, 2, int_value=3)}, "must be a sequence of VendorOption"),
        ({"vendor_options": [(1, 2, 3)]}, "must contain VendorOption instances, got tuple"),
        (
            {"vendor_options": [VendorOption(1, 2, int_value=3), VendorOption(1, 2, str_value="x")]},
            r"Duplicate vendor option key \(vendor_id=1, option_id=2\)",
        ),
        ({"launch_completion_event": 0}, "launch_completion_event has a null handle"),
        ({"launch_completion_event": False}, "got bool"),
        ({"launch_completion_event": "ev"}, "must be a torch.cuda.Event, a cuda.core Event"),
    ],
)
def test_bad_fields_are_refused_when_made(fields, message):
    with pytest.raises(nc.NcclInvalid, match=message):
        NCCLCollConfig(**fields)


def test_a_field_changed_after_making_is_checked_at_use():
    config = NCCLCollConfig(min_ctas=2)
    config.min_ctas = "2"
    with pytest.raises(nc.NcclInvalid, match="min_ctas must be an int"):
        config._lower()


def test_vendor_option_takes_exactly_one_value():
    with pytest.raises(nc.NcclInvalid, match="exactly one of int_value, str_value, raw_value"):
        VendorOption(1, 2)
    with pytest.raises(nc.NcclInvalid, match=r"got \['int_value', 'str_value'\]"):
        VendorOption(1, 2, int_value=1, str_value="a")
    with pytest.raises(nc.NcclInvalid, match="VendorOption.str_value must be a str"):
        VendorOption(1, 2, str_value=5)


@dataclass
class TorchLikeEvent:
    cuda_event: int


@dataclass
class CudaCoreLikeEvent:
    handle: int


def test_events_lower_to_their_handles():
    assert NCCLCollConfig(launch_completion_event=0x1234)._lower()[8] == 0x1234
    assert NCCLCollConfig(launch_completion_event=TorchLikeEvent(0x55))._lower()[8] == 0x55
    assert NCCLCollConfig(launch_completion_event=CudaCoreLikeEvent(0x66))._lower()[8] == 0x66
    assert NCCLCollConfig()._lower()[8] == 0
    with pytest.raises(nc.NcclInvalid, match="no CUDA event yet"):
        NCCLCollConfig(launch_completion_event=TorchLikeEvent(0))


def test_the_package_exports_them():
    assert nc.NCCLCollConfig is NCCLCollConfig and nc.VendorOption is VendorOption
    assert "NCCLCollConfig" in nc.__all__ and "VendorOption" in nc.__all__


# --- what reaches NCCL (the fake) ----------------------------------------------------------


def fields_of(call: str) -> dict[str, str]:
    inside = call[call.index("(") + 1 : -1]
    return dict(re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", inside))


def configured_call(fake, version, collective, config):
    from nccl_core_backend import _testing

    fake.set_version(version)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    try:
        _testing._raw_with_config(comm, collective, config)
        name = COLLECTIVES[collective]
        calls = fake.calls_to(name)
        plain = fake.calls_to(name.removesuffix("Config"))
        assert plain == [], f"{collective} with a config called the plain {plain}"
        assert len(calls) == 1, f"{collective}: {fake.calls}"
        return fields_of(calls[0])
    finally:
        comm.abort()


@pytest.mark.parametrize("collective", sorted(COLLECTIVES))
def test_every_collective_hands_its_config_to_ncclXConfig(fake, collective):
    config = NCCLCollConfig(
        min_ctas=2,
        max_ctas=16,
        nvls_ctas=4,
        cga_cluster_size=2,
        alg_selection="ring",
        force_alg_selection=False,
        cta_policy=nc.CTAPolicy.ZERO,
        user_profiler_tag=2**63 - 7,
    )
    f = configured_call(fake, V2_31_2, collective, config)
    assert f["size"] == str(SIZE_2_31) and f["magic"] == "ok" and f["version"] == str(V2_31_2)
    assert (f["minCTAs"], f["maxCTAs"], f["nvlsCTAs"], f["cga"]) == ("2", "16", "4", "2")
    assert (f["alg"], f["force"], f["policy"]) == ("ring", "0", "2")
    assert f["tag"] == str(2**63 - 7)
    assert "event" not in f  # 2.31 has no such field: nothing past its size is read
    assert f["ext"] == "[]"


def test_unset_fields_are_ncclS_undefined_and_selection_is_forced_by_default(fake):
    f = configured_call(fake, V2_31_2, "allreduce", NCCLCollConfig())
    assert (f["minCTAs"], f["maxCTAs"], f["nvlsCTAs"], f["cga"], f["policy"]) == (str(UNDEF),) * 5
    assert (f["alg"], f["force"], f["tag"]) == ("null", "1", "0")


def test_2_32_takes_the_event_in_its_larger_layout(fake):
    config = NCCLCollConfig(launch_completion_event=0xABC0, max_ctas=8)
    f = configured_call(fake, V2_32_3, "reduce_scatter", config)
    assert f["size"] == str(SIZE_2_32) and f["version"] == str(V2_32_3)
    assert f["event"] == str(0xABC0) and f["maxCTAs"] == "8"
    f = configured_call(fake, V2_32_3, "broadcast", NCCLCollConfig())
    assert f["event"] == "0"


def test_vendor_options_reach_nccl_as_one_list_in_order(fake):
    options = [VendorOption(7, 1, int_value=5), VendorOption(7, 2, int_value=-6),
               VendorOption(9, 1, int_value=0)]
    f = configured_call(fake, V2_31_2, "alltoall", NCCLCollConfig(vendor_options=options))
    assert f["ext"] == "[7:1=5 7:2=-6 9:1=0]"


def test_an_event_needs_2_32_3(fake):
    from nccl_core_backend import _testing

    fake.set_version(V2_31_2)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    with pytest.raises(nc.NcclUnsupported, match=r"launch_completion_event needs NCCL 2\.32\.3"):
        _testing._raw_with_config(comm, "allreduce", NCCLCollConfig(launch_completion_event=0x10))
    assert fake.calls_to("AllReduceConfig") == [] and fake.calls_to("AllReduce") == []
    comm.abort()


def test_an_nccl_without_configs_refuses_naming_2_31_2(fake):
    from nccl_core_backend import _testing

    fake.hide("ncclAllReduceConfig")
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    for collective in COLLECTIVES:
        with pytest.raises(nc.NcclUnsupported,
                           match=r"NCCLCollConfig \(config=\) needs NCCL 2\.31\.2 or newer"):
            _testing._raw_with_config(comm, collective, NCCLCollConfig(max_ctas=2))
    assert [c for c in fake.calls if "Config" in c] == []
    comm.abort()


def test_ranges_and_types_checked_before_nccl(fake):
    from nccl_core_backend import _testing

    fake.set_version(V2_31_2)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    with pytest.raises(nc.NcclInvalid, match="min_ctas 2147483648 does not fit a 32-bit int"):
        _testing._raw_with_config(comm, "allreduce", NCCLCollConfig(min_ctas=2**31))
    with pytest.raises(nc.NcclInvalid, match="VendorOption.vendor_id -2147483649 does not fit"):
        _testing._raw_with_config(
            comm, "allreduce", NCCLCollConfig(vendor_options=[VendorOption(-(2**31) - 1, 0, int_value=1)])
        )
    with pytest.raises(nc.NcclInvalid, match="config must be an NCCLCollConfig or None, got dict"):
        _testing._raw_with_config(comm, "allreduce", {"max_ctas": 2})
    assert [c for c in fake.calls if "AllReduce" in c] == []
    comm.abort()


def test_a_failing_configured_call_names_the_config_entry_point(fake):
    from nccl_core_backend import _testing

    fake.set_version(V2_31_2)
    fake.fail("AllReduceConfig", 5)  # ncclInvalidUsage
    fake.set_last_error("unsatisfiable algorithm selection")
    comm = _testing._fake_communicator(2, 0)
    with pytest.raises(nc.NcclError, match="ncclAllReduceConfig") as info:
        _testing._raw_with_config(comm, "allreduce", NCCLCollConfig(alg_selection="nvls"))
    assert "unsatisfiable algorithm selection" in str(info.value)
    comm.abort()


def test_a_dist_block_needs_an_initialized_world():
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("torch.distributed is initialized in this process")
    with pytest.raises(nc.NcclInvalid, match="torch.distributed is not initialized"):
        with nc.coll_config(NCCLCollConfig(max_ctas=2)):
            pass
