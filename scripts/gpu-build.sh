#!/usr/bin/env bash
# Builds nccl_core in place on a GPU host (no package index there), for
# scripts/gpu-test.sh and scripts/gpu-trial-nccl.sh.  NCCL_CORE_SKIP_BUILD=1
# reuses the extension an earlier call built on this (still warm) machine.
#   bash scripts/gpu-build.sh [BUILD_LOG]
set -uo pipefail
cd "$(dirname "$0")/.."
log=${1:-/tmp/nccl_core_build.log}
t0=$(date +%s)
if [ "${NCCL_CORE_SKIP_BUILD:-0}" = 1 ] && python3 -c "import nccl_core_backend._C" 2>/dev/null; then
  echo "build skipped (NCCL_CORE_SKIP_BUILD=1)"
elif ! TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=${MAX_JOBS:-32} python3 -m pip install --no-build-isolation --no-deps --no-index -e . >"$log" 2>&1; then
  tail -50 "$log"; echo "BUILD FAILED"; exit 1
else
  echo "build ok in $(( $(date +%s) - t0 ))s"
fi
