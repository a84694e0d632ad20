"""The examples as GPU tests: real workloads on nccl_core give the numbers that
backend nccl gives, and the other examples report OK.

Each test is one or two torchrun launches at ``NCCL_CORE_EXAMPLE_WORLD`` ranks
(default: 4 where 4 GPUs are visible, else 2); ranks beyond the GPUs run as
simulated hosts, as a user's ``torchrun --nproc-per-node=N`` does on a
smaller machine.  The examples that need NVLink peers (one-sided puts, device
communicators) are checked there for their one-line refusal and run at one
rank instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from tests.gpu import launch

ROOT = launch.ROOT
pytestmark = pytest.mark.gpu
# NCCL_CORE_EXAMPLE_TIMEOUT bounds each launch (seconds), so one hang cannot
# eat a whole GPU session.
TIMEOUT = int(os.environ.get("NCCL_CORE_EXAMPLE_TIMEOUT", "300"))


def _world() -> int:
    chosen = os.environ.get("NCCL_CORE_EXAMPLE_WORLD", "")
    world = int(chosen) if chosen else (4 if launch.gpus() >= 4 else 2)
    launch.require(world, "the examples run")
    return world


def _run(script: str, world: int, *args: str, env: dict | None = None, timeout: int = TIMEOUT) -> str:
    name = "example_" + os.path.basename(script).replace(".py", "") + f"_w{world}_" + "_".join(
        a.strip("-") for a in args if not a.startswith("/"))
    job = launch.torchrun([script, *args], world, env=env, timeout=timeout, name=name)
    assert job.returncode == 0, f"{script} {' '.join(args)} at {world} ranks failed:\n{job.log[-6000:]}"
    return job.log


def _losses(script: str, world: int, backend: str, *args: str) -> dict:
    path = tempfile.mktemp(suffix=".json")
    _run(script, world, "--backend", backend, "--losses-out", path, *args)
    with open(path) as f:
        return json.load(f)


def _compare(core: list[float], ref: list[float], rtol: float) -> tuple[bool, float]:
    assert len(core) == len(ref) and core
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(core, ref))
    return worst <= rtol, worst


def test_allreduce_main_job():
    """The README's main job, at the world size a user of this machine asks for."""
    world = _world()
    out = _run("examples/allreduce.py", world)
    assert f"nccl_core all_reduce OK: world={world}" in out, out[-3000:]
    assert ("as simulated hosts" in out) == launch.simulated(world), out[-3000:]


@pytest.mark.parametrize("hook", ["none", "fp16", "bf16"])
def test_ddp_matches_backend_nccl(hook):
    world = _world()
    args = ("--steps", "60", "--comm-hook", hook)
    core = _losses("examples/ddp_train.py", world, "nccl_core", *args)
    ref = _losses("examples/ddp_train.py", world, "nccl", *args)
    ok, worst = _compare(core["losses"], ref["losses"], 1e-6)
    assert ok, f"DDP ({hook}) losses differ from backend nccl by {worst:.3g} (relative)"


@pytest.mark.parametrize("variant", [("avg",), ("premul",), ("avg", "--nccl-mem")])
def test_fsdp2_matches_backend_nccl(variant):
    world = _world()
    # 40 steps: at 2 ranks the loss needs more than 15 to go down.
    args = ("--steps", "40", "--reduce", *variant)
    core = _losses("examples/fsdp2_train.py", world, "nccl_core", *args)
    ref = _losses("examples/fsdp2_train.py", world, "nccl", *args)
    ok, worst = _compare(core["losses"], ref["losses"], 1e-5)
    assert ok, f"FSDP2 {variant} losses differ from backend nccl by {worst:.3g} (relative)"


def test_dtensor_tensor_parallel_and_2d_mesh():
    world = _world()  # the 2-D (dp, tp) mesh runs at 4 ranks
    assert f"dtensor_tp world={world}: OK" in _run("examples/dtensor_tp.py", world)


def test_torch_compile_functional_collectives():
    assert "-> OK" in _run("examples/compile_funcol.py", _world())


def _nvlink_example(script: str, *args: str, timeout: int = TIMEOUT) -> str:
    """Runs an example that needs NVLink peers: at the test's world size on
    real peers; on simulated hosts, checks its one-line refusal at that size
    and runs it at one rank."""
    world = _world()
    if not launch.simulated(world):
        return _run(script, world, *args, timeout=timeout)
    job = launch.torchrun([script, *args], world, timeout=timeout, name=f"refusal_{os.path.basename(script)}")
    assert job.returncode != 0, job.log[-3000:]
    assert "need NVLink peers" in job.stderr and "simulated hosts" in job.stderr, job.log[-3000:]
    # torchrun's agent prints its own traceback of the failed child; the
    # script itself prints none.
    assert f'{os.path.join(ROOT, script)}", line' not in job.stderr, job.log[-3000:]
    return _run(script, 1, *args, timeout=timeout)


