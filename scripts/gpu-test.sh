#!/usr/bin/env bash
# Builds nccl_core and runs the whole GPU suite on every visible GPU, in one
# command (for the GPU host).  Where the GPUs are fewer than a configuration's
# ranks, the ranks run as simulated hosts (nccl_core_backend/simhosts.py):
# one GPU runs the 1-, 2- and 4-rank configurations, skipping with the reason
# the cases that need NVLink peers.  Logs are written under a work folder and packed
# into ${OUT:-out}/logs-$NCCL_CORE_GPU_TAG.tgz (the device tool returns few
# files).  Ends with pass/fail/skip counts.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
DEST=${OUT:-out}
LOG_DIR=$(mktemp -d /tmp/nccl_core_gpu_logs.XXXX)
mkdir -p "$DEST"
# NCCL_CORE_GPU_TAG names this call's archive, so two runs in one device call
# do not overwrite each other's logs.
TAG=${NCCL_CORE_GPU_TAG:-gpu}
trap 'tar czf "$DEST/logs-$TAG.tgz" -C "$LOG_DIR" . 2>/dev/null' EXIT
export NCCL_CORE_GPU_LOG_DIR="$LOG_DIR"
{
  echo "== host"; nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
} 2>&1 | tee "$LOG_DIR/env.log"
echo "== build"
t0=$(date +%s)
# NCCL_CORE_SKIP_BUILD=1 reuses the extension built by an earlier call on
# this (still warm) machine.
if [ "${NCCL_CORE_SKIP_BUILD:-0}" = 1 ] && python3 -c "import nccl_core_backend._C" 2>/dev/null; then
  echo "build skipped (NCCL_CORE_SKIP_BUILD=1)"
elif ! TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=${MAX_JOBS:-32} python3 -m pip install --no-build-isolation --no-deps --no-index -e . >"$LOG_DIR/build.log" 2>&1; then
  tail -50 "$LOG_DIR/build.log"; echo "BUILD FAILED"; exit 1
else
  echo "build ok in $(( $(date +%s) - t0 ))s"
fi
echo "== GPU suite (configs: ${NCCL_CORE_GPU_CONFIGS:-1:eager,2:eager,2:lazy,4:eager,4:lazy})"
# NCCL_CORE_GPU_TESTS picks what runs (default: everything under tests/gpu;
# e.g. tests/gpu/test_gpu_suite.py, then tests/gpu/test_examples.py when one
# call cannot hold both).
# NCCL_CORE_GPU_BUDGET_S bounds pytest so that the logs are packed even when
# the device call's own limit is near (a killed shell packs nothing).
# pytest runs in a session of its own, so that its launches (torchrun and
# their workers) can be ended by its process group id, never by name.
setsid python3 -m pytest ${NCCL_CORE_GPU_TESTS:-tests/gpu} -v -rs -p no:cacheprovider \
  --durations=15 "$@" >"$LOG_DIR/pytest-gpu.log" 2>&1 &
pytest_pid=$!
tail -n +1 -f --pid="$pytest_pid" "$LOG_DIR/pytest-gpu.log" &
deadline=$(( $(date +%s) + ${NCCL_CORE_GPU_BUDGET_S:-3000} ))
stopped=0
while kill -0 "$pytest_pid" 2>/dev/null; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    # Cut off by the budget: its launches would keep the GPUs busy.  torchrun
    # ends its workers on SIGTERM; SIGKILL follows for what is left.
    echo "GPU tests stopped by NCCL_CORE_GPU_BUDGET_S; ending pytest's process group $pytest_pid"
    kill -TERM -- "-$pytest_pid" 2>/dev/null
    sleep 10
    kill -KILL -- "-$pytest_pid" 2>/dev/null
    stopped=1
    break
  fi
  sleep 1
done
wait "$pytest_pid"
gpu_rc=$?
[ "$stopped" = 1 ] && gpu_rc=124
sleep 1  # tail follows the log to its end
echo "== CPU tests on the GPU host"
cpu_rc=0
if [ "${NCCL_CORE_SKIP_CPU:-0}" != 1 ]; then
  python3 -m pytest tests/cpu -q -rs -p no:cacheprovider 2>&1 | tee "$LOG_DIR/pytest-cpu.log"
  cpu_rc=${PIPESTATUS[0]}
fi
echo "== summary"
echo "GPU suite: $(tail -1 "$LOG_DIR/pytest-gpu.log")"
echo "CPU tests: $(tail -1 "$LOG_DIR/pytest-cpu.log" 2>/dev/null || echo skipped)"
[ "$gpu_rc" = 0 ] && [ "$cpu_rc" = 0 ]
