"""``--footprint``: the device memory a program's communication costs, nccl_core
beside backend nccl in the same job.

After one unmeasured pass of both programs on backend nccl (what a process
allocates once, such as cuBLAS workspaces, is then in every start), each
program runs on one backend at a time (the caching allocator's peak is
the process's): synchronize and collect, note the bytes allocated, reset the
peak, run, synchronize and collect again.  Peak is the highest allocation
above that start, held what is still allocated after the program dropped
every tensor it made.  Both are the caching allocator's counts, so they show
what a backend keeps alive, not the pool's reserved slack.

Programs:

- ``drop loop``: ``rounds`` times, for one tensor of ``mib`` MiB: all_reduce,
  all_gather_into_tensor (world × the size out), all_reduce with
  ``async_op=True`` then ``wait()``, reduce_scatter_tensor; then every tensor
  is dropped.  Each result is checked on the last round.
- ``fsdp2 step``: the bench's encoder (``--model-*``) under ``fully_shard``
  with bf16 parameters and fp32 reduction, ``--steps`` optimizer steps on the
  group; checked by a finite loss that is the same on both backends.
"""

from __future__ import annotations

import gc
import math
import time

import torch
import torch.distributed as dist

from nccl_core_backend.bench.job import CORE, NCCL

MiB = 1 << 20
PROGRAMS = ("drop loop", "fsdp2 step")


def measure(device, program) -> tuple[dict, object]:
    """Runs `program()` and returns ({peak_mib, held_mib}, what it returned)."""
    torch.cuda.synchronize(device)
    gc.collect()
    start = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    value = program()
    torch.cuda.synchronize(device)
    gc.collect()
    held = torch.cuda.memory_allocated(device) - start
    peak = torch.cuda.max_memory_allocated(device) - start
    return {"peak_mib": round(peak / MiB, 1), "held_mib": round(held / MiB, 1)}, value


def settle(device, limit_s: float = 3.0) -> None:
    """Unmeasured, between programs: waits (at most `limit_s`) until the
    allocated bytes stop falling, so that what a backend frees late (after
    its `held` was read) is not freed inside the next program's window."""
    last = None
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        torch.cuda.synchronize(device)
        gc.collect()
        now = torch.cuda.memory_allocated(device)
        if now == last:
            return
        last = now
        time.sleep(0.2)


def drop_loop(group, device, world: int, rank: int, mib: int, rounds: int) -> bool:
    """The issue-41 program; True when every checked result was right."""
    n = max(mib * MiB // 4 // world, 1) * world  # float32 elements, a multiple of the world
    total = world * (world + 1) / 2
    ok = True
    for r in range(rounds):
        last = r == rounds - 1
        a = torch.full((n,), float(rank + 1), device=device)
        dist.all_reduce(a, group=group)
        gathered = torch.empty(world * n, device=device)
        dist.all_gather_into_tensor(gathered, a, group=group)
        b = torch.full((n,), float(rank + 1), device=device)
        dist.all_reduce(b, group=group, async_op=True).wait()
        scattered = torch.empty(n // world, device=device)
        dist.reduce_scatter_tensor(scattered, b, group=group)
        if last:
            ok = (bool((a == total).all()) and bool((gathered == total).all())
                  and bool((b == total).all()) and bool((scattered == world * total).all()))
        del a, gathered, b, scattered
    return ok


def fsdp2_step(group, device, dim: int, layers: int, heads: int, batch: int, seq: int,
               steps: int, seed: int) -> float:
    """`steps` FSDP2 steps on `group`; the last loss (every rank's mean)."""
    from nccl_core_backend.bench.training import Encoder, shard_encoder

    torch.manual_seed(seed)
    model = Encoder(dim, layers, heads).to(device)
    shard_encoder(model, group, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed * 7 + dist.get_rank(group) + 1)
    loss = torch.zeros((), device=device)
    for _ in range(steps):
        x = torch.randn(batch, seq, dim, device=device, generator=gen)
        loss = (model(x).float() ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean, op=dist.ReduceOp.AVG, group=group)
    value = float(mean)
    del model, opt, loss, mean
    return value


def run_footprint(job, mib: int, rounds: int, model: dict, steps: int, progress) -> list[dict]:
    """One row per program: peak and held MiB per backend (nccl first, then
    nccl_core, so neither inherits the other's cached pool state as its own)."""
    rows = []
    order = (NCCL, CORE)
    seed = job.shared_seed()
    # One unmeasured pass on backend nccl first: what a process allocates once
    # and keeps (cuBLAS workspaces, autograd's and FSDP2's first-use state) is
    # then in both backends' start, not in whichever backend ran first.
    job.sync()
    drop_loop(job.groups[NCCL], job.device, job.world, job.rank, mib, 1)
    fsdp2_step(job.groups[NCCL], job.device, steps=1, seed=seed, **model)
    loop = {}
    for name in order:
        job.sync()
        loop[name] = measure(job.device, lambda g=job.groups[name]: drop_loop(
            g, job.device, job.world, job.rank, mib, rounds))
        settle(job.device)
    rows.append(_row("drop loop", f"{rounds} x {mib} MiB", loop, {n: loop[n][1] for n in order}))
    progress.step("drop loop")
    fsdp = {}
    for name in order:
        job.sync()
        fsdp[name] = measure(job.device, lambda g=job.groups[name]: fsdp2_step(
            g, job.device, steps=steps, seed=seed, **model))
        settle(job.device)
    losses = {n: fsdp[n][1] for n in order}
    finite = all(math.isfinite(v) for v in losses.values())
    same = abs(losses[CORE] - losses[NCCL]) <= 1e-3 * max(abs(losses[NCCL]), 1e-6)
    rows.append(_row("fsdp2 step", f"{steps} steps, dim {model['dim']} x {model['layers']}", fsdp,
                     {n: finite and same for n in order}))
    progress.step("fsdp2 step")
    torch.cuda.empty_cache()
    return rows


def _row(program: str, label: str, measured: dict, ok: dict) -> dict:
    mem = {name: measured[name][0] for name in measured}
    base = mem[NCCL]["peak_mib"]
    return {"program": program, "label": label, **mem, "correct": ok,
            "peak_ratio": round(mem[CORE]["peak_mib"] / base, 3) if base > 0 else None}


def footprint_table(rows: list[dict]) -> str:
    lines = ["| program | size | nccl peak MiB | nccl held MiB | nccl_core peak MiB | "
             "nccl_core held MiB | peak ratio | correct |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        ratio = "-" if r["peak_ratio"] is None else f"{r['peak_ratio']:.2f}"
        ok = "yes" if all(r["correct"].values()) else "WRONG " + ",".join(
            k for k, v in r["correct"].items() if not v)
        lines.append(f"| {r['program']} | {r['label']} | {r[NCCL]['peak_mib']:.0f} | {r[NCCL]['held_mib']:.0f} | "
                     f"{r[CORE]['peak_mib']:.0f} | {r[CORE]['held_mib']:.0f} | {ratio} | {ok} |")
    return "\n".join(lines)
