"""The extension's NCCL queries, split colors and the errors module."""

from __future__ import annotations

import ctypes
import inspect
import itertools
import os
import random
import subprocess
import sys

import pytest
import torch

import nccl_core_backend
from nccl_core_backend import _C
from nccl_core_backend._registration import split_color
from nccl_core_backend.errors import NcclError, NcclInvalid, NcclUnsupported


def test_nccl_version_is_new_enough():
    v = nccl_core_backend.nccl_version()
    assert isinstance(v, tuple) and len(v) == 3
    assert all(isinstance(x, int) for x in v)
    assert v >= (2, 28, 0)


def test_nccl_version_matches_the_code():
    code = _C.nccl_version()
    major, minor, patch = nccl_core_backend.nccl_version()
    assert code == major * 10000 + minor * 100 + patch


def _process_nccl_version() -> int:
    # ncclGetVersion of the libnccl.so.2 the process already has under that
    # soname: the one torch's own NCCL calls were bound to when libtorch_cuda
    # loaded (a preloaded release wins).  torch.cuda.nccl.version() reports the
    # headers torch was compiled with, not the library that is loaded.
    lib = ctypes.CDLL("libnccl.so.2", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    v = ctypes.c_int(0)
    assert lib.ncclGetVersion(ctypes.byref(v)) == 0
    return v.value


def test_one_nccl_per_process():
    # The extension links the soname torch loaded: both see the same library.
    assert _C.nccl_version() == _process_nccl_version()


def test_built_against_supported_headers():
    assert _C.build_nccl_version() >= 22800


def _expected_nccl() -> int | None:
    # scripts/build-matrix.sh names the release it built against and preloaded.
    v = os.environ.get("NCCL_CORE_EXPECT_NCCL")
    if not v:
        return None
    major, minor, patch = (int(x) for x in v.split("."))
    return major * 10000 + minor * 100 + patch


@pytest.mark.skipif(_expected_nccl() is None, reason="NCCL_CORE_EXPECT_NCCL not set "
                    "(scripts/build-matrix.sh sets it)")
def test_loaded_and_built_nccl_are_the_expected_release():
    code = _expected_nccl()
    assert _C.nccl_version() == code
    assert _C.build_nccl_version() == code
    assert _process_nccl_version() == code


@pytest.mark.parametrize("name", ["ncclAllReduce", "ncclCommSplit", "ncclCommWindowRegister"])
def test_has_symbol_finds_exported_apis(name):
    assert _C.has_symbol(name) is True


@pytest.mark.parametrize("name", ["ncclNoSuchFunction", "", "cudaMalloc_not_nccl"])
def test_has_symbol_rejects_unknown(name):
    assert _C.has_symbol(name) is False


# --- split_color --------------------------------------------------------------


def test_host_profile_lists_every_phase_and_resets():
    # Nothing runs collectives here: every phase reads zero calls, and turning
    # the profile on and off leaves it readable.
    prof = _C._host_profile(enable=True, reset=True)
    assert list(prof) == ["setup", "work", "guard", "enqueue", "epilogue", "record", "watch",
                          "wait", "(enqueue: fast-path checks)", "(enqueue: kernel launch)",
                          "(enqueue: ordering event)", "raw: arguments", "raw: checks and guards",
                          "raw: engine call", "raw: the operation"]
    assert all(calls == 0 and us == 0.0 for calls, us in prof.values())
    assert _C._host_profile(enable=False, reset=True) == prof


RAW_SIGNATURES = {
    "allreduce": "sendbuf, recvbuf, op, *, stream=None, config=None",
    "reduce": "sendbuf, recvbuf, op, root=None, *, stream=None, config=None",
    "broadcast": "sendbuf, recvbuf, root, *, stream=None, config=None",
    "allgather": "sendbuf, recvbuf, *, stream=None, config=None",
    "gather": "sendbuf, recvbuf, root=None, *, stream=None, config=None",
    "reduce_scatter": "sendbuf, recvbuf, op, *, stream=None, config=None",
    "alltoall": "sendbuf, recvbuf, *, stream=None, config=None",
    "scatter": "sendbuf, recvbuf, root, *, stream=None, config=None",
    "send": "sendbuf, peer, *, stream=None",
    "recv": "recvbuf, peer, *, stream=None",
    "put_signal": "local_buffer, peer, peer_window, peer_window_offset=0, signal_index=0, "
                  "context=0, flags=0, *, stream=None",
    "signal": "peer, signal_index=0, context=0, flags=0, *, stream=None",
    "wait_signal": "descs, *, stream=None",
}


@pytest.mark.parametrize("name", sorted(RAW_SIGNATURES))
def test_raw_operations_are_vectorcall_methods_with_signatures(name):
    # Bound through csrc/python/fastcall.h: inspect reads their parameters,
    # which follow nccl.core's, and each has a docstring.
    method = getattr(nccl_core_backend.Communicator, name)
    assert str(inspect.signature(method)) == f"(self, /, {RAW_SIGNATURES[name]})"
    assert type(method).__name__ == "method_descriptor"
    assert len(method.__doc__ or "") > 10


def test_raw_operation_checks_its_receiver():
    with pytest.raises(TypeError, match="Communicator"):
        nccl_core_backend.Communicator.allreduce(object(), None, None, 0)


def test_split_color_is_order_independent():
    assert split_color([0, 2, 5]) == split_color([5, 0, 2]) == split_color((2, 5, 0))


def test_split_color_accepts_int_like_ranks():
    assert split_color(torch.tensor([3, 1])) == split_color([1, 3])


def test_split_color_is_non_negative_31_bit():
    rng = random.Random(1234)
    for _ in range(2000):
        ranks = rng.sample(range(4096), rng.randint(1, 64))
        c = split_color(ranks)
        assert isinstance(c, int) and 0 <= c < 2**31


def test_split_color_separates_groups():
    groups = [c for n in (1, 2, 3) for c in itertools.combinations(range(8), n)]
    colors = {split_color(g) for g in groups}
    assert len(colors) == len(groups)


def test_split_color_is_stable_across_processes():
    # Every rank computes the color on its own: it must not depend on
    # per-process state such as hash randomisation.
    groups = [[0, 1], [3, 2, 7], list(range(64))]
    code = (
        "from nccl_core_backend._registration import split_color\n"
        f"print([split_color(g) for g in {groups!r}])"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        ).stdout.strip()
        for seed in (1, 2)
    }
    assert outs == {str([split_color(g) for g in groups])}


# --- errors -------------------------------------------------------------------


def test_error_hierarchy():
    assert issubclass(NcclError, RuntimeError)
    assert issubclass(NcclInvalid, NcclError) and issubclass(NcclInvalid, ValueError)
    assert issubclass(NcclUnsupported, NcclError)
    assert not issubclass(NcclUnsupported, ValueError)
    assert nccl_core_backend.NcclError is NcclError


def test_error_result_attribute():
    e = NcclError("boom", 5)
    assert e.result == 5 and str(e) == "boom"
    assert NcclError("no code").result is None
    assert NcclUnsupported("old", 5).result == 5


def test_invalid_is_caught_as_value_error():
    with pytest.raises(ValueError) as info:
        raise NcclInvalid("bad count", 4)
    assert isinstance(info.value, NcclError)
    assert info.value.result == 4
