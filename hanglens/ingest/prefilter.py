"""Find the trigger lines of a plain file on disk with GNU grep, and recognise bulk progress lines cheaply.

GNU grep's literal search runs an order of magnitude faster than Python's `re` over log noise, so for
plain files the reader asks grep for the lines it must look at (`grep -a -b -n`, byte offsets and line
numbers included), with every trigger plus `[rank` (whose lines the reader still scans for ranks).
A row shaped like a torchtitan step line is a candidate for the progress fast path unless a second,
small grep over the candidates of each chunk finds a trigger of another parser in it.
"""

from __future__ import annotations

import datetime
import io
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy

from hanglens.model import LogLine
from hanglens.parsers.base import Parser
from hanglens.parsers.progress import PATTERNS, ProgressParser

RANK_LITERAL = "[rank"
VETO_BATCH = 1 << 20         # grep output bytes whose fast-path candidates one veto grep checks
SCAN_CHUNK = 1 << 19          # bytes per read while counting lines (no larger than MAX_LINE)
_ERE_SPECIAL_RE = re.compile(r"([.\[\]()*+?{}|^$\\])")
_PATTERN_NAMES = [name for name, _ in PATTERNS]
# The fast path relies on `megatron` being the only shape tried before `torchtitan`; if progress.py
# reorders its shapes the fast path switches itself off rather than disagree with the parser.
_STEP = PATTERNS[1][1].pattern.encode() if _PATTERN_NAMES[:2] == ["megatron", "torchtitan"] else None
# One grep output row, `line:offset:text\n`. When the text is a torchtitan step line behind `[rankN]:`
# and the Python `logging` format `[tag] date time,ms - name - LEVEL - ` (torchtitan 0.x, torch
# 2.4-2.9), the optional group captures what `strip_prefixes` and the progress parser would read from
# it: rank, date and time, milliseconds, and the first step report (`Grep.hits` drops these groups
# again unless the line is printable ASCII without `poch` or `iteration`).
FAST_BODY = (
    rb"\[rank(\d{1,6})\]:(?:\[[\w.-]+\] )?((\d{4}-\d\d-\d\d) (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:,(\d{3}))?"
    rb" - [\w.<>-]+ - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - [ -~]*?" + _STEP
) if _STEP is not None else rb"(?!)()()()()(?P<step>)"
ROW_RE = re.compile(rb"(\d+):(\d+):((?:" + FAST_BODY + rb")?[^\n]*)\n")
ROW_TEXT, ROW_RANK = 3, 4
PRINTABLE_RE = re.compile(rb"[ -~]*")
assert ROW_RE.groups == 8


