"""The device-placement matrix (placement.py) as GPU tests: every op family,
wherever the current device and stream are, read back at once; one torchrun
launch per (init mode, current device) at every world size from 2 up to the
GPUs visible (at most 4).  Each launch must report 0 wrong elements on every
rank.  ``NCCL_CORE_PLACEMENT_ITERS`` (default 200) sets the iterations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ITERS = int(os.environ.get("NCCL_CORE_PLACEMENT_ITERS", "200"))
TIMEOUT = int(os.environ.get("NCCL_CORE_PLACEMENT_TIMEOUT", "300"))
pytestmark = pytest.mark.gpu
_port = [29710]


def _gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("current", ["own", "none", "other"])
@pytest.mark.parametrize("init", ["eager", "lazy"])
def test_placement_matrix(init, current, world):
    if _gpus() == 0:
        pytest.skip("no CUDA GPU visible; the placement matrix runs on a GPU host "
                    "(bash scripts/gpu-test.sh)")
    if _gpus() < world:
        pytest.skip(f"needs {world} GPUs, {_gpus()} visible")
    _port[0] += 1
    out = os.path.join(tempfile.mkdtemp(prefix="nccl_core_placement_"), "res")
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={world}",
           "--master-port", str(_port[0]), os.path.join(ROOT, "tests", "gpu", "placement.py"),
           "--init", init, "--current", current, "--iters", str(ITERS), "--out", out]
    try:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"placement matrix hung (> {TIMEOUT} s):\n{(e.stdout or '')[-3000:]}")
    results = []
    for r in range(world):
        path = f"{out}.rank{r}"
        if os.path.exists(path):
            results.append(json.loads(open(path).read()))
    log = (proc.stdout + proc.stderr)[-6000:]
    assert len(results) == world, f"not every rank reported (rc={proc.returncode}):\n{log}"
    wrong = [r for r in results if r["wrong"]]
    assert not wrong, f"wrong results: {wrong}"
    assert all(r["checks"] > 0 for r in results)
    assert proc.returncode == 0, log
