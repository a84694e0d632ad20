"""pytest front of the GPU suite.

Each configuration (world size x init mode) is one torchrun launch of
``harness.py`` running every case; each (configuration, case) pair is one
pytest test that passes only if the case passed on every rank.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from tests.gpu import cases, launch  # noqa: F401  - registers the cases
from tests.gpu.registry import CASES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = [c for c in os.environ.get("NCCL_CORE_GPU_CONFIGS", "1:eager,2:eager,2:lazy,4:eager,4:lazy").split(",") if c]
# NCCL_CORE_GPU_ONLY=case1,case2 runs a subset (for quick iterations).
ONLY = [c for c in os.environ.get("NCCL_CORE_GPU_ONLY", "").split(",") if c]
# NCCL_CORE_GPU_SKIP=case1,... leaves cases out (the harness reads it too).
SKIP = {c for c in os.environ.get("NCCL_CORE_GPU_SKIP", "").split(",") if c}
_results: dict[str, dict] = {}


def _launch(config: str) -> dict:
    world, mode = config.split(":")
    out = tempfile.mkdtemp(prefix=f"nccl_core_gpu_{world}_{mode}_")
    env = launch.env_for()
    cmd = launch.torchrun_cmd(int(world)) + [os.path.join(ROOT, "tests", "gpu", "harness.py"), "--out", out]
    if mode == "lazy":
        cmd.append("--lazy")
    if ONLY:
        cmd += ["--only", ",".join(ONLY)]
    # The launch writes its output straight into the log file, so that a
    # launch cut short by a budget still leaves what it printed (stack dumps
    # of a hung case included).
    log_dir = os.environ.get("NCCL_CORE_GPU_LOG_DIR") or out
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, f"launch_{world}_{mode}.log")
    with open(log_path, "w") as f:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                              timeout=int(os.environ.get("NCCL_CORE_LAUNCH_TIMEOUT", "900")))
    with open(log_path, errors="replace") as f:
        log = f.read()[-40000:]
    per_case: dict[str, list[dict]] = {}
    for r in range(int(world)):
        path = os.path.join(out, f"rank{r}.jsonl")
        if os.path.exists(path):
            for line in open(path):
                rec = json.loads(line)
                per_case.setdefault(rec["case"], []).append(rec)
    return {"rc": proc.returncode, "log": log, "cases": per_case, "world": int(world)}


@pytest.mark.gpu
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", [c[0] for c in CASES if not ONLY or c[0] in ONLY])
def test_gpu_case(config, name):
    world = int(config.split(":")[0])
    launch.require(world, "the GPU suite runs")
    if name in SKIP:
        pytest.skip("left out by NCCL_CORE_GPU_SKIP")
    if config not in _results:
        _results[config] = _launch(config)
    res = _results[config]
    recs = res["cases"].get(name)
    if not recs or len(recs) < world:
        pytest.fail(f"case did not report on every rank (launch rc={res['rc']}):\n{res['log'][-6000:]}")
    fails = [r for r in recs if r["status"] == "fail"]
    if fails:
        msg = "\n".join(f"{r['error']}\n{r.get('traceback', '')}" for r in fails[:2])
        pytest.fail(f"{len(fails)} rank(s) failed:\n{msg}")
    skips = [r for r in recs if r["status"] == "skip"]
    if skips:
        pytest.skip(skips[0]["reason"])
