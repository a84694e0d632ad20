"""The NaN check (TORCH_NCCL_NAN_CHECK), both modes.

Default: a kernel on the op's stream scans what the op sends and the NaN it
finds is raised as the group's DistBackendError, naming the op, its sequence
number and the element, by the next call, Work.wait() or the watchdog.
Strict (NCCL_CORE_NAN_CHECK=strict): the op is refused with a ValueError
before anything is sent, and the group stays usable.
Every rank sends the NaN, so every rank raises and no peer is left waiting.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from tests.gpu.cases.common import check, expect_raises, fail, make, reduce_ref
from tests.gpu.cases.torch_tools import _checked_all_reduce, _group
from tests.gpu.registry import case

# (dtype, elements, flat element that holds NaN, elements the view starts
# past its allocation: 1 makes the scan's 16-byte loads impossible)
DETECT = [
    (torch.float32, 1000, 7, 0),
    (torch.float64, 515, 514, 0),  # the last element, in the scan's tail
    (torch.float16, 777, 5, 1),
    (torch.bfloat16, 64, 63, 0),
    (torch.float8_e4m3fn, 4099, 4000, 0),
    (torch.float8_e5m2, 33, 0, 0),
    (torch.float32, 1 << 20, (1 << 20) - 3, 0),  # many blocks; the NaN in the last
]


def _with_nan(ctx, dtype, n, index, offset, salt):
    """Clean random data of `dtype` (a view `offset` elements in), NaN at `index`."""
    base = make(ctx, ctx.rank, torch.float32, n + offset, salt=salt).clamp(-4, 4)
    t = base.to(dtype).to(ctx.device)[offset:]
    t[index] = float("nan")
    return t


@case(min_world=1)
def nan_check_raises_at_next_call(ctx):
    """Every dtype that holds NaN: the op sending it runs, and the group's
    next call raises DistBackendError naming NaN, the op and the element."""
    for i, (dtype, n, index, offset) in enumerate(DETECT):
        g = _group(ctx, nan_check=True)
        _checked_all_reduce(ctx, g, 257, 40 + i, f"{dtype} group before the NaN")
        t = _with_nan(ctx, dtype, n, index, offset, salt=i)
        out = torch.empty(n * ctx.world, dtype=dtype, device=ctx.device)

        def send_then_call():
            # The op runs (no host wait, no refusal); torch's wait() inside
            # it raises if the GPU scanned the data by then, else the next
            # call once the GPU has (ranks sharing a GPU take turns on it).
            dist.all_gather_into_tensor(out, t, group=g)
            torch.cuda.synchronize(ctx.device)
            dist.all_reduce(torch.ones(4, device=ctx.device), group=g)

        e = expect_raises(dist.DistBackendError, send_then_call, "NaN")
        text = str(e)
        if e is not None and (f"element {index})" not in text or "all_gather_into_tensor" not in text
                              or "seq" not in text):
            fail(f"{dtype}: the NaN error does not name the op, seq and element {index}: {text}")
        # Later calls keep failing: the group's error stays.
        expect_raises(dist.DistBackendError,
                      lambda: dist.all_reduce(torch.ones(4, device=ctx.device), group=g))


@case(min_world=1)
def nan_check_wait_raises(ctx):
    """Work.wait() of the op that sent NaN raises once the GPU ran it."""
    g = _group(ctx, nan_check=True)
    t = _with_nan(ctx, torch.bfloat16, 64, 63, 0, salt=3)
    work = dist.all_reduce(t, group=g, async_op=True)
    torch.cuda.synchronize(ctx.device)
    e = expect_raises(dist.DistBackendError, work.wait, "NaN")
    if e is not None and "element 63" not in str(e):
        fail(f"wait(): the NaN error does not name element 63: {e}")


@case(min_world=1)
def nan_check_watchdog_reports(ctx):
    """With no call and no wait, the watchdog finds the NaN and hands it to
    the error policy (under the harness's policy 2 the group fails, its
    communicator kept); Work.wait() then raises it, within the grace."""
    g = _group(ctx, nan_check=True)
    be = g._get_backend(ctx.device)
    _checked_all_reduce(ctx, g, 257, 9, "before the NaN")
    t = _with_nan(ctx, torch.float32, 4096, 100, 0, salt=5)
    work = dist.all_reduce(t, group=g, async_op=True)  # nothing waits on it yet
    torch.cuda.synchronize(ctx.device)
    deadline = time.monotonic() + 1.5  # the watchdog sweeps every 100 ms
    while not be._error_message() and time.monotonic() < deadline:
        time.sleep(0.01)
    if "element 100" not in be._error_message():
        fail(f"the watchdog did not report the NaN within 1.5 s: {be._error_message()!r}")
    expect_raises(dist.DistBackendError, work.wait, "element 100")
    expect_raises(dist.DistBackendError,
                  lambda: dist.all_reduce(torch.ones(4, device=ctx.device), group=g), "NaN")


@case(min_world=1)
def nan_check_clean_traffic(ctx):
    """Clean data of every kind passes untouched and raises nothing later:
    floats with inf (not NaN), receive-only buffers holding NaN, integers."""
    g = _group(ctx, nan_check=True)
    for i, dtype in enumerate((torch.float32, torch.float64, torch.float16, torch.bfloat16)):
        ins = [make(ctx, r, dtype, 1031, salt=60 + i) for r in range(ctx.world)]
        t = ins[ctx.rank].to(ctx.device)
        dist.all_reduce(t, group=g)
        check(t, reduce_ref(ins, "SUM", dtype), dtype, "SUM", ctx.world, f"{dtype} under the check")
    inf = torch.full((64,), float("inf"), device=ctx.device)
    dist.all_reduce(inf, group=g)
    b = torch.full((32,), float(ctx.rank == 0), device=ctx.device)
    if ctx.rank != 0:
        b[:] = float("nan")  # overwritten by the root's data, never sent
    dist.broadcast(b, src=0, group=g)
    if not torch.equal(b.cpu(), torch.ones(32)):
        fail(f"broadcast under the NaN check gave {b.cpu()[:4]}")
    ints = torch.full((16,), ctx.rank + 1, device=ctx.device, dtype=torch.int32)
    dist.all_reduce(ints, group=g)
    if not torch.equal(ints.cpu(), torch.full((16,), ctx.world * (ctx.world + 1) // 2,
                                              dtype=torch.int32)):
        fail("int all_reduce under the NaN check is wrong")
    torch.cuda.synchronize(ctx.device)
    time.sleep(0.5)  # the watchdog looked, and found nothing
    _checked_all_reduce(ctx, g, 4096, 71, "all_reduce after clean traffic")
    work = dist.all_reduce(torch.ones(8, device=ctx.device), group=g, async_op=True)
    work.wait()
    dist.destroy_process_group(g)


@case(min_world=1)
def nan_check_strict_refuses(ctx):
    """Strict mode refuses an op sending NaN with a ValueError naming it and
    the element; receive-only buffers and integers are not read; the group
    works on afterwards."""
    g = _group(ctx, nan_check=True, nan_check_strict=True)
    t = torch.randn(1000, device=ctx.device)
    t[7] = float("nan")
    e = expect_raises(ValueError, lambda: dist.all_reduce(t, group=g), "NaN")
    if e is not None and ("allreduce" not in str(e) or "element 7" not in str(e)):
        fail(f"NaN refusal does not name the op and element: {e}")
    h = torch.randn(64, device=ctx.device, dtype=torch.bfloat16)
    h[63] = float("nan")
    expect_raises(ValueError, lambda: dist.all_gather_into_tensor(
        torch.empty(64 * ctx.world, device=ctx.device, dtype=torch.bfloat16), h, group=g), "NaN")
    b = torch.full((32,), float(ctx.rank == 0), device=ctx.device)
    if ctx.rank != 0:
        b[:] = float("nan")
    dist.broadcast(b, src=0, group=g)
    if not torch.equal(b.cpu(), torch.ones(32)):
        fail(f"broadcast under the strict NaN check gave {b.cpu()[:4]}")
    _checked_all_reduce(ctx, g, 4096, 31, "all_reduce after a refused NaN")
    dist.destroy_process_group(g)
