"""The device-placement matrix (placement.py) as GPU tests: every op family,
wherever the current device and stream are, read back at once; one torchrun
launch per (init mode, current device) at 2 and 4 ranks (simulated hosts
where the GPUs are fewer; ``NCCL_CORE_PLACEMENT_WORLDS`` picks).  Each launch must report 0 wrong elements on every
rank.  ``NCCL_CORE_PLACEMENT_ITERS`` (default 200) sets the iterations.
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from tests.gpu import launch

ITERS = int(os.environ.get("NCCL_CORE_PLACEMENT_ITERS", "200"))
# NCCL_CORE_PLACEMENT_WORLDS: the world sizes to launch (the quick tier: 2).
WORLDS = [int(w) for w in os.environ.get("NCCL_CORE_PLACEMENT_WORLDS", "2,4").split(",") if w]
TIMEOUT = int(os.environ.get("NCCL_CORE_PLACEMENT_TIMEOUT", "300"))
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("current", ["own", "none", "other"])
@pytest.mark.parametrize("init", ["eager", "lazy"])
def test_placement_matrix(init, current, world):
    launch.require(world, "the placement matrix runs")
    out = os.path.join(tempfile.mkdtemp(prefix="nccl_core_placement_"), "res")
    job = launch.torchrun(["tests/gpu/placement.py", "--init", init, "--current", current,
                           "--iters", str(ITERS), "--out", out], world, timeout=TIMEOUT,
                          name=f"placement_{world}_{init}_{current}")
    results = []
    for r in range(world):
        path = f"{out}.rank{r}"
        if os.path.exists(path):
            results.append(json.loads(open(path).read()))
    log = job.log[-6000:]
    assert len(results) == world, f"not every rank reported (rc={job.returncode}):\n{log}"
    wrong = [r for r in results if r["wrong"]]
    assert not wrong, f"wrong results: {wrong}"
    assert all(r["checks"] > 0 for r in results)
    assert job.returncode == 0, log
