"""Runs ``python -m nccl_core_backend.bench``'s main() on CPU processes over gloo.

    python tests/cpu/bench_cpu_driver.py WORLD [--break-op OP] -- [bench arguments]

Used by test_bench_main.py.  The CUDA-only pieces are swapped for CPU ones
(two gloo groups stand in for the backends, wall-clock time for CUDA events);
everything else, from argument parsing to the exit status, is the command's
own code.  ``--break-op`` makes the stand-in nccl_core skip that op.
"""

from __future__ import annotations

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def _worker(rank: int, world: int, port: int, broken: str, argv: list) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    import nccl_core_backend as nc
    import nccl_core_backend.bench.__main__ as main_mod
    from nccl_core_backend.bench import collectives, job, prime, sweep, timing, tooling, training
    from nccl_core_backend.bench.job import CORE, NCCL, Job

    def start_job(local, high_priority=()):
        dist.init_process_group("gloo")
        j = Job(device=torch.device("cpu"), rank=dist.get_rank(), world=dist.get_world_size(),
                groups={CORE: dist.group.WORLD, NCCL: dist.new_group(backend="gloo")},
                high_priority=list(high_priority))  # as asked: gloo has no streams
        j.ctrl = dist.new_group(backend="gloo")
        j.sync = lambda: dist.barrier(group=j.ctrl)
        return j

    def wall_clock(fn, n, pool):
        out = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1e6)
        return out

    def tooling_groups(world):
        # Gloo groups stand in for each (backend, setting) pair.
        return {(b, s): dist.new_group(backend="gloo")
                for s in tooling.SETTINGS for b in (CORE, NCCL)}

    def loop_wall_clock(group, t, iters):
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t, group=group)
        us = (time.perf_counter() - start) / iters * 1e6
        return us, us

    main_mod.check_cuda = lambda: torch.device("cpu")
    tooling.make_groups = tooling_groups
    class NoHook:  # gloo runs no completion hooks: the "hook" rows time its group alone
        def drain(self, issued):
            pass

    tooling.register_hooks = lambda groups: ({(b, "hook"): NoHook() for b in (CORE, NCCL)}, None)
    tooling.loop_us = loop_wall_clock
    job.start_job = start_job
    timing.time_calls = wall_clock
    sweep.EventPool = training.EventPool = lambda: None
    prime.PRIME_CHUNK, prime.PRIME_PAUSE_S = 5, 0.0  # gloo keeps no events
    torch.cuda.get_device_name = lambda device=None: "CPU stand-in"
    nc.nccl_version = lambda: (0, 0, 0)
    if broken:
        real = collectives.Case.call

        def call(self, group):
            if not (self.op == broken and group is dist.group.WORLD):
                real(self, group)

        collectives.Case.call = call
    main_mod.main(argv)


def main() -> int:
    import torch.multiprocessing as mp

    args = sys.argv[1:]
    world = int(args.pop(0))
    broken = ""
    if args[0] == "--break-op":
        broken = args[1]
        args = args[2:]
    if args and args[0] == "--":
        args = args[1:]
    import socket

    # A port the system says is free now (a pid-derived one collided at times).
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(r, world, port, broken, args)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    codes = {p.exitcode for p in procs}
    return codes.pop() if len(codes) == 1 else 99


if __name__ == "__main__":
    sys.exit(main())
