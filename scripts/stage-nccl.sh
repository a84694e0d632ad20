#!/usr/bin/env bash
# Prepares another NCCL release for a trial on the GPU host, which has no
# package index: downloads the nvidia-nccl-cu13 wheel here and splits its
# libnccl.so.2 (xz) into parts under stage/VERSION/ (git-ignored via
# .git/info/exclude), each small enough for one device call's carry.
#   bash scripts/stage-nccl.sh 2.30.7
# Then one device call per part, back to back so the host stays warm
# (carry ["stage/2.30.7/part00"]:  mkdir -p /tmp/nccl-2.30.7 && cp stage/2.30.7/part00 /tmp/nccl-2.30.7/),
# and with the last part:  bash scripts/gpu-trial-nccl.sh 2.30.7 --quick
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: stage-nccl.sh VERSION}
tmp=$(mktemp -d)
python3 -m pip download --no-deps "nvidia-nccl-cu13==$version" -d "$tmp" >/dev/null
unzip -q -o "$tmp"/*.whl 'nvidia/nccl/lib/libnccl.so.2' -d "$tmp"
mkdir -p "stage/$version" .git/info
grep -qx '/stage/' .git/info/exclude 2>/dev/null || echo '/stage/' >> .git/info/exclude
rm -f "stage/$version"/part*
# 60 MB parts: one part and the working tree stay under a call's 64 MiB.
xz -T0 -c "$tmp/nvidia/nccl/lib/libnccl.so.2" | split -b 60000000 -d - "stage/$version/part"
rm -rf "$tmp"
ls -l "stage/$version/"