def test_rma_pipeline():
    assert "-> OK" in _nvlink_example("examples/rma_pipeline.py")


def test_device_kernel_extension():
    """A user's CUDA extension takes DevCommResource.ptr and a window."""
    headers = _device_kernel_headers()
    if headers != _loaded_nccl():
        # scripts/gpu-trial-nccl.sh preloads another release than the headers'.
        pytest.skip(f"NCCL headers {headers} differ from the loaded NCCL {_loaded_nccl()}: the "
                    "example refuses to build its kernel against them")
    assert "-> OK" in _nvlink_example("examples/device_kernel/run.py", timeout=2 * TIMEOUT)


def test_device_kernel_refuses_mismatched_headers():
    """Headers of another release than the loaded one: a one-line refusal."""
    launch.require(1)
    if _device_kernel_headers() == _loaded_nccl():
        pytest.skip("the headers are the loaded release's (the mismatch is seen under gpu-trial-nccl.sh)")
    job = launch.torchrun(["examples/device_kernel/run.py"], 1, timeout=120, name="device_kernel_headers")
    assert job.returncode != 0 and "the device API's structures differ" in job.stderr, job.log[-3000:]


def _device_kernel_headers():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "nccl_core_example_device_kernel", os.path.join(ROOT, "examples", "device_kernel", "run.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example.header_version(example.nccl_include_dirs())


def _loaded_nccl():
    import nccl_core_backend as nc

    return nc.nccl_version()


def test_two_nodes_over_the_network_transport():
    """Two torchrun agents on one host as two nodes, NCCL forced onto its
    network transport; nccl_core's losses equal backend nccl's.  Two GPUs a
    node where 4 are visible, else one rank a node as simulated hosts."""
    launch.require(2)
    per_node = 2 if launch.gpus() >= 4 else 1
    results = {}
    for backend in ("nccl_core", "nccl"):
        port = launch.free_port()
        path = tempfile.mktemp(suffix=".json")
        procs = []
        for node in (0, 1):
            extra = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
            if per_node == 2:
                extra["CUDA_VISIBLE_DEVICES"] = "0,1" if node == 0 else "2,3"
            else:
                extra["NCCL_CORE_SIM_HOSTS"] = "1"
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2",
                   f"--nproc-per-node={per_node}", f"--node-rank={node}", "--master-addr=127.0.0.1",
                   f"--master-port={port}", os.path.join(ROOT, "examples/ddp_train.py"),
                   "--backend", backend, "--steps", "40", "--losses-out", path]
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env=launch.env_for(extra), stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, start_new_session=True))
        outs = [p.communicate(timeout=TIMEOUT)[0] for p in procs]
        launch.save_log(f"example_two_nodes_{backend}", "\n=== node 1 ===\n".join(outs))
        assert all(p.returncode == 0 for p in procs), f"{backend} two-node run failed:\n{outs[0][-4000:]}\n{outs[1][-4000:]}"
        with open(path) as f:
            results[backend] = json.load(f)
        assert results[backend]["world"] == 2 * per_node
    ok, worst = _compare(results["nccl_core"]["losses"], results["nccl"]["losses"], 1e-6)
    assert ok, f"two-node losses differ from backend nccl by {worst:.3g}"


def test_elastic_shrink_survives_a_killed_rank():
    """A rank is SIGKILLed mid-training; the others shrink the group and finish."""
    nproc = max(_world(), 3)
    # Over NCCL's socket transport the survivors' communicator holds the
    # peer's death as an error, and NCCL 2.28.9's ncclCommShrink(ABORT)
    # refuses it (ncclRemoteError): measured on simulated hosts.
    launch.require_nvlink(nproc)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples/elastic_shrink.py"), "--nproc", str(nproc),
                        "--victim", str(nproc - 1), "--kill-at", "10", "--steps", "30"],
                       cwd=ROOT, env=launch.env_for(), capture_output=True, text=True, timeout=TIMEOUT)
    out = p.stdout + p.stderr
    launch.save_log("example_elastic_shrink", out)
    assert p.returncode == 0 and f"{nproc - 1} ranks left" in out, out[-6000:]


def test_no_gpu_is_one_line():
    """Where CUDA sees no GPU, an example ends with one line naming the
    problem, no traceback."""
    launch.require(1)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples/allreduce.py")], cwd=ROOT,
                       env=launch.env_for({"CUDA_VISIBLE_DEVICES": ""}), capture_output=True, text=True,
                       timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1, p.stderr[-3000:]
    assert lines[0].startswith("allreduce.py: no CUDA GPU visible"), p.stderr[-3000:]
