"""torch.compile with functional collectives over nccl_core.

    torchrun --nproc-per-node=2 examples/compile_funcol.py

A function mixing compute with funcol.all_reduce, all_gather_tensor and
reduce_scatter_tensor is compiled with inductor; its result must equal the
eager run, and both must equal a reference built from every rank's inputs.
"""

from __future__ import annotations

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402

import nccl_core_backend  # noqa: E402, F401  - registers "nccl_core"
from nccl_core_backend import simhosts  # noqa: E402


def step(x: torch.Tensor, w: torch.Tensor, group) -> torch.Tensor:
    h = torch.relu(x @ w)
    h = funcol.all_reduce(h, "sum", group)
    g = funcol.all_gather_tensor(h * 0.5, 0, group)
    r = funcol.reduce_scatter_tensor(g + 1.0, "sum", 0, group)
    return r.sin() + h.mean()


def main() -> None:
    device = simhosts.rank_device("compile_funcol.py")
    dist.init_process_group("nccl_core", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD

    def inputs(r: int):
        g = torch.Generator().manual_seed(100 + r)
        return torch.randn(16, 32, generator=g, dtype=torch.float64), torch.randn(
            32, 32, generator=torch.Generator().manual_seed(5), dtype=torch.float64)

    x, w = (t.to(device, torch.float32) for t in inputs(rank))
    eager = step(x, w, group)
    compiled = torch.compile(step, fullgraph=True)(x, w, group)

    # float64 reference from every rank's inputs
    hs = [torch.relu(a @ b) for a, b in (inputs(r) for r in range(world))]
    h = sum(hs)
    g = torch.cat([h * 0.5] * world)
    r = (g + 1.0) * world
    rows = g.shape[0] // world
    ref = r[rank * rows:(rank + 1) * rows].sin() + h.mean()
    err_eager = (eager.double().cpu() - ref).abs().max().item()
    err_comp = (compiled.double().cpu() - ref).abs().max().item()
    diff = (eager - compiled).abs().max().item()
    ok = err_eager < 1e-3 and err_comp < 1e-3 and diff < 1e-4
    flag = torch.tensor([0 if ok else 1], device=device)
    dist.all_reduce(flag)
    if rank == 0:
        print(f"compile_funcol world={world}: |eager-ref| {err_eager:.2e} |compiled-ref| "
              f"{err_comp:.2e} |eager-compiled| {diff:.2e} -> "
              f"{'OK' if flag.item() == 0 else 'MISMATCH'}", flush=True)
    dist.destroy_process_group()
    if flag.item():
        raise SystemExit(1)


if __name__ == "__main__":
    main()
