"""Side-by-side count of torch's suite on backend nccl and on nccl_core.

    python3 -m tests.conformance.summary nccl.xml nccl_core.xml

Reads the two JUnit files pytest wrote, prints passed / failed / skipped for
each, the tests that fail on nccl_core but pass on nccl (with the reason when
``expected.py`` lists them) and expected failures that now pass.  Exits 1 when
a test that passes on nccl fails on nccl_core without a listed reason, is
skipped only on nccl_core, or is missing from nccl_core's results (a crashed
worker writes no result: a missing test must not pass unseen).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

from tests.conformance.expected import EXPECTED_FAILURES


def outcomes(path: str) -> dict[str, str]:
    """Test name -> passed / failed / skipped, from a JUnit XML file."""
    out: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        if case.find("failure") is not None or case.find("error") is not None:
            out[name] = "failed"
        elif case.find("skipped") is not None:
            out[name] = "skipped"
        else:
            out[name] = "passed"
    return out


def counts(res: dict[str, str]) -> tuple[int, int, int]:
    vals = list(res.values())
    return vals.count("passed"), vals.count("failed"), vals.count("skipped")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    ref, ours = outcomes(argv[0]), outcomes(argv[1])
    print("| backend | passed | failed | skipped |")
    print("| --- | ---: | ---: | ---: |")
    for label, res in (("torch's nccl", ref), ("nccl_core", ours)):
        p, f, s = counts(res)
        print(f"| {label} | {p} | {f} | {s} |")
    regressions, explained = [], []
    for name, state in sorted(ours.items()):
        if state == "failed" and ref.get(name) == "passed":
            (explained if name in EXPECTED_FAILURES else regressions).append(name)
    skipped_only = [n for n, s in sorted(ours.items()) if s == "skipped" and ref.get(n) == "passed"]
    missing = [n for n, s in sorted(ref.items()) if s == "passed" and n not in ours]
    stale = [n for n in EXPECTED_FAILURES if ours.get(n) == "passed"]
    print(f"\nfail on nccl_core, pass on nccl: {len(explained) + len(regressions)}")
    for name in explained:
        print(f"  expected  {name}: {EXPECTED_FAILURES[name]}")
    for name in regressions:
        print(f"  REGRESSION  {name}")
    for name in stale:
        print(f"  stale expectation (now passes): {name}")
    for name in skipped_only:
        print(f"  SKIPPED ONLY ON nccl_core  {name}")
    for name in missing:
        print(f"  MISSING FROM nccl_core's RESULTS  {name}")
    only_ref_fails = [n for n, s in sorted(ref.items()) if s == "failed" and ours.get(n) == "passed"]
    if only_ref_fails:
        print(f"pass on nccl_core, fail on nccl: {', '.join(only_ref_fails)}")
    return 1 if regressions or skipped_only or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
