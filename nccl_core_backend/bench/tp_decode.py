"""Workload (a): a tensor-parallel decode step, whole, in one CUDA graph.

A Llama-7B-shaped stack (32 layers, hidden 4096, gated MLP of 11008, bf16)
split Megatron-style over the ranks: each layer's attention block and MLP
end in a row-parallel matmul whose partial sums are all-reduced, so a step
makes 2 all_reduces a layer of tokens × hidden × 2 bytes (8 KiB for one
token, 128 KiB for 16).  Attention over a KV cache is left out (its cost does
not depend on the backend); ``q * sigmoid(k) + v`` stands in for it, so the
QKV projection's output is used.

Three graphs per token count, replayed in alternating rounds: the step on
nccl_core, the step on nccl, and the same step without the all_reduces.
The communication-only time of a backend is its step minus the latter.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from nccl_core_backend.bench.compare import activations_close
from nccl_core_backend.bench.job import CORE, NCCL
from nccl_core_backend.bench.timing import EventPool, interleaved, summary

NONE = "no_comm"


def _rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)


class DecodeStack:
    """This rank's shard of every layer's weights, and the step."""

    def __init__(self, layers: int, hidden: int, ffn: int, world: int, rank: int, device, seed: int):
        if hidden % world or ffn % world:
            raise ValueError(f"--tp-hidden ({hidden}) and --tp-ffn ({ffn}) must be multiples of "
                             f"the world size ({world})")
        self.hidden, self.shard, self.fshard = hidden, hidden // world, ffn // world
        gen = torch.Generator(device=device)
        gen.manual_seed(seed * 1009 + rank)  # each rank its own shards

        def w(rows: int, cols: int, fan_in: int) -> torch.Tensor:
            t = torch.randn(rows, cols, device=device, dtype=torch.bfloat16, generator=gen)
            return t.mul_(1.0 / math.sqrt(fan_in))

        h, s, f = hidden, self.shard, self.fshard
        self.layers = [(w(h, 3 * s, h), w(s, h, h), w(h, f, h), w(h, f, h), w(f, h, ffn))
                       for _ in range(layers)]

    def step(self, x: torch.Tensor, reduce) -> torch.Tensor:
        """One decode step for x [tokens, hidden]; reduce(t) all-reduces in place (or nothing)."""
        for wqkv, wo, wg, wu, wd in self.layers:
            q, k, v = (_rms_norm(x) @ wqkv).split(self.shard, dim=-1)
            o = (q * torch.sigmoid(k) + v) @ wo
            reduce(o)
            x = x + o
            h = _rms_norm(x)
            m = (torch.nn.functional.silu(h @ wg) * (h @ wu)) @ wd
            reduce(m)
            x = x + m
        return x


def _capture(stack: DecodeStack, x_static: torch.Tensor, reduce):
    """(graph, output) of one step; two eager steps on a side stream first
    (communicator, NCCL connections and cuBLAS handles set up before capture)."""
    side = torch.cuda.Stream(device=x_static.device)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            stack.step(x_static, reduce)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = stack.step(x_static, reduce)
    torch.cuda.synchronize()
    return g, out


def run_tp_decode(job, tokens_list: list[int], layers: int, hidden: int, ffn: int, steps: int,
                  warmup: int, rounds: int, progress) -> list[dict]:
    """One row per token count (this rank's view of correctness)."""
    pool = EventPool()
    seed = job.shared_seed()
    stack = DecodeStack(layers, hidden, ffn, job.world, job.rank, job.device, seed)
    # The input is replicated across tensor-parallel ranks: one generator for all.
    gen = torch.Generator(device=job.device)
    gen.manual_seed(seed)

    def all_reduce_on(group):
        return lambda t: dist.all_reduce(t, group=group)

    reducers = {name: all_reduce_on(g) for name, g in job.groups.items()}
    reducers[NONE] = lambda t: None
    rows = []
    for tokens in tokens_list:
        x_static = torch.randn(tokens, hidden, device=job.device, dtype=torch.bfloat16, generator=gen)
        graphs = {name: _capture(stack, x_static, red) for name, red in reducers.items()}
        samples = interleaved({name: g.replay for name, (g, _) in graphs.items()}, steps, warmup,
                              rounds, job.sync, pool)
        # Check: fresh input; backend nccl's eager step is the reference.
        x_static.copy_(torch.randn(tokens, hidden, device=job.device, dtype=torch.bfloat16,
                                   generator=gen))
        ref = stack.step(x_static, reducers[NCCL]).clone()
        ok, detail = {}, {}
        for name in job.groups:
            g, out = graphs[name]
            g.replay()
            ok[name], detail[name] = activations_close(out, ref)
        times = {name: summary(s) for name, s in samples.items()}
        comm = {name: times[name]["us"] - times[NONE]["us"] for name in job.groups}
        rows.append({
            "workload": "tp_decode", "label": f"tokens={tokens}",
            "config": {"tokens": tokens, "layers": layers, "hidden": hidden, "ffn": ffn,
                       "all_reduces": 2 * layers, "all_reduce_bytes": tokens * hidden * 2},
            CORE: times[CORE], NCCL: times[NCCL], "baseline": times[NONE],
            "ratio": times[CORE]["us"] / times[NCCL]["us"],
            "comm_us": comm,
            # Below the noise (a step at one rank) a difference is not a ratio.
            "comm_ratio": comm[CORE] / comm[NCCL] if min(comm.values()) > 0 else None,
            "correct": ok, "check": detail,
        })
        del graphs
        progress.step(f"tp_decode tokens={tokens}")
    del stack
    torch.cuda.empty_cache()
    return rows
