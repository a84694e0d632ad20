"""Draws a results file of the bench as a PNG (needs matplotlib).

    python -m nccl_core_backend.bench.plot results.json out.png

One column per collective: time per call of both backends against the size
(log-log) above, the ratio nccl_core / nccl below.  Workloads, if any, get a
last column: step time of both backends above, the step and
communication-only ratios below.  GPU hosts often have no matplotlib: run the
bench with ``--json`` there and this command wherever matplotlib is.
"""

from __future__ import annotations

import argparse
import sys

from nccl_core_backend.bench.anchor import KINDS as ANCHOR_KINDS
from nccl_core_backend.bench.anchor import LABELS as ANCHOR_LABELS
from nccl_core_backend.bench.anchor import ONE_SHOT, TWO_SHOT
from nccl_core_backend.bench.job import CORE, NCCL
from nccl_core_backend.bench.report import load_json, op_label
from nccl_core_backend.bench.sizes import format_bytes

LATER = "python -m nccl_core_backend.bench.plot results.json out.png"
COLORS = {CORE: "tab:green", NCCL: "tab:gray", ONE_SHOT: "tab:blue", TWO_SHOT: "tab:orange"}


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _by_op(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(op_label(r), []).append(r)
    return out


def plot(result: dict, path: str) -> None:
    """Writes the figure of `result` (the --json layout) to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    size_ticks = FuncFormatter(lambda v, _: format_bytes(int(v)) if v >= 1 else "")

    ops = _by_op(result.get("collectives", []))
    work = result.get("workloads", [])
    cols = len(ops) + (1 if work else 0)
    if cols == 0:
        raise ValueError("the results hold no rows to plot")
    fig, axes = plt.subplots(2, cols, figsize=(4.2 * cols, 6.5), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]})
    for col, (label, rows) in enumerate(ops.items()):
        rows = sorted(rows, key=lambda r: r["bytes"])
        xs = [r["bytes"] for r in rows]
        top, bottom = axes[0][col], axes[1][col]
        for be in (CORE, NCCL):
            top.plot(xs, [r[be]["us"] for r in rows], "o-", ms=3, color=COLORS[be], label=be)
        for k in ANCHOR_KINDS:  # --anchor symm_mem: torch's kernels, where they ran
            pts = [(r["bytes"], r[k]["us"], r["anchor_ratio"][k]) for r in rows if k in r]
            if pts:
                top.plot([p[0] for p in pts], [p[1] for p in pts], "s--", ms=3, color=COLORS[k],
                         label=ANCHOR_LABELS[k])
                bottom.plot([p[0] for p in pts], [float("nan") if p[2] is None else p[2] for p in pts],
                            "s--", ms=3, color=COLORS[k], label=f"nccl_core / {ANCHOR_LABELS[k]}")
        top.set_xscale("log", base=2)
        top.set_yscale("log")
        top.set_title(label, fontsize=10)
        top.set_ylabel("µs per call (median)")
        top.grid(True, which="both", alpha=0.3)
        bottom.plot(xs, [float("nan") if r["ratio"] is None else r["ratio"] for r in rows], "o-", ms=3, color=COLORS[CORE])
        bottom.axhline(1.0, color="black", lw=0.8)
        bottom.set_xscale("log", base=2)
        for ax in (top, bottom):
            ax.xaxis.set_major_locator(LogLocator(base=16))
            ax.xaxis.set_major_formatter(size_ticks)
            ax.tick_params(axis="x", labelsize=7)
        bottom.set_xlabel("size")
        bottom.set_ylabel("time ratio nccl_core / nccl")
        bottom.grid(True, alpha=0.3)
        if any(k in r for r in rows for k in ANCHOR_KINDS):
            top.legend(fontsize=7)
            bottom.legend(fontsize=7)
    if work:
        top, bottom = axes[0][-1], axes[1][-1]
        names = [f"{r['workload']}\n{r['label']}" for r in work]
        pos = list(range(len(work)))
        for k, be in enumerate((CORE, NCCL)):
            top.bar([p + (k - 0.5) * 0.4 for p in pos], [r[be]["us"] / 1e3 for r in work], 0.4,
                    color=COLORS[be], label=be)
        top.set_xticks(pos, names, fontsize=7)
        top.set_ylabel("ms per step (median)")
        top.set_title("workloads", fontsize=10)
        step = [r["ratio"] for r in work]
        comm = [r.get("comm_ratio") or 0.0 for r in work]
        bottom.bar([p - 0.2 for p in pos], step, 0.4, color="tab:green", label="step")
        bottom.bar([p + 0.2 for p in pos], comm, 0.4, color="tab:olive", label="comm only")
        bottom.axhline(1.0, color="black", lw=0.8)
        bottom.set_xticks(pos, names, fontsize=7)
        bottom.set_ylabel("ratio nccl_core / nccl")
        bottom.legend(fontsize=7)
    axes[0][0].legend(fontsize=8)
    meta = result["meta"]
    fig.suptitle(f"nccl_core vs nccl, {meta.get('world', '?')} rank(s), {meta.get('gpu', '')}, "
                 f"torch {meta.get('torch', '?')}, NCCL {meta.get('nccl', '?')} (lower is faster)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nccl_core_backend.bench.plot",
                                description="Draw a results file of nccl_core_backend.bench as a PNG.")
    p.add_argument("results", help="JSON written by the bench's --json")
    p.add_argument("out", help="PNG to write")
    args = p.parse_args(argv)
    if not have_matplotlib():
        p.error("matplotlib is not installed here (pip install matplotlib)")
    try:
        result = load_json(args.results)
        plot(result, args.out)
    except (OSError, ValueError, KeyError) as e:
        p.error(str(e) if not isinstance(e, KeyError) else f"{args.results}: missing field {e}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
