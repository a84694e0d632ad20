"""Your own CUDA kernel on a device communicator of nccl_core.

    torchrun --nproc-per-node=4 examples/device_kernel/run.py

Builds ``ring_shift.cu`` (a torch C++/CUDA extension) on first run, then:
a device communicator with LSA barriers (``create_dev_comm``), a window over
NCCL memory (``register_window``), and the kernel reads the previous rank's
slice through ``ncclGetLsaPointer``.  The kernel receives the ncclDevComm by
value, copied from ``DevCommResource.ptr``, and the window as
``RegisteredWindowHandle.handle``.  Checks the result on every rank.
"""

from __future__ import annotations

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.utils.cpp_extension import load  # noqa: E402

import nccl_core_backend as nc  # noqa: E402
from nccl_core_backend import simhosts  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKS = 4


def nccl_include_dirs() -> list[str]:
    """Headers of the NCCL torch loads (the nvidia-nccl wheel), else CUDA's."""
    dirs = []
    try:
        import nvidia.nccl

        for base in list(getattr(nvidia.nccl, "__path__", [])):
            if os.path.exists(os.path.join(base, "include", "nccl_device.h")):
                dirs.append(os.path.join(base, "include"))
    except ImportError:
        pass
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if not dirs and os.path.exists(os.path.join(cuda_home, "include", "nccl_device.h")):
        dirs.append(os.path.join(cuda_home, "include"))
    return dirs


def header_version(dirs: list[str]) -> tuple[int, int, int] | None:
    """The NCCL release of the headers the kernel is built against (nccl.h)."""
    import re

    for d in dirs:
        path = os.path.join(d, "nccl.h")
        if os.path.exists(path):
            text = open(path).read()
            parts = [re.search(rf"#define NCCL_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
            if all(parts):
                return tuple(int(m.group(1)) for m in parts)
    return None


def build():
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}"
    return load(name="nccl_core_ring_shift", sources=[os.path.join(HERE, "ring_shift.cu")],
                extra_include_paths=nccl_include_dirs(),
                extra_cuda_cflags=[f"-gencode=arch=compute_{arch},code=sm_{arch}"],
                verbose=False)


def main() -> None:
    device = simhosts.rank_device("device_kernel/run.py",
                                  needs_nvlink="device communicators and LSA windows")
    # The device API's structures (ncclDevComm, windows) are compiled into the
    # kernel from the headers: they must be the loaded library's release.
    built_for, loaded = header_version(nccl_include_dirs()), nc.nccl_version()
    if built_for != loaded:
        raise SystemExit(f"device_kernel/run.py: the kernel would be built against NCCL headers "
                         f"{built_for} but the process loaded NCCL {loaded}; the device API's structures "
                         "differ between releases (point CUDA_HOME or the nvidia-nccl wheel at the "
                         "loaded release's headers)")
    dist.init_process_group("nccl_core", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    # One rank compiles, the others then load the cached build.
    if rank == 0:
        ext = build()
    dist.barrier()
    if rank != 0:
        ext = build()

    comm = nc.get_communicator()
    dev = comm.create_dev_comm(nc.NCCLDevCommRequirements(lsa_barrier_count=BLOCKS))
    n = 1 << 16
    buf = nc.torch.empty(2 * n, device=device)
    win = comm.register_window(buf)
    if win is None:
        raise SystemExit("this system cannot register NCCL windows")
    offset = n  # the second half, to show byte offsets at work
    buf[n:].copy_(torch.arange(n, device=device, dtype=torch.float32) + 1000 * rank)
    out = torch.empty(n, device=device)
    ext.ring_shift(dev.ptr, win.handle, offset * 4, out, BLOCKS)
    prev = (rank - 1) % world
    expected = torch.arange(n, device=device, dtype=torch.float32) + 1000 * prev
    ok = torch.tensor([int(torch.equal(out, expected))], device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    win.close()
    dev.close()
    if rank == 0:
        print(f"device_kernel world={world}: ring shift -> {'OK' if ok.item() else 'MISMATCH'}", flush=True)
    dist.destroy_process_group()
    if not ok.item():
        raise SystemExit(1)


if __name__ == "__main__":
    main()
