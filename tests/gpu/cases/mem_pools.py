"""torch MemPools and allocator segments registered with NCCL.

What a torch NCCL user does with backend ``nccl`` and keeps with
``nccl_core``: a MemPool on ``backend.mem_allocator`` whose tensors are
allocated under ``torch.cuda.use_mem_pool``, ``register_mem_pool`` (plain or
``symm=True``) and collectives on those tensors; ``deregister_mem_pool``;
``TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK=1``, which registers every
caching-allocator segment.  Every collective output is compared element by
element with a float64 CPU reference; ``_registered_segments`` shows what the
communicator has registered and is compared with the allocator's snapshot.
The groups here turn nccl_core's own kernels off (fast path, push, automatic
windows), so every call is NCCL's, on registered memory.
"""

from __future__ import annotations

import gc
import os
import time

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import (check, expect_raises, fail, make, reduce_ref, sanity,
                                     skip_without_window, wide)
from tests.gpu.registry import Skip, case

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32, torch.uint8]
N = 300007  # odd; large enough for NCCL's registered-buffer paths


def _group(ctx, **fields):
    """A group whose collectives all run through NCCL, with its communicator."""
    opts = nc.Options()
    opts.fast_path_max_bytes = 0
    opts.push_max_bytes = 0
    for k, v in fields.items():
        setattr(opts, k, v)
    g = dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)
    sanity(ctx, g)  # a first collective: the communicator exists from here
    return g, g._get_backend(ctx.device)


def _snapshot(ctx, pool=None) -> tuple[int, int, bool]:
    """(segments, bytes, any expandable) the allocator has on our device (in `pool`)."""
    segs = torch.cuda.memory_snapshot(pool.id) if pool is not None else torch.cuda.memory_snapshot()
    mine = [s for s in segs if s["device"] == ctx.device.index]
    expandable = any(s.get("is_expandable", False) for s in mine)
    plain = [s for s in mine if not s.get("is_expandable", False)]
    return len(plain), sum(s["total_size"] for s in plain), expandable


def _expect_registered(ctx, be, pool, windows: bool, what: str) -> int:
    """The registration covers exactly the pool's segments (all of them if None)."""
    n, nbytes, _ = _snapshot(ctx, pool)
    got = be._registered_segments(pool) if pool is not None else be._registered_segments()
    want = {"segments": n, "bytes": nbytes, "windows": n if windows else 0}
    if got != want:
        fail(f"{what}: registered {got}, the allocator's snapshot has {want}")
    return n


def _alloc(ctx, pool, dtype, n, salt):
    """(input, all_reduce buffer, gather out, scatter out) in `pool`, + the inputs."""
    w = ctx.world
    with torch.cuda.use_mem_pool(pool):
        x = torch.empty(n, dtype=dtype, device=ctx.device)
        ar = torch.empty(n, dtype=dtype, device=ctx.device)
        ag = torch.empty(n * w, dtype=dtype, device=ctx.device)
        rs_in = torch.empty(n * w, dtype=dtype, device=ctx.device)
        rs = torch.empty(n, dtype=dtype, device=ctx.device)
    return x, ar, ag, rs_in, rs


def _collectives(ctx, g, tensors, dtype, salt, what):
    """all_reduce, all_gather_into_tensor and reduce_scatter_tensor on the given
    tensors, every output element checked."""
    x, ar, ag, rs_in, rs = tensors
    n, w = x.numel(), ctx.world
    inputs = [make(ctx, r, dtype, n=n, salt=salt) for r in range(w)]
    x.copy_(inputs[ctx.rank])
    ar.copy_(x)
    dist.all_reduce(ar, group=g)
    check(ar, reduce_ref(inputs, "SUM", dtype), dtype, "SUM", w, f"{what} all_reduce")
    dist.all_gather_into_tensor(ag, x, group=g)
    check(ag, torch.cat([wide(i) for i in inputs]), dtype, "SUM", w,
          f"{what} all_gather_into_tensor")
    big = [make(ctx, r, dtype, n=n * w, salt=salt + 1) for r in range(w)]
    rs_in.copy_(big[ctx.rank])
    dist.reduce_scatter_tensor(rs, rs_in, group=g)
    ref = reduce_ref(big, "SUM", dtype)[ctx.rank * n:(ctx.rank + 1) * n]
    check(rs, ref, dtype, "SUM", w, f"{what} reduce_scatter_tensor")


