"""The split rule of torch >= 2.15 on an older torch (nccl_core_backend/_split_rule.py).

torch 2.11 splits a new group from the default group's backend whatever the
new group asks for; ``new_group(backend="nccl")`` under an eager nccl_core
default group then fails with a TypeError in ProcessGroupNCCL.Options.  These
tests stand a one-argument rule in for torch 2.11's.
"""

from __future__ import annotations

import inspect
import types

import pytest
import torch
from torch.distributed import distributed_c10d as c10d

from nccl_core_backend import _split_rule
from nccl_core_backend._split_rule import backend_name_for_device


@pytest.mark.parametrize("backend,device,name", [
    ("nccl_core", "cuda", "nccl_core"),
    ("NCCL", "cuda", "nccl"),
    ("cpu:gloo,cuda:nccl_core", "cuda", "nccl_core"),
    ("cpu:gloo,cuda:nccl_core", "cpu", "gloo"),
    ("cpu:gloo", "cuda", None),
    ("", "cuda", None),
    (None, "cuda", None),
])
def test_backend_name_for_device(backend, device, name):
    assert backend_name_for_device(backend, device) == name


def test_torchs_helper_still_takes_backend():
    # install() reads the argument by this name.
    assert "backend" in inspect.signature(c10d._new_process_group_helper).parameters


@pytest.fixture
def old_torch(monkeypatch):
    """c10d with torch 2.11's one-argument rule and a default group bound to
    cuda:0 whose backend is nccl_core."""
    source = object()
    class Group:  # hashable, as torch's ProcessGroup is
        bound_device_id = torch.device("cuda", 0)

    pg = Group()
    world = types.SimpleNamespace(pg_map={pg: ("cpu:gloo,cuda:nccl_core", None)})

    def get_split_source(group):  # torch 2.11: the default group's backend, always
        return source if group.bound_device_id is not None else None

    def new_process_group_helper(group_size, group_rank, global_ranks_in_group, backend, store,
                                 group_name, backend_options=None, timeout=None):
        return c10d._get_split_source(pg)  # what torch 2.11 asks here

    monkeypatch.setattr(c10d, "_world", world)
    monkeypatch.setattr(c10d, "_get_split_source", get_split_source)
    monkeypatch.setattr(c10d, "_new_process_group_helper", new_process_group_helper)
    assert _split_rule.install() is True
    assert _split_rule.install() is True  # idempotent: wrapped once
    return types.SimpleNamespace(pg=pg, source=source, world=world)


@pytest.mark.parametrize("requested,splits", [
    ("nccl_core", True),
    ("cpu:gloo,cuda:nccl_core", True),
    ("nccl", False),  # torch 2.11: TypeError in ProcessGroupNCCL.Options.split_from
    ("gloo", False),  # torch 2.11: non-members split, members never do
    ("cpu:gloo,cuda:nccl", False),
])
def test_old_torch_splits_only_for_the_parents_backend(old_torch, requested, splits):
    got = c10d._new_process_group_helper(2, 0, [0, 1], requested, None, "g")
    assert (got is old_torch.source) == splits
    got = c10d._new_process_group_helper(2, 0, [0, 1], backend=requested, store=None, group_name="g")
    assert (got is old_torch.source) == splits


def test_old_torch_callers_that_name_no_backend_get_torchs_answer(old_torch):
    assert c10d._get_split_source(old_torch.pg) is old_torch.source


def test_our_members_split_only_under_an_nccl_core_parent(old_torch):
    assert _split_rule.split_source(old_torch.pg, "nccl_core") is old_torch.source
    old_torch.world.pg_map[old_torch.pg] = ("nccl", None)
    assert _split_rule.split_source(old_torch.pg, "nccl_core") is None


def test_newer_torch_needs_no_shim():
    rule = getattr(c10d, "_get_split_source", None)
    if rule is None or len(inspect.signature(rule).parameters) < 2:
        pytest.skip(f"torch {torch.__version__} has the one-argument rule (the fixture covers it)")
    assert _split_rule.install() is False
