"""Device communicator API without a GPU: requirements, exports, op mapping."""

from __future__ import annotations

import pytest
import torch.distributed as dist

import nccl_core_backend as nc
from nccl_core_backend import device


def test_requirements_defaults_and_fields():
    r = nc.NCCLDevCommRequirements()
    assert (r.lsa_multimem, r.barrier_count, r.lsa_barrier_count, r.gin_queue_depth) == (False, 0, 0, 0)
    assert r.gin_connection_type == nc.NcclGinConnectionType.NONE
    r = nc.NCCLDevCommRequirements(lsa_barrier_count=8, gin_connection_type=nc.NcclGinConnectionType.RAIL,
                                   gin_signal_count=3)
    assert r.lsa_barrier_count == 8 and r.gin_signal_count == 3
    assert r.gin_connection_type is nc.NcclGinConnectionType.RAIL
    r.barrier_count = 2
    assert "barrier_count=2" in repr(r)


@pytest.mark.parametrize("field", ["barrier_count", "lsa_barrier_count", "gin_signal_count",
                                   "gin_queue_depth", "lsa_ll_a2a_slot_count"])
def test_negative_counts_are_refused(field):
    with pytest.raises(nc.NcclInvalid, match=field):
        nc.NCCLDevCommRequirements(**{field: -1})


def test_unknown_connection_type_is_refused():
    with pytest.raises(nc.NcclInvalid, match="gin_connection_type"):
        nc.NCCLDevCommRequirements(gin_connection_type=4)  # CUSTOM_STRIDE (3) is the last


def test_requirements_are_keyword_only():
    with pytest.raises(TypeError):
        nc.NCCLDevCommRequirements(True)


def test_exports():
    assert issubclass(nc.DevCommResource, nc.CommResource)
    assert callable(nc.Communicator.create_dev_comm)
    assert nc.device is device
    assert set(device.__all__) == {"all_reduce", "all_gather", "kernels_available"}


@pytest.mark.parametrize("op,code", [(nc.SUM, 0), (nc.PROD, 1), (dist.ReduceOp.MAX, 2),
                                     (dist.ReduceOp.MIN, 3), (dist.ReduceOp.AVG, 4), (2, 2)])
def test_op_mapping(op, code):
    assert device._red_op(op) == code


@pytest.mark.parametrize("op", [dist.ReduceOp.BAND, "sum", 1.0, True])
def test_bad_ops(op):
    with pytest.raises(nc.NcclInvalid):
        device._red_op(op)
