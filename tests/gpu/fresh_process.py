"""Scenarios that need a fresh process each (torchrun launches from
test_fresh_process.py):

- ``detail``: ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (torch wraps nccl_core in its
  ``_ProcessGroupWrapper``): ``get_communicator()`` finds the backend under
  the wrapper, and ``new_group`` with a device-bound default group splits
  (members) while the ranks left out take part with no color: no hang.
- ``batch_self``: the first operation of a lazy group is a batch of send/recv
  to the rank itself, with no ``set_device``: the communicator goes on the
  tensors' device (not device 0 on every rank).
- ``timeout``: a blocking wait that times out raises ``DistBackendError``
  with backend nccl's wording (``caught collective operation timeout``).
- ``profiling``: under ``torch.profiler`` every op is an asynchronous record
  named like backend nccl's (``nccl_core:all_reduce``), fast path included.
- ``drop_after_use``: the input of a plain collective, in NCCL memory
  (``nc.torch.empty``), is dropped right after the call while the GPU is
  still busy before it; its memory must stay until the op ran (ncclMemFree
  is not stream-ordered: freed at once, the op reads unmapped memory and the
  process dies with an illegal address).  Read back at once, every element.
- ``raw_paths_differ``: the raw collectives of a communicator no group gave
  an engine choose their paths from the process's
  ``NCCL_CORE_*FAST_PATH_MAX_BYTES``; where those differ between ranks, the
  first such call raises ``NcclInvalid`` on every rank, naming the ranks,
  and so does every later one (not one rank on our kernel and its peers on
  NCCL's, waiting for each other).

Prints ``OK <scenario>`` on success; raises otherwise.
"""

from __future__ import annotations

import datetime
import os
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import simhosts  # noqa: E402


def detail(rank: int, world: int, device: torch.device) -> None:
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL, "run with TORCH_DISTRIBUTED_DEBUG=DETAIL"
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device)
    wrapped = dist.distributed_c10d._get_default_group()._get_backend(device)
    assert type(wrapped).__name__ == "_ProcessGroupWrapper", type(wrapped).__name__
    comm = nc.get_communicator()
    assert comm.nranks == world and comm.rank == rank, (comm.nranks, comm.rank)
    members = list(range(world - 1)) or [0]
    sub = dist.new_group(members)
    x = torch.full((1000,), float(rank + 1), device=device)
    if rank in members:
        dist.all_reduce(x, group=sub)
        want = sum(r + 1 for r in members)
        assert torch.equal(x.cpu(), torch.full((1000,), float(want))), x[:4]
        assert nc.get_communicator(sub).nranks == len(members)
    y = torch.full((10,), float(rank), device=device)
    dist.all_reduce(y)
    assert torch.equal(y.cpu(), torch.full((10,), float(sum(range(world))))), y
    dist.destroy_process_group()


def batch_self(rank: int, world: int, device: torch.device) -> None:
    dist.init_process_group("nccl_core")  # lazy, and no set_device
    send = torch.arange(100, device=device, dtype=torch.float32) + rank
    recv = torch.empty_like(send)
    ops = [dist.P2POp(dist.isend, send, rank), dist.P2POp(dist.irecv, recv, rank)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert torch.equal(recv.cpu(), send.cpu()), recv[:4]
    assert nc.get_communicator().device == device, nc.get_communicator().device
    dist.barrier()
    dist.destroy_process_group()


def timeout(rank: int, world: int, device: torch.device) -> None:
    os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device,
                            timeout=datetime.timedelta(seconds=20))
    x = torch.ones(10, device=device)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    ctrl = dist.new_group(backend="gloo")
    if rank != 0:
        try:
            dist.all_reduce(x, async_op=True).wait(datetime.timedelta(seconds=0.5))
        except dist.DistBackendError as e:
            assert "caught collective operation timeout" in str(e), str(e)
        else:
            raise AssertionError("the lone all_reduce did not time out")
    dist.barrier(group=ctrl)
    print(f"OK timeout rank {rank}", flush=True)
    os._exit(0)  # the aborted communicator is not torn down collectively


def profiling(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device)
    small, large = torch.ones(256, device=device), torch.ones(1 << 20, device=device)
    dist.all_reduce(small)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(3):
            dist.all_reduce(small)          # fast path
            dist.all_reduce(large)          # NCCL
            dist.broadcast(large, src=0, async_op=True).wait()
        torch.cuda.synchronize()
        time.sleep(0.5)  # the watchdog closes the records
    names = [e.name for e in prof.events()]
    assert names.count("nccl_core:all_reduce") >= 6, sorted(set(names))[:40]
    assert names.count("nccl_core:broadcast") >= 3, sorted(set(names))[:40]
    dist.destroy_process_group()


def drop_after_use(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device)
    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    n = 1 << 20
    for it in range(40):
        z = a
        for _ in range(8):  # keep the stream busy past the drop below
            z = z @ a
        x = nc.torch.empty(n, device=device)
        x.fill_(float(rank + 1 + it))
        x += (z[0, 0] * 0).float()  # ordered after the chain
        out = torch.empty(world * n, device=device)
        dist.all_gather_into_tensor(out, x)
        del x  # its last use is still queued
        churn = [nc.torch.empty(n, device=device).fill_(-1.0) for _ in range(2)]  # reuse pressure
        want = torch.cat([torch.full((n,), float(r + 1 + it)) for r in range(world)])
        got = out.cpu()
        assert torch.equal(got, want), f"iteration {it}: {(got != want).sum().item()} wrong elements"
        del churn
    dist.destroy_process_group()


def raw_paths_differ(rank: int, world: int, device: torch.device) -> None:
    torch.cuda.set_device(device)
    dist.init_process_group("nccl_core", device_id=device)
    opts = nc.Options()
    opts.fast_path_max_bytes = 0  # every dist call to NCCL: no engine for its communicator
    opts.push_max_bytes = 0
    g = dist.new_group(list(range(world)), backend="nccl_core", pg_options=opts)
    dist.all_reduce(torch.ones(1, device=device), group=g)  # its communicator exists
    comm = nc.get_communicator(g)
    # Read at the first raw call of such a communicator: rank 0 would take
    # our kernel for eager calls up to 64 KiB, the others never.
    os.environ["NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"] = str(64 << 10) if rank == 0 else "0"
    x = torch.full((1024,), float(rank + 1), device=device)
    for call in range(2):
        try:
            comm.allreduce(x, x, nc.SUM)
        except nc.NcclInvalid as e:
            assert "differ" in str(e) and f"rank(s) {', '.join(map(str, range(1, world)))}" in str(e), e
        else:
            raise AssertionError(f"raw call {call}: no NcclInvalid where the ranks' paths differ")
    assert torch.equal(x.cpu(), torch.full((1024,), float(rank + 1))), "a refused call wrote"
    y = torch.full((10,), float(rank), device=device)
    dist.all_reduce(y, group=g)  # the communicator itself is fine
    assert torch.equal(y.cpu(), torch.full((10,), float(sum(range(world))))), y
    dist.destroy_process_group()


def main() -> int:
    scenario = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = simhosts.local_device()
    scenarios = {"detail": detail, "batch_self": batch_self, "timeout": timeout,
                 "profiling": profiling, "drop_after_use": drop_after_use,
                 "raw_paths_differ": raw_paths_differ}
    scenarios[scenario](rank, world, device)
    print(f"OK {scenario} rank {rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
