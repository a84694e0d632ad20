"""Registration of the ``nccl_core`` backend with torch.distributed.

Kept free of the C++ extension so that registering at ``import torch`` time
is cheap; the creator imports ``_C`` when the first group is built.
"""

from __future__ import annotations

import zlib
from typing import Any, NamedTuple

BACKEND_NAME = "nccl_core"


class GrowPlan(NamedTuple):
    """What ``grow.grow_group`` tells the creator of the group it makes."""

    ranks: list  # the grown group's global ranks, sorted
    parent: Any  # the smaller group's Communicator on its members; None on a new rank
    unique_id: bytes  # the grow's id, taken by the smaller group's rank 0


# Set by grow_group around its dist.new_group call, on the grown group's ranks;
# the creator of that group takes it.
pending_grow: GrowPlan | None = None


def register() -> None:
    """Registers ``nccl_core`` for CUDA devices (idempotent)."""
    import torch.distributed as dist

    if not dist.is_available():
        return
    if dist.Backend._plugins.get(BACKEND_NAME.upper()) is not None:
        return
    dist.Backend.register_backend(
        BACKEND_NAME, create_backend, extended_api=True, devices=["cuda"]
    )
    # torch < 2.15 splits new groups of any backend from ours: see _split_rule.
    from nccl_core_backend import _split_rule

    _split_rule.install()


def split_color(ranks) -> int:
    """Color shared by all members of a new group: a hash of its ranks."""
    data = ",".join(str(int(r)) for r in sorted(ranks)).encode()
    return zlib.crc32(data) & 0x7FFFFFFF


def unwrap(backend):
    """``backend`` without torch's ``_ProcessGroupWrapper`` layers.

    With ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` torch wraps plugin backends in a
    wrapper that checks that ranks call the same collectives.
    """
    while type(backend).__name__ == "_ProcessGroupWrapper" and hasattr(backend, "wrapped_pg"):
        backend = backend.wrapped_pg
    return backend


def _split_source(global_ranks):
    """The default group's nccl_core backend, if new groups split from it.

    Decided by torch's own rule (``_get_split_source``, with the backend check
    of torch >= 2.15 on any torch: ``_split_rule``): the ranks left out of a
    new group call ``perform_nocolor_split`` on exactly the backend it
    returns, so members must split from the same one.
    """
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    from nccl_core_backend import _C, _split_rule

    if not global_ranks or not dist.is_initialized():
        return None
    default = c10d._get_default_group()
    if default.bound_device_id is None:
        return None
    try:
        parent = _split_rule.split_source(default, BACKEND_NAME)
    except RuntimeError:
        return None
    parent = unwrap(parent)
    if not isinstance(parent, _C.ProcessGroupNcclCore):
        return None
    return parent


def create_backend(dist_backend_opts, pg_options):
    """Creator called by torch.distributed for every nccl_core group."""
    from nccl_core_backend import _C, _symm_publish
    from nccl_core_backend.options import make_options

    _symm_publish.install()  # torch >= 2.15: symmetric memory finds our communicators
    opts = make_options(pg_options, dist_backend_opts.timeout)
    opts.group_name = str(dist_backend_opts.group_id)
    opts.global_ranks_in_group = list(dist_backend_opts.global_ranks_in_group)
    if getattr(dist_backend_opts, "enable_reconfigure", False):
        # torch >= 2.15's init_process_group(enable_reconfigure=True): the
        # communicator waits for dist._reconfigure().
        opts.enable_reconfigure = True
    backend = _C.ProcessGroupNcclCore(
        dist_backend_opts.store,
        dist_backend_opts.group_rank,
        dist_backend_opts.group_size,
        opts,
    )
    ranks = list(dist_backend_opts.global_ranks_in_group)
    parent = _split_source(ranks)
    global pending_grow
    grow = pending_grow
    if grow is not None and sorted(ranks) == grow.ranks:
        backend._set_grow_source(grow.parent, grow.unique_id)
        pending_grow = None  # taken: grow_group sees that this group grows
        import torch.distributed as dist

        if parent is not None and len(ranks) < dist.get_world_size():
            # The ranks left out split the parent with no color inside this
            # new_group call; ncclCommSplit needs every rank of it.
            default = dist.distributed_c10d._get_default_group()
            parent.perform_nocolor_split(default.bound_device_id)
    elif parent is not None:
        backend._set_split_source(parent, split_color(ranks))
    return backend
