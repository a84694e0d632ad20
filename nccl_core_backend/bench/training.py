"""Workloads (b) and (c): a training step of a ~100M-parameter transformer
encoder under DDP and under FSDP2, on each backend.

The model: a linear input layer, 8 pre-norm ``nn.TransformerEncoderLayer``
(dim 1024, 16 heads, FFN 4096, no dropout) and a linear head, 102.9M
parameters; random inputs and targets (no data to download), MSE loss,
AdamW.  DDP: fp32 parameters, bf16 autocast, gradient buckets of --bucket-mb
MiB (25 is DDP's default).  FSDP2: ``fully_shard`` per layer and at the root,
bf16 parameters, fp32 gradient reduction.

Each backend trains its own copy of the model (same initial weights); the
steps alternate between them in rounds.  DDP also times the step under
``no_sync()`` (no communication), so the exposed communication of a step is
its time minus that.  The check: both copies get the same weights and the
same batch, run one step's forward and backward with deterministic kernels,
and every gradient element of nccl_core's copy must match backend nccl's
(compare.grads_close).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

from nccl_core_backend.bench.compare import grads_close
from nccl_core_backend.bench.job import CORE, NCCL
from nccl_core_backend.bench.timing import EventPool, interleaved, summary


class Encoder(nn.Module):
    def __init__(self, dim: int, layers: int, heads: int) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(self.norm(h))


def _deterministic():
    """Attention by the math kernel: flash and memory-efficient attention add
    with atomics in backward, which would blur the gradient comparison."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.MATH)


class Trainer:
    """One backend's model copy, optimizer and step."""

    def __init__(self, model: nn.Module, autocast: bool) -> None:
        self.model = model
        self.autocast = autocast
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def forward_backward(self, x, y) -> None:
        ctx = contextlib.nullcontext()
        if self.autocast:
            ctx = torch.autocast(x.device.type, dtype=torch.bfloat16)
        with ctx:
            out = self.model(x)
        F.mse_loss(out.float(), y).backward()

    def step(self, x, y) -> None:
        self.forward_backward(x, y)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def step_no_sync(self, x, y) -> None:
        with self.model.no_sync():
            self.forward_backward(x, y)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def _local(t: torch.Tensor) -> torch.Tensor:
    """A DTensor's shard on this rank (FSDP2), or the tensor itself."""
    return t.to_local() if hasattr(t, "to_local") else t


def check_grads(trainers: dict, x, y) -> tuple[dict, float]:
    """Same weights (nccl_core's copied into nccl's) and batch for both; one
    forward and backward each; every gradient of nccl_core's copy compared
    with nccl's.  Returns ({"nccl_core": ok}, worst error / bound)."""
    core, ref = trainers[CORE].model, trainers[NCCL].model
    with torch.no_grad():
        for pc, pn in zip(core.parameters(), ref.parameters()):
            _local(pn).copy_(_local(pc))
    for t in trainers.values():
        t.opt.zero_grad(set_to_none=True)
    with _deterministic():
        for t in trainers.values():
            t.forward_backward(x, y)
    if x.is_cuda:
        torch.cuda.synchronize(x.device)
    ok, worst = True, 0.0
    for (name, pc), pn in zip(core.named_parameters(), ref.parameters()):
        if pc.grad is None or pn.grad is None:
            raise RuntimeError(f"no gradient for {name} after backward")
        good, w = grads_close(_local(pc.grad), _local(pn.grad))
        ok, worst = ok and good, max(worst, w)
    for t in trainers.values():
        t.opt.zero_grad(set_to_none=True)
    # Backend nccl is the reference here, so only nccl_core gets a verdict.
    return {CORE: ok}, worst


def _models(job, dim: int, layers: int, heads: int, seed: int) -> dict:
    out = {}
    for name in job.groups:
        torch.manual_seed(seed)  # same initial weights for both copies and every rank
        out[name] = Encoder(dim, layers, heads).to(job.device)
    return out


