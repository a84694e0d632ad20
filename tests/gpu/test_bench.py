"""``python -m nccl_core_backend.bench`` under torchrun, at the host's world size.

Tiny sizes and models, so each launch takes seconds; what is checked is the
command, not the speed: every op and workload present in the JSON, every
result correct on every rank, times and ratios positive.
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest
import torch

from nccl_core_backend.bench.sizes import format_bytes
from tests.gpu import launch

pytestmark = pytest.mark.gpu
TIMEOUT = int(os.environ.get("NCCL_CORE_EXAMPLE_TIMEOUT", "300"))
# Backend nccl before torch 2.15 is ProcessGroupNCCL, which takes an on-completion hook.
NCCL_TAKES_HOOKS = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15)
OPS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single", "broadcast"]


def _world() -> int:
    """NCCL_CORE_BENCH_WORLD ranks; by default every GPU (up to 8), and 2 as
    simulated hosts on a one-GPU machine (what a user there gets)."""
    chosen = os.environ.get("NCCL_CORE_BENCH_WORLD", "")
    world = int(chosen) if chosen else max(2, min(launch.gpus(), 8))
    launch.require(world, "the bench runs")
    return world


def _bench(name: str, *args: str) -> tuple[dict, str]:
    world = _world()
    path = tempfile.mktemp(suffix=".json")
    job = launch.torchrun(["nccl_core_backend.bench", *args, "--json", path], world, module=True,
                          timeout=TIMEOUT, name=f"bench_{name}")
    out = job.log
    assert job.returncode == 0, f"bench {name} failed (exit {job.returncode}):\n{out[-6000:]}"
    with open(path) as f:
        result = json.load(f)
    assert result["meta"]["world"] == world
    return result, out


def _timing_ok(t: dict) -> bool:
    return t["us"] > 0 and t["p10_us"] <= t["us"] <= t["p90_us"] and t["samples"] > 0


def test_collectives_every_op_checked():
    sizes = [8, 1024, 64 << 10, 1 << 20]
    result, out = _bench("collectives", "--sizes", "8B,1KiB,64KiB,1MiB", "--iters", "6", "--warmup", "2",
                         "--rounds", "2", "--graph", "4", "--graph-max-bytes", "64KiB")
    rows = result["collectives"]
    world = result["meta"]["world"]
    for op in OPS:
        mine = [r for r in rows if r["op"] == op]
        assert len(mine) == len(sizes), f"{op}: {len(mine)} rows"
        # the requested size, rounded down to whole elements per rank
        assert [r["bytes"] for r in mine] == [max(s // 4, world) // world * world * 4 for s in sizes]
    for op in OPS:  # a graph row of every op at each size up to 64 KiB
        graph = [r for r in rows if r["op"] == op + "_graph"]
        assert len(graph) == 3 and all(r["count"] == 4 for r in graph), op
    assert "| broadcast, graph of 4 |" in out
    for r in rows:
        assert r["correct"] == {"nccl_core": True, "nccl": True}, r
        assert r["ratio"] > 0 and _timing_ok(r["nccl_core"]) and _timing_ok(r["nccl"]), r
        assert r["nccl_core"]["busbw"] >= 0 and r["nccl"]["algbw"] > 0
    first = format_bytes(rows[0]["bytes"])  # 8 B, or one float per rank
    assert f"| all_reduce | {first} |" in out and "WRONG" not in out


def test_collectives_bfloat16():
    result, _ = _bench("bf16", "--ops", "all_reduce,reduce_scatter_tensor", "--sizes", "2B-4KiB",
                       "--dtype", "bfloat16", "--iters", "4", "--warmup", "1")
    rows = result["collectives"]
    assert {r["op"] for r in rows} == {"all_reduce", "reduce_scatter_tensor"} and len(rows) == 24
    assert all(r["dtype"] == "bfloat16" and all(r["correct"].values()) and r["ratio"] > 0 for r in rows)


def test_workloads_tiny():
    result, out = _bench("workloads", "--workloads", "--tokens", "1,4", "--tp-layers", "2",
                         "--tp-hidden", "512", "--tp-ffn", "1024", "--model-dim", "128",
                         "--model-layers", "2", "--model-heads", "4", "--batch", "2", "--seq", "64",
                         "--bucket-mb", "1,25", "--steps", "4", "--warmup", "2", "--rounds", "2")
    rows = result["workloads"]
    assert [(r["workload"], r["label"]) for r in rows] == [
        ("tp_decode", "tokens=1"), ("tp_decode", "tokens=4"), ("ddp", "bucket=1MiB"),
        ("ddp", "bucket=25MiB"), ("fsdp2", "fully_shard")]
    for r in rows:
        assert all(r["correct"].values()), r
        assert r["ratio"] > 0 and _timing_ok(r["nccl_core"]) and _timing_ok(r["nccl"]), r
    tp = rows[0]
    assert tp["correct"] == {"nccl_core": True, "nccl": True}
    assert tp["config"]["all_reduces"] == 4 and tp["config"]["all_reduce_bytes"] == 1024
    assert _timing_ok(tp["baseline"]) and set(tp["comm_us"]) == {"nccl_core", "nccl"}
    assert "| tp_decode | tokens=1 |" in out


def test_collectives_in_nccl_memory():
    """NCCL memory: the sizes cross nccl_core's fast path, the push all-reduce and
    NCCL's own kernels on automatically registered windows."""
    result, _ = _bench("nccl_mem", "--memory", "nccl", "--sizes", "8B,64KiB,1MiB,8MiB,32MiB",
                       "--iters", "4", "--warmup", "1", "--graph", "3", "--graph-max-bytes", "64KiB")
    rows = result["collectives"]
    # five ops at five sizes, and a graph row of each op at the two sizes up to 64 KiB
    assert result["meta"]["memory"] == "nccl" and len(rows) == 5 * 5 + 5 * 2
    assert all(r["correct"] == {"nccl_core": True, "nccl": True} and r["ratio"] > 0 for r in rows)


