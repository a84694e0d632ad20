"""How one case's run becomes its record (pass, fail or skip), apart from the
harness so that CPU tests can check it.

A check that failed (common.fail) is a failure whatever the case did next:
a case that records a wrong result and then skips, or raises, is reported as
failed with those checks first (skips hid recorded failures)."""

from __future__ import annotations


def _checks(failures: list[str]) -> str:
    more = f" (+{len(failures) - 5} more)" if len(failures) > 5 else ""
    return "; ".join(failures[:5]) + more


def settle(rec: dict, failures: list[str], *, skip: str | None = None,
           error: str | None = None) -> dict:
    """Fills rec's status and its reason or error: `skip` is the reason the
    case gave for skipping, `error` what it raised ("Type: message"), both
    None when it returned."""
    if failures:
        rec["status"] = "fail"
        then = f" (then skipped: {skip})" if skip is not None else (
            f" (then raised {error})" if error is not None else "")
        rec["error"] = "AssertionError: " + _checks(failures) + then
    elif error is not None:
        rec["status"] = "fail"
        rec["error"] = error
    elif skip is not None:
        rec["status"] = "skip"
        rec["reason"] = skip
    else:
        rec["status"] = "pass"
    return rec
