"""The fast path's and the push's kernels on one GPU, for 2 to 16 ranks
emulated there (csrc/testing/emulated_ranks.h: every rank's window is a buffer
of this GPU, each rank's calls on a stream of its own).  They check the
kernels' logic where no NVLink peers exist: every type and operator, sizes
around the vector, grid and wide-kernel edges, one and two shots,
back-to-back calls, the push's slots, and the signatures that keep ranks
making different calls from exchanging bytes.  Timing, the fences between
GPUs and a rank trailing its peers by a whole call need real peers (the
nvlink cases).  Every output element is compared with a float64 CPU
reference on fresh random data."""

from __future__ import annotations

import torch

import nccl_core_backend as nc
from nccl_core_backend import _testing
from tests.gpu.cases.common import check, expect_raises, fail, make, poison, reduce_ref
from tests.gpu.registry import Skip, case

SUM, PROD, MAX, MIN, AVG = 0, 1, 2, 3, 4
OP_NAMES = {SUM: "SUM", PROD: "PRODUCT", MAX: "MAX", MIN: "MIN", AVG: "AVG"}
# The types the kernels cover (engine.cpp reducible); AVG on the floating ones.
KERNEL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                 torch.int8, torch.uint8, torch.int32, torch.int64]
FLOATING = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
HALF = 1 << 20  # the fast path's largest staged call at 2-4 ranks
TIMEOUT_S = 60.0


def _ranks(ctx, nranks, push_max_bytes=0, max_blocks=0, one_way_max_bytes=0):
    """Emulated ranks; the barrier kernels for every call unless
    `one_way_max_bytes` (emulated_one_way.py)."""
    if torch.cuda.get_device_properties(ctx.device).multi_processor_count < nranks:
        raise Skip(f"{nranks} emulated ranks need {nranks} multiprocessors")
    return _testing._EmulatedRanks(nranks, HALF, push_max_bytes, ctx.device.index, max_blocks,
                                one_way_max_bytes)


def _check(out, ref, dtype, op, nranks, what):
    """check() of every element; AVG on 16-bit floats within the one rounding
    of the kernel's float sum times 1/nranks (the reference divides exactly)."""
    if op == AVG and dtype in (torch.float16, torch.bfloat16):
        ulp = 2 ** -7 if dtype == torch.bfloat16 else 2 ** -10
        got = out.detach().cpu().to(torch.float64)
        want = ref.reshape(got.shape).to(torch.float64)
        bad = (~torch.isclose(got, want, rtol=ulp, atol=ulp)).nonzero()
        if bad.numel():
            i = bad[0].item()
            fail(f"{what} dtype={dtype} op=AVG: {bad.shape[0]} of {got.numel()} elements wrong; "
                 f"first at {i}: got {got[i].item()} expected {want[i].item()}")
        return
    if not dtype.is_floating_point:
        ref = ref.to(dtype)  # integer results wrap in their type, as NCCL's do
    check(out, ref, dtype, OP_NAMES[op], nranks, what)


def _ops(dtype):
    return [SUM, PROD, MAX, MIN] + ([AVG] if dtype in FLOATING else [])


def _all_reduce(ctx, lab, dtype, op, n, salt, two_shot_min_bytes=0, in_place=False,
                slow_rank=None):
    """One all_reduce queued on every emulated rank: (outputs, reference),
    the outputs to read once the ranks are synchronized.  `slow_rank` writes
    its output into pinned host memory, over the bus: it lags behind the
    others in every call's last phase."""
    name = OP_NAMES[op]
    cpu = [make(ctx, r, dtype, n=n, op=name, salt=salt) for r in range(lab.nranks)]
    ins = [x.to(ctx.device) for x in cpu]
    outs = ins if in_place else [poison((n,), dtype, ctx.device) for _ in ins]
    if slow_rank is not None:
        outs[slow_rank] = outs[slow_rank].cpu().pin_memory()
    for r in range(lab.nranks):
        if not lab.reduce(r, ins[r], n, outs[r], n, 0, op, two_shot_min_bytes, salt):
            fail(f"the kernels refused {dtype} {name}")
    return outs, reduce_ref(cpu, name, dtype).to(torch.float64)


