#!/usr/bin/env bash
# Builds nccl_core against several NCCL releases and runs the CPU tests with
# each one loaded, so that a layout or symbol change in a new NCCL fails here
# first.  No GPU needed.
#
#   bash scripts/build-matrix.sh                    # 2.28.9 2.29.7 2.30.7 2.32.3
#   bash scripts/build-matrix.sh 2.28.9 2.32.3      # or NCCL_MATRIX_VERSIONS="..."
#
# Per version V, under ${NCCL_MATRIX_DIR:-build/nccl-matrix}/V/:
#   prefix/  the nvidia-nccl-cu13==V wheel, unpacked (headers and libnccl.so.2)
#   src/     a copy of this checkout (tracked and untracked-not-ignored files)
#   temp/    the ninja build directory (kept: a second run rebuilds what changed)
#   log/     build.log, pytest.log
# The extension is compiled against prefix/'s headers (NCCL_HOME), then
# `pytest tests/cpu` runs in src/ with prefix/'s libnccl.so.2 preloaded, so torch
# and nccl_core both load that release; the tests check that nccl_version() and
# build_nccl_version() report V (NCCL_CORE_EXPECT_NCCL).  The compile-time
# layout checks (static_assert against NCCL's headers) run in every build.
# Ends with a table (version, build, tests, seconds), also written to
# summary.md there; exits non-zero if any version failed.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
PYTHON="${PYTHON:-python3}"
if [[ $# -gt 0 ]]; then
  VERSIONS="$*"
else
  VERSIONS="${NCCL_MATRIX_VERSIONS:-2.28.9 2.29.7 2.30.7 2.32.3}"
fi
DIR="${NCCL_MATRIX_DIR:-$ROOT/build/nccl-matrix}"
mkdir -p "$DIR/wheels"
DIR=$(cd "$DIR" && pwd)
export MAX_JOBS="${MAX_JOBS:-2}"
export TORCH_DEVICE_BACKEND_AUTOLOAD=0 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
if [[ -z "${CUDA_HOME:-}" && -d /usr/local/cuda ]]; then
  export CUDA_HOME=/usr/local/cuda
fi
[[ -n "${CUDA_HOME:-}" ]] && export PATH="$CUDA_HOME/bin:$PATH"
if "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
  export PIP_BREAK_SYSTEM_PACKAGES=1
fi

# Unpacks nvidia-nccl-cu13==$1 into $2 (once).
fetch_nccl() {
  local v=$1 prefix=$2
  [[ -f "$prefix/nvidia/nccl/lib/libnccl.so.2" && -f "$prefix/nvidia/nccl/include/nccl.h" ]] && return 0
  local wheel
  wheel=$(ls "$DIR/wheels"/nvidia_nccl_cu13-"$v"-*.whl 2>/dev/null | head -1)
  if [[ -z "$wheel" ]]; then
    "$PYTHON" -m pip download --no-deps --progress-bar off -d "$DIR/wheels" "nvidia-nccl-cu13==$v" || return 1
    wheel=$(ls "$DIR/wheels"/nvidia_nccl_cu13-"$v"-*.whl 2>/dev/null | head -1)
    [[ -n "$wheel" ]] || return 1
  fi
  rm -rf "$prefix" && mkdir -p "$prefix"
  "$PYTHON" -m zipfile -e "$wheel" "$prefix" || return 1
}

# Copies the checkout into $1, keeping file times (ninja rebuilds only what
# changed since the last run) and dropping files deleted since.
copy_tree() {
  local dest=$1
  rm -rf "$dest" && mkdir -p "$dest"
  if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$ROOT" ls-files -z -co --exclude-standard |
      (cd "$ROOT" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
      tar -C "$ROOT" --null -T - -cf - | tar -C "$dest" -xf -
  else
    tar -C "$ROOT" --exclude=./build --exclude=./.git --exclude='*.so' \
      --exclude=__pycache__ -cf - . | tar -C "$dest" -xf -
  fi
}

RESULTS=()
FAILED=0
for v in $VERSIONS; do
  work="$DIR/$v"
  mkdir -p "$work/log"
  echo "== NCCL $v"
  t0=$(date +%s)
  build="-" tests="-" status="ok"
  if ! fetch_nccl "$v" "$work/prefix" >"$work/log/fetch.log" 2>&1; then
    tail -20 "$work/log/fetch.log"
    status="wheel not found"
  else
    nccl="$work/prefix/nvidia/nccl"
    copy_tree "$work/src"
    tb=$(date +%s)
    if (cd "$work/src" && NCCL_HOME="$nccl" "$PYTHON" setup.py build_ext --inplace \
          --build-temp "$work/temp") >"$work/log/build.log" 2>&1; then
      build="ok ($(( $(date +%s) - tb ))s)"
      # torch may link NCCL functions newer than release $v (torch 2.15 needs
      # 2.29's): stubs for those, preloaded after it, let torch import.
      preload="$nccl/lib/libnccl.so.2"
      shim=$("$PYTHON" "$ROOT/scripts/nccl_torch_shim.py" "$preload" "$work/shim" 2>"$work/log/shim.log") || {
        cat "$work/log/shim.log"; shim=""; }
      if [[ -n "$shim" ]]; then
        preload="$preload:$shim"
        status="ok, torch stubs"
        sed 's/^/   /' "$work/log/shim.log"
      fi
      # Both LD_PRELOAD (torch's own RPATH names another copy) and
      # LD_LIBRARY_PATH, so every process the tests start loads release $v.
      run_here() {
        (cd "$work/src" &&
          LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}" \
          LD_LIBRARY_PATH="$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
          NCCL_CORE_EXPECT_NCCL="$v" "$PYTHON" "$@")
      }
      # The copy's extension (not an installed one) with release $v loaded.
      run_here -c '
import os, sys
import nccl_core_backend as nc
from nccl_core_backend import _C
here = os.path.realpath(os.getcwd())
assert os.path.realpath(_C.__file__).startswith(here + os.sep), _C.__file__
want = tuple(int(x) for x in os.environ["NCCL_CORE_EXPECT_NCCL"].split("."))
got, built = nc.nccl_version(), _C.build_nccl_version()
print("   loaded NCCL", ".".join(map(str, got)), "built against", built)
sys.exit(0 if got == want and built == want[0] * 10000 + want[1] * 100 + want[2] else 1)
' >"$work/log/pytest.log" 2>&1
      rc=$?
      if [[ $rc -eq 0 ]]; then
        run_here -m pytest tests/cpu -q -p no:cacheprovider >>"$work/log/pytest.log" 2>&1
        rc=$?
      fi
      tests=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$work/log/pytest.log" |
              tail -1 | sed -E 's/^=+ //; s/ =+$//')
      [[ -n "$tests" ]] || tests="pytest rc=$rc"
      if [[ $rc -ne 0 ]]; then
        tail -30 "$work/log/pytest.log"
        status="tests failed"
      fi
    else
      grep -E 'error|static assertion' "$work/log/build.log" | head -20
      tail -5 "$work/log/build.log"
      build="FAILED"
      status="build failed"
    fi
  fi
  secs=$(( $(date +%s) - t0 ))
  [[ $status == ok* ]] || FAILED=1
  echo "   build: $build; tests: $tests; ${secs}s; $status"
  RESULTS+=("| $v | $build | $tests | $secs | $status |")
done

{
  echo "NCCL build matrix, $(date -u +%Y-%m-%dT%H:%MZ), torch $("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null), $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)"
  echo
  echo "| NCCL | build | CPU tests | seconds | result |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${RESULTS[@]}"
} | tee "$DIR/summary.md"
exit $FAILED
