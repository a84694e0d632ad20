"""All-reduce over the nccl_core backend, checked against the expected sum.

    torchrun --nproc-per-node=2 examples/allreduce.py [--numel N] [--iters K]

Each rank contributes (rank + 1) * [0, 1, 2, ...]; after a SUM every rank
holds (1 + 2 + ... + world) * [0, 1, 2, ...].
"""

from __future__ import annotations

import argparse
import os
import time

# NVLink multicast stays off (see README); set before NCCL is initialised.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend  # noqa: E402, F401  - registers "nccl_core"
from nccl_core_backend import simhosts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=1 << 20, help="elements per tensor")
    parser.add_argument("--iters", type=int, default=10, help="timed all-reduces")
    args = parser.parse_args()

    # cuda:LOCAL_RANK, or a simulated host where the ranks outnumber the GPUs.
    device = simhosts.rank_device("allreduce.py")
    # device_id= creates the communicator now instead of at the first call.
    dist.init_process_group(backend="nccl_core", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    base = torch.arange(args.numel, dtype=torch.float32, device=device)
    expected = base * (world * (world + 1) / 2)

    t = base * (rank + 1)
    dist.all_reduce(t)
    torch.testing.assert_close(t, expected)

    # A few more, timed, with an async handle on the last one.
    torch.cuda.synchronize()
    start = time.perf_counter()
    work = None
    for i in range(args.iters):
        t = base * (rank + 1)
        work = dist.all_reduce(t, async_op=(i == args.iters - 1))
    if work is not None:
        work.wait()
    torch.cuda.synchronize()
    elapsed = (time.perf_counter() - start) / max(args.iters, 1)
    torch.testing.assert_close(t, expected)

    if rank == 0:
        mib = args.numel * 4 / 2**20
        print(
            f"nccl_core all_reduce OK: world={world} numel={args.numel} ({mib:.1f} MiB) "
            f"sum[:4]={t[:4].tolist()} avg {elapsed * 1e3:.3f} ms/iter "
            f"(NCCL {'.'.join(map(str, nccl_core_backend.nccl_version()))})"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
