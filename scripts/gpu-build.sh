#!/usr/bin/env bash
# Builds nccl_core in place on a GPU host (no package index there), for
# scripts/gpu-test.sh and scripts/gpu-trial-nccl.sh.  NCCL_CORE_SKIP_BUILD=1
# reuses the extension an earlier call built on this (still warm) machine.
#   bash scripts/gpu-build.sh [BUILD_LOG]
# Where stage/prebuilt-TORCH/ was carried (scripts/prebuild.sh), it installs
# those extensions instead of building.
set -uo pipefail
cd "$(dirname "$0")/.."
log=${1:-/tmp/nccl_core_build.log}
t0=$(date +%s)
# Extensions prebuilt elsewhere for this torch, this Python and these very
# sources (scripts/prebuild.sh, carried as stage/prebuilt-TORCH/) are
# installed instead of built.
torch_version=$(TORCH_DEVICE_BACKEND_AUTOLOAD=0 python3 -c "import torch; print(torch.__version__.split('+')[0])")
py_tag=$(python3 -c "import sys; print(f'cpython-{sys.version_info[0]}{sys.version_info[1]}')")
prebuilt=stage/prebuilt-$torch_version
prebuilt_fits() {
  [ -f "$prebuilt/sources.sha256" ] || return 1
  ls "$prebuilt"/*."$py_tag"-*.so.xz >/dev/null 2>&1 || { echo "$prebuilt holds no $py_tag build: building"; return 1; }
  [ "$(cat "$prebuilt/sources.sha256")" = "$(bash scripts/sources-hash.sh)" ] \
    || { echo "$prebuilt was built from other sources: building"; return 1; }
}
pip_install() {
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=${MAX_JOBS:-32} python3 -m pip install --no-build-isolation --no-deps --no-index -e . >"$log" 2>&1 \
    || { tail -50 "$log"; echo "BUILD FAILED"; exit 1; }
}
# Unpacked and installed; where they do not load here, the build follows.
install_prebuilt() {
  for f in "$prebuilt"/*."$py_tag"-*.so.xz; do
    xz -dc "$f" > "nccl_core_backend/$(basename "$f" .xz)" || return 1
  done
  NCCL_CORE_PREBUILT=1 pip_install
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 python3 -c "import nccl_core_backend._C, nccl_core_backend._testing" \
    || { echo "the prebuilt extensions in $prebuilt do not load here: building"
         rm -f nccl_core_backend/*."$py_tag"-*.so; return 1; }
}
if [ "${NCCL_CORE_SKIP_BUILD:-0}" = 1 ] && python3 -c "import nccl_core_backend._C" 2>/dev/null; then
  echo "build skipped (NCCL_CORE_SKIP_BUILD=1)"
elif prebuilt_fits && install_prebuilt; then
  echo "prebuilt extensions installed in $(( $(date +%s) - t0 ))s ($prebuilt, torch $torch_version)"
else
  pip_install
  echo "build ok in $(( $(date +%s) - t0 ))s"
fi
