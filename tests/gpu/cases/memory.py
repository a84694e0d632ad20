"""NCCL memory: nccl_core_backend.torch.empty, resolve_tensor, MemPool, GC."""

from __future__ import annotations

import gc

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import (address_mapped, check, device_used_bytes, expect_raises,
                                    fail, make, reduce_ref, skip_without_window)
from tests.gpu.registry import case


@case(min_world=1)
def nccl_empty_shapes_and_dtypes(ctx):
    dtypes = [torch.float32, torch.bfloat16, torch.int64, torch.uint8, torch.bool,
              torch.complex64, torch.float8_e4m3fn]
    for dtype in dtypes:
        t = nc.torch.empty(3, 5, dtype=dtype, device=ctx.device)
        if t.shape != (3, 5) or t.dtype != dtype or t.device != ctx.device or t.stride() != (5, 1):
            fail(f"empty(3, 5, {dtype}): {t.shape} {t.dtype} {t.device} {t.stride()}")
        if not nc._C._is_vmm(t.data_ptr()):
            fail(f"empty({dtype}) is not NCCL (VMM) memory")
    f = nc.torch.empty((4, 6, 2), morder="F", device=ctx.device.index)
    if f.stride() != (1, 4, 24) or f.dtype != torch.get_default_dtype():
        fail(f"Fortran order strides {f.stride()}")
    z = nc.torch.empty(0, device=ctx.device)
    if z.numel() != 0:
        fail("empty(0) not empty")
    d = nc.torch.empty([7])
    if d.device != torch.device("cuda", torch.cuda.current_device()):
        fail(f"default device {d.device}")
    ptr, count, dt, dev = nc.torch.resolve_tensor(f)
    if (ptr, count, dt, dev) != (f.data_ptr(), 48, nc.NcclDataType.FLOAT32, ctx.device.index):
        fail(f"resolve_tensor {(ptr, count, dt, dev)}")
    if nc.torch.resolve_tensor(torch.zeros(3, dtype=torch.bool, device=ctx.device))[2] != nc.UINT8:
        fail("bool does not resolve to UINT8")
    # Collectives on NCCL memory, through dist.* and the raw API.
    inputs = [make(ctx, r, torch.float32, 4096, salt=1) for r in range(ctx.world)]
    t = nc.torch.empty(4096, device=ctx.device)
    t.copy_(inputs[ctx.rank])
    dist.all_reduce(t)
    check(t, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world, "all_reduce on empty()")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.empty(4, morder="X"), "morder")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.empty(4, device="cpu"), "CUDA")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.empty(-1, device=ctx.device), "negative")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.empty(2.5), "integers")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.resolve_tensor(torch.ones(3)), "CUDA")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.resolve_tensor(torch.ones(3, dtype=torch.int16, device=ctx.device)), "int16")
    expect_raises(nc.NcclInvalid, lambda: nc.torch.resolve_tensor([1.0]), "torch.Tensor")


@case(min_world=1)
def nccl_empty_memory_returns_on_gc(ctx):
    # Device free memory is the GPU's: where ranks share one (simulated
    # hosts), they measure in turn while the others wait in a barrier.
    from nccl_core_backend import simhosts

    shared = ctx.world > 1 and simhosts.active()
    for turn in range(ctx.world if shared else 1):
        if not shared or turn == ctx.rank:
            _memory_returns_on_gc(ctx)
        if shared:
            dist.barrier()


def _memory_returns_on_gc(ctx):
    torch.cuda.synchronize()
    gc.collect()
    base_live = nc._C._mem_live_bytes()
    base_used = device_used_bytes(ctx.device)
    size = 64 << 20
    ts = [nc.torch.empty(size // 4, device=ctx.device) for _ in range(4)]
    ptrs = [t.data_ptr() for t in ts]
    views = [t[:10] for t in ts]
    grown = nc._C._mem_live_bytes() - base_live
    if grown < 4 * size - (1 << 20):
        fail(f"live bytes grew by {grown}, expected >= {4 * size}")
    if device_used_bytes(ctx.device) < base_used + 4 * size - (32 << 20):
        fail("this process's device memory did not grow after allocating")
    if not all(address_mapped(p) for p in ptrs):
        fail("an allocation is not mapped while its tensor lives")
    del ts
    if nc._C._mem_live_bytes() - base_live < 4 * size - (1 << 20):
        fail("memory freed while views were alive")
    del views
    gc.collect()
    torch.cuda.synchronize()
    # At or below the baseline: earlier cases' garbage may be collected too.
    if nc._C._mem_live_bytes() > base_live:
        fail(f"live bytes {nc._C._mem_live_bytes()} > baseline {base_live} after GC")
    # Back to the driver: the addresses are unmapped and the process holds no more.
    still = [hex(p) for p in ptrs if address_mapped(p)]
    if still:
        fail(f"allocations still mapped after GC: {still}")
    used = device_used_bytes(ctx.device)
    if used > base_used + (32 << 20):
        fail(f"device memory not returned: this process holds {used} vs baseline {base_used}")
    # Many small allocations come and go without drift.
    for _ in range(200):
        nc.torch.empty(1000, device=ctx.device)
    gc.collect()
    torch.cuda.synchronize()  # frees wait for the stream's queued work (an event each)
    if nc._C._mem_live_bytes() > base_live:
        fail("200 small empty() calls left memory behind")


@case(min_world=1)
def mem_pool_and_allocate_tensor(ctx):
    backend = nc.get_backend()
    if not backend.supports_tensor_alloc(ctx.device):
        fail("supports_tensor_alloc is False")
    pool = torch.cuda.MemPool(backend.mem_allocator)
    with torch.cuda.use_mem_pool(pool):
        t = torch.empty(1 << 20, device=ctx.device)
    if not nc._C._is_vmm(t.data_ptr()):
        fail("MemPool tensor is not NCCL memory")
    inputs = [make(ctx, r, torch.float32, 1 << 20, salt=2) for r in range(ctx.world)]
    t.copy_(inputs[ctx.rank])
    dist.all_reduce(t)
    check(t, reduce_ref(inputs, "SUM", torch.float32), torch.float32, "SUM", ctx.world, "all_reduce on MemPool tensor")
    win = nc.get_communicator().register_window(t)
    if win is None:
        skip_without_window(ctx)  # after the checks above, which ran
    if win is None or win.size != t.numel() * 4:
        fail("window on a MemPool tensor")
    else:
        win.close()
    del t
    # allocate_tensor caches: a second same-size allocation reuses the pool.
    a = backend.allocate_tensor(4096, dtype=torch.float32, device=ctx.device)
    if not nc._C._is_vmm(a.data_ptr()) or a.numel() != 4096 or a.dtype != torch.float32:
        fail(f"allocate_tensor gave {a.shape} {a.dtype}")
    live = nc._C._mem_live_bytes()
    ptr = a.data_ptr()
    del a
    b = backend.allocate_tensor(4096, dtype=torch.float32, device=ctx.device)
    if nc._C._mem_live_bytes() != live or b.data_ptr() != ptr:
        fail("allocate_tensor did not reuse its cached block")
    b.fill_(ctx.rank)
    dist.all_reduce(b)
    if not torch.all(b == sum(range(ctx.world))):
        fail("all_reduce on allocate_tensor memory")
    del b, pool
