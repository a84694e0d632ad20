"""Data, references and checks shared by the GPU cases.

Every rank can rebuild every rank's inputs from the case seed, so references
are computed locally in float64 (int64 for integers) on the CPU.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from tests.gpu import nvml

R = dist.ReduceOp

# Failed checks are collected, not raised: a rank that stopped half-way
# through a case would leave its peers waiting in the next collective.  The
# harness fails the case if this list is non-empty when the case returns.
FAILURES: list[str] = []


def fail(msg: str) -> None:
    FAILURES.append(msg)


def device_used_bytes(device) -> int:
    """Device memory this process holds: NVML's count for this process where
    it gives one, else the GPU's used bytes.  Several test jobs share one GPU
    in the tiers of scripts/gpu-test.sh; the GPU's free memory moves with
    theirs, this process's count does not."""
    torch.cuda.synchronize(device)
    mine = _nvml_process_bytes(device)
    if mine is not None:
        return mine
    free, total = torch.cuda.mem_get_info(device)
    return total - free


def _nvml_process_bytes(device) -> int | None:
    """This process's bytes on `device`, matched by UUID (tests/gpu/nvml.py)."""
    try:
        uuid = str(torch.cuda.get_device_properties(torch.device(device).index or 0).uuid)
    except (AttributeError, RuntimeError):
        return None
    return nvml.process_bytes(uuid, os.getpid())


def address_mapped(ptr: int) -> bool:
    """Whether a device address lies in a mapped allocation (the driver's
    CU_POINTER_ATTRIBUTE_MAPPED): False once its memory went back to the driver."""
    import ctypes

    cu_pointer_attribute_mapped = 13  # cuda.h's CUpointer_attribute
    cuda = ctypes.CDLL("libcuda.so.1")
    value = ctypes.c_int(0)
    rc = cuda.cuPointerGetAttribute(ctypes.byref(value), cu_pointer_attribute_mapped,
                                    ctypes.c_uint64(ptr))
    return rc == 0 and value.value == 1


DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int8, torch.uint8, torch.int32, torch.int64, torch.uint32, torch.uint64,
    torch.bool, torch.float8_e4m3fn, torch.float8_e5m2,
]
FP8 = {torch.float8_e4m3fn, torch.float8_e5m2}
LOWP = {torch.float16, torch.bfloat16} | FP8
FLOATS = {torch.float32, torch.float64} | LOWP
PREMUL_OK = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
UNSIGNED = {torch.uint8, torch.uint32, torch.uint64}
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM", "PREMUL_SUM_DEV"]
N = 1031  # odd, not a multiple of anything NCCL likes


def op_valid(dtype, op) -> bool:
    """Whether backend nccl_core accepts `op` on `dtype` (else ValueError)."""
    if op.startswith("PREMUL"):
        return dtype in PREMUL_OK
    if dtype == torch.bool and op == "AVG":
        return False
    return True


