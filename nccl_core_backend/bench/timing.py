"""GPU timing: per-call CUDA events, rounds that alternate the backends, medians.

Every call is bracketed by its own pair of events on the current stream, so a
sample is the time from the moment the GPU could have started the call to the
moment it finished: the GPU time of the call, plus the host's dispatch cost
when the GPU was waiting for it.  The backends take turns in rounds (and the
order flips every round), so a clock change or a noisy neighbour lands on
both, and the median of all samples is reported.
"""

from __future__ import annotations

import statistics
from typing import Callable

import torch


class EventPool:
    """Start/end events, created once and reused (creating an event is not free)."""

    def __init__(self) -> None:
        self.starts: list = []
        self.ends: list = []

    def take(self, n: int) -> tuple[list, list]:
        while len(self.starts) < n:
            self.starts.append(torch.cuda.Event(enable_timing=True))
            self.ends.append(torch.cuda.Event(enable_timing=True))
        return self.starts[:n], self.ends[:n]


def time_calls(fn: Callable[[], object], n: int, pool: EventPool) -> list[float]:
    """µs of each of `n` calls of fn(), one event pair per call."""
    starts, ends = pool.take(n)
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    ends[-1].synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def interleaved(calls: dict[str, Callable[[], object]], iters: int, warmup: int, rounds: int,
                sync: Callable[[], None], pool: EventPool) -> dict[str, list[float]]:
    """Samples (µs) of each named call: `warmup` untimed calls each, then
    `rounds` rounds in which every call runs its share of `iters` timed
    calls, the order reversed every other round.  `sync()` runs before each
    share (it lines the ranks up, so no rank's samples include waiting for a
    peer that is still busy with the other backend)."""
    names = list(calls)
    for name in names:
        for _ in range(warmup):
            calls[name]()
    rounds = max(1, min(rounds, iters))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        share = iters // rounds + (1 if r < iters % rounds else 0)
        for name in names if r % 2 == 0 else reversed(names):
            sync()
            samples[name] += time_calls(calls[name], share, pool)
    return samples


def summary(samples: list[float]) -> dict:
    """Median and spread of µs samples."""
    s = sorted(samples)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))]

    return {"us": statistics.median(s), "p10_us": q(0.1), "p90_us": q(0.9), "samples": len(s)}
