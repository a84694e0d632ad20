"""The fixture of the CPU tests that drive the product through the lab's fake
NCCL (csrc/testing/fake_nccl.h): `fake` is installed behind the seam playing
NCCL 2.28.9, and the loaded NCCL is back after the test."""

from __future__ import annotations

import gc

import pytest


@pytest.fixture
def fake():
    pytest.importorskip("nccl_core_backend._C")
    from nccl_core_backend import _testing

    f = _testing._FakeNccl()
    f.set_version(22809)
    f.install()
    try:
        yield f
    finally:
        gc.collect()
        _testing._FakeNccl.uninstall()
