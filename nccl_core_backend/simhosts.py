"""Which GPU a rank runs on, and simulated hosts: more ranks than GPUs.

NCCL refuses two ranks of one communicator on one GPU only when they share a
host hash.  A rank whose ``NCCL_HOSTID`` is a name of its own, set before its
first communicator exists, is a host of its own: its peers reach it through
NCCL's socket transport (over loopback here), as ranks on other nodes do.
That runs 2- and 4-rank jobs correctly on one GPU, for ``nccl_core`` and for
torch's ``nccl`` alike, at socket speed.

``NCCL_CORE_SIM_HOSTS``: ``1`` on, ``0`` off; unset, on exactly where this
node's ranks (``LOCAL_WORLD_SIZE``) outnumber the visible GPUs.  With it on,
rank ``r`` gets ``NCCL_HOSTID=simhost<r>``, ``NCCL_SOCKET_IFNAME=lo`` (unless
set) and the GPU ``LOCAL_RANK % gpus`` (round robin).

What cannot run this way is what needs NVLink peers: nccl_core's own kernels
(the fast path, push all-reduce, device-API kernels), LSA windows and
one-sided puts between NVLink peers.  :func:`nvlink_peers_missing` says why,
for a test to skip with.
"""

from __future__ import annotations

import os
from typing import MutableMapping

__all__ = ["enabled", "device_index", "local_device", "active", "nvlink_peers_missing",
           "rank_device"]

_HOST_PREFIX = "simhost"


def _int_var(env: MutableMapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def enabled(env: MutableMapping[str, str] | None = None, gpus: int | None = None) -> bool:
    """Whether this process runs as a simulated host (see the module text)."""
    env = os.environ if env is None else env
    switch = env.get("NCCL_CORE_SIM_HOSTS", "").strip()
    if switch == "1":
        return True
    if switch == "0":
        return False
    if switch:
        raise ValueError(f"NCCL_CORE_SIM_HOSTS must be 0 or 1 (or unset), got {switch!r}")
    if gpus is None:
        gpus = _visible_gpus()
    local_world = _int_var(env, "LOCAL_WORLD_SIZE", 1)
    return gpus > 0 and local_world > gpus


def device_index(local_rank: int, gpus: int, simulated: bool) -> int:
    """The GPU index of ``local_rank``: itself, or round robin over ``gpus``
    for a simulated host.  Raises ValueError where a real host lacks the GPU."""
    if local_rank < 0:
        raise ValueError(f"LOCAL_RANK must be >= 0, got {local_rank}")
    if gpus <= 0:
        raise ValueError("no CUDA GPU visible")
    if simulated:
        return local_rank % gpus
    if local_rank >= gpus:
        raise ValueError(f"LOCAL_RANK={local_rank} but only {gpus} GPU(s) visible: one GPU per "
                         "rank, or NCCL_CORE_SIM_HOSTS=1 to run ranks as simulated hosts")
    return local_rank


def local_device(env: MutableMapping[str, str] | None = None, gpus: int | None = None):
    """This rank's ``torch.device``; on a simulated host also sets the
    rank's NCCL host id and loopback sockets in ``env`` (``os.environ`` by
    default), so call it before the process group exists."""
    import torch

    env = os.environ if env is None else env
    if gpus is None:
        gpus = _visible_gpus()
    local = _int_var(env, "LOCAL_RANK", _int_var(env, "RANK", 0))
    simulated = enabled(env, gpus)
    if simulated:
        rank = _int_var(env, "RANK", local)
        env["NCCL_HOSTID"] = f"{_HOST_PREFIX}{rank}"
        env.setdefault("NCCL_SOCKET_IFNAME", "lo")
    return torch.device("cuda", device_index(local, gpus, simulated))


def rank_device(program: str, *, needs_nvlink: str = "",
                env: MutableMapping[str, str] | None = None, gpus: int | None = None):
    """The device a script's rank runs on, made current: what the examples
    and the bench call first, before the process group exists.

    Ranks beyond the visible GPUs become simulated hosts (rank 0 says so in
    one line).  Where the rank cannot run, the process ends with a one-line
    message naming ``program`` and the problem (``SystemExit``, no
    traceback): no GPU visible, a real host short of GPUs, or a script that
    ``needs_nvlink`` (the reason, e.g. "one-sided puts") on simulated hosts.
    """
    import torch

    env = os.environ if env is None else env
    if gpus is None:
        gpus = _visible_gpus()
    if gpus == 0:
        raise SystemExit(f"{program}: no CUDA GPU visible (torch.cuda.is_available() is "
                         f"{torch.cuda.is_available()}); nccl_core runs each rank on a CUDA GPU")
    try:
        device = local_device(env, gpus)
    except ValueError as e:
        raise SystemExit(f"{program}: {e}") from None
    if active(env):
        ranks = _int_var(env, "LOCAL_WORLD_SIZE", 1)
        if needs_nvlink:
            raise SystemExit(
                f"{program}: {needs_nvlink} need NVLink peers; these {ranks} ranks share "
                f"{gpus} GPU(s) as simulated hosts over sockets. Run one rank per GPU "
                f"(--nproc-per-node={gpus} here).")
        if _int_var(env, "LOCAL_RANK", 0) == 0:
            print(f"{program}: {ranks} ranks on {gpus} GPU(s): the ranks run as simulated hosts "
                  "over NCCL's socket transport (right results, socket speed; "
                  "NCCL_CORE_SIM_HOSTS=0 turns this off)", flush=True)
    torch.cuda.set_device(device)
    return device


def active(env: MutableMapping[str, str] | None = None) -> bool:
    """Whether this process was made a simulated host by :func:`local_device`."""
    env = os.environ if env is None else env
    return env.get("NCCL_HOSTID", "").startswith(_HOST_PREFIX)


def nvlink_peers_missing(env: MutableMapping[str, str] | None = None) -> str | None:
    """The reason a case that needs NVLink peers cannot run here, or None."""
    if active(env):
        return ("needs NVLink peers (nccl_core's own kernels, LSA windows, one-sided puts "
                "over NVLink); this launch runs its ranks as simulated hosts over sockets")
    return None


def _visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
