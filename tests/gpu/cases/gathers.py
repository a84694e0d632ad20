"""Gathers, scatters and all-to-all: every dtype, every output element checked."""

from __future__ import annotations

import torch
import torch.distributed as dist

from tests.gpu.cases.common import DTYPES, check, make, poison, wide
from tests.gpu.registry import case


def _exact(t, ref, dtype, what):
    check(t, wide(ref), dtype, "SUM", 1, what)


@case(min_world=1)
def all_gather_list_and_into_tensor(ctx):
    for di, dtype in enumerate(DTYPES + [torch.complex64]):
        n = 101 + di
        if dtype.is_complex:
            ins = [torch.randn(n, generator=ctx.gen(r, di), dtype=dtype) for r in range(ctx.world)]
        else:
            ins = [make(ctx, r, dtype, n=n, salt=di) for r in range(ctx.world)]
        x = ins[ctx.rank].to(ctx.device)
        outs = [poison((n,), dtype, ctx.device) for _ in range(ctx.world)]
        dist.all_gather(outs, x)
        for r in range(ctx.world):
            _exact(outs[r], ins[r], dtype, f"all_gather[{r}]")
        flat = poison((ctx.world * n,), dtype, ctx.device)
        dist.all_gather_into_tensor(flat, x)
        _exact(flat, torch.cat(ins), dtype, "all_gather_into_tensor")
        stacked = poison((ctx.world, n), dtype, ctx.device)
        dist.all_gather_into_tensor(stacked, x)
        _exact(stacked, torch.stack(ins), dtype, "all_gather_into_tensor 2-D")


@case(min_world=1)
def gather_and_scatter_every_root(ctx):
    for di, dtype in enumerate(DTYPES):
        for root in range(ctx.world):
            n = 65
            ins = [make(ctx, r, dtype, n=n, salt=di * 7 + root) for r in range(ctx.world)]
            x = ins[ctx.rank].to(ctx.device)
            outs = [poison((n,), dtype, ctx.device) for _ in range(ctx.world)] if ctx.rank == root else None
            dist.gather(x, gather_list=outs, dst=root)
            if ctx.rank == root:
                for r in range(ctx.world):
                    _exact(outs[r], ins[r], dtype, f"gather root={root} [{r}]")
            chunks = [make(ctx, root, dtype, n=n, salt=1000 + di * 7 + r) for r in range(ctx.world)]
            out = poison((n,), dtype, ctx.device)
            sl = [c.to(ctx.device) for c in chunks] if ctx.rank == root else None
            dist.scatter(out, scatter_list=sl, src=root)
            _exact(out, chunks[ctx.rank], dtype, f"scatter root={root}")


def _block(ctx, src, dst, rows, cols, dtype, salt):
    """Rows that `src` sends to `dst`, deterministic on every rank."""
    return make(ctx, src, dtype, n=rows * cols, salt=salt * 1000 + dst).reshape(rows, cols)


@case(min_world=1)
def all_to_all_single_even_and_uneven(ctx):
    w = ctx.world
    for di, dtype in enumerate(DTYPES):
        cols = 5
        # Even split.
        blocks = {(s, d): _block(ctx, s, d, 3, cols, dtype, di) for s in range(w) for d in range(w)}
        x = torch.cat([blocks[(ctx.rank, d)] for d in range(w)]).to(ctx.device)
        out = poison((3 * w, cols), dtype, ctx.device)
        dist.all_to_all_single(out, x)
        _exact(out, torch.cat([blocks[(s, ctx.rank)] for s in range(w)]), dtype, "all_to_all_single even")
        # Splits on every rank, all equal on rank 0 only (a dropless MoE's
        # balanced rank): rank 0 must take the path its peers take.
        eq = lambda s, d: 3 if 0 in (s, d) else 4 + (s + d) % 3  # noqa: E731
        eb = {(s, d): _block(ctx, s, d, eq(s, d), cols, dtype, di + 30) for s in range(w) for d in range(w)}
        x = torch.cat([eb[(ctx.rank, d)] for d in range(w)]).to(ctx.device)
        out_splits = [eq(s, ctx.rank) for s in range(w)]
        out = poison((sum(out_splits), cols), dtype, ctx.device)
        dist.all_to_all_single(out, x, output_split_sizes=out_splits,
                               input_split_sizes=[eq(ctx.rank, d) for d in range(w)])
        _exact(out, torch.cat([eb[(s, ctx.rank)] for s in range(w)]), dtype,
               "all_to_all_single, splits equal on rank 0 only")
        # Uneven: src s sends (s + 2*d) % 4 rows (zero included) to d.
        rows = lambda s, d: (s + 2 * d) % 4  # noqa: E731
        ub = {(s, d): _block(ctx, s, d, rows(s, d), cols, dtype, di + 50) for s in range(w) for d in range(w)}
        in_splits = [rows(ctx.rank, d) for d in range(w)]
        out_splits = [rows(s, ctx.rank) for s in range(w)]
        x = torch.cat([ub[(ctx.rank, d)] for d in range(w)]).to(ctx.device)
        out = poison((sum(out_splits), cols), dtype, ctx.device)
        dist.all_to_all_single(out, x, output_split_sizes=out_splits, input_split_sizes=in_splits)
        _exact(out, torch.cat([ub[(s, ctx.rank)] for s in range(w)]), dtype, "all_to_all_single uneven")


