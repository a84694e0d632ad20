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
