#!/usr/bin/env bash
# Runs the GPU tiers, torch's suite or any command on the GPU host under
# another torch, staged here by scripts/stage-torch.sh VERSION and copied to
# /tmp/torch-VERSION/ part by part by earlier device calls (or carried in
# stage/torch-VERSION/).  The wheels are unpacked into one folder put first on
# PYTHONPATH; the image's other nvidia/* libraries (CUDA runtime, cuBLAS,
# cuDNN, ...) are linked into its nvidia/ folder, since torch finds its
# libraries at $ORIGIN/../../nvidia/.  The extension is built against that
# torch and the NCCL it brought (NCCL_HOME).
#   bash scripts/gpu-trial-torch.sh 2.15.0 --quick           # like gpu-test.sh
#   bash scripts/gpu-trial-torch.sh 2.15.0 --part error-modes
#   bash scripts/gpu-trial-torch.sh 2.15.0 --conformance [pytest args]
#                                     # torch's suite (scripts/conformance.sh)
#   bash scripts/gpu-trial-torch.sh 2.15.0 --run CMD ARGS...  # any command
# The unpacked torch stays in /tmp/torch-VERSION/site for later calls on the
# same (warm) host; so does the build (NCCL_CORE_SKIP_BUILD=1 is then set).
set -uo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: gpu-trial-torch.sh VERSION [--quick | --part NAME | --conformance ... | --run CMD ...]}
shift
[ $# -eq 0 ] && set -- --quick
staged=${NCCL_CORE_STAGED_TORCH:-/tmp/torch-$version}
site=$staged/site
if [ ! -f "$site/.complete" ]; then
  if ls "stage/torch-$version"/part* >/dev/null 2>&1; then
    mkdir -p "$staged" && cp "stage/torch-$version"/part* "$staged"/
  fi
  ls "$staged"/part* >/dev/null 2>&1 || { echo "no staged parts of torch $version in $staged"; exit 1; }
  rm -rf "$staged/wheels" "$site" && mkdir -p "$staged/wheels" "$site"
  cat "$staged"/part* | tar -C "$staged/wheels" -xf - || { echo "the staged parts do not make a whole tar"; exit 1; }
  for w in "$staged"/wheels/*.whl; do
    python3 -m zipfile -e "$w" "$site" || { echo "cannot unpack $w"; exit 1; }
  done
  rm -rf "$staged/wheels" "$staged"/part*
  image_nvidia=$(python3 -c "import nvidia, os; print(list(nvidia.__path__)[0])" 2>/dev/null)
  if [ -n "$image_nvidia" ]; then
    for d in "$image_nvidia"/*/; do
      name=$(basename "$d")
      [ -e "$site/nvidia/$name" ] || ln -s "${d%/}" "$site/nvidia/$name"
    done
  fi
  touch "$site/.complete"
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
export NCCL_HOME=$site/nvidia/nccl
seen=$(TORCH_DEVICE_BACKEND_AUTOLOAD=0 python3 -c "import torch; print(torch.__version__.split('+')[0])") || exit 1
echo "torch loaded: $seen from $site"
[ "$seen" = "$version" ] || { echo "expected torch $version, the process loaded $seen"; exit 1; }
# Built once per host for this torch (an extension built for the image's torch
# does not load under another); NCCL_CORE_REBUILD=1 builds again.
marker=$site/.built
if [ ! -f "$marker" ] || [ "${NCCL_CORE_REBUILD:-0}" = 1 ]; then
  NCCL_CORE_SKIP_BUILD=0 bash scripts/gpu-build.sh || exit 1
  touch "$marker"
fi
export NCCL_CORE_SKIP_BUILD=1
export NCCL_CORE_GPU_TAG=${NCCL_CORE_GPU_TAG:-torch-$version}
case "$1" in
  --conformance) shift; exec bash scripts/conformance.sh "$@" ;;
  --run) shift; exec "$@" ;;
  *) exec bash scripts/gpu-test.sh "$@" ;;
esac
