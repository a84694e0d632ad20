"""Latency and bandwidth of put_signal + wait_signal (nccl_core) against
dist.send / dist.recv of backend nccl, in one run, between ranks 0 and 1.

    torchrun --nproc-per-node=2 bench/rma.py [--out bench/results/rma.json]

Latency: ping-pong, half the round trip.  Bandwidth: rank 0 streams a window
of puts, rank 1 acknowledges the last; bytes / time.  Timed with CUDA events
on the GPU; each size is warmed up first.  Ranks other than 0 and 1 idle.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend as nc  # noqa: E402
from sidebyside import gpu_seconds, init_side_by_side  # noqa: E402  (bench/ is on sys.path when run)

SIZES = [8 << (2 * i) for i in range(13)] + [256 << 20]  # 8 B .. 128 MiB, 256 MiB


def timed(fn, iters: int) -> float:
    """Seconds per iteration of fn(), measured on the current stream."""
    return gpu_seconds(fn, iters, warmup=1, barrier=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="")
    p.add_argument("--max-bytes", type=int, default=256 << 20)
    args = p.parse_args()
    device, rank, _, nccl_pg = init_side_by_side()
    comm = nc.get_communicator()
    sizes = [s for s in SIZES if s <= args.max_bytes]
    window_bytes = max(sizes) * 2
    inbox = nc.torch.empty(window_bytes, dtype=torch.uint8, device=device)
    win = comm.register_window(inbox)
    x = torch.ones(max(sizes), dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    # Warm the nccl group's point-to-point connections.
    if rank < 2:
        peer = 1 - rank
        if rank == 0:
            dist.send(x[:8], peer, group=nccl_pg)
        else:
            dist.recv(y[:8], peer, group=nccl_pg)
    rows = []
    for size in sizes:
        iters = 200 if size <= (1 << 20) else 20
        stream_k = 16 if size <= (16 << 20) else 4
        res = {"bytes": size}
        if rank < 2:
            peer = 1 - rank
            src, dst = x[:size], y[:size]

            def rma_pingpong():
                if rank == 0:
                    comm.put_signal(src, peer, win)
                    comm.wait_signal(nc.WaitSignalDesc(peer))
                else:
                    comm.wait_signal(nc.WaitSignalDesc(peer))
                    comm.put_signal(src, peer, win)

            def p2p_pingpong():
                if rank == 0:
                    dist.send(src, peer, group=nccl_pg)
                    dist.recv(dst, peer, group=nccl_pg)
                else:
                    dist.recv(dst, peer, group=nccl_pg)
                    dist.send(src, peer, group=nccl_pg)

            def rma_stream():
                if rank == 0:
                    for k in range(stream_k):
                        comm.put_signal(src, peer, win, (k % 2) * size)
                    comm.wait_signal(nc.WaitSignalDesc(peer))
                else:
                    comm.wait_signal(nc.WaitSignalDesc(peer, op_count=stream_k))
                    comm.signal(peer)

            def p2p_stream():
                if rank == 0:
                    for _ in range(stream_k):
                        dist.send(src, peer, group=nccl_pg)
                    dist.recv(dst[:8], peer, group=nccl_pg)
                else:
                    for _ in range(stream_k):
                        dist.recv(dst, peer, group=nccl_pg)
                    dist.send(src[:8], peer, group=nccl_pg)

            res["rma_latency_us"] = timed(rma_pingpong, iters) / 2 * 1e6
            res["nccl_latency_us"] = timed(p2p_pingpong, iters) / 2 * 1e6
            t_rma = timed(rma_stream, max(iters // stream_k, 3))
            t_p2p = timed(p2p_stream, max(iters // stream_k, 3))
            res["rma_GBps"] = stream_k * size / t_rma / 1e9
            res["nccl_GBps"] = stream_k * size / t_p2p / 1e9
            res["latency_ratio"] = res["rma_latency_us"] / res["nccl_latency_us"]
            res["bandwidth_ratio"] = res["rma_GBps"] / res["nccl_GBps"]
        else:
            for _ in range(4):
                dist.barrier()
        rows.append(res)
    if rank == 0:
        print("| bytes | put+wait µs | send/recv µs | latency ratio | put GB/s | send GB/s | bw ratio |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['bytes']} | {r['rma_latency_us']:.2f} | {r['nccl_latency_us']:.2f} | "
                  f"{r['latency_ratio']:.2f} | {r['rma_GBps']:.2f} | {r['nccl_GBps']:.2f} | "
                  f"{r['bandwidth_ratio']:.2f} |", flush=True)
        if args.out:
            os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
            with open(args.out, "w") as f:
                json.dump({"world": dist.get_world_size(), "nccl": nc.nccl_version(),
                           "torch": torch.__version__, "rows": rows}, f, indent=1)
    dist.barrier()
    win.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
