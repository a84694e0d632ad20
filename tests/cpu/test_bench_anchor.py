"""``--anchor symm_mem`` of the bench (nccl_core_backend/bench/anchor.py): what
needs no GPU — when torch's SymmetricMemory kernels can run, which rows get
them, the arguments, and how the report, the JSON and the plot show them.
The timed kernels themselves run in tests/gpu/test_bench.py."""

from __future__ import annotations

import pytest
import torch

from nccl_core_backend.bench import anchor, cli, report
from nccl_core_backend.bench.anchor import ONE_SHOT, TWO_SHOT
from nccl_core_backend.bench.plot import have_matplotlib

KiB, MiB = 1 << 10, 1 << 20


def test_runs_where_torch_has_the_kernels():
    try:
        torch.ops.symm_mem.one_shot_all_reduce_out
        torch.ops.symm_mem.two_shot_all_reduce_
    except (AttributeError, RuntimeError):
        pytest.skip(f"torch {torch.__version__} has no symm_mem kernels (the next test covers it)")
    assert anchor.why_not(torch.float32, 2) is None
    assert anchor.why_not(torch.bfloat16, 4) is None


def test_says_which_kernel_torch_lacks(monkeypatch):
    def missing(kind):
        raise AttributeError(kind)

    monkeypatch.setattr(anchor, "_op", missing)
    why = anchor.why_not(torch.float32, 2)
    assert f"torch {torch.__version__} has no" in why
    assert "torch.ops.symm_mem.one_shot_all_reduce_out" in why and "two_shot_all_reduce_" in why


@pytest.mark.parametrize("dtype,world,words", [(torch.float16, 2, "not float16"),
                                                (torch.int32, 4, "not int32"),
                                                (torch.float32, 1, "one rank")])
def test_says_why_a_job_gets_no_anchor(monkeypatch, dtype, world, words):
    monkeypatch.setattr(anchor, "_op", lambda kind: object())
    assert words in anchor.why_not(dtype, world)


@pytest.mark.parametrize("nbytes,world,kinds", [
    (16, 2, [ONE_SHOT, TWO_SHOT]),
    (4 * MiB, 4, [ONE_SHOT, TWO_SHOT]),
    (16 * MiB, 8, [ONE_SHOT, TWO_SHOT]),
    (16 * MiB + 16, 2, []),  # above --anchor-max-bytes
    (24, 2, []),  # not a multiple of 16 bytes
    (48, 3, [ONE_SHOT]),  # torch's two-shot has no world size 3
    (96, 6, [ONE_SHOT]),
])
def test_rows_that_get_the_kernels(nbytes, world, kinds):
    assert anchor.kinds_for(nbytes, world, 16 * MiB) == kinds


def test_notes_name_the_limits():
    assert "up to 16 MiB" in anchor.notes(2, 16 * MiB)[0]
    assert len(anchor.notes(4, MiB)) == 1
    assert "not 3" in anchor.notes(3, MiB)[1]


def test_arguments():
    a = cli.parse_args(["--anchor", "symm_mem", "--ops", "all_reduce", "--dtype", "bfloat16"])
    assert a.anchor == "symm_mem" and a.anchor_max_bytes == 16 * MiB
    assert cli.parse_args([]).anchor is None
    assert cli.parse_args(["--anchor", "symm_mem", "--anchor-max-bytes", "4MiB"]).anchor_max_bytes == 4 * MiB
    assert cli.parse_args(["--anchor", "symm_mem", "--ops", "broadcast", "--graph"]).graph == 100