def make(ctx, rank, dtype, n=N, op="SUM", salt=0) -> torch.Tensor:
    """Rank `rank`'s CPU input for this case: values every op keeps exact
    (small integers) except float32/64, which get real random floats."""
    g = ctx.gen(rank, salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype in (torch.float32, torch.float64):
        if op == "PRODUCT":
            return (torch.rand(n, generator=g, dtype=torch.float64) + 0.5).to(dtype)
        return torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    if dtype in FP8:
        lo, hi = (-1, 2)
        v = torch.randint(lo, hi, (n,), generator=g)
        if op == "PRODUCT":
            v = torch.where(v == 0, torch.ones_like(v), v)
        return v.to(torch.float32).to(dtype)
    if dtype in LOWP:
        v = torch.randint(-2, 3, (n,), generator=g) if op == "PRODUCT" else torch.randint(-8, 9, (n,), generator=g)
        return v.to(torch.float32).to(dtype)
    if dtype in UNSIGNED:
        v = torch.randint(0, 4, (n,), generator=g) if op == "PRODUCT" else torch.randint(0, 50, (n,), generator=g)
        return v.to(dtype)
    v = torch.randint(-2, 3, (n,), generator=g) if op == "PRODUCT" else torch.randint(-20, 21, (n,), generator=g)
    return v.to(dtype)


def wide(t: torch.Tensor) -> torch.Tensor:
    """float64 for floats, int64 for integers and bool."""
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return t.to(torch.complex128 if t.dtype.is_complex else torch.float64)
    return t.to(torch.int64)


def factor_for(ctx, dtype) -> float:
    g = ctx.gen(0, salt=99)
    return round(float(torch.rand(1, generator=g)) * 1.5 + 0.25, 3)


def reduce_ref(inputs: list[torch.Tensor], op: str, dtype, factor: float = 1.0) -> torch.Tensor:
    """Reference reduction of CPU inputs, in float64/int64."""
    xs = torch.stack([wide(x) for x in inputs])
    n = len(inputs)
    if dtype == torch.bool:
        if op in ("SUM", "MAX"):
            return xs.amax(0)
        return xs.amin(0)
    if op == "SUM":
        return xs.sum(0)
    if op == "PRODUCT":
        return xs.prod(0)
    if op == "MIN":
        return xs.amin(0) if not xs.is_complex() else None
    if op == "MAX":
        return xs.amax(0)
    if op == "AVG":
        s = xs.sum(0)
        if s.dtype == torch.int64:
            return torch.div(s, n, rounding_mode="trunc")
        return s / n
    if op.startswith("PREMUL"):
        # NCCL multiplies in the tensor's dtype, then sums.
        f = torch.tensor(factor, dtype=torch.float64).to(dtype).to(torch.float64)
        return sum(wide((wide(x) * f).to(dtype)) for x in inputs)
    raise ValueError(op)


def tolerance(dtype, op: str, world: int) -> tuple[float, float]:
    """(rtol, atol) for comparing a `dtype` result with a float64 reference."""
    if dtype == torch.float64:
        return 1e-12, 1e-12
    if dtype == torch.float32:
        return 1e-5, 1e-5 * world
    if op.startswith("PREMUL") and dtype in (torch.float16, torch.bfloat16):
        # Products up to ~16 are rounded to the dtype and summed in it:
        # each of the world-size roundings is worth an ulp at magnitude 32.
        ulp1 = 2 ** -7 if dtype == torch.bfloat16 else 2 ** -10
        return 2 * ulp1, world * 32 * ulp1
    return 0.0, 0.0  # integers and small-integer low-precision data are exact


def check(out: torch.Tensor, ref: torch.Tensor, dtype, op: str, world: int, what: str):
    """Compares every element of GPU `out` with `ref`."""
    got = wide(out.detach().cpu())
    ref = ref.reshape(got.shape).to(got.dtype)
    rtol, atol = tolerance(dtype, op, world)
    if rtol == 0 and atol == 0:
        bad = (got != ref).nonzero()
    else:
        bad = (~torch.isclose(got, ref, rtol=rtol, atol=atol)).nonzero()
    if bad.numel():
        i = tuple(bad[0].tolist())
        fail(
            f"{what} dtype={dtype} op={op}: {bad.shape[0]} of {got.numel()} elements wrong; "
            f"first at {i}: got {got[i].item()} expected {ref[i].item()}"
        )


def poison(shape, dtype, device) -> torch.Tensor:
    """An output buffer full of random bytes (NaNs included for floats)."""
    numel = 1
    for s in shape:
        numel *= s
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (max(nbytes, 1),), dtype=torch.uint8, device=device)[:nbytes]
    return raw.view(dtype).reshape(shape)


def reduce_op(op: str, ctx, dtype):
    """The torch ReduceOp for an op name (PREMUL_SUM host or device factor)."""
    if op == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(factor_for(ctx, dtype))
    if op == "PREMUL_SUM_DEV":
        f = torch.tensor([factor_for(ctx, dtype)], dtype=torch.float64, device=ctx.device)
        return dist._make_nccl_premul_sum(f.to(dtype if dtype in PREMUL_OK else torch.float32))
    return getattr(R, op)