def _run_all(ctx, g, pool, salt0, what):
    for i, dtype in enumerate(DTYPES):
        _collectives(ctx, g, _alloc(ctx, pool, dtype, N, salt0 + 2 * i), dtype, salt0 + 2 * i,
                     f"{what} {dtype}")


@case(min_world=1)
def register_mem_pool_needs_a_communicator(ctx):
    # A backend built directly has no communicator until its first collective.
    be = nc.ProcessGroupNcclCore(dist.HashStore(), 0, 1, nc.Options())
    pool = torch.cuda.MemPool(be.mem_allocator)
    expect_raises(dist.DistBackendError, lambda: be.register_mem_pool(pool), "device_id")
    expect_raises(dist.DistBackendError, lambda: be.deregister_mem_pool(pool), "communicator")
    expect_raises(TypeError, lambda: be.register_mem_pool(None), "MemPool")
    if be._registered_segments() != {"segments": 0, "bytes": 0, "windows": 0}:
        fail(f"registered segments without a communicator: {be._registered_segments()}")


@case(min_world=1)
def mem_pool_on_mem_allocator(ctx):
    g, be = _group(ctx)
    pool = torch.cuda.MemPool(be.mem_allocator)
    held = [_alloc(ctx, pool, torch.float32, N, 0)]
    be.register_mem_pool(pool)
    n0 = _expect_registered(ctx, be, pool, False, "after register_mem_pool")
    if n0 == 0:
        fail("the pool has no segments after allocating in it")
    _run_all(ctx, g, pool, 10, "registered pool")
    # The pool grows: the allocator hook registers the new segment.
    before = be._registered_segments(pool)["segments"]
    with torch.cuda.use_mem_pool(pool):
        held.append(torch.empty(96 << 20, dtype=torch.uint8, device=ctx.device))
    if be._registered_segments(pool)["segments"] <= before:
        fail("a segment the pool allocated after register_mem_pool was not registered")
    _expect_registered(ctx, be, pool, False, "after the pool grew")
    _run_all(ctx, g, pool, 30, "grown pool")
    # Errors, before anything changes.
    expect_raises(ValueError, lambda: be.register_mem_pool(pool), "already registered")
    other = torch.cuda.MemPool(be.mem_allocator)
    expect_raises(ValueError, lambda: be.deregister_mem_pool(other), "not registered")
    expect_raises(TypeError, lambda: be.deregister_mem_pool(None), "MemPool")
    if torch.cuda.device_count() > 1:
        elsewhere = (ctx.device.index + 1) % torch.cuda.device_count()
        with torch.cuda.device(elsewhere):
            far = torch.cuda.MemPool(be.mem_allocator)
        expect_raises(ValueError, lambda: be.register_mem_pool(far), "device")
    _expect_registered(ctx, be, pool, False, "after the refused calls")
    # Deregistered: nothing registered, the tensors still work.
    be.deregister_mem_pool(pool)
    got = be._registered_segments(pool)
    if got["segments"] != 0:
        fail(f"deregister_mem_pool left {got} registered")
    _run_all(ctx, g, pool, 50, "deregistered pool")
    # And again, registered twice in a row's worth of use.
    be.register_mem_pool(pool)
    _expect_registered(ctx, be, pool, False, "registered again")
    _run_all(ctx, g, pool, 70, "registered again")
    be.deregister_mem_pool(pool)
    expect_raises(ValueError, lambda: be.deregister_mem_pool(pool), "not registered")
    del held
    dist.destroy_process_group(g)


