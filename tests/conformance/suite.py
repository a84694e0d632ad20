"""PyTorch's own distributed test suite, run against nccl_core.

``torch.testing._internal.distributed.distributed_test`` ships in the torch
wheel: ``DistributedTest._DistTestBase`` holds the tests, ``TestDistBackend``
spawns one process per rank.  Here every process group that a test asks of
backend ``nccl`` is created by ``nccl_core`` instead, while the tests believe
they run ``nccl`` (``BACKEND=nccl``): the same tests, skips and expectations as
torch's own CI applies to its NCCL backend.

Run by ``scripts/conformance.sh`` (pytest-xdist, one GPU per rank), never by
the default test command: the file name keeps pytest from collecting it.
``NCCL_CORE_CONFORMANCE_BACKEND=nccl`` runs the same tests on torch's backend
for the side-by-side count.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("BACKEND", "nccl")
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="nccl_core_conformance_"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tests.conformance.routing import install  # noqa: E402

UNDER_TEST = os.environ.get("NCCL_CORE_CONFORMANCE_BACKEND", "nccl_core")


if UNDER_TEST == "nccl_core" and dist.is_available():
    install()

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """Every test of torch's suite, one spawned process per rank."""

    def setUp(self):
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()
