"""Where the host time of one small all_reduce goes (issue 6: raw path <= 5 µs).

One torchrun job; every path does the same 1 KiB float32 SUM all_reduce, back
to back, and the host µs per call (time until the last call returns, before
any synchronisation) is printed for each layer, slowest first:

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
"""

from __future__ import annotations

import argparse
import ctypes
import json
import time

import torch
import torch.distributed as dist

from sidebyside import init_side_by_side

import nccl_core_backend as nc

NCCL_FLOAT32, NCCL_SUM = 7, 0


def host_us(fn, iters: int) -> float:
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
    results = {"python floor": host_us(lambda: comm.rank, args.iters)}
    lib = nccl_library()
    if lib is not None:
        fn = lib.ncclAllReduce
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                       ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        ptr, handle = x.data_ptr(), comm.ptr
        results["ctypes ncclAllReduce"] = host_us(
            lambda: fn(ptr, ptr, 256, NCCL_FLOAT32, NCCL_SUM, handle, stream), args.iters)
    results["raw Communicator.allreduce"] = host_us(lambda: comm.allreduce(x, x, nc.SUM),
                                                    args.iters)
    results["raw, stream given"] = host_us(lambda: comm.allreduce(x, x, nc.SUM, stream=stream),
                                           args.iters)
    results["dist nccl_core (defaults: fast path)"] = host_us(lambda: dist.all_reduce(x),
                                                             args.iters)
    results["dist nccl"] = host_us(lambda: dist.all_reduce(x, group=nccl_group), args.iters)
    opts = nc.Options()
    opts.fast_path_max_bytes = 0
    nccl_path = dist.new_group(backend="nccl_core", pg_options=opts)
    results["dist nccl_core, fast path off"] = host_us(
        lambda: dist.all_reduce(x, group=nccl_path), args.iters)
    results["dist nccl_core, async_op=True + wait"] = host_us(
        lambda: dist.all_reduce(x, async_op=True).wait(), args.iters)
    # Where our part of a plain call goes, phase by phase (measured apart:
    # the clock reads add a little to each call).
    phases = {}
    for name, group in (("defaults", None), ("fast path off", nccl_path)):
        nc._C._host_profile(enable=True, reset=True)
        host_us(lambda: dist.all_reduce(x, group=group), args.iters)
        phases[name] = nc._C._host_profile(enable=False, reset=True)
    if rank == 0:
        print(f"world={world} torch={torch.__version__} nccl={nc.nccl_version()}")
        print("| path | host µs per call |\n|---|---:|")
        for name, us in results.items():
            print(f"| {name} | {us:.2f} |")
        for name, prof in phases.items():
            print(f"\nBackend phases of dist.all_reduce ({name}), mean µs per call:")
            print("| phase | calls | µs |\n|---|---:|---:|")
            for phase, (calls, us) in prof.items():
                print(f"| {phase} | {calls} | {us:.2f} |")
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"world": world, "host_us": results, "phases": phases}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
