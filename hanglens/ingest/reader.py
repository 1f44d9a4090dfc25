"""Stream one input's bytes into parsers: literal prefilter over big blocks, lines only where it hits.

Memory stays bounded by the block size whatever the input size: a block is searched for any parser
trigger with one compiled alternation, and only the physical lines around hits (plus every line
while a parser is inside a multi-line block) are decoded, split on `\\r`, stripped of prefixes and fed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from hanglens.ingest.prefix import ANSI_RE, Dialect, detect_dialect, strip_prefixes
from hanglens.model import Event, LogLine, Origin, SourceRef
from hanglens.parsers.base import Parser

BLOCK = 1 << 22            # bytes searched per regex call
MAX_LINE = 1 << 20         # a longer physical line is cut here (the rest of it is skipped, and said)
SAMPLE_LINES = 200         # lines sampled to decide the file's prefix dialect and hard-wrap width

# `[rankN]:` on lines no parser wants still says whose file this is; scanned per block, not per line.
_RANK_SCAN_RE = re.compile(rb"(?:\[(?!rank)[A-Za-z_][\w-]*?(\d{1,4})\]:)?\[rank(\d{1,6})\]:")
_WRAP_START_RE = re.compile(
    r"^(?:\[rank\d+\]|\[default\d+\]|\[[VIWEF]\d{0,4}[ \d:.]*[\w.+-]*\.(?:cpp|cc|h|hpp)|[VIWEC]\d{4} |"
    r"\d{4}-\d\d-\d\d|Traceback|\s+File \"|\w*(?:Error|Exception)\b|\[\d{4}-|\S+:\d+:\d+ \[\d+\] NCCL|"
    r"frame #\d+:|Exception raised from |#\d+ )"
)


def _trie_pattern(words: list[bytes]) -> bytes:
    """A regex matching any of `words`, factored by common prefix.

    `re` tries each branch of a flat alternation at every position; a trie tries one branch per
    distinct next byte, which halves the prefilter's time on 90 literals (benchmarks/bench_ingest.py).
    """
    root: dict[int, dict] = {}  # type: ignore[type-arg]
    for w in words:
        node = root
        for byte in w:
            node = node.setdefault(byte, {})
        node[-1] = {}

    def emit(node: dict[int, dict]) -> bytes:  # type: ignore[type-arg]
        alts = [re.escape(bytes([b])) + emit(child) for b, child in sorted(node.items()) if b >= 0]
        if -1 in node:  # a word ends here: the line is interesting whatever follows
            return b""
        return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"

    return emit(root)


def compile_triggers(parsers: Sequence[type[Parser]]) -> re.Pattern[bytes]:
    """One pattern matching any parser's literal trigger (a prefix trie of the literals)."""
    lits = sorted({t.encode() for p in parsers for t in p.triggers if t})
    if not lits:
        return re.compile(b"(?!)")
    return re.compile(_trie_pattern(lits))


@dataclass
class FileResult:
    """What reading one input produced."""

    events: list[Event] = field(default_factory=list)
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    lines_with_events: int = 0
    envelope_ranks: set[int] = field(default_factory=set)
    rank_pairs: set[tuple[int, int]] = field(default_factory=set)   # (local_rank, rank) stated on one line
    dated: tuple[float, float] | None = None     # earliest, latest stamp that stated its year


def _wrap_width(sample: list[str]) -> int | None:
    """Width of a terminal hard-wrap, or None.

    A wrapped paste has no line longer than some width W >= 60, most lines exactly W long, and most
    of those followed by a line that does not start like a log line (it continues the message).
    """
    lines = [s for s in sample[:-1] if s]
    if len(lines) < 4:
        return None
    lengths = [len(s) for s in lines]
    width = max(lengths)
    at_width = [i for i, n in enumerate(lengths) if n == width]
    if width < 60 or len(at_width) < 0.5 * len(lines):
        return None
    continued = sum(1 for i in at_width if i + 1 < len(lines) and not _WRAP_START_RE.match(lines[i + 1]))
    return width if continued >= 0.5 * len(at_width) else None


def _long_line_note(num: int) -> str:
    return f"line {num} is longer than {MAX_LINE} bytes; read its start only"


def _has_any(text: str, literals: tuple[str, ...]) -> bool:
    for lit in literals:  # noqa: SIM110 - runs per hit line; a plain loop beats any() with a generator
        if lit in text:
            return True
    return False


