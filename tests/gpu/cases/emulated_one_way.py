"""The fast path's one-way kernels (csrc/nvlink/one_way.h: every rank stores
its data, flagged, into its peers' windows; no barrier) on ranks emulated on
one GPU (emulated_ranks.py says what the emulation can and cannot show).
Every type and operator, byte tails and unaligned tensors (the lines'
bytewise loads and stores), the slot's edge, reduce_scatter and the copies,
one-way and barrier calls back to back through the same halves, and calls
that differ between ranks.  Every output element is compared with a float64
CPU reference on fresh random data."""

from __future__ import annotations

import torch

from tests.gpu.cases.common import expect_raises, fail, make, poison, reduce_ref
from tests.gpu.cases.emulated_ranks import (KERNEL_DTYPES, OP_NAMES, SUM, MAX, MIN, AVG,
                                            TIMEOUT_S, _all_reduce, _bytes, _check, _check_copies,
                                            _ops, _queue_copies, _ranks, _reduce_scatter)
from tests.gpu.registry import case

ONE_WAY = 64 << 10  # bytes a call sends each peer at most (the path table sets it per world)


def _one_way(ctx, nranks, max_blocks=0):
    return _ranks(ctx, nranks, max_blocks=max_blocks, one_way_max_bytes=ONE_WAY)


def _size(dtype):
    return torch.empty((), dtype=dtype).element_size()


def _no_faults(lab, what):
    if any(f for f, _ in lab.faults()):
        fail(f"{what}: a mismatch recorded on matched calls: {lab.faults()}")


@case(min_world=1, max_world=1, mode="eager")
def emulated_one_way_every_type_and_op(ctx):
    """all_reduce one way: every type and operator the kernels cover, sizes
    with byte tails (3, 1031 elements) and whole lines, in and out of place,
    at 1, 2, 3, 4 and 8 ranks; then bf16 SUM and int8 MAX at the slot's edge
    (ONE_WAY bytes one way, 8 more through the barrier kernels)."""
    salt = 40000
    for nranks in (1, 2, 3, 4, 8):
        lab = _one_way(ctx, nranks)
        for dtype in KERNEL_DTYPES:
            for op in _ops(dtype):
                for n, in_place in ((3, False), (1031, True), (4096, False)):
                    salt += 1
                    outs, ref = _all_reduce(ctx, lab, dtype, op, n, salt, 0, in_place)
                    lab.synchronize(TIMEOUT_S)
                    for r, out in enumerate(outs):
                        _check(out, ref, dtype, op, nranks,
                               f"one way, {nranks} ranks, rank {r}, n={n}, in place {in_place}")
        for dtype, op in ((torch.bfloat16, SUM), (torch.int8, MAX)):
            for nbytes in (ONE_WAY - 8, ONE_WAY, ONE_WAY + 8):
                n = nbytes // _size(dtype)
                salt += 1
                outs, ref = _all_reduce(ctx, lab, dtype, op, n, salt)
                lab.synchronize(TIMEOUT_S)
                for r, out in enumerate(outs):
                    _check(out, ref, dtype, op, nranks, f"{nranks} ranks, rank {r}, {nbytes} bytes")
        _no_faults(lab, f"{nranks} ranks")


