"""The call check's comparison (csrc/backend/call_check.cpp): which
differences between two ranks' collectives it reports, and which it must
not (sizes that legitimately differ between ranks)."""

from __future__ import annotations

import pytest

_C = pytest.importorskip("nccl_core_backend._C")


def calls(*lines, count=None):
    """The store format: "count hash" then "coll seq OP DTYPE IN OUT" lines."""
    n = count if count is not None else len(lines)
    return f"{n} 12345\n" + "".join(line + "\n" for line in lines)


def test_different_collectives_are_named():
    mine = calls("1 1 ALLREDUCE Float 8 8", "2 2 BROADCAST Long 8 8")
    theirs = calls("1 1 ALLREDUCE Float 8 8", "2 2 ALLGATHER Long 8 16")
    msg = _C._call_check_compare(0, mine, 1, theirs)
    assert "rank 1 called ALLGATHER where rank 0 called BROADCAST" in msg, msg
    assert "collective #2" in msg and "Long, 8 elements in, 16 out" in msg, msg


def test_different_sizes_of_a_sized_op_are_named():
    mine = calls("1 3 ALLREDUCE Float 1024 1024")
    theirs = calls("1 3 ALLREDUCE Float 2048 2048")
    msg = _C._call_check_compare(1, mine, 0, theirs)
    assert "rank 0 passed different sizes or dtypes to ALLREDUCE" in msg, msg
    assert "2048 elements in" in msg and "1024 elements in" in msg, msg


def test_different_dtypes_are_named_for_every_op():
    mine = calls("1 1 ALLTOALL_BASE Float 10 12")
    theirs = calls("1 1 ALLTOALL_BASE Half 10 12")
    assert "different sizes or dtypes to ALLTOALL_BASE" in _C._call_check_compare(0, mine, 1, theirs)


@pytest.mark.parametrize("op", ["ALLGATHER", "REDUCE_SCATTER", "ALLTOALL_BASE", "ALLTOALL",
                                "GATHER", "SCATTER"])
def test_sizes_that_differ_between_ranks_legitimately_pass(op):
    # Uneven all_gather / reduce_scatter, uneven splits, roots of gather/scatter.
    mine = calls(f"1 1 {op} Float 10 40")
    theirs = calls(f"1 1 {op} Float 11 0")
    assert _C._call_check_compare(0, mine, 1, theirs) == ""


def test_matching_calls_and_calls_only_one_side_has_pass():
    mine = calls("5 9 ALLREDUCE Float 8 8", "6 12 _ALLGATHER_BASE BFloat16 4 8", count=6)
    theirs = calls("6 11 _ALLGATHER_BASE BFloat16 4 8", "7 12 BARRIER Float 1 1", count=7)
    # Collective #6 agrees (the seq differs: p2p calls in between); #5 and #7
    # are on one side only.
    assert _C._call_check_compare(0, mine, 1, theirs) == ""


def test_lines_that_are_not_calls_are_ignored_and_bad_heads_refused():
    mine = calls("1 1 ALLREDUCE Float 8 8")
    theirs = "1 77\ngarbage\n0 1 ALLREDUCE Float 9 9\n1 1 ALLREDUCE Float 8 8\n"
    assert _C._call_check_compare(0, mine, 1, theirs) == ""
    for bad in ("", "x 1\n", "1 -5\n", "1\n"):
        with pytest.raises(ValueError, match="call list"):
            _C._call_check_compare(0, mine, 1, bad)
