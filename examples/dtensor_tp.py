"""DTensor and DeviceMesh over nccl_core: distribute_tensor and tensor-parallel
linear layers, on a 1-D mesh and (with 4 ranks) a 2 x 2 mesh.

    torchrun --nproc-per-node=4 examples/dtensor_tp.py

Every result is compared with the same computation done on one GPU.
"""

from __future__ import annotations

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import Replicate, Shard, distribute_tensor  # noqa: E402
from torch.distributed.tensor.parallel import (  # noqa: E402
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)

import nccl_core_backend  # noqa: E402, F401  - registers "nccl_core"
from nccl_core_backend import simhosts  # noqa: E402


def mlp(d: int) -> nn.Module:
    torch.manual_seed(7)
    return nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))


def check(name: str, got: torch.Tensor, exp: torch.Tensor, tol: float = 1e-5) -> bool:
    err = (got - exp).abs().max().item()
    ok = err <= tol * max(1.0, exp.abs().max().item())
    if dist.get_rank() == 0:
        print(f"  {name}: max error {err:.3g} {'OK' if ok else 'MISMATCH'}", flush=True)
    return ok


def tensor_parallel(mesh, device, d=256) -> bool:
    ok = True
    ref = mlp(d).to(device)
    tp = parallelize_module(mlp(d).to(device), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    torch.manual_seed(11)
    x = torch.randn(32, d, device=device)  # same input everywhere (replicated)
    y_ref, y = ref(x), tp(x)
    ok &= check("TP forward", y.full_tensor() if hasattr(y, "full_tensor") else y, y_ref)
    y_ref.square().sum().backward()
    y.square().sum().backward()
    for (n, p_ref), (_, p) in zip(ref.named_parameters(), tp.named_parameters()):
        g = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
        ok &= check(f"TP grad {n}", g, p_ref.grad, 1e-4)
    return ok


def main() -> None:
    device = simhosts.rank_device("dtensor_tp.py")
    dist.init_process_group("nccl_core", device_id=device)
    world = dist.get_world_size()
    ok = True

    mesh = init_device_mesh("cuda", (world,), mesh_dim_names=("tp",))
    torch.manual_seed(3)
    full = torch.randn(8 * world, 6 * world, device=device)
    for placement in (Shard(0), Shard(1), Replicate()):
        dt = distribute_tensor(full, mesh, [placement])
        ok &= check(f"1-D distribute_tensor {placement}", dt.full_tensor(), full)
    dt = distribute_tensor(full, mesh, [Shard(1)]).redistribute(mesh, [Shard(0)])  # all_to_all
    ok &= check("1-D redistribute Shard(1) -> Shard(0)", dt.full_tensor(), full)
    ok &= tensor_parallel(mesh, device)

    if world == 4:
        mesh2 = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "tp"))
        for placements in ([Shard(0), Shard(1)], [Replicate(), Shard(0)], [Shard(1), Replicate()]):
            dt = distribute_tensor(full, mesh2, placements)
            ok &= check(f"2-D distribute_tensor {placements}", dt.full_tensor(), full)
        ok &= tensor_parallel(mesh2["tp"], device)
        # Data-parallel gradient averaging across the other mesh dimension.
        g = torch.full((16,), float(dist.get_rank()), device=device)
        dist.all_reduce(g, op=dist.ReduceOp.AVG, group=mesh2["dp"].get_group())
        coord = mesh2.get_coordinate()
        ranks = [r for r in range(4) if r % 2 == coord[1]]
        ok &= check("2-D dp all_reduce AVG", g, torch.full_like(g, sum(ranks) / 2))

    flag = torch.tensor([0 if ok else 1], device=device)
    dist.all_reduce(flag)
    if dist.get_rank() == 0:
        print(f"dtensor_tp world={world}: {'OK' if flag.item() == 0 else 'MISMATCH'}", flush=True)
    dist.destroy_process_group()
    if flag.item():
        raise SystemExit(1)


if __name__ == "__main__":
    main()