@case(min_world=1, max_world=1, mode="eager")
def emulated_all_reduce_every_type_and_op(ctx):
    """Every type and operator the kernels cover, one and two shots, odd and
    16-byte sizes, in and out of place, at 2, 3, 4 and 8 ranks."""
    salt = 0
    for nranks in (2, 3, 4, 8):
        lab = _ranks(ctx, nranks)
        for dtype in KERNEL_DTYPES:
            for op in _ops(dtype):
                for n, two_shot, in_place in ((1031, 0, False), (4096, 0, True), (4096, 1, False),
                                              (1031, 1, True)):
                    salt += 1
                    outs, ref = _all_reduce(ctx, lab, dtype, op, n, salt, two_shot, in_place)
                    lab.synchronize(TIMEOUT_S)
                    for r, out in enumerate(outs):
                        _check(out, ref, dtype, op, nranks,
                               f"{nranks} ranks, rank {r}, n={n}, two shots {bool(two_shot)}, "
                               f"in place {in_place}")
        if any(f for f, _ in lab.faults()):
            fail(f"{nranks} ranks recorded a mismatch on matched calls: {lab.faults()}")


@case(min_world=1, max_world=1, mode="eager")
def emulated_all_reduce_sizes_around_the_edges(ctx):
    """Sizes at the edges of the vector loop (16-byte packs), the grid
    (kernels.cu blocks_for: 128 KiB) and the wide kernels (wide_for: two
    packs a thread), up to the full half, one and two shots; bf16 SUM and
    int32 MAX, every element checked."""
    salt = 1000
    for nranks in (2, 4, 5):
        lab = _ranks(ctx, nranks)
        threads = lab.max_blocks * 512
        for dtype, op in ((torch.bfloat16, SUM), (torch.int32, MAX)):
            size = torch.empty((), dtype=dtype).element_size()
            edges = [1, 15, 16, 17, (128 << 10) - 16, 128 << 10, (128 << 10) + 16,
                     2 * 16 * threads, 2 * 16 * threads + 16, HALF - 16, HALF]
            for nbytes in edges:
                n = max(1, nbytes // size)
                for two_shot in (0, 1):
                    salt += 1
                    outs, ref = _all_reduce(ctx, lab, dtype, op, n, salt, two_shot)
                    lab.synchronize(TIMEOUT_S)
                    for r, out in enumerate(outs):
                        check(out, ref, dtype, OP_NAMES[op], nranks,
                              f"{nranks} ranks, rank {r}, {n} elements, two shots {two_shot}")


@case(min_world=1, max_world=1, mode="eager")
def emulated_back_to_back_calls_share_the_halves(ctx):
    """Calls queued back to back with no host sync, their sizes (so grids,
    widths and shots) changing every call and the ranks' streams running
    apart, with and without a rank that lags (its outputs in pinned host
    memory, on a grid of 2 blocks): every result is kept and checked after
    the loop.  It checks uneven progress through the halves, not the halves
    themselves: a kernel whose halves never alternate still passed it on
    one GPU, where a lagging rank never trails a whole call."""
    calls = 96
    for nranks, slow_rank in ((2, None), (2, 1), (4, None), (4, 0), (8, 3)):
        lab = _ranks(ctx, nranks, max_blocks=0 if slow_rank is None else 2)
        # int32 elements, 68 bytes to the whole 1 MiB half; whole halves
        # follow each other, so a restage covers what a lagging peer has
        # yet to read.
        sizes = [1031, HALF // 4, HALF // 4 - 4, 16 << 10, 17, 75 << 10, 4096]
        pending = []
        for i in range(calls):
            n = sizes[i % len(sizes)]
            # Two shots every fourth call, through the same halves.  A call
            # in one shot is the one whose readers a restage can overtake:
            # a rank leaves it as soon as its own reads are done.
            pending.append(_all_reduce(ctx, lab, torch.int32, SUM, n, 5000 + i,
                                       two_shot_min_bytes=1 if i % 4 == 1 else 0,
                                       slow_rank=slow_rank))
        lab.synchronize(TIMEOUT_S)
        for i, (outs, ref) in enumerate(pending):
            for r, out in enumerate(outs):
                _check(out, ref, torch.int32, SUM, nranks,
                       f"{nranks} ranks (slow rank {slow_rank}), call {i}, rank {r}")


def _reduce_scatter(ctx, lab, dtype, op, n, salt, in_place, what):
    """One reduce_scatter of n elements a rank on every emulated rank (in
    place: each output is its rank's piece of its input), synchronized and
    every element checked."""
    nranks, name = lab.nranks, OP_NAMES[op]
    cpu = [make(ctx, r, dtype, n=n * nranks, op=name, salt=salt) for r in range(nranks)]
    ins = [x.to(ctx.device) for x in cpu]
    outs = [ins[r][r * n:(r + 1) * n] if in_place else poison((n,), dtype, ctx.device)
            for r in range(nranks)]
    for r in range(nranks):
        lab.reduce(r, ins[r], n * nranks, outs[r], n, r * n, op, 0, salt)
    lab.synchronize(TIMEOUT_S)
    full = reduce_ref(cpu, name, dtype)
    for r, out in enumerate(outs):
        _check(out, full[r * n:(r + 1) * n], dtype, op, nranks,
               f"reduce_scatter, {what}, rank {r}, n={n}, in place {in_place}")


@case(min_world=1, max_world=1, mode="eager")
def emulated_reduce_scatter(ctx):
    """reduce_scatter: every rank stages n x nranks and reduces its own n."""
    salt = 7000
    for nranks in (2, 3, 4):
        lab = _ranks(ctx, nranks)
        for dtype, op in ((torch.float32, SUM), (torch.bfloat16, MAX), (torch.int64, MIN),
                          (torch.float16, AVG)):
            size = torch.empty((), dtype=dtype).element_size()
            for n in (1, 257, 4096, (HALF // size) // nranks // 16 * 16):
                salt += 1
                _reduce_scatter(ctx, lab, dtype, op, n, salt, False, f"{nranks} ranks")


def _bytes(ctx, rank, nbytes, salt):
    g = ctx.gen(rank, salt)
    return torch.randint(0, 256, (nbytes,), generator=g, dtype=torch.uint8)


def _queue_copies(ctx, lab, nbytes, salt):
    """Queues all_gather, all_to_all and broadcasts (out of place from the
    last rank, in place from rank 0) of `nbytes` a piece on every rank;
    returns [(name, outputs, expected CPU bytes per rank)] to check once the
    ranks are synchronized (the inputs are kept in it too)."""
    nranks = lab.nranks
    # all_gather: every rank stages its piece, reads every rank's.
    cpu = [_bytes(ctx, r, nbytes, salt) for r in range(nranks)]
    ins = [x.to(ctx.device) for x in cpu]
    outs = [poison((nbytes * nranks,), torch.uint8, ctx.device) for _ in range(nranks)]
    for r in range(nranks):
        lab.copy(r, ins[r], nbytes, outs[r], nbytes, 0, 0, nranks, salt)
    # all_to_all: rank r stages nranks pieces, takes piece r of each.
    cpu2 = [_bytes(ctx, r, nbytes * nranks, salt + 500) for r in range(nranks)]
    ins2 = [x.to(ctx.device) for x in cpu2]
    outs2 = [poison((nbytes * nranks,), torch.uint8, ctx.device) for _ in range(nranks)]
    for r in range(nranks):
        lab.copy(r, ins2[r], nbytes * nranks, outs2[r], nbytes, r * nbytes, 0, nranks, salt + 1)
    # broadcast from the last rank, out of place; then from 0, in place.
    root = nranks - 1
    src = _bytes(ctx, root, nbytes, salt + 900).to(ctx.device)
    bouts = [poison((nbytes,), torch.uint8, ctx.device) for _ in range(nranks)]
    for r in range(nranks):
        if r == root:
            lab.copy(r, src, nbytes, bouts[r], nbytes, 0, root, 1, salt + 2)
        else:
            lab.copy(r, None, 0, bouts[r], nbytes, 0, root, 1, salt + 2)
    inplace = [poison((nbytes,), torch.uint8, ctx.device) for _ in range(nranks)]
    inplace[0] = _bytes(ctx, 0, nbytes, salt + 901).to(ctx.device)
    expected0 = inplace[0].cpu()
    for r in range(nranks):
        if r == 0:
            lab.copy(r, inplace[0], nbytes, inplace[0], nbytes, 0, 0, 0, salt + 3)
        else:
            lab.copy(r, None, 0, inplace[r], nbytes, 0, 0, 1, salt + 3)
    gathered = torch.cat(cpu)
    to_all = [torch.cat([cpu2[p][r * nbytes:(r + 1) * nbytes] for p in range(nranks)])
              for r in range(nranks)]
    return [("all_gather", outs, [gathered] * nranks, ins),
            ("all_to_all", outs2, to_all, ins2),
            ("broadcast (out of place at the root)", bouts, [src.cpu()] * nranks, src),
            ("broadcast (in place at the root)", inplace, [expected0] * nranks, None)]


def _check_copies(queued, what):
    for name, outs, wants, _ in queued:
        for r, (out, want) in enumerate(zip(outs, wants)):
            if not torch.equal(out.cpu(), want):
                fail(f"{name} wrong: {what}, rank {r}")


@case(min_world=1, max_world=1, mode="eager")
def emulated_copies(ctx):
    """all_gather, all_to_all and broadcast (in place and out of place at
    the root) through launch_copy, at odd and aligned sizes."""
    salt = 9000
    for nranks in (2, 3, 4):
        lab = _ranks(ctx, nranks)
        for nbytes in (1, 33, 4096, 128 << 10, (HALF // nranks) // 16 * 16):
            salt += 1
            queued = _queue_copies(ctx, lab, nbytes, salt)
            lab.synchronize(TIMEOUT_S)
            _check_copies(queued, f"{nranks} ranks, {nbytes} bytes")


PUSH_MAX = 16 << 20


@case(min_world=1, max_world=1, mode="eager")
def emulated_push_every_type_op_and_alignment(ctx):
    """The push all-reduce in place: every type and operator, tensors at
    every alignment their type allows, sizes whose chunks do not divide
    evenly, back to back through the same slots (a larger call after a
    smaller one), at 2, 3 and 4 ranks."""
    salt = 20000
    for nranks in (2, 3, 4):
        lab = _ranks(ctx, nranks, PUSH_MAX)
        blocks = min(8, lab.max_push_blocks)
        pending = []
        for dtype in KERNEL_DTYPES:
            size = torch.empty((), dtype=dtype).element_size()
            for op in _ops(dtype):
                for nbytes, offset in ((16, 0), (4096 + 48, 1), (3 << 20, 0), (1 << 20, 2),
                                       ((5 << 20) + 16 * 3, 0)):
                    if offset * size % 16 == 0 and offset:
                        continue
                    n = nbytes // size
                    salt += 1
                    name = OP_NAMES[op]
                    cpu = [make(ctx, r, dtype, n=n, op=name, salt=salt) for r in range(nranks)]
                    datas = []
                    for r in range(nranks):
                        base = torch.empty(n + offset, dtype=dtype, device=ctx.device)
                        view = base[offset:]
                        view.copy_(cpu[r].to(ctx.device))
                        datas.append(view)
                    for r in range(nranks):
                        lab.push(r, datas[r], op, blocks, salt)
                    pending.append((datas, reduce_ref(cpu, name, dtype), dtype, op, nbytes,
                                    offset))
            lab.synchronize(TIMEOUT_S)
            for datas, ref, dt, op, nbytes, offset in pending:
                for r, d in enumerate(datas):
                    _check(d, ref, dt, op, nranks,
                          f"push, {nranks} ranks, rank {r}, {nbytes} bytes at element {offset}")
            pending.clear()


@case(min_world=1, max_world=1, mode="eager")
def emulated_mismatched_calls_move_no_data(ctx):
    """A rank whose call differs (here its sequence number, so its signature)
    is recorded as a mismatch by at least one side, and a rank that saw it
    writes nothing: the fast path's one shot and two shots, and the push."""
    for nranks in (2, 4):
        for kind in ("one shot", "two shots", "push"):
            lab = _ranks(ctx, nranks, PUSH_MAX if kind == "push" else 0)
            n = 4096
            ins = [make(ctx, r, torch.int32, n=n, salt=31).to(ctx.device) for r in range(nranks)]
            outs = [poison((n,), torch.int32, ctx.device) for _ in range(nranks)]
            before = [o.clone() for o in outs]
            for r in range(nranks):
                seq = 100 + (1 if r == nranks - 1 else 0)  # the last rank differs
                if kind == "push":
                    outs[r].copy_(ins[r])
                    before[r] = outs[r].clone()
                    lab.push(r, outs[r], SUM, 2, seq)
                else:
                    lab.reduce(r, ins[r], n, outs[r], n, 0, SUM, 1 if kind == "two shots" else 0,
                               seq)
            lab.synchronize(TIMEOUT_S)
            faults = lab.faults()
            seen = [r for r, (f, _) in enumerate(faults) if f]
            if not seen:
                fail(f"{kind}, {nranks} ranks: no rank recorded the mismatched call")
            for r in seen:
                f, seq = faults[r]
                if seq not in (100, 101):
                    fail(f"{kind}: rank {r}'s record names call {seq}, not 100 or 101")
                peer = _testing._fault_peer(f)
                if not 0 <= peer < nranks or peer == r:
                    fail(f"{kind}: rank {r}'s record names peer {peer}")
                if not torch.equal(outs[r].cpu(), before[r].cpu()):
                    fail(f"{kind}, {nranks} ranks: rank {r} saw the mismatch but wrote its output")


@case(min_world=1, max_world=1, mode="eager")
def emulated_ranks_that_never_meet_are_aborted(ctx):
    """A call only some ranks make waits at the barrier until the abort flag
    ends it, as the watchdog ends a real one; the ranks are then refused."""
    lab = _ranks(ctx, 2)
    x = torch.ones(1024, dtype=torch.float32, device=ctx.device)
    lab.reduce(0, x, 1024, x, 1024, 0, SUM)  # rank 1 never calls
    expect_raises(RuntimeError, lambda: lab.synchronize(2.0), "did not finish")
    expect_raises(RuntimeError, lambda: lab.reduce(0, x, 1024, x, 1024, 0, SUM), "aborted")
    # The GPU is fine afterwards: a fresh set of ranks computes.
    fresh = _ranks(ctx, 2)
    outs, ref = _all_reduce(ctx, fresh, torch.float32, SUM, 1031, 77)
    fresh.synchronize(TIMEOUT_S)
    for r, out in enumerate(outs):
        check(out, ref, torch.float32, "SUM", 2, f"after an abort, rank {r}")


@case(min_world=1, max_world=1, mode="eager")
def emulated_ranks_refuse_bad_arguments(ctx):
    lab = _ranks(ctx, 2, PUSH_MAX)
    x = torch.zeros(1024, dtype=torch.float32, device=ctx.device)
    small = torch.zeros(10, dtype=torch.float32, device=ctx.device)
    expect_raises(ValueError, lambda: lab.reduce(0, x, 1024, small, 1024, 0, SUM), "holds")
    expect_raises(ValueError, lambda: lab.reduce(2, x, 1024, x, 1024, 0, SUM), "rank 2")
    expect_raises(ValueError, lambda: lab.reduce(0, x.cpu(), 1024, x, 1024, 0, SUM), "cuda")
    expect_raises(ValueError, lambda: lab.reduce(0, x, 1024, x, 1000, 100, SUM), "past")
    expect_raises(ValueError, lambda: lab.reduce(0, x, 1 << 62, x, 1024, 0, SUM), "overflow")
    expect_raises(ValueError, lambda: lab.copy(0, None, 0, x, 1024, 0, 1, 2), "outside")
    expect_raises(ValueError, lambda: lab.push(0, small, SUM, 1), "does not cover")
    expect_raises(ValueError, lambda: lab.push(0, x, SUM, 10 ** 6), "blocks")
    expect_raises(ValueError, lambda: _testing._EmulatedRanks(17, HALF), "nranks")
