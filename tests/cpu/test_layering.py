"""The C++ folders form floors: a file includes headers of its own folder and
of folders on lower floors only (docs/architecture.md, the folder map).  A
back-include fails here, naming the file, the line and both floors."""

from __future__ import annotations

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSRC = os.path.join(ROOT, "csrc")

# Lowest first.  Folders on one floor do not include each other.
FLOORS = {
    "util": 0,      # checked arithmetic, string building, host profiling: nothing of ours
    "nccl": 1,      # the checked NCCL/CUDA call layer, features, newer APIs
    "memory": 2,    # NCCL's allocator, VMM, mapped host memory
    "comm": 3,      # the Communicator and its resources
    "device": 4,    # device communicators and device collectives
    "nvlink": 4,    # nccl_core's own NVLink kernels (fast path, push)
    "rma": 5,       # one-sided communication
    "collectives": 5,  # the operations layer: every NCCL collective's call, both surfaces
    "op": 6,        # one operation's state: end event, timing, error, held tensors
    "failures": 7,  # watchdog, error policy, flight recorder, reports, NaN watch
    "tooling": 7,   # torch's tooling: profiler, completion hooks, comm listener
    "registration": 7,  # memory registration: segments, automatic windows
    "backend": 8,   # the c10d::Backend: lifecycle, dispatch, its operations
    "python": 9,    # the pybind11 module _C, the product
    "testing": 10,  # the lab module _testing: emulated ranks, private checks, the fake NCCL
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')


def _includes():
    for folder in sorted(os.listdir(CSRC)):
        path = os.path.join(CSRC, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            with open(os.path.join(path, name), errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m:
                        yield folder, f"csrc/{folder}/{name}:{number}", m.group(1)


def test_every_folder_has_a_floor():
    # A folder without files is no system: git leaves none, but a copied
    # tree can keep the empty folder of a renamed one (seen on a GPU host).
    folders = {d for d in os.listdir(CSRC)
               if os.path.isdir(os.path.join(CSRC, d)) and os.listdir(os.path.join(CSRC, d))}
    assert folders == set(FLOORS), (folders - set(FLOORS), set(FLOORS) - folders)


def test_no_include_reaches_up_or_sideways():
    bad = [f"{where}: {src} (floor {FLOORS[src]}) includes {dst}/ (floor {FLOORS.get(dst)})"
           for src, where, dst in _includes()
           if dst != src and (dst not in FLOORS or FLOORS[dst] >= FLOORS[src])]
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_back_include(tmp_path, monkeypatch):
    """The check fails on the mistake it guards: a util file that includes nccl/."""
    fake = tmp_path / "csrc"
    (fake / "util").mkdir(parents=True)
    (fake / "nccl").mkdir()
    (fake / "util" / "x.cpp").write_text('#include "nccl/api.h"\n')
    (fake / "nccl" / "api.h").write_text('#include "util/concat.h"\n')
    monkeypatch.setattr(sys.modules[__name__], "CSRC", str(fake))
    found = [(src, dst) for src, _, dst in _includes() if dst != src and FLOORS[dst] >= FLOORS[src]]
    assert found == [("util", "nccl")]


def _declaration_lines(header: str, cls: str) -> int:
    """Lines of `class cls ... };` in `header`, both ends included."""
    lines = open(header).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {cls} "))
    end = next(i for i in range(start, len(lines)) if lines[i] == "};")
    return end - start + 1


def _rooms(folder_path: str) -> dict[str, int]:
    """unit (a file name without extension) -> lines of its files together:
    a .cpp or .cu with its header is one room."""
    rooms: dict[str, int] = {}
    for name in os.listdir(folder_path):
        full = os.path.join(folder_path, name)
        if os.path.isfile(full):
            with open(full, errors="replace") as f:
                rooms[name.rsplit(".", 1)[0]] = rooms.get(name.rsplit(".", 1)[0], 0) + sum(1 for _ in f)
    return rooms


def test_sizes_stay_readable():
    """Every room (a .cpp or .cu with its header) at most 500 lines, no folder
    above 22 files, the Backend declaration (lifecycle and dispatch) at most
    170 lines: 150 for torch 2.11's c10d::Backend, and one line for each
    virtual torch 2.15 added that it overrides (abort hooks, reconfigure,
    windows, gather_single, ...)."""
    long_rooms, crowded = [], []
    for folder in sorted(os.listdir(CSRC)):
        path = os.path.join(CSRC, folder)
        if not os.path.isdir(path):
            continue
        names = [n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n))]
        if len(names) > 22:
            crowded.append(f"csrc/{folder}: {len(names)} files")
        long_rooms += [f"csrc/{folder}/{unit}: {n} lines" for unit, n in sorted(_rooms(path).items())
                       if n > 500]
    assert not long_rooms and not crowded, long_rooms + crowded
    lines = _declaration_lines(os.path.join(CSRC, "backend", "backend.h"), "Backend")
    assert lines <= 170, f"the Backend declaration is {lines} lines"


def _unit_edges(folder: str) -> dict[str, set[str]]:
    """Within csrc/<folder>: unit (a file name without .h/.cpp/.cu) -> the
    units of that folder whose headers it includes."""
    path = os.path.join(CSRC, folder)
    own = re.compile(r'^\s*#\s*include\s+"' + folder + r'/([a-z_]+)\.h"')
    edges: dict[str, set[str]] = {}
    for name in sorted(os.listdir(path)):
        unit = name.rsplit(".", 1)[0]
        with open(os.path.join(path, name), errors="replace") as f:
            for line in f:
                m = own.match(line)
                if m and m.group(1) != unit:
                    edges.setdefault(unit, set()).add(m.group(1))
    return edges


def _mutual(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} <-> {b}" for a, targets in edges.items() for b in targets
                  if a < b and a in edges.get(b, set()))


