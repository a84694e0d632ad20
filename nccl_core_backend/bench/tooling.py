"""``--tooling``: what torch's debugging switches cost on each backend.

Four settings, each a group of its own over the same ranks on both backends:

============  ==============================  =====================================
setting       nccl_core                       nccl
============  ==============================  =====================================
default       ``Options()``                   no variable
timing        ``Options.enable_timing``       ``TORCH_NCCL_ENABLE_TIMING=1``
nan check     ``Options.nan_check``           ``TORCH_NCCL_NAN_CHECK=1``
hook          an on-completion hook           the same hook, with timing on (backend
                                              nccl refuses a hook without it)
============  ==============================  =====================================

A sample is the time per call of a loop of float32 SUM all_reduces, timed
until the GPU finished them (the host's cost per call where that is the
bottleneck, as in a training step's small collectives), and until the last
call returned (``host_us``: what the switches cost the host, also where the
GPU is the bottleneck, as with ranks sharing one GPU); the settings and
backends take turns in rounds, and the median of the rounds is reported.
Before timing, every group's all_reduce of fresh random integers is checked
against a float64 CPU sum on every element.  Where backend nccl takes no
hook at all (torch >= 2.15's nccl2), the hook rows are left out and the
result's ``meta.tooling_left_out`` says why.
"""

from __future__ import annotations

import os
import statistics
import time

import torch
import torch.distributed as dist

from nccl_core_backend.bench.job import CORE, NCCL

SETTINGS = ("default", "timing", "nan check", "hook")
DEFAULT_ITERS = 300
# What backend nccl reads at group creation for each setting.
_NCCL_ENV = {"default": {}, "timing": {"TORCH_NCCL_ENABLE_TIMING": "1"},
             "nan check": {"TORCH_NCCL_NAN_CHECK": "1"},
             "hook": {"TORCH_NCCL_ENABLE_TIMING": "1"}}


def _core_group(ranks: list, setting: str):
    import nccl_core_backend as nc

    o = nc.Options()
    o.enable_timing = setting == "timing"
    o.nan_check = setting == "nan check"
    return dist.new_group(ranks, backend="nccl_core", pg_options=o)


def _nccl_group(ranks: list, setting: str):
    env = _NCCL_ENV[setting]
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return dist.new_group(ranks, backend="nccl")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class HookCount:
    """The registered hook: counts the ops it was told of, nothing more, so
    the row measures the mechanism."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, _info) -> None:
        self.seen += 1

    def drain(self, issued: int, limit_s: float = 5.0) -> None:
        """Waits until the hook ran for all `issued` ops: its thread takes the
        GIL, and a backlog would slow whichever group is timed next."""
        deadline = time.monotonic() + limit_s
        while self.seen < issued and time.monotonic() < deadline:
            time.sleep(0.0005)


def make_groups(world: int) -> dict:
    """(backend, setting) -> group, created in the same order on every rank."""
    ranks = list(range(world))
    groups = {}
    for setting in SETTINGS:
        groups[(CORE, setting)] = _core_group(ranks, setting)
        groups[(NCCL, setting)] = _nccl_group(ranks, setting)
    return groups


def register_hooks(groups: dict) -> tuple[dict, str | None]:
    """A HookCount on each backend's "hook" group: (key -> HookCount, None).
    Where backend nccl takes no on-completion hook (torch >= 2.15's nccl2
    refuses one), neither backend's hook is timed: ({}, why).  nccl_core
    refusing one is an error of its own and raises."""
    nccl_count = HookCount()
    try:
        groups[(NCCL, "hook")]._register_on_completion_hook(nccl_count)
    except RuntimeError as e:
        return {}, f"backend nccl refuses an on-completion hook ({e})"
    core_count = HookCount()
    groups[(CORE, "hook")]._register_on_completion_hook(core_count)
    return {(NCCL, "hook"): nccl_count, (CORE, "hook"): core_count}, None


def check_group(job, group, numel: int) -> bool:
    """One all_reduce of fresh random integers, every element against float64."""
    seed = job.shared_seed()
    gen = torch.Generator().manual_seed(seed + job.rank)
    mine = torch.randint(-8, 9, (numel,), generator=gen, dtype=torch.int64)
    expected = torch.zeros(numel, dtype=torch.float64)
    for r in range(job.world):
        other = torch.Generator().manual_seed(seed + r)
        expected += torch.randint(-8, 9, (numel,), generator=other, dtype=torch.int64).double()
    t = mine.to(torch.float32).to(job.device)
    dist.all_reduce(t, group=group)
    return bool(torch.equal(t.cpu().double(), expected))


def loop_us(group, t: torch.Tensor, iters: int) -> tuple[float, float]:
    """µs per call of `iters` all_reduces: until the last call returned (the
    host's cost, what the switches add), and until the GPU finished them."""
    torch.cuda.synchronize(t.device)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t, group=group)
    issued = time.perf_counter()
    torch.cuda.synchronize(t.device)
    done = time.perf_counter()
    return (issued - start) / iters * 1e6, (done - start) / iters * 1e6


def run_tooling(job, sizes: list[int], iters: int, warmup: int, rounds: int,
                progress) -> tuple[list, dict]:
    """One row per (setting, size): both backends' µs per call, their ratio,
    checks; and the settings left out, setting -> why."""
    groups = make_groups(job.world)
    hooks, refused = register_hooks(groups)
    left_out = {"hook": refused} if refused else {}
    settings = [s for s in SETTINGS if s not in left_out]
    groups = {key: g for key, g in groups.items() if key[1] in settings}
    issued = {key: 0 for key in groups}  # ops per group, for the hooks' drain

    def settle(key) -> None:
        if key in hooks:
            hooks[key].drain(issued[key])
        job.sync()

    correct = {}
    for key, g in groups.items():
        correct[key] = check_group(job, g, 4099)
        issued[key] += 1
    order = list(groups)
    rows = []
    for size in sizes:
        # Zeros: a SUM loop stays finite, and every setting sends alike.
        t = torch.zeros(max(1, size // 4), device=job.device)
        samples: dict = {key: [] for key in order}
        for key in order:
            for _ in range(warmup):
                dist.all_reduce(t, group=groups[key])
            issued[key] += warmup
            settle(key)
        for r in range(rounds):
            for key in order if r % 2 == 0 else reversed(order):
                job.sync()
                samples[key].append(loop_us(groups[key], t, iters))
                issued[key] += iters
                settle(key)
        for setting in settings:
            core, nccl = ({"us": statistics.median(s for _, s in samples[(b, setting)]),
                           "host_us": statistics.median(h for h, _ in samples[(b, setting)])}
                          for b in (CORE, NCCL))
            rows.append({"setting": setting, "bytes": t.numel() * 4, "iters": iters,
                         "rounds": rounds, CORE: core, NCCL: nccl,
                         "ratio": core["us"] / nccl["us"],
                         "host_ratio": core["host_us"] / nccl["host_us"],
                         "correct": {CORE: correct[(CORE, setting)],
                                     NCCL: correct[(NCCL, setting)]}})
            progress.step(f"tooling {setting} {size}B")
    return rows, left_out
