"""Registration of "nccl_core" with torch.distributed, and the entry point."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as C10dBackend

import nccl_core_backend
from nccl_core_backend import _autoload, _registration

ENTRY_POINT = "nccl_core_backend._autoload:autoload"


def _python(code: str, **env_overrides: str) -> str:
    """Runs `code` in a fresh interpreter; returns its stdout."""
    env = dict(os.environ)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    env.update(env_overrides)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_exposes_public_names():
    assert nccl_core_backend.BACKEND_NAME == "nccl_core"
    for name in nccl_core_backend.__all__:
        assert getattr(nccl_core_backend, name) is not None, name
    # The c10d base classes, so torch.distributed accepts them.
    assert issubclass(nccl_core_backend.ProcessGroupNcclCore, C10dBackend)
    assert issubclass(nccl_core_backend.Options, C10dBackend.Options)


def test_backend_is_registered():
    assert "nccl_core" in dist.Backend.backend_list
    plugin = dist.Backend._plugins.get("NCCL_CORE")
    assert plugin is not None
    assert plugin.creator_fn is _registration.create_backend
    assert plugin.extended_api is True
    assert dist.Backend("nccl_core") == "nccl_core"
    assert dist.is_backend_available("nccl_core")


def test_registration_keeps_nccl_default_for_cuda():
    assert dist.Backend.default_device_backend_map["cuda"] == "nccl"
    assert dist.Backend.default_device_backend_map["cpu"] == "gloo"
    assert dist.Backend.backend_capability["nccl_core"] == ["cuda"]


def test_register_is_idempotent():
    before = dist.Backend._plugins["NCCL_CORE"]
    nccl_core_backend.register()
    nccl_core_backend.register()
    assert dist.Backend._plugins["NCCL_CORE"] is before
    assert dist.Backend.backend_list.count("nccl_core") == 1


def test_entry_point_is_declared():
    eps = importlib.metadata.entry_points(group="torch.backends")
    ours = [ep for ep in eps if ep.name == "nccl_core"]
    assert len(ours) == 1
    assert ours[0].value == ENTRY_POINT
    assert ours[0].load() is _autoload.autoload


def test_autoload_twice_never_raises():
    assert _autoload.autoload() is None
    assert _autoload.autoload() is None
    assert "NCCL_CORE" in dist.Backend._plugins


def test_autoload_swallows_registration_errors(monkeypatch):
    def broken():
        raise RuntimeError("registration failed")

    monkeypatch.setattr(_registration, "register", broken)
    assert _autoload.autoload() is None


def test_import_torch_registers_without_loading_extension():
    out = _python(
        "import sys, torch, torch.distributed as dist\n"
        "print('NCCL_CORE' in dist.Backend._plugins, 'nccl_core_backend._C' in sys.modules)"
    )
    # Registered by the entry point alone; the extension waits for a group.
    assert out == "True False"


def test_autoload_disabled_then_import_registers():
    out = _python(
        "import torch.distributed as dist\n"
        "a = 'NCCL_CORE' in dist.Backend._plugins\n"
        "import nccl_core_backend\n"
        "print(a, 'NCCL_CORE' in dist.Backend._plugins)",
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert out == "False True"


def test_group_from_entry_point_only():
    # torchrun scripts need not import the package themselves.
    out = _python(
        "import torch.distributed as dist\n"
        "dist.init_process_group('nccl_core', store=dist.HashStore(), rank=0, world_size=1)\n"
        "print(dist.get_backend())\n"
        "dist.destroy_process_group()"
    )
    assert out == "nccl_core"


@pytest.mark.parametrize("name", ["_C", "Options", "ProcessGroupNcclCore"])
def test_lazy_names_listed_in_dir(name):
    assert name in dir(nccl_core_backend)


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        nccl_core_backend.no_such_name  # noqa: B018
