"""Device-placement matrix: every op family wherever the process's current
device and stream are, results read back at once.

    torchrun --nproc-per-node=N tests/gpu/placement.py --init {eager,lazy} \
        --current {own,none,other} [--iters 200] [--out FILE]

Each rank's tensors live on its GPU (``simhosts.local_device()``:
``cuda:LOCAL_RANK``, round robin where the GPUs are fewer than the ranks).  ``--current`` sets the
process's current device: ``own`` (``set_device(local rank)``), ``none`` (no
``set_device``: device 0 on every rank, the ``model.to(rank)`` pattern) or
``other`` (the next rank's GPU).  ``--init eager`` passes ``device_id``,
``lazy`` creates the communicator at the first operation.  Every iteration
runs each op family on the device's default stream and on a side stream made
current on that device while the current *device* stays as chosen, with
``async_op`` False and True (then ``wait()``), and reads every output back to
the CPU right away (``.cpu()``; ``.item()`` through DDP's
``_verify_params_across_processes``, which torch's C++ runs).  A chain of
matmuls before each op keeps the GPU busy, so a read-back that is not
ordered after the collective sees stale memory.  Inputs are small integers
(exact in float32), so every element is compared with a float64 CPU
reference exactly.  Prints one JSON line with the counts; exit 1 on any
wrong element.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

SIZES = (37, 70_001)  # below and above the fast path's 256 KiB (float32)


class Matrix:
    def __init__(self, rank: int, world: int, device: torch.device, seed: int,
                 uneven: bool = True):
        self.rank, self.world, self.device, self.seed = rank, world, device, seed
        self.uneven = uneven
        self.checks = 0
        self.wrong: list[str] = []
        a = torch.randn(2048, 2048, device=device, dtype=torch.bfloat16)
        self.mats = (a, a.t().contiguous())

    # ---- data ---------------------------------------------------------------
    def data(self, it: int, r: int, n: int, salt: int = 0) -> torch.Tensor:
        """Rank r's float64 CPU input of iteration `it` (any rank can build it)."""
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + it * 7919 + r * 131 + salt)
        return torch.randint(-50, 51, (n,), generator=g).double()

    def busy_input(self, cpu: torch.Tensor) -> torch.Tensor:
        """`cpu` on our GPU, produced after a chain of matmuls on the current stream."""
        a, b = self.mats
        z = a
        for _ in range(4):
            z = z @ b
        return cpu.float().to(self.device, non_blocking=True) + (z[0, 0] * 0).float()

    def check(self, what: str, got: torch.Tensor, want: torch.Tensor) -> None:
        self.checks += 1
        got64 = got.double().reshape(-1)
        want64 = want.double().reshape(-1)
        if got64.shape != want64.shape or not torch.equal(got64, want64):
            bad = (got64 != want64).sum().item() if got64.shape == want64.shape else -1
            if len(self.wrong) < 20:
                self.wrong.append(f"{what}: {bad} wrong elements of {want64.numel()}")
            else:
                self.wrong.append(what)

    # ---- one op family each ---------------------------------------------------
    def run(self, it: int, n: int, async_op: bool) -> None:
        r, w = self.rank, self.world
        ins = [self.data(it, q, n) for q in range(w)]
        root = it % w
        tag = f"it{it} n{n} async={async_op}"

        def done(work):
            if async_op:
                work.wait()

        x = self.busy_input(ins[r])
        done(dist.all_reduce(x, async_op=async_op))
        self.check(f"all_reduce {tag}", x.cpu(), sum(ins))

        x = self.busy_input(ins[r])
        done(dist.broadcast(x, src=root, async_op=async_op))
        self.check(f"broadcast {tag}", x.cpu(), ins[root])

        x = self.busy_input(ins[r])
        done(dist.reduce(x, dst=root, async_op=async_op))
        if r == root:
            self.check(f"reduce {tag}", x.cpu(), sum(ins))

        x = self.busy_input(ins[r])
        outs = [torch.empty_like(x) for _ in range(w)]
        done(dist.all_gather(outs, x, async_op=async_op))
        for q in range(w):
            self.check(f"all_gather[{q}] {tag}", outs[q].cpu(), ins[q])

        if self.uneven:  # rank q contributes n + q elements
            x = self.busy_input(self.data(it, r, n + r, salt=1))
            outs = [torch.empty(n + q, device=self.device) for q in range(w)]
            done(dist.all_gather(outs, x, async_op=async_op))
            for q in range(w):
                self.check(f"all_gather uneven[{q}] {tag}", outs[q].cpu(),
                           self.data(it, q, n + q, salt=1))

        x = self.busy_input(ins[r])
        out = torch.empty(w * n, device=self.device)
        done(dist.all_gather_into_tensor(out, x, async_op=async_op))
        self.check(f"all_gather_into_tensor {tag}", out.cpu(), torch.cat(ins))

        chunks = [self.data(it, q, w * n, salt=2) for q in range(w)]
        x = self.busy_input(chunks[r])
        out = torch.empty(n, device=self.device)
        done(dist.reduce_scatter_tensor(out, x, async_op=async_op))
        self.check(f"reduce_scatter_tensor {tag}", out.cpu(), sum(chunks)[r * n:(r + 1) * n])

        x = self.busy_input(chunks[r])
        out = torch.empty(n, device=self.device)
        done(dist.reduce_scatter(out, list(x.chunk(w)), async_op=async_op))
        self.check(f"reduce_scatter {tag}", out.cpu(), sum(chunks)[r * n:(r + 1) * n])

        if self.uneven:  # chunk p has n + p elements and is reduced to rank p
            parts = [[self.data(it, q, n + p, salt=4 + p) for p in range(w)] for q in range(w)]
            xs = [self.busy_input(t) for t in parts[r]]
            out = torch.empty(n + r, device=self.device)
            done(dist.reduce_scatter(out, xs, async_op=async_op))
            self.check(f"reduce_scatter uneven {tag}", out.cpu(),
                       sum(parts[q][r] for q in range(w)))

        x = self.busy_input(chunks[r])
        out = torch.empty(w * n, device=self.device)
        done(dist.all_to_all_single(out, x, async_op=async_op))
        want = torch.cat([chunks[q][r * n:(r + 1) * n] for q in range(w)])
        self.check(f"all_to_all_single {tag}", out.cpu(), want)

        # Uneven all_to_all_single: rank q sends (q + p + 1) elements to rank p.
        def split(q, p):
            return q + p + 1
        srcs = [self.data(it, q, sum(split(q, p) for p in range(w)), salt=3) for q in range(w)]
        x = self.busy_input(srcs[r])
        out = torch.empty(sum(split(q, r) for q in range(w)), device=self.device)
        done(dist.all_to_all_single(out, x, [split(q, r) for q in range(w)],
                                    [split(r, p) for p in range(w)], async_op=async_op))
        want = torch.cat([srcs[q][sum(split(q, p) for p in range(r)):][:split(q, r)]
                          for q in range(w)])
        self.check(f"all_to_all_single uneven {tag}", out.cpu(), want)

        xs = [self.busy_input(self.data(it, r, n, salt=10 + p)) for p in range(w)]
        outs = [torch.empty(n, device=self.device) for _ in range(w)]
        done(dist.all_to_all(outs, xs, async_op=async_op))
        for q in range(w):
            self.check(f"all_to_all[{q}] {tag}", outs[q].cpu(), self.data(it, q, n, salt=10 + r))

        x = self.busy_input(ins[r])
        outs = [torch.empty_like(x) for _ in range(w)] if r == root else None
        done(dist.gather(x, outs, dst=root, async_op=async_op))
        if r == root:
            for q in range(w):
                self.check(f"gather[{q}] {tag}", outs[q].cpu(), ins[q])

        parts = [self.data(it, root, n, salt=20 + q) for q in range(w)]
        xs = [self.busy_input(p) for p in parts] if r == root else None
        out = torch.empty(n, device=self.device)
        done(dist.scatter(out, xs, src=root, async_op=async_op))
        self.check(f"scatter {tag}", out.cpu(), parts[r])

        # Ring exchange as one batch (coalesced send/recv).
        x = self.busy_input(ins[r])
        out = torch.empty_like(x)
        ops = [dist.P2POp(dist.isend, x, (r + 1) % w), dist.P2POp(dist.irecv, out, (r - 1) % w)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        self.check(f"batch_isend_irecv {tag}", out.cpu(), ins[(r - 1) % w])

        # Coalesced all_reduces (FSDP's and DDP's pattern).
        xs = [self.busy_input(self.data(it, r, n + k, salt=30 + k)) for k in range(3)]
        with dist._coalescing_manager(device=self.device, async_ops=True) as cm:
            for t in xs:
                dist.all_reduce(t)
        cm.wait()
        for k, t in enumerate(xs):
            self.check(f"coalesced all_reduce[{k}] {tag}", t.cpu(),
                       sum(self.data(it, q, n + k, salt=30 + k) for q in range(w)))

    def verify_params(self, it: int) -> None:
        """DDP's start-up check, run by torch's C++: an all_gather of the
        parameter count read back with .item(), then a broadcast of metadata."""
        pg = dist.distributed_c10d._get_default_group()
        params = [self.busy_input(self.data(it, 0, 3 + k, salt=40)) for k in range(4)]
        try:
            dist._verify_params_across_processes(pg, params)
            self.checks += 1
        except RuntimeError as e:
            self.wrong.append(f"_verify_params_across_processes it{it}: {e}"[:300])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--init", choices=("eager", "lazy"), required=True)
    p.add_argument("--current", choices=("own", "none", "other"), required=True)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--seed", type=int, default=int(os.environ.get("NCCL_CORE_TEST_SEED", "1")))
    p.add_argument("--out", default="")
    p.add_argument("--skip-uneven", action="store_true",
                   help="leave out uneven all_gather / reduce_scatter (for builds that refuse them)")
    args = p.parse_args()

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import nccl_core_backend  # noqa: F401  - registers nccl_core

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    from nccl_core_backend import simhosts

    gpus = torch.cuda.device_count()
    device = simhosts.local_device()
    local = device.index
    current = {"own": local, "none": None, "other": (local + 1) % gpus}[args.current]
    if current is not None:
        torch.cuda.set_device(current)
    if args.init == "eager":
        dist.init_process_group("nccl_core", device_id=device)
    else:
        dist.init_process_group("nccl_core")

    def keep_current():
        # torch.cuda.set_stream makes the stream's device current: put the
        # chosen current device back (its own current stream is untouched).
        torch.cuda.set_device(current if current is not None else 0)

    m = Matrix(rank, world, device, args.seed, uneven=not args.skip_uneven)
    side = torch.cuda.Stream(device=device)
    default = torch.cuda.default_stream(device)
    t0 = time.time()
    for it in range(args.iters):
        for stream in (default, side):
            torch.cuda.set_stream(stream)
            keep_current()
            n = SIZES[it % len(SIZES)]
            m.run(it, n, async_op=bool(it % 2))
            m.run(it, n, async_op=not bool(it % 2))
        if it % 25 == 0:
            m.verify_params(it)
        if it == 0:
            dist.barrier()  # a tensorless op, device from the group
    torch.cuda.set_stream(default)
    torch.cuda.synchronize(device)
    res = {"rank": rank, "init": args.init, "current": args.current, "iters": args.iters,
           "checks": m.checks, "wrong": len(m.wrong), "first": m.wrong[:5],
           "seconds": round(time.time() - t0, 1)}
    line = json.dumps(res)
    print(line, flush=True)
    if args.out:
        with open(f"{args.out}.rank{rank}", "w") as f:
            f.write(line + "\n")
    dist.destroy_process_group()
    return 1 if m.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
