"""Where does host memory go when groups are created and destroyed?

    torchrun --nproc-per-node=2 scripts/diag_group_rss.py --groups 30

Churns new_group/all_reduce/destroy on backend nccl and on nccl_core (fast
path off, fast path off plus one window registered per group with or without
a collective first, default), and NCCL alone through ctypes (with a collective,
a window and finalize, each optional), and
prints, on every rank and per variant, resident memory growth per group after
malloc_trim(0) (memory glibc keeps cached is not a leak) split into anonymous,
file and shared memory, with the mapping and thread counts.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
from pathlib import Path

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nccl_core_backend  # noqa: E402  (its .torch is the interop module)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from hostpath import NCCL_FLOAT32, NCCL_SUM, nccl_library  # noqa: E402


def rss() -> dict:
    """Resident memory by kind (KiB): anonymous (heap, stacks), file, shmem."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("RssAnon", "RssFile", "RssShmem"):
                out[key[3:].lower()] = int(rest.split()[0])
    with open("/proc/self/maps") as f:
        out["maps"] = sum(1 for _ in f)
    return out


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def churn(n: int, variant: str, device) -> None:
    if variant.startswith("ctypes"):
        return churn_ctypes(n, set(variant.split("+")[1:]), device)
    backend = "nccl" if variant == "nccl" else None
    opts = None
    if variant.startswith("off"):
        opts = nccl_core_backend.Options()
        opts.fast_path_max_bytes = 0
    buf = nccl_core_backend.torch.empty(1 << 16, device=device) if variant.startswith("off+window") else None
    for _ in range(n):
        g = dist.new_group(list(range(dist.get_world_size())), backend=backend, pg_options=opts)
        if variant.endswith("+nocoll"):
            nccl_core_backend.get_communicator(g)  # connects no transport
        else:
            dist.all_reduce(torch.ones(4, device=device), group=g)
        if buf is not None:
            nccl_core_backend.get_communicator(g).register_window(buf).close()
        dist.destroy_process_group(g)
    gc.collect()
    torch.cuda.synchronize()


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def _ok(name: str, rc: int) -> None:
    if rc != 0:
        raise RuntimeError(f"{name} returned ncclResult {rc}")


def churn_ctypes(n: int, flags: set, device) -> None:
    """NCCL alone: init a communicator, destroy it; `flags` adds steps between.

    coll: one all_reduce first (connects NCCL's transports); window: register
    and deregister one window; fin: ncclCommFinalize before destroy.  Tells
    NCCL's own per-communicator host memory apart from ours.
    """
    lib = nccl_library()
    if lib is None:
        raise RuntimeError("no libnccl is loaded in this process")
    x = torch.ones(1, device=device)
    stream = ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)
    for _ in range(n):
        uid = _UniqueId()
        if dist.get_rank() == 0:
            _ok("ncclGetUniqueId", lib.ncclGetUniqueId(ctypes.byref(uid)))
        obj = [bytes(uid) if dist.get_rank() == 0 else None]  # all 128 bytes
        dist.broadcast_object_list(obj, src=0)
        uid = _UniqueId.from_buffer_copy(obj[0])
        comm = ctypes.c_void_p()
        _ok("ncclCommInitRank", lib.ncclCommInitRank(
            ctypes.byref(comm), dist.get_world_size(), uid, dist.get_rank()))
        if "coll" in flags:
            _ok("ncclAllReduce", lib.ncclAllReduce(
                ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                ctypes.c_size_t(1), NCCL_FLOAT32, NCCL_SUM, comm, stream))
            torch.cuda.synchronize()
        if "window" in flags:
            ptr, win, size = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_size_t(1 << 18)
            _ok("ncclMemAlloc", lib.ncclMemAlloc(ctypes.byref(ptr), size))
            _ok("ncclCommWindowRegister", lib.ncclCommWindowRegister(
                comm, ptr, size, ctypes.byref(win), 1))
            _ok("ncclCommWindowDeregister", lib.ncclCommWindowDeregister(comm, win))
            _ok("ncclMemFree", lib.ncclMemFree(ptr))
        if "fin" in flags:
            _ok("ncclCommFinalize", lib.ncclCommFinalize(comm))
        _ok("ncclCommDestroy", lib.ncclCommDestroy(comm))
    torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--groups", type=int, default=30)
    p.add_argument("--variants", default="default,off,off+window,nccl,default",
                   help="comma-separated: nccl, off, off+window[+nocoll], default, "
                        "ctypes[+coll][+window][+fin]")
    args = p.parse_args()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    dist.init_process_group("cpu:gloo,cuda:nccl_core")
    libc = ctypes.CDLL("libc.so.6")
    n = args.groups
    for name in args.variants.split(","):
        churn(2, name, device)
        libc.malloc_trim(0)
        r0, t0 = rss(), threads()
        churn(n, name, device)
        libc.malloc_trim(0)
        r1, t1 = rss(), threads()
        per = {k: (r1[k] - r0[k]) / n for k in ("anon", "file", "shmem")}
        # Every rank reports: the growth seen so far differs between ranks.
        print(f"[diag] rank {dist.get_rank()} {name}: {n} groups, after malloc_trim KiB/group "
              f"anon {per['anon']:+.0f} file {per['file']:+.0f} shmem {per['shmem']:+.0f}, "
              f"maps {r0['maps']} -> {r1['maps']}, threads {t0} -> {t1}", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
