"""Recognise torchtitan step lines cheaply and hold back the progress reports that only move a series
forward (step lines and tqdm redraws), so the bulk of a training log's progress reports skip the
per-line machinery (`FastProgress`); the reader's shortcuts for them are exact (see its docstring).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

from hanglens.model import LogLine
from hanglens.parsers.base import Parser
from hanglens.parsers.progress import PATTERNS, ProgressParser, bar_fields

_PATTERN_NAMES = [name for name, _ in PATTERNS]
# The fast path relies on `megatron` being the only shape tried before `torchtitan`; if progress.py
# reorders its shapes the fast path switches itself off rather than disagree with the parser.
_STEP = PATTERNS[1][1].pattern.encode() if _PATTERN_NAMES[:2] == ["megatron", "torchtitan"] else None
# A torchtitan step line behind `[rankN]:` in the Python `logging` format `[tag] date time,ms - name -
# LEVEL - ` (torchtitan 0.x, torch 2.4-2.9): the groups capture what `strip_prefixes` and the progress
# parser would read from it: rank, date and time, date, milliseconds, and the first step report (the
# reader takes the line only when it is printable ASCII without `poch` or `iteration`).
FAST_BODY = (
    rb"\[rank(\d{1,6})\]:(?:\[[\w.-]+\] )?((\d{4}-\d\d-\d\d) (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:,(\d{3}))?"
    rb" - [\w.<>-]+ - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - [ -~]*?" + _STEP
) if _STEP is not None else rb"(?!)()()()()(?P<step>)"
# FAST_BODY for RE2 (Arrow), in two parts run over a block's lines (with their newlines): the envelope at
# the start, and the first step report anywhere in the line. The envelope holds no `step:` (no colon
# after a word in it), so that first report is the one FAST_BODY's lazy run reaches first; RE2 has no
# look-around: `(?<![\w])` becomes a non-word byte (or the start) in the match, and `(?!\d)` after the
# step is implied by the blank that must follow it. A line both match, printable ASCII, with no other
# parser's trigger, no `poch` or `iteration`, a step of at most 18 digits and within the line limit is
# one `_take_fast` would read with the same groups (the caller checks all that). Stricter than FAST_BODY
# where simpler (no leading zero in the rank): a line these miss is read the slow way.
FAST_HEAD_RE2 = (
    r"^\[rank(?P<rank>[1-9]\d{0,5}|0)\]:(?:\[[\w.-]+\] )?(?P<stamp>(?P<date>\d{4}-\d\d-\d\d) "
    r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?P<ms>(?:,\d{3})?) - [\w.<>-]+ - "
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
FAST_STEP_RE2 = r"(?:^|[^0-9A-Za-z_])step:[ \t]{0,64}(?P<step>\d{1,20})[ \t]{1,64}loss:"
# What `FastProgress.take` reads: (unused, unused, text, then FAST_BODY's groups).
Row = tuple[bytes, ...]

VALID_DATES: set[bytes] = set()


def valid_date(date: bytes) -> bool:
    """True for a real calendar date `YYYY-MM-DD` (the valid ones are remembered in `VALID_DATES`)."""
    if date in VALID_DATES:
        return True
    try:
        datetime.date.fromisoformat(date.decode("ascii"))
    except ValueError:
        return False
    if len(VALID_DATES) < 4096:
        VALID_DATES.add(date)
    return True


def stamp_key(stamp: bytes, ms: bytes | None) -> int:
    """`YYYY-MM-DD hh:mm:ss` and its milliseconds as one integer that sorts like the time they name
    (for a valid date: fixed width, most significant field first)."""
    return int(stamp[0:4] + stamp[5:7] + stamp[8:10] + stamp[11:13] + stamp[14:16] + stamp[17:19]) * 1000 \
        + int(ms or b"0")


class FastPathMismatch(Exception):
    """The fast path and `strip_prefixes` disagreed about a line (a reader bug: the file is skipped, said)."""


class FastProgress:
    """Feeds torchtitan step lines and tqdm redraws to the file's ProgressParser without the per-line
    machinery.

    The parser keeps, per series, the first report, the last one and a count of step increments. A
    report that moves its series forward changes nothing else, so for those the increment is counted
    here and the report is remembered; it becomes a real LogLine in the parser only when anything else
    is about to reach the parser (`sync`). First reports and backward jumps take the slow path. The
    earliest and latest timestamps of the fast lines are read the slow way at the end (`finish`), which
    is exact because fixed-width valid dates sort like the times they name. tqdm redraws are held the
    same way per bar series (`take_bar`); a line that may continue a held series syncs it first
    (`sync_rank`, `sync_who`, `sync_bar`).
    """

    def __init__(self, parsers: list[Parser], index: int, local_rank: int | None,
                 make_line: Callable[[str, int], LogLine],
                 bar_origin: tuple[Any, ...] = ()) -> None:
        self.parsers = parsers
        self.index = index
        self.local_rank = local_rank
        self.make_line = make_line
        self.bar_origin = bar_origin  # the file's part of a held tqdm redraw's `BarStub`
        # Per `[rankN]:` rank since the last sync: [series key, last step, (unused), line number and text
        # of the remembered report].
        self.state: dict[int, list[Any]] = {}
        # Earliest and latest (date and time, ms) of the fast lines, with their line number and text.
        self.lo: tuple[int, int, bytes] = (1 << 62, 0, b"")
        self.hi: tuple[int, int, bytes] = (-1, 0, b"")
        # Per tqdm series (the parser's key): [step, line number, redraw text, its match] of the
        # latest redraw held back (`take_bar`).
        self.bars: dict[tuple[Any, ...], list[Any]] = {}

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
        if not valid_date(date):
            return None
        if rank_b[:1] == b"0" and len(rank_b) > 1:  # `[rank01]:` would share a series with `[rank1]:`
            return None
        rank = int(rank_b)
        if self.take_row(rank, int(step_b), num, text, stamp_key(stamp_b, ms)):
            return rank
        return None

    def take_row(self, rank: int, step: int, num: int, text: bytes, stamp: int) -> bool:
        """`take` of a step line read already: `[rank<rank>]:` (no leading zero) with a valid date, its
        step, and its stamp as `stamp_key` gives it. False when the slow path must read it."""
        st = self.state.get(rank)
        if st is None:
            key = (rank, self.local_rank, "torchtitan", None)
            started, last = self._parser().last_step(key)
            if not started:  # a series' first report is emitted: the slow path builds it
                return False
            st = [key, last, None, 0, b""]
            self.state[rank] = st
        if not self._advance(st[0], st[1], step):
            return False
        st[1], st[3], st[4] = step, num, text
        if stamp < self.lo[0]:
            self.lo = (stamp, num, text)
        if stamp > self.hi[0]:
            self.hi = (stamp, num, text)
        return True

    def _advance(self, key: tuple[Any, ...], p_step: int | None, step: int) -> bool:
        """Count series `key`'s increment from `p_step` to `step` as the parser would; False for a restart
        (a step below the last: the parser emits both reports, so it must read the line)."""
        if p_step is not None:
            if step < p_step:
                return False
            if step > p_step:
                self._parser().count_step(key, p_step, step)
        return True

    def _parser(self) -> ProgressParser:
        parser = self.parsers[self.index]
        assert isinstance(parser, ProgressParser)
        return parser

    def take_bar(self, key: tuple[Any, ...], step: int, num: int, text: str, m: Any) -> bool:
        """Hold a tqdm redraw that moves its series forward (drop one that repeats its step); False when the
        parser must read it (the series' first report, or a restart: both are emitted).

        As for the step lines, the parser would only count the increment and remember the redraw as the
        series' latest report; the redraw becomes a real line when anything else reaches that series.
        """
        held = self.bars.get(key)
        if held is not None:
            p_step = held[0]
        else:
            started, p_step = self._parser().last_step(key)
            if not started:
                return False
        if step == p_step:
            return True   # a redraw at the same count is no report (progress.redraw_in_place)
        if not self._advance(key, p_step, step):
            return False
        if held is None:
            self.bars[key] = [step, num, text, m]
        else:
            held[0], held[1], held[2], held[3] = step, num, text, m
        return True

    def sync_bar(self, key: tuple[Any, ...]) -> None:
        """Put the redraw held back for series `key` into the parser."""
        held = self.bars.pop(key, None)
        if held is not None:
            self._put_bar(key, held)

    def sync_who(self, who: Any) -> None:
        """Put the held redraws of every series of `who` (the parser's first key field) into the parser."""
        for key in [k for k in self.bars if k[0] == who]:
            self._put_bar(key, self.bars.pop(key))

    def _put_bar(self, key: tuple[Any, ...], held: list[Any]) -> None:
        # (the series' rank and local rank are the file's, as are the stub's: see `Reader._bar_head`)
        _, num, text, m = held
        self._parser().remember_bar(key, (text, num, self.bar_origin), bar_fields(m, key[3]))

    def sync(self) -> None:
        """Put the remembered reports into the parser as real lines (before it sees anything else)."""
        for st in self.state.values():
            self._put(st)
        self.state.clear()  # (in place: the reader holds it while it reads a block)
        for key in list(self.bars):
            self._put_bar(key, self.bars.pop(key))

    def sync_rank(self, rank: int | None) -> None:
        """Put only `rank`'s remembered report into the parser: before a line of that rank reaches it.

        The progress parser keys its series by the line's rank, so a line of rank R reads and changes
        only R's series; the other ranks' held-back reports can wait.
        """
        if rank is not None:
            st = self.state.pop(rank, None)
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
