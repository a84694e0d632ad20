#!/usr/bin/env bash
# Runs GPU tiers against another NCCL release on the GPU host, which has no
# package index: the release is staged here by scripts/stage-nccl.sh VERSION
# and its parts copied to /tmp/nccl-VERSION/ by earlier device calls.
#   bash scripts/gpu-trial-nccl.sh 2.30.7 --quick
#   bash scripts/gpu-trial-nccl.sh 2.32.3 --part error-modes
# The extension is the one built for the host's NCCL (same soname); the other
# library is preloaded so torch and nccl_core both use it.  Everything after
# VERSION goes to scripts/gpu-test.sh (default --quick); logs as there.
set -uo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: gpu-trial-nccl.sh VERSION [--quick | --part NAME ...]}
shift
[ $# -eq 0 ] && set -- --quick
staged=${NCCL_CORE_STAGED:-/tmp/nccl-$version}
lib=$staged/libnccl.so.2
if [ ! -f "$lib" ]; then
  # Parts copied in from stage/VERSION/ (carried, or left by earlier calls).
  if ls "stage/$version"/part* >/dev/null 2>&1; then
    mkdir -p "$staged" && cp "stage/$version"/part* "$staged"/
  fi
  ls "$staged"/part* >/dev/null 2>&1 || { echo "no staged parts of NCCL $version in $staged or stage/$version"; exit 1; }
  cat "$staged"/part* | xz -d > "$lib.tmp" && mv "$lib.tmp" "$lib" || exit 1
fi
# Built (or found built) before the preload, so the version check below can
# import it; gpu-test.sh then reuses that build.
bash scripts/gpu-build.sh || exit 1
export NCCL_CORE_SKIP_BUILD=1
export LD_PRELOAD=$lib
seen=$(TORCH_DEVICE_BACKEND_AUTOLOAD=0 python3 -c "import nccl_core_backend as n; print('.'.join(map(str, n.nccl_version())))")
echo "NCCL loaded: $seen"
[ "$seen" = "$version" ] || { echo "expected NCCL $version, the process loaded $seen"; exit 1; }
NCCL_CORE_GPU_TAG=${NCCL_CORE_GPU_TAG:-nccl-$version} bash scripts/gpu-test.sh "$@"
