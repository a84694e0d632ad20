"""Device-API all_reduce (nccl_core_backend.device) against dist.all_reduce of
backend nccl, side by side in one torchrun job, 4 KiB .. 16 MiB of float32.

    torchrun --nproc-per-node=4 bench/device.py --out bench/results/device-latest

Per size: GPU time per call in a back-to-back loop (CUDA events) for the
device kernel (one-shot, LSA loads between two LSA barriers), for backend
nccl and for nccl_core's own dist.all_reduce; the ratio device / nccl.  The
device result is checked on every size.  Rank 0 writes results.json/.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend as nc  # noqa: E402
from sidebyside import gpu_seconds, init_side_by_side  # noqa: E402  (bench/ is on sys.path when run)
from nccl_core_backend import device as ncdev  # noqa: E402


def timed(fn, iters: int) -> float:
    return gpu_seconds(fn, iters, warmup=5) * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/results/device-latest")
    p.add_argument("--min-bytes", type=int, default=4 << 10)
    p.add_argument("--max-bytes", type=int, default=16 << 20)
    args = p.parse_args()
    dev, rank, world, nccl = init_side_by_side()
    comm = nc.get_communicator()
    dcomm = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=32))
    window_buf = nc.torch.empty(args.max_bytes // 4, device=dev)
    win = comm.register_window(window_buf)
    if win is None:
        raise SystemExit("this system cannot register NCCL windows")
    rows, wrong = [], []
    size = args.min_bytes
    while size <= args.max_bytes:
        n = size // 4
        x = window_buf[:n]
        out = torch.empty(n, device=dev)
        x.fill_(rank + 1)
        ncdev.all_reduce(dcomm, win, out)
        if not torch.equal(out, torch.full_like(out, world * (world + 1) / 2)):
            wrong.append(size)
        plain = torch.ones(n, device=dev)
        iters = int(max(20, min(1000, 2e9 / size)))
        row = {"bytes": size,
               "device_us": timed(lambda: ncdev.all_reduce(dcomm, win, out), iters),
               "nccl_us": timed(lambda: dist.all_reduce(plain, group=nccl), iters),
               "nccl_core_us": timed(lambda: dist.all_reduce(plain), iters)}
        row["ratio"] = row["device_us"] / row["nccl_us"]
        rows.append(row)
        size *= 2
    everyone: list = [None] * world
    dist.all_gather_object(everyone, wrong, group=dist.new_group(backend="gloo"))
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        result = {"world": world, "torch": torch.__version__, "nccl": list(nc.nccl_version()),
                  "rows": rows, "wrong": everyone, "time": time.time()}
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(result, f, indent=1)
        lines = [f"world={world} torch={torch.__version__} nccl={nc.nccl_version()}", "",
                 "| bytes | device all_reduce µs | nccl µs | nccl_core dist µs | device / nccl |",
                 "|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['bytes']} | {r['device_us']:.1f} | {r['nccl_us']:.1f} | {r['nccl_core_us']:.1f} | "
                  f"{r['ratio']:.2f} |" for r in rows]
        with open(os.path.join(args.out, "results.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines), flush=True)
        if any(everyone):
            print(f"WRONG RESULTS: {everyone}", flush=True)
    win.close()
    dcomm.close()
    dist.destroy_process_group()
    if any(everyone):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
