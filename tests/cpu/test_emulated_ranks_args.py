"""The emulated ranks (csrc/testing/emulated_ranks.h, tests' private binding)
refuse sizes and counts that cannot work before they touch a GPU, so these
run without one; the kernels themselves are checked on a GPU
(tests/gpu/cases/emulated_ranks.py)."""

from __future__ import annotations

import pytest

# A broken build fails here: the CPU tests run after the extension is built.
from nccl_core_backend import _testing  # noqa: E402

HALF = 1 << 20


@pytest.mark.parametrize("nranks", [0, -1, 17])
def test_rank_counts_outside_one_to_sixteen(nranks):
    with pytest.raises(ValueError, match="nranks"):
        _testing._EmulatedRanks(nranks, HALF)


def test_a_window_size_that_would_wrap():
    with pytest.raises(ValueError, match="overflows|does not fit"):
        _testing._EmulatedRanks(2, 2**64 - 8)
    with pytest.raises(ValueError, match="overflows|does not fit"):
        _testing._EmulatedRanks(16, 2**62)
    with pytest.raises(ValueError, match="does not fit"):
        _testing._EmulatedRanks(1, 2**62)  # 2**63 + flags: past int64
    with pytest.raises(ValueError, match="one-way"):
        _testing._EmulatedRanks(16, 2**59, one_way_max_bytes=2**62)  # 32 slots of 2**60


def test_empty_windows_negative_grids_and_oversized_push_staging():
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        _testing._EmulatedRanks(2, 0)
    with pytest.raises(ValueError, match="max_blocks -1 is negative"):
        _testing._EmulatedRanks(2, HALF, max_blocks=-1)
    with pytest.raises(ValueError, match="push_max_bytes"):
        _testing._EmulatedRanks(2, HALF, push_max_bytes=2**50)