def test_no_two_units_of_comm_include_each_other():
    # the communicator sits below its resources and its bounded
    # calls (its operations are collectives/raw_ops); the buffer type and the
    # open group's holds sit where every user reaches them without a climb.
    assert _mutual(_unit_edges("comm")) == []


def test_the_unit_check_sees_a_pair():
    assert _mutual({"communicator": {"operations"}, "operations": {"communicator", "buffer"}}) == [
        "communicator <-> operations"]


def test_backend_enters_failures_through_one_door():
    # csrc/failures/group_failures.h is the only door from the
    # product's floors above (backend/, python/); the lab (testing/) may
    # reach the failure checks' pure parts.
    door = re.compile(r'^\s*#\s*include\s+"failures/([a-z_]+)\.h"')
    others = []
    for folder in ("backend", "python"):
        for name in sorted(os.listdir(os.path.join(CSRC, folder))):
            with open(os.path.join(CSRC, folder, name)) as f:
                for number, line in enumerate(f, 1):
                    m = door.match(line)
                    if m and m.group(1) != "group_failures":
                        others.append(f"csrc/{folder}/{name}:{number}: failures/{m.group(1)}.h")
    assert others == []


# NCCL's collective and point-to-point calls (not the group calls).
NCCL_COLLECTIVES = ("ncclAllReduce", "ncclReduce", "ncclBroadcast", "ncclBcast", "ncclAllGather",
                    "ncclGather", "ncclReduceScatter", "ncclAlltoAll", "ncclScatter", "ncclSend",
                    "ncclRecv")


def _collective_callers(root: str) -> dict[str, set[str]]:
    """NCCL collective -> the files outside csrc/nccl/ that call it."""
    call = re.compile(r"\b(" + "|".join(NCCL_COLLECTIVES) + r")\(")
    found: dict[str, set[str]] = {}
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if folder == "nccl" or not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            with open(os.path.join(path, name), errors="replace") as f:
                text = f.read()
            for m in call.finditer(text):
                found.setdefault(m.group(1), set()).add(f"csrc/{folder}/{name}")
    return found


def test_each_nccl_collective_is_called_from_one_file():
    # dist.* (csrc/backend) and the raw Communicator API
    # (collectives/raw_ops.cpp) both enqueue through collectives/nccl_calls.cpp.
    callers = _collective_callers(CSRC)
    assert {op: sorted(files) for op, files in callers.items()
            if files != {"csrc/collectives/nccl_calls.cpp"}} == {}


def test_the_one_file_check_sees_a_second_caller(tmp_path):
    for folder, text in (("collectives", "ncclSend(a);"), ("backend", "x = ncclSend(b);")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "f.cpp").write_text(text)
    assert _collective_callers(str(tmp_path)) == {
        "ncclSend": {"csrc/backend/f.cpp", "csrc/collectives/f.cpp"}}


# The backend's operation files and the refusals they may still raise: a
# dtype NCCL has no type for (a conversion), a receive from any source (a
# call NCCL cannot make).  Every other argument check of dist.* is
# collectives/torch_checks.cpp's.
_OPERATION_FILES = ("collectives.cpp", "gathers.cpp", "p2p.cpp")
_REFUSALS_LEFT = ("is not supported by NCCL", "receiving from any source")
_ARGUMENT_CHECK = re.compile(
    r"NCCL_CORE_CHECK_(?:VALUE|TYPE)\s*\(|C10_THROW_ERROR\s*\(\s*(?:ValueError|TypeError)")


