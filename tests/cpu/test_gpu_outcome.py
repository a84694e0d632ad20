"""How the GPU harness turns a case's run into its record (tests/gpu/outcome.py):
a recorded failed check is a failure even when the case then skips or raises."""

from tests.gpu.outcome import settle


def test_returned_without_failed_checks_passes():
    assert settle({}, [])["status"] == "pass"


def test_failed_check_then_return_fails():
    rec = settle({}, ["wrong sum"])
    assert rec["status"] == "fail" and "wrong sum" in rec["error"]


def test_failed_check_then_skip_fails_and_names_both():
    rec = settle({}, ["pushed 0 calls, expected 3"], skip="no NVLink")
    assert rec["status"] == "fail"
    assert "pushed 0 calls" in rec["error"] and "then skipped: no NVLink" in rec["error"]
    assert "reason" not in rec


def test_skip_without_failed_checks_is_a_skip():
    rec = settle({}, [], skip="needs world size >= 2")
    assert rec == {"status": "skip", "reason": "needs world size >= 2"}


def test_raise_is_a_failure_and_keeps_earlier_checks_first():
    assert settle({}, [], error="RuntimeError: boom") == {"status": "fail",
                                                          "error": "RuntimeError: boom"}
    rec = settle({}, ["a", "b", "c", "d", "e", "f"], error="RuntimeError: boom")
    assert rec["error"].startswith("AssertionError: a; b; c; d; e (+1 more)")
    assert rec["error"].endswith("(then raised RuntimeError: boom)")
