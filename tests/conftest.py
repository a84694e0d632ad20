"""Shared pytest setup.

tests/cpu runs anywhere.  tests/gpu needs CUDA GPUs: on a machine without
them every GPU test is skipped with the reason shown by ``pytest -rs``.
"""

from __future__ import annotations

import os

import pytest

# NVLink multicast stays off in every process the tests start.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

_GPU_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu") + os.sep


def _cuda_missing() -> str | None:
    """Why GPU tests cannot run here, or None when they can."""
    import torch

    if not torch.cuda.is_available():
        return (
            "no CUDA GPU on this machine (torch.cuda.is_available() is False); "
            "run `bash scripts/gpu-test.sh` on a GPU host"
        )
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [i for i in items if str(i.path).startswith(_GPU_DIR)]
    if not gpu_items:
        return
    reason = _cuda_missing()
    for item in gpu_items:
        item.add_marker(pytest.mark.gpu)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
