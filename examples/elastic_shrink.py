"""Lose a rank mid-training and go on with the rest (ncclCommShrink).

    python examples/elastic_shrink.py --nproc 4 --victim 3 --kill-at 20 --steps 60

Starts its own workers (torchrun would tear the whole job down when one
worker dies).  The group runs with NCCL_CORE_ERROR_HANDLING=fail and blocking
wait, so when rank `victim` SIGKILLs itself the survivors' next all_reduce
times out into a DistBackendError while their communicator stays usable.  They
agree through the store on who is gone, call dist.shrink_group(..., SHRINK_ABORT)
(which aborts the stuck operation) and keep training on the smaller group.
The survivors' replicas must end identical, the loss must keep going down,
and the victim must be the only process that did not exit cleanly.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import socket
import subprocess
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def worker(args) -> None:
    import torch
    import torch.distributed as dist

    import nccl_core_backend as nc

    rank = int(os.environ["RANK"])
    from nccl_core_backend import simhosts

    device = simhosts.rank_device("elastic_shrink.py")
    opts = nc.Options()
    opts.blocking_wait = True
    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group("nccl_core", device_id=device, pg_options=opts, timeout=timeout)
    store = dist.distributed_c10d._get_default_store()
    group = dist.group.WORLD

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).to(device)
    teacher = torch.nn.Linear(32, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator(device=device).manual_seed(100 + rank)
    losses = []
    step = 0
    while step < args.steps:
        if rank == args.victim and step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        x = torch.randn(64, 32, device=device, generator=gen)
        loss = torch.nn.functional.mse_loss(model(x), teacher(x).detach())
        opt.zero_grad()
        loss.backward()
        try:
            for p in model.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG, group=group)
        except dist.DistBackendError as e:
            print(f"[rank {rank}] step {step}: {str(e)[:120]}", flush=True)
            store.set(f"alive/{step}/{rank}", "1")
            time.sleep(args.timeout)  # the survivors have all reached this point
            world = dist.get_world_size()
            gone = [r for r in range(world) if not store.check([f"alive/{step}/{r}"])]
            print(f"[rank {rank}] shrinking without {gone}", flush=True)
            group = dist.shrink_group(gone, shrink_flags=dist.distributed_c10d.SHRINK_ABORT)
            continue  # redo this step on the smaller group
        opt.step()
        avg = loss.detach()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG, group=group)
        losses.append(avg.item())
        step += 1
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
    sums = [torch.zeros_like(checksum) for _ in range(dist.get_world_size(group))]
    dist.all_gather(sums, checksum, group=group)
    in_sync = all(torch.equal(s, sums[0]) for s in sums)
    if dist.get_rank(group) == 0:
        print(f"elastic_shrink: {dist.get_world_size(group)} ranks left, loss {losses[0]:.4f} -> "
              f"{losses[-1]:.4f}, replicas in sync: {in_sync} -> "
              f"{'OK' if in_sync and losses[-1] < losses[0] else 'FAILED'}", flush=True)
    dist.destroy_process_group()
    if not in_sync or not losses[-1] < losses[0]:
        raise SystemExit(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--victim", type=int, default=3)
    p.add_argument("--kill-at", type=int, default=20)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--timeout", type=float, default=10.0, help="group timeout (s)")
    p.add_argument("--port", type=int, default=0, help="the store's port (0: a free one)")
    args = p.parse_args()
    if "RANK" in os.environ:
        worker(args)
        return
    if not 0 < args.victim < args.nproc:
        p.error("--victim must be a rank other than 0 (rank 0 hosts the store)")
    if args.port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            args.port = s.getsockname()[1]
    procs = []
    for r in range(args.nproc):
        # LOCAL_WORLD_SIZE as torchrun sets it: more ranks than GPUs run as
        # simulated hosts (nccl_core_backend.simhosts).
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.nproc),
                   LOCAL_WORLD_SIZE=str(args.nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
                   NCCL_CORE_ERROR_HANDLING="fail", PYTHONUNBUFFERED="1")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env=env))
    codes = [q.wait(timeout=600) for q in procs]
    ok = codes[args.victim] == -signal.SIGKILL and all(
        c == 0 for r, c in enumerate(codes) if r != args.victim)
    print(f"elastic_shrink: exit codes {codes} -> {'OK' if ok else 'FAILED'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
