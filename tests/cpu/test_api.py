"""The nccl.core-style Python surface that works without a GPU: enums,
errors, scalar conversion and argument validation."""

from __future__ import annotations

import pickle
import sys

import pytest
import torch

import nccl_core_backend as nc
from nccl_core_backend import _C
from nccl_core_backend._scalars import premul_scalar


def test_result_codes_match_ncclGetErrorString():
    # NCCL's own strings pin the numbering of our Result enum.
    assert "no error" in nc.get_error_string(nc.Result.Success).lower()
    assert "cuda" in nc.get_error_string(nc.Result.UnhandledCudaError).lower()
    assert "system" in nc.get_error_string(nc.Result.SystemError).lower()
    assert "internal" in nc.get_error_string(nc.Result.InternalError).lower()
    assert "invalid argument" in nc.get_error_string(nc.Result.InvalidArgument).lower()
    assert "invalid usage" in nc.get_error_string(nc.Result.InvalidUsage).lower()
    assert "remote" in nc.get_error_string(nc.Result.RemoteError).lower()
    assert "in progress" in nc.get_error_string(nc.Result.InProgress).lower()
    assert nc.get_error_string(4) == nc.get_error_string(nc.Result.InvalidArgument)


def test_get_error_string_refuses_non_ints():
    with pytest.raises(nc.NcclInvalid, match="nccl_result"):
        nc.get_error_string("4")


def test_datatype_enum_matches_nccl_and_torch():
    expected = {
        "INT8": 0, "UINT8": 1, "INT32": 2, "UINT32": 3, "INT64": 4, "UINT64": 5,
        "FLOAT16": 6, "FLOAT32": 7, "FLOAT64": 8, "BFLOAT16": 9, "FLOAT8E4M3": 10, "FLOAT8E5M2": 11,
    }
    for name, value in expected.items():
        assert nc.NcclDataType[name] == value
        dt = nc.NcclDataType(value)
        assert torch.empty((), dtype=dt.torch_dtype).element_size() == dt.itemsize
        assert nc.NcclDataType.from_torch(dt.torch_dtype) is dt
    assert nc.CHAR == nc.INT8 and nc.HALF == nc.FLOAT16 and nc.DOUBLE == nc.FLOAT64
    assert nc.NcclDataType.from_torch(torch.bool) == nc.UINT8
    for bad in (torch.int16, torch.complex64, torch.uint16):
        with pytest.raises(nc.NcclInvalid, match="no NCCL equivalent"):
            nc.NcclDataType.from_torch(bad)


def test_enum_values():
    assert [int(o) for o in (nc.SUM, nc.PROD, nc.MAX, nc.MIN, nc.AVG)] == [0, 1, 2, 3, 4]
    assert (nc.ScalarResidence.Device, nc.ScalarResidence.HostImmediate) == (0, 1)
    assert (nc.WindowFlag.DEFAULT, nc.WindowFlag.COLL_SYMMETRIC, nc.WindowFlag.STRICT_ORDERING) == (0, 1, 2)
    assert nc.WindowFlag.CollSymmetric == nc.WindowFlag.COLL_SYMMETRIC
    assert [int(s) for s in nc.NcclCommMemStat] == [0, 1, 2, 3]
    assert nc.NcclCommMemStat.GpuMemTotal == nc.NcclCommMemStat.GPU_MEM_TOTAL == 3
    assert {g.name: int(g) for g in nc.NcclGinType} == {"NONE": 0, "PROXY": 2, "GDAKI": 3, "GPI": 4,
                                                        "EFA_GDA": 5}
    assert {g.name: int(g) for g in nc.NcclGinConnectionType} == {"NONE": 0, "FULL": 1, "RAIL": 2,
                                                                  "CUSTOM_STRIDE": 3}
    assert {m.name: int(m) for m in nc.NcclCftTeamMode} == {"FLAT": 0, "HIER_MULTIMEM": 1, "HIER_LSA": 2}
    assert {n: int(c) for n, c in nc.NcclCftCap.__members__.items()} == {"NONE": 0, "CFT": 1, "MULTIMEM": 2}
    assert nc.NCCL_SPLIT_NOCOLOR == -1


def test_errors_carry_result_and_pickle():
    e = nc.NcclError("boom", 3)
    assert e.result == e.status == 3 and str(e) == "boom"
    assert isinstance(nc.NcclInvalid("x", 4), ValueError)
    assert isinstance(nc.NcclInvalid("x", 4), RuntimeError)
    assert isinstance(nc.NcclUnsupported("x", 5), nc.NcclError)
    for cls in (nc.NcclError, nc.NcclInvalid, nc.NcclUnsupported):
        back = pickle.loads(pickle.dumps(cls("msg", 5)))
        assert type(back) is cls and back.result == 5 and str(back) == "msg"