@lru_cache(maxsize=1)
def grep_path() -> str | None:
    """The GNU grep executable, or None when there is none (then the reader scans in Python)."""
    exe = shutil.which("grep")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, timeout=10, check=False,
                             env={**os.environ, "LC_ALL": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if b"GNU grep" in out else None


def ere_escape(literal: str) -> str:
    """`literal` as a POSIX extended regex matching itself."""
    return _ERE_SPECIAL_RE.sub(r"\\\1", literal)


def trigger_sets(parsers: Sequence[type[Parser]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every trigger + `[rank`, the triggers of every parser but progress), each sorted and unique."""
    every = sorted({t for p in parsers for t in p.triggers if t} | {RANK_LITERAL})
    other = sorted({t for p in parsers if p is not ProgressParser for t in p.triggers if t})
    return tuple(every), tuple(other)


@dataclass(frozen=True, slots=True)
class Scan:
    """What one pass over a file's bytes says: its size, line count and over-long lines (1-based)."""

    size: int
    lines: int
    long_lines: tuple[int, ...]


def scan_file(fh: io.BufferedIOBase, max_line: int) -> Scan:
    """Count lines and find lines longer than `max_line` bytes without a Python loop over lines.

    Chunks are no longer than `max_line`, so only a line that ends in (or runs past) a chunk other
    than the one it started in can be long; its start offset is carried from chunk to chunk. numpy
    counts newlines twice as fast as `bytes.count`.
    """
    assert max_line >= SCAN_CHUNK
    buf = bytearray(SCAN_CHUNK)
    arr = numpy.frombuffer(buf, dtype=numpy.uint8)
    size = lines = 0
    line_start = 0            # file offset where the current line starts
    long_lines: list[int] = []
    noted = -1                # line start already recorded as long
    last = 10
    while True:
        n = fh.readinto(buf)
        if not n:
            break
        nl = buf.find(b"\n", 0, n)
        if nl < 0:
            if size + n - line_start > max_line and noted != line_start:
                long_lines.append(lines + 1)
                noted = line_start
        else:
            if size + nl - line_start > max_line and noted != line_start:
                long_lines.append(lines + 1)
            lines += int(numpy.count_nonzero(arr[:n] == 10))
            line_start = size + buf.rfind(b"\n", 0, n) + 1
        last = buf[n - 1]
        size += n
    if size and last != 10:
        lines += 1
    return Scan(size, lines, tuple(long_lines))


# ROW_RE's groups: line number, byte offset, text (no newline, cut at max_line), then the fast-path
# groups (all empty unless the line has the fast shape): rank, date and time, date, milliseconds, step.
Row = tuple[bytes, ...]
_NOT_FAST = (b"",) * 5


def _checked(row: Row, max_line: int) -> Row:
    text = row[ROW_TEXT - 1]
    if len(text) > max_line:
        return (*row[:2], text[:max_line], *_NOT_FAST)
    if row[ROW_RANK - 1] and (b"poch" in text or b"iteration" in text or not PRINTABLE_RE.fullmatch(text)):
        return (*row[:3], *_NOT_FAST)
    return row


class Grep:
    """One `grep -a -b -n -E` process over one file, read incrementally."""

    def __init__(self, exe: str, literals: Sequence[str], path: str, max_line: int,
                 veto: Sequence[str] = ()) -> None:
        # One parenthesised alternation: given several patterns (or pure literals) GNU grep 3.x switches
        # to its multi-literal matcher, which is 1.7x slower on log text than its DFA.
        pattern = "(" + "|".join(ere_escape(lit) for lit in literals) + ")"
        args = [exe, "-a", "-b", "-n", "-E", "-e", pattern, "--", path]
        self.max_line = max_line
        self.exe = exe
        # Fast-path candidates holding one of these literals are not fast (another parser wants them).
        self.veto = "(" + "|".join(ere_escape(lit) for lit in veto) + ")" if veto else None
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"},
                                     bufsize=1 << 16)

    def hits(self) -> Iterator[Row]:
        """The rows grep printed, in order, read in big chunks; a row's text is cut at max_line bytes."""
        out = self.proc.stdout
        assert isinstance(out, io.BufferedReader)
        max_line = self.max_line
        limit = max_line + 48   # the `line:offset:` prefix fits in 48 bytes
        buf = b""
        skipping = False        # inside the rest of an over-long row
        pending: list[Row] = []  # rows held back until a batch of them is vetoed at once
        pending_bytes = 0
        while True:
            data = out.read1(1 << 20)
            if not data:
                break
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                data, skipping = data[nl + 1:], False
            buf = buf + data if buf else data
            cut = buf.rfind(b"\n") + 1
            if cut:
                rows = ROW_RE.findall(buf, 0, cut)
                # Progress lines that also name an epoch or a Megatron iteration are the parser's to read,
                # and so are lines with control or non-ASCII bytes; most chunks hold none of these.
                check = (b"poch" in buf or b"iteration" in buf or len(buf) > max_line or not buf.isascii()
                         or b"\r" in buf or b"\x1b" in buf or b"\x00" in buf or b"\t" in buf)
                pending_bytes += cut
                buf = buf[cut:]
                if check:
                    rows = [_checked(row, max_line) for row in rows]
                pending.extend(rows)
                if pending_bytes >= VETO_BATCH:
                    if self.veto is not None:
                        self._veto(pending)
                    yield from pending
                    pending, pending_bytes = [], 0
            if len(buf) > limit:
                m = ROW_RE.match(buf[:limit] + b"\n")
                if m is not None:
                    pending.append((m[1], m[2], m[ROW_TEXT][:max_line], *_NOT_FAST))
                buf, skipping = b"", True
        if self.veto is not None:
            self._veto(pending)
        yield from pending

    def _veto(self, rows: list[Row]) -> None:
        """Take the fast-path groups off candidate rows that hold a trigger of another parser."""
        at = [i for i, row in enumerate(rows) if row[ROW_RANK - 1]]
        if not at:
            return
        assert self.veto is not None
        texts = b"\n".join(rows[i][ROW_TEXT - 1] for i in at) + b"\n"
        proc = subprocess.run([self.exe, "-a", "-n", "-E", "-e", self.veto], input=texts, capture_output=True,
                              env={**os.environ, "LC_ALL": "C"}, check=False)
        if proc.returncode >= 2 or proc.returncode < 0:
            raise OSError(f"grep exit status {proc.returncode}")
        for hit in proc.stdout.splitlines():
            i = at[int(hit.partition(b":")[0]) - 1]
            rows[i] = (*rows[i][:3], *_NOT_FAST)

    def finish(self) -> int:
        """Wait for grep; its exit status (0 some lines, 1 none, >= 2 trouble)."""
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()


_VALID_DATES: set[bytes] = set()


def valid_date(date: bytes) -> bool:
    """True for a real calendar date `YYYY-MM-DD` (remembered, so callers test `_VALID_DATES` first)."""
    try:
        datetime.date.fromisoformat(date.decode("ascii"))
    except ValueError:
        return False
    if len(_VALID_DATES) < 4096:
        _VALID_DATES.add(date)
    return True


class FastPathMismatch(Exception):
    """The fast path and `strip_prefixes` disagreed about a line; the file is read again the slow way."""


class FastProgress:
    """Feeds torchtitan step lines to the file's ProgressParser without the per-line machinery.

    The parser keeps, per series, the first report, the last one and a count of step increments. A
    report that moves its series forward changes nothing else, so for those the increment is counted
    here and the report is remembered; it becomes a real LogLine in the parser only when anything else
    is about to reach the parser (`sync`). First reports and backward jumps take the slow path. The
    earliest and latest timestamps of the fast lines are read the slow way at the end (`finish`), which
    is exact because fixed-width valid dates sort like the times they name.
    """

    def __init__(self, parsers: list[Parser], index: int, local_rank: int | None,
                 make_line: Callable[[str, int], LogLine]) -> None:
        self.parsers = parsers
        self.index = index
        self.local_rank = local_rank
        self.make_line = make_line
        # Per `[rankN]:` text since the last sync: [series key, last step, (unused), line number and text
        # of the remembered report].
        self.state: dict[bytes, list[Any]] = {}
        # Earliest and latest (date and time, ms) of the fast lines, with their line number and text.
        self.lo: tuple[tuple[bytes, int], int, bytes] = ((b"\xff", 0), 0, b"")
        self.hi: tuple[tuple[bytes, int], int, bytes] = ((b"", 0), 0, b"")

    @staticmethod
    def usable(parsers: Sequence[type[Parser]]) -> int | None:
        """Index of the ProgressParser when the fast path applies to this parser set, else None."""
        if _STEP is None or ProgressParser.user_triggers:
            return None
        for i, cls in enumerate(parsers):
            if cls is ProgressParser:
                return i
        return None

    def take(self, row: Row, num: int) -> int | None:
        """Take a fast-shaped line only progress triggers hit; its rank when taken, None for the slow path."""
        _, _, text, rank_b, stamp_b, date, ms, step_b = row
        if date not in _VALID_DATES and not valid_date(date):
            return None
        st = self.state.get(rank_b)
        if st is None:
            if rank_b[:1] == b"0" and len(rank_b) > 1:  # `[rank01]:` would share a series with `[rank1]:`
                return None
            key = (int(rank_b), self.local_rank, "torchtitan", None)
            started, last = self._parser().last_step(key)
            if not started:  # a series' first report is emitted: the slow path builds it
                return None
            st = [key, last, None, 0, b""]
            self.state[rank_b] = st
        step = int(step_b)
        p_step = st[1]
        if p_step is not None:
            if step < p_step:  # a restart: the parser emits both reports
                return None
            if step > p_step:
                self._parser().count_step(st[0], p_step, step)
        st[1], st[3], st[4] = step, num, text
        if stamp_b <= self.lo[0][0]:
            stamp = (stamp_b, int(ms or b"0"))
            if stamp < self.lo[0]:
                self.lo = (stamp, num, text)
        if stamp_b >= self.hi[0][0]:
            stamp = (stamp_b, int(ms or b"0"))
            if stamp > self.hi[0]:
                self.hi = (stamp, num, text)
        rank: int = st[0][0]
        return rank

    def _parser(self) -> ProgressParser:
        parser = self.parsers[self.index]
        assert isinstance(parser, ProgressParser)
        return parser

    def sync(self) -> None:
        """Put the remembered reports into the parser as real lines (before it sees anything else)."""
        for st in self.state.values():
            self._put(st)
        self.state = {}

    def sync_rank(self, rank: int | None) -> None:
        """Put only `rank`'s remembered report into the parser: before a line of that rank reaches it.

        The progress parser keys its series by the line's rank, so a line of rank R reads and changes
        only R's series; the other ranks' held-back reports can wait.
        """
        if rank is not None:
            st = self.state.pop(str(rank).encode(), None)
            if st is not None:
                self._put(st)

    def _put(self, st: list[Any]) -> None:
        key, step, _, num, text = st
        if not num:
            return
        line = self.make_line(text.decode("ascii"), num)
        if (line.rank, line.local_rank) != key[:2]:
            raise FastPathMismatch(f"line {num}")
        fields = {"step": step, "total": None, "epoch": None, "pattern": "torchtitan", "label": None}
        self._parser().remember(key, line, fields)

    def finish(self) -> None:
        self.sync()
        for _, num, text in (self.lo, self.hi):
            if num:
                self.make_line(text.decode("ascii"), num)
