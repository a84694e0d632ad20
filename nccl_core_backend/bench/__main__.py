"""``torchrun --nproc-per-node=N -m nccl_core_backend.bench [options]``

Times nccl_core against PyTorch's backend nccl over the same ranks in one
job and prints a table per op and size (or per workload with
``--workloads``); ``--json`` and ``--plot`` write the results.  ``--help``
lists the options.  Exit status: 0 when every check passed on every rank,
1 when a result was wrong, 2 for a bad invocation.
"""

from __future__ import annotations

import datetime
import socket
import sys
import traceback

from nccl_core_backend.bench.cli import parse_args
from nccl_core_backend.bench.job import BenchError, check_cuda, check_launch, finish


def _meta(job, args) -> dict:
    import torch

    import nccl_core_backend as nc

    return {"world": job.world, "gpu": torch.cuda.get_device_name(job.device),
            "host": socket.gethostname(), "torch": torch.__version__,
            "nccl": ".".join(map(str, nc.nccl_version())), "dtype": args.dtype,
            "memory": args.memory,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "argv": sys.argv[1:],
            "mode": ("workloads" if args.workloads else "tooling" if args.tooling
                     else "footprint" if args.footprint else "collectives"),
            "warmup": args.warmup, "rounds": args.rounds,
            "high_priority_streams": list(job.high_priority),
            "ratio": "nccl_core / nccl time (lower: nccl_core faster)"}


def _anchor(job, args, meta: dict):
    """The anchor of --anchor, or None; meta["anchor"] says what ran or why not."""
    if not args.anchor:
        return None
    from nccl_core_backend.bench import anchor

    why = anchor.why_not(args.torch_dtype, job.world)
    meta["anchor"] = {"name": args.anchor, "ran": why is None, "why": why,
                      "notes": anchor.notes(job.world, args.anchor_max_bytes) if why is None else []}
    return None if why else anchor.Anchor(job, args.torch_dtype, args.anchor_max_bytes)


def _check_against_world(args, world: int) -> None:
    """Arguments whose validity depends on the world size."""
    from nccl_core_backend.bench.data import pattern_for

    if args.workloads and "tp" in args.workloads and (args.tp_hidden % world or args.tp_ffn % world):
        raise BenchError(f"--tp-hidden ({args.tp_hidden}) and --tp-ffn ({args.tp_ffn}) must be "
                         f"multiples of the world size ({world})")
    if not args.workloads and not args.tooling and not args.footprint:
        try:
            pattern_for(args.torch_dtype, world)
        except ValueError as e:
            raise BenchError(str(e)) from None


def _steps(args) -> int:
    from nccl_core_backend.bench.sweep import graph_rows_wanted

    if args.footprint:
        from nccl_core_backend.bench.footprint import PROGRAMS

        return len(PROGRAMS)
    if args.tooling:
        from nccl_core_backend.bench.tooling import SETTINGS

        return len(SETTINGS) * len(args.sizes)
    if args.workloads:
        return (len(args.tokens) * ("tp" in args.workloads)
                + len(args.bucket_mb) * ("ddp" in args.workloads) + ("fsdp" in args.workloads))
    return len(args.ops) * (len(args.sizes) + len(graph_rows_wanted(args.sizes, args.graph,
                                                                    args.graph_max_bytes)))


def _run(job, args, progress) -> dict:
    result = {"meta": _meta(job, args), "collectives": [], "workloads": [], "tooling": [],
              "footprint": []}
    if args.footprint:
        from nccl_core_backend.bench.footprint import run_footprint

        model = dict(dim=args.model_dim, layers=args.model_layers, heads=args.model_heads,
                     batch=args.batch, seq=args.seq)
        result["footprint"] = run_footprint(job, args.footprint_mib, args.footprint_rounds, model,
                                            args.steps, progress)
        return result
    if args.tooling:
        from nccl_core_backend.bench.tooling import DEFAULT_ITERS, run_tooling

        result["tooling"], result["meta"]["tooling_left_out"] = run_tooling(
            job, args.sizes, args.iters or DEFAULT_ITERS, args.warmup, args.rounds, progress)
        return result
    if not args.workloads:
        from nccl_core_backend.bench.sweep import run_sweep

        result["collectives"] = run_sweep(job, args.ops, args.sizes, args.torch_dtype, args.iters,
                                          args.warmup, args.rounds, args.graph,
                                          args.graph_max_bytes, progress, args.memory,
                                          _anchor(job, args, result["meta"]), args.host_phases,
                                          args.kernel_times)
        return result
    from nccl_core_backend.bench import training
    from nccl_core_backend.bench.tp_decode import run_tp_decode

    w = result["workloads"]
    model = dict(dim=args.model_dim, layers=args.model_layers, heads=args.model_heads,
                 batch=args.batch, seq=args.seq, steps=args.steps, warmup=args.warmup,
                 rounds=args.rounds, progress=progress)
    if "tp" in args.workloads:
        w += run_tp_decode(job, args.tokens, args.tp_layers, args.tp_hidden, args.tp_ffn,
                           args.steps, args.warmup, args.rounds, progress)
    if "ddp" in args.workloads:
        w += training.run_ddp(job, args.bucket_mb, **model)
    if "fsdp" in args.workloads:
        w += training.run_fsdp(job, **model)
    return result


def _combine_checks(job, result: dict) -> None:
    """Every row's verdict becomes the AND over all ranks."""
    rows = result["collectives"] + result["workloads"] + result["tooling"] + result["footprint"]
    keys = [(i, name) for i, r in enumerate(rows) for name in sorted(r["correct"])]
    flags = job.all_ranks_true([rows[i]["correct"][name] for i, name in keys])
    for (i, name), ok in zip(keys, flags):
        rows[i]["correct"][name] = ok


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.paths:
        from nccl_core_backend import paths

        print(paths.render())
        return 0
    try:
        check_launch()
        device = check_cuda()
    except BenchError as e:
        print(f"nccl_core_backend.bench: error: {e}", file=sys.stderr)
        return 2
    from nccl_core_backend.bench.job import start_job
    from nccl_core_backend.bench.progress import Progress
    from nccl_core_backend.bench.report import render, wrong_results, write_json

    job = start_job(device, args.high_priority)
    try:
        _check_against_world(args, job.world)
    except BenchError as e:
        if job.rank == 0:
            print(f"nccl_core_backend.bench: error: {e}", file=sys.stderr)
        # Every rank refuses alike; the barrier keeps rank 0 (the store's host)
        # from leaving while a peer still connects the groups start_job made.
        job.sync()
        finish(2)
    progress = Progress(_steps(args), enabled=job.rank == 0)
    try:
        result = _run(job, args, progress)
        progress.close()
        _combine_checks(job, result)
    except Exception:  # noqa: BLE001 - report, then end without the hanging teardown
        progress.close()
        print(f"rank {job.rank}: the bench failed:\n{traceback.format_exc()}", file=sys.stderr)
        finish(1)
    code = 1 if wrong_results(result) else 0
    if job.rank == 0:
        print(render(result), flush=True)
        try:
            if args.json:
                write_json(args.json, result)
                print(f"wrote {args.json}")
            if args.plot:
                from nccl_core_backend.bench.plot import plot

                plot(result, args.plot)
                print(f"wrote {args.plot}")
        except Exception:  # noqa: BLE001 - the table is printed; say what failed
            print(f"writing the results failed:\n{traceback.format_exc()}", file=sys.stderr)
            code = 1
    job.sync()  # every rank waits for rank 0's files before the job ends
    finish(code)
    return 0  # not reached: finish() ends the process


if __name__ == "__main__":
    sys.exit(main())
