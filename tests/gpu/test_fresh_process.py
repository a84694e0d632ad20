"""fresh_process.py's scenarios, each one torchrun launch at 2 ranks: the
wrapper of TORCH_DISTRIBUTED_DEBUG=DETAIL, a lazy first batch of send/recv to
self without set_device, and the wording of a timeout."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.gpu
_port = [29760]


@pytest.mark.parametrize("scenario", ["detail", "batch_self", "timeout", "profiling"])
def test_fresh_process(scenario):
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0:
        pytest.skip("no CUDA GPU visible; runs on a GPU host (bash scripts/gpu-test.sh)")
    world = 1 if scenario == "profiling" and gpus == 1 else 2
    if gpus < world:
        pytest.skip(f"needs {world} GPUs, {gpus} visible")
    _port[0] += 1
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")
    if scenario == "detail":
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={world}",
           "--master-port", str(_port[0]),
           os.path.join(ROOT, "tests", "gpu", "fresh_process.py"), scenario]
    try:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{scenario} hung (> 120 s):\n{(e.stdout or '')[-3000:]}")
    log = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, log
    assert proc.stdout.count(f"OK {scenario}") == world, log
