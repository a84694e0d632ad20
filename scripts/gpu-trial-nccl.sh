#!/usr/bin/env bash
# Runs the GPU suite against a newer NCCL staged with scripts/stage-nccl.sh
# (GPU host; the parts already copied to /tmp/nccl by earlier calls):
#   bash scripts/gpu-trial-nccl.sh
# Configurations default from the GPU count (1: 1:eager,2:eager, the 2 ranks
# as simulated hosts; 2-3: 2:eager; 4+: 2:eager,4:eager);
# NCCL_CORE_GPU_CONFIGS overrides.
# The extension is the one built for the host's NCCL (same soname); the newer
# library is preloaded so torch and nccl_core both use it.  Logs go to
# ${OUT:-out}/ like scripts/gpu-test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
# NCCL_CORE_STAGED names the folder of the parts (default /tmp/nccl), so that
# two releases can be staged on one warm host.
staged=${NCCL_CORE_STAGED:-/tmp/nccl}
lib=$staged/libnccl.so.2
if [ ! -f "$lib" ]; then
  ls "$staged"/part* >/dev/null 2>&1 || { echo "no staged parts in $staged"; exit 1; }
  cat "$staged"/part* | xz -d > "$lib" || exit 1
fi
export LD_PRELOAD=$lib
python3 -c "import torch; print('NCCL seen by torch:', torch.cuda.nccl.version())"
# Launch configurations from the host's GPUs unless NCCL_CORE_GPU_CONFIGS
# says otherwise: a 1-GPU host runs the cases that hold at one rank.
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
case "$gpus" in
  ''|0) default_configs=1:eager ;;   # the suite skips every case, saying why
  1) default_configs=1:eager,2:eager ;;  # 2 ranks as simulated hosts
  2|3) default_configs=2:eager ;;
  *) default_configs=2:eager,4:eager ;;
esac
echo "GPUs: $gpus; configs: ${NCCL_CORE_GPU_CONFIGS:-$default_configs}"
NCCL_CORE_GPU_CONFIGS=${NCCL_CORE_GPU_CONFIGS:-$default_configs} \
NCCL_CORE_GPU_SKIP=${NCCL_CORE_GPU_SKIP:-soak_no_leaks} \
NCCL_CORE_GPU_TESTS=${NCCL_CORE_GPU_TESTS:-tests/gpu/test_gpu_suite.py} \
  bash scripts/gpu-test.sh "$@"
