#!/usr/bin/env bash
# The torch-tooling checks that are not GPU cases (GPU host, after
# scripts/gpu-test.sh built the extension): a profiler trace of
# examples/ddp_train.py summarised by scripts/trace_table.py, and the
# bench's --tooling rows.  World size: every visible GPU (NCCL_CORE_WORLD to
# choose; more ranks than GPUs run as simulated hosts, tooling only).
# Results go to ${OUT:-out}/tools/.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_DEVICE_BACKEND_AUTOLOAD=0
out=${OUT:-out}/tools
mkdir -p "$out"
world=${NCCL_CORE_WORLD:-$(python3 -c "import torch; print(torch.cuda.device_count())")}
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
if [[ "$world" -le "$gpus" && -z "${NCCL_CORE_TOOLING_ONLY:-}" ]]; then
  echo "== ddp_train trace (world $world)"
  timeout 300 torchrun --nproc-per-node="$world" examples/ddp_train.py --steps 30 \
    --trace-out "$out/ddp_trace.json" --trace-steps 3 2>&1 | tail -4
  python3 scripts/trace_table.py "$out/ddp_trace.json" --markdown | tee "$out/ddp_trace_table.md"
  gzip -f "$out/ddp_trace.json"
fi
echo "== tooling cost (world $world)"
# NCCL_CORE_TOOLING_ARGS: more bench options (simulated hosts: fewer --iters).
timeout 300 torchrun --nproc-per-node="$world" -m nccl_core_backend.bench --tooling \
  --json "$out/tooling_w$world.json" ${NCCL_CORE_TOOLING_ARGS:-} 2>&1 | tail -14
