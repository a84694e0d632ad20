"""torch's SymmetricMemory all-reduce kernels as an anchor (``--anchor symm_mem``).

A tensor-parallel user after speed can move tensors into symmetric buffers
and call ``torch.ops.symm_mem.one_shot_all_reduce`` or
``two_shot_all_reduce_`` (no multicast).  With ``--anchor symm_mem`` the
all_reduce rows (eager and graph) also time those two kernels, in the same
rounds as both backends, on buffers of ``symm_mem.empty`` (the backends keep
their own plain or NCCL buffers), and check every element of their results.
Where the installed torch, the dtype, the world size or a size rules a kernel
out, the report says so in one line instead of a row.
"""

from __future__ import annotations

import os

import torch

from nccl_core_backend.bench.data import Pattern, fill, matches

NAME = "symm_mem"
ONE_SHOT, TWO_SHOT = "symm_one_shot", "symm_two_shot"
KINDS = (ONE_SHOT, TWO_SHOT)
LABELS = {ONE_SHOT: "symm one-shot", TWO_SHOT: "symm two-shot"}
_OPS = {ONE_SHOT: "one_shot_all_reduce_out", TWO_SHOT: "two_shot_all_reduce_"}
DTYPES = (torch.float32, torch.bfloat16)  # what torch's kernels dispatch on
TWO_SHOT_WORLDS = (2, 4, 8)  # torch's two-shot kernel has no other world sizes
ALIGN = 16  # bytes: torch's kernels take 16-byte multiples in their fastest form


def _symm_mem():
    import torch.distributed._symmetric_memory as symm_mem

    return symm_mem


def _op(kind: str):
    return getattr(torch.ops.symm_mem, _OPS[kind])


def why_not(dtype: torch.dtype, world: int) -> str | None:
    """None when torch's kernels can run in this job, else why not (one line)."""
    try:
        symm_mem = _symm_mem()
    except ImportError:
        return f"torch {torch.__version__} has no torch.distributed._symmetric_memory"
    missing = [name for name in ("empty", "rendezvous") if not hasattr(symm_mem, name)]
    for kind in KINDS:
        try:
            _op(kind)
        except (AttributeError, RuntimeError):
            missing.append(f"torch.ops.symm_mem.{_OPS[kind]}")
    if missing:
        return f"torch {torch.__version__} has no {', '.join(missing)}"
    if dtype not in DTYPES:
        return (f"torch's one-shot and two-shot all-reduce take float32 and bfloat16, "
                f"not {str(dtype).replace('torch.', '')}")
    if world < 2:
        return "one rank: nothing to reduce across"
    return None


def kinds_for(nbytes: int, world: int, max_bytes: int) -> list[str]:
    """The anchor kernels of an all_reduce row of `nbytes` (the same on every rank)."""
    if nbytes > max_bytes or nbytes % ALIGN:
        return []
    return [k for k in KINDS if k != TWO_SHOT or world in TWO_SHOT_WORLDS]


def notes(world: int, max_bytes: int) -> list[str]:
    """What the report says of the rows the anchor leaves out."""
    from nccl_core_backend.bench.sizes import format_bytes

    out = [f"anchor rows for all_reduce sizes up to {format_bytes(max_bytes)} "
           f"(--anchor-max-bytes) that are multiples of {ALIGN} bytes"]
    if world not in TWO_SHOT_WORLDS:
        out.append(f"no two-shot rows: torch's two-shot kernel runs at world sizes "
                   f"{', '.join(map(str, TWO_SHOT_WORLDS))}, not {world}")
    return out


class Anchor:
    """The kernels' group (the job's backend-nccl group, as a torch user's
    would be) and their sizes."""

    def __init__(self, job, dtype: torch.dtype, max_bytes: int):
        from nccl_core_backend.bench.job import NCCL

        # Multicast objects can take a shared host's GPUs out of service.
        os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        self.world, self.rank, self.device = job.world, job.rank, job.device
        self.dtype, self.max_bytes = dtype, max_bytes
        self.group_name = job.groups[NCCL].group_name
        symm_mem = _symm_mem()
        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            symm_mem.enable_symm_mem_for_group(self.group_name)

    def kinds(self, nbytes: int) -> list[str]:
        return kinds_for(nbytes, self.world, self.max_bytes)

    def case(self, kind: str, n: int) -> "AnchorCase":
        return AnchorCase(kind, n, self)

    def graph_case(self, kind: str, n: int, count: int) -> "AnchorGraphCase":
        return AnchorGraphCase(kind, n, count, self)


class AnchorCase:
    """One kernel on `n` elements of a symmetric buffer of its own."""

    def __init__(self, kind: str, n: int, anchor: Anchor):
        symm_mem = _symm_mem()
        self.kind, self.anchor, self.op = kind, anchor, _op(kind)
        self.buf = symm_mem.empty(n, dtype=anchor.dtype, device=anchor.device)
        symm_mem.rendezvous(self.buf, anchor.group_name)
        # One-shot reads the peers' inputs into an output of its own; two-shot
        # reduces in place.
        self.out = torch.empty_like(self.buf) if kind == ONE_SHOT else self.buf

    def call(self) -> None:
        if self.kind == ONE_SHOT:
            self.op(self.buf, "sum", self.anchor.group_name, self.out)
        else:
            self.op(self.buf, "sum", self.anchor.group_name)

    def fill(self, pat: Pattern, shift: int) -> None:
        fill(self.buf, lambda i: (i + shift) % pat.k + pat.offset(self.anchor.rank))

    def matches(self, pat: Pattern, shift: int) -> bool:
        w, total = self.anchor.world, pat.offsets_sum()
        return matches(self.out, lambda i: w * ((i + shift) % pat.k) + total)

    def check(self, pat: Pattern, shift: int) -> bool:
        """One call on fresh exact data; every element compared."""
        self.fill(pat, shift)
        self.call()
        torch.cuda.synchronize(self.anchor.device)
        return self.matches(pat, shift)


class AnchorGraphCase:
    """`count` calls of one kernel, each on a buffer of its own, captured in
    one CUDA graph (as the backends' graph rows are)."""

    def __init__(self, kind: str, n: int, count: int, anchor: Anchor):
        self.anchor = anchor
        self.cases = [AnchorCase(kind, n, anchor) for _ in range(count)]
        side = torch.cuda.Stream(device=anchor.device)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # once eagerly before the capture, as torch asks
            for c in self.cases:
                c.call()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize(anchor.device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for c in self.cases:
                c.call()
        torch.cuda.synchronize(anchor.device)

    def call(self) -> None:
        self.graph.replay()

    def check(self, pat: Pattern, shift: int) -> bool:
        """One replay on fresh data in every buffer (shifted per buffer)."""
        for j, c in enumerate(self.cases):
            c.fill(pat, shift + j)
        self.graph.replay()
        torch.cuda.synchronize(self.anchor.device)
        return all(c.matches(pat, shift + j) for j, c in enumerate(self.cases))
