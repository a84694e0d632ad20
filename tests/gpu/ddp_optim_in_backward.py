"""DDP with the optimizer applied in backward, as torch's
test_ddp_apply_optim_in_backward runs it, under GPU contention.

Two DDP models on one nccl_core group train from the same start on the same
inputs: one steps its optimizer after backward, the other applies it in
backward through DDP's comm hook (its optimizer runs on a side stream as soon
as a bucket's all-reduce completes).  Their parameters must stay equal
(NaN equal to NaN) after every step: SGD and Adam, gradients as bucket views
or not, optimizer set up before or after DDP, a small and a 1M-parameter MLP
and ResNet-50 (torchvision) at 1000x1000.

The bug it guards shows only when several jobs share the GPUs: run 3 copies
at once on the same two GPUs, e.g.

    for k in 1 2 3; do torchrun --nproc-per-node 2 --master-port 2950$k \\
        tests/gpu/ddp_optim_in_backward.py & done; wait

(with NCCL_CORE_PUSH_MAX_BYTES=67108864: the push is off by default).  On
df2ed55 every copy failed: a whole chunk or one block slice of a pushed
bucket came out wrong (fc.weight 1024500 of 2048000 elements,
layer4.0.conv3.weight 36861 of 1048576), because a larger call's input slots
covered a smaller call's result slots (fixed in 58a9928, nvlink/push.h).  Exit
status 1 on any difference, 0 otherwise; each rank prints one summary line.
"""

from __future__ import annotations

import copy
import itertools
import os
import sys

# NVLink multicast stays off on shared GPU machines, whoever starts this.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributed.optim import _apply_optimizer_in_backward  # noqa: E402

import nccl_core_backend  # noqa: E402,F401  (registers the backend)


def models(rank: int) -> list[nn.Module]:
    torch.manual_seed(rank)
    torch.cuda.manual_seed(rank)
    out = [nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)).cuda(),
           nn.Sequential(nn.Linear(3, 1024), nn.Linear(1024, 1024), nn.Linear(1024, 3)).cuda()]
    try:
        import torchvision
    except ImportError:
        print("ddp_optim_in_backward: torchvision missing, ResNet-50 left out", flush=True)
    else:
        out.append(torchvision.models.resnet50().cuda())
    return out


def first_difference(a: nn.Module, b: nn.Module) -> str | None:
    for (name, p1), p2 in zip(a.named_parameters(), b.parameters(), strict=True):
        if not torch.allclose(p1, p2, rtol=1.3e-6, atol=1e-5, equal_nan=True):
            d = (p1 - p2).abs()
            return (f"{name} {tuple(p1.shape)}: {int((d > 1e-5).sum())} of {d.numel()} "
                    f"elements differ, max {d.max().item():.4g}")
    return None


def run_one(rank, device, bucket_view, optim_cls, init_before, j, model) -> str | None:
    other = copy.deepcopy(model)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device],
                                              gradient_as_bucket_view=bucket_view)
    optim = optim_cls(ddp.parameters(), lr=0.03)
    if init_before:
        _apply_optimizer_in_backward(optim_cls, other.parameters(), {"lr": 0.03})
    other = nn.parallel.DistributedDataParallel(other, device_ids=[device],
                                                gradient_as_bucket_view=bucket_view)
    if not init_before:
        _apply_optimizer_in_backward(optim_cls, other.parameters(), {"lr": 0.03})
    flag = torch.zeros(1, device="cuda")
    with torch.backends.cudnn.flags(enabled=True, deterministic=True, benchmark=False):
        for i in range(8):
            big = j == 2
            inp = torch.randn(1, 3, 1000, 1000, device="cuda") if big else \
                torch.randn(10, 3, device="cuda")
            ddp(inp).sum().backward()
            optim.step()
            other(inp).sum().backward()
            found = first_difference(ddp.module, other.module)
            # Every rank leaves together, so that their calls stay matched.
            flag.fill_(1.0 if found else 0.0)
            dist.all_reduce(flag)
            if flag.item() > 0:
                return f"step {i}: {found}" if found else f"step {i}: another rank differs"
            optim.zero_grad(set_to_none=True)
    return None


def main() -> int:
    rank = int(os.environ["RANK"])
    device = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(device)
    dist.init_process_group(os.environ.get("DDP_OPTIM_BACKEND", "nccl_core"))
    torch.backends.cudnn.allow_tf32 = False
    failures, runs = [], 0
    for bucket_view, optim_cls, init_before in itertools.product(
            [True, False], [torch.optim.SGD, torch.optim.Adam], [True, False]):
        if not bucket_view and optim_cls is torch.optim.Adam:
            continue  # torch's test runs Adam with bucket views only
        for j, model in enumerate(models(rank)):
            runs += 1
            what = run_one(rank, device, bucket_view, optim_cls, init_before, j, model)
            if what:
                failures.append(f"view={bucket_view} {optim_cls.__name__} "
                                f"before={init_before} model {j} {what}")
    backend = dist.group.WORLD._get_backend(torch.device("cuda"))
    pushes = backend._push_calls() if hasattr(backend, "_push_calls") else "n/a"
    for f in failures:
        print(f"rank {rank}: {f}", flush=True)
    print(f"rank {rank}: {len(failures)} of {runs} runs differ; push all-reduces {pushes}",
          flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
