"""nc.params and dump_params on the NCCL this process loads (no GPU needed):
a value set in the environment reads back; the names are NCCL's own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("nccl_core_backend._C")
import nccl_core_backend as nc  # noqa: E402

pytestmark = pytest.mark.skipif(nc.nccl_version() < (2, 30, 4),
                                reason="NCCL's parameters need NCCL 2.30.4 or newer")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", **env))


def test_a_value_from_the_environment_reads_back():
    r = run("import nccl_core_backend as nc; print(nc.params['NCCL_DEBUG_SUBSYS']); "
            "print('NCCL_DEBUG_SUBSYS' in list(nc.params), 'NCCL_NOT_ONE' in nc.params)",
            NCCL_DEBUG_SUBSYS="INIT,ENV")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["INIT,ENV", "True", "False"]


def test_dump_params_prints_them():
    r = run("import nccl_core_backend as nc; nc.dump_params()", NCCL_DEBUG_SUBSYS="INIT,ENV")
    assert r.returncode == 0, r.stderr
    assert "NCCL_DEBUG_SUBSYS" in r.stdout + r.stderr and "INIT,ENV" in r.stdout + r.stderr
