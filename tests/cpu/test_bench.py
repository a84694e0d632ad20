"""python -m nccl_core_backend.bench: the parts that need no GPU.

Size parsing, bus-bandwidth factors, exact check data, the tables and JSON,
the plot (when matplotlib is installed), the progress bar, argument and
launch errors, and the checks themselves, run over gloo on CPU processes
(a correct collective passes, a broken one fails).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
import torch

from nccl_core_backend.bench import cli, report, timing
from nccl_core_backend.bench.collectives import (OPS, bandwidth, base_op, bus_factor,
                                                 element_count, graph_op)
from nccl_core_backend.bench.compare import activations_close, grads_close
from nccl_core_backend.bench.data import DTYPES, EXACT_LIMIT, pattern_for
from nccl_core_backend.bench.job import BenchError, check_cuda, check_launch
from nccl_core_backend.bench.plot import have_matplotlib
from nccl_core_backend.bench.progress import Progress
from nccl_core_backend.bench.sizes import format_bytes, parse_size, parse_sizes
from nccl_core_backend.bench.sweep import auto_iters, graph_rows_wanted

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


# --- sizes ------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [("8", 8), ("8B", 8), ("8b", 8), ("4K", 4 * KiB),
                                        ("4KB", 4 * KiB), ("4KiB", 4 * KiB), ("1M", MiB),
                                        ("64MiB", 64 * MiB), ("1GiB", GiB), (" 2 gb ", 2 * GiB)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text,words", [("", "bad size"), ("8X", "unknown unit"), ("-8", "bad size"),
                                        ("0B", "at least 1 byte"), ("1.5MiB", "bad size"),
                                        ("2048GiB", "larger than"), ("MiB", "bad size")])
def test_parse_size_errors(text, words):
    with pytest.raises(ValueError, match=words):
        parse_size(text)


def test_ranges_double_from_start_to_end():
    assert parse_sizes("8B-64B") == [8, 16, 32, 64]
    assert parse_sizes("8B-1GiB")[-1] == GiB and len(parse_sizes("8B-1GiB")) == 28
    assert parse_sizes("3-20") == [3, 6, 12]  # the end is a bound, not a member
    assert parse_sizes("1KiB,64B-128B,1KiB") == [64, 128, KiB]
    assert parse_sizes("4MiB") == [4 * MiB]


@pytest.mark.parametrize("spec,words", [("", "empty entry"), ("8B,", "empty entry"),
                                        ("1MiB-8B", "start is larger"), ("8B-1K-2K", "more than one"),
                                        ("8B-1Q", "unknown unit")])
def test_parse_sizes_errors(spec, words):
    with pytest.raises(ValueError, match=words):
        parse_sizes(spec)


def test_format_bytes():
    assert [format_bytes(n) for n in (8, 1023, KiB, 1536, 64 * MiB, GiB)] == [
        "8 B", "1023 B", "1 KiB", "1.5 KiB", "64 MiB", "1 GiB"]


# --- bus bandwidth and buffer sizes (nccl-tests' PERFORMANCE.md) -----------

@pytest.mark.parametrize("world", [1, 2, 4, 8])
def test_bus_factors(world):
    n = world
    assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    assert bus_factor(graph_op("all_reduce"), n) == bus_factor("all_reduce", n)
    for op in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"):
        assert bus_factor(op, n) == pytest.approx((n - 1) / n)
        assert bus_factor(graph_op(op), n) == bus_factor(op, n)
    assert bus_factor("broadcast", n) == 1.0


def test_bandwidth_and_unknown_op():
    algbw, busbw = bandwidth("all_reduce", 10**9, 1e6, 4)  # 1 GB in 1 s
    assert algbw == pytest.approx(1.0) and busbw == pytest.approx(1.5)
    assert bandwidth("broadcast", 100, 0.0, 2) == (0.0, 0.0)
    with pytest.raises(ValueError, match="unknown op"):
        bus_factor("gather", 2)


def test_element_count_is_a_multiple_of_the_world():
    assert element_count("all_reduce", 8, 4, 1) == 2
    assert element_count("all_reduce", 8, 4, 4) == 4  # at least one element per rank
    assert element_count("all_gather_into_tensor", 1000, 2, 3) == 498
    for op in OPS:
        for world in (1, 3, 8):
            for size in (8, 100, 4096, MiB + 3):
                n = element_count(op, size, 4, world)
                assert n % world == 0 and n >= world


def test_auto_iters_and_graph_rows():
    assert auto_iters(8) == 200 and auto_iters(16 * MiB) == 128 and auto_iters(GiB) == 10
    assert graph_rows_wanted([8, KiB, 8 * MiB], 100, 4 * MiB) == [8, KiB]
    assert graph_rows_wanted([8, KiB], 0, 4 * MiB) == []


# --- exact check data -------------------------------------------------------

@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("world", [1, 2, 3, 4, 8, 16])
def test_pattern_sums_stay_exact(name, world):
    dtype = DTYPES[name]
    p = pattern_for(dtype, world)
    assert p.k >= 2
    assert world * (p.k - 1) + p.offsets_sum() <= EXACT_LIMIT[dtype]
    # Every value up to the largest sum converts to the dtype and back exactly.
    top = world * (p.k - 1) + p.offsets_sum()
    vals = torch.arange(0, top + 1, dtype=torch.int64)
    assert torch.equal(vals.to(dtype).to(torch.int64), vals)


def test_pattern_refuses_what_cannot_be_exact():
    with pytest.raises(ValueError, match="float32"):
        pattern_for(torch.bfloat16, 1000)


# --- the checks, run over gloo ---------------------------------------------

def _gloo_worker(rank, world, port, q):
    import torch.distributed as dist

    from nccl_core_backend.bench.collectives import Case

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    good, broken = {}, {}
    for name in ("float32", "bfloat16", "int8"):
        dtype = DTYPES[name]
        pat = pattern_for(dtype, world)
        for op in OPS:
            for size in (8, 4096 + 3):
                good[f"{name} {op} {size}"] = Case(op, size, world, rank, "cpu", dtype).check(None, pat, 5)
    pat = pattern_for(torch.float32, world)
    for op in OPS:  # a call that does nothing
        c = Case(op, 4096, world, rank, "cpu")
        c.call = lambda g: None
        broken[op] = c.check(None, pat, 3)
    c = Case("all_reduce", 4096, world, rank, "cpu")  # one element off by one
    real = c.call

    def off_by_one(g, c=c, real=real):
        real(g)
        c.inp[17] += 1

    c.call = off_by_one
    broken["all_reduce one element"] = c.check(None, pat, 3)
    q.put((rank, good, broken))
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
def test_checks_pass_on_correct_collectives_and_fail_on_broken_ones(world):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + (os.getpid() % 2000) + world
    procs = [ctx.Process(target=_gloo_worker, args=(r, world, port, q)) for r in range(world)]
    for p in procs:
        p.start()
    outs = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    for rank, good, broken in outs:
        assert all(good.values()), {k: v for k, v in good.items() if not v}
        # A broadcast that does nothing leaves the root's data right: the
        # other ranks catch it, and the bench ANDs every rank's verdict.
        expect_caught = [op for op in broken if not (op == "broadcast" and rank == 0)]
        assert not any(broken[op] for op in expect_caught), broken
    assert not all(b["broadcast"] for _, _, b in outs)


# --- workload tolerances -----------------------------------------------------

def test_activations_close_separates_order_from_missing_shards():
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(16, 512, generator=g) * 7
    noise = ref + 0.02 * ref.abs().mean() * torch.randn(16, 512, generator=g)
    assert activations_close(noise.bfloat16(), ref.bfloat16())[0]
    ok, detail = activations_close((ref * 0.5).bfloat16(), ref.bfloat16())
    assert not ok and detail["rel_l2"] > 0.4
    bad = ref.clone()
    bad[3, 100] += 10 * ref.pow(2).mean().sqrt()  # one element far off
    assert not activations_close(bad, ref)[0]
    assert not activations_close(torch.full_like(ref, float("nan")), ref)[0]


def test_grads_close():
    g = torch.Generator().manual_seed(1)
    b = torch.randn(1000, generator=g)
    assert grads_close(b * (1 + 1e-6), b)[0]
    assert grads_close(torch.zeros(4), torch.zeros(4)) == (True, 0.0)
    assert not grads_close(b * 0.75, b)[0]  # one of four ranks missing
    c = b.clone()
    c[5] += 0.01 * b.abs().max()
    assert not grads_close(c, b)[0]


# --- timing helpers ------------------------------------------------------------

def test_interleaved_alternates_order_and_splits_iterations(monkeypatch):
    log = []
    monkeypatch.setattr(timing, "time_calls", lambda fn, n, pool: (log.append((fn(), n)), [1.0] * n)[1])
    syncs = []
    out = timing.interleaved({"a": lambda: "a", "b": lambda: "b"}, iters=10, warmup=0, rounds=3,
                             sync=lambda: syncs.append(1), pool=None)
    assert [name for name, _ in log] == ["a", "b", "b", "a", "a", "b"]
    assert sum(n for name, n in log if name == "a") == 10 and len(out["a"]) == 10
    assert len(syncs) == 6


def test_summary():
    s = timing.summary([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s["us"] == 3.0 and s["p10_us"] == 1.0 and s["p90_us"] == 5.0 and s["samples"] == 5


# --- tables, JSON and plot -----------------------------------------------------

def _timing(us, busbw):
    return {"us": us, "p10_us": us * 0.9, "p90_us": us * 1.1, "samples": 200, "algbw": busbw,
            "busbw": busbw}


def fixture_result() -> dict:
    rows = []
    for op in OPS:
        for size in (8, 64 * KiB, 64 * MiB):
            rows.append({"op": op, "bytes": size, "dtype": "float32", "iters": 200,
                         "nccl_core": _timing(10.0 + size / 1e6, 1.5), "nccl": _timing(20.0 + size / 1e6, 1.0),
                         "ratio": (10.0 + size / 1e6) / (20.0 + size / 1e6),
                         "path": "fast" if size <= 256 * KiB else "nccl",
                         "correct": {"nccl_core": True, "nccl": True}})
    rows.append({"op": graph_op("all_reduce"), "count": 100, "bytes": KiB, "dtype": "float32", "iters": 10,
                 "nccl_core": _timing(6.1, 0.3), "nccl": _timing(22.0, 0.1), "ratio": 6.1 / 22.0,
                 "correct": {"nccl_core": False, "nccl": True}})
    work = [{"workload": "tp_decode", "label": "tokens=1", "config": {"tokens": 1},
             "nccl_core": _timing(4000.0, 0), "nccl": _timing(5000.0, 0), "ratio": 0.8,
             "baseline": _timing(3000.0, 0), "comm_us": {"nccl_core": 1000.0, "nccl": 2000.0},
             "comm_ratio": 0.5, "correct": {"nccl_core": True, "nccl": True}, "check": {}},
            {"workload": "fsdp2", "label": "fully_shard", "config": {},
             "nccl_core": _timing(50000.0, 0), "nccl": _timing(51000.0, 0), "ratio": 0.98,
             "correct": {"nccl_core": True}, "check": {}}]
    meta = {"world": 2, "gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "nccl": "2.28.9",
            "dtype": "float32"}
    return {"meta": meta, "collectives": rows, "workloads": work}


def test_tables():
    r = fixture_result()
    text = report.render(r)
    lines = text.splitlines()
    assert "world=2" in lines[0] and "below 1.00" in lines[1]
    assert "| all_reduce | 8 B | 10.0 | 20.0 | 0.50 | fast | 1.50 | 1.00 | yes |" in lines
    assert "| all_reduce, graph of 100 | 1 KiB | 6.10 | 22.0 | 0.28 | - | 0.30 | 0.10 | WRONG: nccl_core |" in lines
    assert "| tp_decode | tokens=1 | 4.000 | 5.000 | 0.80 | 1000.0 | 2000.0 | 0.50 | yes |" in lines
    assert "| fsdp2 | fully_shard | 50.000 | 51.000 | 0.98 | - | - | - | yes |" in lines
    assert lines[-1] == "WRONG RESULTS: all_reduce, graph of 100 1 KiB: WRONG: nccl_core"
    # every table line has the header's number of cells
    for table in (report.collectives_table(r["collectives"]), report.workloads_table(r["workloads"])):
        cells = {t.count("|") for t in table.splitlines()}
        assert len(cells) == 1


def test_json_round_trip(tmp_path):
    path = tmp_path / "r.json"
    report.write_json(str(path), fixture_result())
    assert report.load_json(str(path)) == json.loads(json.dumps(fixture_result()))
    (tmp_path / "bad.json").write_text("{\"rows\": []}")
    with pytest.raises(ValueError, match="not a results file"):
        report.load_json(str(tmp_path / "bad.json"))
    (tmp_path / "junk.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        report.load_json(str(tmp_path / "junk.json"))


@pytest.mark.skipif(not have_matplotlib(), reason="matplotlib is not installed (pip install matplotlib)")
def test_plot_from_a_results_file(tmp_path):
    src, out = tmp_path / "r.json", tmp_path / "out.png"
    report.write_json(str(src), fixture_result())
    p = subprocess.run([sys.executable, "-m", "nccl_core_backend.bench.plot", str(src), str(out)],
                       cwd=ROOT, capture_output=True, text=True, env=_env())
    assert p.returncode == 0, p.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_plot_command_errors(tmp_path):
    p = subprocess.run([sys.executable, "-m", "nccl_core_backend.bench.plot", str(tmp_path / "none.json"),
                        str(tmp_path / "o.png")], cwd=ROOT, capture_output=True, text=True, env=_env())
    assert p.returncode == 2
    assert ("matplotlib is not installed" in p.stderr) if not have_matplotlib() else ("none.json" in p.stderr)


# --- progress bar ----------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_without_a_terminal_prints_plain_lines():
    s = io.StringIO()
    bar = Progress(3, stream=s)
    for label in ("a", "b", "c"):
        bar.step(label)
    bar.close()
    assert s.getvalue() == "[1/3] a\n[2/3] b\n[3/3] c\n"


def test_progress_on_a_terminal_redraws_one_line():
    s = _Tty()
    bar = Progress(2, stream=s, width=4)
    bar.step("first")
    bar.note("a message")
    bar.step("second")
    out = s.getvalue()
    assert out.startswith("\r[##..] 1/2 eta ") and "a message\n" in out
    assert "\r[####] 2/2 eta 00:00 second" in out and out.endswith("\n")


def test_progress_off_on_other_ranks():
    s = _Tty()
    bar = Progress(2, enabled=False, stream=s)
    bar.step("x")
    bar.note("y")
    bar.close()
    assert s.getvalue() == ""


# --- arguments and launch ------------------------------------------------------

def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                            "MASTER_ADDR", "MASTER_PORT")}
    # The repo first, then what the caller's path held (another torch, staged).
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env.update(TORCH_DEVICE_BACKEND_AUTOLOAD="0", PYTHONPATH=path, **extra)
    return env


def test_defaults():
    a = cli.parse_args([])
    assert a.ops == list(OPS) and a.sizes == parse_sizes("8B-1GiB") and a.dtype == "float32"
    assert a.graph == 0 and a.workloads is None and a.iters is None and a.bucket_mb == [25.0]
    assert a.tokens == [1, 4, 16] and a.torch_dtype == torch.float32 and a.memory == "plain"
    assert cli.parse_args(["--memory", "nccl"]).memory == "nccl"
    t = cli.parse_args(["--tooling"])
    assert t.tooling and t.sizes == [4 * 1024, 1 << 20] and not a.tooling
    assert a.rounds == 4 and t.rounds == 11
    assert cli.parse_args(["--tooling", "--sizes", "8B"]).sizes == [8]
    with pytest.raises(SystemExit):
        cli.parse_args(["--tooling", "--plot", "x.png"])


def test_options():
    a = cli.parse_args(["--ops", "broadcast,all_reduce,broadcast", "--sizes", "1KiB-4KiB", "--graph",
                        "--dtype", "bfloat16", "--workloads", "tp,ddp", "--bucket-mb", "25,50.5",
                        "--tokens", "2,8", "--iters", "7"])
    assert a.ops == ["broadcast", "all_reduce"] and a.sizes == [KiB, 2 * KiB, 4 * KiB]
    assert a.graph == 100 and a.torch_dtype == torch.bfloat16 and a.workloads == ["tp", "ddp"]
    assert a.bucket_mb == [25.0, 50.5] and a.tokens == [2, 8] and a.iters == 7
    assert cli.parse_args(["--graph", "8", "--workloads"]).workloads == ["tp", "ddp", "fsdp"]


def test_ops_accept_torch_names():
    a = cli.parse_args(["--ops", "all_gather,reduce_scatter,all_to_all,all_gather_into_tensor"])
    assert a.ops == ["all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"]


@pytest.mark.parametrize("argv,words", [
    (["--ops", "all_reduce,gather"], "unknown op 'gather'"),
    (["--sizes", "8B-1Q"], "unknown unit"),
    (["--sizes", "1GiB-8B"], "start is larger"),
    (["--iters", "0"], "at least 1"),
    (["--warmup", "-1"], "must not be negative"),
    (["--graph", "x"], "not a whole number"),
    (["--dtype", "float8"], "invalid choice"),
    (["--memory", "host"], "invalid choice"),
    (["--workloads", "tp,moe"], "unknown workload 'moe'"),
    (["--bucket-mb", "25,0"], "must be above 0"),
    (["--tokens", "1,,4"], "not a whole number"),
    (["--model-dim", "1000", "--model-heads", "16"], "multiple of --model-heads"),
    (["--footprint", "--tooling"], "separate runs"),
    (["--footprint", "--workloads"], "separate runs"),
    (["--footprint", "--plot", "x.png"], "--footprint's rows are a table"),
    (["--footprint-mib", "0"], "at least 1"),
    (["--high-priority", "gloo"], "unknown backend 'gloo'"),
])
def test_argument_errors(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse_args(argv)
    assert e.value.code == 2
    assert words in capsys.readouterr().err


def test_plot_without_matplotlib_fails_up_front(monkeypatch, capsys):
    import nccl_core_backend.bench.plot as plot

    monkeypatch.setattr(plot, "have_matplotlib", lambda: False)
    with pytest.raises(SystemExit):
        cli.parse_args(["--plot", "out.png"])
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "python -m nccl_core_backend.bench.plot results.json out.png" in err


def test_launch_checks():
    with pytest.raises(BenchError, match="not started by torchrun .*LOCAL_RANK"):
        check_launch({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "x", "MASTER_PORT": "1"})
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "x", "MASTER_PORT": "1"}
    assert check_launch(env) == 1
    with pytest.raises(BenchError, match="LOCAL_RANK='a'"):
        check_launch(dict(env, LOCAL_RANK="a"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_no_cuda_is_a_clear_error():
    with pytest.raises(BenchError, match="no CUDA GPU visible"):
        check_cuda()


def test_command_outside_torchrun():
    p = subprocess.run([sys.executable, "-m", "nccl_core_backend.bench", "--sizes", "8B-1KiB"], cwd=ROOT,
                       capture_output=True, text=True, env=_env())
    assert p.returncode == 2
    assert "not started by torchrun" in p.stderr and "torchrun --nproc-per-node=N -m" in p.stderr


def test_command_bad_size_before_anything_starts():
    p = subprocess.run([sys.executable, "-m", "nccl_core_backend.bench", "--sizes", "12parsecs"], cwd=ROOT,
                       capture_output=True, text=True, env=_env(RANK="0"))
    assert p.returncode == 2 and "bad size '12parsecs'" in p.stderr


def test_footprint_options_and_table():
    a = cli.parse_args(["--footprint"])
    assert a.footprint and a.footprint_mib == 256 and a.footprint_rounds == 6 and a.steps == 12
    assert cli.parse_args([]).steps == 30
    b = cli.parse_args(["--footprint", "--footprint-mib", "4", "--footprint-rounds", "2", "--steps", "3"])
    assert (b.footprint_mib, b.footprint_rounds, b.steps) == (4, 2, 3)
    from nccl_core_backend.bench import footprint, report

    mem = {"nccl": ({"peak_mib": 896.0, "held_mib": 0.0}, True),
           "nccl_core": ({"peak_mib": 5376.0, "held_mib": 5376.0}, True)}
    row = footprint._row("drop loop", "6 x 256 MiB", mem, {"nccl": True, "nccl_core": False})
    assert row["peak_ratio"] == 6.0
    result = {"meta": {"world": 2}, "footprint": [row]}
    text = report.render(result)
    assert "| drop loop | 6 x 256 MiB | 896 | 0 | 5376 | 5376 | 6.00 | WRONG nccl_core |" in text
    assert report.wrong_results(result) == [f"footprint drop loop: {report.correct_cell(row['correct'])}"]


def test_graph_rows_of_every_op_are_named_and_labelled():
    from nccl_core_backend.bench.report import op_label

    assert graph_op("all_reduce") == "all_reduce_graph"
    for op in OPS:
        assert base_op(graph_op(op)) == op and base_op(op) == op
        assert op_label({"op": graph_op(op), "count": 7}) == f"{op}, graph of 7"
        assert op_label({"op": op}) == op

