"""DDP in the modes torch's suite tests, on nccl_core against torch's nccl in
the same job: every parameter after several steps.

Each rank builds the same model twice from one seed; one copy trains under
DDP on a nccl_core group, the other on a torch ``nccl`` group, on the same
per-rank inputs.  After every mode the two copies must agree on every
parameter: exactly at 2 ranks (a sum of two is the same in any order), within
float32 rounding of a different reduction order at more ranks.

Modes: plain, static graph, gradients as bucket views, find_unused_parameters,
no_sync accumulation, Join with uneven inputs, the fp16-compression,
PowerSGD and optimizer-in-backward comm hooks, and a state_dict round trip.
Paths: nccl_core's defaults, and the push all-reduce on (``--push``).

    torchrun --nproc-per-node 2 tests/gpu/ddp_modes.py [--push]

``DDP_MODES_BACKEND`` / ``DDP_MODES_REFERENCE`` name the two backends
(default nccl_core / nccl; gloo / gloo runs the script's own logic on CPUs).
Exit status 1 on any difference; rank 0 prints one line per mode.
"""

from __future__ import annotations

import copy
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd  # noqa: E402
from torch.distributed.algorithms.join import Join  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

STEPS = 4


class Net(nn.Module):
    """Buckets of several sizes (small ones for the fast path, megabytes for
    the push) and one branch that some steps leave unused."""

    def __init__(self):
        super().__init__()
        self.small = nn.Linear(16, 16)
        self.big = nn.Linear(16, 1024)
        self.wide = nn.Linear(1024, 1024)
        self.head = nn.Linear(1024, 4)
        self.spare = nn.Linear(16, 4)

    def forward(self, x, use_spare=True):
        y = self.head(torch.relu(self.wide(torch.relu(self.big(torch.relu(self.small(x)))))))
        return y + self.spare(x) if use_spare else y


def groups(push: bool):
    backend = os.environ.get("DDP_MODES_BACKEND", "nccl_core")
    reference = os.environ.get("DDP_MODES_REFERENCE", "nccl")
    ranks = list(range(dist.get_world_size()))
    opts = None
    if push and backend == "nccl_core":
        import nccl_core_backend as nc

        opts = nc.Options()
        opts.push_max_bytes = 64 << 20
        opts.push_min_bytes = 64 << 10
    return (dist.new_group(ranks, backend=backend, pg_options=opts),
            dist.new_group(ranks, backend=reference))


def make_pair(device, seed=0):
    torch.manual_seed(seed)
    a = Net().to(device)
    return a, copy.deepcopy(a)


def inputs(device, step, rank, n=8):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(n, 16, generator=g).to(device)


def train(model, opt, device, rank, steps=STEPS, **kw):
    for step in range(steps):
        model(inputs(device, step, rank), **kw).square().sum().backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)


def compare(a, b, tol) -> str | None:
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        if tol == 0 and not torch.equal(p, q):
            return f"{name}: {int((p != q).sum())} of {p.numel()} elements differ"
        if tol and not torch.allclose(p, q, rtol=tol, atol=tol):
            return f"{name}: max difference {(p - q).abs().max().item():.3g}"
    return None


