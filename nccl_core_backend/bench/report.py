"""The bench's results as markdown tables and as JSON.

JSON layout (``--json``): ``{"meta": {...}, "collectives": [row, ...],
"workloads": [row, ...]}``.  A collectives row holds ``op``, ``bytes``,
``dtype``, ``iters``, one timing per backend (``nccl_core``, ``nccl``: median
``us`` per call, ``p10_us``, ``p90_us``, ``samples``, ``algbw`` and ``busbw``
in GB/s), ``ratio`` (nccl_core us / nccl us), ``path`` (where nccl_core ran
the row's calls: ``fast``, ``push`` or ``nccl``; nccl_core_backend.paths) and
``correct`` (backend -> bool, every rank's check passed).  A workload row holds ``workload``,
``label``, ``config``, the two timings (``us`` per step), ``ratio``,
``correct``, ``check`` and, where a step without communication was timed,
``baseline``, ``comm_us`` (per backend) and ``comm_ratio``.  A tooling row
(``--tooling``) holds ``setting``, ``bytes``, ``iters``, ``rounds``, the two
timings (``us`` per all_reduce until the GPU finished, ``host_us`` until the
last call returned), ``ratio``, ``host_ratio`` and ``correct``;
``meta.tooling_left_out`` names each setting left out and why.  With
``--anchor symm_mem``, all_reduce rows also hold ``symm_one_shot`` and
``symm_two_shot`` timings, ``anchor_ratio`` (nccl_core us / each) and their
``correct`` flags; ``meta.anchor`` says whether the anchor ran and, if not, why.
With ``--host-phases``, eager rows hold ``host_phases``: nccl_core's host µs
per call by phase (csrc/util/host_profile.h).  With ``--kernel-times``, rows
hold ``kernel_times``: {kind: {"gpu_us", "kernels": {name: µs}}} per call
(kernel_times.py).
"""

from __future__ import annotations

import json

from nccl_core_backend.bench.collectives import GRAPH_SUFFIX, base_op
from nccl_core_backend.bench.job import CORE, NCCL
from nccl_core_backend.bench.sizes import format_bytes


def correct_cell(correct: dict) -> str:
    """``yes`` when every backend's check passed on every rank, else which failed."""
    wrong = [name for name, ok in correct.items() if not ok]
    return "yes" if not wrong else "WRONG: " + ", ".join(wrong)


