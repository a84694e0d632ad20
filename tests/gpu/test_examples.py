"""The examples as GPU tests: real workloads on nccl_core give the numbers that
backend nccl gives (issue 8), and the other examples report OK.

Each test is one or two torchrun launches; they skip without enough GPUs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.gpu


def _gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _need(n: int) -> None:
    if _gpus() == 0:
        pytest.skip("no CUDA GPU visible; examples run on a GPU host (bash scripts/gpu-test.sh)")
    if _gpus() < n:
        pytest.skip(f"needs {n} GPUs, {_gpus()} visible")


_port = [29650]


# NCCL_CORE_EXAMPLE_TIMEOUT bounds each launch (seconds), so one hang cannot
# eat a whole GPU session.
TIMEOUT = int(os.environ.get("NCCL_CORE_EXAMPLE_TIMEOUT", "300"))


def _run(script: str, nproc: int, *args: str, env: dict | None = None, timeout: int = TIMEOUT) -> str:
    _port[0] += 1
    e = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")
    e.update(env or {})
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           "--master-port", str(_port[0]), os.path.join(ROOT, script), *args]
    p = subprocess.run(cmd, cwd=ROOT, env=e, capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    log_dir = os.environ.get("NCCL_CORE_GPU_LOG_DIR")
    if log_dir:
        name = os.path.basename(script).replace(".py", "") + "_" + "_".join(
            a.strip("-") for a in args if not a.startswith("/"))
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:120]
        with open(os.path.join(log_dir, f"example_{name}.log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
    assert p.returncode == 0, f"{script} {' '.join(args)} failed:\n{out[-6000:]}"
    return out


def _losses(script: str, nproc: int, backend: str, *args: str, env=None) -> dict:
    path = tempfile.mktemp(suffix=".json")
    _run(script, nproc, "--backend", backend, "--losses-out", path, *args, env=env)
    with open(path) as f:
        return json.load(f)


def _compare(core: list[float], ref: list[float], rtol: float) -> tuple[bool, float]:
    assert len(core) == len(ref) and core
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(core, ref))
    return worst <= rtol, worst


@pytest.mark.parametrize("hook", ["none", "fp16", "bf16"])
def test_ddp_matches_backend_nccl(hook):
    _need(4)
    args = ("--steps", "60", "--comm-hook", hook)
    core = _losses("examples/ddp_train.py", 4, "nccl_core", *args)
    ref = _losses("examples/ddp_train.py", 4, "nccl", *args)
    ok, worst = _compare(core["losses"], ref["losses"], 1e-6)
    assert ok, f"DDP ({hook}) losses differ from backend nccl by {worst:.3g} (relative)"


@pytest.mark.parametrize("variant", [("avg",), ("premul",), ("avg", "--nccl-mem")])
def test_fsdp2_matches_backend_nccl(variant):
    _need(4)
    args = ("--steps", "15", "--reduce", *variant)
    core = _losses("examples/fsdp2_train.py", 4, "nccl_core", *args)
    ref = _losses("examples/fsdp2_train.py", 4, "nccl", *args)
    ok, worst = _compare(core["losses"], ref["losses"], 1e-5)
    assert ok, f"FSDP2 {variant} losses differ from backend nccl by {worst:.3g} (relative)"


def test_dtensor_tensor_parallel_and_2d_mesh():
    _need(4)
    assert "dtensor_tp world=4: OK" in _run("examples/dtensor_tp.py", 4)


def test_torch_compile_functional_collectives():
    _need(2)
    assert "-> OK" in _run("examples/compile_funcol.py", 2)


def test_rma_pipeline():
    _need(4)
    assert "-> OK" in _run("examples/rma_pipeline.py", 4)


def test_two_nodes_over_the_network_transport():
    """Two torchrun agents on one host as two nodes of 2 GPUs, NCCL forced onto
    its network transport; nccl_core's losses equal backend nccl's."""
    _need(4)
    results = {}
    for backend in ("nccl_core", "nccl"):
        _port[0] += 1
        port = _port[0]
        path = tempfile.mktemp(suffix=".json")
        procs = []
        for node in (0, 1):
            e = dict(os.environ, NCCL_NVLS_ENABLE="0", NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1",
                     CUDA_VISIBLE_DEVICES="0,1" if node == 0 else "2,3", PYTHONUNBUFFERED="1")
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=2",
                   f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}",
                   os.path.join(ROOT, "examples/ddp_train.py"), "--backend", backend,
                   "--steps", "40", "--losses-out", path]
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        outs = [p.communicate(timeout=TIMEOUT)[0] for p in procs]
        log_dir = os.environ.get("NCCL_CORE_GPU_LOG_DIR")
        if log_dir:
            with open(os.path.join(log_dir, f"example_two_nodes_{backend}.log"), "w") as f:
                f.write("\n=== node 1 ===\n".join(outs))
        assert all(p.returncode == 0 for p in procs), f"{backend} two-node run failed:\n{outs[0][-4000:]}\n{outs[1][-4000:]}"
        with open(path) as f:
            results[backend] = json.load(f)
        assert results[backend]["world"] == 4
    ok, worst = _compare(results["nccl_core"]["losses"], results["nccl"]["losses"], 1e-6)
    assert ok, f"two-node losses differ from backend nccl by {worst:.3g}"


def test_elastic_shrink_survives_a_killed_rank():
    """A rank is SIGKILLed mid-training; the others shrink the group and finish."""
    _need(4)
    _port[0] += 1
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples/elastic_shrink.py"), "--nproc", "4",
                        "--victim", "3", "--kill-at", "10", "--steps", "30", "--port", str(_port[0])],
                       cwd=ROOT, env=dict(os.environ, NCCL_NVLS_ENABLE="0"), capture_output=True,
                       text=True, timeout=TIMEOUT)
    out = p.stdout + p.stderr
    log_dir = os.environ.get("NCCL_CORE_GPU_LOG_DIR")
    if log_dir:
        with open(os.path.join(log_dir, "example_elastic_shrink.log"), "w") as f:
            f.write(out)
    assert p.returncode == 0 and "3 ranks left" in out, out[-6000:]


def test_device_kernel_extension():
    """A user's CUDA extension takes DevCommResource.ptr and a window."""
    _need(4)
    assert "-> OK" in _run("examples/device_kernel/run.py", 4, timeout=2 * TIMEOUT)
