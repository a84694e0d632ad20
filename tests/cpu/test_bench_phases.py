"""``--host-phases`` of the bench: where nccl_core's host time goes per call
(csrc/util/host_profile.h), recorded around each eager row's timed calls."""

from __future__ import annotations

import pytest

from nccl_core_backend import _C
from nccl_core_backend.bench import cli, report
from nccl_core_backend.bench.sweep import HostPhases


def test_argument():
    assert cli.parse_args([]).host_phases is False
    assert cli.parse_args(["--host-phases", "--ops", "all_reduce"]).host_phases is True


@pytest.mark.parametrize("other", ["--workloads", "--tooling", "--footprint"])
def test_only_with_the_collectives_sweep(capsys, other):
    with pytest.raises(SystemExit):
        cli.parse_args(["--host-phases", other])
    assert "--host-phases adds a table to the collectives sweep" in capsys.readouterr().err


def test_phases_of_the_calls_that_ran(monkeypatch):
    seen = []

    def profile(enable=None, reset=False):
        seen.append((enable, reset))
        return {"setup": (10, 1.25), "work": (10, 0.5), "(enqueue: kernel launch)": (0, 0.0)}

    monkeypatch.setattr(_C, "_host_profile", profile)
    assert HostPhases(False).take() == {} and seen == []
    assert HostPhases(True).take() == {"setup": 1.25, "work": 0.5}
    assert seen == [(True, True), (False, True)]  # on and zeroed, then off and zeroed


def test_real_profile_with_no_calls_is_empty():
    assert HostPhases(True).take() == {}
    assert _C._host_profile(reset=True) is not None  # left off


def _row(op, nbytes, phases):
    t = {"us": 12.0, "p10_us": 11.0, "p90_us": 13.0, "samples": 10, "algbw": 1.0, "busbw": 1.0}
    row = {"op": op, "bytes": nbytes, "dtype": "float32", "iters": 10, "nccl_core": t, "nccl": t,
           "ratio": 1.0, "correct": {"nccl_core": True, "nccl": True}}
    if phases:
        row["host_phases"] = phases
    return row


def test_table_lists_each_phase_once_in_the_order_seen():
    rows = [_row("all_reduce", 1024, {"setup": 1.0, "work": 0.5, "(enqueue: kernel launch)": 3.5}),
            _row("broadcast", 1024, {"setup": 1.5, "work": 0.25, "enqueue": 9.0}),
            _row("all_reduce", 1 << 30, None)]
    table = report.host_phases_table(rows).splitlines()
    assert table[0] == "| op | size | nccl_core µs | setup | work | (enqueue: kernel launch) | enqueue |"
    assert table[2] == "| all_reduce | 1 KiB | 12.0 | 1.00 | 0.50 | 3.50 | - |"
    assert table[3] == "| broadcast | 1 KiB | 12.0 | 1.50 | 0.25 | - | 9.00 |"
    assert len(table) == 4 and len({line.count("|") for line in table}) == 1
    assert report.host_phases_table([rows[2]]) == ""
    meta = {"world": 2, "gpu": "x", "torch": "t", "nccl": "n", "dtype": "float32"}
    text = report.render({"meta": meta, "collectives": rows})
    assert "nccl_core's host µs per call, by phase (--host-phases" in text
