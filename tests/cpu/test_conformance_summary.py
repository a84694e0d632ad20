"""tests/conformance/summary.py: which differences between the two backends'
results fail the conformance part."""

from __future__ import annotations

from tests.conformance import summary


def _junit(tmp_path, name, cases):
    body = []
    for test, state in cases.items():
        inner = {"failed": "<failure message='x'/>", "skipped": "<skipped message='x'/>",
                 "passed": ""}[state]
        body.append(f"<testcase classname='S' name='{test}'>{inner}</testcase>")
    path = tmp_path / name
    path.write_text("<testsuites><testsuite>" + "".join(body) + "</testsuite></testsuites>")
    return str(path)


def _run(tmp_path, ref, ours):
    return summary.main([_junit(tmp_path, "ref.xml", ref), _junit(tmp_path, "ours.xml", ours)])


def test_same_results_pass(tmp_path):
    both = {"test_a": "passed", "test_b": "skipped", "test_c": "failed"}
    assert _run(tmp_path, both, both) == 0


def test_failure_only_on_nccl_core_fails(tmp_path, capsys):
    assert _run(tmp_path, {"test_a": "passed"}, {"test_a": "failed"}) == 1
    assert "REGRESSION  test_a" in capsys.readouterr().out


def test_expected_failure_passes(tmp_path):
    assert _run(tmp_path, {"test_get_backend": "passed"}, {"test_get_backend": "failed"}) == 0


def test_skip_only_on_nccl_core_fails(tmp_path, capsys):
    assert _run(tmp_path, {"test_a": "passed"}, {"test_a": "skipped"}) == 1
    assert "SKIPPED ONLY ON nccl_core  test_a" in capsys.readouterr().out


def test_missing_from_nccl_core_fails(tmp_path, capsys):
    assert _run(tmp_path, {"test_a": "passed", "test_b": "passed"}, {"test_b": "passed"}) == 1
    assert "MISSING FROM nccl_core's RESULTS  test_a" in capsys.readouterr().out
