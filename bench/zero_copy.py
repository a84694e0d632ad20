"""The zero-copy all_reduce on NCCL memory against backend nccl (issue 6).

    torchrun --nproc-per-node=4 bench/zero_copy.py [--ctas 16,32,64] [--out results.json]

One job, float32 SUM all_reduce through dist.*, 512 KiB .. 256 MiB, GPU µs per
call in a back-to-back loop, best of three rounds that alternate the paths:

  nccl plain        backend nccl, torch.empty tensor (the issue's baseline)
  core nccl path    nccl_core on NCCL memory with zero-copy off: NCCL's
                    kernels (symmetric ones up to symmetric_max_bytes)
  core zc CTAS      nccl_core on NCCL memory, zero-copy from 512 KiB, its
                    data kernels on CTAS blocks
  core plain mN     nccl_core on plain memory with NCCL's min_ctas = max_ctas = N: does
                    a wider ring beat NCCL's own choice of channels?

Each path's result is checked once per size before it is timed.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.distributed as dist

from sidebyside import gpu_seconds, init_side_by_side

import nccl_core_backend as nc

SIZES = [512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20,
         128 << 20, 256 << 20]


def checked(name: str, x: torch.Tensor, call, rank: int, world: int) -> bool:
    """One call on fresh data: every element must be the sum of the ranks' values."""
    x.copy_(torch.arange(x.numel(), device=x.device, dtype=torch.float32).remainder_(97)
            + rank)
    call()
    torch.cuda.synchronize()
    want = (torch.arange(x.numel(), device=x.device, dtype=torch.float64).remainder_(97)
            * world + world * (world - 1) / 2)
    ok = bool(torch.equal(x.double(), want))
    if not ok:
        print(f"rank {rank}: WRONG {name} at {x.numel() * 4} bytes", flush=True)
    return ok


def group(**settings):
    opts = nc.Options()
    for k, v in settings.items():
        setattr(opts, k, v)
    return dist.new_group(backend="nccl_core", pg_options=opts)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ctas", default="16,32,64")
    p.add_argument("--min-ctas", default="32")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    device, rank, world, nccl_group = init_side_by_side()
    groups = {"core nccl path": (group(zero_copy_min_bytes=0), True)}
    for c in [int(v) for v in args.ctas.split(",") if v]:
        groups[f"core zc {c}"] = (group(zero_copy_min_bytes=512 << 10, zero_copy_ctas=c), True)
    for m in [int(v) for v in args.min_ctas.split(",") if v]:
        # NCCL refuses a min_ctas without a max_ctas.
        groups[f"core plain m{m}"] = (group(zero_copy_min_bytes=0, min_ctas=m, max_ctas=m), False)
    rows, ok = [], True
    for size in SIZES:
        n = size // 4
        plain = torch.empty(n, device=device)
        paths = {"nccl plain": (plain, lambda x=plain: dist.all_reduce(x, group=nccl_group))}
        for name, (g, nccl_memory) in groups.items():
            x = nc.torch.empty(n, device=device) if nccl_memory else torch.empty(n, device=device)
            paths[name] = (x, lambda x=x, g=g: dist.all_reduce(x, group=g))
        for name, (x, call) in paths.items():
            ok &= checked(name, x, call, rank, world)
        iters = int(max(10, min(300, 1e9 / size)))
        row = {"bytes": size}
        for _ in range(3):
            for name, (x, call) in paths.items():
                us = gpu_seconds(call, iters, warmup=3, barrier=True) * 1e6
                row[name] = min(us, row.get(name, us))
        rows.append(row)
        if rank == 0:
            print(json.dumps(row), flush=True)
        del plain, paths
        torch.cuda.synchronize()
    if rank == 0:
        names = [k for k in rows[0] if k != "bytes"]
        print(f"world={world} torch={torch.__version__} nccl={nc.nccl_version()}")
        print("GPU µs per float32 SUM all_reduce (ratio: nccl plain / path, higher is faster)")
        print("| bytes | " + " | ".join(names) + " |")
        print("|---:|" + "---:|" * len(names))
        for r in rows:
            base = r["nccl plain"]
            cells = [f"{r[k]:.1f}" + ("" if k == "nccl plain" else f" ({base / r[k]:.2f})")
                     for k in names]
            print(f"| {r['bytes']} | " + " | ".join(cells) + " |")
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"world": world, "rows": rows}, f, indent=1)
    flags = [None] * world
    dist.all_gather_object(flags, ok)
    for name, (g, _) in groups.items():
        dist.destroy_process_group(g)
    dist.destroy_process_group()
    if not all(flags):
        raise SystemExit("wrong results")


if __name__ == "__main__":
    main()
