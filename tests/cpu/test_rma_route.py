"""The one-sided route option (Communicator.rma_route, NCCL_CORE_RMA_ROUTE):
its parser, its place in features() and in the docs; the route itself needs
GPUs (tests/gpu/cases/native_rma.py)."""

from __future__ import annotations

import os

import pytest

import nccl_core_backend as nc
from nccl_core_backend import _C

_ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("text,route", [("auto", "auto"), ("native", "native"),
                                        (" Native\n", "native"), ("AUTO", "auto")])
def test_parse(text, route):
    assert _C._parse_rma_route(text) == route


@pytest.mark.parametrize("text", ["", "nativ", "nccl", "auto,native", "0"])
def test_parse_refuses(text):
    with pytest.raises(nc.NcclInvalid, match="auto.*native"):
        _C._parse_rma_route(text)


def test_communicator_has_the_setting():
    prop = _C.Communicator.__dict__["rma_route"]
    assert isinstance(prop, property) and prop.fset is not None
    assert "NCCL_CORE_RMA_ROUTE" in prop.__doc__
    assert callable(_C.Communicator._rma_served_by_kernels)


@pytest.mark.parametrize("version,status", [("2.28.9", "unsupported"), ("2.29.2", "native"),
                                            ("2.30.7", "native"), ("2.32.3", "native")])
def test_feature_row(version, status):
    f = nc.features(version)["rma_native_route"]
    assert f.status == status and f.needs == "2.29.2"
    assert "rma_route" in f.api and "NCCL_CORE_RMA_ROUTE" in f.api


def test_native_route_available_iff_the_calls_are():
    avail = nc.features()["rma_native_route"].available
    assert avail == all(_C.has_symbol(s) for s in ("ncclPutSignal", "ncclSignal", "ncclWaitSignal"))


def test_docs_name_the_variable():
    for path in ("README.md", "docs/api.md", "docs/compatibility.md"):
        with open(os.path.join(_ROOT, path), encoding="utf-8") as fh:
            assert "NCCL_CORE_RMA_ROUTE" in fh.read(), path