@case(min_world=1)
def all_to_all_list(ctx):
    w = ctx.world
    for di, dtype in enumerate([torch.float32, torch.bfloat16, torch.int64, torch.uint8]):
        sizes = lambda s, d: 3 + s + d  # noqa: E731
        data = {(s, d): make(ctx, s, dtype, n=sizes(s, d), salt=di * 100 + d) for s in range(w) for d in range(w)}
        ins = [data[(ctx.rank, d)].to(ctx.device) for d in range(w)]
        outs = [poison((sizes(s, ctx.rank),), dtype, ctx.device) for s in range(w)]
        dist.all_to_all(outs, ins)
        for s in range(w):
            _exact(outs[s], data[(s, ctx.rank)], dtype, f"all_to_all from {s}")


@case(min_world=1)
def coalesced_collectives(ctx):
    from torch.distributed.distributed_c10d import _coalescing_manager

    w = ctx.world
    dev = ctx.device
    # all_reduce fast path
    ins = [[make(ctx, r, torch.float32, n=50 + i, salt=i) for r in range(w)] for i in range(3)]
    ts = [ins[i][ctx.rank].to(dev) for i in range(3)]
    with _coalescing_manager(device=dev):
        for t in ts:
            dist.all_reduce(t)
    for i in range(3):
        check(ts[i], sum(x.double() for x in ins[i]), torch.float32, "SUM", w, f"coalesced all_reduce {i}")
    # all_gather_into_tensor fast path
    xs = [make(ctx, ctx.rank, torch.bfloat16, n=40, salt=10 + i).to(dev) for i in range(2)]
    outs = [poison((w * 40,), torch.bfloat16, dev) for _ in range(2)]
    with _coalescing_manager(device=dev):
        for o, x in zip(outs, xs):
            dist.all_gather_into_tensor(o, x)
    for i in range(2):
        ref = torch.cat([make(ctx, r, torch.bfloat16, n=40, salt=10 + i) for r in range(w)])
        _exact(outs[i], ref, torch.bfloat16, f"coalesced all_gather_into_tensor {i}")
    # reduce_scatter_tensor fast path, AVG
    full = [[make(ctx, r, torch.float32, n=w * 30, salt=20 + i) for r in range(w)] for i in range(2)]
    outs = [poison((30,), torch.float32, dev) for _ in range(2)]
    with _coalescing_manager(device=dev):
        for i in range(2):
            dist.reduce_scatter_tensor(outs[i], full[i][ctx.rank].to(dev), op=dist.ReduceOp.AVG)
    for i in range(2):
        ref = (sum(x.double() for x in full[i]) / w)[ctx.rank * 30:(ctx.rank + 1) * 30]
        check(outs[i], ref, torch.float32, "AVG", w, f"coalesced reduce_scatter_tensor {i}")
    # allreduce_coalesced entry point of the backend
    pg = dist.group.WORLD._get_backend(dev)
    ts = [torch.full((7,), float(ctx.rank + i), device=dev) for i in range(3)]
    opts = dist.AllreduceCoalescedOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    pg.allreduce_coalesced(ts, opts).wait()
    for i in range(3):
        assert torch.all(ts[i] == float(w - 1 + i)), "allreduce_coalesced MAX wrong"
