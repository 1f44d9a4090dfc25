"""The contract every parser module implements: triggers, outputs, examples, a per-file state machine."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hanglens.model import Event, LogLine


@dataclass(frozen=True, slots=True)
class EventSpec:
    """An event kind a parser emits and the field names it may carry (rules are checked against these)."""

    kind: str
    fields: tuple[str, ...]
    doc: str


@dataclass(frozen=True, slots=True)
class Example:
    """A real (or reference-constructed) log text and the event it must produce.

    `text` may hold several lines separated by `\\n` (multi-line messages) and may carry outer
    prefixes; tests feed it through the full reader. `fields` is a subset the event must carry.
    `era` says which releases print it (e.g. "torch 2.4-2.9", "NCCL 2.18+").
    """

    text: str
    kind: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    era: str = ""


class Parser:
    """Base class. One instance per input file, so parsers may keep state across lines.

    The reader calls `feed` only for lines containing one of `triggers` (literal, case-sensitive
    substrings, checked on the raw bytes before any regex), plus every line while `wants_more()`
    is true (multi-line blocks such as tracebacks). `close` flushes a block still open at EOF.
    """

    name: ClassVar[str] = ""
    triggers: ClassVar[tuple[str, ...]] = ()
    emits: ClassVar[tuple[EventSpec, ...]] = ()
    examples: ClassVar[tuple[Example, ...]] = ()
    near_misses: ClassVar[tuple[str, ...]] = ()
    # True when the same line printed again later can mean something new to this parser (a progress
    # report repeated after a restart). Otherwise the reader does not feed again a line equal to an
    # earlier one apart from its clock time when that one gave no event and left every parser idle.
    repeats_matter: ClassVar[bool] = False

    def feed(self, line: LogLine) -> Iterable[Event]:
        raise NotImplementedError

    def wants_more(self) -> bool:
        return False

    def close(self) -> Iterable[Event]:
        return ()

    def event(self, kind: str, line: LogLine, **fields: Any) -> Event:
        """Build an event attributed like `line` (rank, host, time, ...) with `fields`."""
        return Event(
            kind=kind,
            ref=line.ref,
            text=line.text,
            parser=self.name,
            rank=line.rank,
            host=line.host,
            time=line.time,
            local_rank=line.local_rank,
            attempt=line.attempt,
            level=line.level,
            fields=fields,
            writer=line.writer,
        )


INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
MAX_INT_DIGITS = 19  # int64 holds every 18-digit number and some 19-digit ones; 20 digits never fit


def to_int(value: str | None) -> int | None:
    """An integer field from a regex group: None for junk and for a number that does not fit int64.

    A number beyond 64 bits is not that field (a pid, sequence number or size no program prints), so
    it becomes None instead of an int that would overflow a table column later (issue 12, item 9).
    """
    if value is None:
        return None
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not 0 < len(digits) <= MAX_INT_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None


def to_count(value: str | None) -> int | None:
    """A field that is never negative (rank, world size, pid, count, size): `to_int`, and None below 0."""
    number = to_int(value)
    return number if number is not None and number >= 0 else None


def int_list(value: str | None) -> list[int]:
    """All integers in a text such as `[0, 1, 2]`, `0 1 2` or `1,3`; those beyond int64 are left out."""
    if not value:
        return []
    out: list[int] = []
    num = ""
    for ch in value:
        if "0" <= ch <= "9":  # str.isdigit() also accepts '²' and other digits int() rejects
            if len(num) <= MAX_INT_DIGITS:
                num += ch
        else:
            if num and to_int(num) is not None:
                out.append(int(num))
            num = ""
    if num and to_int(num) is not None:
        out.append(int(num))
    return out


MATCH_TRIES = 4


def match_at_keyword(pattern: re.Pattern[str], text: str, keyword: str) -> re.Match[str] | None:
    """`pattern` (which starts with `keyword`) matched where `keyword` occurs, at its first few places.

    A search would retry a bounded-but-long pattern at every repetition of the keyword, which is
    quadratic on a line made of the keyword; a real line holds it once or twice.
    """
    pos = text.find(keyword)
    for _ in range(MATCH_TRIES):
        if pos < 0:
            return None
        m = pattern.match(text, pos)
        if m:
            return m
        pos = text.find(keyword, pos + 1)
    return None
