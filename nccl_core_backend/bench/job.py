"""The torchrun job every side-by-side benchmark runs in.

The default group is ``cpu:gloo,cuda:nccl_core`` and a second group of backend
``nccl`` spans the same ranks, so one job times both backends on the same
GPUs.  A third group, plain gloo, carries the bench's own bookkeeping (seeds,
barriers between timed blocks, correctness flags), so a broken backend under
test cannot hide its own failures.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

# The names the results use for the two backends, in the order they are shown.
CORE, NCCL = "nccl_core", "nccl"

_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class BenchError(Exception):
    """A problem with how the bench was started or with its arguments; the
    message says what to change."""


def check_launch(environ=os.environ) -> int:
    """LOCAL_RANK of a process started by torchrun; BenchError otherwise."""
    missing = [v for v in _TORCHRUN_VARS if v not in environ]
    if missing:
        raise BenchError(
            "not started by torchrun (" + ", ".join(missing) + " not set): run it as "
            "`torchrun --nproc-per-node=N -m nccl_core_backend.bench ...` (N = GPUs to use, 1 works)")
    try:
        local = int(environ["LOCAL_RANK"])
    except ValueError:
        raise BenchError(f"LOCAL_RANK={environ['LOCAL_RANK']!r} is not a number") from None
    return local


def check_cuda(environ=os.environ) -> torch.device:
    """The GPU of this rank (LOCAL_RANK, checked by check_launch); BenchError
    when there is none.  Where the node's ranks outnumber its GPUs they run
    as simulated hosts (nccl_core_backend.simhosts: sockets between ranks
    sharing a GPU, for correctness and host costs, not for bandwidth)."""
    if not torch.cuda.is_available():
        raise BenchError("no CUDA GPU visible (torch.cuda.is_available() is False): the bench "
                         "times GPU collectives and needs a GPU")
    from nccl_core_backend import simhosts

    try:
        # Sets the rank's host id before any communicator exists.
        return simhosts.local_device(environ, torch.cuda.device_count())
    except ValueError as e:
        raise BenchError(str(e)) from None


def high_priority_streams(groups: dict, device: torch.device, environ=os.environ) -> list:
    """The backends whose group runs its async calls on a high-priority
    stream, as each backend decided: nccl_core by its options (pg_options,
    NCCL_CORE_HIGH_PRIORITY, TORCH_NCCL_HIGH_PRIORITY), nccl by its options
    or TORCH_NCCL_HIGH_PRIORITY (read when its communicator is made)."""
    from nccl_core_backend.options import env_flag

    core = groups[CORE]._get_backend(device).nccl_core_options.is_high_priority_stream
    nccl_options = getattr(groups[NCCL]._get_backend(device), "options", None)
    nccl = (bool(getattr(nccl_options, "is_high_priority_stream", False))
            or bool(env_flag(environ, ("TORCH_NCCL_HIGH_PRIORITY",))))
    return [name for name, on in ((CORE, core), (NCCL, nccl)) if on]


def init_side_by_side(device: torch.device, high_priority=()):
    """Default group on nccl_core (CUDA) + gloo (CPU), and a backend-nccl group
    over the same ranks, each on a high-priority stream where `high_priority`
    names it.  Returns (rank, world, nccl_group).

    No device_id: with a bound device, torch 2.11's new_group(backend="nccl")
    tries to split the nccl group from the default group's (nccl_core) backend.
    """
    import nccl_core_backend  # noqa: F401  (registers the backend)

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off on shared hosts
    if CORE in high_priority:
        os.environ["NCCL_CORE_HIGH_PRIORITY"] = "1"  # read when the default group is made
    nccl_options = None
    if NCCL in high_priority:
        nccl_options = dist.ProcessGroupNCCL.Options()
        nccl_options.is_high_priority_stream = True
    torch.cuda.set_device(device)
    dist.init_process_group("cpu:gloo,cuda:nccl_core")
    return (dist.get_rank(), dist.get_world_size(),
            dist.new_group(backend="nccl", pg_options=nccl_options))


@dataclass
class Job:
    """Rank, GPU and groups of one benchmark process."""

    device: torch.device
    rank: int
    world: int
    groups: dict = field(default_factory=dict)  # backend name -> group under test
    ctrl: object = None  # gloo group for the bench's own messages
    high_priority: list = field(default_factory=list)  # backends on high-priority streams

    def sync(self) -> None:
        """Lines the ranks up with an idle GPU (over gloo)."""
        torch.cuda.synchronize(self.device)
        dist.barrier(group=self.ctrl)

    def shared_seed(self) -> int:
        """A random seed, the same on every rank: fresh data on every run."""
        t = torch.tensor([random.randrange(1, 2**31)], dtype=torch.int64)
        dist.broadcast(t, 0, group=self.ctrl)
        return int(t.item())

    def all_ranks_true(self, flags: list) -> list:
        """Element-wise AND of every rank's list of booleans (same length everywhere)."""
        everyone: list = [None] * self.world
        dist.all_gather_object(everyone, [bool(f) for f in flags], group=self.ctrl)
        return [all(lst[i] for lst in everyone) for i in range(len(flags))]

    def gather(self, obj) -> list:
        """Every rank's `obj`, on every rank (over gloo)."""
        everyone: list = [None] * self.world
        dist.all_gather_object(everyone, obj, group=self.ctrl)
        return everyone


def start_job(device: torch.device, high_priority=()) -> Job:
    """Creates the groups on `device` (from check_cuda); `high_priority`: the
    backends asked to run on high-priority streams (--high-priority)."""
    rank, world, nccl_group = init_side_by_side(device, high_priority)
    groups = {CORE: dist.group.WORLD, NCCL: nccl_group}
    job = Job(device=device, rank=rank, world=world, groups=groups,
              high_priority=high_priority_streams(groups, device))
    job.ctrl = dist.new_group(backend="gloo")
    return job


def finish(code: int) -> None:
    """Ends the process without tearing the groups down.  Destroying a backend
    nccl group whose communicator captured a CUDA graph never returns on
    torch 2.11 / NCCL 2.28.9 (pytorch/pytorch#115388; bench/results/two-shot-ctas-launch-4gpu-h200-2026-11-22.md), and
    every result is written by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
