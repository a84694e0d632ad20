#!/usr/bin/env bash
# The README job's speed where ranks share one GPU as simulated hosts (NCCL's
# socket transport over loopback): the bench command at 2 ranks, nccl_core
# beside backend nccl, all_reduce 1 KiB - 64 MiB, once with NCCL's defaults and
# once per extra setting given (each "VAR=value[,VAR=value]", at 4 KiB, 256 KiB
# and 4 MiB: NCCL_CORE_SPEED_VARIANT_SIZES), plus the
# transport NCCL reports for the first run (NCCL_DEBUG=INFO lines).  For a
# GPU host after the build (gpu-test.sh or gpu-trial-torch.sh --run).
#   bash scripts/simhosts-speed.sh "NCCL_SOCKET_NTHREADS=4,NCCL_NSOCKS_PERTHREAD=4"
# JSON per run under ${OUT:-out}/simhosts-speed-*.json; the tables are printed.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
DEST=${OUT:-out}
mkdir -p "$DEST"
sizes=${NCCL_CORE_SPEED_SIZES:-1KiB-64MiB}
variant_sizes=${NCCL_CORE_SPEED_VARIANT_SIZES:-4KiB,256KiB,4MiB}
run() {
  local tag=$1 settings=$2 sizes=$3
  local envs=()
  if [ -n "$settings" ]; then
    IFS=, read -ra envs <<< "$settings"
  fi
  echo "== simulated hosts, 2 ranks, all_reduce $sizes: ${settings:-NCCL defaults}"
  env "${envs[@]}" NCCL_CORE_SIM_HOSTS=1 timeout 240 torchrun --standalone --nproc-per-node=2 \
    -m nccl_core_backend.bench --ops all_reduce --sizes "$sizes" --json "$DEST/simhosts-speed-$tag.json" \
    > "$DEST/simhosts-speed-$tag.log" 2>&1 || echo "run $tag: exit $?"
  grep -E "^\||^#|ratio|torch|NCCL" "$DEST/simhosts-speed-$tag.log" | head -40
}
run defaults "" "$sizes"
echo "== what NCCL chose (rank 0, first run's settings)"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV NCCL_CORE_SIM_HOSTS=1 timeout 120 torchrun --standalone \
  --nproc-per-node=2 -m nccl_core_backend.bench --ops all_reduce --sizes 4MiB --iters 5 --rounds 1 \
  2>&1 | grep -E "NCCL INFO (NET|Channel 00|Using|comm .* rank 0|.*via|NCCL_)" | sort -u | head -30
i=0
for settings in "$@"; do
  i=$((i + 1))
  run "extra$i" "$settings" "$variant_sizes"
done
