"""torch's symmetric memory over nccl_core groups, one symmetric-memory backend
per process (``set_backend`` is process-wide and fixed once used).  Launched by
``test_symm_mem.py`` as::

    torchrun --nproc-per-node=N tests/gpu/symm_mem_process.py {CUDA|NCCL|NVSHMEM}

On the world group and on a ``new_group`` of nccl_core, for several dtypes:
each rank writes its own data into a ``symm_mem.empty`` buffer, the ranks
synchronize (``dist.barrier`` over nccl_core, then the handle's own
``barrier``), and every rank reads every rank's buffer through the
``rendezvous`` handle (``get_buffer``); every element is compared with that
rank's data, rebuilt locally from the seed.

- CUDA: torch's own IPC-based backend; works over nccl_core on any torch.
  It is torch's default for CUDA tensors (TORCH_SYMMMEM unset or "CUDA"), and
  a default is registered for the device only, not by name: ``set_backend``
  looks names up among the *other* backends and raises "SymmetricMemory does
  not find allocation backend CUDA" (torch 2.11).  So the backend is set only
  where ``get_backend(device)`` answers another name.
- NCCL: torch >= 2.15 finds nccl_core's communicator through
  ``register_external_nccl_comm`` (``nccl_core_backend/_symm_publish.py``);
  torch 2.11's NCCL backend accepts only ProcessGroupNCCL: reported as SKIP.
- NVSHMEM: where ``is_nvshmem_available()`` and this torch registered it.
  Before torch 2.15 its handle's ``barrier`` is an empty stub that orders
  nothing (pytorch/pytorch#191858, fixed by #192579): there the phase after
  the handle's barrier is left out (a line says so) and the one after
  ``dist.barrier`` still runs.

A backend that this torch build does not register is reported as SKIP with
the reason; any other failure is a failure.

Multicast objects are never created: TORCH_SYMM_MEM_DISABLE_MULTICAST=1 (CUDA),
NCCL_NVLS_ENABLE=0 (NCCL), NVSHMEM_DISABLE_NVLS=1 (NVSHMEM); the handles are
checked to report no multicast.

Prints ``OK <backend> rank R``, or ``SKIP <backend>: <reason>`` on every rank.
"""

from __future__ import annotations

import faulthandler
import os
import sys

os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import nccl_core_backend as nc  # noqa: E402,F401  - registers the backend
from nccl_core_backend import _symm_publish, simhosts  # noqa: E402

DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.uint8]


def skip_reason(backend: str) -> str | None:
    if backend == "NCCL" and not _symm_publish.available():
        return (f"torch {torch.__version__} has no register_external_nccl_comm (torch >= 2.15): "
                "its NCCL symmetric-memory backend accepts only ProcessGroupNCCL; use "
                "torch's CUDA backend (the default) over nccl_core groups")
    if backend == "NVSHMEM" and not symm_mem.is_nvshmem_available():
        return "NVSHMEM is not available in this torch build or on this system"
    return None


def select_backend(backend: str, device: torch.device) -> str | None:
    """Makes `backend` the symmetric-memory backend of CUDA tensors; returns
    why it cannot be, or None.  Asks first: the default backend is not
    registered by name, and setting it raises on torch 2.11."""
    get = getattr(symm_mem, "get_backend", None)
    current = get(device) if get is not None else None
    if current == backend:
        return None
    try:
        symm_mem.set_backend(backend)
    except RuntimeError as e:
        if "does not find allocation backend" not in str(e):
            raise
        return (f"torch {torch.__version__} registers no {backend!r} symmetric-memory backend "
                f"(the default for CUDA tensors here is {current!r}): {e}")
    if get is not None and get(device) != backend:
        raise AssertionError(f"set_backend({backend!r}) left get_backend = {get(device)!r}")
    return None


def data(rank: int, dtype: torch.dtype, n: int, salt: int) -> torch.Tensor:
    """Rank `rank`'s values: any rank can rebuild them."""
    g = torch.Generator()
    g.manual_seed(1000003 * salt + 7919 * rank + 17)
    if dtype.is_floating_point:
        return torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    hi = 256 if dtype == torch.uint8 else 1 << 40
    return torch.randint(0, hi, (n,), generator=g).to(dtype)


