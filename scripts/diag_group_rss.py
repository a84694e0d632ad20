"""Where does host memory go when groups are created and destroyed?

    torchrun --nproc-per-node=2 scripts/diag_group_rss.py --groups 30

Churns new_group/all_reduce/destroy on backend nccl and on nccl_core (fast
path off, fast path off plus one window registered per group, default) and
prints, per variant, RSS growth per group before and after malloc_trim(0)
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

import nccl_core_backend  # noqa: E402  (its .torch is the interop module)


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def churn(n: int, variant: str, device) -> None:
    backend = "nccl" if variant == "nccl" else None
    opts = None
    if variant.startswith("off"):
        opts = nccl_core_backend.Options()
        opts.fast_path_max_bytes = 0
    buf = nccl_core_backend.torch.empty(1 << 16, device=device) if variant == "off+window" else None
    for _ in range(n):
        g = dist.new_group(list(range(dist.get_world_size())), backend=backend, pg_options=opts)
        t = torch.ones(4, device=device)
        dist.all_reduce(t, group=g)
        if buf is not None:
            nccl_core_backend.get_communicator(g).register_window(buf).close()
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
    for name in ("nccl", "off", "off+window", "default", "nccl", "default"):
        churn(2, name, device)
        libc.malloc_trim(0)
        r0, t0 = rss(), threads()
        churn(args.groups, name, device)
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
