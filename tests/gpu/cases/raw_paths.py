"""Raw Communicator calls take the path the group's dist.* call
of their size takes (collectives/path_choice.h): on a group's
communicator, a size in the group's push range runs as the push (in place or
not, each rank choosing for itself as NCCL allows: out of place is copied
into the output first), a small one on the fast path, and the rest (beyond
the push) on NCCL.  Calls of every kind run back to back with no host sync;
every result is kept and checked after the loop against the reference, and
the group's counters show where they ran."""

from __future__ import annotations

import torch
import torch.distributed as dist

import nccl_core_backend as nc
from tests.gpu.cases.common import check, fail, make, reduce_ref
from tests.gpu.registry import case

ROUNDS = 20
# (bytes, in place: True, False or "even ranks", where it runs)
CALLS = [(16 << 10, True, "fast"), (1 << 20, True, "push"), (1 << 20, False, "push"),
         (1 << 20, "even ranks", "push"), (8 << 20, True, "nccl"), (16 << 10, False, "fast"),
         (16 << 10, "even ranks", "fast")]


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
            here = r % 2 == 0 if in_place == "even ranks" else in_place
            y = x if here else torch.empty_like(x)
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


@case(nvlink=True, min_world=1, timeout=300)
def raw_collectives_take_the_fast_path(ctx):
    """Communicator.allgather, reduce_scatter, alltoall and broadcast (the
    root both out of place and in place) take the group's fast path at its
    sizes and NCCL above, back to back with no host sync; every result is
    checked after the loop and the group's counter counts the fast calls."""
    w, r, d = ctx.world, ctx.rank, ctx.device
    limit = 64 << 10
    opts = nc.Options()
    opts.fast_path_max_bytes = limit
    opts.push_max_bytes = 0
    g = dist.new_group(list(range(w)), backend="nccl_core", pg_options=opts)
    dist.all_reduce(torch.ones(1, device=d), group=g)
    comm, be = nc.get_communicator(g), g._get_backend(d)
    fast0 = be._fast_path_calls()
    kept, fast = [], 0
    for i in range(ROUNDS):
        for n in (1000, (limit // 4) * 2):  # elements staged per rank: fast, then NCCL
            salt = 10 * i + (n > 1000)
            # allgather: n elements from each rank
            ins = [make(ctx, q, torch.int32, n=n, salt=salt) for q in range(w)]
            out = torch.empty(n * w, dtype=torch.int32, device=d)
            comm.allgather(ins[r].to(d), out)
            kept.append((out, torch.cat(ins).double(), f"allgather n={n} round {i}"))
            fast += 4 * n <= limit
            # reduce_scatter: n elements staged, n // w to each rank
            m = n // w
            ins = [make(ctx, q, torch.int32, n=m * w, salt=salt + 1) for q in range(w)]
            out = torch.empty(m, dtype=torch.int32, device=d)
            comm.reduce_scatter(ins[r].to(d), out, nc.SUM)
            kept.append((out, reduce_ref(ins, "SUM", torch.int32).reshape(w, m)[r],
                         f"reduce_scatter n={m * w} round {i}"))
            fast += 4 * m * w <= limit
            # alltoall: m elements from each rank to each rank
            ins = [make(ctx, q, torch.int32, n=m * w, salt=salt + 2) for q in range(w)]
            out = torch.empty(m * w, dtype=torch.int32, device=d)
            comm.alltoall(ins[r].to(d), out)
            ref = torch.cat([ins[p].reshape(w, m)[r] for p in range(w)]).double()
            kept.append((out, ref, f"alltoall n={m * w} round {i}"))
            fast += 4 * m * w <= limit
            # broadcast from a moving root, its tensor out of place then in place
            root = i % w
            for in_place in (False, True):
                ins = [make(ctx, q, torch.int32, n=n, salt=salt + 3 + in_place) for q in range(w)]
                out = ins[r].to(d) if in_place else torch.empty(n, dtype=torch.int32, device=d)
                send = (out if in_place else ins[r].to(d)) if r == root else None
                comm.broadcast(send, out, root)
                kept.append((out, ins[root].double(),
                             f"broadcast n={n} root={root} in_place={in_place} round {i}"))
                fast += 4 * n <= limit
    torch.cuda.synchronize(d)
    taken = be._fast_path_calls() - fast0
    if taken != fast:
        fail(f"{taken} calls took the fast path, expected {fast}")
    for out, ref, what in kept:
        check(out, ref, torch.int32, "SUM", w, what)
    dist.destroy_process_group(g)
