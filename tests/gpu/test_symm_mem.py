"""torch's symmetric memory over nccl_core groups: symm_mem_process.py, one
torchrun launch per symmetric-memory backend (CUDA, NCCL, NVSHMEM) at 2 ranks
(as simulated hosts where only one GPU is visible).  A backend this torch or system lacks is
skipped with the reason the script prints."""

from __future__ import annotations

import pytest

from tests.gpu import launch

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("backend", ["CUDA", "NCCL", "NVSHMEM"])
def test_symmetric_memory_over_nccl_core(backend):
    world = 2  # torch's rendezvous needs 2 or more ranks
    launch.require(world)
    if launch.simulated(world):
        how = "NCCL's LSA windows" if backend == "NCCL" else "CUDA IPC"
        pytest.skip(f"torch's {backend} symmetric memory maps peers' memory over NVLink ({how}); "
                    "simulated hosts on one GPU have no NVLink peers")
    job = launch.torchrun(["tests/gpu/symm_mem_process.py", backend], world, timeout=180,
                          name=f"symm_mem_{backend}")
    log = job.log[-6000:]
    assert job.returncode == 0, log
    for line in job.stdout.splitlines():
        if line.startswith(f"SKIP {backend}:"):
            pytest.skip(line.split(":", 1)[1].strip())
    assert job.stdout.count(f"OK {backend}") == world, log
