"""DDP on nccl_core against torch's nccl, one GPU per rank.

- ``ddp_modes.py``: every DDP mode torch's suite tests, every parameter
  compared with a torch ``nccl`` copy after several steps, on nccl_core's
  defaults and with the push all-reduce on.
- ``ddp_optim_in_backward.py`` under contention: three copies at once on the
  same two GPUs, push on (the case that trained on wrong gradients before
  58a9928).

``NCCL_CORE_DDP_WORLDS`` (default "2,4") lists the world sizes of the first.
"""

from __future__ import annotations

import os

import pytest

from tests.gpu import launch

pytestmark = pytest.mark.gpu
WORLDS = [int(w) for w in os.environ.get("NCCL_CORE_DDP_WORLDS", "2,4").split(",") if w]
PUSH_ON = {"NCCL_CORE_PUSH_MAX_BYTES": str(64 << 20)}


def _need_real_gpus(world: int) -> None:
    # torch's nccl refuses two ranks on one GPU: no simulated hosts here.
    n = launch.gpus()
    if n < world:
        pytest.skip(f"torch's nccl reference needs one GPU per rank: {world} ranks, {n} GPUs")


@pytest.mark.parametrize("push", [False, True], ids=["defaults", "push"])
@pytest.mark.parametrize("world", WORLDS)
def test_ddp_modes_match_nccl(world, push):
    _need_real_gpus(world)
    job = launch.torchrun(["tests/gpu/ddp_modes.py", *(["--push"] if push else [])], world,
                          timeout=400, name=f"ddp_modes_{world}_{'push' if push else 'defaults'}")
    assert job.returncode == 0 and "0 of" in job.stdout, job.log[-6000:]


def test_ddp_optim_in_backward_under_contention():
    _need_real_gpus(2)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(launch.torchrun, ["tests/gpu/ddp_optim_in_backward.py"], 2,
                               env=PUSH_ON, timeout=400, name=f"ddp_optim_in_backward_{k}")
                   for k in range(3)]
        jobs = [f.result() for f in futures]
    for job in jobs:
        assert job.returncode == 0 and "0 of" in job.stdout, job.log[-6000:]
