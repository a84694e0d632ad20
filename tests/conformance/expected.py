"""Tests of torch's suite that nccl_core is expected to fail, and why.

Only tests that cannot pass for a backend other than torch's own belong here
(they assert the backend's name or the internals of ``ProcessGroupNCCL``).
``summary.py`` reports any other failure as a regression, and an expected
failure that passes as stale.
"""

from __future__ import annotations

EXPECTED_FAILURES: dict[str, str] = {
    "test_get_backend": (
        "asserts dist.get_backend() == 'nccl'; the group's backend is named 'nccl_core'"
    ),
    "test_ddp_profiling_execution_trace": (
        "asserts dist.get_backend() == 'nccl' before it profiles; the group's backend is "
        "named 'nccl_core' (seen 2026-11-27: 'nccl_core' != 'nccl')"
    ),
}
