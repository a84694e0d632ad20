"""The bench's priming (nccl_core_backend/bench/prime.py) on CPU processes:
ranks whose clocks run at different speeds still make the same calls, and
stop once rank 0's time is up."""

from __future__ import annotations

import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, results) -> None:
    from types import SimpleNamespace as NS

    from nccl_core_backend.bench import prime

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # A rank left waiting on a call its peer never makes fails in 30 s, not hangs.
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    try:
        slow = dist.new_group(backend="gloo")
        real = dist.all_reduce

        def all_reduce(t, group=None):
            if rank == 1:
                time.sleep(0.0005)  # this rank's calls take longer
            return real(t, group=group)

        prime.dist.all_reduce = all_reduce
        prime.PRIME_S, prime.PRIME_CHUNK, prime.PRIME_PAUSE_S = 0.05, 10, 0.0
        job = NS(device=torch.device("cpu"), groups={"a": dist.group.WORLD, "b": slow},
                 ctrl=dist.new_group(backend="gloo"), sync=lambda: None)
        started = time.perf_counter()
        made = prime.prime(job)
        results[rank] = (made, time.perf_counter() - started)
    finally:
        dist.destroy_process_group()


def test_ranks_make_the_same_calls_and_stop_on_rank_0s_clock():
    world = 2
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_rank, args=(world, _free_port(), results), nprocs=world, join=True)
        (made0, s0), (made1, s1) = results[0], results[1]
    assert made0 == made1  # the same counts on every rank: no rank left waiting
    assert set(made0) == {"a", "b"}
    for calls in made0.values():  # whole chunks, each pass at least one, at most the cap
        assert calls % 10 == 0 and 2 * 10 <= calls <= 2 * 40 * 10
    assert s0 < 20 and s1 < 20
