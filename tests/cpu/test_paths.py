"""The path table (csrc/nvlink/path_table.cpp, nccl_core_backend.paths): which
calls run as nccl_core's NVLink kernels, by world size, operation and size."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nccl_core_backend import paths

KiB, MiB = 1 << 10, 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_rows_cover_every_world_size_once_and_say_what_set_them():
    rows = paths.table()
    assert rows[0]["min_world"] == 1
    for a, b in zip(rows, rows[1:]):
        assert b["min_world"] == a["max_world"] + 1
    assert rows[-1]["max_world"] >= 1 << 20  # beyond the table: the last row
    for row in rows:
        assert set(row["fast_max_bytes"]) == set(paths.OPS) == set(row["eager_fast_max_bytes"])
        for op in paths.OPS:  # the scratch window is sized by the captured limit
            assert row["eager_fast_max_bytes"][op] <= row["fast_max_bytes"][op]
        assert len(row["measured"]) > 40  # the run, or "not measured" and why
        if row["push_max_bytes"]:
            assert row["push_min_bytes"] <= row["push_max_bytes"]


@pytest.mark.parametrize("op,nbytes,world,graph,path", [
    ("all_reduce", 8, 2, True, "fast"),
    ("all_reduce", 256 * KiB, 2, True, "fast"),
    ("all_reduce", 8, 2, False, "nccl"),  # eager: the fast path measured 1.13-1.45
    ("broadcast", 256 * KiB, 2, False, "nccl"),  # eager: 1.24-1.65
    ("all_reduce", 1 * MiB, 2, False, "nccl"),  # 1 MiB measured 1.18-1.20 with the push
    ("all_reduce", 1 * MiB, 2, True, "fast"),  # captured 1 MiB measured 0.36 with 64 blocks
    ("all_reduce", 1 * MiB + 1, 2, True, "nccl"),
    ("all_reduce", 1 * MiB, 4, True, "fast"),  # captured 1 MiB measured 0.59 at 4 ranks
    ("all_reduce", 1 * MiB, 4, False, "nccl"),
    ("broadcast", 1 * MiB, 2, True, "fast"),  # captured 1 MiB measured 0.43 at 2 ranks
    ("all_to_all_single", 1 * MiB + 1, 2, True, "nccl"),
    ("broadcast", 1 * MiB, 4, True, "fast"),  # 4 ranks: every op captured to 1 MiB (0.30-0.65)
    ("broadcast", 1 * MiB + 1, 4, True, "nccl"),
    ("all_reduce", 2 * MiB, 2, False, "push"),
    ("all_reduce", 16 * MiB, 2, True, "push"),
    ("all_reduce", 32 * MiB, 2, False, "nccl"),  # 32 MiB measured 1.00 with NCCL, 64 MiB 1.01 pushed
    ("all_reduce", 2 * MiB, 4, False, "nccl"),  # 2 MiB measured 1.03-1.05 with the push at 4 ranks
    ("all_reduce", 2 * MiB, 4, True, "push"),  # captured: 0.50 pushed, 1.03 with NCCL
    ("all_reduce", 2 * MiB, 3, True, "push"),
    ("all_reduce", 2 * MiB - 16, 4, True, "nccl"),
    ("all_reduce", 4 * MiB, 4, False, "push"),
    ("all_reduce", 8 * MiB, 4, True, "push"),
    ("all_reduce", 16 * MiB, 4, False, "nccl"),  # 16 MiB measured 1.10 with the push at 4 ranks
    ("all_reduce", 8 * MiB, 3, False, "push"),
    ("all_reduce", 1 * MiB, 8, False, "nccl"),  # not measured beyond 4 ranks: no push
    ("all_reduce", 64 * KiB, 8, True, "fast"),
    ("all_reduce", 64 * KiB, 8, False, "nccl"),
    ("all_reduce", 64 * KiB, 1, False, "nccl"),  # one rank: no kernel of ours (measured slower)
    ("all_reduce", 8, 1, True, "nccl"),
    ("broadcast", 256 * KiB, 1, True, "nccl"),
    ("all_reduce", 512 * KiB, 8, True, "nccl"),  # beyond 4 ranks: 256 KiB, not measured
    ("broadcast", 2 * MiB, 2, True, "nccl"),  # the push is an all_reduce
    ("all_gather_into_tensor", 256 * KiB, 4, True, "fast"),
    ("all_gather_into_tensor", 256 * KiB, 4, False, "nccl"),
    ("all_to_all_single", 1 * MiB, 3, True, "fast"),
    ("all_to_all_single", 1 * MiB + 1, 4, True, "nccl"),
    ("all_reduce", 0, 2, True, "nccl"),
])
def test_where_calls_go(op, nbytes, world, graph, path):
    assert paths.path_of(op, nbytes, world, graph=graph) == path


def test_options_override_the_table_for_every_operation():
    off = paths.for_world(2, fast_path_max_bytes=0, push_max_bytes=0)
    assert set(off["fast_max_bytes"].values()) == set(off["eager_fast_max_bytes"].values()) == {0}
    assert off["push_max_bytes"] == 0
    assert paths.path_of("all_reduce", 8, 2, fast_path_max_bytes=0, push_max_bytes=0) == "nccl"
    wide = paths.for_world(8, fast_path_max_bytes=MiB, push_min_bytes=2 * MiB, push_max_bytes=64 * MiB)
    assert set(wide["fast_max_bytes"].values()) == set(wide["eager_fast_max_bytes"].values()) == {MiB}
    assert paths.path_of("broadcast", MiB, 8, fast_path_max_bytes=MiB) == "fast"  # eager too
    assert (wide["push_min_bytes"], wide["push_max_bytes"]) == (2 * MiB, 64 * MiB)
    assert wide["eager_push_min_bytes"] == 2 * MiB  # the option sets both modes
    four = paths.for_world(4)
    assert (four["push_min_bytes"], four["eager_push_min_bytes"]) == (2 * MiB, 4 * MiB)
    both = paths.for_world(4, push_min_bytes=MiB)
    assert (both["push_min_bytes"], both["eager_push_min_bytes"]) == (MiB, MiB)
    assert paths.path_of("all_reduce", 2 * MiB, 4, push_min_bytes=MiB) == "push"
    assert paths.path_of("all_reduce", 32 * MiB, 8, push_max_bytes=64 * MiB) == "push"


def test_two_shots_from_the_table_or_the_option():
    rows = {row["min_world"]: row for row in paths.table()}
    assert rows[1]["two_shot_min_bytes"] == 0  # no peers
    assert rows[2]["two_shot_min_bytes"] == 0  # one shot: the storing two-shot not measured yet
    assert rows[3]["two_shot_min_bytes"] == MiB
    assert paths.for_world(4)["two_shot_min_bytes"] == MiB
    assert paths.for_world(2, two_shot_min_bytes=256 * KiB)["two_shot_min_bytes"] == 256 * KiB
    assert paths.for_world(4, two_shot_min_bytes=0)["two_shot_min_bytes"] == 0
    assert "| 2 MiB (eager 4 MiB) - 8 MiB | 1 MiB |" in paths.render()
    assert "| 2 MiB - 16 MiB | never |" in paths.render()


def test_one_way_sizes_from_the_table_or_the_option():
    rows = {row["min_world"]: row for row in paths.table()}
    assert rows[1]["one_way_max_bytes"] == 0  # one rank: no kernel of ours (measured slower)
    assert rows[2]["one_way_max_bytes"] == 512 * KiB
    assert rows[3]["one_way_max_bytes"] == 128 * KiB  # measured at 4 ranks
    assert rows[5]["one_way_max_bytes"] == 0
    assert paths.for_world(2)["one_way_max_bytes"] == 512 * KiB
    assert paths.for_world(2, one_way_max_bytes=0)["one_way_max_bytes"] == 0
    assert paths.for_world(4, one_way_max_bytes=16 * KiB)["one_way_max_bytes"] == 16 * KiB
    assert "| 2 MiB - 16 MiB | never | 512 KiB |" in paths.render()


def test_an_eager_limit_alone_keeps_the_captured_one():
    eager = paths.for_world(2, eager_fast_path_max_bytes=64 * KiB)
    assert set(eager["eager_fast_max_bytes"].values()) == {64 * KiB}
    assert eager["fast_max_bytes"] == paths.for_world(2)["fast_max_bytes"]
    assert paths.path_of("all_reduce", 64 * KiB, 2, eager_fast_path_max_bytes=64 * KiB) == "fast"
    assert paths.path_of("all_reduce", 64 * KiB + 1, 2, eager_fast_path_max_bytes=64 * KiB) == "nccl"
    # fast_path_max_bytes holds for both modes and wins over it
    both = paths.for_world(2, fast_path_max_bytes=0, eager_fast_path_max_bytes=64 * KiB)
    assert set(both["eager_fast_max_bytes"].values()) == {0}


def test_bad_arguments():
    with pytest.raises(ValueError, match="world must be at least 1"):
        paths.for_world(0)
    with pytest.raises(ValueError, match="unknown op 'all_gather'"):
        paths.path_of("all_gather", 8, 2)


def test_render_and_the_bench_print_the_table():
    text = paths.render()
    assert text.count("\n") == len(paths.table()) + 1
    assert "| 2 | 1 MiB, every op | off | 2 MiB - 16 MiB | never |" in text
    assert "| 3-4 | 1 MiB, every op | off | 2 MiB (eager 4 MiB) - 8 MiB |" in text
    # The repo first, then what the caller's path held (another torch, staged).
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0", PYTHONPATH=path)
    for module in ("nccl_core_backend.paths", "nccl_core_backend.bench"):
        argv = [sys.executable, "-m", module] + (["--paths"] if module.endswith("bench") else [])
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0 and p.stdout.strip() == text, p.stderr[-2000:]
