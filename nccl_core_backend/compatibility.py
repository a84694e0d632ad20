"""Which features of the nccl.core API the loaded NCCL supports, and how.

``nccl_core_backend.features()`` answers at run time what
``docs/compatibility.md`` tabulates: for each feature, whether nccl_core
serves it through NCCL itself (``"native"``), through its own code
(``"nccl_core"``: kernels or host logic of this extension), or not at all on
this NCCL (``"unsupported"``: the call raises ``NcclUnsupported``, or returns
``None`` where the API says so), and which NCCL release it needs.

The table and its version thresholds live in the C++ extension
(``csrc/nccl/features.h``), the same constants the code checks before it calls
a newer NCCL API, so this report cannot drift from the behaviour.  Loading it
needs the extension but no GPU.

Example::

    import nccl_core_backend as nc

    f = nc.features()
    if f["get_mem_stat"].status == "unsupported":
        print("get_mem_stat needs NCCL", f["get_mem_stat"].needs)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Feature", "Status", "STATUSES", "features", "version_code", "version_string"]

Status = Literal["native", "nccl_core", "unsupported"]
STATUSES: tuple[str, ...] = ("native", "nccl_core", "unsupported")


def version_code(version: str | int | tuple[int, int, int]) -> int:
    """NCCL's version code: ``"2.29.7"``, ``(2, 29, 7)`` or ``22907`` -> ``22907``."""
    if isinstance(version, bool):
        raise TypeError("an NCCL version is a string, a (major, minor, patch) tuple or a code")
    if isinstance(version, int):
        return version
    if isinstance(version, str):
        parts = version.strip().split(".")
    else:
        parts = list(version)
    if len(parts) != 3:
        raise ValueError(f"an NCCL version has three parts (major.minor.patch), got {version!r}")
    major, minor, patch = (int(p) for p in parts)
    return major * 10000 + minor * 100 + patch


def version_string(code: int | None) -> str | None:
    """``22907`` -> ``"2.29.7"`` (``None`` stays ``None``)."""
    if code is None:
        return None
    return f"{code // 10000}.{(code // 100) % 100}.{code % 100}"


@dataclass(frozen=True)
class Feature:
    """One feature of the nccl.core API on one NCCL release.

    Attributes:
        name: the key in :func:`features`.
        status: ``"native"`` (NCCL's own implementation), ``"nccl_core"``
            (this extension's kernels or host code) or ``"unsupported"``.
        needs: the oldest NCCL release on which it works at all (``"2.29.7"``),
            or ``None`` where nccl_core does not offer it on any release.
        api: the Python surface it covers.
        nccl_api: the NCCL C API behind it.
        nccl_since: the NCCL release that brought ``nccl_api``.
        native_since: the release from which nccl_core calls NCCL for it
            (``None``: nccl_core always uses its own code, or does not offer it).
        note: what else to know.
    """

    name: str
    status: Status
    needs: str | None
    api: str
    nccl_api: str
    nccl_since: str | None
    native_since: str | None
    note: str = ""

    @property
    def available(self) -> bool:
        """True unless ``status == "unsupported"``."""
        return self.status != "unsupported"


def features(version: str | int | tuple[int, int, int] | None = None) -> dict[str, Feature]:
    """The nccl.core feature table for the loaded NCCL (or another release).

    Args:
        version: an NCCL release to evaluate the table for instead of the
            loaded one: ``"2.29.7"``, ``(2, 29, 7)`` or ``22907``.  Features
            served by nccl_core's device kernels depend on the headers this
            extension was built with as well (``device_collectives``).

    Returns:
        ``{name: Feature}``, in the order of ``docs/compatibility.md``.

    Needs the C++ extension (no GPU).
    """
    from nccl_core_backend import _C

    code = None if version is None else version_code(version)
    out: dict[str, Feature] = {}
    for row in _C._features(code):
        out[row["name"]] = Feature(
            name=row["name"],
            status=row["status"],
            needs=version_string(row["needs"]),
            api=row["api"],
            nccl_api=row["nccl_api"],
            nccl_since=version_string(row["nccl_since"]),
            native_since=version_string(row["native_since"]),
            note=row["note"],
        )
    return out
