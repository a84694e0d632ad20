"""Error-handling scenarios, one fresh process group per launch
(test_error_modes.py checks the exit code, stderr and timing).

    torchrun --nproc-per-node=N tests/gpu/error_modes.py SCENARIO

The group's timeout is 3 s.  Scenarios:
- ``stuck``: a spin kernel holds the stream past the timeout and a
  collective waits behind it (no peer needed: it works at one rank); with
  ``--async`` the collective runs on the backend's stream (NCCL's path).
  The script then calls the group again every 0.5 s for 20 s and prints
  ``RAISED <message>`` when a call raises, ``NO ERROR`` if none did.
- ``unreported``: as ``stuck`` but the program sleeps ``--sleep S``
  seconds, then calls ``destroy_process_group()``: within the unraised-error
  grace it must raise (prints ``RAISED``); past it the process has ended.
- ``skip_last``: 2+ ranks, 200 all_reduces of 4 MiB; the last rank skips the
  last one and finishes; the others must not exit 0.
- ``different_op``: 2+ ranks; rank 1 calls all_gather where the others
  broadcast (a desync the report must name).
- ``mismatch_fast``: 2+ ranks; rank 0 all_reduces 1024 floats, the others
  2048 (both on the fast path): the kernels' signatures differ, so the
  call moves no data and the report names both sizes.
- ``skip``: 2+ ranks, the issue-36 shape: 60 small all_reduces (1,019
  floats) checked at a synchronize every 10 calls and at the end; the last
  rank skips the 31st, so rank 0's last one has no partner.  ``--peer
  alive`` keeps the last rank alive 20 s, ``--peer exited`` ends it at once.
  Rank 0 prints ``FAULT at`` before its unmatched call, then ``SYNCED`` if
  its final synchronize returned (silent: the call never completed),
  ``RAISED`` if the program got an error; it must never print ``SYNCED``.
- ``mismatch_size``: 2+ ranks; rank 1 all_reduces 2 MiB where the others
  reduce 1 MiB (NCCL's path): NCCL may complete it or hang; either way the
  error names both sizes (the call check or the desync report).
- ``abort_nccl``: 2 ranks; rank 0's NCCL-path all_reduce has no partner
  (rank 1 never calls it); another thread aborts the group after 1 s; the
  next call must raise at once and the GPU must drain.
- ``sigkill``: 2+ ranks in a loop of all_reduces; the last rank SIGKILLs
  itself at step 50; the others must end (error or torn down) within
  timeout + 5 s.
- ``abort_fast``: a fast-path all_reduce waits behind a spin kernel; another
  thread aborts the group after 1 s; the next call must raise at once and
  the process must not hang (the queued kernel leaves without touching the
  unmapped window).
- ``nan``: with ``TORCH_NCCL_NAN_CHECK=1``, an async all_reduce sends NaN
  (element 5) and nothing waits on it.  ``--call``: the program calls the
  group again after 0.5 s (prints ``RAISED``); else it sleeps 6 s and prints
  ``NO ERROR`` if it is still alive.
- ``heartbeat``: the watchdog is stalled for 60 s (a test hook) with
  ``TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=2``: the monitor must end the process.
TORCH_NCCL_ASYNC_ERROR_HANDLING comes from the environment.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import nccl_core_backend as nc  # noqa: E402,F401
from nccl_core_backend import simhosts  # noqa: E402

TIMEOUT_S = 3


def spin(seconds: float) -> None:
    """A kernel that keeps the current stream busy for about `seconds`."""
    rate = torch.cuda.get_device_properties(torch.cuda.current_device()).clock_rate * 1000
    torch.cuda._sleep(int(seconds * rate))


def call_until_raised(x: torch.Tensor, seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        try:
            dist.all_reduce(x)
        except Exception as e:  # noqa: BLE001 - printed for the test to check
            print(f"RAISED {type(e).__name__}: {e}", flush=True)
            return
        time.sleep(0.5)
    print("NO ERROR", flush=True)


def abort_meanwhile(device: torch.device, x: torch.Tensor) -> None:
    """The group's last call waits on the GPU: another thread aborts the group
    after 1 s; the next call must raise at once and the GPU drain.  Ends the
    process."""
    import threading

    pg = dist.distributed_c10d._get_default_group()._get_backend(device)
    t0 = time.time()
    threading.Timer(1.0, pg.abort).start()
    time.sleep(1.5)
    try:
        dist.all_reduce(x)
    except Exception as e:  # noqa: BLE001
        print(f"RAISED after {time.time() - t0:.1f}s {type(e).__name__}: {e}", flush=True)
    torch.cuda.synchronize()
    print(f"DRAINED after {time.time() - t0:.1f}s", flush=True)
    os._exit(0)


def skip(rank: int, world: int, device: torch.device, peer: str) -> int:
    want = float(sum(range(1, world + 1)))
    outs = []
    try:
        for i in range(60):
            if rank == world - 1 and i == 30:
                continue
            if rank == 0 and i == 59:
                print(f"FAULT at {time.time():.3f}", flush=True)
            y = torch.full((1019,), float(rank + 1), device=device)
            dist.all_reduce(y)
            outs.append(y)
            if (i + 1) % 10 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        wrong = sum(int((y != want).sum()) for y in outs)
        print(f"SYNCED rank {rank} at {time.time():.3f}: {wrong} wrong elements", flush=True)
    except Exception as e:  # noqa: BLE001 - printed for the test to check
        print(f"RAISED rank {rank} at {time.time():.3f} {type(e).__name__}: {e}", flush=True)
        return 1
    if rank == world - 1:
        if peer == "exited":
            os._exit(0)
        time.sleep(20)
    return 0


def main() -> int:
    scenario = sys.argv[1]
    use_async = "--async" in sys.argv
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = simhosts.local_device()
    torch.cuda.set_device(device)
    # Set-up is bounded by the group's timeout too: a loaded host (the tiers
    # run jobs side by side) can take more than 3 s to create a
    # communicator, so the group starts with a long timeout and gets its
    # short one once it works.
    dist.init_process_group("nccl_core", device_id=device, timeout=datetime.timedelta(seconds=120))
    x = torch.ones(1024, device=device)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.group.WORLD._get_backend(device)._set_default_timeout(datetime.timedelta(seconds=TIMEOUT_S))
    print(f"READY rank {rank} at {time.time():.3f}", flush=True)
    if scenario in ("stuck", "unreported"):
        spin(TIMEOUT_S + 12)
        work = dist.all_reduce(x, async_op=use_async)
        if scenario == "stuck":
            call_until_raised(x, 20)
            os._exit(0)
        # The watchdog finds the timeout meanwhile (--sleep: seconds).
        time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]) if "--sleep" in sys.argv
                   else TIMEOUT_S + 1)
        del work
        try:
            dist.destroy_process_group()
        except Exception as e:  # noqa: BLE001
            print(f"RAISED {type(e).__name__}: {e}", flush=True)
        else:
            print("NO ERROR", flush=True)
        os._exit(0)
    if scenario == "late_wait":
        # TORCH_NCCL_BLOCKING_WAIT=1: a call stuck past its timeout, and the
        # program away longer than the unraised-error grace; its wait()
        # raises the timeout, and nothing ended the process meanwhile.
        spin(TIMEOUT_S + 12)
        work = dist.all_reduce(x, async_op=True)
        time.sleep(TIMEOUT_S + 5)
        print("ALIVE after the timeout", flush=True)
        t0 = time.monotonic()
        try:
            work.wait()
        except Exception as e:  # noqa: BLE001 - printed for the test to check
            print(f"RAISED {type(e).__name__}: {e}", flush=True)
        else:
            print("NO ERROR", flush=True)
        # The timeout counts from the call, as backend nccl's: already past.
        print(f"WAITED {time.monotonic() - t0:.2f} s", flush=True)
        os._exit(0)
    if scenario == "unmatched_at_exit":
        # Rank 0 makes a call no other rank makes and leaves (DDP's init
        # broadcast when another rank raised first): the process ends as on
        # backend nccl, cleanly, not by the watchdog's timeout meanwhile.
        work = dist.all_reduce(x, async_op=True) if rank == 0 else None
        dist.destroy_process_group()
        del work
        print(f"FINISHED rank {rank}", flush=True)
        return 0
    if scenario == "skip_last":
        y = torch.ones(1 << 20, device=device)
        for i in range(200):
            if rank == world - 1 and i == 199:
                break
            dist.all_reduce(y)
            if (i + 1) % 20 == 0:
                # A bounded queue: on a loaded host (simulated hosts, jobs
                # side by side) 199 queued 4 MiB calls can outrun the 3 s
                # timeout before the skipped one is reached.
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        dist.destroy_process_group()
        print(f"FINISHED rank {rank}", flush=True)
        return 0
    if scenario == "skip":
        return skip(rank, world, device, sys.argv[sys.argv.index("--peer") + 1])
    if scenario == "different_op":
        y = torch.ones(8, device=device, dtype=torch.int64)
        if rank == 1:
            outs = [torch.empty_like(y) for _ in range(world)]
            dist.all_gather(outs, y)
        else:
            dist.broadcast(y, src=0)
        torch.cuda.synchronize()
        time.sleep(20)
        print(f"FINISHED rank {rank}", flush=True)
        return 0
    if scenario in ("mismatch_fast", "mismatch_size"):
        # (rank that differs, its elements, everyone else's)
        odd, mine, others = (0, 1024, 2048) if scenario == "mismatch_fast" else (1, 1 << 19, 1 << 18)
        y = torch.ones(mine if rank == odd else others, device=device)
        dist.all_reduce(y)
        torch.cuda.synchronize()
        time.sleep(15)  # the watchdog finds the mismatch meanwhile
        print(f"FINISHED rank {rank}", flush=True)
        return 0
    if scenario == "abort_nccl":
        if rank != 0:
            time.sleep(8)
            os._exit(0)
        y = torch.ones(1 << 20, device=device)
        dist.all_reduce(y)  # no partner: waits on the GPU
        abort_meanwhile(device, y)  # the abort ends the kernel
    if scenario == "exit_after_host_timeout":
        if rank != 0:
            time.sleep(8)
            os._exit(0)
        y = torch.ones(1 << 20, device=device)  # 4 MiB: pushed (the test sets the range)
        dist.all_reduce(y)  # sets the push's staging up with a peer that never comes
        return 0  # not reached: the exception above ends the program
    if scenario == "sigkill":
        y = torch.ones(1 << 20, device=device)
        for i in range(100000):
            if rank == world - 1 and i == 50:
                torch.cuda.synchronize()
                print(f"KILLED at {time.time():.3f}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            try:
                dist.all_reduce(y)
                if i % 10 == 0:
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print(f"RAISED at {time.time():.3f} {type(e).__name__}: {e}", flush=True)
                return 1
        return 0
    if scenario == "abort_fast":
        spin(8)
        dist.all_reduce(x)  # fast path, queued behind the spin
        abort_meanwhile(device, x)  # the spin ends; the queued kernel leaves
    if scenario == "nan":
        y = torch.ones(4096, device=device)
        y[5] = float("nan")
        work = dist.all_reduce(y, async_op=True)  # nothing waits on it
        torch.cuda.synchronize()
        print(f"FAULT at {time.time():.3f}", flush=True)
        if "--call" in sys.argv:
            time.sleep(0.5)
            call_until_raised(x, 5)
        else:
            time.sleep(6)
            print("NO ERROR", flush=True)
        del work
        os._exit(0)
    if scenario == "heartbeat":
        pg = dist.distributed_c10d._get_default_group()._get_backend(device)
        pg._stall_watchdog(datetime.timedelta(seconds=60))
        time.sleep(30)
        print("NOT ENDED", flush=True)
        return 0
    raise SystemExit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    sys.exit(main())
