"""What torch's NCCL users reach for, used the way their programs use it:
the profiler's record_param_comms events, op timing, completion hooks,
ephemeral timeouts, time estimates, ProcessGroupNCCL.Options,
counters and statistics."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, expect_raises, fail, make, reduce_ref
from tests.gpu.registry import Skip, case


def _backend(group=None, device=None):
    group = group if group is not None else dist.group.WORLD
    return group._get_backend(device if device is not None else torch.device("cuda"))


def _group(ctx, **fields):
    """A fresh nccl_core group over every rank with these Options fields."""
    opts = nc.Options()
    for k, v in fields.items():
        setattr(opts, k, v)
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)


def _numbers(text) -> list[int]:
    """The integers in a trace argument such as '[1, 2]'."""
    return [int(x) for x in re.findall(r"-?\d+", str(text))]


def _inputs(ctx, n, salt):
    return [make(ctx, r, torch.float32, n, salt=salt) for r in range(ctx.world)]


def _checked_all_reduce(ctx, group, n, salt, what):
    """A SUM all_reduce of fresh data on `group`, every element checked."""
    ins = _inputs(ctx, n, salt)
    t = ins[ctx.rank].to(ctx.device)
    dist.all_reduce(t, group=group)
    check(t, reduce_ref(ins, "SUM", torch.float32), torch.float32, "SUM", ctx.world, what)


@case(min_world=1)
def tools_profiler_param_comms(ctx):
    """A profiler trace shows record_param_comms with our sizes, dtype and
    group, and nccl_core:<op> records, as tools (HTA, Inductor) parse them."""
    from torch.profiler import ProfilerActivity, profile

    w, n = ctx.world, 4096
    ins = _inputs(ctx, n, 11)
    t = ins[ctx.rank].to(ctx.device)
    gathered = torch.empty(n * w, device=ctx.device)
    m = 1024  # reduce_scatter: rank q's chunk r is make(q, salt=12 + r)
    scattered = torch.empty(m, device=ctx.device)
    rs_in = torch.cat([make(ctx, ctx.rank, torch.float32, m, salt=12 + r)
                       for r in range(w)]).to(ctx.device)
    splits = [r + 1 for r in range(w)]            # this rank sends r+1 elements to rank r
    recv_splits = [ctx.rank + 1] * w               # and gets rank+1 from everyone
    a2a_in = torch.arange(sum(splits), dtype=torch.float32, device=ctx.device) + 1000 * ctx.rank
    a2a_out = torch.empty(sum(recv_splits), device=ctx.device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        dist.all_reduce(t)
        dist.all_gather_into_tensor(gathered, ins[ctx.rank].to(ctx.device))
        dist.reduce_scatter_tensor(scattered, rs_in)
        dist.all_to_all_single(a2a_out, a2a_in, recv_splits, splits)
        torch.cuda.synchronize()
    check(t, reduce_ref(ins, "SUM", torch.float32), torch.float32, "SUM", w, "profiled all_reduce")
    check(gathered, torch.cat(ins), torch.float32, "SUM", w, "profiled all_gather")
    rs_ref = sum(make(ctx, q, torch.float32, m, salt=12 + ctx.rank).double() for q in range(w))
    check(scattered, rs_ref, torch.float32, "SUM", w, "profiled reduce_scatter")
    a2a_ref = torch.cat([torch.arange(sum(range(1, ctx.rank + 1)),
                                      sum(range(1, ctx.rank + 2))).double() + 1000 * q
                         for q in range(w)])
    check(a2a_out, a2a_ref, torch.float32, "SUM", w, "profiled all_to_all_single")

    path = os.path.join(tempfile.gettempdir(), f"nccl_core_trace_{os.getpid()}.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(path)
    comms = [e for e in events if e.get("name") == "record_param_comms"]
    by_name = {}
    for e in comms:
        by_name.setdefault(e.get("args", {}).get("Collective name"), []).append(e["args"])
    expected = {
        "allreduce": (n, n, None),
        "_allgather_base": (n, n * w, None),
        "_reduce_scatter_base": (m * w, m, None),
        "alltoall_base": (sum(splits), sum(recv_splits), splits),
    }
    group_name = dist.group.WORLD.group_name
    for name, (nin, nout, in_split) in expected.items():
        found = by_name.get(name)
        if not found:
            fail(f"no record_param_comms event for {name}; seen: {sorted(map(str, by_name))}")
            continue
        a = found[0]
        if a.get("In msg nelems") != nin or a.get("Out msg nelems") != nout:
            fail(f"{name}: in/out nelems {a.get('In msg nelems')}/{a.get('Out msg nelems')}, "
                 f"expected {nin}/{nout}")
        if a.get("dtype") != "Float":
            fail(f"{name}: dtype {a.get('dtype')!r}")
        if a.get("Group size") != w:
            fail(f"{name}: group size {a.get('Group size')!r}, expected {w}")
        if str(a.get("Process Group Name")) != str(group_name):
            fail(f"{name}: process group name {a.get('Process Group Name')!r}, "
                 f"expected {group_name!r}")
        if in_split is not None and _numbers(a.get("In split size")) != in_split:
            fail(f"{name}: in split size {a.get('In split size')!r}, expected {in_split}")
    ours = {e["name"] for e in events if str(e.get("name", "")).startswith("nccl_core:")}
    for title in ("nccl_core:all_reduce", "nccl_core:_all_gather_base",
                  "nccl_core:_reduce_scatter_base", "nccl_core:all_to_all_base"):
        if title not in ours:
            fail(f"no {title} record in the trace; seen {sorted(ours)}")


@case(min_world=1)
def tools_timing_duration(ctx):
    """work._get_duration() with timing on: the GPU time of the op, within
    CUDA events recorded around it on the same stream; refused when off."""
    w = _backend()
    t = torch.ones(1024, device=ctx.device)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    if not w.nccl_core_options.enable_timing:
        expect_raises(RuntimeError, work._get_duration, "TORCH_NCCL_ENABLE_TIMING")
    g = _group(ctx, enable_timing=True)
    be = _backend(g)
    dist.all_reduce(torch.ones(8, device=ctx.device), group=g)  # the communicator exists
    sid, dev, dtype = be._stream()
    stream = torch.cuda.Stream(stream_id=sid, device_index=dev, device_type=dtype)
    results = []
    for numel in (1 << 20, 1 << 26):  # 4 MiB and 256 MiB per rank
        ins = torch.full((numel,), float(ctx.rank + 1), device=ctx.device)
        out = torch.empty(numel * ctx.world, device=ctx.device)
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(stream)
        work = dist.all_gather_into_tensor(out, ins, group=g, async_op=True)
        e1.record(stream)
        work.wait()
        torch.cuda.synchronize()
        d = work._get_duration()
        outer = e0.elapsed_time(e1)
        results.append(d)
        if not (0 < d <= outer * 1.05 + 0.02):
            fail(f"duration {d} ms outside (0, {outer} ms] measured around it ({numel} elements)")
        ref = torch.cat([torch.full((numel,), float(r + 1)) for r in range(ctx.world)])
        if not torch.equal(out.cpu(), ref):
            fail(f"timed all_gather of {numel} elements is wrong")
    # 256 MiB per rank moves at least 2 x 256 MiB through HBM: above
    # 0.1 ms at any bandwidth an H100/H200 has (< 5.4 TB/s), so a duration
    # that times less than the op fails here.  No lower bound relative to the
    # events around the op, nor an order between the two sizes: beside other
    # jobs the host can take milliseconds between the first event and the
    # op's launch (5.7 ms around a 0.13 ms op), and the 4 MiB op can wait
    # for SMs longer than the 256 MiB one runs.  A stale duration is caught by
    # the upper bound measured around each op.
    if results[1] < 0.1:
        fail(f"256 MiB gather timed at {results[1]} ms (4 MiB: {results[0]} ms)")
    # A plain call (the caller's stream; where the fast path runs, tracked by
    # its kernel's report, not watched) is timed the same way, many times
    # over with pooled events, each read back at once.
    opts = dist.AllreduceOptions()
    opts.asyncOp = False
    current = torch.cuda.current_stream(ctx.device)
    t = torch.ones(4096, device=ctx.device)
    for i in range(200):
        t.fill_(float(ctx.rank + 1))
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(current)
        work = be.allreduce([t], opts)
        e1.record(current)
        work.wait()
        e1.synchronize()
        d, outer = work._get_duration(), e0.elapsed_time(e1)
        if not (0 < d <= outer * 1.05 + 0.02):
            fail(f"plain call {i}: duration {d} ms outside (0, {outer} ms] measured around it")
            break
    if not torch.equal(t.cpu(), torch.full((4096,), float(ctx.world * (ctx.world + 1) // 2))):
        fail("the last timed plain all_reduce gave a wrong sum")
    dist.destroy_process_group(g)


@case(min_world=1)
def tools_completion_hook(ctx):
    """ProcessGroup._register_on_completion_hook: one WorkInfo per finished
    op, in order, with sane times; a second hook is refused."""
    g = _group(ctx, enable_timing=True)
    seen = []
    # Which part of the case each hook call ran in: a hook queued at shutdown
    # must run inside destroy_process_group (which must not hold the GIL the
    # hook needs), not after it returns.
    phase, phases = ["ops"], []

    def hook(info):
        phases.append(phase[0])
        seen.append((info.op_type, info.seq, info.time_started, info.time_finished,
                     info.active_duration))

    g._register_on_completion_hook(hook)
    expect_raises(Exception, lambda: g._register_on_completion_hook(lambda info: None), "already")
    ins = _inputs(ctx, 2048, 21)
    n_ops = 6
    for i in range(n_ops):
        t = ins[ctx.rank].to(ctx.device)
        if i % 2:
            dist.all_reduce(t, group=g, async_op=True).wait()
        else:
            dist.all_reduce(t, group=g)
        check(t, reduce_ref(ins, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              f"all_reduce {i} with a completion hook")
    torch.cuda.synchronize()
    deadline = time.monotonic() + 10
    while len(seen) < n_ops and time.monotonic() < deadline:
        time.sleep(0.01)
    if len(seen) != n_ops:
        fail(f"{len(seen)} completion hook calls for {n_ops} ops")
    seqs = [s[1] for s in seen]
    if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
        fail(f"hook seqs {seqs} are not increasing")
    for op, _seq, started, finished, active in seen:
        if "ALLREDUCE" not in str(op).upper():
            fail(f"hook op_type {op}")
        if finished < started:
            fail(f"hook: finished {finished} before started {started}")
        if active.total_seconds() <= 0:
            fail(f"hook: active duration {active} with timing on")
    # Ops still queued for the hook run at shutdown, which must not stall on
    # the GIL that the Python hook needs.  With that stall, shutdown gives up
    # after its drain limit and the hook runs only once destroy has returned,
    # so the phase tells, whatever the host's load does to the time.
    phase[0] = "last op"
    dist.all_reduce(torch.ones(4, device=ctx.device), group=g)
    t0 = time.monotonic()
    dist.destroy_process_group(g)
    took = time.monotonic() - t0
    phase[0] = "after destroy"
    time.sleep(0.2)  # lets a late hook call show
    late = phases[n_ops:]
    if late != ["last op"]:
        fail(f"the last op's hook calls ran in phases {late} (destroy took {took:.1f} s); "
             "one call before destroy_process_group returned was expected")


@case(min_world=1)
def tools_ephemeral_timeout(ctx):
    """_add_ephemeral_timeout extends ops issued after it until the first of
    them completes; extensions add up; a negative one is refused."""
    g = _group(ctx)
    be = _backend(g)
    dist.all_reduce(torch.ones(4, device=ctx.device), group=g)
    be._add_ephemeral_timeout(timedelta(seconds=20))
    be._add_ephemeral_timeout(timedelta(seconds=10))
    if be._ephemeral_timeout() != timedelta(seconds=30):
        fail(f"ephemeral extension {be._ephemeral_timeout()} after adding 20 s and 10 s")
    t = torch.ones(1 << 20, device=ctx.device)
    work = dist.all_reduce(t, group=g, async_op=True)
    work.wait()
    torch.cuda.synchronize()
    deadline = time.monotonic() + 5
    while be._ephemeral_timeout() != timedelta(0) and time.monotonic() < deadline:
        time.sleep(0.01)
    if be._ephemeral_timeout() != timedelta(0):
        fail(f"the extension outlived the first op after it: {be._ephemeral_timeout()}")
    if not torch.equal(t.cpu(), torch.full((1 << 20,), float(ctx.world))):
        fail("all_reduce under an ephemeral timeout is wrong")
    expect_raises(ValueError, lambda: be._add_ephemeral_timeout(timedelta(seconds=-1)), "negative")
    dist.destroy_process_group(g)


@case(min_world=1)
def tools_time_estimate(ctx):
    """torch.distributed's _time_estimator over an nccl_core group: NCCL's
    simulator estimates, nothing runs (inputs unchanged)."""
    g = _group(ctx)
    be = _backend(g)
    supports = getattr(be, "supports_time_estimate", None)
    if supports is None:
        supports = be._supports_time_estimate  # a method before torch 2.15, a property since
        supports = supports() if callable(supports) else supports
    if not supports:
        fail("supports_time_estimate is False")
    dist.all_reduce(torch.ones(4, device=ctx.device), group=g)  # a real communicator
    estimator = getattr(dist.distributed_c10d, "_time_estimator", None)
    if estimator is None:
        raise Skip("this torch has no _time_estimator")
    tensors = [torch.full((1 << 22,), float(ctx.rank + 1), device=ctx.device) for _ in range(4)]
    before = [x.clone() for x in tensors]
    with estimator(group=g, device=ctx.device) as cm:
        for x in tensors:
            dist.all_reduce(x, group=g)
    torch.cuda.synchronize()
    est = cm.estimated_time
    if ctx.world > 1 and not (est > 0):
        fail(f"estimated time {est} for 4 all_reduces of 16 MiB")
    if ctx.world == 1 and est != 0:
        fail(f"estimated time {est} on a one-rank group")
    for a, b in zip(tensors, before):
        if not torch.equal(a, b):
            fail("a simulated all_reduce changed its tensor")
    # The group runs real ops afterwards.
    _checked_all_reduce(ctx, g, 1000, 41, "all_reduce after a time estimate")
    # A compiler may estimate on some ranks only (a cache hit elsewhere): an
    # estimate is no collective, so every rank still counts alike, and later
    # calls (the fast path's signatures carry the count) still match.  Only
    # a shape that ran for real: NCCL's simulation still connects to the peers
    # an algorithm needs, which a rank-local estimate cannot wait for.
    if ctx.rank == 0:
        small = torch.ones(1000, device=ctx.device)
        with estimator(group=g, device=ctx.device):
            dist.all_reduce(small, group=g)
            dist.all_reduce(small, group=g)
    count = torch.tensor([be._get_sequence_number_for_group()], dtype=torch.int64, device=ctx.device)
    low, high = count.clone(), count.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN, group=g)
    dist.all_reduce(high, op=dist.ReduceOp.MAX, group=g)
    if low.item() != high.item():
        fail(f"collectives counted after an estimate on rank 0 only: {low.item()}..{high.item()}")
    for i in range(5):
        _checked_all_reduce(ctx, g, 1000, 60 + i, f"all_reduce {i} after rank 0's own estimate")
    dist.destroy_process_group(g)


@case(min_world=1)
def tools_torch_nccl_options_and_counters(ctx):
    """pg_options=ProcessGroupNCCL.Options works and maps its fields; fields
    we cannot honour are refused by name; counters and statistics answer."""
    o = dist.ProcessGroupNCCL.Options()
    o.is_high_priority_stream = True
    o.config.max_ctas = 8
    o.config.min_ctas = 2
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=o)
    be = _backend(g)
    mine = be.nccl_core_options
    if not mine.is_high_priority_stream or mine.max_ctas != 8 or mine.min_ctas != 2:
        fail(f"mapped options: high={mine.is_high_priority_stream} max_ctas={mine.max_ctas} "
             f"min_ctas={mine.min_ctas}")
    _checked_all_reduce(ctx, g, 3000, 51, "all_reduce on a group made from ProcessGroupNCCL.Options")
    if not be._is_initialized():
        fail("_is_initialized() is False after a collective")
    be._set_default_timeout(timedelta(seconds=123))
    if be.nccl_core_options._timeout != timedelta(seconds=123):
        fail(f"_set_default_timeout: {be.nccl_core_options._timeout}")
    if not isinstance(be.comm_split_count(), int):
        fail("comm_split_count() is not an int")
    try:
        stats = be.memory_stats()
    except nc.NcclUnsupported as e:  # NCCL < 2.29.7
        if "2.29.7" not in str(e):
            fail(f"memory_stats refusal does not name the release: {e}")
    else:
        keys = {"gpu_mem_suspend", "gpu_mem_suspended", "gpu_mem_persist", "gpu_mem_total"}
        if set(stats) != keys or stats["gpu_mem_total"] <= 0:
            fail(f"memory_stats() = {stats}")
    dist.destroy_process_group(g)
    bad = dist.ProcessGroupNCCL.Options()
    bad.config.nvls_ctas = 4
    expect_raises(ValueError, lambda: dist.new_group(list(range(ctx.world)), backend="nccl_core",
                                                     pg_options=bad), "nvls_ctas")


@case(min_world=1)
def tools_work_state_without_lag(ctx):
    """is_success()/is_completed() answer from the GPU at once, and
    _wait_for_pending_works returns only when every op has finished."""
    # A group of nccl_core alone: torch forwards _wait_for_pending_works to
    # the group's default backend, which a "cpu:gloo,cuda:nccl_core" group lacks.
    g = _group(ctx)
    ins = _inputs(ctx, 1 << 16, 61)
    ts = [ins[ctx.rank].to(ctx.device) for _ in range(8)]
    works = [dist.all_reduce(t, group=g, async_op=True) for t in ts]
    g._wait_for_pending_works()
    for i, w in enumerate(works):
        if not w.is_completed():
            fail(f"op {i} not completed after _wait_for_pending_works")
    torch.cuda.synchronize()
    t = ins[ctx.rank].to(ctx.device)
    w = dist.all_reduce(t, group=g, async_op=True)
    torch.cuda.synchronize()
    if not w.is_success():
        fail("is_success() is False right after the GPU finished the op")
    for t in ts + [t]:
        check(t, reduce_ref(ins, "SUM", torch.float32), torch.float32, "SUM", ctx.world,
              "all_reduce checked for completion")
    dist.destroy_process_group(g)
