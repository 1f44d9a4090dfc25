"""Read one big plain file in parts, each part by its own worker, and join the parts into the file's result.

Parts are cut at line starts. A part's reader starts fresh; where the part before it ends inside a
multi-line block (an open traceback, a window a parser keeps open), that reader reads on past its end
until no parser is inside one. The next part counts only when it starts exactly there, and only when
every parser can take in what that part learned from a fresh start as if it had read on
(`Parser.take_history`: first-seen memos that share no key, counts that go on, progress series that
continue). Otherwise the joined reader reads that part again itself. So the events are the one reader's,
wherever the cuts fall; a cut in the wrong place costs time, never an event.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import BinaryIO

from hanglens.ingest.flight import dump_format
from hanglens.ingest.prefix import Dialect
from hanglens.ingest.reader import BLOCK, UTF16_BOMS, FileResult, Reader, coloured, json_message_path
from hanglens.ingest.sources import SNIFF, Unit, binary_reason, codec_of, is_tar, is_zip
from hanglens.model import Origin
from hanglens.parsers.base import Parser

SPLIT_MIN_BYTES = 64 << 20  # a smaller file is read by one worker (a part's start-up and merge cost more)
# A bigger file is read by one worker too: each reader process holds the interpreter and its libraries
# (about 70 MiB, counted once per process) and a working set that grows with its part, so two readers of
# halves of a 1.9 GiB console peaked at 270 MiB summed (one reader: 167 MiB; the goal is 250 MB).
SPLIT_MAX_BYTES = 1 << 30
HEAD_BYTES = 1 << 16        # what the reader samples of a file's head to decide its dialect and wrap width
_COUNT_CHUNK = 4 << 20      # newlines before a part's start are counted in chunks this big


@dataclass(frozen=True)
class PartSpec:
    """Part `index` of `count` of one plain file, and how to read it."""

    fs_path: str
    display: str
    origin: Origin
    parsers: tuple[type[Parser], ...]
    max_line: int
    dialect: Dialect
    index: int
    count: int
    size: int  # the file's size when the parts were planned
    ansi_free: bool = False  # read without colour codes (`reader.coloured` of the file's head)


@dataclass
class PartOut:
    """What reading one part gave: its reader (after `end_part`), where it started, where it was meant to end,
    where it stopped (past its end when a block was open there) and the line count there."""

    reader: Reader | None
    start: int
    nominal_end: int | None  # None: the end of the file
    end: int
    lines: int
    error: str | None = None


def plan(unit: Unit, rel: str, origin: Origin, parsers: tuple[type[Parser], ...], max_line: int,
         parts: int, min_bytes: int = SPLIT_MIN_BYTES) -> list[PartSpec] | None:
    """The parts of `unit` when it is a plain text file worth splitting, else None (read it whole).

    Compressed files, archives, Flight Recorder dumps, binaries, UTF-16 text, JSON records, `\\r`-only line
    ends and hard-wrapped pastes are read whole: their reading depends on more than the lines themselves.
    """
    if parts < 2 or unit.size < min_bytes or unit.size > SPLIT_MAX_BYTES:
        return None
    try:
        if not stat.S_ISREG(os.stat(unit.fs_path).st_mode):
            return None
        with open(unit.fs_path, "rb") as f:
            block = f.read(BLOCK)
    except OSError:
        return None
    head = block[:HEAD_BYTES]
    first = head[:SNIFF]
    if (is_zip(first) or codec_of(first) is not None or is_tar(first) or binary_reason(first) is not None
            or dump_format(rel, first) is not None or head.startswith(UTF16_BOMS)
            or json_message_path(head) is not None):
        return None
    probe = Reader(unit.display, origin, parsers, max_line=max_line)
    cr_only, wrap = probe.prepare(head)
    if cr_only or wrap:
        return None
    return [PartSpec(unit.fs_path, unit.display, origin, parsers, max_line, probe.dialect, k, parts,
                     unit.size, coloured(block)) for k in range(parts)]


class _Span:
    """The next `left` bytes of a file."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self.f, self.left = f, left

    def read(self, size: int = -1, /) -> bytes:
        if self.left <= 0:
            return b""
        out = self.f.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(out)
        return out