def test_tooling_rows_checked():
    result, out = _bench("tooling", "--tooling", "--iters", "20", "--rounds", "2", "--warmup", "2")
    rows = result["tooling"]
    # torch >= 2.15's backend nccl (nccl2) takes no on-completion hook, so the
    # bench leaves the hook rows out there, saying why; before, it times them.
    left_out = result["meta"]["tooling_left_out"]
    if NCCL_TAKES_HOOKS:
        settings = ("default", "timing", "nan check", "hook")
        assert left_out == {}
    else:
        settings = ("default", "timing", "nan check")
        assert list(left_out) == ["hook"] and left_out["hook"].startswith("backend nccl ")
        assert f"left out: hook: {left_out['hook']}" in out
    assert [(r["setting"], r["bytes"]) for r in rows] == [
        (s, b) for b in (4096, 1 << 20) for s in settings]
    for r in rows:
        assert r["correct"] == {"nccl_core": True, "nccl": True}, r
        for b in ("nccl_core", "nccl"):
            assert 0 < r[b]["host_us"] <= r[b]["us"] * 1.01, r
        assert r["ratio"] > 0 and r["host_ratio"] > 0, r
    assert "| nan check | 4 KiB |" in out and "WRONG" not in out


def test_footprint_rows():
    """--footprint: both programs measured on both backends and checked;
    backend nccl holds (next to) nothing once the program dropped its tensors (the
    baseline nccl_core is compared with: tests/gpu/cases for the parity)."""
    result, out = _bench("footprint", "--footprint", "--footprint-mib", "8", "--footprint-rounds", "2",
                         "--steps", "2", "--model-dim", "128", "--model-layers", "2", "--model-heads", "4",
                         "--batch", "2", "--seq", "64")
    rows = result["footprint"]
    assert [r["program"] for r in rows] == ["drop loop", "fsdp2 step"] and result["meta"]["mode"] == "footprint"
    for r in rows:
        assert r["correct"] == {"nccl": True, "nccl_core": True}, r
        assert r["nccl"]["peak_mib"] > 0 and r["nccl_core"]["peak_mib"] > 0, r
        assert r["nccl"]["held_mib"] <= 1, r
    # After the drop nccl_core holds what nccl holds (nothing).
    loop = rows[0]
    assert loop["nccl_core"]["held_mib"] <= 1, loop
    assert "| drop loop | 2 x 8 MiB |" in out and "WRONG" not in out


