"""Process groups that need no GPU: the communicator is created lazily."""

from __future__ import annotations

from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

import nccl_core_backend
from nccl_core_backend import Options, ProcessGroupNcclCore, _C

CUDA = torch.device("cuda")


@pytest.fixture
def world():
    """Builds a one-rank default group; destroys it after the test."""

    def init(backend="nccl_core", **kwargs):
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, **kwargs)
        return dist.group.WORLD

    yield init
    if dist.is_initialized():
        dist.destroy_process_group()


def test_init_without_gpu(world):
    pg = world()
    assert dist.get_backend() == "nccl_core"
    assert dist.get_world_size() == 1 and dist.get_rank() == 0
    backend = pg._get_backend(CUDA)
    assert isinstance(backend, ProcessGroupNcclCore)
    assert backend.supports_splitting is True
    assert backend.supports_coalescing is True
    assert isinstance(backend.options, nccl_core_backend.Options)
    assert backend.options.backend == "nccl_core"
    # Lazy: nothing touched NCCL or a GPU yet.
    assert backend._has_communicator() is False
    assert backend._pending_works() == 0


def test_group_options_come_from_creator(world):
    pg = world(timeout=timedelta(seconds=42))
    opts = pg._get_backend(CUDA).options
    assert opts._timeout == timedelta(seconds=42)
    assert opts.group_name == pg.group_name


def test_pg_options_reach_the_backend_as_a_copy(world):
    mine = Options()
    mine.blocking_wait = True
    mine.min_ctas = 4
    pg = world(pg_options=mine)
    opts = pg._get_backend(CUDA).options
    assert opts is not mine
    assert opts.blocking_wait is True and opts.min_ctas == 4
    assert mine.group_name == ""  # the creator filled in its copy only


def test_environment_reaches_the_backend(world, monkeypatch):
    monkeypatch.setenv("NCCL_CORE_HIGH_PRIORITY", "1")
    monkeypatch.setenv("NCCL_CORE_WATCHDOG_MS", "20")
    opts = world()._get_backend(CUDA).options
    assert opts.is_high_priority_stream is True
    assert opts.watchdog_interval == timedelta(milliseconds=20)


def test_bad_environment_fails_init(world, monkeypatch):
    monkeypatch.setenv("NCCL_CORE_BLOCKING_WAIT", "perhaps")
    with pytest.raises(ValueError, match="NCCL_CORE_BLOCKING_WAIT"):
        world()
    assert not dist.is_initialized()


def test_wrong_pg_options_type_fails_init(world):
    with pytest.raises(TypeError, match="nccl_core_backend.Options"):
        world(pg_options={"blocking_wait": True})
    assert not dist.is_initialized()


def test_new_group_gets_global_ranks(world):
    world()
    sub = dist.new_group([0], backend="nccl_core")
    opts = sub._get_backend(CUDA).options
    assert dist.get_backend(sub) == "nccl_core"
    assert opts.global_ranks_in_group == [0]
    assert opts.group_name == sub.group_name


def test_cpu_tensor_on_pure_nccl_core_group_is_refused(world):
    world()
    with pytest.raises(RuntimeError, match="cpu"):
        dist.all_reduce(torch.ones(4))


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.allreduce([torch.ones(2)]),
        lambda b: b.broadcast([torch.ones(2)], dist.BroadcastOptions()),
        lambda b: b.send([torch.ones(2)], 0, 0),
    ],
)
def test_backend_refuses_cpu_tensors(world, call):
    backend = world()._get_backend(CUDA)
    with pytest.raises(ValueError, match="CUDA tensors"):
        call(backend)
    assert backend._has_communicator() is False


def test_backend_refuses_several_tensors(world):
    backend = world()._get_backend(CUDA)
    with pytest.raises(ValueError, match="exactly one tensor"):
        backend.allreduce([torch.ones(2), torch.ones(2)])


def test_mixed_cpu_gloo_cuda_nccl_core(world):
    pg = world("cpu:gloo,cuda:nccl_core")
    assert dist.get_backend() == "cpu:gloo,cuda:nccl_core"
    assert isinstance(pg._get_backend(CUDA), ProcessGroupNcclCore)
    assert not isinstance(pg._get_backend(torch.device("cpu")), ProcessGroupNcclCore)
    t = torch.arange(6, dtype=torch.float32)
    dist.all_reduce(t)  # goes to gloo
    assert torch.equal(t, torch.arange(6, dtype=torch.float32))
    out = [torch.empty(3)]
    dist.all_gather(out, torch.full((3,), 2.0))
    assert torch.equal(out[0], torch.full((3,), 2.0))
    assert pg._get_backend(CUDA)._has_communicator() is False


@pytest.mark.parametrize("rank, size", [(3, 2), (-1, 2), (0, 0), (2, 2)])
def test_invalid_rank_or_size(rank, size):
    with pytest.raises(ValueError, match="invalid rank"):
        _C.ProcessGroupNcclCore(dist.HashStore(), rank=rank, size=size, options=Options())


def test_direct_construction_is_lazy():
    b = _C.ProcessGroupNcclCore(dist.HashStore(), rank=1, size=4, options=Options())
    assert b.rank() == 1 and b.size() == 4
    assert b.name() == "nccl_core"
    assert b._has_communicator() is False


def test_destroy_then_reinit(world):
    world()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    world()
    assert dist.get_backend() == "nccl_core"
