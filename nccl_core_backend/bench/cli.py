"""Command-line arguments of ``python -m nccl_core_backend.bench``.

Everything the user can get wrong is checked here, before any process group
exists: a bad value ends every rank at once with argparse's message instead
of leaving the others waiting in a collective.
"""

from __future__ import annotations

import argparse

from nccl_core_backend.bench.collectives import OPS
from nccl_core_backend.bench.data import DTYPES
from nccl_core_backend.bench.job import CORE, NCCL
from nccl_core_backend.bench.sizes import parse_size, parse_sizes

DEFAULT_SIZES = "8B-1GiB"
TOOLING_SIZES = "4KiB,1MiB"
WORKLOADS = ("tp", "ddp", "fsdp")
BACKENDS = (CORE, NCCL)

USAGE_EXAMPLES = """\
examples:
  torchrun --nproc-per-node=2 -m nccl_core_backend.bench
  torchrun --nproc-per-node=4 -m nccl_core_backend.bench --ops all_reduce --sizes 8B-64MiB \\
      --graph --json results.json --plot busbw.png
  torchrun --nproc-per-node=4 -m nccl_core_backend.bench --ops all_reduce --sizes 1KiB-16MiB \
      --dtype bfloat16 --graph --anchor symm_mem    # beside torch's SymmetricMemory kernels
  torchrun --nproc-per-node=2 -m nccl_core_backend.bench --workloads --json workloads.json
  torchrun --nproc-per-node=2 -m nccl_core_backend.bench --workloads ddp,fsdp --high-priority nccl_core
  torchrun --nproc-per-node=1 -m nccl_core_backend.bench --tooling    # timing, NaN check, hooks
  torchrun --nproc-per-node=2 -m nccl_core_backend.bench --footprint  # peak and held memory
  python -m nccl_core_backend.bench.plot results.json out.png     # draw later, anywhere
"""


def _int_at_least(text: str, low: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < low:
        raise argparse.ArgumentTypeError(
            f"{text!r} must be at least 1" if low == 1 else f"{text!r} must not be negative")
    return v


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def _count(text: str) -> int:
    return _int_at_least(text, 0)


def _int_list(text: str) -> list[int]:
    return [_positive_int(t.strip()) for t in text.split(",")]


def _mb_list(text: str) -> list[float]:
    out = []
    for t in text.split(","):
        try:
            v = float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{t.strip()!r} is not a number of MiB") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"bucket size {t.strip()!r} must be above 0")
        out.append(v)
    return out


def _choices(text: str, known: tuple, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in known]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(map(repr, bad)) or repr(text)}; known: {', '.join(known)}")
    return list(dict.fromkeys(items))


# torch.distributed's other names for the collectives the bench times (the
# list forms time their tensor forms: the same NCCL call).
OP_ALIASES = {"all_gather": "all_gather_into_tensor", "reduce_scatter": "reduce_scatter_tensor",
              "all_to_all": "all_to_all_single"}


def _ops(text: str) -> list[str]:
    names = [OP_ALIASES.get(t.strip(), t.strip()) for t in text.split(",")]
    return _choices(",".join(names), OPS, "op")


