"""Notes and docs cite files that exist.

Every repository path in backticks in ``docs/*.md``, ``bench/results/*.md`` and
``README.md`` (``csrc/...``, ``bench/...``, ``tests/...`` and so on, with
``{a,b}`` alternatives) must name a file or folder of the checkout.  A file
that is gone is cited without backticks, with where it went
(``git show <commit>:<path>``)."""

from __future__ import annotations

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CITED = re.compile(r"`((?:csrc|bench|tests|nccl_core_backend|scripts|docs|examples)/[^`\s]*)`")


def _paths(text: str):
    for m in CITED.finditer(text):
        path = m.group(1).rstrip(".,;:").split("::")[0]
        if any(c in path for c in "*<>"):
            continue  # a pattern, not a file
        alt = re.match(r"(.*)\{([^}]*)\}(.*)", path)
        if alt:
            for middle in alt.group(2).split(","):
                yield alt.group(1) + middle + alt.group(3)
        else:
            yield path


def cited_but_missing(files: list[str]) -> list[str]:
    out = []
    for f in files:
        with open(os.path.join(ROOT, f)) as fh:
            for path in _paths(fh.read()):
                if not os.path.exists(os.path.join(ROOT, path)):
                    out.append(f"{f}: {path}")
    return out


def test_notes_and_docs_cite_files_that_exist():
    files = ["README.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))
        + glob.glob(os.path.join(ROOT, "bench", "results", "*.md")))
    assert cited_but_missing(files) == []


def test_the_check_finds_a_missing_file(tmp_path):
    assert list(_paths("see `csrc/nvlink/{engine,push}.h`, `bench/x.py`, and `csrc/*.cu`")) == [
        "csrc/nvlink/engine.h", "csrc/nvlink/push.h", "bench/x.py"]
    assert list(_paths("`git show abc:bench/launch_cost.cu`")) == []


def test_no_prototype_sources_in_bench():
    # bench/ holds scripts that run against the built backend; CUDA prototypes
    # of shipped kernels drift from them.
    assert glob.glob(os.path.join(ROOT, "bench", "*.cu")) == []