@case(min_world=1)
def mem_pool_on_the_world_group(ctx):
    """The user's program as written for backend nccl: the world group's backend,
    default options (nccl_core's fast path, push and automatic windows take the
    sizes they cover; NCCL the rest, on registered memory)."""
    sanity(ctx)  # the communicator exists (lazy launches create it here)
    be = dist.group.WORLD._get_backend(torch.device("cuda"))
    pool = torch.cuda.MemPool(be.mem_allocator)
    with torch.cuda.use_mem_pool(pool):
        warm = torch.empty(1 << 20, device=ctx.device)
    be.register_mem_pool(pool)
    _expect_registered(ctx, be, pool, False, "world group")
    salt = 500
    for n in (1000, 200003, 1500007):
        for dtype in (torch.float32, torch.bfloat16) if n > 1000000 else DTYPES:
            salt += 2
            _collectives(ctx, None, _alloc(ctx, pool, dtype, n, salt), dtype, salt,
                         f"world group n={n} {dtype}")
    _expect_registered(ctx, be, pool, False, "world group after the collectives")
    be.deregister_mem_pool(pool)
    if be._registered_segments(pool)["segments"] != 0:
        fail(f"world group: left registered {be._registered_segments(pool)}")
    sanity(ctx)
    del warm


@case(min_world=1)
def symmetric_mem_pool(ctx):
    g, be = _group(ctx)
    pool = torch.cuda.MemPool(be.mem_allocator)
    held = [_alloc(ctx, pool, torch.float32, N, 0)]
    try:
        be.register_mem_pool(pool, symm=True)
    except ValueError as e:
        # Only where the ranks are simulated hosts (no window there): on
        # NVLink peers the refusal is a failure.
        if "no symmetric window" in str(e):
            skip_without_window(ctx)
        raise
    n = _expect_registered(ctx, be, pool, True, "after register_mem_pool(symm=True)")
    if n == 0:
        fail("no windows registered")
    _run_all(ctx, g, pool, 100, "symmetric pool")
    # The pool grows: the new segment is registered from the allocator hook
    # as a plain buffer, never as a window (a collective from one rank's
    # allocator callback would pair with whatever its peers run then).
    with torch.cuda.use_mem_pool(pool):
        held.append(torch.empty(96 << 20, dtype=torch.uint8, device=ctx.device))
    grown = be._registered_segments(pool)
    now, now_bytes, _ = _snapshot(ctx, pool)
    if grown != {"segments": now, "bytes": now_bytes, "windows": n}:
        fail(f"after the symmetric pool grew: registered {grown}, expected the allocator's "
             f"{now} segments ({now_bytes} bytes) of which the {n} of register_mem_pool "
             "windows (the later ones plain buffers)")
    _run_all(ctx, g, pool, 120, "grown symmetric pool")
    be.deregister_mem_pool(pool)
    if be._registered_segments(pool)["segments"] != 0:
        fail(f"windows left after deregister_mem_pool: {be._registered_segments(pool)}")
    _run_all(ctx, g, pool, 140, "symmetric pool, deregistered")
    # Ranks holding different numbers of segments: refused on every rank
    # before any window is made (windows would pair up wrongly).
    if ctx.world > 1:
        uneven = torch.cuda.MemPool(be.mem_allocator)
        with torch.cuda.use_mem_pool(uneven):
            own = [torch.empty(12 << 20, dtype=torch.uint8, device=ctx.device)
                   for _ in range(ctx.rank + 1)]  # one segment each (above 10 MiB)
        expect_raises(ValueError, lambda: be.register_mem_pool(uneven, symm=True),
                      "symmetric windows need the same segments on every rank")
        if be._registered_segments(uneven)["segments"] != 0:
            fail("a refused uneven symm=True registration left segments behind")
        be.register_mem_pool(uneven)  # plain buffers are local: accepted
        be.deregister_mem_pool(uneven)
        del own
        sanity(ctx, g)
    # symm=True needs NCCL memory: a plain caching-allocator pool is refused
    # on every rank before anything collective starts.
    plain = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(plain):
        keep = torch.empty(1 << 20, device=ctx.device)
    expect_raises(ValueError, lambda: be.register_mem_pool(plain, symm=True), "NCCL memory")
    if be._registered_segments(plain)["segments"] != 0:
        fail("a refused symm=True registration left segments behind")
    sanity(ctx, g)
    del held, keep
    dist.destroy_process_group(g)


