"""Which ``torch.distributed`` calls nccl_core runs as its own NVLink kernels.

A group whose ranks reach each other's memory (one NVLink domain) runs small
collectives as one kernel of nccl_core's (the fast path) and mid-sized
all_reduces by pushing into its peers' memory (the push); everything else,
and every group without NVLink between all ranks, goes to NCCL.  Which sizes
take which path depends on the world size, the operation, and whether the
call is captured into a CUDA graph (there a call costs its kernel alone; an
eager call also costs its host time, and there the fast path measured
12.3 µs a call against NCCL's 8.5, 5.2 µs of it launching our kernel): it
comes from one table measured against backend ``nccl``
(``csrc/nvlink/path_table.cpp``), each row saying what run set it.  A
group's options override the table for every operation, in both modes:
``nccl_core_backend.Options.fast_path_max_bytes``
(``eager_fast_path_max_bytes`` for eager calls alone),
``push_min_bytes``, ``push_max_bytes``, ``two_shot_min_bytes``,
``one_way_max_bytes`` (or ``NCCL_CORE_FAST_PATH_MAX_BYTES``,
``NCCL_CORE_PUSH_MIN_BYTES``, ``NCCL_CORE_PUSH_MAX_BYTES``,
``NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES``, ``NCCL_CORE_TWO_SHOT_MIN_BYTES``,
``NCCL_CORE_ONE_WAY_MAX_BYTES``).

    python -m nccl_core_backend.paths          # the table, as text
"""

from __future__ import annotations

import sys

OPS = ("all_reduce", "reduce_scatter_tensor", "all_gather_into_tensor", "broadcast",
       "all_to_all_single")


def table() -> list[dict]:
    """Rows of the table: ``min_world``, ``max_world``, ``fast_max_bytes`` (per
    operation, the largest input the fast path takes in a captured call; 0:
    none), ``eager_fast_max_bytes`` (the same for eager calls),
    ``push_min_bytes``/``push_max_bytes`` (all_reduce, captured calls; max 0:
    no push), ``eager_push_min_bytes`` (the push's minimum for eager calls),
    ``two_shot_min_bytes`` (a fast-path all_reduce of this size or more takes
    two shots; 0: never), ``one_way_max_bytes`` (fast-path calls that send each
    peer at most this many bytes take the one-way kernels, no barrier; 0:
    never) and ``measured``."""
    from nccl_core_backend import _C

    return _C._path_table()


def for_world(world: int, fast_path_max_bytes: int | None = None,
              push_min_bytes: int | None = None, push_max_bytes: int | None = None,
              eager_fast_path_max_bytes: int | None = None,
              two_shot_min_bytes: int | None = None,
              one_way_max_bytes: int | None = None) -> dict:
    """What a group of ``world`` ranks chooses, given these options (None: the
    table's).  ValueError for a world below 1."""
    from nccl_core_backend import _C

    return _C._paths_for(world, fast_path_max_bytes, push_min_bytes, push_max_bytes,
                         eager_fast_path_max_bytes, two_shot_min_bytes, one_way_max_bytes)


def path_of(op: str, input_bytes: int, world: int, graph: bool = False, **options) -> str:
    """``"fast"``, ``"push"`` or ``"nccl"``: where a call of ``op`` whose input
    is ``input_bytes`` on each rank goes in a group of ``world`` ranks that all
    reach each other over NVLink (elsewhere every call goes to NCCL), eager or
    (``graph``) captured into a CUDA graph.  The push also needs whole 16-byte
    packs and a type and operator it covers."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    choice = for_world(world, **options)
    limits = choice["fast_max_bytes" if graph else "eager_fast_max_bytes"]
    if 0 < input_bytes <= limits[op]:
        return "fast"
    push_min = choice["push_min_bytes" if graph else "eager_push_min_bytes"]
    if (op == "all_reduce" and choice["push_max_bytes"] > 0
            and push_min <= input_bytes <= choice["push_max_bytes"]):
        return "push"
    return "nccl"


def _bytes(n: int) -> str:
    from nccl_core_backend.bench.sizes import format_bytes

    return format_bytes(n) if n else "-"


def _limits(per_op: dict) -> str:
    if not any(per_op.values()):
        return "off"
    if len(set(per_op.values())) == 1:
        return f"{_bytes(next(iter(per_op.values())))}, every op"
    return ", ".join(f"{op} {_bytes(b)}" for op, b in per_op.items())


def render() -> str:
    """The table as markdown."""
    lines = ["| ranks | fast path up to (input bytes per rank): captured | eager | push all_reduce "
             "| two shots from | one way up to (bytes to each peer) | measured |",
             "|---|---|---|---|---|---|---|"]
    for row in table():
        hi = row["max_world"]
        ranks = str(row["min_world"]) if hi == row["min_world"] else \
            f"{row['min_world']}+" if hi > 1 << 20 else f"{row['min_world']}-{hi}"
        fast_text, eager_text = _limits(row["fast_max_bytes"]), _limits(row["eager_fast_max_bytes"])
        push_min = _bytes(row["push_min_bytes"])
        if row["eager_push_min_bytes"] != row["push_min_bytes"]:
            push_min += f" (eager {_bytes(row['eager_push_min_bytes'])})"
        push = f"{push_min} - {_bytes(row['push_max_bytes'])}" if row["push_max_bytes"] else "off"
        two_shot = _bytes(row["two_shot_min_bytes"]) if row["two_shot_min_bytes"] else "never"
        one_way = _bytes(row["one_way_max_bytes"]) if row["one_way_max_bytes"] else "never"
        lines.append(f"| {ranks} | {fast_text} | {eager_text} | {push} | {two_shot} "
                     f"| {one_way} | {row['measured']} |")
    return "\n".join(lines)


def main() -> int:
    print(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
