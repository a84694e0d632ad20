#!/usr/bin/env bash
# The one-GPU checks of the patches in bench/pending (README.md there): build; the emulated
# cases, the fast-path cases with the grid cap at 64, the grid-caps case at 2 ranks
# (simulated hosts).  Exits nonzero where any of them failed.  About 3 min with the build.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
t0=$(date +%s)
MAX_JOBS=16 bash scripts/gpu-build.sh "$O/build.log" || exit 1
run() {  # name, command...: its log in $O/name.log, its status in $O/name.rc
  local name=$1; shift
  "$@" > "$O/$name.log" 2>&1; local rc=$?
  echo $rc > "$O/$name.rc"
  echo "$name rc=$rc $(tail -1 "$O/$name.log") at $(( $(date +%s) - t0 )) s"
}
P="python3 -m pytest -q -rs -p no:cacheprovider -o addopts= tests/gpu/test_gpu_suite.py"
EM=emulated_all_reduce_every_type_and_op,emulated_all_reduce_sizes_around_the_edges,emulated_back_to_back_calls_share_the_halves,emulated_reduce_scatter,emulated_copies,emulated_mismatched_calls_move_no_data,emulated_ranks_that_never_meet_are_aborted,emulated_one_way_and_barrier_calls_back_to_back,emulated_ranks_aligned_differently
FP=fast_path_reductions_match_reference,fast_path_copies_match_reference,fast_path_back_to_back_and_graphs,fast_path_grid_changes_between_calls
run em env NCCL_CORE_GPU_CONFIGS=1:eager NCCL_CORE_GPU_ONLY=$EM $P & a=$!
run fp64 env NCCL_CORE_FAST_PATH_MAX_BLOCKS=64 NCCL_CORE_GPU_CONFIGS=1:eager NCCL_CORE_GPU_ONLY=$FP $P & b=$!
run caps env NCCL_CORE_GPU_CONFIGS=2:eager NCCL_CORE_GPU_ONLY=fast_path_grid_caps_are_the_groups_smallest $P & c=$!
wait $a $b $c
grep -h "FAILED\|^E  " "$O/em.log" "$O/fp64.log" "$O/caps.log" | head -20
echo "total $(( $(date +%s) - t0 )) s"
[ "$(cat "$O/em.rc" "$O/fp64.rc" "$O/caps.rc" | sort -u)" = 0 ]