@pytest.mark.parametrize(
    "scalar,datatype,dtype",
    [(0.5, None, torch.float64), (3, None, torch.int64), (0.5, torch.bfloat16, torch.bfloat16),
     (2, nc.FLOAT16, torch.float16), (torch.tensor(1.5), None, torch.float32)],
)
def test_premul_scalar_host(scalar, datatype, dtype):
    t = premul_scalar(scalar, datatype, None, 0)
    assert t.shape == (1,) and t.dtype == dtype and t.device.type == "cpu"
    assert float(t[0]) == float(scalar)


def test_premul_scalar_rejects_bad_scalars():
    with pytest.raises(nc.NcclInvalid, match="1 element"):
        premul_scalar(torch.ones(2), None, None, 0)
    with pytest.raises(nc.NcclInvalid, match="bool"):
        premul_scalar(True, None, None, 0)
    with pytest.raises(nc.NcclInvalid, match="complex"):
        premul_scalar(1j, None, None, 0)
    with pytest.raises(nc.NcclInvalid, match="doesn't match"):
        premul_scalar(torch.ones(1, dtype=torch.float64), torch.float32, None, 0)
    with pytest.raises(nc.NcclInvalid, match="ScalarResidence"):
        premul_scalar(1.0, None, 7, 0)
    with pytest.raises(nc.NcclInvalid, match="data type"):
        premul_scalar(1.0, 42, None, 0)
    with pytest.raises(nc.NcclInvalid, match="no NCCL equivalent"):
        premul_scalar(1.0, torch.int16, None, 0)
    with pytest.raises(nc.NcclInvalid, match="scalar must be"):
        premul_scalar("x", None, None, 0)


def test_torch_interop_validates_before_allocating():
    with pytest.raises(nc.NcclInvalid, match="morder"):
        nc.torch.empty(4, morder="K")
    with pytest.raises(nc.NcclInvalid, match="CUDA device"):
        nc.torch.empty(4, device="cpu")
    with pytest.raises(nc.NcclInvalid, match="integers"):
        nc.torch.empty(4, "5", device="cpu")
    with pytest.raises(nc.NcclInvalid, match="dtype"):
        nc.torch.empty(4, dtype="float32", device=0)
    with pytest.raises(nc.NcclInvalid, match="torch.Tensor"):
        nc.torch.resolve_tensor([1, 2])
    with pytest.raises(nc.NcclInvalid, match="CUDA tensor"):
        nc.torch.resolve_tensor(torch.ones(3))


def test_torch_submodule_is_the_interop_module():
    assert nc.torch.__name__ == "nccl_core_backend.interop.torch"
    assert callable(nc.torch.empty) and callable(nc.torch.resolve_tensor)


def test_cupy_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as if not installed
    with pytest.raises(ModuleNotFoundError, match="CuPy is not installed"):
        nc.cupy.empty(4)
    with pytest.raises(ModuleNotFoundError, match="CuPy is not installed"):
        nc.cupy.resolve_array(object())


def test_get_communicator_needs_an_initialized_group():
    with pytest.raises(nc.NcclInvalid, match="not initialized"):
        nc.get_communicator()


def test_group_end_without_start():
    assert _C._group_depth() == 0
    with pytest.raises(nc.NcclInvalid, match="group_start"):
        nc.group_end()


def test_public_names_exist():
    for name in nc.__all__:
        assert getattr(nc, name) is not None, name
    for cls in ("Communicator", "CommResource", "RegisteredBufferHandle", "RegisteredWindowHandle",
                "CustomRedOp"):
        assert getattr(nc, cls).__doc__
    assert issubclass(nc.RegisteredWindowHandle, nc.CommResource)
    assert issubclass(nc.CustomRedOp, nc.CommResource)


def test_wait_signal_desc_is_frozen_and_validated():
    d = nc.WaitSignalDesc(3)
    assert (d.peer, d.op_count, d.signal_index, d.context) == (3, 1, 0, 0)
    assert nc.WaitSignalDesc(1, 4) == nc.WaitSignalDesc(peer=1, op_count=4)
    with pytest.raises(Exception):
        d.peer = 2  # frozen
    for kwargs, match in [
        ({"peer": -1}, "peer"), ({"peer": 0, "op_count": 0}, "op_count"),
        ({"peer": 0, "signal_index": 1}, "signal_index"), ({"peer": 0, "context": 5}, "context"),
        ({"peer": 1.0}, "int"), ({"peer": True}, "int"),
    ]:
        with pytest.raises(nc.NcclInvalid, match=match):
            nc.WaitSignalDesc(**kwargs)