def _us(v: float) -> str:
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def _ratio(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def op_label(row: dict) -> str:
    if row["op"].endswith(GRAPH_SUFFIX):
        return f"{base_op(row['op'])}, graph of {row.get('count', '?')}"
    return row["op"]


def collectives_table(rows: list[dict]) -> str:
    """Markdown: one line per (op, size); times in µs per call."""
    lines = ["| op | size | nccl_core µs | nccl µs | ratio | path | nccl_core busbw GB/s | "
             "nccl busbw GB/s | correct |",
             "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        c, n = r[CORE], r[NCCL]
        lines.append(f"| {op_label(r)} | {format_bytes(r['bytes'])} | {_us(c['us'])} | {_us(n['us'])} | "
                     f"{_ratio(r['ratio'])} | {r.get('path', '-')} | {c['busbw']:.2f} | "
                     f"{n['busbw']:.2f} | {correct_cell(r['correct'])} |")
    return "\n".join(lines)


def anchor_lines(meta: dict) -> list[str]:
    """What the anchor did: its notes, or the one line saying why it did not run."""
    a = meta.get("anchor")
    if not a:
        return []
    if not a["ran"]:
        return [f"anchor {a['name']}: not run: {a['why']}"]
    return [f"anchor {a['name']}: torch's one_shot_all_reduce and two_shot_all_reduce_ on "
            f"symm_mem.empty buffers (multicast off); " + "; ".join(a.get("notes", []))]


def anchor_table(rows: list[dict]) -> str:
    """Markdown: the rows that timed torch's SymmetricMemory kernels too."""
    from nccl_core_backend.bench.anchor import KINDS, LABELS

    lines = ["| op | size | nccl_core µs | nccl µs | " + " | ".join(f"{LABELS[k]} µs" for k in KINDS)
             + " | " + " | ".join(f"nccl_core / {LABELS[k]}" for k in KINDS) + " | correct |",
             "|---|---:|---:|---:|" + "---:|" * (2 * len(KINDS)) + "---|"]
    for r in rows:
        if "anchor_ratio" not in r:
            continue
        times = " | ".join(_us(r[k]["us"]) if k in r else "-" for k in KINDS)
        ratios = " | ".join(_ratio(r["anchor_ratio"].get(k)) for k in KINDS)
        lines.append(f"| {op_label(r)} | {format_bytes(r['bytes'])} | {_us(r[CORE]['us'])} | "
                     f"{_us(r[NCCL]['us'])} | {times} | {ratios} | {correct_cell(r['correct'])} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def host_phases_table(rows: list[dict]) -> str:
    """Markdown: nccl_core's host µs per call by phase (--host-phases), the
    phases in call order as the rows name them; '' when no row has them."""
    rows = [r for r in rows if r.get("host_phases")]
    if not rows:
        return ""
    names: list[str] = []
    for r in rows:
        names += [n for n in r["host_phases"] if n not in names]
    lines = ["| op | size | nccl_core µs | " + " | ".join(names) + " |",
             "|---|---:|---:|" + "---:|" * len(names)]
    for r in rows:
        cells = " | ".join(_us(r["host_phases"][n]) if n in r["host_phases"] else "-" for n in names)
        lines.append(f"| {op_label(r)} | {format_bytes(r['bytes'])} | {_us(r[CORE]['us'])} | {cells} |")
    return "\n".join(lines)


def kernel_times_table(rows: list[dict], width: int = 48) -> str:
    """Markdown: each kind's GPU µs per call beside its sample (--kernel-times),
    with what ran by name (cut to `width` characters; whole in the JSON);
    '' when no row has them."""
    rows = [r for r in rows if r.get("kernel_times")]
    if not rows:
        return ""
    lines = ["| op | size | kind | sample µs | GPU µs | what ran (GPU µs per call) |",
             "|---|---|---|---:|---:|---|"]
    for r in rows:
        for kind, t in r["kernel_times"].items():
            sample = r[kind]["us"] if kind in r else None
            ran = "; ".join(f"{name[:width]} {_us(us)}" for name, us in
                            sorted(t["kernels"].items(), key=lambda kv: -kv[1]))
            lines.append(f"| {op_label(r)} | {format_bytes(r['bytes'])} | {kind} | "
                         f"{_us(sample) if sample is not None else '-'} | {_us(t['gpu_us'])} | "
                         f"{ran or '-'} |")
    return "\n".join(lines)


def workloads_table(rows: list[dict]) -> str:
    """Markdown: one line per workload configuration; steps in ms, communication in µs."""
    lines = ["| workload | config | nccl_core ms | nccl ms | ratio | comm-only nccl_core µs | "
             "comm-only nccl µs | comm ratio | correct |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        comm = r.get("comm_us")
        cc, cn = (_us(comm[CORE]), _us(comm[NCCL])) if comm else ("-", "-")
        lines.append(f"| {r['workload']} | {r['label']} | {r[CORE]['us'] / 1e3:.3f} | "
                     f"{r[NCCL]['us'] / 1e3:.3f} | {_ratio(r['ratio'])} | {cc} | {cn} | "
                     f"{_ratio(r.get('comm_ratio'))} | {correct_cell(r['correct'])} |")
    return "\n".join(lines)


def tooling_table(rows: list[dict]) -> str:
    """Markdown: one line per (setting, size); µs per all_reduce."""
    lines = ["| setting | size | nccl_core µs | nccl µs | ratio | nccl_core host µs | "
             "nccl host µs | host ratio | correct |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        c, n = r[CORE], r[NCCL]
        lines.append(f"| {r['setting']} | {format_bytes(r['bytes'])} | {_us(c['us'])} | "
                     f"{_us(n['us'])} | {_ratio(r['ratio'])} | {_us(c['host_us'])} | "
                     f"{_us(n['host_us'])} | {_ratio(r['host_ratio'])} | "
                     f"{correct_cell(r['correct'])} |")
    return "\n".join(lines)


def _streams(meta: dict) -> str:
    """Which backends ran on high-priority streams (--high-priority), where any."""
    high = meta.get("high_priority_streams") or []
    return f" high-priority streams: {', '.join(high)}" if high else ""


def header(meta: dict) -> str:
    return (f"nccl_core vs nccl: world={meta['world']} gpu={meta.get('gpu', '?')} "
            f"torch={meta.get('torch', '?')} nccl={meta.get('nccl', '?')} "
            f"dtype={meta.get('dtype', '?')} memory={meta.get('memory', 'plain')}"
            f"{_streams(meta)}\n"
            "time: median per call (per step for workloads); ratio = nccl_core / nccl, "
            "below 1.00 nccl_core is faster")


def render(result: dict) -> str:
    """The whole report as text (markdown tables under a header)."""
    parts = [header(result["meta"])]
    parts += anchor_lines(result["meta"])
    if result.get("collectives"):
        parts += ["", collectives_table(result["collectives"])]
        anchored = anchor_table(result["collectives"])
        if anchored:
            parts += ["", anchored]
        phases = host_phases_table(result["collectives"])
        if phases:
            parts += ["", "nccl_core's host µs per call, by phase (--host-phases; the "
                      "(enqueue: ...) phases are parts of enqueue):", phases]
        gpu = kernel_times_table(result["collectives"])
        if gpu:
            parts += ["", "GPU µs per call of what each kind ran (--kernel-times; the "
                      "sample adds any wait for the host):", gpu]
    if result.get("workloads"):
        parts += ["", workloads_table(result["workloads"])]
    if result.get("tooling"):
        parts += ["", tooling_table(result["tooling"])]
        parts += [f"left out: {setting}: {why}"
                  for setting, why in result["meta"].get("tooling_left_out", {}).items()]
    if result.get("footprint"):
        from nccl_core_backend.bench.footprint import footprint_table

        parts += ["", footprint_table(result["footprint"])]
    slow = slower_rows(result)
    if slow:
        parts += ["", f"SLOWER THAN nccl BY MORE THAN {SLOWER_MARGIN:.0%}: " + "; ".join(slow)]
    unsteady = unsteady_rows(result)
    if unsteady:
        parts += ["", f"UNSTEADY (nccl_core's p90 at least {UNSTEADY_SPREAD:g}x its p10: "
                  "some rounds stalled): " + "; ".join(unsteady)]
    wrong = wrong_results(result)
    if wrong:
        parts += ["", "WRONG RESULTS: " + "; ".join(wrong)]
    return "\n".join(parts)


# nccl_core may be this much slower than nccl on a row before the report
# names it (the run-to-run spread of a median).
SLOWER_MARGIN = 0.02


def slower_rows(result: dict, margin: float = SLOWER_MARGIN) -> list[str]:
    """One line per collectives row whose ratio is above 1 + margin, with the
    path nccl_core took there: the rows the path table must change."""
    out = []
    for r in result.get("collectives", []):
        if r.get("ratio") is not None and r["ratio"] > 1 + margin:
            out.append(f"{op_label(r)} {format_bytes(r['bytes'])} {r['ratio']:.2f} "
                       f"(path {r.get('path', '?')})")
    return out


# A row whose p90 is this many times its p10 (and UNSTEADY_MIN_US above it)
# had rounds that stalled, not noise: a kernel variant that passed every
# check once ran whole rounds of graph replays 30-200x slower.
UNSTEADY_SPREAD = 3.0
UNSTEADY_MIN_US = 20.0


def unsteady_rows(result: dict) -> list[str]:
    """One line per collectives row where nccl_core's samples spread like a
    stall (p90 >= UNSTEADY_SPREAD x p10 and UNSTEADY_MIN_US above it): its
    median may look fine while some rounds were far slower."""
    out = []
    for r in result.get("collectives", []):
        t = r.get(CORE) or {}
        p10, p90 = t.get("p10_us"), t.get("p90_us")
        if p10 is None or p90 is None:
            continue
        if p90 >= UNSTEADY_SPREAD * p10 and p90 - p10 >= UNSTEADY_MIN_US:
            out.append(f"{op_label(r)} {format_bytes(r['bytes'])} p10 {p10:.3g} / median "
                       f"{t['us']:.3g} / p90 {p90:.3g} us (path {r.get('path', '?')})")
    return out


def wrong_results(result: dict) -> list[str]:
    """One line per row whose check failed on some rank."""
    out = []
    for r in result.get("collectives", []):
        if not all(r["correct"].values()):
            out.append(f"{op_label(r)} {format_bytes(r['bytes'])}: {correct_cell(r['correct'])}")
    for r in result.get("workloads", []):
        if not all(r["correct"].values()):
            out.append(f"{r['workload']} {r['label']}: {correct_cell(r['correct'])}")
    for r in result.get("tooling", []):
        if not all(r["correct"].values()):
            out.append(f"tooling {r['setting']} {format_bytes(r['bytes'])}: "
                       f"{correct_cell(r['correct'])}")
    for r in result.get("footprint", []):
        if not all(r["correct"].values()):
            out.append(f"footprint {r['program']}: {correct_cell(r['correct'])}")
    return out


def write_json(path: str, result: dict) -> None:
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


def load_json(path: str) -> dict:
    """A results file written by --json; ValueError when it is not one."""
    with open(path) as f:
        try:
            result = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not JSON: {e}") from None
    if not isinstance(result, dict) or "meta" not in result or not (
            "collectives" in result or "workloads" in result or "tooling" in result
            or "footprint" in result):
        raise ValueError(f"{path} is not a results file of nccl_core_backend.bench (--json)")
    return result
