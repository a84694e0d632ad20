"""GPU time per call of what each backend ran (``--kernel-times``).

The sweep's samples are one pair of CUDA events per call, calls back to back:
the GPU's time plus any wait for the host's dispatch.  After a row's timed
rounds, this runs a short loop of each kind's calls under torch.profiler's
CUDA activity and reports the GPU time per call of what ran there (kernels,
copies, memsets), by name.  The split shows where a small call's time goes:
its kernel, or the host that feeds it.  The loop runs outside the timed
rounds, so the row's ratio does not carry the profiler.

A listening profiler changes nccl_core's plain calls a little: each gets an
end event (for the profiler's GPU rows) and the fast path's kernel reports no
ticket, so it skips the system-wide fence and the host-mapped store that end
an unprofiled call (csrc/nvlink/kernels.cu, ``leave``).  The GPU time here is
that path's; a gap to the sample is the host's dispatch or that ending.
"""
from __future__ import annotations

from typing import Callable, Iterable

LOOP = 50  # calls (or graph replays) per kind and row


def kernel_times(calls: dict[str, Callable[[], object]], sync: Callable[[], None],
                 per: int = 1, loop: int = LOOP) -> dict[str, dict]:
    """{kind: {"gpu_us": µs per call, "kernels": {name: µs per call}}} over
    `loop` calls of each; `per` calls in one (a graph replay's count).
    Every rank runs the same loops in the same order (they are collectives)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    out = {}
    for name, call in calls.items():
        sync()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(loop):
                call()
            torch.cuda.synchronize()
        out[name] = summarize(gpu_events(prof.events()), loop * per)
    return out


def gpu_events(events: Iterable) -> list[tuple[str, float]]:
    """(name, µs) of the events that ran on a GPU (torch.autograd.DeviceType.CUDA)."""
    from torch.autograd import DeviceType

    return [(e.name, float(e.time_range.elapsed_us())) for e in events
            if e.device_type == DeviceType.CUDA]


def summarize(events: list[tuple[str, float]], calls: int) -> dict:
    """Per call: the GPU µs of every event by name, and their sum."""
    if calls <= 0:
        raise ValueError(f"calls must be positive, got {calls}")
    kernels: dict[str, float] = {}
    for name, us in events:
        kernels[name] = kernels.get(name, 0.0) + us
    per_call = {name: round(us / calls, 3) for name, us in kernels.items()}
    return {"gpu_us": round(sum(kernels.values()) / calls, 3), "kernels": per_call}
