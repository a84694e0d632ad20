"""fresh_process.py's scenarios, each one torchrun launch at 2 ranks: the
wrapper of TORCH_DISTRIBUTED_DEBUG=DETAIL, a lazy first batch of send/recv to
self without set_device, the wording of a timeout, profiling records, NCCL
memory dropped while the GPU still has to read it, and raw paths that differ
between ranks."""

from __future__ import annotations

import pytest

from tests.gpu import launch

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("scenario", ["detail", "batch_self", "timeout", "profiling", "drop_after_use",
                                      "raw_paths_differ"])
def test_fresh_process(scenario):
    world = 1 if scenario == "profiling" and launch.gpus() == 1 else 2
    launch.require(world)
    env = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"} if scenario == "detail" else {}
    job = launch.torchrun(["tests/gpu/fresh_process.py", scenario], world, env=env, timeout=120,
                          name=f"fresh_process_{scenario}")
    log = job.log[-6000:]
    assert job.returncode == 0, log
    assert job.stdout.count(f"OK {scenario}") == world, log
