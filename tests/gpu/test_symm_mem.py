"""torch's symmetric memory over nccl_core groups: symm_mem_process.py, one
torchrun launch per symmetric-memory backend (CUDA, NCCL, NVSHMEM) at 2 ranks
(1 where only one GPU is visible).  A backend this torch or system lacks is
skipped with the reason the script prints."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.gpu
_port = [29840]


@pytest.mark.parametrize("backend", ["CUDA", "NCCL", "NVSHMEM"])
def test_symmetric_memory_over_nccl_core(backend):
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0:
        pytest.skip("no CUDA GPU visible; runs on a GPU host (bash scripts/gpu-test.sh)")
    if gpus < 2:
        pytest.skip("torch's symmetric-memory rendezvous needs 2 or more ranks "
                    "(torch 2.11: 'Expected global_ranks.size() > 1'); 1 GPU visible")
    world = 2
    _port[0] += 1
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={world}",
           "--master-port", str(_port[0]),
           os.path.join(ROOT, "tests", "gpu", "symm_mem_process.py"), backend]
    try:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{backend} hung (> 180 s):\n{(e.stdout or '')[-3000:]}")
    log = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, log
    for line in proc.stdout.splitlines():
        if line.startswith(f"SKIP {backend}:"):
            pytest.skip(line.split(":", 1)[1].strip())
    assert proc.stdout.count(f"OK {backend}") == world, log
