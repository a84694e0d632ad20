"""The control logic above the NCCL seam, on the lab's fake NCCL (no GPU).

Each test scripts the fake (csrc/testing/fake_nccl.h), drives the product's
own Communicator through it and checks the calls NCCL was given and what the
program saw.  They fail when the control path breaks: a config field not
handed to ncclCommInitRankConfig, a failed or late init not aborted, a
non-blocking init not polled to its end, split's colour/key or shrink's list
and flag mapped wrong, abort run twice, finalize out of order, a newer call
not refused by version, or an error message without the call's name and
NCCL's last-error text."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import _testing  # noqa: E402

SYSTEM_ERROR = 2  # ncclSystemError
INVALID_USAGE = 5  # ncclInvalidUsage


def test_create_hands_the_config_to_nccl_and_reads_rank_and_size(fake):
    comm = _testing._fake_communicator(4, 2, min_ctas=8, max_ctas=16, comm_name="tp")
    assert (comm.rank, comm.nranks) == (2, 4)
    (init,) = fake.calls_to("CommInitRankConfig")
    assert "nranks=4, rank=2, blocking=1, minCTAs=8, maxCTAs=16" in init
    assert init.endswith("commName=tp)")
    comm.abort()


def test_a_failed_init_is_aborted_and_names_the_call_and_nccls_text(fake):
    fake.fail("CommInitRankConfig", SYSTEM_ERROR)
    fake.set_last_error("fake: peer 3 unreachable")
    with pytest.raises(nc.NcclError) as e:
        _testing._fake_communicator(4, 0)
    assert "ncclCommInitRankConfig failed" in str(e.value)
    assert "fake: peer 3 unreachable" in str(e.value)
    assert fake.calls_to("CommAbort") == ["CommAbort"]
    assert fake.live_comms == 0


def test_an_init_past_its_timeout_raises_and_its_late_handle_is_aborted(fake):
    fake.set_init_delay_ms(600)
    t0 = time.monotonic()
    with pytest.raises(nc.NcclError, match="did not complete within 100 ms"):
        _testing._fake_communicator(2, 0, timeout_ms=100)
    assert time.monotonic() - t0 < 0.5  # the caller gave up; the init thread goes on
    deadline = time.monotonic() + 5
    while not fake.calls_to("CommAbort") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake.calls_to("CommAbort") == ["CommAbort"]
    assert fake.live_comms == 0


def test_a_non_blocking_init_is_polled_to_its_end(fake):
    fake.stay_in_progress(5)
    comm = _testing._fake_communicator(2, 1, blocking=False)
    assert comm.is_valid and comm.rank == 1
    assert "blocking=0" in fake.calls_to("CommInitRankConfig")[0]
    comm.abort()


def test_a_non_blocking_init_that_never_ends_is_aborted_at_its_timeout(fake):
    fake.stay_in_progress(-1)
    with pytest.raises(nc.NcclError, match="did not complete within 150 ms"):
        _testing._fake_communicator(2, 0, blocking=False, timeout_ms=150)
    assert fake.calls_to("CommAbort") == ["CommAbort"]


def test_split_passes_colour_and_key_and_no_colour_gives_no_child(fake):
    parent = _testing._fake_communicator(4, 1)
    child = _testing._split(parent, 3, 1)
    assert fake.calls_to("CommSplit")[-1] == "CommSplit(color=3, key=1, blocking=1)"
    assert child is not None and child.nranks == 4 and child.rank == 1
    assert _testing._split(parent, -1, 0) is None
    assert fake.calls_to("CommSplit")[-1] == "CommSplit(color=NOCOLOR, key=0, blocking=1)"
    child.abort()
    parent.abort()


def test_shrink_passes_the_list_and_flag_and_refuses_an_empty_list(fake):
    comm = _testing._fake_communicator(4, 2)
    with pytest.raises(nc.NcclInvalid, match="names no rank"):
        comm.shrink([])
    with pytest.raises(nc.NcclInvalid, match="contains this rank"):
        comm.shrink([2])
    assert fake.calls_to("CommShrink") == []
    child = comm.shrink([0, 3], flag=1)
    assert fake.calls_to("CommShrink") == ["CommShrink(exclude=[0,3], flags=1)"]
    assert (child.nranks, child.rank) == (2, 1)
    child.abort()
    comm.abort()


def test_abort_runs_once_and_finalize_flushes_before_destroy(fake):
    a = _testing._fake_communicator(2, 0)
    a.abort()
    a.abort()
    a.destroy()  # after an abort: nothing left to do
    assert fake.calls_to("CommAbort") == ["CommAbort"]
    assert fake.calls_to("CommDestroy") == []
    assert not a.is_valid
    with pytest.raises(nc.NcclInvalid, match="aborted"):
        a.get_async_error()
    fake.clear_calls()
    b = _testing._fake_communicator(2, 0)
    b.finalize()
    b.finalize()
    ends = [c for c in fake.calls if c in ("CommFinalize", "CommDestroy", "CommAbort")]
    assert ends == ["CommFinalize", "CommDestroy"]


def test_a_newer_call_is_refused_by_version_with_the_release_named(fake):
    comm = _testing._fake_communicator(2, 0)
    fake.hide("ncclCommMemStats")
    with pytest.raises(nc.NcclUnsupported) as e:
        comm.get_mem_stat(3)
    assert "get_mem_stat needs NCCL 2.29.7 or newer (ncclCommMemStats)" in str(e.value)
    assert "the loaded NCCL is 2.28.9" in str(e.value)
    assert fake.calls_to("CommMemStats") == []
    comm.abort()


def test_a_newer_call_the_library_provides_reaches_it(fake):
    fake.set_version(23003)
    comm = _testing._fake_communicator(2, 0)
    assert comm.get_mem_stat(3) == 1003
    assert fake.calls_to("CommMemStats") == ["CommMemStats(stat=3)"]
    comm.suspend()
    assert fake.calls_to("CommSuspend") == ["CommSuspend(flags=1)"]
    comm.abort()


def test_the_loaded_version_is_the_seams(fake):
    fake.set_version(23203)
    assert nc.nccl_version() == (2, 32, 3)


def test_a_failing_call_names_itself_and_carries_nccls_last_error(fake):
    comm = _testing._fake_communicator(2, 0)
    fake.fail("CommSuspend", INVALID_USAGE)
    fake.set_last_error("fake: suspend refused")
    with pytest.raises(nc.NcclError) as e:
        comm.suspend()
    assert str(e.value).startswith("ncclCommSuspend failed: invalid usage (fake: suspend refused)")
    assert comm.get_last_error() == "fake: suspend refused"
    comm.abort()


def test_uninstall_is_refused_while_a_fake_communicator_lives(fake):
    comm = _testing._fake_communicator(2, 0)
    with pytest.raises(nc.NcclInvalid, match="live communicators"):
        _testing._FakeNccl.uninstall()
    fake.install()  # still the one in place
    comm.abort()
