"""The desync report's analysis (csrc/failures/desync.cpp) on recorded ops:
what one rank's message says about the others, for each kind of desync."""

from __future__ import annotations

import pytest

# A broken build fails here: the CPU tests run after the extension is built.
from nccl_core_backend import _testing  # noqa: E402


def answer(status, *ops, gen=1):
    return f"gen {gen} status {status}\n" + "".join(op + "\n" for op in ops)


def test_different_collectives_are_named():
    mine = ["seq 4 coll 4 ALLGATHER Long 1>2 done", "seq 5 coll 5 BROADCAST Long 8>8 pending"]
    peer = answer("running", "seq 4 coll 4 ALLGATHER Long 1>2 done", "seq 5 coll 5 ALLGATHER Long 1>2 pending")
    msg = _testing._desync_analyse(0, mine, [None, peer])
    assert "rank 1 called ALLGATHER where rank 0 called BROADCAST (collective 5)" in msg, msg
    assert "rank 0 waits in seq 5 (collective 5) BROADCAST (Long, 8 elements in, 8 out)" in msg, msg


def test_a_rank_that_skipped_the_call_is_behind():
    mine = ["seq 199 coll 199 ALLREDUCE Float 1048576>1048576 done",
            "seq 200 coll 200 ALLREDUCE Float 1048576>1048576 pending"]
    peer = answer("shutdown", "seq 199 coll 199 ALLREDUCE Float 1048576>1048576 done", gen=2**63 - 1)
    msg = _testing._desync_analyse(0, mine, [None, peer])
    assert "rank 1 is behind: it never called collective 200 (ALLREDUCE); it has destroyed its group" in msg, msg
    assert "its last call was collective 199 ALLREDUCE" in msg, msg


def test_different_sizes_are_named():
    mine = ["seq 7 coll 7 ALLREDUCE Float 1024>1024 pending"]
    peer = answer("running", "seq 7 coll 7 ALLREDUCE Float 2048>2048 pending")
    msg = _testing._desync_analyse(1, mine, [peer, None])
    assert "rank 0 passed different sizes or dtypes to ALLREDUCE (collective 7)" in msg, msg
    assert "2048 elements in" in msg and "1024 elements in" in msg, msg


def test_missing_and_waiting_peers():
    mine = ["seq 3 coll 3 ALLREDUCE Float 16>16 pending"]
    waiting = answer("stuck", "seq 3 coll 3 ALLREDUCE Float 16>16 pending")
    msg = _testing._desync_analyse(0, mine, [None, waiting, None])
    assert "rank 1 is also waiting in collective 3" in msg, msg
    assert "rank 2 did not answer" in msg, msg
    assert "no rank called a different op" in msg, msg


def test_a_mismatch_found_on_a_finished_call():
    mine = ["seq 2 coll 2 ALLREDUCE Float 1024>1024 done", "seq 3 coll 3 BROADCAST Float 8>8 done"]
    peer = answer("running", "seq 2 coll 2 ALLREDUCE Float 2048>2048 done")
    msg = _testing._desync_analyse(0, mine, [None, peer], at=2)
    assert "rank 1 passed different sizes or dtypes to ALLREDUCE (collective 2)" in msg, msg
    assert "rank 0 made seq 2 (collective 2) ALLREDUCE" in msg, msg


def test_a_peer_far_ahead_and_malformed_input():
    mine = ["seq 3 coll 3 ALLREDUCE Float 16>16 pending"]
    ahead = answer("running", "seq 40 coll 40 ALLREDUCE Float 16>16 done")
    assert "rank 1 is past collective 3" in _testing._desync_analyse(0, mine, [None, ahead])
    with pytest.raises(ValueError, match="not an op line"):
        _testing._desync_analyse(0, ["nonsense"], [None])
    with pytest.raises(ValueError, match="not an answer"):
        _testing._desync_analyse(0, mine, [None, "gen x"])


def test_ranks_that_made_different_sends_match_by_collective():
    # Rank 0 sent twice (a pipeline's first stage), rank 1 received once,
    # rank 2 made none: their seqs differ at the same collective.
    mine = ["seq 1 coll 0 SEND Float 8>0 done", "seq 2 coll 0 SEND Float 8>0 done",
            "seq 3 coll 1 ALLREDUCE Float 16>16 pending"]
    receiver = answer("stuck", "seq 1 coll 0 RECV Float 0>8 done", "seq 2 coll 1 ALLREDUCE Float 16>16 pending")
    other = answer("running", "seq 1 coll 1 ALLREDUCE Float 32>32 pending")
    msg = _testing._desync_analyse(0, mine, [None, receiver, other])
    assert "rank 1 is also waiting in collective 1" in msg, msg
    assert "rank 2 passed different sizes or dtypes to ALLREDUCE (collective 1)" in msg, msg
    assert "rank 0 waits in seq 3 (collective 1) ALLREDUCE" in msg, msg
