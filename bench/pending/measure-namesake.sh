#!/usr/bin/env bash
# Namesake barriers against full ones, and grids of 64 blocks against 32, in
# one build on a host of 2+ NVLink GPUs (bench/results/grid-caps-namesake-1gpu-h200-2026-11-29.md).  Run from
# the repository root with the patches of bench/pending applied (or in the tree):
#   WORLD=4 PASSES=1 CHECKS=1 bash bench/pending/measure-namesake.sh      # build, checks, a pass
#   WORLD=4 PASSES=2 NCCL_CORE_SKIP_BUILD=1 bash bench/pending/measure-namesake.sh   # within 30 s
#   WORLD=2 PASSES="1 2" NCCL_CORE_SKIP_BUILD=1 bash bench/pending/measure-namesake.sh
# (a pass is one bench run a configuration, about a minute each at 4 ranks (not yet timed):
# a device call holds at most 10 min, the build about 2.5 of them).
# Graphs of bf16 all_reduce, 8 KiB - 1 MiB, on the barrier kernels at every
# size (one way off), beside `nccl` and torch's symm_mem kernels, for each of
# (barrier, cap) = (full, 32) (main's kernels), (namesake, 32), (namesake, 64)
# (CONFIGS: which), in that order and then reversed; then their table (ab_table.py).
# JSONs and logs go to $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
W=${WORLD:-4}
t0=$(date +%s)
if [ "${CHECKS:-0}" = 1 ]; then  # the one-GPU checks first (they build): no measurement of broken kernels
  OUT="$O/checks" CUDA_VISIBLE_DEVICES=0 bash bench/pending/one-gpu-checks.sh || { echo "CHECKS FAILED"; exit 1; }
else
  bash scripts/gpu-build.sh "$O/build.log" || exit 1
fi
bench() {  # name, env...
  local name=$1; shift
  env "$@" NCCL_CORE_ONE_WAY_MAX_BYTES=0 timeout "${BENCH_T:-100}" torchrun --nproc-per-node="$W" \
    -m nccl_core_backend.bench --ops all_reduce --dtype bfloat16 --graph 100 --anchor symm_mem \
    --sizes 8KiB-1MiB --rounds 2 --json "$O/$name.json" > "$O/$name.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - t0 )) s"
}
configs=${CONFIGS:-full-32 namesake-32 namesake-64}  # add full-64 to repeat the stalls of 2026-11-27
for pass in ${PASSES:-1 2}; do
  order=$configs; [ $pass = 2 ] && order=$(echo $configs | tr ' ' '\n' | tac | tr '\n' ' ')
  for c in $order; do
    barrier=${c%-*}; cap=${c#*-}
    bench "w${W}-$c-$pass" NCCL_CORE_NAMESAKE_BARRIERS=$([ $barrier = namesake ] && echo 1 || echo 0) \
      NCCL_CORE_FAST_PATH_MAX_BLOCKS=$cap
  done
done
python3 bench/pending/ab_table.py "$W" "$O"  # this call's passes; all of them: give each call's folder
echo "total $(( $(date +%s) - t0 )) s"
