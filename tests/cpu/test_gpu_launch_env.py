"""The GPU jobs' environment (tests/gpu/launch.py env_for): the suite's eager
fast-path limit is a default that a caller's setting and a job's own
removal override, and NVLink multicast is always off."""

from __future__ import annotations

from tests.gpu import launch

EAGER = "NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"


def test_the_suite_sets_the_eager_limit_unless_the_caller_did(monkeypatch):
    monkeypatch.delenv(EAGER, raising=False)
    assert launch.env_for()[EAGER] == str(256 << 10)
    monkeypatch.setenv(EAGER, "0")
    assert launch.env_for()[EAGER] == "0"


def test_a_job_can_remove_it_and_multicast_stays_off(monkeypatch):
    monkeypatch.delenv(EAGER, raising=False)
    env = launch.env_for({EAGER: None})
    assert EAGER not in env
    for name, value in launch.NO_MULTICAST.items():
        assert env[name] == value
