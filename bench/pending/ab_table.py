"""The table of measure-namesake.sh's runs: nccl_core's µs a call for each
(barrier, cap) configuration, the mean of its passes, beside `nccl` and torch's
symm_mem kernels measured in the same runs, and each configuration's ratio to
main's kernels (full barriers, 32 blocks).

    python3 bench/pending/ab_table.py WORLD DIR [DIR ...]

(the passes of one world size may come back from several device calls: give
each call's folder).
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from collections import defaultdict

CONFIGS = ("full-32", "namesake-32", "namesake-64", "full-64")
SIDES = ("nccl", "symm_one_shot", "symm_two_shot")


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def load(dirs: list[str], world: int) -> tuple[dict, dict, list[str]]:
    """({(config, bytes): [µs]}, {(side, bytes): [µs]}, problems)."""
    ours, sides, problems = defaultdict(list), defaultdict(list), []
    pattern = re.compile(rf"w{world}-(\w+-\d+)-(\d+)\.json$")
    paths = sorted(p for d in dirs for p in glob.glob(os.path.join(d, f"w{world}-*.json")))
    for path in paths:
        m = pattern.search(path)
        if not m or m.group(1) not in CONFIGS:
            continue
        with open(path) as f:
            rows = json.load(f).get("collectives", [])
        for row in rows:
            nbytes = row["bytes"]
            if not all(row.get("correct", {}).values()):
                problems.append(f"{os.path.basename(path)} {_size(nbytes)}: a result was wrong")
            ours[(m.group(1), nbytes)].append(row["nccl_core"]["us"])
            for side in SIDES:
                if isinstance(row.get(side), dict) and "us" in row[side]:
                    sides[(side, nbytes)].append(row[side]["us"])
    return ours, sides, problems


def table(ours: dict, sides: dict) -> str:
    sizes = sorted({b for _, b in ours})
    head = ["size", *CONFIGS, *SIDES, *(f"{c} / full-32" for c in CONFIGS[1:])]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for b in sizes:
        us = {c: _mean(ours.get((c, b), [])) for c in CONFIGS}
        other = {s: _mean(sides.get((s, b), [])) for s in SIDES}
        base = us["full-32"]
        cells = [_size(b)]
        cells += [f"{us[c]:.2f}" if us[c] is not None else "-" for c in CONFIGS]
        cells += [f"{other[s]:.2f}" if other[s] is not None else "-" for s in SIDES]
        cells += [f"{us[c] / base:.3f}" if us[c] is not None and base else "-" for c in CONFIGS[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print(__doc__)
        return 2
    world = int(argv[0])
    ours, sides, problems = load(argv[1:], world)
    if not ours:
        print(f"no runs of world {world} in {' '.join(argv[1:])}")
        return 1
    print(f"world {world}: nccl_core µs a call (graphs of 100 bf16 all_reduces), mean of passes")
    print(table(ours, sides))
    for p in problems:
        print("WRONG:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
