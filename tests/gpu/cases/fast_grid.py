"""The fast path's grid follows the call's size (kernels.cu blocks_for: more
blocks for larger calls, the same number on every rank).  Calls whose grids
differ run back to back with no host sync in between, every collective the
fast path takes, so a barrier flag of a block that sat out the previous calls
must neither hold its peers nor let them through early.  Every result is kept
and checked after the loop, on int32 data that any order of summation keeps
exact, and on bfloat16 against the float64 reference."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, poison, reduce_ref
from tests.gpu.registry import case

ROUNDS = 20
LIMIT = 1 << 20
# Bytes each rank stages: the table's smallest grid, the largest, and between;
# 256 KiB is the last size whose threads get one 16-byte pack each (the
# narrow kernels, kernels.cu wide_for) and 256 KiB + 16 the first of the wide
# ones, whose other packs lie past the end of the call.
SIZES = (4 << 10, LIMIT, 300 << 10, 96 << 10, 256 << 10, (256 << 10) + 16, 600 << 10)
# The wide loop's pack shapes (16, 8, 4 and 2 elements a pack), one op each.
WIDE_ALL_REDUCES = ((torch.uint8, "MAX"), (torch.float16, "MIN"), (torch.float32, "PRODUCT"),
                    (torch.float64, "SUM"))


def _group(ctx):
    opts = nc.Options()
    opts.fast_path_max_bytes = LIMIT  # both modes
    opts.push_max_bytes = 0
    return dist.new_group(list(range(ctx.world)), backend="nccl_core", pg_options=opts)


def _ints(ctx, rank, n, salt):
    return make(ctx, rank, torch.int32, n=n, salt=salt)


@case(nvlink=True, min_world=1, timeout=300)
def fast_path_grid_changes_between_calls(ctx):
    w, r, d = ctx.world, ctx.rank, ctx.device
    g = _group(ctx)
    be = g._get_backend(d)
    taken0 = be._fast_path_calls()
    kept = []  # (output, reference, dtype, what)
    calls = 0
    for i in range(ROUNDS):
        for k, nbytes in enumerate(SIZES):
            salt = 10 * i + k
            n = nbytes // 4
            # all_reduce, int32 (exact)
            ins = [_ints(ctx, q, n, salt) for q in range(w)]
            t = ins[r].to(d)
            dist.all_reduce(t, group=g)
            kept.append((t, reduce_ref(ins, "SUM", torch.int32), torch.int32,
                         f"all_reduce {nbytes} B round {i}"))
            # reduce_scatter_tensor: w blocks of n // w (whole bytes staged)
            m = n // w
            ins = [_ints(ctx, q, m * w, salt + 1) for q in range(w)]
            out = poison((m,), torch.int32, d)
            dist.reduce_scatter_tensor(out, ins[r].to(d), group=g)
            kept.append((out, reduce_ref(ins, "SUM", torch.int32).reshape(w, m)[r], torch.int32,
                         f"reduce_scatter_tensor {m * w * 4} B round {i}"))
            # all_gather_into_tensor of n // w each
            ins = [_ints(ctx, q, m, salt + 2) for q in range(w)]
            out = poison((m * w,), torch.int32, d)
            dist.all_gather_into_tensor(out, ins[r].to(d), group=g)
            kept.append((out, torch.cat(ins).to(torch.float64), torch.int32,
                         f"all_gather {m * 4} B round {i}"))
            # broadcast from a root that moves
            root = (i + k) % w
            ins = [_ints(ctx, q, n, salt + 3) for q in range(w)]
            t = ins[r].to(d)
            dist.broadcast(t, root, group=g)
            kept.append((t, ins[root].to(torch.float64), torch.int32,
                         f"broadcast {nbytes} B root {root} round {i}"))
            # all_to_all_single, even splits
            ins = [_ints(ctx, q, m * w, salt + 4) for q in range(w)]
            out = poison((m * w,), torch.int32, d)
            dist.all_to_all_single(out, ins[r].to(d), group=g)
            ref = torch.cat([ins[p].reshape(w, m)[r] for p in range(w)]).to(torch.float64)
            kept.append((out, ref, torch.int32, f"all_to_all_single {m * w * 4} B round {i}"))
            calls += 5
        # bfloat16 AVG at the largest size, misaligned by one element
        n = LIMIT // 2
        ins = [make(ctx, q, torch.bfloat16, n=n, op="AVG", salt=i) for q in range(w)]
        base = torch.zeros(n + 1, dtype=torch.bfloat16, device=d)
        t = base[1:]
        t.copy_(ins[r].to(d))
        dist.all_reduce(t, op=dist.ReduceOp.AVG, group=g)
        kept.append((t, reduce_ref(ins, "AVG", torch.bfloat16), torch.bfloat16,
                     f"all_reduce AVG bf16 {LIMIT} B misaligned round {i}"))
        calls += 1
        # every pack shape of the wide loop, at a size that takes it
        for j, (dtype, op) in enumerate(WIDE_ALL_REDUCES):
            n = (600 << 10) // dtype.itemsize
            ins = [make(ctx, q, dtype, n=n, op=op, salt=100 * i + j) for q in range(w)]
            t = ins[r].to(d)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g)
            kept.append((t, reduce_ref(ins, op, dtype), dtype, f"all_reduce {op} {dtype} round {i}"))
            calls += 1
    torch.cuda.synchronize(d)
    taken = be._fast_path_calls() - taken0
    if taken != calls:
        fail(f"{taken} of {calls} calls took the fast path")
    ops = {dtype: op for dtype, op in WIDE_ALL_REDUCES}
    ops.update({torch.bfloat16: "AVG", torch.int32: "SUM"})
    for out, ref, dtype, what in kept:
        check(out, ref, dtype, ops[dtype], w, what)
    dist.destroy_process_group(g)