@case(min_world=1, max_world=1, mode="eager")
def emulated_one_way_unaligned_tensors(ctx):
    """Inputs and outputs that start off the lines' 8-byte grid, each rank
    at another offset (the kernels load and store those bytewise), for
    1-, 2-, 4- and 8-byte types at 2 and 3 ranks."""
    salt = 41000
    for nranks in (2, 3):
        lab = _one_way(ctx, nranks)
        for dtype, op in ((torch.int8, SUM), (torch.float16, MAX), (torch.float32, SUM),
                          (torch.int64, MIN)):
            size = _size(dtype)
            for n in (1, 5, 1027):
                salt += 1
                name = OP_NAMES[op]
                cpu = [make(ctx, r, dtype, n=n, op=name, salt=salt) for r in range(nranks)]
                ins, outs = [], []
                for r in range(nranks):
                    # Element offsets off the 8-byte grid where the type
                    # allows (8-byte elements stay on it).
                    in_off = 1 + r % 3 if size < 8 else r
                    out_off = 1 + (r + 1) % 3 if size < 8 else 0
                    base = torch.empty(n + in_off, dtype=dtype, device=ctx.device)
                    ins.append(base[in_off:])
                    ins[-1].copy_(cpu[r].to(ctx.device))
                    outs.append(poison((n + out_off,), dtype, ctx.device)[out_off:])
                for r in range(nranks):
                    lab.reduce(r, ins[r], n, outs[r], n, 0, op, 0, salt)
                lab.synchronize(TIMEOUT_S)
                ref = reduce_ref(cpu, name, dtype).to(torch.float64)
                for r, out in enumerate(outs):
                    _check(out, ref, dtype, op, nranks,
                           f"unaligned, {nranks} ranks, rank {r}, {n} x {dtype}")
        _no_faults(lab, f"{nranks} ranks")


@case(min_world=1, max_world=1, mode="eager")
def emulated_one_way_reduce_scatter_and_copies(ctx):
    """reduce_scatter (out of place and in place, the output inside the
    input), all_gather (out of place and in place) and broadcast (out of
    place and in place at the root) one way, at 2, 3 and 4 ranks; an
    all_to_all between them, which keeps the barrier kernels."""
    salt = 42000
    for nranks in (2, 3, 4):
        lab = _one_way(ctx, nranks)
        for nbytes in (1, 33, 4096, ONE_WAY):
            salt += 10
            # reduce_scatter, float32 SUM and float16 AVG.
            for dtype, op, in_place in ((torch.float32, SUM, False), (torch.float16, AVG, True)):
                n = max(1, nbytes // _size(dtype))
                _reduce_scatter(ctx, lab, dtype, op, n, salt, in_place, f"one way, {nranks} ranks")
            # all_gather in place (each input inside its output), then the
            # copies of emulated_copies: all_gather, all_to_all (barrier
            # kernels) and broadcasts out of place and in place at the root.
            cpu = [_bytes(ctx, r, nbytes, salt + 1) for r in range(nranks)]
            places = [poison((nbytes * nranks,), torch.uint8, ctx.device) for _ in range(nranks)]
            for r in range(nranks):
                places[r][r * nbytes:(r + 1) * nbytes].copy_(cpu[r].to(ctx.device))
            for r in range(nranks):
                piece = places[r][r * nbytes:(r + 1) * nbytes]
                lab.copy(r, piece, nbytes, places[r], nbytes, 0, 0, nranks, salt + 2)
            queued = _queue_copies(ctx, lab, nbytes, salt + 3)
            lab.synchronize(TIMEOUT_S)
            gathered = torch.cat(cpu)
            for r in range(nranks):
                if not torch.equal(places[r].cpu(), gathered):
                    fail(f"all_gather in place wrong: {nranks} ranks, {nbytes} bytes, rank {r}")
            _check_copies(queued, f"one way, {nranks} ranks, {nbytes} bytes")
        _no_faults(lab, f"{nranks} ranks")


@case(min_world=1, max_world=1, mode="eager")
def emulated_one_way_and_barrier_calls_back_to_back(ctx):
    """Calls queued back to back with no host sync, one way and through the
    barrier kernels in turn (sizes below and above the slot, two shots every
    fifth call, broadcasts whose other ranks send only their headers), with
    and without a rank that lags (all_reduce outputs in pinned host memory, a
    grid of 2 blocks): every result is kept and checked after the loop."""
    calls = 120
    for nranks, slow_rank in ((2, None), (2, 1), (3, 0), (4, None), (8, 5)):
        lab = _one_way(ctx, nranks, max_blocks=0 if slow_rank is None else 2)
        # int32 elements: one way (<= 16 Ki elements) and barrier sizes.
        sizes = [1031, 16 << 10, 3, (16 << 10) + 2, 40000, 5, 4096, 150000]
        pending, casts = [], []
        for i in range(calls):
            if i % 7 == 3:
                # A broadcast from a rank that changes, one way.
                root = i % nranks
                nbytes = 4096 + i
                src = _bytes(ctx, root, nbytes, 60000 + i)
                src_dev = src.to(ctx.device)  # kept until the root's stream has read it
                outs = [poison((nbytes,), torch.uint8, ctx.device) for _ in range(nranks)]
                for r in range(nranks):
                    if r == root:
                        lab.copy(r, src_dev, nbytes, outs[r], nbytes, 0, root, 1, i)
                    else:
                        lab.copy(r, None, 0, outs[r], nbytes, 0, root, 1, i)
                casts.append((i, outs, src, src_dev))
                continue
            n = sizes[i % len(sizes)]
            pending.append((i, *_all_reduce(ctx, lab, torch.int32, SUM, n, 50000 + i,
                                            two_shot_min_bytes=1 if i % 5 == 1 else 0,
                                            slow_rank=slow_rank)))
        lab.synchronize(TIMEOUT_S)
        for i, outs, ref in pending:
            for r, out in enumerate(outs):
                _check(out, ref, torch.int32, SUM, nranks,
                       f"{nranks} ranks (slow rank {slow_rank}), call {i}, rank {r}")
        for i, outs, src, _ in casts:
            for r, out in enumerate(outs):
                if not torch.equal(out.cpu(), src):
                    fail(f"{nranks} ranks (slow rank {slow_rank}), broadcast {i}, rank {r} wrong")
        _no_faults(lab, f"{nranks} ranks (slow rank {slow_rank})")


@case(min_world=1, max_world=1, mode="eager")
def emulated_one_way_mismatched_calls_move_no_data(ctx):
    """A rank whose call differs (its sequence number, so its signature):
    every rank sees a peer's header, so every rank records the mismatch and
    writes nothing, for all_reduce and all_gather; matched calls after it
    compute.  A call only one rank makes is ended by the abort flag."""
    for nranks in (2, 4):
        for kind in ("all_reduce", "all_gather"):
            lab = _one_way(ctx, nranks)
            n = 1024
            ins = [make(ctx, r, torch.int32, n=n, salt=31).to(ctx.device) for r in range(nranks)]
            outs = [poison((n * (nranks if kind == "all_gather" else 1),), torch.int32, ctx.device)
                    for _ in range(nranks)]
            before = [o.clone() for o in outs]
            for r in range(nranks):
                seq = 100 + (1 if r == nranks - 1 else 0)  # the last rank differs
                if kind == "all_reduce":
                    lab.reduce(r, ins[r], n, outs[r], n, 0, SUM, 0, seq)
                else:
                    lab.copy(r, ins[r], 4 * n, outs[r], 4 * n, 0, 0, nranks, seq)
            lab.synchronize(TIMEOUT_S)
            faults = lab.faults()
            for r, (f, seq) in enumerate(faults):
                if not f:
                    fail(f"{kind}, {nranks} ranks: rank {r} did not record the mismatched call")
                if seq not in (100, 101):
                    fail(f"{kind}: rank {r}'s record names call {seq}, not 100 or 101")
                if not torch.equal(outs[r].cpu(), before[r].cpu()):
                    fail(f"{kind}, {nranks} ranks: rank {r} saw the mismatch but wrote its output")
            # The calls after it still meet and compute.
            for i in range(3):
                after, ref = _all_reduce(ctx, lab, torch.float32, SUM, 513 + i, 43000 + i)
                lab.synchronize(TIMEOUT_S)
                for r, out in enumerate(after):
                    _check(out, ref, torch.float32, SUM, nranks,
                           f"after a mismatch, {nranks} ranks, call {i}, rank {r}")
    lab = _one_way(ctx, 2)
    x = torch.ones(1024, dtype=torch.float32, device=ctx.device)
    lab.reduce(0, x, 1024, x, 1024, 0, SUM)  # rank 1 never calls
    expect_raises(RuntimeError, lambda: lab.synchronize(2.0), "did not finish")
