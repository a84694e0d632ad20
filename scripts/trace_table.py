"""Lists the collectives in a torch.profiler Chrome trace.

    python scripts/trace_table.py trace.json [--markdown]

One row per collective name and size, from torch's ``record_param_comms``
events (what tools such as HTA read): calls, elements in and out, dtype,
group size and name.  Then the backend's own records (``nccl_core:<op>``
or ``nccl:<op>``) and the GPU kernels whose name mentions NCCL (NCCL's and
nccl_core's), with their launch counts and total time.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict


def summarize(events):
    """(collective rows, backend records, kernel rows) from trace events."""
    comms = Counter()
    for e in events:
        if e.get("name") != "record_param_comms":
            continue
        a = e.get("args", {})
        comms[(a.get("Collective name"), a.get("In msg nelems"), a.get("Out msg nelems"),
               a.get("dtype"), a.get("Group size"), a.get("Process Group Name"))] += 1
    records = Counter(e["name"] for e in events
                      if str(e.get("name", "")).split(":")[0] in ("nccl_core", "nccl")
                      and e.get("ph") in ("X", "b", "B"))
    kernels = defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("cat") == "kernel" and ("nccl" in e.get("name", "").lower()):
            k = kernels[e["name"][:60]]
            k[0] += 1
            k[1] += float(e.get("dur", 0.0))
    return comms, records, kernels


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = p.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    comms, records, kernels = summarize(events)
    sep = " | " if args.markdown else "  "
    head = ["collective", "calls", "in elems", "out elems", "dtype", "group size", "group"]
    print(("| " if args.markdown else "") + sep.join(head) + (" |" if args.markdown else ""))
    if args.markdown:
        print("|" + "---|" * len(head))
    for (name, nin, nout, dtype, size, group), n in sorted(comms.items(), key=lambda x: str(x)):
        row = [str(name), str(n), str(nin), str(nout), str(dtype), str(size), str(group)]
        print(("| " if args.markdown else "") + sep.join(row) + (" |" if args.markdown else ""))
    print()
    print("backend records:", ", ".join(f"{k} x{v}" for k, v in sorted(records.items())))
    for name, (n, us) in sorted(kernels.items()):
        print(f"kernel {name}: {n} launches, {us:.1f} us")


if __name__ == "__main__":
    main()
