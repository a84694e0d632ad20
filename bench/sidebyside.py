"""What every side-by-side benchmark shares: the job setup and GPU timing."""

from __future__ import annotations

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend  # noqa: E402,F401  (registers the backend)


def init_side_by_side():
    """Default group on nccl_core (CUDA) + gloo (CPU), and a backend-nccl group
    over the same ranks.  Returns (device, rank, world, nccl_group).

    No device_id: with a bound device, torch 2.11's new_group(backend="nccl")
    tries to split the nccl group from the default group's (nccl_core) backend.
    """
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    dist.init_process_group("cpu:gloo,cuda:nccl_core")
    return device, dist.get_rank(), dist.get_world_size(), dist.new_group(backend="nccl")


def gpu_seconds(fn, iters: int, warmup: int = 1, barrier: bool = False) -> float:
    """Seconds per call of fn(), between CUDA events on the current stream."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if barrier:
        dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters
