"""The GPU suite in tiers that fit a GPU lease: a quick tier for every change
and named parts that together cover the whole suite.

    python3 -m tests.gpu.tiers --list-parts
    python3 -m tests.gpu.tiers --quick
    python3 -m tests.gpu.tiers --part suite-2,error-modes
    python3 -m tests.gpu.tiers --all

(``scripts/gpu-test.sh`` builds the extension first and passes these on.)

A tier is a list of jobs; a job is one pytest run over GPU test files with
its own environment (which launch configurations, how long a soak, how many
placement iterations).  Jobs run side by side, ``--jobs`` at a time (default
``NCCL_CORE_GPU_JOBS`` or 4), longest first: each torchrun job has its own
port (``torchrun --standalone``) and ranks sharing a GPU as simulated hosts
do not time each other.  Every job runs in a process session of its own and
is ended by its process group when ``--budget`` seconds have passed.  The
end is a table of jobs with wall time and pass/fail/skip counts, also
written to ``tiers-summary.md`` in the log folder; ``docs/testing.md``
records the measured times.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
import time

from tests.gpu.launch import ROOT, end_group

SUITE = "tests/gpu/test_gpu_suite.py"
NO_SOAK = {"NCCL_CORE_GPU_SKIP": "soak_no_leaks"}


@dataclasses.dataclass(frozen=True)
class Job:
    name: str
    tests: tuple[str, ...]
    env: dict = dataclasses.field(default_factory=dict)
    workers: int = 0  # pytest-xdist processes; 0: none
    estimate_s: int = 60  # measured on one H200 (docs/testing.md); orders the jobs

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "pytest", *self.tests, "-q", "-rs", "-p", "no:cacheprovider",
               "--durations=10"]
        if self.workers and _have_xdist():
            cmd += ["-n", str(self.workers)]
        return cmd


def _have_xdist() -> bool:
    """pytest-xdist is on the GPU hosts; without it a job runs its tests one by one."""
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


def suite(config: str, estimate_s: int, **env: str) -> Job:
    return Job(f"suite {config}", (SUITE,), {"NCCL_CORE_GPU_CONFIGS": config, **NO_SOAK, **env},
               estimate_s=estimate_s)


def soak(scale: str, estimate_s: int) -> Job:
    return Job(f"soak x{scale}", (SUITE,), {"NCCL_CORE_GPU_CONFIGS": "2:lazy", "NCCL_CORE_GPU_ONLY": "soak_no_leaks",
                                           "NCCL_CORE_SOAK_SCALE": scale}, estimate_s=estimate_s)


def processes(worlds: str, iters: str, estimate_s: int) -> Job:
    return Job(f"processes (placement {worlds} ranks x{iters})",
               ("tests/gpu/test_fresh_process.py", "tests/gpu/test_torch215_hooks.py", "tests/gpu/test_symm_mem.py",
                "tests/gpu/test_placement.py"),
               {"NCCL_CORE_PLACEMENT_WORLDS": worlds, "NCCL_CORE_PLACEMENT_ITERS": iters}, workers=4,
               estimate_s=estimate_s)


def conformance(world: int, k: str, name: str, estimate_s: int) -> Job:
    """torch's suite on nccl_core and on torch's nccl, compared (test_conformance_gate.py)."""
    return Job(f"conformance {name}", ("tests/gpu/test_conformance_gate.py",),
               {"NCCL_CORE_CONFORMANCE_WORLD": str(world), "NCCL_CORE_CONFORMANCE_K": k},
               estimate_s=estimate_s)


DDP_TESTS = "ddp or DistributedDataParallel"
# The rest of torch's suite in two halves for world 4 (a 10-minute command
# each): the collectives' own tests, and everything else.
COLLECTIVE_TESTS = "all_reduce or all_gather or reduce_scatter or broadcast or gather or scatter " \
    "or all_to_all or _reduce"
ERROR_MODES = Job("error modes", ("tests/gpu/test_error_modes.py",), workers=6, estimate_s=135)
BENCH = Job("bench", ("tests/gpu/test_bench.py",), workers=2, estimate_s=215)
CPU = Job("cpu tests", ("tests/cpu",), workers=4, estimate_s=110)

# Every test file under tests/gpu is in some part (tests/cpu/test_gpu_tiers.py
# checks), and the parts' launch configurations are the suite's five.
PARTS: dict[str, list[Job]] = {
    "suite-1": [suite("1:eager", 225)],
    "suite-2": [suite("2:eager", 140), suite("2:lazy", 130)],
    "suite-4": [suite("4:eager", 160), suite("4:lazy", 160)],
    "error-modes": [ERROR_MODES],
    "processes": [processes("2,4", "25", 260)],
    "examples": [Job("examples at 4 ranks", ("tests/gpu/test_examples.py",), {"NCCL_CORE_EXAMPLE_WORLD": "4"},
                     workers=4, estimate_s=200)],
    "bench": [BENCH, CPU],
    "soak": [soak("1", 420)],
    # torch's suite as a gate.  World 2 measured on 2xH200 with
    # both backends at once on the same GPUs (2026-11-27): the DDP subset
    # 242 s, the rest 246 s.  World 4 on 4xH200, both at once: the DDP subset
    # 420 s (6 workers each); the rest took more than 540 s as one run with 9
    # workers each, hence its two parts (estimates).
    "ddp": [Job("DDP modes against nccl", ("tests/gpu/test_ddp_modes.py",),
                {"NCCL_CORE_DDP_WORLDS": "2,4"}, estimate_s=300)],
    "conformance-2-ddp": [conformance(2, DDP_TESTS, "w2 DDP", 250)],
    "conformance-2-rest": [conformance(2, f"not ({DDP_TESTS})", "w2 rest", 250)],
    "conformance-4-ddp": [conformance(4, DDP_TESTS, "w4 DDP", 430)],
    "conformance-4-collectives": [conformance(4, f"not ({DDP_TESTS}) and ({COLLECTIVE_TESTS})",
                                              "w4 collectives", 400)],
    "conformance-4-other": [conformance(4, f"not ({DDP_TESTS}) and not ({COLLECTIVE_TESTS})",
                                        "w4 other", 450)],
}

# Every case family at 1 and 2 ranks, in well under 8 minutes with the build.
QUICK: list[Job] = [
    suite("1:eager", 225),
    suite("2:eager", 140),
    soak("0.1", 50),
    ERROR_MODES,
    processes("2", "3", 110),  # 111 s on torch 2.15 with the Backend-hook scenarios
    Job("examples at 2 ranks", ("tests/gpu/test_examples.py",), {"NCCL_CORE_EXAMPLE_WORLD": "2"}, workers=4,
        estimate_s=210),
    BENCH,
    CPU,
    # The tests that once trained DDP on wrong gradients, and a few plain
    # collectives: skipped where fewer than 2 GPUs are visible.
    conformance(2, "apply_optim_in_backward or test_all_reduce_sum_cuda or test_broadcast_cuda",
                "w2 smoke", 90),
    Job("DDP modes against nccl at 2 ranks", ("tests/gpu/test_ddp_modes.py",),
        {"NCCL_CORE_DDP_WORLDS": "2"}, estimate_s=150),
]

SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")


def counts(log_tail: str) -> dict[str, int]:
    """pytest's closing counts (passed, failed, skipped, errors) from its last lines."""
    found = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    for line in reversed(log_tail.splitlines()):
        hits = SUMMARY.findall(line)
        if hits and (" in " in line or line.startswith("=")):
            for n, word in hits:
                key = "errors" if word.startswith("error") else word
                if key in found:
                    found[key] += int(n)
            break
    return found


