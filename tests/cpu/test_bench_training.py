"""The bench's DDP and FSDP2 workloads on CPU processes over gloo.

The GPU runs both backends; here two gloo groups stand in for them, so the
workload code (model, DDP and fully_shard set-up, steps, the gradient check)
runs for real on this torch, and a DDP whose nccl_core side skips the
reduction is caught by the check.  Timing is CUDA-only and is replaced by a
wall-clock stand-in.
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from nccl_core_backend.bench import training


def test_default_model_has_about_100m_parameters():
    n = training.param_count(1024, 8, 16)
    assert 95e6 < n < 110e6


def _wall_clock(calls, iters, warmup, rounds, sync, pool):
    out = {name: [] for name in calls}
    for fn in calls.values():
        for _ in range(warmup):
            fn()
    for name, fn in calls.items():
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - t) * 1e6)
    return out


class _Quiet:
    def step(self, label):
        pass


def _worker(rank, world, port, broken, q):
    import torch.distributed as dist

    from nccl_core_backend.bench.job import CORE, NCCL, Job

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    job = Job(device=torch.device("cpu"), rank=rank, world=world,
              groups={CORE: dist.group.WORLD, NCCL: dist.new_group(backend="gloo")})
    job.ctrl = dist.new_group(backend="gloo")
    training.interleaved = _wall_clock
    if broken:
        import torch.nn.parallel as tnp

        real = tnp.DistributedDataParallel

        def ddp(module, **kw):
            d = real(module, **kw)
            if kw.get("process_group") is dist.group.WORLD:
                def skip(state, bucket):  # the bucket comes back unreduced
                    fut = torch.futures.Future()
                    fut.set_result(bucket.buffer())
                    return fut

                d.register_comm_hook(None, skip)
            return d

        tnp.DistributedDataParallel = ddp
    kw = dict(dim=64, layers=2, heads=4, batch=2, seq=16, steps=2, warmup=1, rounds=1, progress=_Quiet())
    rows = training.run_ddp(job, [0.01, 25], **kw)
    if not broken:
        rows += training.run_fsdp(job, **kw)
    q.put([(r["workload"], r["label"], r["correct"], r["ratio"], r.get("comm_ratio", 1.0)) for r in rows])
    dist.destroy_process_group()


def _run(world, broken):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 31500 + (os.getpid() % 2000) + world + (7 if broken else 0)
    procs = [ctx.Process(target=_worker, args=(r, world, port, broken, q)) for r in range(world)]
    for p in procs:
        p.start()
    outs = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return outs


@pytest.mark.parametrize("world", [1, 2])
def test_workloads_pass_their_checks(world):
    for rows in _run(world, broken=False):
        assert [(w, label) for w, label, *_ in rows] == [
            ("ddp", "bucket=0.01MiB"), ("ddp", "bucket=25MiB"), ("fsdp2", "fully_shard")]
        for _, _, correct, ratio, _ in rows:
            assert correct == {"nccl_core": True} and ratio > 0


def test_ddp_check_catches_a_missing_reduction():
    for rows in _run(2, broken=True):
        assert all(correct == {"nccl_core": False} for _, _, correct, _, _ in rows), rows
