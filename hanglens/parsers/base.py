"""The contract every parser module implements: triggers, outputs, examples, a per-file state machine."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hanglens import lazyre
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


class QuietTexts:
    """Texts (a line's `text`, its prefixes stripped) that a parser read without any event and without
    changing its state, kept for the whole process: thousands of ranks print the same message (the same
    environment echo, the same init line without its clock time and `[rankN]:` envelope), and each file's
    fresh parser would search it again with every pattern. Only for a parser whose answer to an idle
    line depends on the text alone (each parser says why where it uses this).

    A parser some of whose texts give an answer that depends on the line too (its rank, its writer) names
    them with `line_dependent`: those texts are always read and never remembered.

    Bounded: at most `cap` texts of at most `max_len` characters (past `cap`, it starts over empty).
    """

    __slots__ = ("cap", "line_dependent", "max_len", "texts")

    def __init__(self, cap: int = 1 << 12, max_len: int = 600,
                 line_dependent: Callable[[str], bool] | None = None) -> None:
        self.texts: set[str] = set()
        self.cap, self.max_len = cap, max_len
        self.line_dependent = line_dependent

    def __contains__(self, text: str) -> bool:
        return text in self.texts

    def add(self, text: str) -> None:
        if len(text) <= self.max_len:
            if len(self.texts) >= self.cap:
                self.texts.clear()
            self.texts.add(text)

    def read(self, line: LogLine, read: Callable[[LogLine], Sequence[Event]]) -> Sequence[Event]:
        """`read(line)`, skipped for a text that gave nothing before, remembered when it gives nothing (for
        a parser without state: what it gives depends on the text alone, but for `line_dependent` ones)."""
        text = line.text
        if text in self.texts:
            return ()
        out = read(line)
        if not out and (self.line_dependent is None or not self.line_dependent(text)):
            self.add(text)
        return out


def _patterns_in(values: Iterable[Any], depth: int = 3) -> Iterable[lazyre.LazyPattern]:
    """The patterns among `values` and inside the tuples, lists, sets and dicts among them (to `depth`)."""
    for value in values:
        if isinstance(value, lazyre.LazyPattern):
            yield value
        elif isinstance(value, re.Pattern):
            yield lazyre.LazyPattern(value.pattern, value.flags)
        elif depth and isinstance(value, (tuple, list, set, frozenset)):
            yield from _patterns_in(value, depth - 1)
        elif depth and isinstance(value, dict):
            yield from _patterns_in([*value.keys(), *value.values()], depth - 1)


COVER_CHARS = (5, 10)   # lengths of the pieces `_cover` picks


def _cover(literals: Sequence[str]) -> tuple[str, ...]:
    """Few pieces such that each of `literals` holds one (a literal shorter than the pieces is its own):
    a text holding none of them holds no literal, and a test per piece is cheaper than one per literal.
    Greedy: the piece held by most literals not yet covered, the longest of those, until all are."""
    left, pieces = set(literals), []
    lo, hi = COVER_CHARS
    while left:
        holders: dict[str, set[str]] = {}
        for lit in sorted(left):
            if len(lit) < lo:
                holders.setdefault(lit, set()).add(lit)
            for n in range(lo, min(hi, len(lit)) + 1):
                for i in range(len(lit) - n + 1):
                    holders.setdefault(lit[i:i + n], set()).add(lit)
        best = max(sorted(holders), key=lambda piece: (len(holders[piece]), len(piece)))
        pieces.append(best)
        left -= holders[best]
    return tuple(pieces)


class EntryGate:
    """Whether a line's text may hold a match of any of a parser's entry patterns: the module-level
    patterns of its module but the `refiners` (patterns only searched inside a match of another one, in
    text a match of another one put there). Every match of a pattern holds one of its `lazyre.required`
    literals, so a text holding none of any entry pattern's literals matches none of them: a parser whose
    idle answer to a line starts with an entry pattern's match gives nothing for it, and an `in` test per
    literal (about a microsecond each, in C) stands for the dozens of searches its `feed` would run.

    Computed on first use (parsing the patterns is not an import's work). When an entry pattern has no
    such literals (one made of classes only, or case-insensitive ones), every text may match: the gate
    never closes, it is never wrong.
    """

    __slots__ = ("_cover", "_exact", "_folded", "_module", "_open", "_refiners")

    def __init__(self, module: str, refiners: Sequence[Any] = ()) -> None:
        self._module, self._refiners = module, tuple(refiners)
        self._exact: tuple[str, ...] | None = None
        self._folded: tuple[str, ...] = ()
        self._cover: tuple[str, ...] = ()
        self._open = False

    def literals(self) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(case-sensitive literals, literals of case-insensitive patterns in lower case), None when the
        gate never closes."""
        if self._exact is None:
            import sys

            exact: set[str] = set()
            folded: set[str] = set()
            skip = {id(p) for p in self._refiners}
            for value in _patterns_in(vars(sys.modules[self._module]).values()):
                if id(value) in skip:
                    continue
                fold = bool(value._flags & re.IGNORECASE)
                lits = lazyre.required(value.pattern, value._flags, fold)
                if lits is None and not fold:  # (case-insensitive parts: literals of the lowered text)
                    fold = True
                    lits = lazyre.required(value.pattern, value._flags, fold)
                if lits is None or not isinstance(value.pattern, str):
                    self._open = True
                    break
                (folded if fold else exact).update(lits)
            self._exact = tuple(sorted(exact, key=len))
            self._folded = tuple(sorted(folded, key=len))
            self._cover = _cover(self._exact)
        return None if self._open else (self._exact, self._folded)

    def may_match(self, text: str) -> bool:
        if self._exact is None:
            self.literals()
        if self._open:
            return True
        has = text.__contains__
        if any(map(has, self._cover)) and any(map(has, self._exact)):  # type: ignore[arg-type]
            return True
        if self._folded:
            if not text.isascii():
                return True
            has = text.lower().__contains__
            return any(map(has, self._folded))
        return False


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
    # True for a parser of last resort (the catch-all's `error_line`): the reader does not feed it a line
    # that an earlier parser already read into an event of that line other than a progress report (the
    # line is explained; reading it again would only repeat it as a generic event). Fed last.
    fallback: ClassVar[bool] = False

    def feed(self, line: LogLine) -> Iterable[Event]:
        raise NotImplementedError

    def wants_more(self) -> bool:
        return False

    def close(self) -> Iterable[Event]:
        return ()

    # Attributes whose value means nothing while the parser is idle (a window's line budget, the line that
    # opened a window now closed): `take_history` does not compare them with a fresh parser's.
    idle_ignores: ClassVar[tuple[str, ...]] = ()
    # Attributes that gather what earlier lines said (first-seen memos, counts): `take_history` merges them.
    history: ClassVar[tuple[str, ...]] = ()

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        """Become what `earlier` would be after also reading the lines this parser read, when this parser
        read a later part of the same file from a fresh start and `earlier` (the same class) is idle at
        the line where that part starts (a big file read in parts by several workers).

        `events` are this parser's events of the part, in order. Returns what `earlier` would have given
        instead of some of them (`id` of the event -> its replacements; an id left out keeps its event),
        or None when that cannot be said exactly: the caller then reads the part again with `earlier`.
        This default serves a parser without `history`: idle, its state is a fresh parser's (checked), so
        from there it would give what this one gave.
        """
        return {} if self.same_as_fresh(earlier) else None

    def same_as_fresh(self, earlier: Parser) -> bool:
        """True when `earlier`'s state, apart from `history` and `idle_ignores`, is a fresh parser's."""
        state = getattr(earlier, "__dict__", None)
        if state is None or type(earlier) is not type(self):
            return False
        fresh = type(self)().__dict__
        skip = set(self.history) | set(self.idle_ignores)
        same = all(v == fresh.get(k) for k, v in state.items() if k not in skip)
        return same and fresh.keys() <= state.keys()

    def merge_seen(self, earlier: Parser) -> bool:
        """`take_history` for memos of first-seen keys (sets or dicts in `history`): exact when this part
        met none of the keys `earlier` met (then every first sighting here is a first one in the file);
        the memos are joined. False (nothing changed) when they share a key."""
        for name in self.history:
            mine, theirs = getattr(self, name), getattr(earlier, name)
            if not mine.isdisjoint(theirs) if isinstance(mine, set) else not mine.keys().isdisjoint(theirs):
                return False
        for name in self.history:
            mine, theirs = getattr(self, name), getattr(earlier, name)
            setattr(self, name, theirs | mine if isinstance(mine, set) else {**theirs, **mine})
        return True

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


_PROFILING_RE = lazyre.compile(r"^(?:[\w-]+:)?(?P<op>[A-Za-z_]\w*)")
_OP_WORDS = (("all_reduce", "allreduce"), ("all_gather", "allgather"), ("all_to_all", "alltoall"))


def op_type(profiling_name: object) -> str | None:
    """The watchdog's OpType spelling of a c10d profiling name: `nccl:all_reduce` → ALLREDUCE,
    `_all_gather_base` → _ALLGATHER_BASE, `_reduce_scatter_base` → _REDUCE_SCATTER_BASE (Flight Recorder
    dumps and the fr_trace analyzer's report name collectives this way)."""
    if not isinstance(profiling_name, str):
        return None
    m = _PROFILING_RE.match(profiling_name.strip())
    if not m:
        return None
    op = m["op"].lower()
    for old, new in _OP_WORDS:
        op = op.replace(old, new)
    return op.upper()


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


PROSE_WORD_RE = lazyre.compile(r"[A-Za-z]{2}")
PROSE_MAX = 4096   # characters of a line that can be one sentence of prose


def quoted_in_prose(text: str, at: int) -> bool:
    """Is position `at` of `text` inside a Markdown inline code span that a sentence opens?

    An issue's prose quotes an error between backticks ("rank 1 died with `torch.OutOfMemoryError: CUDA out
    of memory. ...` so I halved the batch"); that names an error of some run, not a line a process printed
    (failure-signatures.md section 5.1: the words inside a user's own message are not an event). A line a
    process printed has no backtick-quoted span around its message. True when an odd number of backticks
    precede `at`, words precede the last of them (the span's opening), and a backtick after `at` closes it.
    """
    if len(text) > PROSE_MAX or text.count("`", 0, at) % 2 == 0 or text.find("`", at) < 0:
        return False   # (a sentence is short: a longer line is no prose, and the test stays linear)
    opened = text.rfind("`", 0, at)
    return opened > 0 and text[opened - 1] != "`" and PROSE_WORD_RE.search(text, 0, opened) is not None


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


def task_ids(spec: str) -> list[int]:
    """srun's task list `0-2,5` -> [0, 1, 2, 5] (at most 4096 ids)."""
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        lo = int(a)
        hi = int(b) if b else lo
        out.extend(range(lo, min(hi, lo + 4096 - len(out)) + 1))
        if len(out) >= 4096:
            break
    return out