@case(min_world=1)
def plain_caching_allocator_mem_pool(ctx):
    g, be = _group(ctx)
    pool = torch.cuda.MemPool()  # cudaMalloc segments, no custom allocator
    held = [_alloc(ctx, pool, torch.float32, N, 0)]
    be.register_mem_pool(pool)
    _expect_registered(ctx, be, pool, False, "plain MemPool")
    _run_all(ctx, g, pool, 200, "plain MemPool")
    be.deregister_mem_pool(pool)
    del held
    dist.destroy_process_group(g)


@case(min_world=1)
def teardown_with_registered_pools(ctx):
    """destroy_process_group and abort with pools still registered: nothing
    leaks or crashes, and the pools' memory is freed later without a
    communicator to deregister from."""
    for how in ("destroy", "abort"):
        g, be = _group(ctx)
        pool = torch.cuda.MemPool(be.mem_allocator)
        tensors = _alloc(ctx, pool, torch.float32, N, 0)
        be.register_mem_pool(pool)
        _collectives(ctx, g, tensors, torch.float32, 300, f"before {how}")
        if how == "destroy":
            dist.destroy_process_group(g)
        else:
            dist.barrier()  # every rank is done with g: see abort_then_ops_raise_dist_backend_error
            be.abort()
        if be._registered_segments() != {"segments": 0, "bytes": 0, "windows": 0}:
            fail(f"after {how}: still registered {be._registered_segments()}")
        expect_raises(dist.DistBackendError, lambda: be.deregister_mem_pool(pool))
        expect_raises(dist.DistBackendError, lambda: be.register_mem_pool(pool))
        # The memory outlives the group and is still usable elsewhere.
        x = tensors[1]
        x.fill_(ctx.rank + 1)
        dist.all_reduce(x)
        if not torch.all(x == sum(range(1, ctx.world + 1))):
            fail(f"a pool tensor after {how}: all_reduce on the default group is wrong")
        del tensors, x, pool
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # the pool's segments go back: the tracker finds no group
    sanity(ctx)


def _segment_of(ctx, t) -> tuple[int, int]:
    """(address, total_size) of the allocator segment that holds tensor `t`."""
    p = t.data_ptr()
    for s in torch.cuda.memory_snapshot():
        if s["device"] == ctx.device.index and s["address"] <= p < s["address"] + s["total_size"]:
            return s["address"], s["total_size"]
    fail(f"no allocator segment holds the tensor at {p:#x}")
    return 0, 0


def _drain(be, seconds: float = 10.0) -> None:
    """Waits (bounded) until the watchdog has retired the group's works, which
    keep their tensors, and so their segments, alive until then."""
    deadline = time.monotonic() + seconds
    while be._pending_works() and time.monotonic() < deadline:
        time.sleep(0.01)