def expect_raises(exc, fn, match: str | None = None):
    """Records a failure unless fn() raises `exc` (mentioning `match`)."""
    try:
        fn()
    except exc as e:
        if match and match.lower() not in str(e).lower():
            fail(f"expected {exc.__name__} mentioning {match!r}, got: {e}")
        return e
    except Exception as e:  # noqa: BLE001 - the wrong exception is a failure
        fail(f"expected {exc.__name__}, got {type(e).__name__}: {e}")
        return e
    fail(f"expected {exc.__name__}, nothing was raised")
    return None


def table_group(ctx, hidden: tuple[str, ...]):
    """A group of every rank on nccl_core with no options, made while the
    variables `hidden` (NCCL_CORE_* overrides a job may set) are unset, so
    that its paths are the path table's."""
    saved = {name: os.environ.pop(name) for name in hidden if name in os.environ}
    try:
        return dist.new_group(list(range(ctx.world)), backend="nccl_core")
    finally:
        os.environ.update(saved)


_PATH_VARIABLES = (
    ("fast_path_max_bytes", "NCCL_CORE_FAST_PATH_MAX_BYTES"),
    ("eager_fast_path_max_bytes", "NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"),
    ("push_min_bytes", "NCCL_CORE_PUSH_MIN_BYTES"),
    ("push_max_bytes", "NCCL_CORE_PUSH_MAX_BYTES"),
    ("two_shot_min_bytes", "NCCL_CORE_TWO_SHOT_MIN_BYTES"),
    ("one_way_max_bytes", "NCCL_CORE_ONE_WAY_MAX_BYTES"),
)


def env_paths(world: int) -> dict:
    """What a group of `world` ranks made with no options chooses under this
    job's NCCL_CORE_* path variables (nccl_core_backend.paths.for_world): the
    limits a case expects of a default group or of the default group's
    communicator, per mode, instead of assuming what one world size takes."""
    from nccl_core_backend import paths

    env = {key: int(os.environ[var]) for key, var in _PATH_VARIABLES if var in os.environ}
    return paths.for_world(world, **env)


def capture_all_reduces(x: torch.Tensor, group, stream, calls: int):
    """A CUDA graph of `calls` in-place SUM all_reduces of `x` on `group`,
    captured on `stream` once the device is idle."""
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize(x.device)
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                dist.all_reduce(x, group=group)
    return graph


def sanity(ctx, group=None):
    """A small all_reduce that must still work (the comm is healthy)."""
    t = torch.full((8,), float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(t, group=group)
    n = dist.get_world_size(group)
    ranks = dist.get_process_group_ranks(group) if group is not None else range(ctx.world)
    exp = float(sum(r + 1 for r in ranks))
    if not torch.all(t == exp):
        fail(f"sanity all_reduce: got {t.tolist()} expected {exp} (n={n})")


def skip_without_window(ctx) -> None:
    """Raises Skip where NCCL registered no window because the ranks are
    simulated hosts (socket transport: NCCL >= 2.30 answers no window,
    2.28 refuses); otherwise returns and the caller fails."""
    import nccl_core_backend as nc
    from nccl_core_backend import simhosts
    from tests.gpu.registry import Skip

    why = simhosts.nvlink_peers_missing()
    if ctx.world > 1 and why:
        raise Skip(f"NCCL {'.'.join(map(str, nc.nccl_version()))} registers no window here: {why}")


def window(comm, ctx, n, dtype=torch.float32, skip_if_missing=False):
    """An NCCL-memory buffer of `n` elements filled with -7, registered as a
    window on `comm`.  NCCL may answer no window: Skip, or a failure where an
    NVLink machine must give one."""
    import nccl_core_backend as nc
    from tests.gpu.registry import Skip

    buf = nc.torch.empty(n, dtype=dtype, device=ctx.device)
    buf.fill_(-7)
    torch.cuda.synchronize()
    win = comm.register_window(buf)
    if win is None:
        skip_without_window(ctx)
        if skip_if_missing:
            raise Skip("register_window returned None here")
        raise AssertionError("register_window returned None on an NVLink machine")
    return buf, win
