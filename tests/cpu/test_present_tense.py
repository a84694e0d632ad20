"""The tree speaks in the present: no file of the product says in which work
session or under which project issue something was found or written.

A comment says why the code is so; a value set by a measurement names the
file in ``bench/results/`` that holds the run.  The story lives in git."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ("csrc", "nccl_core_backend", "bench", "tests", "scripts", "docs", "examples", ".ci")
FILES = ("README.md", "setup.py")
SUFFIXES = (".py", ".pyi", ".cpp", ".h", ".cu", ".cuh", ".md", ".sh", ".txt", ".json", ".patch", ".toml",
            ".cfg", ".yml", ".yaml", "")

_ORDINAL = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
            "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
            "twenty-[a-z]+|thirtieth|thirty-[a-z]+")
_S = "sess" + "ion"  # spelled apart so that this file does not match itself
HISTORY = [
    re.compile(r"\b" + _S + r"s? \d+", re.I),  # "... 12", "...s 18-19"
    re.compile(r"\b\d+(?:st|nd|rd|th) " + _S, re.I),
    re.compile(r"\b(?:" + _ORDINAL + r")[ -]" + _S, re.I),
    re.compile(r"\b(?:this|that|same|earlier|last|next|previous|later) " + _S + r"\b", re.I),
    re.compile(r"\biss" + r"ues? #?\d+", re.I),  # our tracker's numbers
]


def _product_files():
    for name in FILES:
        yield name
    for tree in TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".pytest_cache")]
            for f in filenames:
                if f.endswith(SUFFIXES) and not f.endswith((".so", ".png")):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def history_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if any(p.search(line) for p in HISTORY)]


def test_no_history_in_the_product_tree():
    found = []
    for rel in _product_files():
        try:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        found += [f"{rel}: {line[:120]}" for line in history_lines(text)]
    assert found == []


def test_the_check_finds_history():
    said = ["measured in " + _S + " 9", "the tenth " + _S + "'s run", "(iss" + "ue 47 hazard c)",
            "as in " + _S + "s 18-19", "the same " + _S + " (an earlier call)"]
    assert len(history_lines("\n".join(said))) == len(said)
    fine = ["a process " + _S + " of its own (setsid)", "ncclLsaBarrier" + _S + "<ncclCoopCta> bar",
            "start_new_" + _S + "=True", "pytorch/pytorch#115388"]
    assert history_lines("\n".join(fine)) == []