@case(min_world=1)
def allocator_hook_registers_every_segment(ctx):
    if _snapshot(ctx)[2]:
        raise Skip("expandable_segments is on: torch's allocator hook registers no "
                   "expandable segments, neither does nccl_core")
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    # As a user's program does it: the environment variable, read at group creation.
    name = "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"
    old = os.environ.get(name)
    os.environ[name] = "1"
    try:
        g, be = _group(ctx)
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
    if be.options.register_allocator_segments is not True:
        fail(f"{name}=1 did not set register_allocator_segments")
    n0 = _expect_registered(ctx, be, None, False, "at communicator creation")
    # Ordinary tensors in new segments: registered as the allocator makes them.
    # 192 MiB is a multiple of the allocator's 2 MiB rounding for large
    # requests, so each tensor fills its segment exactly and no later
    # allocation can be placed in it (a tail would be split off and could be
    # handed out, keeping the segment alive after the tensor is gone).
    big_bytes = 192 << 20
    ts = [torch.empty(big_bytes // 4, dtype=torch.float32, device=ctx.device) for _ in range(2)]
    n1 = _expect_registered(ctx, be, None, False, "after two large torch.empty")
    if n1 < n0 + 2:
        fail(f"registered segments went from {n0} to {n1}, expected +2 at least")
    own = [_segment_of(ctx, t) for t in ts]
    for addr, size in own:
        if size != big_bytes:
            fail(f"a {big_bytes}-byte tensor lies in a {size}-byte segment at {addr:#x}: it "
                 "shares its segment, which empty_cache then cannot return")
    for i, dtype in enumerate(DTYPES):
        tensors = [torch.empty(n, dtype=dtype, device=ctx.device)
                   for n in (N, N, N * ctx.world, N * ctx.world, N)]
        _collectives(ctx, g, tensors, dtype, 400 + 2 * i, f"allocator hook {dtype}")
    _expect_registered(ctx, be, None, False, "after the collectives")
    # The collectives' tensors go back to the allocator once their works are
    # retired; their segments may stay (torch's empty_cache returns only
    # segments with no block in use), which is why the count is compared with
    # the one just before the two large tensors die, not with n1.
    del tensors
    gc.collect()
    _drain(be)
    torch.cuda.synchronize()
    n_before = _expect_registered(ctx, be, None, False, "before empty_cache")
    # empty_cache gives the free segments back: each is deregistered first.
    del ts
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    n2 = _expect_registered(ctx, be, None, False, "after empty_cache")
    left = {s["address"] for s in torch.cuda.memory_snapshot() if s["device"] == ctx.device.index}
    kept = [f"{addr:#x}" for addr, _ in own if addr in left]
    if kept:
        fail(f"empty_cache kept the segments of the deleted 192 MiB tensors: {kept}")
    if n2 > n_before - 2:
        fail(f"empty_cache: registered segments went from {n_before} to {n2}, expected -2 at "
             "least (the two 192 MiB segments)")
    sanity(ctx, g)
    dist.destroy_process_group(g)
    if be._registered_segments()["segments"] != 0:
        fail("segments still registered after destroy_process_group")
    # Segments come and go after the group is gone: the tracker finds nothing.
    t = torch.empty(big_bytes // 4, device=ctx.device)
    del t
    torch.cuda.empty_cache()
    sanity(ctx)


@case()
def mem_pool_ranks_allocate_in_different_orders(ctx):
    """The ranks' allocators differ (each rank allocates and frees
    its own spacers in the pool, in an order of its own) while they run the
    same collectives on pool memory, on the world group with default options
    (the fast path, push and automatic windows where the transport allows).
    No path may depend on the allocators looking alike: no hang (the case's
    timeout), every output element right."""
    sanity(ctx)
    be = dist.group.WORLD._get_backend(torch.device("cuda"))
    pool = torch.cuda.MemPool(be.mem_allocator)
    be.register_mem_pool(pool)
    spacers = []
    salt = 900
    for rnd in range(4):
        # Rank r makes r + rnd + 1 spacers of sizes of its own, then frees
        # every other one, starting at an offset of its own.
        with torch.cuda.use_mem_pool(pool):
            spacers += [torch.empty((ctx.rank + 1) * 4099 * (k + 1), device=ctx.device)
                        for k in range(ctx.rank + rnd + 1)]
        del spacers[(ctx.rank + rnd) % 2::2]
        for n in (1000, 200003, 1500007):
            salt += 2
            _collectives(ctx, None, _alloc(ctx, pool, torch.float32, n, salt), torch.float32,
                         salt, f"different orders, round {rnd}, n={n}")
    del spacers
    torch.cuda.synchronize()
    be.deregister_mem_pool(pool)
    sanity(ctx)
