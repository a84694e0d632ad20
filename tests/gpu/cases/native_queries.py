"""NCCL's host-side queries against nccl_core's own sources: window pointers
(ncclGetLsaDevicePointer, ncclGetPeerDevicePointer, ncclWinGetUserPtr) against
the window's device descriptor, get_mem_stat against the memory it counts,
Communicator.properties (and gin_type / railed_gin_type) against an independent
ncclCommQueryProperties."""

from __future__ import annotations

import ctypes
import os

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from nccl_core_backend import _testing
from tests.gpu.cases.common import device_used_bytes, expect_raises, fail, sanity
from tests.gpu.cases.native_rma import (SYM, compare_bytes, fresh_group, need, payload,
                                        poisoned_window)
from tests.gpu.registry import case

MiB = 1 << 20
S = 3 * MiB + 4096 * 5  # bytes per window: not a power of two


def _filled_windows(ctx, comm):
    """Two windows per rank holding rank-specific random bytes: one over a
    whole allocation, one over an interior view starting 8 KiB in."""
    out = []
    for k, lead in enumerate((0, 8192)):
        alloc = nc.torch.empty(lead + S, dtype=torch.uint8, device=ctx.device)
        view = alloc[lead:lead + S]
        view.copy_(_window_bytes(ctx, ctx.rank, k))
        torch.cuda.synchronize()
        win = comm.register_window(view)
        if win is None:
            raise AssertionError("register_window returned None on an NVLink machine")
        out.append((alloc, view, win, k))
    dist.barrier()  # every rank's data is in place before anyone reads it
    return out


