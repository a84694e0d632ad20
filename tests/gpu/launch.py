"""One way for the GPU tests to start torchrun jobs.

``require(world)`` skips a test that cannot run here, with the reason; where
the visible GPUs are fewer than the ranks, the ranks run as simulated hosts
(``nccl_core_backend.simhosts``) unless ``NCCL_CORE_SIM_HOSTS=0``.
``torchrun(...)`` starts the job on a free port with NVLink multicast off,
bounded in time, and keeps its output under ``NCCL_CORE_GPU_LOG_DIR``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every process these tests start keeps NVLink multicast off (shared hosts).
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


def gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def simulated(world: int) -> bool:
    """Whether a job of `world` ranks on this host runs as simulated hosts
    (what each of its ranks will find, nccl_core_backend.simhosts)."""
    from nccl_core_backend import simhosts

    return simhosts.enabled(dict(os.environ, LOCAL_WORLD_SIZE=str(world)), gpus())


def require(world: int, what: str = "runs") -> None:
    """Skips the calling test where `world` ranks cannot run here."""
    n = gpus()
    if n == 0:
        pytest.skip(f"no CUDA GPU visible; {what} on a GPU host (bash scripts/gpu-test.sh)")
    if n < world and os.environ.get("NCCL_CORE_SIM_HOSTS") == "0":
        pytest.skip(f"needs {world} GPUs, {n} visible (NCCL_CORE_SIM_HOSTS=0 keeps the ranks "
                    "from running as simulated hosts)")


def require_nvlink(world: int) -> None:
    """Skips a test that needs `world` ranks on NVLink peers."""
    require(world)
    if simulated(world):
        pytest.skip(f"needs {world} NVLink peers ({gpus()} GPU visible): nccl_core's own kernels, "
                    "LSA windows and one-sided puts over NVLink cannot run on simulated hosts")


def torchrun_cmd(world: int) -> list[str]:
    """torchrun for one node of `world` ranks.  ``--standalone``: the agent's
    store binds a port the system picks, so jobs started side by side (pytest
    -n, several parts at once) never race for one."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The suite's cases exercise the fast path in eager calls, where the path
# table sends small calls to NCCL (csrc/nvlink/path_table.cpp): its earlier
# eager default for groups that set no limit of their own, unless the caller
# sets another.  The table's own choice is tested by
# fast_path_by_mode_from_the_path_table and torch's suite.
SUITE_FAST_PATH = {"NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES": str(256 << 10)}

# torch >= 2.15 attaches its flight recorder to every group, which dumps its
# trace through the backend's abort hooks before a failing process ends; with
# C++ stack traces (its default) the dump takes seconds, which the error-mode
# bounds on the time a fault costs would count as ours.  The dump itself still
# runs (torch215_process.py's abort_hook checks it).
FLIGHT_RECORDER = {"TORCH_INCLUDE_STACK_TRACE": "0"}


def env_for(extra: dict | None = None) -> dict:
    """The job's environment: this one, NVLink multicast off, the suite's
    fast-path limit and the flight recorder's dump without stack traces unless
    set, the repo on the path, and `extra` (a value of None removes the
    variable)."""
    env = dict(SUITE_FAST_PATH, **FLIGHT_RECORDER, **os.environ)
    env.update(PYTHONUNBUFFERED="1", **NO_MULTICAST)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def save_log(name: str, text: str) -> None:
    log_dir = os.environ.get("NCCL_CORE_GPU_LOG_DIR")
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:120]
        with open(os.path.join(log_dir, f"{safe}.log"), "w") as f:
            f.write(text)


class Job:
    """A finished torchrun job: exit code, output, and wall seconds."""

    def __init__(self, returncode: int, stdout: str, stderr: str, seconds: float):
        self.returncode, self.stdout, self.stderr, self.seconds = returncode, stdout, stderr, seconds

    @property
    def log(self) -> str:
        return self.stdout + self.stderr


def torchrun(args: list[str], world: int, *, env: dict | None = None, timeout: float = 300,
             name: str = "", module: bool = False) -> Job:
    """Runs `args` (a script path under the repo and its arguments, or a
    module with `module=True`) under torchrun at `world` ranks; a job that
    outlives `timeout` fails the test with its output."""
    target = ["-m", *args] if module else [os.path.join(ROOT, args[0]), *args[1:]]
    cmd = torchrun_cmd(world) + target
    t0 = time.time()
    # A session of its own: a job that hangs is ended by its process group
    # (torchrun and its workers), never by name.
    p = subprocess.Popen(cmd, env=env_for(env), cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_group(p.pid)
        out, err = p.communicate()
        save_log(name or args[0], " ".join(cmd) + "\nHUNG\n" + out + err)
        pytest.fail(f"{' '.join(args)} at {world} ranks hung (> {timeout} s):\n{out[-3000:]}\n{err[-3000:]}")
    job = Job(p.returncode, out, err, time.time() - t0)
    save_log(name or args[0], " ".join(cmd) + f"\nrc={p.returncode} seconds={job.seconds:.1f}\n"
             + job.log)
    return job


def spawn(args: list[str], world: int, *, env: dict | None = None, timeout: float = 300,
          name: str = "") -> list[Job]:
    """Runs `args` (a script under the repo and its arguments) as `world`
    processes with torchrun's variables but no agent: a rank that dies ends
    itself alone, where torchrun would end its peers too (the fault-tolerance
    scenarios need the survivors).  Rank 0 hosts the store.  Returns each
    rank's Job; a job that outlives `timeout` fails the test with its output."""
    port = free_port()
    t0 = time.time()
    procs = []
    for rank in range(world):
        extra = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
                 "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                 **(env or {})}
        # Each in a session of its own: a hung one is ended by its process
        # group id, never by name.
        procs.append(subprocess.Popen([sys.executable, os.path.join(ROOT, args[0]), *args[1:]],
                                      env=env_for(extra), cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True))
    jobs, hung = [], False
    for rank, p in enumerate(procs):
        left = max(1.0, timeout - (time.time() - t0))
        try:
            out, err = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            hung = True
            end_group(p.pid)
            out, err = p.communicate()
            err += f"\nHUNG (> {timeout} s)\n"
        jobs.append(Job(p.returncode, out, err, time.time() - t0))
    text = "".join(f"--- rank {r} rc={j.returncode}\n{j.log}" for r, j in enumerate(jobs))
    save_log(name or args[0], " ".join(args) + f" at {world} ranks\n" + text)
    if hung:
        pytest.fail(f"{' '.join(args)} at {world} ranks hung (> {timeout} s):\n{text[-6000:]}")
    return jobs


def end_group(pgid: int) -> None:
    """Ends a job started in a session of its own: SIGTERM to its process
    group (torchrun ends its workers), SIGKILL to what is left; by group id,
    never by name."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        time.sleep(3)
