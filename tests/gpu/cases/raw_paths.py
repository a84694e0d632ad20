"""Raw Communicator.allreduce calls take the path the group's dist.all_reduce
of their size takes (collectives/all_reduce_path.h): on a group's
communicator, in place, a size in the group's push range runs as the push, a
small one on the fast path, and the rest (out of place beyond the fast path,
or beyond the push) on NCCL.  Calls of every kind run back to back with no
host sync; every result is kept and checked after the loop against the
reference, and the group's counters show where they ran."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, reduce_ref
from tests.gpu.registry import case

ROUNDS = 20
# (bytes, in place, where it runs)
CALLS = [(16 << 10, True, "fast"), (1 << 20, True, "push"), (1 << 20, False, "nccl"),
         (8 << 20, True, "nccl"), (16 << 10, False, "fast")]


@case(nvlink=True, timeout=300)
def raw_allreduce_takes_the_groups_paths(ctx):
    w, r, d = ctx.world, ctx.rank, ctx.device
    opts = nc.Options()
    opts.fast_path_max_bytes = 64 << 10
    opts.push_min_bytes = 512 << 10
    opts.push_max_bytes = 4 << 20
    g = dist.new_group(list(range(w)), backend="nccl_core", pg_options=opts)
    dist.all_reduce(torch.ones(1, device=d), group=g)  # the communicator and its engine
    comm, be = nc.get_communicator(g), g._get_backend(d)
    fast0, push0 = be._fast_path_calls(), be._push_calls()
    kept = []
    for i in range(ROUNDS):
        for k, (nbytes, in_place, where) in enumerate(CALLS):
            n = nbytes // 4
            inputs = [make(ctx, q, torch.int32, n=n, salt=10 * i + k) for q in range(w)]
            x = inputs[r].to(d)
            y = x if in_place else torch.empty_like(x)
            comm.allreduce(x, y, nc.SUM)
            kept.append((y, reduce_ref(inputs, "SUM", torch.int32), f"{where} {nbytes} B round {i}"))
    torch.cuda.synchronize(d)
    pushed = be._push_calls() - push0
    staged = be._fast_path_calls() - fast0 - pushed  # the fast-path counter counts both
    want = {where: ROUNDS * sum(1 for c in CALLS if c[2] == where) for where in ("fast", "push")}
    if (staged, pushed) != (want["fast"], want["push"]):
        fail(f"{staged} fast-path and {pushed} push calls, expected {want['fast']} and "
             f"{want['push']}")
    for y, ref, what in kept:
        check(y, ref, torch.int32, "SUM", w, what)
    dist.destroy_process_group(g)
