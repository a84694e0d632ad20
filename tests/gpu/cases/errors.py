"""Bad input: clear Python exceptions, nothing enqueued, the group keeps working."""

from __future__ import annotations

import torch
import torch.distributed as dist

from tests.gpu.cases.common import expect_raises, sanity
from tests.gpu.registry import case


@case(min_world=1)
def bad_input_raises_and_group_survives(ctx):
    dev = ctx.device
    w = ctx.world
    t = torch.ones(8, device=dev)
    # recv from any source: NCCL cannot
    expect_raises(ValueError, lambda: dist.recv(t), "any source")
    # dtype NCCL lacks
    expect_raises(TypeError, lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16, device=dev)), "int16")
    # bitwise reduce ops
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        expect_raises(ValueError, lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32, device=dev), op=op),
                      "bitwise")
    # non-contiguous
    nc = torch.ones(8, 8, device=dev).t()
    expect_raises(ValueError, lambda: dist.all_reduce(nc), "contiguous")
    # size mismatches
    expect_raises(ValueError, lambda: dist.all_gather_into_tensor(torch.empty(w * 8 + 1, device=dev), t), "elements")
    expect_raises(ValueError, lambda: dist.reduce_scatter_tensor(torch.empty(3, device=dev), t), "elements")
    expect_raises(ValueError, lambda: dist.all_to_all_single(torch.empty(8, device=dev), t,
                                                            output_split_sizes=[1] * w,
                                                            input_split_sizes=[8] + [0] * (w - 1)), "split")
    # dtype mismatch
    expect_raises(TypeError, lambda: dist.all_gather_into_tensor(torch.empty(w * 8, device=dev, dtype=torch.half), t),
                  "dtype")
    # peers and roots out of range
    expect_raises(ValueError, lambda: dist.get_backend() and dist.group.WORLD._get_backend(dev).send([t], w, 0), "peer")
    bopts = dist.BroadcastOptions()
    bopts.rootRank = w + 3
    expect_raises(ValueError, lambda: dist.group.WORLD._get_backend(dev).broadcast([t], bopts), "root")
    # PREMUL_SUM on integers, AVG on bool
    expect_raises(ValueError, lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32, device=dev),
                                                      op=dist._make_nccl_premul_sum(2.0)), "PREMUL_SUM")
    expect_raises(ValueError, lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool, device=dev),
                                                      op=dist.ReduceOp.AVG), "bool")
    # a tensor on another GPU than the group's
    if torch.cuda.device_count() > 1:
        other = torch.ones(4, device=torch.device("cuda", (dev.index + 1) % torch.cuda.device_count()))
        expect_raises(ValueError, lambda: dist.all_reduce(other), "cuda:")
    # CPU tensor on a pure nccl_core group
    g = dist.new_group(backend="nccl_core")
    expect_raises(RuntimeError, lambda: dist.all_reduce(torch.ones(4), group=g))
    sanity(ctx, g)
    sanity(ctx)
