# Sourced by the GPU benchmark scripts: NVLink multicast off, a work folder
# packed into ${OUT:-out}/$1.tgz when the script ends, and $gpus.
#   source scripts/gpu-results.sh NAME     (then write results under $WORK)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
DEST=${OUT:-out}
WORK=$(mktemp -d "/tmp/nccl_core_$1.XXXX")
RESULTS_NAME=$1
mkdir -p "$DEST"
trap 'tar czf "$DEST/$RESULTS_NAME.tgz" -C "$WORK" . 2>/dev/null' EXIT
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