def line_start(f: BinaryIO, offset: int) -> int:
    """The first line start at or after `offset` (the end of the file when no line starts there)."""
    if offset <= 0:
        return 0
    f.seek(offset - 1)
    pos = offset - 1
    while True:
        chunk = f.read(1 << 16)
        if not chunk:
            return pos
        nl = chunk.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(chunk)


def count_lines(f: BinaryIO, end: int) -> int:
    """Newlines in the first `end` bytes of `f` (counted in C, a chunk at a time)."""
    f.seek(0)
    n, left = 0, end
    while left > 0:
        chunk = f.read(min(_COUNT_CHUNK, left))
        if not chunk:
            break
        n += chunk.count(b"\n")
        left -= len(chunk)
    return n


def _cuts(f: BinaryIO, spec: PartSpec) -> tuple[int, int | None]:
    start = line_start(f, spec.size * spec.index // spec.count)
    end = None if spec.index + 1 == spec.count else line_start(f, spec.size * (spec.index + 1) // spec.count)
    return start, end


def read_on(reader: Reader, f: BinaryIO, pos: int, lineno: int) -> tuple[int, int]:
    """Read lines from `pos` until `reader` is idle at a line start (or the file ends); where and the line
    count there. A line over the line limit: the rest of the file is read in blocks (they cut it)."""
    f.seek(pos)
    while not reader.idle:
        line = f.readline(reader.max_line + 1)
        if not line:
            break
        if len(line) > reader.max_line and not line.endswith(b"\n"):
            f.seek(pos)
            lineno = reader.read_part(f, lineno)
            return f.tell(), lineno
        lineno = reader.read_line(line, lineno)
        pos += len(line)
    return pos, lineno


def _read_span(reader: Reader, f: BinaryIO, start: int, end: int | None, lineno: int) -> tuple[int, int]:
    f.seek(start)
    if end is None:
        lineno = reader.read_part(f, lineno)
        return f.tell(), lineno
    lineno = reader.read_part(_Span(f, end - start), lineno)
    return read_on(reader, f, end, lineno)


def read_part(spec: PartSpec) -> PartOut:
    """Read one part from a fresh reader (in a worker); the reader goes back with the result."""
    try:
        with open(spec.fs_path, "rb") as f:
            start, nominal = _cuts(f, spec)
            if (nominal is not None and nominal <= start) or start >= os.fstat(f.fileno()).st_size:
                return PartOut(None, start, nominal, start, 0)  # (no line starts in this part)
            lineno = count_lines(f, start)
            reader = Reader(spec.display, spec.origin, spec.parsers, max_line=spec.max_line)
            reader.begin_part(spec.dialect, later=spec.index > 0, ansi_free=spec.ansi_free)
            end, lineno = _read_span(reader, f, start, nominal, lineno)
            reader.end_part()
            return PartOut(reader, start, nominal, end, lineno)
    except Exception as exc:  # the part is read again by the joined reader, which says what failed
        return PartOut(None, 0, None, 0, 0, error=f"{type(exc).__name__}: {exc}")


def join(spec: PartSpec, parts: list[PartOut]) -> tuple[FileResult, int]:
    """The file's result from its parts in order, and the bytes read: each part taken in when it starts
    where the reader before it stopped and merges exactly, else read again here from there."""
    with open(spec.fs_path, "rb") as f:
        first = parts[0]
        reader = first.reader
        pos, lineno = first.end, first.lines
        if reader is None:
            reader = Reader(spec.display, spec.origin, spec.parsers, max_line=spec.max_line)
            reader.begin_part(spec.dialect, ansi_free=spec.ansi_free)
            pos, lineno = _read_span(reader, f, 0, first.nominal_end, 0)
            reader.end_part()
        for part in parts[1:]:
            if part.nominal_end is not None and pos >= part.nominal_end:
                continue  # read already by the reader before (a block was open across this part)
            if part.reader is not None and part.start == pos and reader.take_over(part.reader):
                pos, lineno = part.end, part.lines
                continue
            reader.begin_part(spec.dialect, ansi_free=spec.ansi_free)
            pos, lineno = _read_span(reader, f, pos, part.nominal_end, lineno)
            reader.end_part()
    reader.result.lines = lineno
    return reader.finish(), pos
