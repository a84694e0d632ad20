"""Exceptions of the ``nccl.core``-style API."""

from __future__ import annotations


class NcclError(RuntimeError):
    """An NCCL call failed.  ``result`` (alias ``status``) is NCCL's result code."""

    def __init__(self, message: str, result: int | None = None) -> None:
        super().__init__(message)
        self.result = result

    @property
    def status(self) -> int | None:
        """NCCL's result code (``nccl.core``'s name for it)."""
        return self.result

    def __reduce__(self):
        return (type(self), (str(self), self.result))


class NcclInvalid(NcclError, ValueError):
    """Invalid arguments or a closed resource, detected before anything was enqueued."""


class NcclUnsupported(NcclError):
    """The loaded NCCL is too old for the requested feature."""
