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


def check_routed(pg, backend) -> None:
    """Raises when a group that was routed to nccl_core got another CUDA
    backend: a conformance run whose groups fell back to torch's own backend
    would count torch's results as ours."""
    if "nccl_core" not in str(as_nccl_core(backend)).lower():
        return
    import torch

    from nccl_core_backend._registration import unwrap

    try:
        got = unwrap(pg._get_backend(torch.device("cuda")))  # under torch's debug wrapper too
    except RuntimeError:
        return  # no CUDA backend made at creation: nothing to check here
    if type(got).__name__ != "ProcessGroupNcclCore":
        raise RuntimeError(f"conformance routing: a group asking for {backend!r} got "
                           f"{type(got).__name__}, not nccl_core's ProcessGroupNcclCore")


def install() -> None:
    """Routes every group creation of this process through ``as_nccl_core``
    and checks that each such group got nccl_core's backend."""
    from torch.distributed import distributed_c10d as c10d

    import nccl_core_backend  # noqa: F401  - registers the backend

    helper = c10d._new_process_group_helper
    if getattr(helper, "_nccl_core", False):
        return

    def create(group_size, group_rank, global_ranks_in_group, backend, *args, **kwargs):
        out = helper(group_size, group_rank, global_ranks_in_group, as_nccl_core(backend),
                     *args, **kwargs)
        pg = out[0] if isinstance(out, tuple) else out
        # Ranks outside the group get GroupMember.NON_GROUP_MEMBER (an int
        # on torch 2.11): only a ProcessGroup has a backend to check.
        if isinstance(pg, c10d.ProcessGroup):
            check_routed(pg, backend)
        return out

    create._nccl_core = True
    c10d._new_process_group_helper = create
