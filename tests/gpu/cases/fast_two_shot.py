"""The fast path's two-shot all_reduce (kernels.cu): each rank reduces one
chunk, stores it into every peer's copy of the scratch window, crosses a
second barrier and copies the other chunks out of its own copy.  Calls of
both kinds run back to back with no host sync in between, so a store into a
peer's half must never land on data that peer still reads or stages: every
result is kept and checked after the loop against the float64 reference, on
sizes that leave chunks uneven, misaligned tensors and every reduce op."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, reduce_ref
from tests.gpu.registry import case

ROUNDS = 12
TWO_SHOT_FROM = 16 << 10
# (dtype, elements, op, misaligned): one shot below TWO_SHOT_FROM, two shots
# from it, chunk edges that do not fall on a rank's share.
CALLS = [
    (torch.float32, 1000, "SUM", False),               # 4 KB: one shot
    (torch.float32, (64 << 10) + 3, "SUM", True),      # odd count, misaligned
    (torch.bfloat16, 1 << 19, "AVG", False),           # 1 MiB, the group's limit
    (torch.int32, (40 << 10) + 5, "MAX", True),
    (torch.float16, 12 << 10, "MIN", False),           # 24 KiB
    (torch.int64, 3 << 12, "PRODUCT", False),          # 96 KiB
    (torch.float64, 1 << 14, "SUM", True),             # 128 KiB
]


def _placed(ctx, t: torch.Tensor, misalign: bool) -> torch.Tensor:
    base = torch.zeros(t.numel() + 1, dtype=t.dtype, device=ctx.device)
    out = base[1:] if misalign else base[: t.numel()]
    out.copy_(t.to(ctx.device))
    return out


@case(nvlink=True, timeout=300)
def fast_path_two_shot_stores_match_reference(ctx):
    w, r, d = ctx.world, ctx.rank, ctx.device
    opts = nc.Options()
    opts.fast_path_max_bytes = 1 << 20  # both modes
    opts.push_max_bytes = 0
    opts.two_shot_min_bytes = TWO_SHOT_FROM
    g = dist.new_group(list(range(w)), backend="nccl_core", pg_options=opts)
    be = g._get_backend(d)
    taken0 = be._fast_path_calls()
    kept = []
    for i in range(ROUNDS):
        for k, (dtype, n, op, misalign) in enumerate(CALLS):
            inputs = [make(ctx, q, dtype, n=n, op=op, salt=100 * i + k) for q in range(w)]
            t = _placed(ctx, inputs[r], misalign and (r + i) % 2 == 0)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g)
            kept.append((t, reduce_ref(inputs, op, dtype), dtype, op,
                         f"all_reduce {op} {dtype} n={n} round {i}"))
    torch.cuda.synchronize(d)
    taken = be._fast_path_calls() - taken0
    if taken != ROUNDS * len(CALLS):
        fail(f"{taken} of {ROUNDS * len(CALLS)} calls took the fast path")
    for t, ref, dtype, op, what in kept:
        check(t, ref, dtype, op, w, what)
    dist.destroy_process_group(g)
