"""error_modes.py's scenarios: each fault ends in an error that names its
cause, or a torn-down process, within the bound; never a hang, never exit 0
in silence, for each value of TORCH_NCCL_ASYNC_ERROR_HANDLING."""

from __future__ import annotations

import os
import re
import time

import pytest

from tests.gpu import launch as launch_

pytestmark = pytest.mark.gpu
TIMEOUT_S = 3
TIMEOUT_MARK = "caught collective operation timeout"


READY_AT = re.compile(r"READY rank \d+ at (\d+\.\d{3})")


def launch(scenario, world, mode, *extra, env_extra=None):
    """Runs error_modes.py `scenario` at `world` ranks with
    TORCH_NCCL_ASYNC_ERROR_HANDLING=`mode` (None: unset, torch's default).
    Returns the job, its seconds from the fault's set-up (the last rank's
    READY) to its end, and its log.  Liveness bounds apply to those seconds:
    start-up (imports, the communicator) is no part of what a fault costs and
    takes much longer on a loaded host."""
    launch_.require(world)
    env = dict(env_extra or {}, TORCH_NCCL_ASYNC_ERROR_HANDLING=None if mode is None else str(mode))
    job = launch_.torchrun(["tests/gpu/error_modes.py", scenario, *extra], world, env=env,
                           timeout=120, name=f"error_modes_{scenario}_{'_'.join(extra)}_{mode}")
    end = time.time()
    # Seconds from the fault's set-up (READY) to the end of the job, for
    # docs/reliability.md: NCCL_CORE_TIMINGS names a file to append them to.
    # Ranks share the pipe: one rank's line can land inside another's.
    ready = [float(t) for t in READY_AT.findall(job.stdout)]
    if ready and os.environ.get("NCCL_CORE_TIMINGS"):
        with open(os.environ["NCCL_CORE_TIMINGS"], "a") as f:
            f.write(f"{scenario} {' '.join(extra)} mode={mode} world={world} rc={job.returncode} "
                    f"ready_to_end={end - max(ready):.1f}s transport="
                    f"{'sockets (simulated hosts)' if launch_.simulated(world) else 'NVLink/P2P'}\n")
    return job, (end - max(ready)) if ready else job.seconds, job.log


@pytest.mark.parametrize("mode", [1, 3])
def test_timeout_ends_the_process_with_the_report(mode):
    p, seconds, log = launch("stuck", 1, mode)
    assert p.returncode != 0, log[-4000:]
    assert "NO ERROR" not in log and "RAISED" not in log, log[-4000:]
    for part in (TIMEOUT_MARK, "group ", "(rank 0 of 1)", "waits in seq", "elements in",
                 "ending the process"):
        assert part in log, (part, log[-4000:])
    if mode == 1:
        # No abort before the end: it would release the stuck kernel first.
        assert "releases the communicator" in log and "communicator aborted" not in log, log[-4000:]
    assert seconds < 60, seconds


@pytest.mark.parametrize("mode,kept", [(0, True), (2, False)])
@pytest.mark.parametrize("use_async", [False, True])
def test_timeout_raises_in_the_program(mode, kept, use_async):
    p, _, log = launch("stuck", 1, mode, *(["--async"] if use_async else []))
    assert p.returncode == 0, log[-4000:]
    assert "RAISED DistBackendError" in p.stdout, log[-4000:]
    assert TIMEOUT_MARK in p.stdout, log[-4000:]
    assert ("kept for recovery" in p.stdout) == kept, log[-4000:]


@pytest.mark.parametrize("mode", [0, 2])
def test_unreported_error_raises_at_destroy(mode):
    # destroy_process_group() 1 s after the timeout: inside the grace.
    p, _, log = launch("unreported", 1, mode, "--sleep", str(TIMEOUT_S + 1))
    assert "RAISED DistBackendError" in p.stdout and "never raised" in p.stdout, log[-4000:]


@pytest.mark.parametrize("mode", [0, 2])
def test_unraised_error_ends_the_process(mode):
    # No program thread touches the group for 6 s after the timeout: the
    # error reaches nobody, so the process ends with the report.
    p, _, log = launch("unreported", 1, mode, "--sleep", str(TIMEOUT_S + 6))
    assert p.returncode != 0 and "NO ERROR" not in p.stdout and "RAISED" not in p.stdout, log[-4000:]
    assert TIMEOUT_MARK in log and "reached no program thread" in log, log[-4000:]


