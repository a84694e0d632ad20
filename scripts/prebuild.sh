#!/usr/bin/env bash
# Builds nccl_core's extensions here for the GPU host's Python (3.12) and one
# torch, so that device calls install them instead of building there (a build
# costs 150-250 s of device time): scripts/gpu-build.sh takes them from
# stage/prebuilt-TORCH/ when that folder is carried and its sources hash
# (scripts/sources-hash.sh) is the tree's.  Build folder, Python environment
# and results stay under stage/ (git-ignored via .git/info/exclude).
#   bash scripts/prebuild.sh 2.15.0     # against torch 2.15's NCCL 2.30.7 headers
#   bash scripts/prebuild.sh 2.11.0     # the image's torch, NCCL 2.28.9 (CUDA_HOME)
# PREBUILD_SRC names another build folder.  Then carry stage/prebuilt-2.15.0 (a few MB) in any device call before the
# build; gpu-build.sh says "prebuilt extensions installed" when it used them.
# Needs: pyenv's Python 3.12 (PYTHON312 to name another), the CUDA toolkit,
# and the nvidia/ libraries scripts/setup.sh installed for python3 (torch's
# import loads them; linking against their NCCL only where asked).
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version=${1:?usage: prebuild.sh TORCH_VERSION}
py312=${PYTHON312:-$(ls -d "$HOME"/.pyenv/versions/3.12*/bin/python 2>/dev/null | tail -1)}
[ -x "$py312" ] || { echo "no Python 3.12 (set PYTHON312)"; exit 1; }
nvidia=$(python3 -c "import nvidia, os; print(list(nvidia.__path__)[0])")
venv=stage/venv-torch-$torch_version
src=stage/prebuild-src-$torch_version
dest=stage/prebuilt-$torch_version
mkdir -p stage .git/info
grep -qx '/stage/' .git/info/exclude 2>/dev/null || echo '/stage/' >> .git/info/exclude
if [ ! -x "$venv/bin/python" ]; then
  "$py312" -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps "torch==$torch_version"
  "$venv/bin/pip" install -q "setuptools<82" wheel ninja pybind11 numpy typing_extensions sympy filelock jinja2 networkx fsspec
  ln -s "$nvidia" "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/nvidia"
fi
# The torch releases' own NCCL headers, as the GPU host builds: torch 2.11's
# is CUDA_HOME's 2.28.9 here, torch 2.15's the nvidia-nccl wheel's 2.30.7.
case "$torch_version" in
  2.11.*) nccl_home=${CUDA_HOME:-/usr/local/cuda} ;;
  *) nccl_home=$nvidia/nccl ;;
esac
# A copy of the tree as it is (uncommitted changes too), built in place; its
# build/ stays, so a later run recompiles only what changed (tar keeps the
# files' times).
root=$PWD
src=${PREBUILD_SRC:-$src}
mkdir -p "$src"
find "$src" -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
tar --exclude=./stage --exclude=./build --exclude='*.so' --exclude=./.git --exclude=./.whl -cf - . | tar -C "$src" -xf -
t0=$(date +%s)
(cd "$src" && TORCH_DEVICE_BACKEND_AUTOLOAD=0 NCCL_HOME=$nccl_home MAX_JOBS=${MAX_JOBS:-2} \
   "$root/$venv/bin/python" setup.py build_ext --inplace > build.log 2>&1) \
  || { tail -40 "$src/build.log"; echo "PREBUILD FAILED"; exit 1; }
rm -rf "$dest" && mkdir -p "$dest"
for so in "$src"/nccl_core_backend/*.cpython-312-*.so; do
  strip --strip-debug -o "$dest/$(basename "$so")" "$so"
  xz -T0 -6 "$dest/$(basename "$so")"
done
bash scripts/sources-hash.sh > "$dest/sources.sha256"
echo "$torch_version" > "$dest/torch"
echo "prebuilt in $(( $(date +%s) - t0 ))s:"; ls -l "$dest"
