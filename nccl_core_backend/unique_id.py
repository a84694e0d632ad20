"""``ncclUniqueId``: the 128 bytes that bring ranks into one communicator,
returned by ``Communicator.get_unique_id()`` for a grow."""

from __future__ import annotations

from nccl_core_backend.errors import NcclInvalid

__all__ = ["UniqueId"]

_SIZE = 128  # NCCL_UNIQUE_ID_BYTES


class UniqueId:
    """An NCCL unique id.  Send it to the ranks that need it as bytes
    (``bytes(uid)``, :meth:`from_bytes`) or by pickling it."""

    __slots__ = ("_bytes",)

    def __init__(self, data: bytes = bytes(_SIZE)) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise NcclInvalid(f"a UniqueId is made of bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) != _SIZE:
            raise NcclInvalid(f"a UniqueId has {_SIZE} bytes, got {len(data)}")
        self._bytes = data

    @classmethod
    def from_bytes(cls, data: bytes) -> UniqueId:
        """The id whose bytes are ``data`` (what ``bytes(uid)`` gave)."""
        return cls(data)

    @property
    def as_bytes(self) -> bytes:
        """The id's 128 bytes."""
        return self._bytes

    def __bytes__(self) -> bytes:
        return self._bytes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UniqueId) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __reduce__(self):
        return (UniqueId, (self._bytes,))

    def __repr__(self) -> str:
        return f"UniqueId({self._bytes[:8].hex()}...)"
