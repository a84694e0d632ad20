"""nccl_core: a torch.distributed backend that exposes NCCL's modern API.

``import nccl_core_backend`` registers the ``"nccl_core"`` backend (an entry
point also registers it at ``import torch``), so that::

    dist.init_process_group(backend="nccl_core")

works under ``torchrun``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch  # noqa: F401  - loads libnccl.so.2 before our extension
import torch.distributed  # noqa: F401  - c10d base classes for _C

from nccl_core_backend._registration import BACKEND_NAME, register
from nccl_core_backend.errors import NcclError, NcclInvalid, NcclUnsupported

register()

if TYPE_CHECKING:
    from nccl_core_backend import _C
    from nccl_core_backend._C import Options, ProcessGroupNcclCore

# The C++ extension loads on first use, not here: the ``torch.backends`` entry
# point imports this package while ``import torch`` runs, and registering must
# stay cheap there (and must not fail if the extension cannot load).
_LAZY = ("_C", "Options", "ProcessGroupNcclCore")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        ext = importlib.import_module("nccl_core_backend._C")
        value = ext if name == "_C" else getattr(ext, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def nccl_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the NCCL loaded in this process."""
    from nccl_core_backend import _C

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
