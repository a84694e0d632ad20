"""scripts/sources-hash.sh: the hash that lets scripts/gpu-build.sh install
extensions prebuilt elsewhere (scripts/prebuild.sh) only for the very sources
in the tree."""

from __future__ import annotations

import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hash(tree: str) -> str:
    out = subprocess.run(["bash", os.path.join(tree, "scripts", "sources-hash.sh")],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert len(out) == 64 and int(out, 16) >= 0, out
    return out


def _tree(tmp_path) -> str:
    tree = str(tmp_path / "tree")
    os.makedirs(os.path.join(tree, "scripts"))
    shutil.copy(os.path.join(ROOT, "scripts", "sources-hash.sh"), os.path.join(tree, "scripts"))
    shutil.copy(os.path.join(ROOT, "setup.py"), tree)
    shutil.copytree(os.path.join(ROOT, "csrc", "util"), os.path.join(tree, "csrc", "util"))
    return tree


def test_the_hash_follows_the_sources_only(tmp_path):
    tree = _tree(tmp_path)
    first = _hash(tree)
    assert _hash(tree) == first
    with open(os.path.join(tree, "README.md"), "w") as f:
        f.write("not a source\n")
    os.makedirs(os.path.join(tree, "stage", "prebuilt-2.15.0"))
    assert _hash(tree) == first
    name = sorted(os.listdir(os.path.join(tree, "csrc", "util")))[0]
    with open(os.path.join(tree, "csrc", "util", name), "a") as f:
        f.write("\n")
    edited = _hash(tree)
    assert edited != first
    with open(os.path.join(tree, "csrc", "util", "new.cpp"), "w") as f:
        f.write("")
    added = _hash(tree)
    assert added not in (first, edited)
    with open(os.path.join(tree, "setup.py"), "a") as f:
        f.write("# another flag\n")
    assert _hash(tree) not in (first, edited, added)


def test_the_hash_is_the_same_from_any_directory(tmp_path):
    tree = _tree(tmp_path)
    here = _hash(tree)
    out = subprocess.run(["bash", "scripts/sources-hash.sh"], cwd=tree, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == here
