"""Exceptions of the ``nccl.core``-style API."""

from __future__ import annotations


class NcclError(RuntimeError):
    """An NCCL call failed.  ``result`` is NCCL's result code (an int)."""

    def __init__(self, message: str, result: int | None = None) -> None:
        super().__init__(message)
        self.result = result


class NcclInvalid(NcclError, ValueError):
    """Invalid arguments, detected before anything was enqueued."""


class NcclUnsupported(NcclError):
    """The loaded NCCL is too old for the requested feature."""
