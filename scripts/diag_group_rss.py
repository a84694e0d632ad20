"""Where does host memory go when groups are created and destroyed?

    torchrun --nproc-per-node=2 scripts/diag_group_rss.py --groups 30

Churns new_group/all_reduce/destroy on nccl_core and on backend nccl and
prints, per backend, RSS growth per group before and after malloc_trim(0)
(memory glibc keeps cached is not a leak) and the thread count.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend  # noqa: E402,F401


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def churn(n: int, backend, device) -> None:
    for _ in range(n):
        g = dist.new_group(list(range(dist.get_world_size())), backend=backend)
        t = torch.ones(4, device=device)
        dist.all_reduce(t, group=g)
        dist.destroy_process_group(g)
    gc.collect()
    torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--groups", type=int, default=30)
    args = p.parse_args()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    dist.init_process_group("cpu:gloo,cuda:nccl_core")
    libc = ctypes.CDLL("libc.so.6")
    for name, backend in (("nccl", "nccl"), ("nccl_core", None), ("nccl (again)", "nccl"),
                          ("nccl_core (again)", None)):
        churn(2, backend, device)
        libc.malloc_trim(0)
        r0, t0 = rss(), threads()
        churn(args.groups, backend, device)
        r1 = rss()
        libc.malloc_trim(0)
        r2, t1 = rss(), threads()
        if dist.get_rank() == 0:
            print(f"[diag] {name}: {args.groups} groups, RSS +{(r1 - r0) / args.groups / 1024:.0f} KiB/group, "
                  f"after malloc_trim +{(r2 - r0) / args.groups / 1024:.0f} KiB/group, threads {t0} -> {t1}",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
