"""NCCLDevCommRequirements' fields of NCCL 2.30.3, 2.30.7 and 2.31.2, on the
lab's fake NCCL (no GPU): what ncclDevCommCreate is given in the layout of
the release the fake plays, and the refusals of a field the loaded release
does not have.

Each test fails when the requirements path breaks: a field written at the
wrong offset or past the release's size, NCCL's defaults not kept for unset
fields, a newer field let through to an older NCCL, or bad values let through."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import _testing  # noqa: E402

UNDEF = -(2**31)
# sizeof / the size sent: 2.30.3 up to worldGinBarrierCount, 2.30.7 up to the
# VA flag (and its padding), 2.31.2 the whole struct.
SIZES = {23003: 92, 23007: 96, 23102: 120}


def created(fake, version, **fields):
    fake.set_version(version)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    try:
        dc = comm.create_dev_comm(nc.NCCLDevCommRequirements(**fields))
        (call,) = fake.calls_to("DevCommCreate")
        dc.close()
        inside = call[call.index("(") + 1 : -1]
        return dict(re.findall(r"(\w+)=([^,]+)", inside))
    finally:
        comm.abort()


def test_unset_fields_keep_nccls_defaults_in_each_release(fake):
    f = created(fake, 23003)
    assert f["size"] == str(SIZES[23003]) and f["version"] == "23003"
    assert (f["traffic_class"], f["world_barriers"]) == (str(UNDEF), "0")
    assert "strong" not in f and "stride" not in f  # past 2.30.3's size
    f = created(fake, 23007)
    assert f["size"] == str(SIZES[23007]) and (f["strong"], f["va"]) == ("1", "1")
    assert "stride" not in f
    f = created(fake, 23102)
    assert f["size"] == str(SIZES[23102])
    assert (f["stride"], f["gin_type"], f["cft_caps"], f["cft_barriers"]) == ("1", "0", "0", "0")


def test_set_fields_reach_nccl(fake):
    f = created(fake, 23203, gin_traffic_class=3, world_gin_barrier_count=4,
                gin_strong_signals_required=False, gin_va_signals_required=False,
                gin_connection_type=nc.NcclGinConnectionType.CUSTOM_STRIDE, gin_custom_stride=8,
                gin_type=nc.NcclGinType.GDAKI, cft_caps=nc.NcclCftCap.MULTIMEM,
                cft_barrier_count=16)
    assert (f["traffic_class"], f["world_barriers"], f["strong"], f["va"]) == ("3", "4", "0", "0")
    assert (f["gin_connection_type"], f["stride"], f["gin_type"]) == ("3", "8", "3")
    assert (f["cft_caps"], f["cft_barriers"]) == ("2", "16")


@pytest.mark.parametrize(
    "version, fields, release",
    [
        (22907, {"gin_traffic_class": 1}, "2.30.3"),
        (22907, {"world_gin_barrier_count": 2}, "2.30.3"),
        (23004, {"gin_strong_signals_required": False}, "2.30.7"),
        (23004, {"gin_va_signals_required": False}, "2.30.7"),
        (23007, {"gin_custom_stride": 2}, "2.31.2"),
        (23007, {"gin_type": 2}, "2.31.2"),
        (23007, {"cft_caps": 2}, "2.31.2"),
        (23007, {"cft_barrier_count": 1}, "2.31.2"),
        (23007, {"gin_connection_type": 3}, "2.31.2"),
    ],
)
def test_a_field_the_loaded_release_lacks_is_refused(fake, version, fields, release):
    fake.set_version(version)
    comm = _testing._fake_communicator(2, 0)
    fake.clear_calls()
    name = next(iter(fields))
    with pytest.raises(nc.NcclUnsupported, match=rf"{name}.* needs NCCL {re.escape(release)}"):
        comm.create_dev_comm(nc.NCCLDevCommRequirements(**fields))
    assert fake.calls_to("DevCommCreate") == []
    comm.abort()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"world_gin_barrier_count": -1}, "world_gin_barrier_count must be >= 0"),
        ({"cft_barrier_count": -2}, "cft_barrier_count must be >= 0"),
        ({"gin_custom_stride": 0}, "gin_custom_stride must be >= 1"),
        ({"gin_type": 1}, r"gin_type must be an NcclGinType \(0, 2 to 5\)"),
        ({"gin_connection_type": 4}, r"NcclGinConnectionType \(0 to 3\)"),
        ({"gin_traffic_class": -(2**31)}, "pass None for NCCL's traffic class"),
        ({"gin_traffic_class": 2**31}, "gin_traffic_class 2147483648 does not fit"),
    ],
)
def test_bad_values_are_refused_when_made(fields, message):
    with pytest.raises(nc.NcclInvalid, match=message):
        nc.NCCLDevCommRequirements(**fields)


def test_the_fields_read_back():
    r = nc.NCCLDevCommRequirements(gin_traffic_class=5, gin_type=3, cft_caps=2)
    assert r.gin_traffic_class == 5 and r.gin_type is nc.NcclGinType.GDAKI
    assert r.cft_caps == nc.NcclCftCap.MULTIMEM
    r.gin_traffic_class = None
    assert r.gin_traffic_class is None and "gin_traffic_class=None" in repr(r)
    assert nc.NCCLDevCommRequirements().gin_strong_signals_required is True
