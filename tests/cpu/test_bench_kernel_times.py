"""``--kernel-times`` of the bench: the GPU time per call of what each backend
ran, from torch.profiler's CUDA rows (nccl_core_backend/bench/kernel_times.py).
The profiler's part runs on GPUs (tests/gpu/test_bench.py); here, the
arguments, the arithmetic and the table."""

from __future__ import annotations

import pytest

from nccl_core_backend.bench import cli, report
from nccl_core_backend.bench.kernel_times import summarize


def test_argument():
    assert cli.parse_args([]).kernel_times is False
    assert cli.parse_args(["--kernel-times", "--graph"]).kernel_times is True


@pytest.mark.parametrize("other", ["--workloads", "--tooling", "--footprint"])
def test_only_with_the_collectives_sweep(capsys, other):
    with pytest.raises(SystemExit):
        cli.parse_args(["--kernel-times", other])
    assert "--kernel-times adds a table to the collectives sweep" in capsys.readouterr().err


def test_summary_is_per_call_by_name():
    events = [("fast_kernel", 6.0), ("memset", 1.0), ("fast_kernel", 4.0), ("memset", 1.5)]
    s = summarize(events, 2)
    assert s == {"gpu_us": 6.25, "kernels": {"fast_kernel": 5.0, "memset": 1.25}}
    assert summarize([], 3) == {"gpu_us": 0.0, "kernels": {}}
    with pytest.raises(ValueError, match="calls must be positive"):
        summarize(events, 0)


def _row(op, nbytes, times, count=None):
    t = {"us": 12.0, "p10_us": 11.0, "p90_us": 13.0, "samples": 10, "algbw": 1.0, "busbw": 1.0}
    row = {"op": op, "bytes": nbytes, "dtype": "float32", "iters": 10, "nccl_core": t,
           "nccl": dict(t, us=8.5), "ratio": 1.41, "correct": {"nccl_core": True, "nccl": True}}
    if count:
        row["count"] = count
    if times:
        row["kernel_times"] = times
    return row


def test_table_names_what_ran_longest_first_and_cuts_long_names():
    long_name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    rows = [_row("all_reduce", 1024, {
                "nccl_core": {"gpu_us": 5.5, "kernels": {"memset": 0.5, "reduce_kernel": 5.0}},
                "nccl": {"gpu_us": 6.0, "kernels": {long_name: 6.0}}}),
            _row("all_reduce", 1 << 30, None)]
    table = report.kernel_times_table(rows, width=20).splitlines()
    assert table[0] == "| op | size | kind | sample µs | GPU µs | what ran (GPU µs per call) |"
    assert table[2] == "| all_reduce | 1 KiB | nccl_core | 12.0 | 5.50 | reduce_kernel 5.00; memset 0.50 |"
    assert table[3] == f"| all_reduce | 1 KiB | nccl | 8.50 | 6.00 | {long_name[:20]} 6.00 |"
    assert len(table) == 4
    assert report.kernel_times_table([_row("broadcast", 8, None)]) == ""


def test_report_shows_the_table():
    result = {"meta": {"world": 2}, "collectives": [_row("all_reduce", 1024, {
        "nccl_core": {"gpu_us": 5.5, "kernels": {"reduce_kernel": 5.5}},
        "nccl": {"gpu_us": 6.0, "kernels": {"nccl_kernel": 6.0}}})]}
    text = report.render(result)
    assert "GPU µs per call of what each kind ran (--kernel-times" in text
    assert "| all_reduce | 1 KiB | nccl_core | 12.0 | 5.50 | reduce_kernel 5.50 |" in text
