"""How the conformance run puts nccl_core under torch's tests: every process
group that asks for backend ``nccl`` gets ``nccl_core`` instead."""

from __future__ import annotations

import re


def as_nccl_core(backend):
    """The backend string a group gets: ``nccl`` for CUDA becomes ``nccl_core``."""
    if backend is None:
        return None
    name = str(backend)
    if name.lower() == "undefined":  # torch's default: gloo for CPU, nccl for CUDA
        return "cpu:gloo,cuda:nccl_core"
    return re.sub(r"(?<![\w])nccl(?![\w])", "nccl_core", name, flags=re.IGNORECASE)


def install() -> None:
    """Routes every group creation of this process through ``as_nccl_core``."""
    from torch.distributed import distributed_c10d as c10d

    import nccl_core_backend  # noqa: F401  - registers the backend

    helper = c10d._new_process_group_helper
    if getattr(helper, "_nccl_core", False):
        return

    def create(group_size, group_rank, global_ranks_in_group, backend, *args, **kwargs):
        return helper(group_size, group_rank, global_ranks_in_group, as_nccl_core(backend),
                      *args, **kwargs)

    create._nccl_core = True
    c10d._new_process_group_helper = create
