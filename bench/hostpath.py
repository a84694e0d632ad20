"""Where the host time of one small all_reduce goes (raw path <= 5 µs).

One torchrun job; every path does the same 1 KiB float32 SUM all_reduce.  Two
numbers per layer:

  host µs      the host's own cost of a call: bursts of 32 calls on an idle
               GPU, timed until the last call returns (32 launches cannot
               fill CUDA's launch queue, so no call waits for the GPU)
  loop µs      5000 calls back to back, time until the last call returns:
               the larger of the host cost and the GPU time per call (once
               the launch queue is full, each launch waits for a free slot)

The layers:

  python floor          a no-op call through the same Python machinery
  ctypes ncclAllReduce  NCCL's own enqueue on our communicator's handle
  raw Communicator      nccl_core_backend's Communicator.allreduce
  dist nccl_core        torch.distributed on backend nccl_core (defaults: the
                        fast path, on the caller's stream)
  dist nccl             torch.distributed on backend nccl (same run)
  ... fast path off     nccl_core through NCCL
  ... async_op=True     nccl_core on its own stream (event in, event out)

Subtracting neighbours attributes the cost to NCCL, to our bindings and
checks, and to torch's dispatch; then the backend's own phases of a plain
call (nccl_core_backend._C._host_profile) split the rest.  Usage:
  torchrun --nproc-per-node=2 bench/hostpath.py [--out results.json]
(one rank works too: the fast path then crosses its barriers with itself, and
the host numbers are the same code's.)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import time

import torch
import torch.distributed as dist

from sidebyside import burst_us, init_side_by_side

import nccl_core_backend as nc

NCCL_FLOAT32, NCCL_SUM = 7, 0


def loop_us(fn, iters: int) -> float:
    """µs per call of `iters` calls back to back (until the last one returns)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / iters * 1e6


def measure(fn, iters: int) -> tuple[float, float]:
    return burst_us(fn), loop_us(fn, iters)


def profiled(fn, iters: int) -> dict:
    """The backend's host-profile phases over a burst measurement of fn."""
    nc._C._host_profile(enable=True, reset=True)
    burst_us(fn, bursts=max(1, iters // 32))
    prof = nc._C._host_profile(enable=False, reset=True)
    return {phase: v for phase, v in prof.items() if v[0] > 0}


def nccl_library():
    """The libnccl that this process loaded (torch's), for the ctypes path."""
    for line in open("/proc/self/maps"):
        if "libnccl.so" in line:
            return ctypes.CDLL(line.split()[-1])
    return None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=5000)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    device, rank, world, nccl_group = init_side_by_side()
    comm = nc.get_communicator()
    x = torch.ones(256, device=device)
    stream = torch.cuda.current_stream().cuda_stream
    calls = {"python floor": lambda: comm.rank}
    lib = nccl_library()
    if lib is not None:
        fn = lib.ncclAllReduce
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                       ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        ptr, handle = x.data_ptr(), comm.ptr
        calls["ctypes ncclAllReduce"] = lambda: fn(ptr, ptr, 256, NCCL_FLOAT32, NCCL_SUM,
                                                   handle, stream)
    calls["raw Communicator.allreduce"] = lambda: comm.allreduce(x, x, nc.SUM)
    calls["raw, stream given"] = lambda: comm.allreduce(x, x, nc.SUM, stream=stream)
    calls["dist nccl_core (defaults: fast path)"] = lambda: dist.all_reduce(x)
    calls["dist nccl"] = lambda: dist.all_reduce(x, group=nccl_group)
    opts = nc.Options()
    opts.fast_path_max_bytes = 0
    nccl_path = dist.new_group(backend="nccl_core", pg_options=opts)
    calls["dist nccl_core, fast path off"] = lambda: dist.all_reduce(x, group=nccl_path)
    calls["dist nccl_core, async_op=True + wait"] = lambda: dist.all_reduce(x, async_op=True).wait()
    results = {name: measure(fn, args.iters) for name, fn in calls.items()}
    # Where our part of a call goes, phase by phase (measured apart: the
    # clock reads add a little to each call).
    phases = {
        "dist, defaults": profiled(lambda: dist.all_reduce(x), args.iters),
        "dist, fast path off": profiled(lambda: dist.all_reduce(x, group=nccl_path), args.iters),
        "raw Communicator.allreduce": profiled(lambda: comm.allreduce(x, x, nc.SUM), args.iters),
    }
    if rank == 0:
        print(f"world={world} torch={torch.__version__} nccl={nc.nccl_version()}")
        print("| path | host µs per call | loop µs per call |\n|---|---:|---:|")
        for name, (host, loop) in results.items():
            print(f"| {name} | {host:.2f} | {loop:.2f} |")
        for name, prof in phases.items():
            print(f"\nPhases of {name} (bursts), mean µs per call:")
            print("| phase | calls | µs |\n|---|---:|---:|")
            for phase, (n, us) in prof.items():
                print(f"| {phase} | {n} | {us:.2f} |")
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"world": world,
                           "host_us": {k: v[0] for k, v in results.items()},
                           "loop_us": {k: v[1] for k, v in results.items()},
                           "phases": phases}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
