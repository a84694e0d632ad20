"""Multi-process GPU test harness: one torchrun launch runs every case.

Launched as ``torchrun --nproc-per-node=N tests/gpu/harness.py --out DIR
[--lazy]``.  Each rank runs the registered cases in order and writes one
JSON line per case to ``DIR/rank<R>.jsonl``; ``test_gpu_suite.py`` turns
them into pytest results.  Starting processes is slow, so cases share one
launch; a stuck case ends the launch through a per-case deadline.

A launch that dies must still name where: each rank prints ``[harness] rank
R start <case>`` before a case and ``[harness] rank R collect after <case>``
before the garbage collection that follows it (objects a case leaves in
reference cycles are destroyed there, not inside a later case), every record
reaches the disk before the next case starts, and a fatal signal prints every
thread's Python stack (faulthandler).  A case past its deadline prints every
thread's Python stack, and with NCCL_CORE_GDB (a gdb command:
scripts/stage-gdb.sh makes one for the GPU host) every thread's native stack
too.  NCCL_CORE_GPU_GC_BETWEEN=0 leaves garbage collection to Python.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import os
import random
import subprocess
import sys
import threading
import time
import traceback

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
# The cases provoke timeouts and go on in the same process: raise, aborting
# the communicator (2), instead of ending the process (1 and 3 have cases of
# their own in test_error_modes.py).  Set, not defaulted: torchrun sets 1
# for its workers where the variable is unset.
os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = os.environ.get("NCCL_CORE_HARNESS_ERROR_HANDLING", "2")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

def _deadline(seconds: float, name: str, stop: threading.Event):
    def watch():
        if not stop.wait(seconds):
            sys.stderr.write(f"[harness] case {name} exceeded {seconds}s; dumping stacks\n")
            faulthandler.dump_traceback(all_threads=True)
            _native_stacks()
            os._exit(3)

    t = threading.Thread(target=watch, daemon=True)
    t.start()


def _native_stacks() -> None:
    """Every thread's native stack of this process, on stderr, where
    NCCL_CORE_GDB names a gdb (a hang in the driver or in NCCL shows only
    there); bounded, so a stuck gdb cannot keep the launch alive."""
    gdb = os.environ.get("NCCL_CORE_GDB")
    if not gdb:
        return
    sys.stderr.flush()
    try:
        subprocess.run([gdb, "-p", str(os.getpid()), "-batch", "-nx", "-ex", "set pagination off",
                        "-ex", "thread apply all bt 40"], stdout=sys.stderr, stderr=sys.stderr,
                       stdin=subprocess.DEVNULL, timeout=90, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        sys.stderr.write(f"[harness] no native stacks: {e}\n")


def _say(rank: int, what: str) -> None:
    sys.stdout.write(f"[harness] rank {rank} {what}\n")
    sys.stdout.flush()


def main() -> int:
    # A SIGSEGV/SIGABRT/SIGBUS prints every thread's Python stack on stderr.
    faulthandler.enable(all_threads=True)
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--lazy", action="store_true", help="no device_id: lazy, unique-id init")
    p.add_argument("--only", default="", help="comma-separated case names")
    p.add_argument("--seed", type=int, default=int(os.environ.get("NCCL_CORE_TEST_SEED", "0")))
    args = p.parse_args()

    import nccl_core_backend  # noqa: F401
    from tests.gpu import cases  # noqa: F401  - registers every case module
    from tests.gpu.cases import common
    from tests.gpu import outcome
    from tests.gpu.registry import CASES, Ctx, Skip

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    from nccl_core_backend import simhosts

    device = simhosts.local_device()  # round robin as simulated hosts where GPUs are few
    torch.cuda.set_device(device)
    if args.lazy:
        dist.init_process_group("cpu:gloo,cuda:nccl_core")
    else:
        dist.init_process_group("cpu:gloo,cuda:nccl_core", device_id=device)
    # Reporting and case barriers go through gloo so a broken backend
    # cannot hide its own failures.
    ctrl = dist.new_group(backend="gloo")
    seed_t = torch.tensor([args.seed or random.randrange(1, 2**31)], dtype=torch.int64)
    dist.broadcast(seed_t, 0, group=ctrl)
    seed = int(seed_t.item())

    os.makedirs(args.out, exist_ok=True)
    mode = "lazy" if args.lazy else "eager"
    only = set(filter(None, args.only.split(",")))
    skip = set(filter(None, os.environ.get("NCCL_CORE_GPU_SKIP", "").split(",")))
    collect_between = os.environ.get("NCCL_CORE_GPU_GC_BETWEEN", "1") != "0"
    out = open(os.path.join(args.out, f"rank{rank}.jsonl"), "w")
    if rank == 0:
        print(f"[harness] world={world} mode={mode} seed={seed} torch={torch.__version__} "
              f"nccl={nccl_core_backend.nccl_version()}", flush=True)
    for index, (name, fn, meta) in enumerate(CASES):
        if (only and name not in only) or name in skip:
            continue
        ctx = Ctx(rank, world, device, seed, args.lazy, case_index=index)
        rec = {"case": name, "world": world, "mode": mode}
        _say(rank, f"start {name}")
        t0 = time.time()
        stop = threading.Event()
        _deadline(meta["timeout"] or float(os.environ.get("NCCL_CORE_CASE_TIMEOUT", "180")), name, stop)
        common.FAILURES.clear()
        try:
            # NCCL_CORE_GPU_ANY_WORLD=1 runs cases below their declared world
            # size too: for finding which cases hold at one rank.
            if world < meta["min_world"] and os.environ.get("NCCL_CORE_GPU_ANY_WORLD") != "1":
                raise Skip(f"needs world size >= {meta['min_world']}")
            if meta["max_world"] and world > meta["max_world"]:
                raise Skip(f"runs at world size <= {meta['max_world']} only")
            if meta["mode"] and meta["mode"] != mode:
                raise Skip(f"runs in {meta['mode']} launches only")
            # NCCL_CORE_GPU_NVLINK_ANYWAY=1 runs them there too (to see why not).
            if (meta["nvlink"] and world > 1 and simhosts.nvlink_peers_missing()
                    and os.environ.get("NCCL_CORE_GPU_NVLINK_ANYWAY") != "1"):
                raise Skip(simhosts.nvlink_peers_missing())
            fn(ctx)
            torch.cuda.synchronize()
            outcome.settle(rec, common.FAILURES)
        except Skip as e:
            outcome.settle(rec, common.FAILURES, skip=str(e))
        except Exception as e:  # noqa: BLE001 - reported, not swallowed
            outcome.settle(rec, common.FAILURES, error=f"{type(e).__name__}: {e}")
            rec["traceback"] = traceback.format_exc()[-4000:]
        finally:
            stop.set()
        rec["seconds"] = round(time.time() - t0, 3)
        out.write(json.dumps(rec) + "\n")
        out.flush()
        os.fsync(out.fileno())
        if rec["status"] == "fail":
            print(f"[harness] rank {rank} FAIL {name}: {rec['error']}", flush=True)
        if collect_between:
            # What the case left in reference cycles (a frame kept by a stored
            # exception's traceback holds its groups and tensors) is destroyed
            # here, under this case's name.
            _say(rank, f"collect after {name}")
            done = threading.Event()
            _deadline(60.0, f"{name} (collect after)", done)
            try:
                gc.collect()
                torch.cuda.synchronize()
            finally:
                done.set()
        dist.barrier(group=ctrl)
    out.close()
    dist.barrier(group=ctrl)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