def _batch(job, batch: int, seq: int, dim: int, seed: int):
    gen = torch.Generator(device=job.device)
    gen.manual_seed(seed * 7 + job.rank + 1)  # every rank its own samples
    x = torch.randn(batch, seq, dim, device=job.device, generator=gen)
    y = torch.randn(batch, seq, dim, device=job.device, generator=gen)
    return x, y


def _row(workload: str, label: str, config: dict, samples: dict, ok: dict, worst: float,
         baseline: str | None = None) -> dict:
    times = {name: summary(s) for name, s in samples.items()}
    row = {"workload": workload, "label": label, "config": config, CORE: times[CORE],
           NCCL: times[NCCL], "ratio": times[CORE]["us"] / times[NCCL]["us"], "correct": ok,
           "check": {"reference": NCCL, "worst_vs_bound": worst}}
    if baseline:
        row["baseline"] = times[baseline]
        comm = {name: times[name]["us"] - times[baseline]["us"] for name in (CORE, NCCL)}
        row["comm_us"] = comm
        row["comm_ratio"] = comm[CORE] / comm[NCCL] if min(comm.values()) > 0 else None
    return row


def param_count(dim: int, layers: int, heads: int) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in Encoder(dim, layers, heads).parameters())


def run_ddp(job, bucket_mbs: list[float], dim: int, layers: int, heads: int, batch: int, seq: int,
            steps: int, warmup: int, rounds: int, progress) -> list[dict]:
    from torch.nn.parallel import DistributedDataParallel as DDP

    pool = EventPool()
    seed = job.shared_seed()
    x, y = _batch(job, batch, seq, dim, seed)
    params = param_count(dim, layers, heads)
    rows = []
    for mb in bucket_mbs:
        models = _models(job, dim, layers, heads, seed)
        ids = [job.device.index] if job.device.type == "cuda" else None
        trainers = {name: Trainer(DDP(m, device_ids=ids, process_group=job.groups[name],
                                      bucket_cap_mb=mb), autocast=True)
                    for name, m in models.items()}
        calls = {name: (lambda t=t: t.step(x, y)) for name, t in trainers.items()}
        # The same step without communication.  Its optimizer steps on local
        # gradients make nccl_core's replicas drift apart, which costs nothing
        # in time, and the check gives both copies the same weights first.
        calls["no_sync"] = lambda t=trainers[CORE]: t.step_no_sync(x, y)
        samples = interleaved(calls, steps, warmup, rounds, job.sync, pool)
        ok, worst = check_grads(trainers, x, y)
        config = {"params": params, "bucket_mb": mb, "batch": batch, "seq": seq, "dim": dim,
                  "layers": layers, "precision": "fp32 params, bf16 autocast"}
        rows.append(_row("ddp", f"bucket={mb:g}MiB", config, samples, ok, worst, baseline="no_sync"))
        del trainers, models, calls
        torch.cuda.empty_cache()
        progress.step(f"ddp bucket={mb:g}MiB")
    return rows


def shard_encoder(model: nn.Module, group, device) -> None:
    """FSDP2 over `group`: each layer and the root, bf16 parameters, fp32 reduction."""
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = DeviceMesh.from_group(group, device.type)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)


def run_fsdp(job, dim: int, layers: int, heads: int, batch: int, seq: int, steps: int, warmup: int,
             rounds: int, progress) -> list[dict]:
    pool = EventPool()
    seed = job.shared_seed()
    x, y = _batch(job, batch, seq, dim, seed)
    models = _models(job, dim, layers, heads, seed)
    for name, m in models.items():
        shard_encoder(m, job.groups[name], job.device)
    trainers = {name: Trainer(m, autocast=False) for name, m in models.items()}
    samples = interleaved({name: (lambda t=t: t.step(x, y)) for name, t in trainers.items()},
                          steps, warmup, rounds, job.sync, pool)
    ok, worst = check_grads(trainers, x, y)
    config = {"params": param_count(dim, layers, heads), "batch": batch, "seq": seq, "dim": dim,
              "layers": layers, "precision": "bf16 params, fp32 reduce"}
    row = _row("fsdp2", "fully_shard", config, samples, ok, worst)
    del trainers, models
    torch.cuda.empty_cache()
    progress.step("fsdp2")
    return [row]
