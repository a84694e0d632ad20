"""nccl_core_backend.features(): shape, agreement with the loaded NCCL, with the
library's exported symbols, with the device kernels' own check, and with the
table in docs/compatibility.md."""

from __future__ import annotations

import os
import re

import pytest

import nccl_core_backend as nc
from nccl_core_backend import _C
from nccl_core_backend.compatibility import STATUSES, Feature, version_code, version_string

_DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "compatibility.md")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# The columns of the doc's matrix and the release each one is evaluated at.
_COLUMNS = {"2.28.x": "2.28.9", "2.29.2+": "2.29.2", "2.29.7+": "2.29.7", "2.30.7+": "2.30.7",
            "2.32.x": "2.32.3"}
# Statuses that depend on the headers the extension was built with, not only
# on the loaded release.
_BUILD_DEPENDENT = {"device_collectives"}


def _loaded() -> int:
    return _C.nccl_version()


def test_exported_from_the_package():
    assert nc.features is nc.compatibility.features
    assert nc.Feature is Feature
    assert "features" in nc.__all__ and "Feature" in nc.__all__
    assert len(nc.features.__doc__ or "") > 100


def test_shape():
    table = nc.features()
    assert isinstance(table, dict) and len(table) >= 20
    for name, f in table.items():
        assert isinstance(f, Feature) and f.name == name
        assert f.status in STATUSES
        assert f.available == (f.status != "unsupported")
        assert f.needs is None or _VERSION.match(f.needs), f
        assert f.nccl_since is None or _VERSION.match(f.nccl_since), f
        assert f.native_since is None or _VERSION.match(f.native_since), f
        assert f.api and f.nccl_api
    with pytest.raises(Exception):
        table["get_mem_stat"].status = "native"  # frozen


def test_the_features_the_docs_name_are_there():
    table = nc.features()
    for name in ("window_registration", "window_strict_ordering", "window_pointers",
                 "rma_load_store", "rma_native_route", "rma_network", "get_mem_stat", "gin_type", "railed_gin_type",
                 "suspend_resume", "revoke", "shrink", "dev_comm", "device_collectives"):
        assert name in table


def test_default_is_the_loaded_release():
    loaded = nc.nccl_version()
    assert nc.features() == nc.features(loaded) == nc.features(".".join(map(str, loaded)))
    assert nc.features() == nc.features(_loaded())


def test_version_helpers():
    assert version_code("2.29.7") == version_code((2, 29, 7)) == version_code(22907) == 22907
    assert version_string(23203) == "2.32.3" and version_string(None) is None
    with pytest.raises(ValueError):
        nc.features("2.29")
    with pytest.raises(TypeError):
        version_code(True)


def test_status_follows_the_thresholds():
    # native from native_since on; unsupported below `needs`; a feature never
    # goes back to unsupported once native.
    for v in ("2.28.3", "2.28.9", "2.29.2", "2.29.7", "2.30.7", "2.32.3", "2.40.0"):
        for f in nc.features(v).values():
            if f.native_since is not None and version_code(v) >= version_code(f.native_since):
                assert f.status == "native", (v, f)
            if f.needs is None:
                assert f.status == "unsupported", (v, f)
            elif version_code(v) < version_code(f.needs):
                assert f.status == "unsupported", (v, f)


def test_exported_symbols_agree_with_the_table():
    # The release each symbol arrived in, checked against the libnccl.so.2 that
    # is loaded (scripts/build-matrix.sh runs this against 2.28.9 ... 2.32.3).
    loaded = _loaded()
    checked = 0
    for row in _C._features():
        if row["symbol"] is None:
            continue
        expected = loaded >= row["nccl_since"]
        assert _C.has_symbol(row["symbol"]) == expected, (row["name"], row["symbol"],
                                                          version_string(loaded))
        checked += 1
    assert checked >= 10


def test_native_features_have_their_symbol():
    for row in _C._features():
        if row["status"] == "native" and row["symbol"] is not None:
            assert _C.has_symbol(row["symbol"]), row


def test_device_collectives_agree_with_the_kernels_check():
    f = nc.features()["device_collectives"]
    assert (f.status == "nccl_core") == nc.device.kernels_available()
    built = _C.build_nccl_version()
    assert f.needs is not None and version_code(f.needs) // 100 == built // 100


def test_rma_network_agrees_with_the_native_check():
    assert (nc.features()["rma_network"].status == "native") == _C._rma_native()


@pytest.mark.parametrize("loaded,claimed", [
    (22809, 0), (22903, 22902), (22906, 22902), (22907, 22907), (22999, 22907),
    (23000, 23000), (23007, 23007), (23203, 23203),
])
def test_claimed_struct_version(loaded, claimed):
    # 2.28: unversioned; 2.29.x: the layouts nccl_core mirrors; 2.30+: the
    # loaded release (an older claim would hide GIN and change ncclDevComm).
    assert _C._claimed_struct_version(loaded) == claimed


def _doc_matrix() -> dict[str, dict[str, str]]:
    with open(_DOC, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    start = lines.index("## Feature matrix")
    header = None
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= {"-", " ", ":"}:
            continue
        name = cells[0].strip("`")
        rows[name] = {h: c for h, c in zip(header, cells)}
    assert header is not None
    assert set(_COLUMNS) <= set(header), header
    return rows


def test_docs_matrix_lists_every_feature():
    assert set(_doc_matrix()) == set(nc.features())


@pytest.mark.parametrize("column", sorted(_COLUMNS))
def test_docs_matrix_agrees_with_the_table(column):
    table = nc.features(_COLUMNS[column])
    for name, cells in _doc_matrix().items():
        if name in _BUILD_DEPENDENT:
            continue
        # A cell starts with the status; anything after it is commentary.
        word = cells[column].split()[0].strip("*")
        assert word == table[name].status, (name, column, cells[column])


def test_suspend_resume_is_exposed_from_2_29_7():
    assert nc.features("2.28.9")["suspend_resume"].status == "unsupported"
    assert nc.features("2.28.9")["suspend_resume"].needs == "2.29.7"
    assert nc.features("2.29.7")["suspend_resume"].status == "native"
    assert "Communicator.suspend" in nc.features("2.30.7")["suspend_resume"].api
