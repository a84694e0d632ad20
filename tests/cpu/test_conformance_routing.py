"""The conformance runner's routing (tests/conformance/routing.py) and the
unwrapping of torch's debug wrapper (nccl_core_backend._registration.unwrap)."""

from __future__ import annotations

from tests.conformance.routing import as_nccl_core


def test_nccl_becomes_nccl_core_and_nothing_else_changes():
    assert as_nccl_core("nccl") == "nccl_core"
    assert as_nccl_core("NCCL") == "nccl_core"
    assert as_nccl_core("cpu:gloo,cuda:nccl") == "cpu:gloo,cuda:nccl_core"
    assert as_nccl_core("undefined") == "cpu:gloo,cuda:nccl_core"
    for same in ("gloo", "nccl_core", "cuda:nccl_core", "cpu:gloo,cuda:nccl_core"):
        assert as_nccl_core(same) == same
    assert as_nccl_core(None) is None


def test_unwrap_peels_every_debug_wrapper():
    from nccl_core_backend._registration import unwrap

    class _ProcessGroupWrapper:  # the name torch's wrapper has
        def __init__(self, inner):
            self.wrapped_pg = inner

    inner = object()
    assert unwrap(_ProcessGroupWrapper(_ProcessGroupWrapper(inner))) is inner
    assert unwrap(inner) is inner


class _Group:
    """Stands for a ProcessGroup: _get_backend answers one CUDA backend."""

    def __init__(self, backend):
        self.backend = backend

    def _get_backend(self, device):
        if self.backend is None:
            raise RuntimeError("No backend type associated with device type cuda")
        return self.backend


class ProcessGroupNcclCore:  # the name nccl_core's binding has
    pass


class ProcessGroupNCCL:  # torch's own
    pass


def test_routed_group_with_nccl_core_backend_passes():
    from tests.conformance.routing import check_routed

    check_routed(_Group(ProcessGroupNcclCore()), "nccl")
    check_routed(_Group(ProcessGroupNcclCore()), "undefined")
    check_routed(_Group(None), "nccl")  # no CUDA backend made here: nothing to check
    check_routed(_Group(ProcessGroupNCCL()), "gloo")  # not routed: not checked


def test_routed_group_that_fell_back_to_torchs_backend_fails():
    import pytest

    from tests.conformance.routing import check_routed

    with pytest.raises(RuntimeError, match="got ProcessGroupNCCL, not nccl_core"):
        check_routed(_Group(ProcessGroupNCCL()), "cpu:gloo,cuda:nccl")


def test_debug_wrapper_is_looked_through():
    from tests.conformance.routing import check_routed

    class _ProcessGroupWrapper:
        def __init__(self, inner):
            self.wrapped_pg = inner

    check_routed(_Group(_ProcessGroupWrapper(ProcessGroupNcclCore())), "nccl")


def test_ranks_outside_a_new_group_are_not_checked(monkeypatch):
    # torch 2.11 hands non-members GroupMember.NON_GROUP_MEMBER, an int
    # (test_ddp_device_mesh_initialization failed on it, 2xH200).
    from torch.distributed import distributed_c10d as c10d

    from tests.conformance import routing

    asked = []

    def helper(group_size, group_rank, global_ranks_in_group, backend, *args, **kwargs):
        asked.append(backend)
        return c10d.GroupMember.NON_GROUP_MEMBER, None

    monkeypatch.setattr(c10d, "_new_process_group_helper", helper)
    routing.install()
    out = c10d._new_process_group_helper(2, 0, [1], "nccl", None, "g")
    assert out == (c10d.GroupMember.NON_GROUP_MEMBER, None)
    assert asked == ["nccl_core"]
