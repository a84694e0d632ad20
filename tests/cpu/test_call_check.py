"""The call check's comparison (csrc/failures/call_check.cpp): which
differences between two ranks' collectives it reports, and which it must
not (sizes that legitimately differ between ranks)."""

from __future__ import annotations

import pytest

# A broken build fails here: the CPU tests run after the extension is built.
from nccl_core_backend import _testing  # noqa: E402


def calls(*lines, count=None):
    """The store format: "count hash" then "coll seq OP DTYPE IN OUT" lines."""
    n = count if count is not None else len(lines)
    return f"{n} 12345\n" + "".join(line + "\n" for line in lines)


def test_different_collectives_are_named():
    mine = calls("1 1 ALLREDUCE Float 8 8", "2 2 BROADCAST Long 8 8")
    theirs = calls("1 1 ALLREDUCE Float 8 8", "2 2 ALLGATHER Long 8 16")
    msg = _testing._call_check_compare(0, mine, 1, theirs)
    assert "rank 1 called ALLGATHER where rank 0 called BROADCAST" in msg, msg
    assert "collective #2" in msg and "Long, 8 elements in, 16 out" in msg, msg


def test_different_sizes_of_a_sized_op_are_named():
    mine = calls("1 3 ALLREDUCE Float 1024 1024")
    theirs = calls("1 3 ALLREDUCE Float 2048 2048")
    msg = _testing._call_check_compare(1, mine, 0, theirs)
    assert "rank 0 passed different sizes or dtypes to ALLREDUCE" in msg, msg
    assert "2048 elements in" in msg and "1024 elements in" in msg, msg


def test_different_dtypes_are_named_for_every_op():
    mine = calls("1 1 ALLTOALL_BASE Float 10 12")
    theirs = calls("1 1 ALLTOALL_BASE Half 10 12")
    assert "different sizes or dtypes to ALLTOALL_BASE" in _testing._call_check_compare(0, mine, 1, theirs)


@pytest.mark.parametrize("op", ["ALLGATHER", "REDUCE_SCATTER", "ALLTOALL_BASE", "ALLTOALL",
                                "GATHER", "SCATTER"])
def test_sizes_that_differ_between_ranks_legitimately_pass(op):
    # Uneven all_gather / reduce_scatter, uneven splits, roots of gather/scatter.
    mine = calls(f"1 1 {op} Float 10 40")
    theirs = calls(f"1 1 {op} Float 11 0")
    assert _testing._call_check_compare(0, mine, 1, theirs) == ""


def test_matching_calls_and_calls_only_one_side_has_pass():
    mine = calls("5 9 ALLREDUCE Float 8 8", "6 12 _ALLGATHER_BASE BFloat16 4 8", count=6)
    theirs = calls("6 11 _ALLGATHER_BASE BFloat16 4 8", "7 12 BARRIER Float 1 1", count=7)
    # Collective #6 agrees (the seq differs: p2p calls in between); #5 and #7
    # are on one side only.
    assert _testing._call_check_compare(0, mine, 1, theirs) == ""


def test_lines_that_are_not_calls_are_ignored_and_bad_heads_refused():
    mine = calls("1 1 ALLREDUCE Float 8 8")
    theirs = "1 77\ngarbage\n0 1 ALLREDUCE Float 9 9\n1 1 ALLREDUCE Float 8 8\n"
    assert _testing._call_check_compare(0, mine, 1, theirs) == ""
    for bad in ("", "x 1\n", "1 -5\n", "1\n"):
        with pytest.raises(ValueError, match="call list"):
            _testing._call_check_compare(0, mine, 1, bad)


# --- end to end: two recorders and checks on one in-memory store ----------

def _ar(n):
    return ("ALLREDUCE", "Float", n, n)


def test_pair_agreeing_calls_find_nothing_p2p_aside():
    r0 = [_ar(8), ("SEND", "Float", 4, 0), _ar(16), ("BROADCAST", "Float", 4, 4)]
    r1 = [_ar(8), _ar(16), ("RECV", "Float", 0, 4), ("RECV", "Float", 0, 4),
          ("BROADCAST", "Float", 4, 4)]
    assert _testing._call_check_pair([r0, r1]) == ["", ""]


def test_pair_different_collective_found_by_both_ranks():
    r0 = [_ar(8), ("BROADCAST", "Float", 8, 8)]
    r1 = [_ar(8), ("ALLGATHER", "Float", 8, 16)]
    found = _testing._call_check_pair([r0, r1])
    assert "rank 1 called ALLGATHER where rank 0 called BROADCAST" in found[0], found
    assert "rank 0 called BROADCAST where rank 1 called ALLGATHER" in found[1], found


def test_pair_different_size_found():
    found = _testing._call_check_pair([[_ar(1024)], [_ar(2048)]])
    assert all("passed different sizes or dtypes to ALLREDUCE" in f for f in found), found


def test_mismatch_older_than_the_lists_is_still_found_by_the_hash():
    # 100 matching calls after the difference: the lists (64 calls) no longer
    # hold it; the running hash still differs.
    r0 = [_ar(4)] + [_ar(8)] * 100
    r1 = [_ar(5)] + [_ar(8)] * 100
    found = _testing._call_check_pair([r0, r1])
    assert all("differ" in f and "collective #101" in f for f in found), found


def test_a_rank_behind_is_compared_once_it_catches_up():
    # Rank 1 has made fewer calls: rank 0 keeps its count until rank 1's
    # look shows the same calls; nothing differs, nothing is found.
    assert _testing._call_check_pair([[_ar(8)] * 3, [_ar(8)] * 2]) == ["", ""]


def test_three_ranks_each_compare_with_their_neighbour():
    same = [_ar(8), ("BROADCAST", "Float", 8, 8)]
    odd = [_ar(8), ("REDUCE", "Float", 8, 8)]
    found = _testing._call_check_pair([same, same, odd])
    assert found[0] == "" and "rank 2 called REDUCE where rank 1 called BROADCAST" in found[1], found
    assert "rank 0 called BROADCAST where rank 2 called REDUCE" in found[2], found
