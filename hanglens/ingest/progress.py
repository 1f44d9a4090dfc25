"""How far reading the inputs has got (bytes and files done of their totals), told to a callback."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

__all__ = ["Meter", "OnProgress", "ReadProgress"]


class ReadProgress(NamedTuple):
    """One report: bytes of the inputs on disk read so far, and input files (units) finished."""

    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int


OnProgress = Callable[[ReadProgress], None]


class Meter:
    """Counts what has been read and tells `on_progress` after every step (None: only counts).

    `read_inputs` calls `file_done(size)` as each input finishes. A reader that works through a file in
    chunks may call `advance(nbytes)` per chunk of the file it is reading (in the process that owns the
    meter); `file_done` then adds only the bytes of that file not reported yet. Reports never go past
    the totals and never go back.
    """

    __slots__ = ("_file_bytes", "_on", "bytes_done", "bytes_total", "files_done", "files_total")

    def __init__(self, bytes_total: int, files_total: int, on_progress: OnProgress | None = None) -> None:
        self.bytes_total = max(0, bytes_total)
        self.files_total = max(0, files_total)
        self.bytes_done = 0
        self.files_done = 0
        self._file_bytes = 0
        self._on = on_progress

    def advance(self, nbytes: int) -> None:
        """`nbytes` more of the file being read."""
        if nbytes <= 0:
            return
        self._file_bytes += nbytes
        self.bytes_done = min(self.bytes_total, self.bytes_done + nbytes)
        self._report()

    def file_done(self, size: int) -> None:
        """One input finished; `size` is its size on disk (what `advance` did not report is added)."""
        self.bytes_done = min(self.bytes_total, self.bytes_done + max(0, size - self._file_bytes))
        self._file_bytes = 0
        self.files_done = min(self.files_total, self.files_done + 1)
        self._report()

    def _report(self) -> None:
        if self._on is not None:
            self._on(ReadProgress(self.bytes_done, self.bytes_total, self.files_done, self.files_total))