def _offsets(ctx):
    g = ctx.gen(0, 99)
    rand = [int(torch.randint(0, S // 4, (1,), generator=g)) * 4 for _ in range(3)]
    return [0, 4, 4096, 12344, S - 4096] + rand


_DATA: dict[tuple, torch.Tensor] = {}


def _window_bytes(ctx, peer, k):
    """Rank `peer`'s bytes in its window k (generated once per case)."""
    key = (ctx.seed, ctx.case_index, peer, k)
    if key not in _DATA:
        if len(_DATA) > 64:
            _DATA.clear()
        _DATA[key] = payload(ctx, peer, S // 4, torch.float32, 70 + k).view(torch.uint8)
    return _DATA[key]


def _check_content(ctx, win, k, addr, peer, off, what):
    m = min(4096, S - off)
    out = torch.empty(m, dtype=torch.uint8, device=ctx.device)
    try:
        _testing._copy_from(win, addr, out)
    except nc.NcclInvalid as e:  # recorded, so that every rank reaches the next barrier
        fail(f"{what}: window {k}, rank {peer} offset {off}: {e}")
        return
    exp = _window_bytes(ctx, peer, k)[off:off + m]
    compare_bytes(out, exp, f"{what}: window {k}, rank {peer}'s bytes at {off}")


def _world_of(ctx, win, lsa_rank):
    return ctx.rank + (lsa_rank - win.lsa_rank)


@case(nvlink=True, min_world=1)
def window_pointers_address_peer_data(ctx):
    """The pointers a window reports (NCCL's host queries on 2.29.2+, the
    device descriptor on 2.28) address each peer's data, byte for byte; the
    descriptor itself names this rank."""
    comm = nc.get_communicator()
    wins = _filled_windows(ctx, comm)
    newest_known = nc.nccl_version() < (2, 33, 0)
    for alloc, view, win, k in wins:
        if win.user_ptr != view.data_ptr():
            fail(f"window {k}: user_ptr {win.user_ptr:#x} != registered {view.data_ptr():#x}")
        if newest_known:
            d = _testing._window_descriptor(win)
            if d["world_rank"] != ctx.rank or d["lsa_rank"] != win.lsa_rank:
                fail(f"window {k}: descriptor {d} vs rank {ctx.rank}, lsa_rank {win.lsa_rank}")
            if win.lsa_size > 1 and d["stride_4g"] == 0:
                fail(f"window {k}: descriptor stride 0 with {win.lsa_size} LSA ranks")
        else:
            expect_raises(nc.NcclUnsupported, lambda: _testing._window_descriptor(win), "descriptor")
        for off in _offsets(ctx):
            for i in range(win.lsa_size):
                peer = _world_of(ctx, win, i)
                _check_content(ctx, win, k, win.get_lsa_device_pointer(i, off), peer, off,
                               "get_lsa_device_pointer")
                if newest_known:
                    _check_content(ctx, win, k, _testing._descriptor_lsa_pointer(win, i, off), peer,
                                   off, "descriptor pointer")
            for p in range(ctx.world):
                addr = win.get_peer_device_pointer(p, off)
                if addr is None:
                    if win.lsa_size == ctx.world:
                        fail(f"window {k}: no pointer to peer {p} inside one LSA team")
                    continue
                _check_content(ctx, win, k, addr, p, off, "get_peer_device_pointer")
    expect_raises(nc.NcclInvalid, lambda: _testing._copy_from(
        wins[0][2], wins[0][2].user_ptr + S, torch.empty(8, dtype=torch.uint8, device=ctx.device)),
                  "not inside")
    torch.cuda.synchronize()
    dist.barrier()
    for _, _, win, _ in wins:
        win.close()
    sanity(ctx)


@case(nvlink=True, min_world=1)
def native_host_pointer_queries(ctx):
    """ncclGetLsaDevicePointer / ncclGetPeerDevicePointer / ncclWinGetUserPtr
    (2.29.2) give the same pointers as the device descriptor, for every peer
    and offset, and address the peers' data."""
    need((2, 29, 2), "NCCL's host pointer queries")
    descriptor_known = nc.nccl_version() < (2, 33, 0)
    comm = nc.get_communicator()
    wins = _filled_windows(ctx, comm)
    for alloc, view, win, k in wins:
        user = _testing._nccl_user_ptr(win)
        if user != win.user_ptr or user != view.data_ptr():
            fail(f"window {k}: ncclWinGetUserPtr {user:#x}, user_ptr {win.user_ptr:#x}, "
                 f"registered {view.data_ptr():#x}")
        for off in _offsets(ctx):
            for i in range(win.lsa_size):
                theirs = _testing._nccl_lsa_pointer(win, i, off)
                if theirs != win.get_lsa_device_pointer(i, off):
                    fail(f"window {k}: get_lsa_device_pointer({i}, {off}) is not NCCL's")
                if descriptor_known and theirs != _testing._descriptor_lsa_pointer(win, i, off):
                    fail(f"window {k}: lsa rank {i} offset {off}: NCCL {theirs:#x}, descriptor "
                         f"{_testing._descriptor_lsa_pointer(win, i, off):#x}")
                _check_content(ctx, win, k, theirs, _world_of(ctx, win, i), off,
                               "ncclGetLsaDevicePointer")
            for p in range(ctx.world):
                theirs = _testing._nccl_peer_pointer(win, p, off)
                ours = _testing._descriptor_peer_pointer(win, p, off) if descriptor_known else theirs
                public = win.get_peer_device_pointer(p, off)
                if not (theirs == ours == public):
                    fail(f"window {k}: peer {p} offset {off}: NCCL {theirs}, descriptor {ours}, "
                         f"get_peer_device_pointer {public}")
                if theirs is not None:
                    _check_content(ctx, win, k, theirs, p, off, "ncclGetPeerDevicePointer")
    torch.cuda.synchronize()
    dist.barrier()
    for _, _, win, _ in wins:
        win.close()
    sanity(ctx)


def _stats(comm, what):
    s = {m: comm.get_mem_stat(m) for m in nc.NcclCommMemStat}
    T = nc.NcclCommMemStat
    if s[T.GPU_MEM_TOTAL] != s[T.GPU_MEM_SUSPEND] + s[T.GPU_MEM_PERSIST]:
        fail(f"{what}: total {s[T.GPU_MEM_TOTAL]} != suspendable {s[T.GPU_MEM_SUSPEND]} + "
             f"persistent {s[T.GPU_MEM_PERSIST]}")
    if s[T.GPU_MEM_SUSPENDED] != 0:
        fail(f"{what}: GPU_MEM_SUSPENDED is {s[T.GPU_MEM_SUSPENDED]} on a live communicator")
    return s


def _held(ctx):
    return device_used_bytes(ctx.device)


@case(nvlink=True, min_world=1)
def native_mem_stat_meaning(ctx):
    """get_mem_stat (2.29.7) counts the communicator's own device memory: its
    values add up, what NCCL allocates for a first collective is real device
    memory, and user memory (ncclMemAlloc, registered buffers and windows) is
    not counted."""
    need((2, 29, 7), "get_mem_stat")
    T = nc.NcclCommMemStat
    g, comm = fresh_group(ctx)
    s0 = _stats(comm, "after creation")
    if s0[T.GPU_MEM_TOTAL] <= 0:
        fail(f"a new communicator counts no memory: {s0}")
    # NCCL's own allocations: the connections of a first collective on NCCL's path.
    n = 4 * MiB  # 16 MiB of float32, above every path of our own
    x = torch.full((n,), float(ctx.rank + 1), device=ctx.device)
    held0, s1 = _held(ctx), _stats(comm, "before the first collective")
    comm.allreduce(x, x, nc.SUM)
    held1, s2 = _held(ctx), _stats(comm, "after the first collective")
    grown, dropped = s2[T.GPU_MEM_TOTAL] - s1[T.GPU_MEM_TOTAL], held1 - held0
    if ctx.world > 1 and grown <= 0:
        fail(f"the first collective's connections added no counted memory ({s1} -> {s2})")
    # NCCL allocates NVLink connection buffers as offloadable memory, which
    # ncclCommSuspend can release: they count as GPU_MEM_SUSPEND.
    if ctx.world > 1 and s2[T.GPU_MEM_SUSPEND] <= s1[T.GPU_MEM_SUSPEND]:
        fail(f"connection buffers not counted as suspendable: {s1} -> {s2}")
    if grown > dropped + 4 * MiB:
        fail(f"counted memory grew by {grown} bytes, device memory dropped by {dropped}")
    if not torch.all(x == float(sum(range(1, ctx.world + 1)))):
        fail("the first collective gave a wrong sum")
    # User memory: allocated with NCCL's allocator, registered, used; not NCCL's.
    size = 64 * MiB
    held2, s3 = _held(ctx), _stats(comm, "before ncclMemAlloc")
    a = nc.torch.empty(size, dtype=torch.uint8, device=ctx.device)
    b = nc.torch.empty(size, dtype=torch.uint8, device=ctx.device)
    a.zero_()
    held3, s4 = _held(ctx), _stats(comm, "after ncclMemAlloc")
    if held3 - held2 < 2 * size - 4 * MiB:
        fail(f"two ncclMemAlloc of {size} bytes took {held3 - held2} bytes of device memory")
    if s4 != s3:
        fail(f"ncclMemAlloc memory was counted by the communicator: {s3} -> {s4}")
    rb = comm.register_buffer(a)
    comm.allreduce(a.view(torch.float32), a.view(torch.float32), nc.SUM)
    win = comm.register_window(b, SYM)
    s5 = _stats(comm, "after registering and using them")
    extra = s5[T.GPU_MEM_TOTAL] - s4[T.GPU_MEM_TOTAL]
    if extra >= size // 4:
        fail(f"registering {size}-byte buffers grew the counted memory by {extra} bytes")
    if not torch.all(a == 0):
        fail("all_reduce of zeros on a registered buffer")
    torch.cuda.synchronize()
    dist.barrier(group=g)
    rb.close()
    win.close()
    s6 = _stats(comm, "after closing them")
    if s6[T.GPU_MEM_TOTAL] > s5[T.GPU_MEM_TOTAL]:
        fail(f"closing registrations grew the counted memory: {s5} -> {s6}")
    del a, b
    sanity(ctx, g)
    dist.destroy_process_group(g)


class _Props(ctypes.Structure):
    # ncclCommProperties of nccl_device/host.h as 2.32.3 defines it (earlier
    # releases end sooner; newer ones append, which the tail leaves room for).
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("rank", ctypes.c_int), ("nRanks", ctypes.c_int), ("cudaDev", ctypes.c_int),
                ("nvmlDev", ctypes.c_int), ("deviceApiSupport", ctypes.c_bool),
                ("multimemSupport", ctypes.c_bool), ("ginType", ctypes.c_int),
                ("nLsaTeams", ctypes.c_int), ("hostRmaSupport", ctypes.c_bool),
                ("railedGinType", ctypes.c_int), ("commHash", ctypes.c_uint64),
                ("ginMinStride", ctypes.c_int), ("ginConnectionType", ctypes.c_int),
                ("ginSupport", ctypes.c_bool * 64), ("devCommRuntimeVersionSize", ctypes.c_size_t),
                ("cftSupport", ctypes.c_bool), ("cftMulticastSupport", ctypes.c_bool),
                ("cftCountedSupport", ctypes.c_bool), ("tail", ctypes.c_ubyte * 4096)]


def _query_with_ctypes(comm):
    """ncclCommQueryProperties called as a program built against the loaded
    release would call it (NCCL_COMM_PROPERTIES_INITIALIZER), not through nccl_core."""
    lib = ctypes.CDLL("libnccl.so.2", mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    v = ctypes.c_int()
    if lib.ncclGetVersion(ctypes.byref(v)) != 0:
        raise AssertionError("ncclGetVersion failed")
    major, minor, patch = nc.nccl_version()
    code = major * 10000 + minor * 100 + patch
    if v.value != code:
        raise AssertionError(f"libnccl.so.2 is {v.value}, nccl_version() says {code}")
    p = _Props(size=ctypes.sizeof(_Props), magic=0xCAFEBEEF, version=code)
    r = lib.ncclCommQueryProperties(ctypes.c_void_p(comm.ptr), ctypes.byref(p))
    if r != 0:
        raise AssertionError(f"ncclCommQueryProperties returned {r}")
    return p


@case(nvlink=True, min_world=1)
def native_comm_properties(ctx):
    """gin_type, railed_gin_type and the rest of ncclCommQueryProperties as
    nccl_core reads them, against the same query made independently (ctypes);
    hostRmaSupport against what the native route does."""
    need((2, 29, 2), "ncclCommQueryProperties (gin_type)")
    comm = nc.get_communicator()
    props = comm.properties
    ours = {"rank": props.rank, "nranks": props.n_ranks, "cuda_dev": props.cuda_dev,
            "nvml_dev": props.nvml_dev, "device_api_support": props.device_api_support,
            "multimem_support": props.multimem_support, "gin_type": int(props.gin_type)}
    full = nc.nccl_version() >= (2, 29, 7)
    if full:
        ours.update(n_lsa_teams=props.n_lsa_teams, host_rma_support=props.host_rma_support,
                    railed_gin_type=int(props.railed_gin_type))
    elif (props.n_lsa_teams, props.host_rma_support, props.railed_gin_type) != (None,) * 3:
        fail(f"2.29.7 fields reported on {nc.nccl_version()}: {props}")
    ref = _query_with_ctypes(comm)
    if nc.nccl_version() >= (2, 31, 2):
        later = [("comm_hash", props.comm_hash, ref.commHash),
                 ("gin_min_stride", props.gin_min_stride, ref.ginMinStride),
                 ("gin_connection_type", props.gin_connection_type, ref.ginConnectionType),
                 ("available_gin_types", props.available_gin_types,
                  frozenset(nc.NcclGinType(t) for t in range(1, 6) if ref.ginSupport[t])),
                 ("dev_comm_runtime_version_size", props.dev_comm_runtime_version_size,
                  ref.devCommRuntimeVersionSize)]
        if nc.nccl_version() >= (2, 32, 3):
            later += [("cft_support", props.cft_support, ref.cftSupport),
                      ("cft_multicast_support", props.cft_multicast_support, ref.cftMulticastSupport),
                      ("cft_counted_support", props.cft_counted_support, ref.cftCountedSupport)]
        for name, got, want in later:
            if got != want:
                fail(f"{name}: properties {got!r}, ncclCommQueryProperties {want!r}")
        hashes = [None] * ctx.world
        dist.all_gather_object(hashes, props.comm_hash)
        if len(set(hashes)) != 1:
            fail(f"comm_hash differs across ranks: {hashes}")
    elif props.comm_hash is not None or props.cft_support is not None:
        fail(f"2.31.2 / 2.32.3 fields reported on {nc.nccl_version()}: {props}")
    pairs = [("rank", ref.rank, comm.rank), ("nranks", ref.nRanks, comm.nranks),
             ("cuda_dev", ref.cudaDev, ctx.device.index), ("nvml_dev", ref.nvmlDev, None),
             ("device_api_support", ref.deviceApiSupport, None),
             ("multimem_support", ref.multimemSupport, None),
             ("gin_type", ref.ginType, int(comm.gin_type))]
    if full:
        pairs += [("n_lsa_teams", ref.nLsaTeams, None),
                  ("host_rma_support", ref.hostRmaSupport, None),
                  ("railed_gin_type", ref.railedGinType, int(comm.railed_gin_type))]
    for name, theirs, api in pairs:
        if ours.get(name) != theirs or (api is not None and api != theirs):
            fail(f"{name}: nccl_core {ours.get(name)}, ncclCommQueryProperties {theirs}, API {api}")
    for name in ("gin_type", "railed_gin_type"):
        if name in ours and ours[name] not in {int(t) for t in nc.NcclGinType}:
            fail(f"{name} {ours[name]} is no NcclGinType")
    if full:
        buf = nc.torch.empty(4096, device=ctx.device)
        win = comm.register_window(buf)
        if ours["n_lsa_teams"] * win.lsa_size != ctx.world:
            fail(f"{ours['n_lsa_teams']} LSA teams of {win.lsa_size} ranks for {ctx.world} ranks")
        torch.cuda.synchronize()
        dist.barrier()
        win.close()
        # hostRmaSupport says whether NCCL's one-sided calls work here.
        g, gc = fresh_group(ctx)
        gc.rma_route = "native"
        if not gc.host_rma_support:
            expect_raises(nc.NcclUnsupported, lambda: poisoned_window(gc, ctx, 4096, SYM),
                          "hostRmaSupport")
        else:
            dst, dst_win = poisoned_window(gc, ctx, 4096, SYM)
            src, src_win = poisoned_window(gc, ctx, 4096, SYM)
            x = payload(ctx, ctx.rank, 1024, torch.float32, 3)
            src.view(torch.float32).copy_(x)
            gc.put_signal(src.view(torch.float32), ctx.rank, dst_win)
            gc.wait_signal(nc.WaitSignalDesc(ctx.rank))
            compare_bytes(dst, x.view(torch.uint8), "native put to itself")
            torch.cuda.synchronize()
            dist.barrier(group=g)
        dist.destroy_process_group(g)
    sanity(ctx)
