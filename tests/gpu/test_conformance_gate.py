"""PyTorch's own distributed suite as a gate on real GPUs.

torch's tests (``scripts/conformance.sh``, one GPU per rank) run on nccl_core
and on torch's ``nccl`` in the same job, at the same time: on disjoint GPUs
where the host has twice the ranks, else on the same GPUs (measured clean on
2xH200 at world 2; ``NCCL_CORE_CONFORMANCE_TOGETHER=0``: one after the other,
twice the wall time).  The
comparison (``tests/conformance/summary.py``) fails on a test that fails only
on nccl_core and is not in ``tests/conformance/expected.py``, is skipped only
there, or is missing from its results.

    NCCL_CORE_CONFORMANCE_WORLD    ranks per test (default 2)
    NCCL_CORE_CONFORMANCE_K        pytest -k expression (default: every test)
    NCCL_CORE_CONFORMANCE_WORKERS  xdist workers per backend (default 8; 6 when
                                   both backends share the GPUs)
    NCCL_CORE_CONFORMANCE_TOGETHER 0: backends one after the other on shared GPUs

The tiers (tests/gpu/tiers.py) split the suite into parts that each end
inside one 10-minute command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from tests.gpu import launch

pytestmark = pytest.mark.gpu
BACKENDS = ("nccl_core", "nccl")


def _visible() -> list[str]:
    listed = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if listed:
        return [d.strip() for d in listed.split(",") if d.strip()]
    return [str(i) for i in range(launch.gpus())]


def _run(backend: str, devices: list[str], world: int, out: str, workers: str) -> subprocess.Popen:
    env = launch.env_for({  # NVLink multicast off, the repo on the path
        # torch's suite runs what users get: the path table, not the suite's limit
        "NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES": os.environ.get("NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"),
        "CONFORMANCE_BACKENDS": backend, "CONFORMANCE_WORLD": str(world),
        "CONFORMANCE_WORKERS": os.environ.get("NCCL_CORE_CONFORMANCE_WORKERS", workers),
        "CUDA_VISIBLE_DEVICES": ",".join(devices), "OUT": out})
    k = os.environ.get("NCCL_CORE_CONFORMANCE_K", "")
    cmd = ["bash", "scripts/conformance.sh"] + (["-k", k] if k else [])
    # A session of its own, so that a budget ends it by process group.
    return subprocess.Popen(cmd, cwd=launch.ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_torch_suite_fails_nothing_that_passes_on_nccl():
    world = int(os.environ.get("NCCL_CORE_CONFORMANCE_WORLD", "2"))
    devices = _visible()
    if len(devices) < world:
        pytest.skip(f"torch's suite runs one rank per GPU: needs {world} GPUs, "
                    f"{len(devices)} visible")
    side_by_side = len(devices) >= 2 * world
    together = side_by_side or os.environ.get("NCCL_CORE_CONFORMANCE_TOGETHER", "1") != "0"
    outs = {b: tempfile.mkdtemp(prefix=f"conformance_{b}_") for b in BACKENDS}
    logs = {}
    if together:
        sets = ([devices[i * world:(i + 1) * world] for i in range(len(BACKENDS))] if side_by_side
                else [devices[:world]] * len(BACKENDS))
        workers = "8" if side_by_side else "6"
        procs = {b: _run(b, d, world, outs[b], workers) for b, d in zip(BACKENDS, sets)}
        for b, p in procs.items():
            logs[b] = p.communicate(timeout=570)[0]
    else:
        for b in BACKENDS:
            logs[b] = _run(b, devices[:world], world, outs[b], "8").communicate(timeout=570)[0]
    xmls = [os.path.join(outs[b], f"conformance-{b}.xml") for b in ("nccl", "nccl_core")]
    for b, path in zip(("nccl", "nccl_core"), xmls):
        assert os.path.exists(path), f"no results from backend {b}:\n{logs[b][-3000:]}"
    summary = subprocess.run([sys.executable, "-m", "tests.conformance.summary", *xmls],
                             cwd=launch.ROOT, capture_output=True, text=True)
    print(summary.stdout)  # the side-by-side counts, in the job's log
    assert summary.returncode == 0, summary.stdout[-6000:] + summary.stderr[-2000:]
