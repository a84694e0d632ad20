#!/usr/bin/env bash
# Sets up a development environment in the current python3: torch from PyPI,
# the test and build tools, then builds nccl_core_backend._C in place
# (editable install).  Needs the CUDA toolkit (nvcc, headers); no GPU.
# Usage: bash scripts/setup.sh        (PYTHON=... to pick another interpreter)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"

# Debian's own python refuses pip installs (PEP 668) unless told otherwise.
if "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
  export PIP_BREAK_SYSTEM_PACKAGES=1
fi

# CUDA toolkit: default location unless the caller chose one.
if [[ -z "${CUDA_HOME:-}" && -d /usr/local/cuda ]]; then
  export CUDA_HOME=/usr/local/cuda
fi
if [[ -n "${CUDA_HOME:-}" ]]; then
  export PATH="$CUDA_HOME/bin:$PATH"
fi

echo "== installing torch and tools"
"$PYTHON" -m pip install --progress-bar off torch pytest numpy ninja pybind11 setuptools wheel matplotlib expecttest

echo "== building nccl_core_backend (editable)"
# A stale install's torch.backends entry point must not break `import torch`
# inside the build.
TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$PYTHON" -m pip install --progress-bar off --no-build-isolation -e .

# From outside the checkout, so the installed package is what gets imported.
(cd / && "$PYTHON" -c 'import torch, nccl_core_backend as n; print("nccl_core ready: torch", torch.__version__, "NCCL", ".".join(map(str, n.nccl_version())))')
