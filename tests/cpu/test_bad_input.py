"""Bad input: numbers and objects that used to wrap, truncate or be
copied silently are refused with a message naming the problem.  Everything
here is checked before any GPU is touched, so it runs on any machine (the
GPU side is tests/gpu/cases/bad_input.py)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d

import nccl_core_backend as nc
from nccl_core_backend import _C
from nccl_core_backend._scalars import premul_scalar

CUDA = torch.device("cuda")


# --- nc.torch.empty sizes (csrc/memory/allocator.cpp) ----------------------


@pytest.mark.parametrize(
    "sizes, words",
    [
        ([1 << 62, 8], "element count"),  # the element count wraps 64 bits
        ([1 << 40, 1 << 40], "element count"),  # past int64 (numel)
        ([1 << 62], "size in bytes"),  # 2**62 floats are 2**64 bytes: wraps to 0
    ],
)
def test_empty_refuses_sizes_that_wrap(sizes, words):
    with pytest.raises(nc.NcclInvalid, match=words):
        _C._empty(sizes, torch.float32, 0, False)


def test_empty_names_the_values():
    with pytest.raises(nc.NcclInvalid) as e:
        _C._empty([1 << 62], torch.float32, 0, False)
    assert str(1 << 62) in str(e.value) and "overflows" in str(e.value)


# --- integer PreMulSum factors (nccl_core_backend/_scalars.py) -------------


@pytest.mark.parametrize(
    "scalar, dtype, words",
    [
        (0.5, torch.int8, "not an integer"),  # used to truncate to 0
        (-1, torch.uint8, "does not fit"),  # used to become 255
        (256, torch.uint8, "does not fit"),
        (1 << 40, torch.int32, "does not fit"),
        (float("nan"), torch.int64, "not an integer"),
        (1.5, nc.NcclDataType.INT32, "not an integer"),
        (1, torch.bool, "torch.bool"),
    ],
)
def test_premul_integer_factor_must_be_exact(scalar, dtype, words):
    with pytest.raises(nc.NcclInvalid, match=words):
        premul_scalar(scalar, dtype, None, 0)


@pytest.mark.parametrize(
    "scalar, dtype, value",
    [(2.0, torch.int8, 2), (255, torch.uint8, 255), (-128, torch.int8, -128), (3, None, 3)],
)
def test_premul_integer_factor_in_range_is_kept(scalar, dtype, value):
    t = premul_scalar(scalar, dtype, None, 0)
    assert int(t[0]) == value


# --- ints range-checked before narrowing ------------------------------------


def test_gin_connection_type_is_range_checked_as_int64():
    # 2**32 used to become 0 (a valid NcclGinConnectionType) once cast to int.
    with pytest.raises(nc.NcclInvalid, match="gin_connection_type"):
        _C.NCCLDevCommRequirements(gin_connection_type=1 << 32)
    r = _C.NCCLDevCommRequirements()
    with pytest.raises(nc.NcclInvalid, match="gin_connection_type"):
        r.gin_connection_type = (1 << 32) + 1
    with pytest.raises(nc.NcclInvalid, match="64-bit"):
        r.gin_connection_type = 1 << 70


def test_error_string_code_is_range_checked():
    with pytest.raises(nc.NcclInvalid, match="nccl_result"):
        nc.get_error_string(1 << 32)  # used to read as 0, "no error"


# --- CUDA Array Interface objects (csrc/python/cai.cpp) ---------------------


class CAI:
    """A buffer that only speaks __cuda_array_interface__."""

    def __init__(self, **iface):
        base = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}
        base.update(iface)
        self.__cuda_array_interface__ = base


@pytest.mark.parametrize(
    "iface, words",
    [
        ({"shape": (1 << 62, 8)}, "element count"),  # wraps 64 bits
        ({"shape": (1 << 62,)}, "size in bytes"),  # 2**64 bytes
        ({"shape": (-1,)}, "dimension"),
        ({"shape": (1 << 64,)}, "dimension"),
        ({"shape": (2, 3), "strides": (4, 8)}, "contiguous"),  # Fortran order
        ({"typestr": "<i2"}, "no NCCL equivalent"),
        ({"typestr": ">f4"}, "big-endian"),
        ({"mask": object()}, "masked"),
        ({"data": "nope"}, "data"),
        ({"shape": (4,), "data": (0, False)}, "pointer is 0"),
    ],
)
def test_cai_buffers_are_checked_before_use(iface, words):
    with pytest.raises(nc.NcclInvalid, match=words):
        _C._resolve_tensor(CAI(**iface))


def test_cai_error_names_the_argument():
    with pytest.raises(nc.NcclInvalid, match="^tensor"):
        _C._resolve_tensor(CAI(typestr="<i2"))


def test_dlpack_failure_is_named_invalid():
    class Broken:
        def __dlpack__(self, *a, **k):
            raise BufferError("no export today")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(nc.NcclInvalid, match="DLPack"):
        _C._resolve_tensor(Broken())


# --- torch.distributed checks that run before any GPU work ------------------


@pytest.fixture
def group():
    """A lazily connected group of `world` ranks, this process rank 0 (the
    others never come: nothing here reaches NCCL)."""

    def init(world):
        dist.init_process_group("nccl_core", store=dist.HashStore(), rank=0, world_size=world)
        return dist.group.WORLD._get_backend(CUDA)

    yield init
    if dist.is_initialized():
        dist.destroy_process_group()


def test_all_to_all_split_sum_must_not_wrap(group):
    be = group(3)
    big = (1 << 63) - 1
    t = torch.empty(2)
    # [2**63-1, 2**63-1, 4] summed to 2 (= dim 0) before the sum was checked.
    with pytest.raises(ValueError, match="overflows"):
        be.alltoall_base(t, t, [2, 0, 0], [big, big, 4], dist.AllToAllOptions())
    with pytest.raises(ValueError, match="negative split size"):
        be.alltoall_base(t, t, [2, 0, 0], [3, -1, 0], dist.AllToAllOptions())


@pytest.mark.parametrize("which", ["gather", "scatter"])
def test_gather_scatter_root_checked_before_narrowing(group, which):
    be = group(2)
    t = torch.empty(4)
    if which == "gather":
        opts = dist.GatherOptions()
        opts.rootRank = 1 << 32  # used to become root 0
        call = lambda: be.gather([], [t], opts)  # noqa: E731
    else:
        opts = dist.ScatterOptions()
        opts.rootRank = 1 << 32
        call = lambda: be.scatter([t], [], opts)  # noqa: E731
    with pytest.raises(ValueError, match="root 4294967296 out of range"):
        call()


def test_all_gather_element_count_must_not_wrap(group):
    be = group(4)
    huge = torch.empty(1).expand(1 << 62)  # numel 2**62: x 4 ranks wraps int64
    with pytest.raises(ValueError, match="overflows"):
        be._allgather_base(torch.empty(4), huge, c10d.AllgatherOptions())


def test_reduce_scatter_element_count_must_not_wrap(group):
    be = group(4)
    huge = torch.empty(1).expand(1 << 62)
    with pytest.raises(ValueError, match="overflows"):
        be._reduce_scatter_base(huge, torch.empty(4), c10d.ReduceScatterOptions())


def test_shrink_refuses_duplicate_ranks(group):
    be = group(4)
    with pytest.raises(ValueError, match="listed twice"):
        be.shrink([2, 2], 0, None)
    with pytest.raises(ValueError, match="outside the group"):
        be.shrink([1 << 33], 0, None)


def test_empty_dimension_past_64_bits_is_named():
    # pybind11 would answer a TypeError about incompatible arguments.
    with pytest.raises(nc.NcclInvalid, match="does not fit a 64-bit int"):
        nc.torch.empty(1 << 64, device=0)
    with pytest.raises(nc.NcclInvalid, match="negative dimension"):
        nc.torch.empty(3, -1, device=0)
