"""error_modes.py's scenarios: each fault ends in an error that names its
cause, or a torn-down process, within the bound; never a hang, never exit 0
in silence, for each value of TORCH_NCCL_ASYNC_ERROR_HANDLING."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.gpu
_port = [29800]
TIMEOUT_S = 3
TIMEOUT_MARK = "caught collective operation timeout"


def launch(scenario, world, mode, *extra, env_extra=None):
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0:
        pytest.skip("no CUDA GPU visible; runs on a GPU host (bash scripts/gpu-test.sh)")
    if gpus < world:
        pytest.skip(f"needs {world} GPUs, {gpus} visible")
    _port[0] += 1
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1",
               TORCH_NCCL_ASYNC_ERROR_HANDLING=str(mode), **(env_extra or {}))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={world}",
           "--master-port", str(_port[0]), os.path.join(ROOT, "tests", "gpu", "error_modes.py"),
           scenario, *extra]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{scenario} hung:\n{(e.stdout or '')[-3000:]}\n{(e.stderr or '')[-3000:]}")
    end = time.time()
    # Seconds from the fault's set-up (READY) to the end of the job, for
    # docs/reliability.md: NCCL_CORE_TIMINGS names a file to append them to.
    ready = [float(line.split(" at ")[1]) for line in p.stdout.splitlines()
             if line.startswith("READY rank") and " at " in line]
    if ready and os.environ.get("NCCL_CORE_TIMINGS"):
        with open(os.environ["NCCL_CORE_TIMINGS"], "a") as f:
            f.write(f"{scenario} {' '.join(extra)} mode={mode} world={world} rc={p.returncode} "
                    f"ready_to_end={end - max(ready):.1f}s\n")
    return p, end - t0, p.stdout + p.stderr


@pytest.mark.parametrize("mode", [1, 3])
def test_timeout_ends_the_process_with_the_report(mode):
    p, seconds, log = launch("stuck", 1, mode)
    assert p.returncode != 0, log[-4000:]
    assert "NO ERROR" not in log and "RAISED" not in log, log[-4000:]
    for part in (TIMEOUT_MARK, "group ", "(rank 0 of 1)", "waits in seq", "elements in",
                 "ending the process"):
        assert part in log, (part, log[-4000:])
    if mode == 1:
        assert "communicator aborted" in log, log[-4000:]
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
    p, _, log = launch("unreported", 1, mode)
    assert "RAISED DistBackendError" in p.stdout and "never raised" in p.stdout, log[-4000:]


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
    assert "rank 1 is behind: it never called seq" in log or "never raised" in log, log[-4000:]


def test_mismatched_fast_path_calls_are_named():
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


def test_abort_from_another_thread_during_a_fast_path_kernel():
    p, _, log = launch("abort_fast", 1, 2)
    assert p.returncode == 0, log[-4000:]
    assert "RAISED after" in p.stdout and "aborted" in p.stdout, log[-4000:]
    assert "DRAINED after" in p.stdout, log[-4000:]


def test_different_collectives_are_named():
    p, _, log = launch("different_op", 2, 3)
    assert p.returncode != 0, log[-4000:]
    assert "called ALLGATHER where rank 0 called BROADCAST" in log, log[-4000:]
