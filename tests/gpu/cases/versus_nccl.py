"""nccl_core against torch's own nccl backend in the same job, element by
element, on random floats.

The other cases compare with a float64 reference on data every op keeps
exact; a kernel that accumulates in bf16, or rounds otherwise than NCCL,
passes those.  Here every rank draws normal random bf16, fp16 and fp32 data;
each call runs on a torch ``nccl`` group and on nccl_core groups that take
each of nccl_core's paths (the fast path, NCCL itself, the push all-reduce),
and the results must match NCCL's: exactly at 2 ranks for SUM, MIN, MAX and
the copy collectives (a + b is b + a; one rounding either way), within the
rounding of another summation order at more ranks.  The path counters show
that each call took the path it claims.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import fail
from tests.gpu.registry import case

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Bytes per rank: two fast-path sizes, one NCCL size, two push sizes (odd packs).
SIZES = (1 << 10, 192 << 10, 1 << 20, (4 << 20) + 16 * 37, 9 << 20)
FAST_MAX = 256 << 10
PUSH_MIN = 2 << 20


def _ulp(dtype) -> float:
    return {torch.float32: 2.0 ** -23, torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10}[dtype]


def _agrees(got: torch.Tensor, ref: torch.Tensor, world: int, op: str) -> torch.Tensor:
    """Elements that agree: equal, or (more than 2 ranks, or AVG) within the
    roundings of another order of `world` operands."""
    if world <= 2 and op != "AVG":
        return got == ref
    g, r = got.double(), ref.double()
    return (g - r).abs() <= world * _ulp(got.dtype) * (r.abs() + 1.0) * 4


def _groups(ctx):
    ranks = list(range(ctx.world))
    fast = nc.Options()
    fast.fast_path_max_bytes = FAST_MAX
    fast.push_max_bytes = 0  # larger calls to NCCL: the push has a group of its own
    push = nc.Options()
    push.fast_path_max_bytes = 0
    push.push_min_bytes = PUSH_MIN
    push.push_max_bytes = 16 << 20
    return (dist.new_group(ranks, backend="nccl"),
            dist.new_group(ranks, backend="nccl_core", pg_options=fast),
            dist.new_group(ranks, backend="nccl_core", pg_options=push))


def _random(ctx, dtype, n, salt):
    g = ctx.gen(ctx.rank, salt)
    return torch.randn(n, generator=g, dtype=torch.float64).to(dtype).to(ctx.device)


@case(nvlink=True, timeout=300)
def random_floats_match_backend_nccl(ctx):
    ref_g, fast_g, push_g = _groups(ctx)
    fast_be = fast_g._get_backend(ctx.device)
    push_be = push_g._get_backend(ctx.device)
    salt = 0
    for dtype in DTYPES:
        for nbytes in SIZES:
            n = nbytes // dtype.itemsize
            for op in ("SUM", "AVG", "MIN", "MAX"):
                salt += 1
                x = _random(ctx, dtype, n, salt)
                ref = x.clone()
                dist.all_reduce(ref, op=getattr(dist.ReduceOp, op), group=ref_g)
                for name, g, be, counter, takes in (
                        ("fast path", fast_g, fast_be, "_fast_path_calls", nbytes <= FAST_MAX),
                        ("push", push_g, push_be, "_push_calls", nbytes >= PUSH_MIN)):
                    before = getattr(be, counter)()
                    got = x.clone()
                    dist.all_reduce(got, op=getattr(dist.ReduceOp, op), group=g)
                    ran = getattr(be, counter)() - before
                    if ran != int(takes):
                        fail(f"all_reduce {dtype} {op} {nbytes} B on the {name} group: "
                             f"{ran} calls on its path, expected {int(takes)}")
                    ok = _agrees(got, ref, ctx.world, op)
                    if not bool(ok.all()):
                        i = int((~ok).nonzero()[0])
                        fail(f"all_reduce {dtype} {op} {nbytes} B ({name} group, "
                             f"{'its path' if takes else 'NCCL'}): {int((~ok).sum())} of {n} "
                             f"elements differ from backend nccl, first at {i}: "
                             f"{got[i].item()} vs {ref[i].item()}")
            # The copy collectives and reduce_scatter on the fast-path group:
            # the same bytes as NCCL's, exactly (reduce_scatter: as all_reduce).
            if nbytes > FAST_MAX:
                continue
            salt += 1
            x = _random(ctx, dtype, n * ctx.world, salt)
            for what, run in (
                    ("reduce_scatter_tensor", lambda out, inp, g: dist.reduce_scatter_tensor(
                        out, inp, group=g)),
                    ("all_gather_into_tensor", lambda out, inp, g: dist.all_gather_into_tensor(
                        out, inp[:n], group=g)),
                    ("all_to_all_single", lambda out, inp, g: dist.all_to_all_single(
                        out, inp, group=g))):
                size = n if what == "reduce_scatter_tensor" else n * ctx.world
                ref = torch.empty(size, dtype=dtype, device=ctx.device)
                got = torch.empty_like(ref)
                run(ref, x, ref_g)
                run(got, x, fast_g)
                ok = _agrees(got, ref, ctx.world, "SUM")
                if not bool(ok.all()):
                    fail(f"{what} {dtype} {nbytes} B: {int((~ok).sum())} of {size} elements "
                         f"differ from backend nccl")
            b_ref = x[:n].clone() if ctx.rank == 0 else torch.zeros(n, dtype=dtype, device=ctx.device)
            b_got = b_ref.clone()
            dist.broadcast(b_ref, 0, group=ref_g)
            dist.broadcast(b_got, 0, group=fast_g)
            if not torch.equal(b_got, b_ref):
                fail(f"broadcast {dtype} {nbytes} B differs from backend nccl")
    torch.cuda.synchronize(ctx.device)
    for g in (push_g, fast_g, ref_g):
        dist.destroy_process_group(g)
