"""What torch's debugging switches cost on nccl_core, beside backend nccl.

    torchrun --nproc-per-node=N bench/tooling_cost.py [--out results.json]

One group per setting over the same ranks: nccl_core by default, with
enable_timing, with nan_check, with a completion hook; nccl by default, with
TORCH_NCCL_ENABLE_TIMING=1 and with TORCH_NCCL_NAN_CHECK=1 (each set while
that group is created, when backend nccl reads it).  For each, microseconds
per all_reduce (float32 SUM) at 4 KiB and 4 MiB: a loop of calls timed until
the GPU finished them, median of rounds, rounds interleaved.  The ratio is
against nccl_core's default.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

import nccl_core_backend as nc


def per_call_us(group, t, iters):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t, group=group)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=300)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default="")
    args = p.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    # No device_id: with a bound device, torch 2.11's new_group(backend="nccl")
    # tries to split from the default group's CUDA backend, which is ours.
    dist.init_process_group("cpu:gloo,cuda:nccl_core")
    ranks = list(range(dist.get_world_size()))

    def core(**fields):
        o = nc.Options()
        for k, v in fields.items():
            setattr(o, k, v)
        return dist.new_group(ranks, backend="nccl_core", pg_options=o)

    groups = {
        "nccl_core": core(),
        "nccl_core enable_timing": core(enable_timing=True),
        "nccl_core nan_check": core(nan_check=True),
        "nccl_core completion hook": core(),
        "nccl": dist.new_group(ranks, backend="nccl"),
    }
    # Both variables are read when backend nccl builds a group.
    os.environ["TORCH_NCCL_ENABLE_TIMING"] = "1"
    groups["nccl timing"] = dist.new_group(ranks, backend="nccl")
    del os.environ["TORCH_NCCL_ENABLE_TIMING"]
    os.environ["TORCH_NCCL_NAN_CHECK"] = "1"
    groups["nccl nan check"] = dist.new_group(ranks, backend="nccl")
    del os.environ["TORCH_NCCL_NAN_CHECK"]
    groups["nccl_core completion hook"]._register_on_completion_hook(lambda info: None)
    sizes = {"4 KiB": 1024, "4 MiB": 1 << 20}
    results = {name: {s: [] for s in sizes} for name in groups}
    tensors = {s: torch.ones(n, device=device) for s, n in sizes.items()}
    for g in groups.values():  # connect
        dist.all_reduce(tensors["4 KiB"], group=g)
    for _ in range(args.rounds):
        for name, g in groups.items():
            for s, t in tensors.items():
                results[name][s].append(per_call_us(g, t, args.iters))
    table = {name: {s: statistics.median(v) for s, v in per.items()} for name, per in results.items()}
    if dist.get_rank() == 0:
        base = table["nccl_core"]
        print(f"{'setting':28s} " + " ".join(f"{s:>14s}" for s in sizes))
        for name, per in table.items():
            print(f"{name:28s} " + " ".join(
                f"{per[s]:8.2f} ({per[s] / base[s]:4.2f})" for s in sizes))
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"world": len(ranks), "us_per_call": table}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