def read_peers(hdl, group, rank: int, world: int, dtype, n: int, salt: int, what: str) -> None:
    for peer in range(world):
        got = hdl.get_buffer(peer, (n,), dtype).clone().cpu()
        want = data(peer, dtype, n, salt)
        bad = (got != want).nonzero()
        assert bad.numel() == 0, (
            f"{what}: rank {rank} reading rank {peer}'s {dtype} buffer: {bad.shape[0]} of {n} "
            f"elements wrong, first at {bad[0].item()}: got {got[bad[0]].item()} "
            f"expected {want[bad[0]].item()}")


def exercise(group, backend: str, rank: int, world: int, device: torch.device, salt0: int,
             what: str) -> list:
    if backend == "NCCL":
        published = _symm_publish.published()
        assert (group.group_name, device.index) in published, (group.group_name, published)
    # Every buffer stays alive until the caller drops the list returned:
    # torch 2.11's NVSHMEM allocator keeps a freed buffer's rendezvous
    # handle, and a later buffer at the same address got it, with the old
    # size (pytorch/pytorch#192579).
    kept = []
    for i, dtype in enumerate(DTYPES):
        n = 65537 + 2 * i
        t = symm_mem.empty(n, dtype=dtype, device=device)
        hdl = symm_mem.rendezvous(t, group)
        assert hdl.rank == rank and hdl.world_size == world, (hdl.rank, hdl.world_size)
        assert getattr(hdl, "multicast_ptr", 0) == 0, f"{backend}: a multicast object was set up"
        # Written, then the group synchronizes through nccl_core.
        salt = salt0 + 2 * i
        t.copy_(data(rank, dtype, n, salt))
        torch.cuda.synchronize()
        dist.barrier(group=group)
        read_peers(hdl, group, rank, world, dtype, n, salt, f"{what} after dist.barrier")
        torch.cuda.synchronize()
        dist.barrier(group=group)  # every peer has read before anyone rewrites
        kept.append((hdl, t))
        if backend == "NVSHMEM" and not handle_barrier_orders():
            continue
        # Rewritten, then the handle's own barrier orders it on the stream.
        t.copy_(data(rank, dtype, n, salt + 1))
        hdl.barrier(channel=0)
        read_peers(hdl, group, rank, world, dtype, n, salt + 1, f"{what} after hdl.barrier")
        hdl.barrier(channel=0)
        torch.cuda.synchronize()
        dist.barrier(group=group)
    return kept


def handle_barrier_orders() -> bool:
    """Whether this torch's NVSHMEM handle barrier synchronizes anything
    (an empty stub before 2.15: pytorch/pytorch#191858)."""
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 15)


def main() -> int:
    # Each rank's Python stacks before the test's 180 s bound ends the launch:
    # a hang names the call it hangs in.
    faulthandler.dump_traceback_later(150, exit=False)
    backend = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = simhosts.local_device()
    reason = skip_reason(backend)
    if reason is None:
        torch.cuda.set_device(device)
        reason = select_backend(backend, device)
    if reason:
        print(f"SKIP {backend}: {reason}", flush=True)
        return 0
    dist.init_process_group("nccl_core", device_id=device)
    if backend == "NVSHMEM" and not handle_barrier_orders():
        print(f"NVSHMEM on torch {torch.__version__}: the handle's barrier is an empty stub "
              "(pytorch/pytorch#191858): only the dist.barrier phase runs", flush=True)
    kept = exercise(dist.group.WORLD, backend, rank, world, device, 1, f"{backend} world group")
    sub = dist.new_group(list(range(world)), backend="nccl_core")
    dist.barrier(group=sub)  # its communicator exists (and is published)
    kept += exercise(sub, backend, rank, world, device, 100, f"{backend} new_group")
    torch.cuda.synchronize()
    del kept
    dist.barrier()
    dist.destroy_process_group()
    if backend == "NCCL" and _symm_publish.published():
        raise AssertionError(f"still published after destroy: {_symm_publish.published()}")
    print(f"OK {backend} rank {rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
