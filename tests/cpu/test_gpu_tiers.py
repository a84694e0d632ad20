"""The GPU tiers (tests/gpu/tiers.py) cover the whole GPU suite: every GPU
test file in some part and in the quick tier, the suite's five launch
configurations, the long soak; and the runner reads pytest's counts."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from tests.gpu import tiers

GPU_FILES = sorted(os.path.relpath(p, tiers.ROOT)
                   for p in glob.glob(os.path.join(tiers.ROOT, "tests", "gpu", "test_*.py")))


def _files(jobs) -> set[str]:
    return {t for j in jobs for t in j.tests}


def _configs(jobs) -> set[str]:
    return {c for j in jobs for c in j.env.get("NCCL_CORE_GPU_CONFIGS", "").split(",") if c}


def test_every_gpu_test_file_is_in_a_part_and_in_the_quick_tier():
    parts = [j for jobs in tiers.PARTS.values() for j in jobs]
    assert set(GPU_FILES) <= _files(parts), set(GPU_FILES) - _files(parts)
    assert set(GPU_FILES) <= _files(tiers.QUICK), set(GPU_FILES) - _files(tiers.QUICK)
    assert "tests/cpu" in _files(parts) and "tests/cpu" in _files(tiers.QUICK)


def test_parts_launch_every_configuration_and_the_long_soak():
    parts = [j for jobs in tiers.PARTS.values() for j in jobs]
    assert _configs(parts) >= {"1:eager", "2:eager", "2:lazy", "4:eager", "4:lazy"}
    assert {"1:eager", "2:eager"} <= _configs(tiers.QUICK)
    suites = [j for j in parts if tiers.SUITE in j.tests]
    # The soak runs once, at its full length; no other suite job repeats it.
    assert [j.env.get("NCCL_CORE_SOAK_SCALE") for j in suites if "NCCL_CORE_GPU_ONLY" in j.env] == ["1"]
    assert all(j.env.get("NCCL_CORE_GPU_SKIP") == "soak_no_leaks" for j in suites if "NCCL_CORE_GPU_ONLY" not in j.env)
    assert all(j.estimate_s <= 9 * 60 for j in parts)


def test_job_names_are_unique_within_a_tier():
    for jobs in [tiers.QUICK, *tiers.PARTS.values()]:
        names = [j.name for j in jobs]
        assert len(names) == len(set(names)), names


@pytest.mark.parametrize("tail,want", [
    ("=== 87 passed, 1 failed, 32 skipped in 139.25s (0:02:19) ===", (87, 1, 32, 0)),
    ("1 failed, 77 passed, 42 skipped in 110.49s (0:01:50)", (77, 1, 42, 0)),
    ("some line\n3 passed, 2 errors in 4.0s", (3, 0, 0, 2)),
    ("12 skipped in 0.5s", (0, 0, 12, 0)),
    ("no tests ran in 0.01s", (0, 0, 0, 0)),
])
def test_counts_reads_pytest_closing_line(tail, want):
    c = tiers.counts("collected 5 items\n" + tail)
    assert (c["passed"], c["failed"], c["skipped"], c["errors"]) == want


def test_table_totals_and_verdict():
    rows = [{"part": "p", "job": "a", "seconds": 10, "passed": 3, "failed": 0, "skipped": 1, "errors": 0,
             "result": "ok"},
            {"part": "p", "job": "b", "seconds": 20, "passed": 1, "failed": 2, "skipped": 0, "errors": 0,
             "result": "FAILED (exit 1)"}]
    text = tiers.table(rows, 25, "t")
    assert text.splitlines()[-1] == "| all | | 25 | 4 | 2 | 1 | 0 | FAILED |"


def test_runner_runs_jobs_and_stops_at_the_budget(tmp_path):
    # A test that imports nothing heavy: done within the budget even on a loaded host.
    ok = tiers.Job("ok", ("tests/cpu/test_layering.py::test_every_folder_has_a_floor",))
    slow = tiers.Job("slow", ("tests/cpu/test_gpu_tiers.py::test_sleeps_when_asked",),
                     {"NCCL_CORE_TIERS_SLEEP": "60"})
    rows = tiers.run([("p", ok), ("p", slow)], 2, 30, str(tmp_path))
    by = {r["job"]: r for r in rows}
    assert by["ok"]["result"] == "ok" and by["ok"]["passed"] == 1
    assert by["slow"]["result"] == "stopped"


def test_sleeps_when_asked():
    """A job for the runner's budget test (sleeps only when it sets the variable)."""
    import time

    time.sleep(float(os.environ.get("NCCL_CORE_TIERS_SLEEP", "0")))


def test_command_line_lists_parts_and_refuses_unknown_ones():
    out = subprocess.run([sys.executable, "-m", "tests.gpu.tiers", "--list-parts"], cwd=tiers.ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and all(name in out.stdout for name in tiers.PARTS), out.stderr
    bad = subprocess.run([sys.executable, "-m", "tests.gpu.tiers", "--part", "nope"], cwd=tiers.ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown part(s) nope" in bad.stderr


def _case_modules_imported(cases_dir: str) -> tuple[set[str], set[str]]:
    """(case modules in `cases_dir`, modules its __init__ imports): a module
    left out of the package's import registers no case, and none runs."""
    import ast

    files = {os.path.splitext(n)[0] for n in os.listdir(cases_dir)
             if n.endswith(".py") and n not in ("__init__.py", "common.py")}
    tree = ast.parse(open(os.path.join(cases_dir, "__init__.py")).read())
    imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for a in node.names}
    return files, imported


def test_every_gpu_case_module_is_imported():
    files, imported = _case_modules_imported(os.path.join(tiers.ROOT, "tests", "gpu", "cases"))
    assert files <= imported, sorted(files - imported)


def test_the_import_check_sees_a_module_left_out(tmp_path):
    (tmp_path / "__init__.py").write_text("from x import (  # noqa\n    kept,\n)\n")
    for name in ("kept", "forgotten", "common"):
        (tmp_path / f"{name}.py").write_text("")
    files, imported = _case_modules_imported(str(tmp_path))
    assert files - imported == {"forgotten"}
