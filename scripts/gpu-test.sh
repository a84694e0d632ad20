#!/usr/bin/env bash
# Builds nccl_core on a GPU host and runs the GPU suite in tiers
# (tests/gpu/tiers.py):
#   bash scripts/gpu-test.sh --quick          every case family at 1 and 2 ranks,
#                                             build included, <= 8 min on one H200
#   bash scripts/gpu-test.sh --part suite-2   named parts, each <= 9 min on one H200
#   bash scripts/gpu-test.sh --list-parts     what each part runs (no build)
#   bash scripts/gpu-test.sh                  every part, one after another
# Where the GPUs are fewer than a job's ranks, the ranks run as simulated
# hosts (nccl_core_backend/simhosts.py); cases that need NVLink peers skip
# with the reason.  Logs are packed into ${OUT:-out}/logs-$NCCL_CORE_GPU_TAG.tgz
# (the device tool returns few files).  Ends with the table of jobs, their
# wall times and pass/fail/skip counts.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
if [ "${1:-}" = --list-parts ]; then
  exec python3 -m tests.gpu.tiers --list-parts
fi
[ $# -eq 0 ] && set -- --all
DEST=${OUT:-out}
LOG_DIR=$(mktemp -d /tmp/nccl_core_gpu_logs.XXXX)
mkdir -p "$DEST"
# NCCL_CORE_GPU_TAG names this call's archive, so two runs in one device call
# do not overwrite each other's logs.
TAG=${NCCL_CORE_GPU_TAG:-gpu}
trap 'tar czf "$DEST/logs-$TAG.tgz" -C "$LOG_DIR" . 2>/dev/null' EXIT
t_start=$(date +%s)
{
  echo "== host"; nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
} 2>&1 | tee "$LOG_DIR/env.log"
echo "== build"
bash scripts/gpu-build.sh "$LOG_DIR/build.log" || exit 1
echo "== GPU tests: $*"
# NCCL_CORE_GPU_BUDGET_S bounds the jobs (per part with --all), so that the
# logs are packed even when the device call's own limit is near.
python3 -m tests.gpu.tiers "$@" --log-dir "$LOG_DIR"
rc=$?
echo "== wall time, build included: $(( $(date +%s) - t_start )) s"
exit $rc
