#!/usr/bin/env bash
# The never-slower measurements with `python -m nccl_core_backend.bench` on a GPU
# host (after scripts/gpu-build.sh): for each world size, every op 8 B - 1 GiB;
# all_reduce bf16 1 KiB - 16 MiB with CUDA graphs beside torch's SymmetricMemory
# kernels, nccl_core's host phases and each kind's GPU time; then the
# workloads, and DDP/FSDP2 again with nccl_core's groups on high-priority
# streams (run "priority").  Each run ends with the rows more than 2 % slower than nccl (the
# report's SLOWER line).  JSON and logs go to ${OUT:-out}/never-slower.tgz.
#   NCCL_CORE_BENCH_WORLDS  world sizes (default "2 4"; those above the GPUs are left out)
#   NCCL_CORE_BENCH_RUNS    which runs (default "sweep anchor workloads priority")
set -uo pipefail
source "$(dirname "$0")/gpu-results.sh" never-slower
bench() {  # name world args...
  local name=$1 n=$2
  shift 2
  echo "== $name, $n GPUs"
  timeout "${NCCL_CORE_BENCH_TIMEOUT:-420}" torchrun --standalone --nproc-per-node="$n" \
    -m nccl_core_backend.bench "$@" --json "$WORK/$name-$n.json" > "$WORK/$name-$n.log" 2>&1 \
    || echo "$name at $n GPUs: exit $?"
  grep -E "^\| |^SLOWER|^UNSTEADY|^WRONG|^anchor|^nccl_core vs" "$WORK/$name-$n.log" | head -400
}
for n in ${NCCL_CORE_BENCH_WORLDS:-2 4}; do
  [ "$gpus" -ge "$n" ] || { echo "== $n GPUs: this host has $gpus"; continue; }
  for run in ${NCCL_CORE_BENCH_RUNS:-sweep anchor workloads priority}; do
    case $run in
      sweep) bench sweep "$n" --sizes 8B-1GiB ;;
      anchor) bench anchor "$n" --ops all_reduce --sizes 1KiB-16MiB --dtype bfloat16 --graph \
                --anchor symm_mem --host-phases --kernel-times ;;
      workloads) bench workloads "$n" --workloads ;;
      priority) bench priority "$n" --workloads ddp,fsdp --high-priority nccl_core ;;
      *) echo "unknown run $run (sweep, anchor, workloads, priority)"; exit 2 ;;
    esac
  done
done
