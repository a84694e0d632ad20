"""Message sizes: parsing ``--sizes`` and printing byte counts.

A size is a whole number of bytes with an optional binary unit: ``8``, ``8B``,
``4K`` / ``4KB`` / ``4KiB``, ``1M`` / ``1MiB``, ``1G`` / ``1GiB`` (every unit is a
power of 1024, as nccl-tests counts).  A spec is a comma-separated list of
sizes and ranges; a range ``A-B`` is A, 2A, 4A, ... up to B.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
# Above this a buffer cannot be allocated on any GPU we run on; a larger
# number is a typo, refused before anything starts.
MAX_BYTES = 1 << 40


def parse_size(text: str) -> int:
    """Bytes of one size such as ``"8B"`` or ``"64MiB"``; ValueError names the text."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"bad size {text!r}: expected a whole number of bytes with an optional "
                         f"unit, e.g. 8B, 4KiB, 64MiB, 1GiB")
    unit = m.group(2).lower()
    if unit not in _UNITS:
        raise ValueError(f"bad size {text!r}: unknown unit {m.group(2)!r} (use B, KiB, MiB or GiB)")
    value = int(m.group(1)) * _UNITS[unit]
    if value <= 0:
        raise ValueError(f"bad size {text!r}: must be at least 1 byte")
    if value > MAX_BYTES:
        raise ValueError(f"bad size {text!r}: larger than {format_bytes(MAX_BYTES)}")
    return value


def parse_sizes(spec: str) -> list[int]:
    """Sorted, distinct byte counts of a spec such as ``"8B-1GiB"`` or
    ``"1KiB,64KiB-1MiB"``.  Ranges double from their start up to their end."""
    out: set[int] = set()
    parts = spec.split(",")
    if not spec.strip() or any(not p.strip() for p in parts):
        raise ValueError(f"bad sizes {spec!r}: empty entry (expected e.g. 8B-1GiB or 1KiB,1MiB)")
    for part in parts:
        if "-" in part:
            lo_text, _, hi_text = part.partition("-")
            if "-" in hi_text:
                raise ValueError(f"bad size range {part.strip()!r}: more than one '-'")
            lo, hi = parse_size(lo_text), parse_size(hi_text)
            if lo > hi:
                raise ValueError(f"bad size range {part.strip()!r}: start is larger than end")
            s = lo
            while s <= hi:
                out.add(s)
                s *= 2
        else:
            out.add(parse_size(part))
    return sorted(out)


def format_bytes(n: int) -> str:
    """``8 B``, ``4 KiB``, ``1.5 MiB``: the largest binary unit that keeps n >= 1."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n} B"
