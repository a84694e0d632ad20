"""NCCL's parameters (NCCL 2.30.4+).

:data:`params` is a read-only mapping of parameter names to their current
values, as strings; :func:`dump_params` has NCCL print them.  Older releases
raise ``NcclUnsupported`` naming 2.30.4.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["params", "dump_params"]


def _ext():
    from nccl_core_backend import _C

    return _C


class _NcclParams(Mapping):
    """Read-only mapping of NCCL parameter names to their values
    (``ncclParamGetParameter``, ``ncclParamGetAllParameterKeys``)."""

    def __getitem__(self, key: str) -> str:
        value = _ext()._param_get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(_ext()._param_keys())

    def __len__(self) -> int:
        return len(_ext()._param_keys())

    def __repr__(self) -> str:
        return f"<NCCL parameters: {len(self)}>"


params: Mapping[str, str] = _NcclParams()


def dump_params() -> None:
    """Has NCCL print its parameters (``ncclParamDumpAll``; set
    ``NCCL_PARAM_DUMP_ALL=1`` to include the internal ones)."""
    _ext()._param_dump_all()
