"""The bench's --high-priority: which backends' groups run on high-priority
streams, as asked and as each backend decided (the header and JSON say so;
tests/cpu/test_bench_main.py runs it end to end)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import torch

from nccl_core_backend.bench import cli
from nccl_core_backend.bench.job import high_priority_streams


def test_high_priority_names_backends():
    assert cli.parse_args([]).high_priority == []
    assert cli.parse_args(["--high-priority"]).high_priority == ["nccl_core", "nccl"]
    assert cli.parse_args(["--high-priority", "--workloads", "ddp"]).high_priority == [
        "nccl_core", "nccl"]
    assert cli.parse_args(["--high-priority", "nccl,nccl"]).high_priority == ["nccl"]


def test_high_priority_streams_as_each_backend_decided():
    def groups(core: bool, nccl):
        def group(backend):
            return NS(_get_backend=lambda device: backend)
        nccl_backend = NS() if nccl is None else NS(options=NS(is_high_priority_stream=nccl))
        return {"nccl_core": group(NS(nccl_core_options=NS(is_high_priority_stream=core))),
                "nccl": group(nccl_backend)}

    dev = torch.device("cpu")
    assert high_priority_streams(groups(False, False), dev, {}) == []
    assert high_priority_streams(groups(True, True), dev, {}) == ["nccl_core", "nccl"]
    # backend nccl also reads TORCH_NCCL_HIGH_PRIORITY (at its communicator's creation),
    # and a torch without the options property is read by the variable alone
    assert high_priority_streams(groups(False, False), dev,
                                 {"TORCH_NCCL_HIGH_PRIORITY": "1"}) == ["nccl"]
    assert high_priority_streams(groups(True, None), dev, {}) == ["nccl_core"]
    with pytest.raises(ValueError, match="TORCH_NCCL_HIGH_PRIORITY"):
        high_priority_streams(groups(False, False), dev, {"TORCH_NCCL_HIGH_PRIORITY": "maybe"})
