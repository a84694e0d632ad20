#!/usr/bin/env bash
# Prepares another torch for the GPU host, which has no package index: downloads
# here the wheels that torch needs beyond the host's image (torch itself, its
# NCCL, NVSHMEM and cuSPARSELt, for CPython 3.12 on x86-64) and splits them, as
# one tar stream, into parts under stage/torch-VERSION/ (git-ignored via
# .git/info/exclude), each small enough for one device call's carry.
#   bash scripts/stage-torch.sh                 # torch 2.15.0 with NCCL 2.30.7
#   bash scripts/stage-torch.sh 2.15.0 2.30.7 3.7.2 0.8.1
# Then one device call per part, back to back so the host stays warm:
#   carry ["stage/torch-2.15.0/part00"]:
#     mkdir -p /tmp/torch-2.15.0 && cp stage/torch-2.15.0/part00 /tmp/torch-2.15.0/
# and, in the call after the last part:
#   bash scripts/gpu-trial-torch.sh 2.15.0 --quick
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version=${1:-2.15.0}
nccl_version=${2:-2.30.7}
nvshmem_version=${3:-3.7.2}
cusparselt_version=${4:-0.8.1}
dest="stage/torch-$torch_version"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# pip matches a manylinux tag exactly: name the ones these wheels are built for.
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_18_x86_64 \
         manylinux_2_17_x86_64 manylinux2014_x86_64; do
  platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$tmp" "torch==$torch_version" "nvidia-nccl-cu13==$nccl_version" \
  "nvidia-nvshmem-cu13==$nvshmem_version" "nvidia-cusparselt-cu13==$cusparselt_version"
# NVSHMEM's device bitcode (lib/*.bc, two thirds of its wheel) is for linking
# device code against NVSHMEM, which nothing here does: left out.
python3 - "$tmp" <<'PY'
import glob, os, sys, zipfile
for wheel in glob.glob(os.path.join(sys.argv[1], "nvidia_nvshmem*.whl")):
    slim = wheel + ".slim"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if not item.filename.endswith(".bc"):
                dst.writestr(item, src.read(item.filename))
    os.replace(slim, wheel)
PY
mkdir -p "$dest" .git/info
grep -qx '/stage/' .git/info/exclude 2>/dev/null || echo '/stage/' >> .git/info/exclude
rm -f "$dest"/part*
# 60 MB parts: one part and the working tree stay under a call's 64 MiB.
tar -C "$tmp" -cf - $(cd "$tmp" && ls *.whl) | split -b 60000000 -d - "$dest/part"
ls -l "$dest/"
echo "$(ls "$dest" | wc -l) parts: carry one a call, copied to /tmp/torch-$torch_version/ there"