def _inline_argument_checks(backend_dir: str) -> list[str]:
    """`file:line` of each argument check in the backend's operation files
    that is not one of the refusals left there."""
    found = []
    for name in _OPERATION_FILES:
        path = os.path.join(backend_dir, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        for m in _ARGUMENT_CHECK.finditer(text):
            # The check's own text: up to the end of its statement.
            end = text.find(";", m.end())
            statement = text[m.start():end if end >= 0 else len(text)]
            if not any(r in statement for r in _REFUSALS_LEFT):
                found.append(f"csrc/backend/{name}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def test_dist_argument_checks_live_in_collectives():
    assert _inline_argument_checks(os.path.join(CSRC, "backend")) == []


def test_the_argument_check_rule_sees_an_inline_check(tmp_path):
    (tmp_path / "gathers.cpp").write_text(
        'x;\nNCCL_CORE_CHECK_VALUE(n > 0, "nccl_core gather: empty");\n'
        'C10_THROW_ERROR(TypeError, concat(op, ": dtype is not supported by NCCL"));\n')
    assert _inline_argument_checks(str(tmp_path)) == ["csrc/backend/gathers.cpp:2"]


def _unnamed_units(doc: str, csrc: str) -> dict[str, list[str]]:
    """csrc folder -> its units (file names without extension) that its
    section of docs/architecture.md ("### csrc/<folder> ...") never names in
    backticks; a folder without a section lists all its units."""
    sections = {}
    for part in re.split(r"^### ", doc, flags=re.M)[1:]:
        m = re.match(r"csrc/([a-z_]+)", part)
        if m:
            sections[m.group(1)] = part
    missing = {}
    for folder in sorted(os.listdir(csrc)):
        path = os.path.join(csrc, folder)
        if not os.path.isdir(path):
            continue
        units = sorted({n.split(".", 1)[0] for n in os.listdir(path)})
        text = sections.get(folder, "")
        gone = [u for u in units if not re.search(r"`" + re.escape(u) + r"[.`]", text)]
        if gone:
            missing[folder] = gone
    return missing


def test_the_file_map_names_every_file():
    # docs/architecture.md's file map matches the code.
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        doc = f.read()
    assert _unnamed_units(doc, CSRC) == {}


def test_the_file_map_check_sees_a_missing_file(tmp_path):
    (tmp_path / "comm").mkdir()
    for name in ("communicator.h", "communicator.cpp", "buffer.h"):
        (tmp_path / "comm" / name).write_text("")
    doc = "### csrc/comm — Communicator\n\n`communicator.{h,cpp}` owns the handle.\n"
    assert _unnamed_units(doc, str(tmp_path)) == {"comm": ["buffer"]}


# Where NCCL may be called by name: the seam's own folder, and our NVLink
# kernels (csrc/nvlink, which join the seam once NVLink peers can check them).
# Device code calls NCCL's device API (inline functions on the GPU), which no
# host seam can stand in for: kernels of csrc/device and their layout checks.
_NCCL_CALLERS = ("nccl", "nvlink")
_NCCL_CALL = re.compile(r"(?<![\w.\"])nccl[A-Z]\w*\(")
_DEVICE_CODE = ("csrc/device/kernels.cu", "csrc/device/layout_checks.cu")


def _nccl_calls_outside_the_seam(root: str) -> list[str]:
    found = []
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if folder in _NCCL_CALLERS or not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            where = f"csrc/{folder}/{name}"
            if where in _DEVICE_CODE:
                continue
            with open(os.path.join(path, name), errors="replace") as f:
                for number, line in enumerate(f, 1):
                    code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split("//", 1)[0])
                    if _NCCL_CALL.search(code) or "find_symbol(" in code:
                        found.append(f"{where}:{number}: {line.strip()}")
    return found


def test_nccl_is_called_through_the_seam_only():
    assert _nccl_calls_outside_the_seam(CSRC) == []


def test_the_seam_check_sees_a_direct_call(tmp_path):
    (tmp_path / "comm").mkdir()
    (tmp_path / "comm" / "x.cpp").write_text(
        'r = ncclCommSplit(a);\nr = nccl().CommSplit(a);  // ncclCommSplit(a)\n'
        'NCCL_CORE_CHECK(c, "ncclCommSplit(a)");\n')
    assert _nccl_calls_outside_the_seam(str(tmp_path)) == ["csrc/comm/x.cpp:1: r = ncclCommSplit(a);"]


def test_the_product_module_holds_no_lab():
    """setup.py builds csrc/testing as _testing, apart from _C, and nothing
    of the package imports it."""
    with open(os.path.join(ROOT, "setup.py")) as f:
        setup = f.read()
    assert 'LAB = os.path.join("csrc", "testing")' in setup
    assert "not p.startswith(LAB + os.sep)" in setup
    package = os.path.join(ROOT, "nccl_core_backend")
    importers = []
    for dirpath, _, names in os.walk(package):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name)) as f:
                    if re.search(r"\b_testing\b", f.read()):
                        importers.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    assert importers == []