@dataclasses.dataclass
class Running:
    job: Job
    part: str
    proc: subprocess.Popen
    log_path: str
    start: float
    end: float = 0.0
    rc: int | None = None
    stopped: bool = False

    def finished_row(self) -> dict:
        with open(self.log_path, errors="replace") as f:
            tail = f.read()[-4000:]
        c = counts(tail)
        # 5: nothing collected; a job that ran no test did not check anything.
        ok = self.rc == 0 and not self.stopped and c["failed"] == 0 and c["errors"] == 0
        return {"part": self.part, "job": self.job.name, "seconds": round(self.end - self.start), **c,
                "result": "stopped" if self.stopped else ("ok" if ok else f"FAILED (exit {self.rc})")}


def _start(job: Job, part: str, log_dir: str) -> Running:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{part}-{job.name}").strip("-")
    job_logs = os.path.join(log_dir, safe)
    os.makedirs(job_logs, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1", NCCL_CORE_GPU_LOG_DIR=job_logs, **job.env)
    log_path = os.path.join(log_dir, f"{safe}.log")
    with open(log_path, "w") as log:
        log.write(" ".join(f"{k}={v}" for k, v in job.env.items()) + " " + " ".join(job.command()) + "\n")
        log.flush()
        # A session of its own: at the budget its torchrun jobs and their
        # workers are ended by process group, never by name.
        proc = subprocess.Popen(job.command(), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return Running(job, part, proc, log_path, time.time())


def run(jobs: list[tuple[str, Job]], parallel: int, budget_s: float, log_dir: str) -> list[dict]:
    """Runs (part, job) pairs, `parallel` at a time, longest first; returns one row a job."""
    t0 = time.time()
    queue = sorted(jobs, key=lambda pj: -pj[1].estimate_s)
    running: list[Running] = []
    rows: list[dict] = []

    def say(msg: str) -> None:
        print(f"[tiers {time.time() - t0:5.0f}s] {msg}", flush=True)

    while queue or running:
        while queue and len(running) < parallel and time.time() - t0 < budget_s:
            part, job = queue.pop(0)
            running.append(_start(job, part, log_dir))
            say(f"start {part}: {job.name}")
        for r in list(running):
            if r.proc.poll() is not None:
                r.rc, r.end = r.proc.returncode, time.time()
                rows.append(r.finished_row())
                running.remove(r)
                row = rows[-1]
                say(f"done  {r.part}: {r.job.name}: {row['seconds']}s, {row['passed']} passed, "
                    f"{row['failed']} failed, {row['skipped']} skipped, {row['errors']} errors -> {row['result']}")
        if time.time() - t0 >= budget_s:
            for r in running:
                say(f"budget of {budget_s:.0f}s spent: ending {r.part}: {r.job.name} (process group {r.proc.pid})")
                end_group(r.proc.pid)
                r.proc.wait()
                r.rc, r.end, r.stopped = r.proc.returncode, time.time(), True
                rows.append(r.finished_row())
            running.clear()
            for part, job in queue:
                rows.append({"part": part, "job": job.name, "seconds": 0, "passed": 0, "failed": 0,
                             "skipped": 0, "errors": 0, "result": "not started (budget)"})
            queue.clear()
        time.sleep(1)
    return rows


def table(rows: list[dict], wall_s: float, title: str) -> str:
    lines = [f"{title}: {wall_s:.0f} s wall", "",
             "| part | job | seconds | passed | failed | skipped | errors | result |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['part']} | {r['job']} | {r['seconds']} | {r['passed']} | {r['failed']} | "
                     f"{r['skipped']} | {r['errors']} | {r['result']} |")
    tot = {k: sum(r[k] for r in rows) for k in ("passed", "failed", "skipped", "errors")}
    lines.append(f"| all | | {wall_s:.0f} | {tot['passed']} | {tot['failed']} | {tot['skipped']} | "
                 f"{tot['errors']} | {'ok' if all(r['result'] == 'ok' for r in rows) else 'FAILED'} |")
    return "\n".join(lines)


def list_parts() -> str:
    out = ["quick: " + "; ".join(j.name for j in QUICK)]
    for name, jobs in PARTS.items():
        est = max(j.estimate_s for j in jobs)
        out.append(f"{name} (about {est} s on one H200): " + "; ".join(j.name for j in jobs))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--quick", action="store_true", help="every case family at 1 and 2 ranks")
    what.add_argument("--part", help="comma-separated part names (--list-parts)")
    what.add_argument("--all", action="store_true", help="every part, one after another")
    what.add_argument("--list-parts", action="store_true")
    p.add_argument("--jobs", type=int, default=int(os.environ.get("NCCL_CORE_GPU_JOBS", "4")))
    p.add_argument("--budget", type=float, default=float(os.environ.get("NCCL_CORE_GPU_BUDGET_S", "3000")),
                   help="seconds before the jobs still running are ended (per part with --all)")
    p.add_argument("--log-dir", default=os.environ.get("NCCL_CORE_GPU_LOG_DIR") or "out/tier-logs")
    args = p.parse_args(argv)
    if args.list_parts:
        print(list_parts())
        return 0
    if args.jobs < 1:
        p.error("--jobs must be >= 1")
    os.makedirs(args.log_dir, exist_ok=True)
    if args.quick:
        batches = [("quick", [("quick", j) for j in QUICK])]
    else:
        names = list(PARTS) if args.all else [n for n in args.part.split(",") if n]
        unknown = [n for n in names if n not in PARTS]
        if unknown:
            p.error(f"unknown part(s) {', '.join(unknown)}; the parts are {', '.join(PARTS)}")
        batches = [(n, [(n, j) for j in PARTS[n]]) for n in names]
    t0 = time.time()
    rows: list[dict] = []
    for title, jobs in batches:
        start = time.time()
        part_rows = run(jobs, args.jobs, args.budget, args.log_dir)
        rows += part_rows
        print(f"[tiers] {title}: {time.time() - start:.0f} s", flush=True)
    title = "quick tier" if args.quick else "parts " + ",".join(b[0] for b in batches)
    text = table(rows, time.time() - t0, title)
    print(text, flush=True)
    with open(os.path.join(args.log_dir, "tiers-summary.md"), "w") as f:
        f.write(text + "\n")
    return 0 if rows and all(r["result"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
