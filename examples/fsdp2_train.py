"""FSDP2 (fully_shard) training of a small transformer over nccl_core.

    torchrun --nproc-per-node=4 examples/fsdp2_train.py [--backend nccl]
        [--reduce avg|premul] [--nccl-mem] [--steps 20] [--losses-out FILE]

The model is built from a config (no weights are downloaded); parameters are
sharded with ``fully_shard`` and computed in bf16 with fp32 gradient
reduction.  ``--reduce avg`` lets FSDP average gradients with ReduceOp.AVG
(its default); ``--reduce premul`` sets a gradient divide factor, so FSDP
reduce-scatters with a PreMulSum op.  ``--nccl-mem`` has FSDP allocate its
communication buffers through the backend (``allocate_tensor``: NCCL memory).
Run it again with ``--backend nccl`` to compare the losses.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402

import nccl_core_backend  # noqa: E402, F401  - registers "nccl_core"
from nccl_core_backend import simhosts  # noqa: E402


@dataclass
class Config:
    vocab: int = 2048
    dim: int = 256
    heads: int = 4
    layers: int = 4
    seq: int = 128


class Block(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(c.dim)
        self.attn = nn.MultiheadAttention(c.dim, c.heads, batch_first=True)
        self.norm2 = nn.LayerNorm(c.dim)
        self.mlp = nn.Sequential(nn.Linear(c.dim, 4 * c.dim), nn.GELU(), nn.Linear(4 * c.dim, c.dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.dim)
        self.pos = nn.Parameter(torch.zeros(c.seq, c.dim))
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = nn.LayerNorm(c.dim)
        self.head = nn.Linear(c.dim, c.vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        # True = may not attend (a boolean mask works for any compute dtype)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=tokens.device), diagonal=1)
        x = self.embed(tokens) + self.pos[:n]
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.norm(x))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="nccl_core")
    p.add_argument("--reduce", choices=["avg", "premul"], default="avg")
    p.add_argument("--nccl-mem", action="store_true")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--losses-out", default="")
    args = p.parse_args()

    device = simhosts.rank_device("fsdp2_train.py")
    dist.init_process_group(backend=args.backend, device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    cfg = Config()
    torch.manual_seed(0)  # identical initial weights everywhere
    model = TinyLM(cfg).to(device)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    if args.reduce == "premul":
        # Averaging over twice the ranks: FSDP then reduce-scatters with
        # PreMulSum(1 / (2 * world)) instead of AVG.
        model.set_gradient_divide_factor(2.0 * world)
    if args.nccl_mem:
        model.set_allocate_memory_from_process_group_for_comm(True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

    gen = torch.Generator(device=device)
    gen.manual_seed(1000 + rank)
    losses = []
    for step in range(args.steps):
        tokens = torch.randint(0, cfg.vocab, (args.batch, cfg.seq + 1), device=device, generator=gen)
        # A learnable task: the next token is the current one shifted by 1.
        tokens[:, 1:] = (tokens[:, :-1] + 1) % cfg.vocab
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, cfg.vocab),
                                           tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        losses.append(avg.item())
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step:3d} loss {losses[-1]:.6f}", flush=True)
    if rank == 0:
        print(f"fsdp2_train backend={args.backend} reduce={args.reduce} nccl_mem={args.nccl_mem} "
              f"world={world}: loss {losses[0]:.4f} -> {losses[-1]:.4f}", flush=True)
        if args.losses_out:
            with open(args.losses_out, "w") as f:
                json.dump({"backend": args.backend, "losses": losses}, f)
    dist.destroy_process_group()
    if not losses[-1] < losses[0]:
        raise SystemExit("fsdp2_train: the loss did not go down")


if __name__ == "__main__":
    main()
