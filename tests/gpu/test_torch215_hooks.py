"""torch215_process.py's scenarios at 2 and 3 ranks (and 1; simulated hosts where
the GPUs are fewer): the Backend hooks torch >= 2.15 added (gather_single,
windows, abort hooks, reconfigure).  Each scenario's ranks are processes of
their own with no agent, so that the reconfigure scenario's victim can die
while its peers go on."""

from __future__ import annotations

import pytest
import torch

from tests.gpu import launch

pytestmark = pytest.mark.gpu

TORCH_215 = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 15)
SCENARIOS = ["gather_single", "window", "abort_hook", "reconfigure"]


# Each at 2 and 3 ranks; those that need no peer also at one rank, where a
# window's one-sided calls reach the rank itself on every transport.
CASES = [(s, w) for s in SCENARIOS for w in (2, 3)] + [("gather_single", 1), ("window", 1)]


@pytest.mark.parametrize("scenario,world", CASES)
def test_torch215_hook(scenario, world, tmp_path):
    if not TORCH_215:
        pytest.skip(f"torch {torch.__version__}: these Backend hooks arrived in torch 2.15")
    launch.require(world)
    env = {}
    if scenario == "abort_hook":
        env = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "2", "NCCL_CORE_TEST_FR_DIR": str(tmp_path)}
    jobs = launch.spawn(["tests/gpu/torch215_process.py", scenario], world, env=env, timeout=240,
                        name=f"torch215_{scenario}_{world}")
    log = "".join(f"--- rank {r} rc={j.returncode}\n{j.log[-4000:]}" for r, j in enumerate(jobs))
    skipped = [j for j in jobs if f"SKIP {scenario}" in j.stdout]
    if skipped and all(j.returncode == 0 for j in jobs):
        reason = skipped[0].stdout.split(f"SKIP {scenario}: ", 1)[1].splitlines()[0]
        pytest.skip(reason)
    for rank, job in enumerate(jobs):
        victim = scenario == "reconfigure" and rank == world - 1
        want_rc = 17 if victim else 0
        assert job.returncode == want_rc, f"rank {rank} exited {job.returncode}:\n{log}"
        if not victim:
            assert f"OK {scenario} rank {rank}" in job.stdout, log
