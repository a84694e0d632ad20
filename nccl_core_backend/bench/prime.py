"""Both backends brought to a running job's steady state before the first row.

nccl_core keeps an operation's CUDA end event until its watchdog sees the
operation finish (every 100 ms) and reuses it afterwards, so a fresh process
creates a new event for each of its first few thousand calls: 1-2 µs of host
time a call more than later (bench/results/pending-one-gpu-launch-floor-1gpu-h200-2026-11-29.md).  Backend nccl's first
calls are slower still: at world 1, rows timed after 8 000 calls measured
0.69-0.82 of `nccl` against 0.63-0.73 when cold, so cold rows flattered
nccl_core.  So before the sweep each backend makes small all-reduces for
PRIME_S of rank 0's clock, twice, with a pause longer than a watchdog sweep
after each pass.  The calls go in chunks, and rank 0 says over the bench's
gloo group after each chunk whether to go on, so every rank makes the same
calls at any speed (NVLink or the sockets of simulated hosts).
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

PRIME_S = 0.15        # per backend and pass: more than a 100 ms sweep's worth of calls
PRIME_CHUNK = 250     # calls between two checks of the clock
PRIME_MAX_CHUNKS = 40  # at most 10 000 calls a backend and pass
PRIME_PASSES = 2
PRIME_PAUSE_S = 0.3


def _go_on(job, started: float) -> bool:
    """Rank 0's verdict, on every rank."""
    flag = torch.tensor([int(time.perf_counter() - started < PRIME_S)], dtype=torch.int32)
    dist.broadcast(flag, 0, group=job.ctrl)
    return bool(flag.item())


def prime(job) -> dict[str, int]:
    """The all-reduces each backend made over the passes, by the name of its
    group (each stops at its own time); the same on every rank."""
    t = torch.zeros(1, device=job.device)
    made = dict.fromkeys(job.groups, 0)
    for _ in range(PRIME_PASSES):
        for name, group in job.groups.items():
            started = time.perf_counter()
            for _ in range(PRIME_MAX_CHUNKS):
                for _ in range(PRIME_CHUNK):
                    dist.all_reduce(t, group=group)
                made[name] += PRIME_CHUNK
                if not _go_on(job, started):
                    break
            job.sync()
        time.sleep(PRIME_PAUSE_S)
        job.sync()
    return made