def test_anchor_symm_mem_beside_both_backends():
    # torch's SymmetricMemory kernels need peers' memory mapped: real GPUs.
    if launch.gpus() < 2:
        pytest.skip(f"torch's SymmetricMemory kernels need one GPU per rank: {launch.gpus()} GPU(s)")
    result, out = _bench("anchor", "--ops", "all_reduce", "--sizes", "8B,64KiB,1MiB,32MiB",
                         "--dtype", "bfloat16", "--iters", "6", "--warmup", "2", "--rounds", "2",
                         "--graph", "4", "--graph-max-bytes", "64KiB", "--anchor", "symm_mem")
    meta, rows, world = result["meta"], result["collectives"], result["meta"]["world"]
    assert meta["anchor"]["ran"] is True, meta["anchor"]
    kinds = ["symm_one_shot"] + (["symm_two_shot"] if world in (2, 4, 8) else [])
    by = {(r["op"], r["bytes"]): r for r in rows}
    for key in [("all_reduce", 64 << 10), ("all_reduce", 1 << 20), ("all_reduce_graph", 64 << 10)]:
        r = by[key]
        for k in kinds:
            assert _timing_ok(r[k]) and r["anchor_ratio"][k] > 0 and r["correct"][k] is True, r
    # 8 B is below 16 bytes and 32 MiB above --anchor-max-bytes: no anchor there
    assert all("anchor_ratio" not in r for r in rows if r["bytes"] < 16 or r["bytes"] > 16 << 20)
    assert "anchor symm_mem: torch's one_shot_all_reduce" in out and "WRONG" not in out


def test_host_phases_of_each_eager_row():
    result, out = _bench("phases", "--ops", "all_reduce,broadcast", "--sizes", "1KiB,1MiB", "--iters", "6",
                         "--warmup", "2", "--rounds", "2", "--host-phases")
    rows = result["collectives"]
    assert len(rows) == 4
    for r in rows:
        phases = r["host_phases"]
        assert {"setup", "work", "enqueue", "record"} <= set(phases), r
        assert all(us >= 0 for us in phases.values()) and phases["enqueue"] > 0, r
    assert "by phase (--host-phases" in out and "WRONG" not in out


def test_kernel_times_of_each_row():
    result, out = _bench("kernels", "--ops", "all_reduce", "--sizes", "1KiB,1MiB", "--iters", "6",
                         "--warmup", "2", "--rounds", "2", "--graph", "4", "--kernel-times")
    rows = result["collectives"]
    assert len(rows) == 4  # two eager rows, two graph rows
    for r in rows:
        times = r["kernel_times"]
        assert set(times) == {"nccl_core", "nccl"}, r
        for kind, t in times.items():
            # Each call ran something on the GPU, and no more than the sample's time allows
            # (the sample is the GPU's time plus any wait for the host).
            assert t["gpu_us"] > 0 and t["kernels"], (kind, r)
            assert abs(sum(t["kernels"].values()) - t["gpu_us"]) < 0.01 * len(t["kernels"]) + 1e-6, t
    assert "GPU µs per call of what each kind ran" in out and "WRONG" not in out


def test_high_priority_streams_where_asked():
    # nccl_core alone: its backend reads the variable the bench sets; nccl keeps its own
    result, out = _bench("priority_core", "--ops", "all_reduce", "--sizes", "1KiB", "--iters", "4",
                         "--warmup", "1", "--rounds", "1", "--high-priority", "nccl_core")
    assert result["meta"]["high_priority_streams"] == ["nccl_core"]
    assert "high-priority streams: nccl_core\n" in out
    assert all(all(r["correct"].values()) for r in result["collectives"])
    # both, through DDP's async bucket all-reduces on the groups' own streams
    result, out = _bench("priority_ddp", "--workloads", "ddp", "--model-dim", "128",
                         "--model-layers", "2", "--model-heads", "4", "--batch", "2", "--seq", "64",
                         "--bucket-mb", "1", "--steps", "3", "--warmup", "1", "--rounds", "2",
                         "--high-priority")
    assert result["meta"]["high_priority_streams"] == ["nccl_core", "nccl"]
    (row,) = result["workloads"]
    assert row["workload"] == "ddp" and all(row["correct"].values()), row
