#!/usr/bin/env bash
# Runs the image torch's checks in the background of a GPU host, so the GPU
# works while later device calls carry another torch's parts in
# (scripts/stage-torch.sh) and build it.  The checks run from a copy of the
# tree in /tmp/tree-image, built there (PYTHONPATH keeps its imports apart
# from the main tree's build), in a process session of their own (the device
# tool ends a call's other processes when it returns); each step's log and
# results gather in /tmp/background/.  The host must be kept warm by calls
# back to back until `done` appears.  Two GPU tiers at once slow each other
# past their budgets: give the background the GPU while the foreground
# carries and builds, or CPU-bound steps (cpu tests, conformance) otherwise.
#   bash scripts/gpu-background.sh start STEP...   # in order; STEP is one of
#        quick[:BUDGET_S]     the quick tier (default budget 560 s)
#        part:NAME[,NAME]     parts of gpu-test.sh (its --list-parts)
#        conformance[:S]      torch's suite at world 1, both backends at once
#                             (default 330 s per backend)
#   bash scripts/gpu-background.sh status      # each log's tail; copies to $OUT
#   bash scripts/gpu-background.sh wait SECONDS  # status once done or after SECONDS
set -uo pipefail
cd "$(dirname "$0")/.."
dir=/tmp/background
tree=/tmp/tree-image
status() {
  for f in "$dir"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 6 "$f"; }; done
  [ -f "$dir/done" ] && echo "== background done" || echo "== background still running"
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/background" && cp -r "$dir"/. "$OUT/background/"; fi
}
# One step, run inside the background session from $tree.
run_step() {
  local step=$1 name=${1%%:*} arg=${1#*:}
  [ "$arg" = "$step" ] && arg=""
  local log="$dir/${step//[:,]/-}.log"
  case "$name" in
    quick)
      OUT=$dir/quick NCCL_CORE_GPU_TAG=image-quick NCCL_CORE_GPU_BUDGET_S=${arg:-560} \
        bash scripts/gpu-test.sh --quick >"$log" 2>&1 ;;
    part)
      OUT=$dir/parts NCCL_CORE_GPU_TAG="image-${arg//,/-}" bash scripts/gpu-test.sh --part "$arg" >"$log" 2>&1 ;;
    conformance)
      OUT=$dir/conformance CONFORMANCE_WORLD=1 CONFORMANCE_PARALLEL=1 CONFORMANCE_WORKERS=8 \
        CONFORMANCE_TIMEOUT=${arg:-330} bash scripts/conformance.sh >"$log" 2>&1 ;;
    *) echo "unknown step $step" >"$log"; return 2 ;;
  esac
  echo "$step rc $?" >>"$log"
}
case "${1:-}" in
  start)
    shift
    [ $# -gt 0 ] || { echo "start needs steps: quick[:S] part:NAME conformance[:S]"; exit 2; }
    rm -rf "$tree" "$dir" && mkdir -p "$tree" "$dir"
    # The tree without staged parts or another build's outputs.
    tar --exclude=./stage --exclude=./build --exclude='*.so' --exclude=./.git -cf - . | tar -C "$tree" -xf -
    # Extensions prebuilt for the image's torch (scripts/prebuild.sh), where carried.
    for d in stage/prebuilt-*; do
      [ -d "$d" ] && mkdir -p "$tree/stage" && cp -r "$d" "$tree/stage/"
    done
    export -f run_step
    export dir
    setsid bash -c "
      cd $tree
      export PYTHONPATH=$tree NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      bash scripts/gpu-build.sh $dir/build.log > $dir/build-step.log 2>&1 || { touch $dir/done; exit 1; }
      export NCCL_CORE_SKIP_BUILD=1
      for step in $*; do run_step \"\$step\"; done
      touch $dir/done
    " >"$dir/session.log" 2>&1 </dev/null &
    echo "background started (pid $!): build, then $*"
    ;;
  status) status ;;
  wait)
    deadline=$(( $(date +%s) + ${2:-0} ))
    while [ ! -f "$dir/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 5; done
    status
    ;;
  *) echo "usage: gpu-background.sh start STEP... | status | wait SECONDS"; exit 2 ;;
esac