@pytest.mark.parametrize("argv,words", [
    (["--anchor", "symm_mem", "--workloads"], "--workloads is a separate run"),
    (["--anchor", "symm_mem", "--tooling"], "--tooling is a separate run"),
    (["--anchor", "symm_mem", "--ops", "broadcast"], "add all_reduce to --ops"),
    (["--anchor", "nvshmem"], "invalid choice"),
])
def test_argument_errors(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        cli.parse_args(argv)
    assert e.value.code == 2 and words in capsys.readouterr().err


def _timing(us):
    return {"us": us, "p10_us": us, "p90_us": us, "samples": 10, "algbw": 1.0, "busbw": 1.0}


def anchored_result(two_shot_ok: bool = True) -> dict:
    rows = [{"op": "all_reduce", "bytes": 64 * KiB, "dtype": "bfloat16", "iters": 200,
             "nccl_core": _timing(8.0), "nccl": _timing(20.0), "ratio": 0.4,
             ONE_SHOT: _timing(10.0), TWO_SHOT: _timing(4.0),
             "anchor_ratio": {ONE_SHOT: 0.8, TWO_SHOT: 2.0},
             "correct": {"nccl_core": True, "nccl": True, ONE_SHOT: True, TWO_SHOT: two_shot_ok}},
            {"op": "all_reduce", "bytes": 48, "dtype": "bfloat16", "iters": 200,  # world 3
             "nccl_core": _timing(6.0), "nccl": _timing(18.0), "ratio": 1 / 3,
             ONE_SHOT: _timing(5.0), "anchor_ratio": {ONE_SHOT: 1.2},
             "correct": {"nccl_core": True, "nccl": True, ONE_SHOT: True}},
            {"op": "all_reduce", "bytes": 64 * MiB, "dtype": "bfloat16", "iters": 30,
             "nccl_core": _timing(300.0), "nccl": _timing(310.0), "ratio": 300 / 310,
             "correct": {"nccl_core": True, "nccl": True}}]
    meta = {"world": 4, "gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "nccl": "2.28.9",
            "dtype": "bfloat16", "anchor": {"name": "symm_mem", "ran": True, "why": None,
                                             "notes": anchor.notes(4, 16 * MiB)}}
    return {"meta": meta, "collectives": rows, "workloads": []}


def test_report_shows_the_anchor_rows():
    text = report.render(anchored_result())
    lines = text.splitlines()
    assert any(line.startswith("anchor symm_mem: torch's one_shot_all_reduce") for line in lines)
    assert "| all_reduce | 64 KiB | 8.00 | 20.0 | 10.0 | 4.00 | 0.80 | 2.00 | yes |" in lines
    assert "| all_reduce | 48 B | 6.00 | 18.0 | 5.00 | - | 1.20 | - | yes |" in lines
    assert not any("| 64 MiB |" in line and "- | - |" in line for line in lines)  # no anchor: main table only
    table = report.anchor_table(anchored_result()["collectives"])
    assert len({line.count("|") for line in table.splitlines()}) == 1


def test_a_wrong_anchor_result_is_reported():
    r = anchored_result(two_shot_ok=False)
    assert report.wrong_results(r) == ["all_reduce 64 KiB: WRONG: symm_two_shot"]


def test_report_says_why_the_anchor_did_not_run():
    r = anchored_result()
    r["meta"]["anchor"] = {"name": "symm_mem", "ran": False, "notes": [],
                           "why": "torch's one-shot and two-shot all-reduce take float32 and bfloat16, not int8"}
    for row in r["collectives"]:
        for k in (ONE_SHOT, TWO_SHOT, "anchor_ratio"):
            row.pop(k, None)
        row["correct"] = {"nccl_core": True, "nccl": True}
    text = report.render(r)
    assert "anchor symm_mem: not run: torch's one-shot and two-shot all-reduce take float32 " \
           "and bfloat16, not int8" in text.splitlines()
    assert report.anchor_table(r["collectives"]) == ""


def test_json_keeps_the_anchor(tmp_path):
    path = tmp_path / "r.json"
    report.write_json(str(path), anchored_result())
    back = report.load_json(str(path))
    assert back["collectives"][0]["anchor_ratio"] == {ONE_SHOT: 0.8, TWO_SHOT: 2.0}
    assert back["meta"]["anchor"]["ran"] is True


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib is not installed (pip install matplotlib)")
def test_plot_draws_the_anchor(tmp_path):
    from nccl_core_backend.bench.plot import plot

    out = tmp_path / "a.png"
    plot(anchored_result(), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rows_slower_than_nccl_are_named_with_their_path():
    r = anchored_result()
    r["collectives"][2]["ratio"] = 1.03
    r["collectives"][2]["path"] = "nccl"
    r["collectives"][1]["ratio"] = 1.02  # within the margin
    assert report.slower_rows(r) == ["all_reduce 64 MiB 1.03 (path nccl)"]
    assert report.render(r).splitlines()[-1] == \
        "SLOWER THAN nccl BY MORE THAN 2%: all_reduce 64 MiB 1.03 (path nccl)"
    assert report.slower_rows(anchored_result()) == []


def test_rows_whose_rounds_stalled_are_named():
    r = anchored_result()
    # A stall seen on 4xH200: a graph row fine at p10, hundreds of us at p90.
    r["collectives"].append({"op": "all_reduce_graph", "bytes": 128 * KiB, "dtype": "bfloat16",
                             "iters": 100, "count": 100, "path": "fast",
                             "nccl_core": {**_timing(145.1), "p10_us": 4.73, "p90_us": 296.3},
                             "nccl": _timing(16.6), "ratio": 145.1 / 16.6,
                             "correct": {"nccl_core": True, "nccl": True}})
    # Host noise of an eager row: wide, but not a stall.
    r["collectives"][0]["nccl_core"] = {**_timing(50.4), "p10_us": 44.1, "p90_us": 65.7}
    # Three times as slow but only a few us: a small row's jitter.
    r["collectives"][1]["nccl_core"] = {**_timing(6.0), "p10_us": 3.0, "p90_us": 12.0}
    assert report.unsteady_rows(r) == [
        "all_reduce, graph of 100 128 KiB p10 4.73 / median 145 / p90 296 us (path fast)"]
    assert any(line.startswith("UNSTEADY (nccl_core's p90 at least 3x its p10")
               for line in report.render(r).splitlines())
    assert report.unsteady_rows(anchored_result()) == []
