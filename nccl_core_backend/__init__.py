"""nccl_core: a torch.distributed backend that exposes NCCL's modern API.

``import nccl_core_backend`` registers the ``"nccl_core"`` backend (an entry
point also registers it at ``import torch``), so that::

    dist.init_process_group(backend="nccl_core")

works under ``torchrun``.
"""

from __future__ import annotations

import torch  # noqa: F401  - loads libnccl.so.2 before our extension
import torch.distributed  # noqa: F401  - c10d base classes for _C

from nccl_core_backend._registration import BACKEND_NAME, register
from nccl_core_backend.errors import NcclError, NcclInvalid, NcclUnsupported

register()

from nccl_core_backend import _C  # noqa: E402
from nccl_core_backend._C import Options, ProcessGroupNcclCore  # noqa: E402


def nccl_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the NCCL loaded in this process."""
    code = _C.nccl_version()
    return code // 10000, (code // 100) % 100, code % 100


__all__ = [
    "BACKEND_NAME",
    "NcclError",
    "NcclInvalid",
    "NcclUnsupported",
    "Options",
    "ProcessGroupNcclCore",
    "nccl_version",
    "register",
]
