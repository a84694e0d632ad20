"""A progress bar for rank 0, on stderr, with no third-party dependency.

On a terminal one line is redrawn in place; anywhere else (a log file, a
pipe, torchrun's prefixed output) every step prints a line of its own, so
no carriage returns or escape codes end up in the log.
"""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts `total` steps.  ``enabled=False`` (every rank but 0) prints nothing."""

    def __init__(self, total: int, enabled: bool = True, stream=None, width: int = 30) -> None:
        self.total = max(int(total), 1)
        self.done = 0
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.start = time.monotonic()
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._last_len = 0

    def _eta(self) -> str:
        if self.done == 0:
            return "--:--"
        left = (time.monotonic() - self.start) / self.done * (self.total - self.done)
        return f"{int(left) // 60:02d}:{int(left) % 60:02d}"

    def step(self, label: str) -> None:
        """One step done; `label` says which."""
        self.done = min(self.done + 1, self.total)
        if not self.enabled:
            return
        if self.tty:
            filled = self.width * self.done // self.total
            bar = "#" * filled + "." * (self.width - filled)
            line = f"[{bar}] {self.done}/{self.total} eta {self._eta()} {label}"
            pad = " " * max(self._last_len - len(line), 0)
            self._last_len = len(line)
            self.stream.write("\r" + line + pad)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"[{self.done}/{self.total}] {label}\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A message that must not be overwritten by the bar."""
        if not self.enabled:
            return
        if self.tty and self._last_len:
            self.stream.write("\r" + " " * self._last_len + "\r")
            self._last_len = 0
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Ends the bar's line if it is still open."""
        if self.enabled and self.tty and self._last_len and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()
            self._last_len = 0
