"""all_reduce paths of nccl_core against backend nccl, 512 KiB .. 256 MiB.

    torchrun --nproc-per-node=4 bench/allreduce_paths.py \
        --group "plain m32:memory=plain,min_ctas=32,max_ctas=32" \
        [--group ...] [--out results.json]

One job, float32 SUM all_reduce through dist.*, GPU µs per call in a
back-to-back loop, best of three rounds that alternate the paths.  The
baseline is backend nccl on a torch.empty tensor (the issue's); "core
default" is nccl_core with its defaults on NCCL memory; each --group NAME:
SETTINGS adds a nccl_core group with those Options fields (memory=nccl or
plain picks the tensor's memory, default nccl).  Each path's result is
checked once per size before it is timed.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.distributed as dist

from sidebyside import best_of_rounds, checked_sum, init_side_by_side, report

import nccl_core_backend as nc

SIZES = [512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20,
         128 << 20, 256 << 20]


def group(**settings):
    opts = nc.Options()
    for k, v in settings.items():
        setattr(opts, k, v)
    return dist.new_group(backend="nccl_core", pg_options=opts)


def parse_group(spec: str):
    """NAME:key=value,... -> (name, settings, nccl_memory)."""
    name, _, body = spec.partition(":")
    settings = dict(kv.split("=", 1) for kv in body.split(",") if kv)
    memory = settings.pop("memory", "nccl")
    if memory not in ("nccl", "plain"):
        raise SystemExit(f"--group {name}: memory must be nccl or plain, got {memory}")
    return name, {k: int(v) for k, v in settings.items()}, memory == "nccl"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--group", action="append", default=[])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    device, rank, world, nccl_group = init_side_by_side()
    groups = {"core default": (dist.group.WORLD, True)}
    for spec in args.group:
        name, settings, nccl_memory = parse_group(spec)
        groups[name] = (group(**settings), nccl_memory)
    rows, ok = [], True
    for size in SIZES:
        n = size // 4
        plain = torch.empty(n, device=device)
        paths = {"nccl plain": (plain, lambda x=plain: dist.all_reduce(x, group=nccl_group))}
        for name, (g, nccl_memory) in groups.items():
            x = nc.torch.empty(n, device=device) if nccl_memory else torch.empty(n, device=device)
            paths[name] = (x, lambda x=x, g=g: dist.all_reduce(x, group=g))
        for name, (x, call) in paths.items():
            ok &= checked_sum(name, x, call, rank, world)
        iters = int(max(10, min(300, 1e9 / size)))
        row = {"bytes": size}
        row.update(best_of_rounds({k: call for k, (_, call) in paths.items()}, iters))
        rows.append(row)
        if rank == 0:
            print(json.dumps(row), flush=True)
        del plain, paths
        torch.cuda.synchronize()
    all_ok = report(rows, "GPU µs per float32 SUM all_reduce", args.out, ok)
    for name, (g, _) in groups.items():
        if g is not dist.group.WORLD:
            dist.destroy_process_group(g)
    dist.destroy_process_group()
    if not all_ok:
        raise SystemExit("wrong results")


if __name__ == "__main__":
    main()
