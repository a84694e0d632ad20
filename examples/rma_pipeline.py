"""Pipeline-parallel hand-off of activations with put_signal / wait_signal.

    torchrun --nproc-per-node=4 examples/rma_pipeline.py [--microbatches M] [--width W]

Rank r holds stage r of a small MLP.  For each microbatch it waits for the
activation from rank r-1 (``wait_signal``), runs its stage, and writes the
result straight into rank r+1's window (``put_signal``).  Each window has two
slots (double buffering); a receiver hands a slot back with ``signal`` once it
has consumed it.  The last rank checks every output against the whole model
run locally.
"""

from __future__ import annotations

import argparse
import os

# NVLink multicast stays off (see README); set before NCCL is initialised.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import simhosts  # noqa: E402

SLOTS = 2


def stage(rank: int, width: int, device) -> torch.nn.Module:
    torch.manual_seed(1000 + rank)  # every rank can rebuild every stage
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU()).to(device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--microbatches", type=int, default=32)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--width", type=int, default=1024)
    args = p.parse_args()

    device = simhosts.rank_device("rma_pipeline.py", needs_nvlink="one-sided puts into peers' windows")
    dist.init_process_group("nccl_core", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = nc.get_communicator()

    shape = (args.batch, args.width)
    numel = args.batch * args.width
    inbox = nc.torch.empty(SLOTS * numel, device=device)  # NCCL memory: a window
    win = comm.register_window(inbox)
    if win is None:
        raise SystemExit("this system cannot register NCCL windows")
    model = stage(rank, args.width, device)
    prev, nxt = rank - 1, rank + 1
    outputs = []

    with torch.no_grad():
        for m in range(args.microbatches):
            slot = m % SLOTS
            if rank == 0:
                torch.manual_seed(m)
                x = torch.randn(shape, device=device)
            else:
                comm.wait_signal(nc.WaitSignalDesc(prev))        # activation m arrived
                x = inbox[slot * numel:(slot + 1) * numel].view(shape).clone()
                comm.signal(prev)                                # slot free again
            y = model(x)
            if nxt < world:
                if m >= SLOTS:
                    comm.wait_signal(nc.WaitSignalDesc(nxt))     # nxt freed this slot
                comm.put_signal(y.contiguous(), nxt, win, slot * numel)
            else:
                outputs.append(y)
        if nxt < world:  # collect the credits for the last slots
            comm.wait_signal(nc.WaitSignalDesc(nxt, op_count=min(SLOTS, args.microbatches)))
    torch.cuda.synchronize()

    if rank == world - 1:
        stages = [stage(r, args.width, device) for r in range(world)]
        worst = 0.0
        with torch.no_grad():
            for m, y in enumerate(outputs):
                torch.manual_seed(m)
                x = torch.randn(shape, device=device)
                for s in stages:
                    x = s(x)
                worst = max(worst, (x - y).abs().max().item())
        ok = worst <= 1e-5  # same kernels on the same GPU model: equal up to rounding
        print(f"rma_pipeline: {world} stages, {args.microbatches} microbatches of {shape}: "
              f"max |pipeline - reference| = {worst:g} -> {'OK' if ok else 'MISMATCH'}", flush=True)
        if not ok:
            raise SystemExit(1)
    dist.barrier()
    win.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
