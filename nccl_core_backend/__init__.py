"""nccl_core: a torch.distributed backend that exposes NCCL's modern API.

``import nccl_core_backend`` registers the ``"nccl_core"`` backend (an entry
point also registers it at ``import torch``), so that::

    dist.init_process_group(backend="nccl_core")

works under ``torchrun``.  The ``nccl.core``-style API sits on the group's own
communicator::

    comm = nccl_core_backend.get_communicator()
    buf = nccl_core_backend.torch.empty(1 << 20, device="cuda")
    win = comm.register_window(buf)
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING

# torch loads libnccl.so.2 before our extension does, and the c10d base
# classes must exist before _C derives from them.  Bound under private names:
# `nccl_core_backend.torch` is the interop module, not torch itself.
_importlib.import_module("torch.distributed")

from nccl_core_backend._registration import BACKEND_NAME, register  # noqa: E402
from nccl_core_backend.communicator import (  # noqa: E402
    GroupSimInfo,
    get_backend,
    get_communicator,
    get_error_string,
    group,
    group_end,
    group_start,
)
from nccl_core_backend.constants import (  # noqa: E402
    AVG,
    BFLOAT16,
    CHAR,
    DOUBLE,
    FLOAT,
    FLOAT8E4M3,
    FLOAT8E5M2,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    HALF,
    INT,
    INT8,
    INT32,
    INT64,
    MAX,
    MIN,
    NCCL_SPLIT_NOCOLOR,
    PROD,
    SUM,
    UINT8,
    UINT32,
    UINT64,
    CommShrinkFlag,
    CTAPolicy,
    NcclCftCap,
    NcclCftTeamMode,
    NcclCommMemStat,
    NcclDataType,
    NcclGinConnectionType,
    NcclGinType,
    NcclRedOp,
    Result,
    ScalarResidence,
    WindowFlag,
)
from nccl_core_backend.coll_config import NCCLCollConfig, VendorOption, coll_config  # noqa: E402
from nccl_core_backend.compatibility import Feature, features  # noqa: E402
from nccl_core_backend.errors import NcclError, NcclInvalid, NcclUnsupported  # noqa: E402
from nccl_core_backend.params import dump_params, params  # noqa: E402
from nccl_core_backend.properties import NCCLCommProperties  # noqa: E402
from nccl_core_backend.rma import WaitSignalDesc  # noqa: E402
from nccl_core_backend.team import NCCLTeam  # noqa: E402
from nccl_core_backend.dev_resources import (  # noqa: E402
    GinBarrierHandle,
    GinBarrierRequirement,
    LLA2AHandle,
    LLA2ARequirement,
    LsaBarrierHandle,
    LsaBarrierRequirement,
    MultimemHandle,
    TeamRequirement,
)
from nccl_core_backend.grow import grow_group  # noqa: E402
from nccl_core_backend.unique_id import UniqueId  # noqa: E402

register()

if TYPE_CHECKING:
    from nccl_core_backend import _C
    from nccl_core_backend._C import (
        CommResource,
        Communicator,
        CustomRedOp,
        DevCommResource,
        NCCLDevCommRequirements,
        Options,
        ProcessGroupNcclCore,
        RegisteredBufferHandle,
        RegisteredWindowHandle,
    )
    from nccl_core_backend import device
    from nccl_core_backend.interop import cupy, torch

# The C++ extension loads on first use, not here: the ``torch.backends`` entry
# point imports this package while ``import torch`` runs, and registering must
# stay cheap there (and must not fail if the extension cannot load).
_LAZY_EXT = (
    "Options",
    "ProcessGroupNcclCore",
    "Communicator",
    "CommResource",
    "RegisteredBufferHandle",
    "RegisteredWindowHandle",
    "CustomRedOp",
    "DevCommResource",
    "NCCLCommProperties",
    "NCCLDevCommRequirements",
    "NCCLTeam",
)
_LAZY_MODULES = {
    "torch": "nccl_core_backend.interop.torch",
    "cupy": "nccl_core_backend.interop.cupy",
    "device": "nccl_core_backend.device",
}


def __getattr__(name: str):
    if name == "_C":
        value = _importlib.import_module("nccl_core_backend._C")
    elif name in _LAZY_EXT:
        value = getattr(_importlib.import_module("nccl_core_backend._C"), name)
    elif name in _LAZY_MODULES:
        value = _importlib.import_module(_LAZY_MODULES[name])
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"_C", *_LAZY_EXT, *_LAZY_MODULES})


def nccl_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the NCCL loaded in this process."""
    from nccl_core_backend import _C

    code = _C.nccl_version()
    return code // 10000, (code // 100) % 100, code % 100


__all__ = [
    "AVG",
    "BACKEND_NAME",
    "BFLOAT16",
    "CHAR",
    "CTAPolicy",
    "CommResource",
    "CommShrinkFlag",
    "Communicator",
    "CustomRedOp",
    "DOUBLE",
    "DevCommResource",
    "Feature",
    "FLOAT",
    "FLOAT16",
    "FLOAT32",
    "FLOAT64",
    "FLOAT8E4M3",
    "FLOAT8E5M2",
    "GroupSimInfo",
    "HALF",
    "INT",
    "INT32",
    "INT64",
    "INT8",
    "MAX",
    "MIN",
    "NCCLCollConfig",
    "NCCLCommProperties",
    "NCCLDevCommRequirements",
    "NCCLTeam",
    "NCCL_SPLIT_NOCOLOR",
    "NcclCftCap",
    "NcclCftTeamMode",
    "NcclCommMemStat",
    "NcclDataType",
    "NcclError",
    "NcclGinConnectionType",
    "NcclGinType",
    "NcclInvalid",
    "NcclRedOp",
    "NcclUnsupported",
    "Options",
    "PROD",
    "ProcessGroupNcclCore",
    "RegisteredBufferHandle",
    "RegisteredWindowHandle",
    "Result",
    "SUM",
    "ScalarResidence",
    "UINT32",
    "UINT64",
    "UINT8",
    "UniqueId",
    "GinBarrierHandle",
    "GinBarrierRequirement",
    "LLA2AHandle",
    "LLA2ARequirement",
    "LsaBarrierHandle",
    "LsaBarrierRequirement",
    "MultimemHandle",
    "TeamRequirement",
    "VendorOption",
    "WaitSignalDesc",
    "WindowFlag",
    "coll_config",
    "cupy",
    "device",
    "dump_params",
    "features",
    "get_backend",
    "get_communicator",
    "get_error_string",
    "group",
    "group_end",
    "group_start",
    "grow_group",
    "nccl_version",
    "params",
    "register",
    "torch",
]
