"""MemPool registration, the allocator-hook option and the symmetric-memory
publisher, as far as they go without a GPU (the GPU side:
tests/gpu/cases/mem_pools.py and tests/gpu/test_symm_mem.py)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.distributed as dist

from nccl_core_backend import Options, ProcessGroupNcclCore, _C, _symm_publish
from nccl_core_backend.options import env_settings, make_options

CUDA = torch.device("cuda")
HOOK = "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"


# --- the allocator-hook option ----------------------------------------------


def test_allocator_segments_are_off_by_default():
    assert Options().register_allocator_segments is False
    assert make_options(None, None, env={}).register_allocator_segments is False


@pytest.mark.parametrize("name", ["NCCL_CORE_REGISTER_ALLOCATOR_SEGMENTS", HOOK,
                                  "NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"])
def test_allocator_segments_from_the_environment(name):
    assert env_settings({name: "1"}) == {"register_allocator_segments": True}
    assert make_options(None, None, env={name: "1"}).register_allocator_segments is True


def test_nccl_core_variable_wins_over_torchs():
    env = {"NCCL_CORE_REGISTER_ALLOCATOR_SEGMENTS": "0", HOOK: "1"}
    assert env_settings(env) == {"register_allocator_segments": False}


def test_bad_hook_value_names_the_variable():
    with pytest.raises(ValueError, match=HOOK):
        env_settings({HOOK: "sometimes"})


def test_option_round_trips_and_copies():
    o = Options()
    o.register_allocator_segments = True
    assert copy.copy(o).register_allocator_segments is True
    assert copy.deepcopy(o).register_allocator_segments is True
    with pytest.raises(TypeError):
        o.register_allocator_segments = "yes"


@pytest.fixture
def world():
    dist.init_process_group("nccl_core", store=dist.HashStore(), rank=0, world_size=1)
    yield dist.group.WORLD
    if dist.is_initialized():
        dist.destroy_process_group()


def test_environment_reaches_the_group(world, monkeypatch):
    dist.destroy_process_group()
    monkeypatch.setenv(HOOK, "1")
    dist.init_process_group("nccl_core", store=dist.HashStore(), rank=0, world_size=1)
    assert dist.group.WORLD._get_backend(CUDA).options.register_allocator_segments is True


# --- register_mem_pool without a communicator -------------------------------


def test_mem_pool_calls_refuse_none(world):
    backend = world._get_backend(CUDA)
    with pytest.raises(TypeError, match="MemPool"):
        backend.register_mem_pool(None)
    with pytest.raises(TypeError, match="MemPool"):
        backend.deregister_mem_pool(None)
    with pytest.raises(TypeError):
        backend.register_mem_pool("pool")


def test_nothing_registered_without_a_communicator(world):
    backend = world._get_backend(CUDA)
    assert backend._has_communicator() is False
    assert backend._registered_segments() == {"segments": 0, "bytes": 0, "windows": 0}
    assert backend._registered_segments(None) == {"segments": 0, "bytes": 0, "windows": 0}


def test_a_directly_built_backend_has_the_methods():
    backend = ProcessGroupNcclCore(dist.HashStore(), 0, 1, Options())
    assert callable(backend.register_mem_pool) and callable(backend.deregister_mem_pool)
    assert backend._registered_segments()["segments"] == 0


# --- the symmetric-memory publisher -----------------------------------------


class _FakeRegistration:
    def __init__(self, log, group, ptr, device):
        self.log, self.args = log, (group, ptr, device)
        log.append(("register", group, ptr, device))

    def unregister(self):
        self.log.append(("unregister",) + self.args)


@pytest.fixture
def fake_torch_registry(monkeypatch):
    """torch's register_external_nccl_comm, recorded instead of called."""
    nccl_mod = pytest.importorskip("torch.distributed._symmetric_memory._nccl")
    log = []
    monkeypatch.setattr(nccl_mod, "register_external_nccl_comm",
                        lambda g, p, d, comm=None: _FakeRegistration(log, g, p, d.index))
    monkeypatch.setattr(_symm_publish, "_published", {})
    return log


def test_publisher_follows_communicator_lifetimes(fake_torch_registry):
    log = fake_torch_registry
    _symm_publish._on_communicator("g1", 0x1000, 0, True)
    _symm_publish._on_communicator("g2", 0x2000, 0, True)
    assert _symm_publish.published() == {("g1", 0): 0x1000, ("g2", 0): 0x2000}
    # A second communicator under a published name (a shrunk group) is not
    # published, and its withdrawal leaves the first one alone.
    _symm_publish._on_communicator("g1", 0x3000, 0, True)
    _symm_publish._on_communicator("g1", 0x3000, 0, False)
    assert _symm_publish.published()[("g1", 0)] == 0x1000
    _symm_publish._on_communicator("g1", 0x1000, 0, False)
    _symm_publish._on_communicator("g1", 0x1000, 0, False)  # once only
    assert _symm_publish.published() == {("g2", 0): 0x2000}
    assert log == [("register", "g1", 0x1000, 0), ("register", "g2", 0x2000, 0),
                   ("unregister", "g1", 0x1000, 0)]


def test_publisher_matches_torch():
    try:
        from torch.distributed._symmetric_memory._nccl import register_external_nccl_comm  # noqa: F401
        from torch._C._distributed_c10d import _register_external_nccl_comm  # noqa: F401
        has = True
    except ImportError:
        has = False
    assert _symm_publish.available() is has
    assert _symm_publish.install() is has  # idempotent, False on torch < 2.15


def test_listener_can_be_replaced_and_removed():
    calls = []
    _C._set_comm_listener(lambda *a: calls.append(a))
    _C._set_comm_listener(None)
    if _symm_publish._installed:
        _C._set_comm_listener(_symm_publish._on_communicator)  # restore
    assert calls == []  # nothing was created
