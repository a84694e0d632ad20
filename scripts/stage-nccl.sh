#!/usr/bin/env bash
# Prepares a newer NCCL for a trial on the GPU host, which has no package
# index: downloads the nvidia-nccl-cu13 wheel here, and splits its
# libnccl.so.2 (xz) into parts under stage/ (git-ignored via
# .git/info/exclude) small enough for the device tool's carry limit.
#   bash scripts/stage-nccl.sh 2.29.7
# Then, one device call per part (consecutive, so the host stays warm):
#   carry ["stage/part00"]:  mkdir -p /tmp/nccl && cp stage/part00 /tmp/nccl/
#   ... and with the last part (after gpu-test.sh has built the extension):
#   NCCL_CORE_SKIP_BUILD=1 bash scripts/gpu-trial-nccl.sh
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: stage-nccl.sh VERSION}
tmp=$(mktemp -d)
python3 -m pip download --no-deps "nvidia-nccl-cu13==$version" -d "$tmp" >/dev/null
unzip -q -o "$tmp"/*.whl 'nvidia/nccl/lib/libnccl.so.2' -d "$tmp"
mkdir -p stage .git/info
grep -qx 'stage/' .git/info/exclude 2>/dev/null || echo 'stage/' >> .git/info/exclude
rm -f stage/part*
xz -T0 -c "$tmp/nvidia/nccl/lib/libnccl.so.2" | split -b 49000000 -d - stage/part
rm -rf "$tmp"
ls -l stage/