def test_stuck_watchdog_ends_the_process():
    p, seconds, log = launch("heartbeat", 1, 3, env_extra={"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "2"})
    assert p.returncode != 0 and "NOT ENDED" not in log, log[-4000:]
    assert "heartbeat monitor" in log and "made no progress" in log, log[-4000:]
    assert seconds < 30, seconds


@pytest.mark.parametrize("mode", [2, 3])
def test_skipped_last_collective_never_passes(mode):
    p, _, log = launch("skip_last", 2, mode)
    assert p.returncode != 0, log[-4000:]
    assert "FINISHED rank 0" not in p.stdout, log[-4000:]
    assert "rank 1 is behind: it never called collective" in log or "never raised" in log, log[-4000:]


def test_mismatched_fast_path_calls_are_named():
    launch_.require_nvlink(2)
    p, _, log = launch("mismatch_fast", 2, 3)
    assert p.returncode != 0, log[-4000:]
    assert "desync found by the fast path" in log, log[-4000:]
    assert "passed different sizes or dtypes to ALLREDUCE" in log, log[-4000:]
    assert "1024 elements in" in log and "2048 elements in" in log, log[-4000:]


@pytest.mark.parametrize("mode", [0, 2, 3])
def test_sigkilled_rank_ends_the_job(mode):
    p, seconds, log = launch("sigkill", 2, mode)
    assert p.returncode != 0, log[-4000:]
    assert "KILLED at" in p.stdout, log[-4000:]
    assert seconds < 60, seconds


@pytest.mark.parametrize("scenario,world", [("abort_fast", 1), ("abort_nccl", 2)])
def test_abort_from_another_thread_during_a_collective(scenario, world):
    # abort_fast: a fast-path kernel queued behind a spin; abort_nccl: an
    # NCCL-path all_reduce with no partner (the push off: the path table
    # would push its 4 MiB, whose first call waits for the peer on the host).
    p, _, log = launch(scenario, world, 2, env_extra={"NCCL_CORE_PUSH_MAX_BYTES": "0"})
    assert p.returncode == 0, log[-4000:]
    assert "RAISED after" in p.stdout and "aborted" in p.stdout, log[-4000:]
    assert "DRAINED after" in p.stdout, log[-4000:]


@pytest.mark.parametrize("repeat", range(3))  # the race: exit against the abort's end
def test_program_ends_by_a_host_call_timeout(repeat):
    """The push's first call sets its staging up with the peer, a host call
    that the monitor bounds: with no peer it times out, aborts the
    communicator and raises, and the program ends by that exception while
    the abort may still run.  The communicator must not be freed after
    exit() began (the CUDA allocator may be gone: std::terminate, SIGABRT)."""
    launch_.require_nvlink(2)
    push = {"NCCL_CORE_PUSH_MIN_BYTES": str(256 << 10), "NCCL_CORE_PUSH_MAX_BYTES": str(16 << 20)}
    p, _, log = launch("exit_after_host_timeout", 2, 2, env_extra=push)
    assert "did not return within" in log, log[-4000:]
    assert "terminate called" not in log and "SIGABRT" not in log, log[-4000:]
    # torchrun's report: rank 0 ended with Python's status for the exception.
    assert re.search(r"exitcode\s*:\s*1 \(pid", log), log[-4000:]


def test_different_sizes_on_nccls_path_are_named():
    p, seconds, log = launch("mismatch_size", 2, 3)
    assert p.returncode != 0 and "FINISHED rank 0" not in p.stdout, log[-4000:]
    assert "passed different sizes or dtypes to ALLREDUCE" in log, log[-4000:]
    assert "262144 elements in" in log and "524288 elements in" in log, log[-4000:]
    assert seconds < 60, seconds


def test_different_collectives_are_named():
    p, _, log = launch("different_op", 2, 3)
    assert p.returncode != 0, log[-4000:]
    # Whichever rank's check looks first names the pair from its side.
    assert re.search(r"rank 1 called ALLGATHER where rank 0 called BROADCAST|"
                     r"rank 0 called BROADCAST where rank 1 called ALLGATHER", log), log[-4000:]


def _stamp(log: str, mark: str) -> float | None:
    for line in log.splitlines():
        if line.startswith(mark) and " at " in line:
            return float(line.split(" at ")[1].split()[0].rstrip(":"))
    return None


@pytest.mark.parametrize("peer", ["alive", "exited"])
@pytest.mark.parametrize("mode", [None, 0, 1, 2, 3])
def test_skipped_call_never_synchronizes_in_silence(mode, peer):
    """Rank 0's last all_reduce has no partner: its synchronize must
    never return as if the call had completed, in any mode or unset; the
    program gets a named error or the process is torn down within timeout +
    5 s of the fault, and the log names the cause."""
    job, _, log = launch("skip", 2, mode, "--peer", peer)
    assert "SYNCED rank 0" not in job.stdout, log[-4000:]
    assert job.returncode != 0, log[-4000:]
    fault = _stamp(job.stdout, "FAULT at")
    assert fault is not None, log[-4000:]
    if peer == "alive":
        assert TIMEOUT_MARK in log, log[-4000:]
    else:
        assert TIMEOUT_MARK in log or "NCCL async error" in log, log[-4000:]
    raised = _stamp(job.stdout, "RAISED rank 0")
    ended = _stamp(log, "[nccl_core] ending the process")
    end = raised if raised is not None else ended
    assert end is not None, f"neither raised nor torn down with the report:\n{log[-4000:]}"
    assert end - fault <= TIMEOUT_S + 5, (end - fault, log[-4000:])
    # One stuck call, one report (a second one gathered the desync answers
    # again and held the teardown past the bound).
    reports = set(re.findall(r"answers gathered in \d+ ms", log))
    assert len(reports) <= 1, (reports, log[-4000:])


NAN = {"TORCH_NCCL_NAN_CHECK": "1"}


@pytest.mark.parametrize("mode", [1, 3])
def test_nan_ends_the_process_with_the_report(mode):
    # As backend nccl's device trap ends it; the report names op and element.
    p, seconds, log = launch("nan", 1, mode, env_extra=NAN)
    assert p.returncode != 0 and "NO ERROR" not in log and "RAISED" not in log, log[-4000:]
    for part in ("NaN check", "allreduce (seq 2", "element 5", "ending the process"):
        assert part in log, (part, log[-4000:])
    assert seconds < 60, seconds


@pytest.mark.parametrize("mode", [0, 2])
def test_nan_raises_at_the_next_call(mode):
    p, _, log = launch("nan", 1, mode, "--call", env_extra=NAN)
    assert p.returncode == 0, log[-4000:]
    assert "RAISED DistBackendError" in p.stdout and "element 5" in p.stdout, log[-4000:]
    # A NaN is no communication failure: nothing is aborted for it.
    assert "communicator is kept" in p.stdout and "aborted" not in p.stdout, log[-4000:]


@pytest.mark.parametrize("mode", [0, 2])
def test_unraised_nan_ends_the_process(mode):
    p, _, log = launch("nan", 1, mode, env_extra=NAN)
    assert p.returncode != 0 and "NO ERROR" not in p.stdout, log[-4000:]
    assert "NaN check" in log and "reached no program thread" in log, log[-4000:]


def test_unmatched_call_at_exit_ends_cleanly():
    # torch's suite, test_ddp_model_diff_shape_across_ranks: on nccl_core rank 0
    # once died by SIGABRT in destroy_process_group ("ending the process")
    # where backend nccl ended cleanly.
    p, seconds, log = launch("unmatched_at_exit", 2, 3)
    assert p.returncode == 0, log[-4000:]
    assert "FINISHED rank 0" in p.stdout and "FINISHED rank 1" in p.stdout, log[-4000:]
    assert "ending the process" not in log, log[-4000:]
    assert seconds < 60, seconds


@pytest.mark.parametrize("mode", [2, 3])
def test_blocking_wait_raises_in_wait_and_never_ends_the_process(mode):
    # As backend nccl, which starts no watchdog with TORCH_NCCL_BLOCKING_WAIT:
    # the timeout reaches the program in wait(), however late it waits.
    p, _, log = launch("late_wait", 1, mode, env_extra={"TORCH_NCCL_BLOCKING_WAIT": "1"})
    assert p.returncode == 0, log[-4000:]
    assert "ALIVE after the timeout" in p.stdout, log[-4000:]
    assert "RAISED DistBackendError" in p.stdout and TIMEOUT_MARK in p.stdout, log[-4000:]
    assert "ending the process" not in log, log[-4000:]
    # The call's timeout had passed before wait() (the program slept
    # TIMEOUT_S + 5 s after the call): wait() decides at once, as backend
    # nccl's checkTimeout counts from the work's start
    # (counting from the wait call would have the op run >= 2 * TIMEOUT_S +
    # 5 s before it raised).  (wait() itself returns later: aborting the
    # communicator waits behind the test's spinning kernel, on nccl too.)
    ran_ms = int(re.search(r"timed out after running for ([0-9]+) ms", p.stdout).group(1))
    assert ran_ms < (TIMEOUT_S + 5 + 1.5) * 1000, p.stdout[-2000:]