def run_mode(mode, pg, ref, device, rank, world):
    a, b = make_pair(device)
    dev_ids = [device] if device.type == "cuda" else None
    kw = {}
    if mode == "static_graph":
        kw["static_graph"] = True
    if mode == "bucket_view":
        kw["gradient_as_bucket_view"] = True
    if mode == "find_unused":
        kw["find_unused_parameters"] = True
    if mode == "small_buckets":
        kw["bucket_cap_mb"] = 1
    if mode == "optim_in_backward":
        from torch.distributed.optim import _apply_optimizer_in_backward

        # Before DDP: DDP sets its optimizer hook up at construction.
        for m in (a, b):
            _apply_optimizer_in_backward(torch.optim.SGD, m.parameters(), {"lr": 0.01})
    da = DDP(a, device_ids=dev_ids, process_group=pg, **kw)
    db = DDP(b, device_ids=dev_ids, process_group=ref, **kw)
    if mode == "fp16_hook":
        da.register_comm_hook(pg, default_hooks.fp16_compress_hook)
        db.register_comm_hook(ref, default_hooks.fp16_compress_hook)
    if mode == "powersgd":
        da.register_comm_hook(powersgd.PowerSGDState(pg, matrix_approximation_rank=2,
                                                     start_powerSGD_iter=2, random_seed=7),
                              powersgd.powerSGD_hook)
        db.register_comm_hook(powersgd.PowerSGDState(ref, matrix_approximation_rank=2,
                                                     start_powerSGD_iter=2, random_seed=7),
                              powersgd.powerSGD_hook)
    if mode == "optim_in_backward":
        oa = ob = None
    else:
        oa = torch.optim.SGD(da.parameters(), lr=0.01, momentum=0.9)
        ob = torch.optim.SGD(db.parameters(), lr=0.01, momentum=0.9)
    for model, opt in ((da, oa), (db, ob)):
        if mode == "find_unused":
            train(model, opt, device, rank, use_spare=False)
        elif mode == "no_sync":
            with model.no_sync():
                model(inputs(device, 99, rank)).square().sum().backward()
            train(model, opt, device, rank)
        elif mode == "join":
            # Uneven inputs: rank r trains STEPS + r steps; Join shadows the rest.
            with Join([model]):
                train(model, opt, device, rank, steps=STEPS + rank)
        elif mode == "state_dict":
            train(model, opt, device, rank, steps=2)
            state = copy.deepcopy(model.state_dict())
            model.module.load_state_dict({k[len("module."):]: v for k, v in state.items()})
            train(model, opt, device, rank, steps=2)
        else:
            train(model, opt, device, rank)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    # Exact at 2 ranks (a + b is b + a); more ranks reduce in another order.
    if world <= 2 and mode != "powersgd":
        tol = 0.0
    else:
        tol = 2e-3 if mode == "fp16_hook" else 1e-5
    return compare(a, b, tol)


MODES = ["plain", "static_graph", "bucket_view", "find_unused", "small_buckets", "no_sync",
         "join", "fp16_hook", "powersgd", "optim_in_backward", "state_dict"]


def main() -> int:
    push = "--push" in sys.argv
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    cpu = os.environ.get("DDP_MODES_BACKEND", "nccl_core") == "gloo"
    device = torch.device("cpu") if cpu else torch.device("cuda", local)
    if not cpu:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    import nccl_core_backend  # noqa: F401  (registers the backend)

    dist.init_process_group("gloo" if cpu else "cpu:gloo,cuda:nccl")
    pg, ref = groups(push)
    failures = []
    only = [m for m in os.environ.get("DDP_MODES_ONLY", "").split(",") if m]
    modes = only or MODES
    if cpu:
        # On gloo and CPUs only the script's own logic is checked: the
        # optimizer-in-backward hook needs CUDA streams, and PowerSGD's hook
        # waits on gloo inside a gloo callback (it hangs there).
        modes = [m for m in modes if m not in ("optim_in_backward", "powersgd")]
    for mode in modes:
        what = run_mode(mode, pg, ref, device, rank, world)
        # Every rank hears of any difference, so that all report alike.
        flag = torch.tensor([1.0 if what else 0.0])
        dist.all_reduce(flag)
        if rank == 0:
            print(f"ddp_modes {mode} world {world} push {push}: "
                  f"{'DIFFERS: ' + what if what else ('differs on another rank' if flag.item() else 'same')}",
                  flush=True)
        if flag.item():
            failures.append(mode)
    if rank == 0:
        print(f"ddp_modes: {len(failures)} of {len(modes)} modes differ {failures}", flush=True)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
