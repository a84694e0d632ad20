"""Reductions and broadcast: every dtype x reduce op against float64 references."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc

from tests.gpu.cases.common import (
    DTYPES, OPS, check, expect_raises, make, op_valid, poison, reduce_op, reduce_ref, factor_for,
)
from tests.gpu.registry import case


def _each_dtype_op(ctx, body):
    """Runs body(dtype, op, salt) for valid pairs; invalid ones must raise."""
    for di, dtype in enumerate(DTYPES):
        for oi, op in enumerate(OPS):
            salt = di * 31 + oi
            if not op_valid(dtype, op):
                t = make(ctx, ctx.rank, dtype, 16).to(ctx.device)
                expect_raises(ValueError, lambda: dist.all_reduce(t, op=reduce_op(op, ctx, dtype)))
                continue
            body(dtype, op, salt)


@case(min_world=1)
def all_reduce_every_dtype_and_op(ctx):
    def body(dtype, op, salt):
        base = "PRODUCT" if op == "PRODUCT" else "SUM"
        inputs = [make(ctx, r, dtype, op=base, salt=salt) for r in range(ctx.world)]
        t = inputs[ctx.rank].to(ctx.device)
        dist.all_reduce(t, op=reduce_op(op, ctx, dtype))
        check(t, reduce_ref(inputs, op, dtype, factor_for(ctx, dtype)), dtype, op, ctx.world, "all_reduce")

    _each_dtype_op(ctx, body)


@case(min_world=1)
def all_reduce_complex(ctx):
    for dtype in (torch.complex64, torch.complex128):
        for op in ("SUM", "AVG", "PREMUL_SUM"):
            inputs = []
            for r in range(ctx.world):
                g = ctx.gen(r, salt=7)
                inputs.append(torch.randn(257, generator=g, dtype=dtype))
            t = inputs[ctx.rank].to(ctx.device)
            dist.all_reduce(t, op=reduce_op(op, ctx, torch.float32 if dtype == torch.complex64 else torch.float64))
            xs = torch.stack([x.to(torch.complex128) for x in inputs])
            f = factor_for(ctx, None)
            ref = {"SUM": xs.sum(0), "AVG": xs.sum(0) / ctx.world, "PREMUL_SUM": xs.sum(0) * f}[op]
            got = t.cpu().to(torch.complex128)
            tol = 1e-5 if dtype == torch.complex64 else 1e-12
            assert torch.allclose(got, ref, rtol=tol, atol=tol), f"complex {dtype} {op} mismatch"
        t = torch.ones(4, dtype=dtype, device=ctx.device)
        expect_raises(ValueError, lambda: dist.all_reduce(t, op=dist.ReduceOp.MAX), "complex")


@case(min_world=1)
def broadcast_every_dtype_and_root(ctx):
    for di, dtype in enumerate(DTYPES + [torch.complex64]):
        for root in range(ctx.world):
            src = make(ctx, root, dtype, salt=di) if not dtype.is_complex else \
                torch.randn(N_C, generator=ctx.gen(root, di), dtype=dtype)
            t = src.to(ctx.device) if ctx.rank == root else poison(src.shape, dtype, ctx.device)
            dist.broadcast(t, src=root)
            check(t, src.to(torch.complex128 if dtype.is_complex else
                            (torch.float64 if dtype.is_floating_point else torch.int64)),
                  dtype, "SUM", ctx.world, f"broadcast root={root}")


N_C = 333


@case(min_world=1)
def reduce_every_dtype_op_root(ctx):
    def body(dtype, op, salt):
        root = salt % ctx.world
        base = "PRODUCT" if op == "PRODUCT" else "SUM"
        inputs = [make(ctx, r, dtype, op=base, salt=salt) for r in range(ctx.world)]
        t = inputs[ctx.rank].to(ctx.device)
        dist.reduce(t, dst=root, op=reduce_op(op, ctx, dtype))
        if ctx.rank == root:
            check(t, reduce_ref(inputs, op, dtype, factor_for(ctx, dtype)), dtype, op, ctx.world, "reduce")
        else:
            # Non-roots keep their input untouched.
            check(t, inputs[ctx.rank].to(torch.float64) if dtype.is_floating_point
                  else inputs[ctx.rank].to(torch.int64), dtype, "SUM", ctx.world, "reduce non-root")

    _each_dtype_op(ctx, body)


@case(min_world=1)
def reduce_scatter_tensor_every_dtype_and_op(ctx):
    def body(dtype, op, salt):
        base = "PRODUCT" if op == "PRODUCT" else "SUM"
        per = 129
        inputs = [make(ctx, r, dtype, n=per * ctx.world, op=base, salt=salt) for r in range(ctx.world)]
        out = poison((per,), dtype, ctx.device)
        dist.reduce_scatter_tensor(out, inputs[ctx.rank].to(ctx.device), op=reduce_op(op, ctx, dtype))
        ref = reduce_ref(inputs, op, dtype, factor_for(ctx, dtype))[ctx.rank * per:(ctx.rank + 1) * per]
        check(out, ref, dtype, op, ctx.world, "reduce_scatter_tensor")

    _each_dtype_op(ctx, body)


@case(min_world=1)
def reduce_scatter_list_every_dtype(ctx):
    for di, dtype in enumerate(DTYPES):
        for op in ("SUM", "MAX", "AVG", "PREMUL_SUM"):
            if not op_valid(dtype, op):
                continue
            per = 77
            full = [make(ctx, r, dtype, n=per * ctx.world, salt=di) for r in range(ctx.world)]
            ins = [x.to(ctx.device) for x in full[ctx.rank].chunk(ctx.world)]
            out = poison((per,), dtype, ctx.device)
            dist.reduce_scatter(out, ins, op=reduce_op(op, ctx, dtype))
            ref = reduce_ref(full, op, dtype, factor_for(ctx, dtype))[ctx.rank * per:(ctx.rank + 1) * per]
            check(out, ref, dtype, op, ctx.world, "reduce_scatter")


@case(min_world=1)
def all_reduce_large_and_empty(ctx):
    n = (64 << 20) // 4 + 3  # 64 MiB + odd tail
    t = torch.full((n,), float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(t)
    exp = ctx.world * (ctx.world + 1) / 2
    assert torch.all(t == exp), "large all_reduce wrong"
    e = torch.empty(0, device=ctx.device)
    dist.all_reduce(e)
    assert e.numel() == 0
    m = torch.arange(12, dtype=torch.float32, device=ctx.device).reshape(3, 4) * (ctx.rank + 1)
    dist.all_reduce(m)
    ref = torch.arange(12, dtype=torch.float64).reshape(3, 4) * (ctx.world * (ctx.world + 1) / 2)
    assert torch.equal(m.cpu().double(), ref), "2-D all_reduce wrong"


@case(min_world=1)
def averages_and_premul_sums_of_larger_odd_sizes(ctx):
    """AVG and PREMUL_SUM past the fast path's limit, at counts no block size
    divides: every element, the last ones included (NCCL 2.28.9's one-rank
    path leaves such a tail unwritten, so a group of one reduces by itself),
    through torch.distributed and through the raw API's PreMulSum ops."""
    w, r = ctx.world, ctx.rank
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        for op in ("AVG", "PREMUL_SUM", "PREMUL_SUM_DEV"):
            n = 70001 if dtype != torch.float64 else 40003
            inputs = [make(ctx, q, dtype, n=n, salt=n % 89 + len(op)) for q in range(w)]
            f = factor_for(ctx, dtype)
            ref = reduce_ref(inputs, op, dtype, f)
            t = inputs[r].to(ctx.device)
            dist.all_reduce(t, op=reduce_op(op, ctx, dtype))
            check(t, ref, dtype, op, w, f"all_reduce n={n}")
            per = n
            full = [make(ctx, q, dtype, n=per * w, salt=3 + len(op)) for q in range(w)]
            out = poison((per,), dtype, ctx.device)
            dist.reduce_scatter_tensor(out, full[r].to(ctx.device), op=reduce_op(op, ctx, dtype))
            want = reduce_ref(full, op, dtype, f)[r * per:(r + 1) * per]
            check(out, want, dtype, op, w, f"reduce_scatter_tensor n={per}")
    # The raw API, with PreMulSum ops of this communicator (host and device
    # factors): allreduce, reduce to rank 0, reduce_scatter.
    comm = nc.get_communicator()
    n = 70001
    for dtype in (torch.float32, torch.bfloat16):
        f = factor_for(ctx, dtype)
        for residence, op in (("host", comm.create_pre_mul_sum(f, dtype)),
                              ("device", comm.create_pre_mul_sum(
                                  torch.tensor([f], dtype=dtype, device=ctx.device)))):
            inputs = [make(ctx, q, dtype, n=n, salt=17) for q in range(w)]
            ref = reduce_ref(inputs, "PREMUL_SUM", dtype, f)
            out = poison((n,), dtype, ctx.device)
            comm.allreduce(inputs[r].to(ctx.device), out, op)
            check(out, ref, dtype, "PREMUL_SUM", w, f"raw allreduce ({residence}) n={n}")
            out = poison((n,), dtype, ctx.device)
            comm.reduce(inputs[r].to(ctx.device), out, op, root=0)
            if r == 0:
                check(out, ref, dtype, "PREMUL_SUM", w, f"raw reduce ({residence}) n={n}")
            full = [make(ctx, q, dtype, n=n * w, salt=19) for q in range(w)]
            out = poison((n,), dtype, ctx.device)
            comm.reduce_scatter(full[r].to(ctx.device), out, op)
            want = reduce_ref(full, "PREMUL_SUM", dtype, f)[r * n:(r + 1) * n]
            check(out, want, dtype, "PREMUL_SUM", w, f"raw reduce_scatter ({residence}) n={n}")
            op.close()