def _sizes(text: str) -> list[int]:
    try:
        return parse_sizes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node=N -m nccl_core_backend.bench",
        description="nccl_core against PyTorch's backend nccl, side by side on the same GPUs: "
                    "time per call, ratio nccl_core / nccl (lower is faster), bus bandwidth, "
                    "every result checked.",
        epilog=USAGE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", type=_ops, default=list(OPS),
                   help="comma-separated collectives (default: all of " + ", ".join(OPS) +
                        "; all_gather, reduce_scatter and all_to_all name their tensor forms)")
    p.add_argument("--sizes", type=_sizes, default=None,
                   help=f"sizes in bytes: a list and/or ranges that double, e.g. 8B-1GiB, "
                        f"1KiB,64KiB-1MiB (default {DEFAULT_SIZES}; {TOOLING_SIZES} with "
                        f"--tooling)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32",
                   help="element type of the collectives (default float32)")
    p.add_argument("--memory", choices=["plain", "nccl"], default="plain",
                   help="buffers from torch.empty (plain, default) or NCCL memory "
                        "(nccl_core_backend.torch.empty), for both backends")
    p.add_argument("--iters", type=_positive_int, default=None,
                   help="timed calls per backend and size (default: 200, fewer from 16 MiB, >= 10)")
    p.add_argument("--warmup", type=_count, default=5, help="untimed calls first (default 5)")
    p.add_argument("--rounds", type=_positive_int, default=None,
                   help="rounds that alternate the backends (default 4; 11 with --tooling, "
                        "whose samples are short)")
    p.add_argument("--graph", type=_positive_int, nargs="?", const=100, default=0, metavar="N",
                   help="also time CUDA-graph replay of N calls (N default 100) of each op "
                        "at each size up to --graph-max-bytes")
    p.add_argument("--graph-max-bytes", type=_size, default=4 << 20, metavar="SIZE",
                   help="largest size of the graph rows (default 4MiB)")
    p.add_argument("--host-phases", action="store_true",
                   help="also record where nccl_core's host time goes in each eager row "
                        "(setup, Work, stream guard, enqueue, epilogue, end event, watchdog, "
                        "wait; the fast path's checks, launch and ordering): a third table. "
                        "Each phase costs a clock read, which this run's ratios carry")
    p.add_argument("--kernel-times", action="store_true",
                   help="also measure, after each row's timed rounds, the GPU time per call of "
                        "what each backend ran (kernels, copies; torch.profiler's CUDA rows, "
                        "50 calls or 5 graph replays): a table beside the samples, which mix "
                        "host dispatch with GPU time (profiled, nccl_core's fast path skips "
                        "the fence that ends an unprofiled plain call)")
    p.add_argument("--paths", action="store_true",
                   help="print which calls nccl_core runs as its own NVLink kernels, by world "
                        "size, operation and size, with the measurement behind each row "
                        "(nccl_core_backend.paths), and exit; needs neither torchrun nor a GPU")
    p.add_argument("--high-priority", type=lambda t: _choices(t, BACKENDS, "backend"), nargs="?",
                   const=list(BACKENDS), default=[], metavar="BACKENDS",
                   help="run the named backends' groups (nccl_core, nccl; bare: both) on "
                        "high-priority CUDA streams, as TORCH_NCCL_HIGH_PRIORITY=1 does: their "
                        "async calls (DDP's buckets, FSDP's gathers) then go ahead of compute. "
                        "A backend whose environment asks already gets it too; the header and "
                        "the JSON say which ran so")
    p.add_argument("--anchor", choices=["symm_mem"], default=None,
                   help="symm_mem: all_reduce rows (and graph rows) also time torch's "
                        "SymmetricMemory one-shot and two-shot kernels on symm_mem.empty "
                        "buffers, beside both backends (float32 and bfloat16)")
    p.add_argument("--anchor-max-bytes", type=_size, default=16 << 20, metavar="SIZE",
                   help="largest all_reduce size of the anchor rows (default 16MiB)")
    p.add_argument("--workloads", type=lambda t: _choices(t, WORKLOADS, "workload"), nargs="?",
                   const=list(WORKLOADS), default=None, metavar="LIST",
                   help="run the workloads instead of the collectives: tp (tensor-parallel "
                        "decode step in a CUDA graph), ddp, fsdp (default all three)")
    p.add_argument("--tooling", action="store_true",
                   help="time all_reduce with torch's debugging switches instead of the "
                        "collectives: default, timing, NaN check, a completion hook, on each "
                        "backend (--sizes, --iters, --warmup, --rounds apply)")
    p.add_argument("--footprint", action="store_true",
                   help="measure memory instead of time: peak and held MiB of a drop-after-"
                        "collective loop and of FSDP2 steps, on each backend")
    p.add_argument("--footprint-mib", type=_positive_int, default=256, metavar="MIB",
                   help="footprint: the loop's tensor size in MiB (default 256)")
    p.add_argument("--footprint-rounds", type=_positive_int, default=6, metavar="N",
                   help="footprint: rounds of the loop (default 6)")
    p.add_argument("--steps", type=_positive_int, default=None,
                   help="timed steps per backend and workload configuration (default 30); "
                        "FSDP2 steps with --footprint (default 12)")
    p.add_argument("--tokens", type=_int_list, default=[1, 4, 16],
                   help="tp: tokens per decode step (default 1,4,16)")
    p.add_argument("--tp-layers", type=_positive_int, default=32, help="tp: layers (default 32)")
    p.add_argument("--tp-hidden", type=_positive_int, default=4096, help="tp: hidden size (default 4096)")
    p.add_argument("--tp-ffn", type=_positive_int, default=11008, help="tp: MLP size (default 11008)")
    p.add_argument("--bucket-mb", type=_mb_list, default=[25.0],
                   help="ddp: gradient bucket sizes in MiB, comma-separated (default 25)")
    p.add_argument("--model-dim", type=_positive_int, default=1024,
                   help="ddp/fsdp: model width (default 1024: ~100M parameters)")
    p.add_argument("--model-layers", type=_positive_int, default=8, help="ddp/fsdp: layers (default 8)")
    p.add_argument("--model-heads", type=_positive_int, default=16, help="ddp/fsdp: heads (default 16)")
    p.add_argument("--batch", type=_positive_int, default=8, help="ddp/fsdp: sequences per rank (default 8)")
    p.add_argument("--seq", type=_positive_int, default=512, help="ddp/fsdp: sequence length (default 512)")
    p.add_argument("--json", metavar="PATH", help="write every result as JSON (rank 0)")
    p.add_argument("--plot", metavar="PNG", help="draw the results (needs matplotlib)")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parsed and checked arguments (argparse exits with a message on bad ones)."""
    p = build_parser()
    args = p.parse_args(argv)
    if sum(map(bool, (args.tooling, args.workloads, args.footprint))) > 1:
        p.error("--tooling, --workloads and --footprint are separate runs: pick one")
    other_run = "--tooling" if args.tooling else "--footprint" if args.footprint else \
        "--workloads" if args.workloads else ""
    for flag, on in (("--host-phases", args.host_phases), ("--kernel-times", args.kernel_times)):
        if on and other_run:
            p.error(f"{flag} adds a table to the collectives sweep; {other_run} is a separate run")
    if args.anchor and other_run:
        p.error(f"--anchor adds rows to the collectives sweep; {other_run} is a separate run")
    if args.anchor and "all_reduce" not in args.ops and not args.graph:
        p.error("--anchor times all_reduce: add all_reduce to --ops (or --graph)")
    table_only = "" if other_run == "--workloads" else other_run
    if table_only and args.plot:
        p.error(f"--plot draws collectives and workloads; {table_only}'s rows are a table "
                "(--json keeps them)")
    if args.steps is None:
        args.steps = 12 if args.footprint else 30
    if args.rounds is None:
        args.rounds = 11 if args.tooling else 4
    if args.sizes is None:
        args.sizes = parse_sizes(TOOLING_SIZES if args.tooling else DEFAULT_SIZES)
    if args.model_dim % args.model_heads:
        p.error(f"--model-dim ({args.model_dim}) must be a multiple of --model-heads ({args.model_heads})")
    if args.plot:
        from nccl_core_backend.bench.plot import LATER, have_matplotlib

        if not have_matplotlib():
            p.error("--plot needs matplotlib, which is not installed here. Run with --json "
                    f"results.json instead and draw it on any machine with matplotlib: {LATER}")
    args.torch_dtype = DTYPES[args.dtype]
    return args