class Reader:
    """Reads one binary stream. A fresh Reader (and fresh parser instances) per input file."""

    def __init__(self, path: str, origin: Origin, parser_classes: Sequence[type[Parser]],
                 triggers: re.Pattern[bytes] | None = None) -> None:
        self.path = path
        self.origin = origin
        self.parsers = [cls() for cls in parser_classes]
        self.trig_text = [tuple(cls.triggers) for cls in parser_classes]
        self.triggers = triggers if triggers is not None else compile_triggers(parser_classes)
        self.result = FileResult()
        self.dialect = Dialect()
        self.active: set[int] = set()
        self.envelope_ranks = self.result.envelope_ranks

    # -- line level --------------------------------------------------------------------------
    def _handle(self, bline: bytes, num: int) -> None:
        if b"\x00" in bline:
            bline = bline.replace(b"\x00", b"")
        text = bline.decode("utf-8", "replace")
        if "\x1b" in text:
            text = ANSI_RE.sub("", text)
        for seg in text.split("\r") if "\r" in text else (text,):
            if seg.strip():
                self._segment(seg, num)

    def _segment(self, raw: str, num: int) -> None:
        # Yearless stamps are read as year 2000 here; `attribute.rebase_years` dates them job-wide.
        env = strip_prefixes(raw, self.dialect, None)
        if env.year_known and env.time is not None:
            d = self.result.dated
            t = env.time
            self.result.dated = (t, t) if d is None else (min(d[0], t), max(d[1], t))
        o = self.origin
        rank = env.rank if env.rank is not None else o.rank
        if env.rank is not None:
            self.envelope_ranks.add(env.rank)
            if env.local_rank is not None:
                self.result.rank_pairs.add((env.local_rank, env.rank))
        line = LogLine(
            text=env.text, raw=raw.rstrip("\n"), ref=SourceRef(self.path, num), rank=rank,
            host=env.host or o.host,
            local_rank=env.local_rank if env.local_rank is not None else o.local_rank,
            attempt=o.attempt, stream=env.stream or o.stream, time=env.time, clock=env.clock, level=env.level,
        )
        produced = False
        active = self.active
        for i, parser in enumerate(self.parsers):
            if i not in active and not _has_any(raw, self.trig_text[i]):
                continue
            try:
                out = list(parser.feed(line))
            except Exception as exc:  # a parser bug must not lose the rest of the file
                self.result.notes.append(f"{parser.name} failed on line {num}: {type(exc).__name__}")
                out = []
                self.parsers[i] = type(parser)()
            if out:
                produced = True
                self.result.events.extend(out)
            if self.parsers[i].wants_more():
                active.add(i)
            else:
                active.discard(i)
        if produced:
            self.result.lines_with_events += 1

    # -- block level -------------------------------------------------------------------------
    def _block(self, block: bytes, lineno: int) -> int:
        """Feed the interesting lines of `block` (complete lines); return the updated line count."""
        pos, n = 0, len(block)
        search = self.triggers.search
        if b"[rank" in block:
            for local, rank in set(_RANK_SCAN_RE.findall(block)):
                self.envelope_ranks.add(int(rank))
                if local:
                    self.result.rank_pairs.add((int(local), int(rank)))
        while pos < n:
            if self.active:
                end = block.find(b"\n", pos)
                end = n if end < 0 else end
                self._handle(block[pos:end], lineno + 1)
                lineno += 1
                pos = end + 1
                continue
            m = search(block, pos)
            if m is None:
                lineno += block.count(b"\n", pos)
                if not block.endswith(b"\n"):
                    lineno += 1
                return lineno
            nl = block.rfind(b"\n", pos, m.start())
            start = pos if nl < 0 else nl + 1
            lineno += block.count(b"\n", pos, start)
            end = block.find(b"\n", m.end())
            end = n if end < 0 else end
            self._handle(block[start:end], lineno + 1)
            lineno += 1
            pos = end + 1
        return lineno

    def _prepare(self, head: bytes) -> tuple[bool, int | None]:
        """Decide CR-only line ends, the prefix dialect and a hard-wrap width from the file's head."""
        cr_only = b"\n" not in head and b"\r" in head
        text = head.replace(b"\r", b"\n") if cr_only else head
        sample = text.decode("utf-8", "replace").split("\n")[:SAMPLE_LINES]
        if len(sample) > 1 and not text.endswith(b"\n"):
            sample = sample[:-1]
        self.dialect = detect_dialect(sample)
        return cr_only, _wrap_width([ANSI_RE.sub("", s) for s in sample])

    def read(self, stream: BinaryIO) -> FileResult:
        head = stream.read(BLOCK)
        cr_only, wrap = self._prepare(head[: 1 << 16])
        if wrap:
            self._read_unwrapped(head, stream, wrap)
        else:
            self._read_blocks(head, stream, cr_only)
        for parser in self.parsers:
            try:
                self.result.events.extend(parser.close())
            except Exception as exc:
                self.result.notes.append(f"{parser.name} failed at end of file: {type(exc).__name__}")
        self._attribute()
        return self.result

    def _read_blocks(self, head: bytes, stream: BinaryIO, cr_only: bool) -> None:
        lineno = 0
        carry = b""
        skipping = False  # inside the rest of an over-long line
        data = head
        while True:
            eof = not data
            if cr_only and data:
                data = data.replace(b"\r", b"\n")
            if skipping and data:
                nl = data.find(b"\n")
                if nl < 0:
                    data = stream.read(BLOCK)
                    continue
                data = data[nl + 1:]
                lineno += 1
                skipping = False
            buf = carry + data if carry else data
            if eof:
                if buf:
                    lineno = self._block(buf, lineno)
                break
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                if len(buf) > MAX_LINE:
                    self.result.notes.append(_long_line_note(lineno + 1))
                    self._handle(buf[:MAX_LINE], lineno + 1)
                    carry, skipping = b"", True
                else:
                    carry = buf
                data = stream.read(BLOCK)
                continue
            carry = buf[cut:]
            lineno = self._block(buf[:cut], lineno)
            if len(carry) > MAX_LINE:
                self.result.notes.append(_long_line_note(lineno + 1))
                self._handle(carry[:MAX_LINE], lineno + 1)
                carry, skipping = b"", True
            data = stream.read(BLOCK)
        self.result.lines = lineno

    def _read_unwrapped(self, head: bytes, stream: BinaryIO, width: int) -> None:
        """Slow path for terminal-wrapped pastes: rejoin physical lines into logical ones."""
        self.result.notes.append(f"lines hard-wrapped at {width} columns were rejoined")
        pending: list[str] = []
        pending_num = 0
        lineno = 0
        carry = b""
        skipping = False  # inside the rest of an over-long line
        data = head
        while True:
            if skipping and data:
                nl = data.find(b"\n")
                if nl < 0:
                    data = stream.read(BLOCK)
                    continue
                data, skipping = data[nl + 1:], False
            buf = carry + data
            if not data:
                pieces, carry = ([buf] if buf else []), b""
            else:
                cut = buf.rfind(b"\n") + 1
                pieces, carry = buf[:cut].split(b"\n")[:-1], buf[cut:]
            if len(carry) > MAX_LINE:
                self.result.notes.append(f"a line is longer than {MAX_LINE} bytes; read its start only")
                pieces.append(carry[:MAX_LINE])
                carry, skipping = b"", True
            for piece in pieces:
                lineno += 1
                text = ANSI_RE.sub("", piece[:MAX_LINE].replace(b"\x00", b"").decode("utf-8", "replace"))
                if pending and (_WRAP_START_RE.match(text) or not text.strip()):
                    self._segment("".join(pending).rstrip(), pending_num)
                    pending = []
                if not pending:
                    pending_num = lineno
                pending.append(text)
                padded = (len(text) - len(text.rstrip(" ")) >= 2 or len(text) < width
                          or len(pending) * width > MAX_LINE)
                if padded:
                    self._segment("".join(pending).rstrip(), pending_num)
                    pending = []
            if not data:
                break
            data = stream.read(BLOCK)
        if pending:
            self._segment("".join(pending).rstrip(), pending_num)
        self.result.lines = lineno

    def _attribute(self) -> None:
        """Give rank-less events the rank the file states unambiguously.

        The location's rank wins; else a single `[rankN]:` rank in the whole file. Events tagged with a
        torchrun local rank (`[default1]:`) only take a rank a line pairs with that local rank, so a
        console that interleaves several local ranks is not credited to the one that printed `[rankN]:`.
        """
        res = self.result
        file_rank = self.origin.rank
        if file_rank is None and len(self.envelope_ranks) == 1:
            file_rank = next(iter(self.envelope_ranks))
        by_local: dict[int, set[int]] = {}
        for lr, r in res.rank_pairs:
            by_local.setdefault(lr, set()).add(r)
        own_local = self.origin.local_rank

        def rank_for(e: Event) -> int | None:
            if e.local_rank is not None and e.local_rank != own_local:
                ranks = by_local.get(e.local_rank, set())
                return next(iter(ranks)) if len(ranks) == 1 else None
            return file_rank

        res.events = [e if e.rank is not None or rank_for(e) is None else replace(e, rank=rank_for(e))
                      for e in res.events]
        res.ranks = {e.rank for e in res.events if e.rank is not None} | self.envelope_ranks
        res.hosts = {e.host for e in res.events if e.host}
