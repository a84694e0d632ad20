"""What registration buys an all_reduce on NCCL memory (the NCCL-memory goal).

    torchrun --nproc-per-node=4 bench/registration.py [--out results.json]

One job, float32 SUM all_reduce (the only case NCCL's symmetric kernels take)
on 8 KiB .. 64 MiB, GPU µs per call in a back-to-back loop, best of three
rounds that alternate the paths:

  nccl plain          backend nccl, torch.empty tensor (the issue's baseline)
  core dist           dist.all_reduce on backend nccl_core, NCCL memory
  raw unregistered    Communicator.allreduce on NCCL memory, nothing registered
  raw buffer          the same after Communicator.register_buffer (local)
  raw window          the same after register_window(CollSymmetric): NCCL's
                      symmetric kernels where it chooses them

Each path's result is checked once before it is timed.  The question it
answers: how far NCCL's own zero-copy and symmetric kernels are from the
issue's ratios (>= 1.3 to 4 MiB, >= 1.1 at 4-64 MiB), before building their
automatic use.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist

from sidebyside import best_of_rounds, checked_sum, init_side_by_side, report

import nccl_core_backend as nc

SIZES = [8 << 10, 32 << 10, 128 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20,
         16 << 20, 32 << 20, 64 << 20]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    device, rank, world, nccl_group = init_side_by_side()
    comm = nc.get_communicator()
    rows, ok = [], True
    for size in SIZES:
        n = size // 4
        plain = torch.empty(n, device=device)
        mem = {k: nc.torch.empty(n, dtype=torch.float32, device=device)
               for k in ("dist", "raw", "buf", "win")}
        handles = [comm.register_buffer(mem["buf"]),
                   comm.register_window(mem["win"], flags=nc.WindowFlag.CollSymmetric)]
        paths = {
            "nccl plain": (plain, lambda: dist.all_reduce(plain, group=nccl_group)),
            "core dist": (mem["dist"], lambda: dist.all_reduce(mem["dist"])),
            "raw unregistered": (mem["raw"], lambda: comm.allreduce(mem["raw"], mem["raw"], nc.SUM)),
            "raw buffer": (mem["buf"], lambda: comm.allreduce(mem["buf"], mem["buf"], nc.SUM)),
            "raw window": (mem["win"], lambda: comm.allreduce(mem["win"], mem["win"], nc.SUM)),
        }
        if handles[1] is None:
            del paths["raw window"]
        for name, (x, call) in paths.items():
            ok &= checked_sum(name, x, call, rank, world)
        iters = int(max(20, min(500, 2e9 / size)))
        row = {"bytes": size}
        row.update(best_of_rounds({k: call for k, (_, call) in paths.items()}, iters, warmup=5))
        rows.append(row)
        torch.cuda.synchronize()
        for h in handles:
            if h is not None:
                h.close()
        del plain, mem, paths
    all_ok = report(rows, "GPU µs per all_reduce", args.out, ok)
    dist.destroy_process_group()
    if not all_ok:
        raise SystemExit("wrong results")


if __name__ == "__main__":
    main()
