#!/usr/bin/env bash
# Namesake barriers against full ones, one build, on a host of 2+ NVLink GPUs
# (bench/NOTES.md section 25).  Run from the repository root with both patches
# of bench/pending applied (or in the tree):
#   WORLD=4 bash bench/pending/measure-namesake.sh      # then WORLD=2, NCCL_CORE_SKIP_BUILD=1
# Graphs of bf16 all_reduce on the barrier kernels at every size (one way off),
# NCCL_CORE_NAMESAKE_BARRIERS=0 and 1 alternating, two runs each beside `nccl`
# and torch's symm_mem kernels; then the table's defaults (one way on) with
# namesake barriers.  JSONs and logs go to $OUT (or /tmp/out).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
W=${WORLD:-4}
t0=$(date +%s)
bash scripts/gpu-build.sh "$O/build.log" || exit 1
bench() {  # name, env...
  local name=$1; shift
  env "$@" timeout "${BENCH_T:-150}" torchrun --nproc-per-node="$W" -m nccl_core_backend.bench \
    --ops all_reduce --dtype bfloat16 --graph 100 --anchor symm_mem --sizes 8KiB-1MiB \
    --rounds 2 --json "$O/$name.json" > "$O/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - t0 )) s"
  grep -E "^\| *[0-9]" "$O/$name.log" | head -12
}
for run in 1 2; do
  bench "w${W}-full-$run" NCCL_CORE_ONE_WAY_MAX_BYTES=0 NCCL_CORE_NAMESAKE_BARRIERS=0
  bench "w${W}-namesake-$run" NCCL_CORE_ONE_WAY_MAX_BYTES=0 NCCL_CORE_NAMESAKE_BARRIERS=1
done
bench "w${W}-defaults" NCCL_CORE_NAMESAKE_BARRIERS=1
echo "total $(( $(date +%s) - t0 )) s"
