"""DistributedDataParallel training of a small MLP over nccl_core.

    torchrun --nproc-per-node=N examples/ddp_train.py [--steps 300] [--backend nccl]
        [--comm-hook fp16|bf16] [--losses-out losses.json] [--trace-out trace.json]

The task is synthetic regression: targets come from a fixed random "teacher"
network, inputs from a generator seeded per rank, so nothing is downloaded
and runs are reproducible.  ``--backend nccl`` runs the same job on torch's
own NCCL backend for comparison; ``--losses-out`` writes the per-step mean
loss so two runs can be compared number by number; ``--trace-out`` profiles
the last steps with torch.profiler and writes rank 0's Chrome trace
(``python scripts/trace_table.py trace.json`` lists the collectives in it).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import nccl_core_backend  # noqa: E402, F401  - registers "nccl_core"
from nccl_core_backend import simhosts  # noqa: E402


class MLP(nn.Module):
    def __init__(self, d_in: int, hidden: int, d_out: int, depth: int = 3) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = d_in
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.GELU()]
            width = hidden
        layers.append(nn.Linear(width, d_out))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="nccl_core", help="nccl_core (default) or nccl")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=256, help="per-rank batch size")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--comm-hook", choices=["none", "fp16", "bf16"], default="none",
                   help="gradient compression hook of torch.distributed.algorithms")
    p.add_argument("--losses-out", default="", help="write every step's mean loss (JSON)")
    p.add_argument("--trace-out", default="",
                   help="profile the last --trace-steps steps; rank 0 writes a Chrome trace")
    p.add_argument("--trace-steps", type=int, default=5)
    args = p.parse_args()
    if args.steps < 1:
        p.error("--steps must be >= 1")

    device = simhosts.rank_device("ddp_train.py")
    dist.init_process_group(backend=args.backend, device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    d_in, d_out = 64, 8
    # Same seed on every rank: identical teacher and initial student weights
    # (DDP would broadcast rank 0's weights anyway).
    torch.manual_seed(args.seed)
    teacher = MLP(d_in, 128, d_out, depth=2).to(device).eval()
    model = DDP(MLP(d_in, args.hidden, d_out).to(device), device_ids=[device.index])
    if args.comm_hook != "none":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        hook = {"fp16": default_hooks.fp16_compress_hook,
                "bf16": default_hooks.bf16_compress_hook}[args.comm_hook]
        model.register_comm_hook(None, hook)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)

    # Per-rank data stream: every rank sees different samples.
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed * 1000 + rank + 1)

    first = last = None
    losses: list[float] = []
    start = time.perf_counter()
    profiler = None
    for step in range(1, args.steps + 1):
        if args.trace_out and step == max(1, args.steps - args.trace_steps + 1):
            from torch.profiler import ProfilerActivity, profile

            profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                               record_shapes=True)
            profiler.__enter__()
        x = torch.randn(args.batch, d_in, device=device, generator=gen)
        with torch.no_grad():
            y = teacher(x)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # DDP all-reduces gradient buckets here
        opt.step()

        logging = step == 1 or step % args.log_every == 0 or step == args.steps
        if logging or args.losses_out:
            # Mean loss over ranks, reduced through the same backend.
            avg = loss.detach().clone()
            dist.all_reduce(avg, op=dist.ReduceOp.AVG)
            value = avg.item()
            losses.append(value)
        if logging:
            first = value if first is None else first
            last = value
            if rank == 0:
                print(f"step {step:5d}  loss {value:.6f}", flush=True)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    if profiler is not None:
        profiler.__exit__(None, None, None)
        if rank == 0:
            profiler.export_chrome_trace(args.trace_out)
            print(f"trace of the last {args.trace_steps} steps: {args.trace_out}", flush=True)

    # DDP keeps replicas identical: compare a parameter checksum across ranks.
    checksum = torch.stack([q.detach().double().sum() for q in model.parameters()]).sum()
    sums = [torch.zeros_like(checksum) for _ in range(world)]
    dist.all_gather(sums, checksum)
    in_sync = all(torch.equal(s, sums[0]) for s in sums)

    if rank == 0 and args.losses_out:
        with open(args.losses_out, "w") as f:
            json.dump({"backend": args.backend, "world": world, "losses": losses,
                       "checksum": checksum.item()}, f)
    if rank == 0:
        print(
            f"backend={dist.get_backend()} world={world} steps={args.steps} "
            f"loss {first:.6f} -> {last:.6f}  {elapsed / args.steps * 1e3:.2f} ms/step  "
            f"replicas in sync: {in_sync}"
        )
    dist.destroy_process_group()
    if not in_sync or not last < first:
        raise SystemExit("ddp_train: replicas diverged or the loss did not go down")


if __name__ == "__main__":
    main()
