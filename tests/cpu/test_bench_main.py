"""The bench command end to end on CPU processes (tests/cpu/bench_cpu_driver.py):
arguments, the sweep, every rank's checks combined, the table, JSON, plot and
exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nccl_core_backend.bench.plot import have_matplotlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "cpu", "bench_cpu_driver.py")


def _run(world: int, *args: str, broken: str = "") -> subprocess.CompletedProcess:
    cmd = [sys.executable, DRIVER, str(world)] + (["--break-op", broken] if broken else []) + ["--", *args]
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_sweep_table_json_and_exit_status(tmp_path):
    out = tmp_path / "r.json"
    p = _run(2, "--ops", "all_reduce,broadcast", "--sizes", "8B-32B,4KiB", "--iters", "6",
             "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    result = json.loads(out.read_text())
    assert result["meta"]["world"] == 2 and result["meta"]["mode"] == "collectives"
    rows = result["collectives"]
    assert [(r["op"], r["bytes"]) for r in rows] == [
        (op, b) for op in ("all_reduce", "broadcast") for b in (8, 16, 32, 4096)]
    assert all(r["correct"] == {"nccl_core": True, "nccl": True} and r["ratio"] > 0 for r in rows)
    assert "| broadcast | 4 KiB |" in p.stdout and "WRONG" not in p.stdout
    # the progress bar: rank 0 only, a line per step (stderr is a pipe here)
    steps = [line for line in p.stderr.splitlines() if line.startswith("[")]
    assert steps[0] == "[1/8] all_reduce 8 B" and steps[-1] == "[8/8] broadcast 4 KiB" and len(steps) == 8


def test_a_wrong_result_on_one_backend_fails_the_run(tmp_path):
    out = tmp_path / "r.json"
    p = _run(2, "--ops", "all_gather_into_tensor,all_reduce", "--sizes", "64B", "--iters", "4",
             "--json", str(out), broken="all_gather_into_tensor")
    assert p.returncode == 1, p.stdout + p.stderr
    rows = json.loads(out.read_text())["collectives"]
    assert rows[0]["correct"] == {"nccl_core": False, "nccl": True}
    assert rows[1]["correct"] == {"nccl_core": True, "nccl": True}
    assert "WRONG RESULTS: all_gather_into_tensor 64 B: WRONG: nccl_core" in p.stdout


def test_a_broadcast_wrong_only_off_the_root_is_caught():
    # Rank 0 (the root) sees correct data; rank 1 does not: the verdict is every rank's.
    p = _run(2, "--ops", "broadcast", "--sizes", "1KiB", "--iters", "4", broken="broadcast")
    assert p.returncode == 1 and "broadcast 1 KiB: WRONG: nccl_core" in p.stdout


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib is not installed (pip install matplotlib)")
def test_plot_flag_writes_a_png(tmp_path):
    png = tmp_path / "r.png"
    p = _run(1, "--ops", "all_to_all_single", "--sizes", "8B-1KiB", "--iters", "4", "--plot", str(png))
    assert p.returncode == 0, p.stdout + p.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_world_dependent_argument_errors():
    p = _run(3, "--workloads", "tp", "--tp-hidden", "512")
    assert p.returncode == 2 and "must be multiples of the world size (3)" in p.stderr


def test_tooling_rows_table_and_json(tmp_path):
    out = tmp_path / "t.json"
    p = _run(2, "--tooling", "--iters", "5", "--rounds", "2", "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    result = json.loads(out.read_text())
    assert result["meta"]["mode"] == "tooling" and not result["collectives"]
    rows = result["tooling"]
    settings = ["default", "timing", "nan check", "hook"]
    assert [(r["setting"], r["bytes"]) for r in rows] == [
        (s, b) for b in (4096, 1 << 20) for s in settings]
    assert all(r["correct"] == {"nccl_core": True, "nccl": True} for r in rows)
    assert all(r["ratio"] == pytest.approx(r["nccl_core"]["us"] / r["nccl"]["us"]) for r in rows)
    assert all(r["host_ratio"] == pytest.approx(r["nccl_core"]["host_us"] / r["nccl"]["host_us"])
               for r in rows)
    assert "| nan check | 1 MiB |" in p.stdout and "WRONG" not in p.stdout
    assert result["meta"]["tooling_left_out"] == {} and "left out" not in p.stdout


class _HookGroup:
    def __init__(self, refuses: bool) -> None:
        self.refuses, self.hooks = refuses, []

    def _register_on_completion_hook(self, hook) -> None:
        if self.refuses:
            raise RuntimeError("no hooks here")
        self.hooks.append(hook)


def test_tooling_leaves_out_the_hook_where_nccl_refuses_one():
    from nccl_core_backend.bench import report, tooling

    groups = {("nccl", "hook"): _HookGroup(True), ("nccl_core", "hook"): _HookGroup(False)}
    hooks, why = tooling.register_hooks(groups)
    assert hooks == {} and why.startswith("backend nccl refuses") and "no hooks here" in why
    assert groups[("nccl_core", "hook")].hooks == []
    result = {"meta": {"world": 1, "tooling_left_out": {"hook": why}}, "tooling": [
        {"setting": "default", "bytes": 4096, "nccl_core": {"us": 2.0, "host_us": 1.0},
         "nccl": {"us": 2.0, "host_us": 1.0}, "ratio": 1.0, "host_ratio": 1.0,
         "correct": {"nccl_core": True, "nccl": True}}]}
    assert f"left out: hook: {why}" in report.render(result)


def test_tooling_hooks_both_backends_and_nccl_core_refusing_raises():
    from nccl_core_backend.bench import tooling

    groups = {("nccl", "hook"): _HookGroup(False), ("nccl_core", "hook"): _HookGroup(False)}
    hooks, why = tooling.register_hooks(groups)
    assert why is None and set(hooks) == set(groups)
    assert all(g.hooks == [hooks[k]] for k, g in groups.items())
    groups[("nccl_core", "hook")].refuses = True
    with pytest.raises(RuntimeError, match="no hooks here"):
        tooling.register_hooks(groups)


def test_tooling_and_workloads_are_separate_runs():
    p = _run(1, "--tooling", "--workloads", "tp")
    assert p.returncode == 2 and "--tooling, --workloads and --footprint are separate runs" in p.stderr


def test_high_priority_streams_in_header_and_json(tmp_path):
    out = tmp_path / "r.json"
    p = _run(2, "--ops", "all_reduce", "--sizes", "8B", "--iters", "4", "--high-priority",
             "nccl_core", "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(out.read_text())["meta"]["high_priority_streams"] == ["nccl_core"]
    assert "high-priority streams: nccl_core\n" in p.stdout
    p = _run(2, "--ops", "all_reduce", "--sizes", "8B", "--iters", "4", "--json", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(out.read_text())["meta"]["high_priority_streams"] == []
    assert "high-priority" not in p.stdout
