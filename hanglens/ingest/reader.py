"""Stream one input's bytes into parsers: literal prefilter over big blocks, lines only where it hits.

Memory stays bounded by the block size whatever the input size: a block is searched for any parser
trigger with one compiled alternation, and only the physical lines around hits (plus every line
while a parser is inside a multi-line block) are decoded, split on `\\r`, stripped of prefixes and fed.
Plain files on disk take a faster road to the same result (`Reader.read_file`): GNU grep finds the
trigger lines (`prefilter.py`), the lines a multi-line block needs are read from the file after them,
and torchtitan step lines skip the per-line machinery. A physical line is cut at MAX_LINE bytes.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import IO

from hanglens.ingest.prefilter import (
    FAST_BODY,
    PRINTABLE_RE,
    FastPathMismatch,
    FastProgress,
    Grep,
    Row,
    grep_path,
    scan_file,
    trigger_sets,
)
from hanglens.ingest.prefix import ANSI_RE, Dialect, detect_dialect, strip_prefixes
from hanglens.ingest.sources import ReadableStream
from hanglens.model import AGENT_EVENT_KINDS, Event, LogLine, Origin, SourceRef
from hanglens.parsers.base import Parser
from hanglens.parsers.progress import ProgressParser

BLOCK = 1 << 22            # bytes searched per regex call
MAX_LINE = 1 << 20         # a longer physical line is cut here (the rest of it is skipped, and said)
SAMPLE_LINES = 200         # lines sampled to decide the file's prefix dialect and hard-wrap width
GREP_MIN_BYTES = 256 << 10  # smaller plain files are scanned in Python (a grep process costs more)
MAX_SEEN = 1 << 14         # distinct repeated-line keys remembered per file
PREPARE_BYTES = 1 << 16    # head bytes the dialect, CR-only and hard-wrap decisions are made from

# `[rankN]:` on lines no parser wants still says whose file this is; scanned per block, not per line.
_RANK_SCAN_RE = re.compile(rb"(?:\[(?!rank)[A-Za-z_][\w-]*?(\d{1,4})\]:)?\[rank(\d{1,6})\]:")
_WRAP_START_RE = re.compile(
    r"^(?:\[rank\d+\]|\[default\d+\]|\[[VIWEF]\d{0,4}[ \d:.]*[\w.+-]*\.(?:cpp|cc|h|hpp)|[VIWEC]\d{4} |"
    r"\d{4}-\d\d-\d\d|Traceback|\s+File \"|\w*(?:Error|Exception)\b|\[\d{4}-|\S+:\d+:\d+ \[\d+\] NCCL|"
    r"frame #\d+:|Exception raised from |#\d+ )"
)


# The clock time near the start of a line (the envelope's stamp): two lines equal apart from it are one
# message printed again (a periodic info line, a retried warning). Bounded look-ahead: linear.
_STAMP_RE = re.compile(r"^(.{0,48}?)\d\d:\d\d:\d\d(?:[.,]\d{1,9})?")


def repeat_key(raw: str) -> str:
    """`raw` without its first clock time (within its first 48 characters): the key of a repeated line."""
    return _STAMP_RE.sub(r"\1", raw, count=1)


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


_FAST_LINE_RE = re.compile(FAST_BODY)


@lru_cache(maxsize=8)
def _other_triggers(parsers: tuple[type[Parser], ...]) -> re.Pattern[bytes]:
    """Every trigger of a parser other than the progress parser (a step line holding one is not fast)."""
    return compile_triggers(tuple(p for p in parsers if p is not ProgressParser))


@dataclass
class FileResult:
    """What reading one input produced."""

    events: list[Event] = field(default_factory=list)
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    lines_with_events: int = 0
    size: int | None = None     # bytes of the file when the reader opened it itself (grep path)
    envelope_ranks: set[int] = field(default_factory=set)
    rank_pairs: set[tuple[int, int]] = field(default_factory=set)   # (local_rank, rank) stated on one line
    dated: tuple[float, float] | None = None     # earliest, latest stamp that stated its year
    glued_bar_lines: set[int] = field(default_factory=set)  # lines where text was glued to a tqdm bar


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


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class Utf16ToUtf8:
    """A UTF-16 stream with a byte-order mark (as Windows tools write logs), read as UTF-8 bytes."""

    def __init__(self, stream: ReadableStream) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-16")("replace")

    def read(self, size: int = -1, /) -> bytes:
        while True:
            data = self.stream.read(size)
            text = self.decoder.decode(data, final=not data)
            if text or not data:
                return text.encode("utf-8", "replace")


class Replay:
    """`head` (already read) followed by the rest of `stream`."""

    def __init__(self, head: bytes, stream: ReadableStream) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1, /) -> bytes:
        if self.head:
            out, self.head = self.head, b""
            return out
        return self.stream.read(size)


def _long_line_note(num: int) -> str:
    return f"line {num} is longer than {MAX_LINE} bytes; read its start only"


def _has_any(text: str, literals: tuple[str, ...]) -> bool:
    for lit in literals:  # noqa: SIM110 - runs per hit line; a plain loop beats any() with a generator
        if lit in text:
            return True
    return False


# A user-style rank tag (`[rank 3] `, not the `[rank3]:` envelope) glued to the end of another line.
_RANK_TAG_SPLIT_RE = re.compile(r"(?<=[^\s\]:])(?=\[rank ?\d+\](?!:))")
# The end of a tqdm bar (`[<elapsed><<remaining>, <rate>]`, or `<n>it [<elapsed>, <rate>]` without a
# total) with more text right after it: tqdm redraws with `\r` and writes no newline, so whatever another
# process (or the same one) prints next is glued to the bar. tqdm ends its line with that bracket, so the
# rest is another line (log-formats.md, failure-signatures.md section 15). Bounded pieces: linear.
_BAR_END_RE = re.compile(
    r"(?:\[\d{1,9}:\d\d(?::\d\d)?<(?:\d{1,9}:\d\d(?::\d\d)?|\?)|(?<=\dit )\[\d{1,9}:\d\d(?::\d\d)?)"
    r"(?:,[^\[\]\r\n]{0,256})?\](?=\S)"
)


def split_glued(seg: str) -> list[str]:
    """`seg` cut after every tqdm bar that has text glued to it (the bar, then what followed it)."""
    if "<" not in seg and "it [" not in seg:
        return [seg]
    out: list[str] = []
    start = 0
    for m in _BAR_END_RE.finditer(seg):
        out.append(seg[start:m.end()])
        start = m.end()
    out.append(seg[start:])
    return out


def _is_agent_event(e: Event) -> bool:
    """Lines the torchrun agent (not a worker) writes: they must not inherit a worker's rank."""
    if e.kind in AGENT_EVENT_KINDS:
        return True
    return e.kind in ("exception", "error_line") and "ChildFailedError" in e.text


class Reader:
    """Reads one binary stream. A fresh Reader (and fresh parser instances) per input file."""

    def __init__(self, path: str, origin: Origin, parser_classes: Sequence[type[Parser]],
                 triggers: re.Pattern[bytes] | None = None, reference: bool = False) -> None:
        self.path = path
        self.reference = reference  # the plain reader: every line parsed, no repeat memo, no fast path
        self.origin = origin
        self.parser_classes = tuple(parser_classes)
        self.parsers = [cls() for cls in parser_classes]
        self.fast: FastProgress | None = None
        self.trig_text = [tuple(cls.triggers) for cls in parser_classes]
        self.triggers = triggers if triggers is not None else compile_triggers(parser_classes)
        self.others = self.triggers
        self.result = FileResult()
        self.dialect = Dialect()
        self.active: set[int] = set()
        self.envelope_ranks = self.result.envelope_ranks
        # Lines already fed that gave no event and left every parser idle (and that no parser declaring
        # `repeats_matter` read): a line equal to one of them apart from its clock time is the same
        # message again, which gives no event either, so it is not parsed again.
        self.seen: set[str] = set()
        self.rank_tags: set[bytes] = set()
        self.repeats = 0
        self.repeat_matters = [cls.repeats_matter for cls in parser_classes]

    # -- line level --------------------------------------------------------------------------
    def _handle(self, bline: bytes, num: int) -> None:
        if len(bline) > MAX_LINE:
            bline = bline[:MAX_LINE]
        if b"\x00" in bline:
            bline = bline.replace(b"\x00", b"")
        text = bline.decode("utf-8", "replace")
        if "\x1b" in text:
            text = ANSI_RE.sub("", text)
        for cr_seg in text.split("\r") if "\r" in text else (text,):
            glued = split_glued(cr_seg)
            for k, seg in enumerate(glued):
                if k + 1 < len(glued) and len(self.result.glued_bar_lines) < MAX_SEEN:
                    # The bar's writer is not the writer of what follows: the bar keeps no rank
                    # from the file's envelope (see `_attribute`).
                    self.result.glued_bar_lines.add(num)
                # Two ranks printing at once can glue their lines: `...loss 0.29[rank 0] step 2 ...`.
                parts = _RANK_TAG_SPLIT_RE.split(seg) if seg.find("[rank", 1) > 0 else (seg,)
                for part in parts:
                    if part.strip():
                        self._segment(part, num)

    def _line(self, raw: str, num: int) -> LogLine:
        """The LogLine of one segment; records its rank, rank pairing and dated stamp on the way."""
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
        return LogLine(
            text=env.text, raw=raw.rstrip("\n"), ref=SourceRef(self.path, num), rank=rank,
            host=env.host or o.host,
            local_rank=env.local_rank if env.local_rank is not None else o.local_rank,
            attempt=o.attempt, stream=env.stream or o.stream, time=env.time, clock=env.clock, level=env.level,
        )

    def _segment(self, raw: str, num: int) -> None:
        key = None
        if not self.active and not self.reference:
            key = repeat_key(raw)
            if key in self.seen:
                self.repeats += 1
                return
        line = self._line(raw, num)
        produced = fed_repeat = False
        active = self.active
        fast = self.fast
        for i, parser in enumerate(self.parsers):
            if i not in active and not _has_any(raw, self.trig_text[i]):
                continue
            fed_repeat = fed_repeat or self.repeat_matters[i]
            if fast is not None and fast.state and i == fast.index:
                # The progress parser gets the step report the fast path held back for this line's rank
                # (the other parsers and the other ranks' series never see it, so they need not wait).
                fast.sync_rank(line.rank)
            try:
                out = list(parser.feed(line))
            except Exception as exc:  # a parser bug must not lose the rest of the file
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self.result.notes.append(f"{parser.name} failed on line {num}: {why[:200]}")
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
        if key is not None and not produced and not active and not fed_repeat and len(self.seen) < MAX_SEEN:
            self.seen.add(key)

    # -- block level -------------------------------------------------------------------------
    def _block(self, block: bytes, lineno: int) -> int:
        """Feed the interesting lines of `block` (complete lines); return the updated line count."""
        pos, n = 0, len(block)
        search = self.triggers.search
        self._note_long_lines(block, lineno)
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
            line = block[start:end]
            if self.fast is None or not self._take_fast(line, lineno + 1):
                self._handle(line, lineno + 1)
            lineno += 1
            pos = end + 1
        return lineno

    def _take_fast(self, line: bytes, num: int) -> bool:
        """Give a torchtitan step line to the progress fast path (as the grep path does); False if not one."""
        m = _FAST_LINE_RE.match(line)
        if m is None or len(line) > MAX_LINE or b"poch" in line or b"iteration" in line:
            return False
        if not PRINTABLE_RE.fullmatch(line) or self.others.search(line) is not None:
            return False
        assert self.fast is not None
        rank = self.fast.take((b"", b"", line, *m.groups()), num)
        if rank is None:
            return False
        self.envelope_ranks.add(rank)
        return True

    def _note_long_lines(self, block: bytes, lineno: int) -> None:
        """Note every line of `block` longer than MAX_LINE (`_handle` cuts them), in line order.

        A window of MAX_LINE + 1 bytes without a newline starts a long line; otherwise every line that
        starts before the window's last newline is short, so the search jumps there (memrchr speed).
        """
        pos, n = 0, len(block)
        while pos + MAX_LINE < n:
            nl = block.rfind(b"\n", pos, pos + MAX_LINE + 1)
            if nl >= 0:
                pos = nl + 1
                continue
            self.result.notes.append(_long_line_note(lineno + block.count(b"\n", 0, pos) + 1))
            end = block.find(b"\n", pos)
            pos = n if end < 0 else end + 1

    def _prepare(self, head: bytes) -> tuple[bool, int | None]:
        """Decide CR-only line ends, the prefix dialect and a hard-wrap width from the file's head."""
        cr_only = b"\n" not in head and b"\r" in head
        text = head.replace(b"\r", b"\n") if cr_only else head
        sample = text.decode("utf-8", "replace").split("\n")[:SAMPLE_LINES]
        if len(sample) > 1 and not text.endswith(b"\n"):
            sample = sample[:-1]
        self.dialect = detect_dialect(sample)
        if cr_only:
            # `\r` alone ends a progress bar's redraws (a worker's stderr.log holding only a tqdm bar):
            # the redraws have one width, but they are not a terminal's hard wrap of longer lines.
            return cr_only, None
        return cr_only, _wrap_width([ANSI_RE.sub("", s) for s in sample])

    def read(self, stream: ReadableStream) -> FileResult:
        head = stream.read(BLOCK)
        if head.startswith(UTF16_BOMS):
            self.result.notes.append("UTF-16 text (byte-order mark); decoded")
            stream = Utf16ToUtf8(Replay(head, stream))
            head = stream.read(BLOCK)
        cr_only, wrap = self._prepare(head[: 1 << 16])
        if wrap:
            self._read_unwrapped(head, stream, wrap)
        else:
            fast_at = None if self.reference else FastProgress.usable(self.parser_classes)
            if fast_at is not None:
                self.fast = FastProgress(self.parsers, fast_at, self.origin.local_rank, self._line)
                self.others = _other_triggers(self.parser_classes)
            self._read_blocks(head, stream, cr_only)
            if self.fast is not None:
                self.fast.finish()
        self._close()
        return self.result

    def read_file(self, fs_path: str, stream: ReadableStream, use_grep: bool = True) -> FileResult:
        """Read a plain (uncompressed) file on disk whose bytes `stream` yields.

        With GNU grep at hand and ordinary `\\n` lines, grep finds the trigger lines and Python reads only
        those (and the lines a parser asks for after them); otherwise this is `read(stream)`.
        The result is the same either way.
        """
        exe = grep_path() if use_grep else None
        try:
            small = os.path.getsize(fs_path) < GREP_MIN_BYTES
        except OSError:
            small = True
        if exe is None or small:
            return self.read(stream)
        head = stream.read(PREPARE_BYTES)
        cr_only, wrap = self._prepare(head)
        if cr_only or wrap or head.startswith(UTF16_BOMS):
            return self.read(Replay(head, stream))
        try:
            done = self._read_grep(exe, fs_path)
        except (OSError, FastPathMismatch) as exc:
            done = f"{type(exc).__name__}: {exc}"
        if done is None:
            return self.result
        fresh = Reader(self.path, self.origin, self.parser_classes, self.triggers)
        try:
            with open(fs_path, "rb") as fh:
                res = fresh.read(fh)
                res.size = fh.tell()
        except OSError as exc:
            res = fresh.result
            res.notes.append(f"cannot read: {exc.strerror or exc}")
        res.notes.insert(0, f"grep prefilter failed ({done}); read with the built-in scanner")
        return res

    def _read_grep(self, exe: str, fs_path: str) -> str | None:
        """The grep path; None when it worked, else why it did not (the caller reads the file again)."""
        every, other = trigger_sets(self.parser_classes)
        fast_at = FastProgress.usable(self.parser_classes)
        if fast_at is not None:
            self.fast = FastProgress(self.parsers, fast_at, self.origin.local_rank, self._line)
        grep = Grep(exe, every, fs_path, MAX_LINE, other if fast_at is not None else ())
        try:
            with open(fs_path, "rb") as fh:
                scan = scan_file(fh, MAX_LINE)
                self.result.size, self.result.lines = scan.size, scan.lines
                self.result.notes.extend(_long_line_note(n) for n in scan.long_lines)
                self._rows(grep.hits(), fh)
        except BaseException:
            grep.kill()
            raise
        code = grep.finish()
        if code >= 2 or code < 0:
            return f"grep exit status {code}"
        if self.fast is not None:
            self.fast.finish()
        self._close()
        return None

    def _rows(self, rows: Iterator[Row], fh: IO[bytes]) -> None:
        """Handle grep's rows in line order: fast progress lines, `[rank`-only lines, the rest slowly."""
        consumed = 0          # last line read by a multi-line block
        fast = self.fast
        search = self.triggers.search
        for row in rows:
            num = int(row[0])
            if num <= consumed:
                continue
            text = row[2]
            if row[3] and fast is not None:
                rank = fast.take(row, num)
                if rank is not None:
                    self.envelope_ranks.add(rank)
                    if text.find(b"[rank", 1) >= 0:
                        self._scan_ranks(text)
                    continue
            if b"[rank" in text:
                self._scan_ranks(text)
                if search(text) is None:  # only `[rank` brought it
                    continue
            self._handle(text, num)
            if self.active:
                consumed = self._continue(fh, num, int(row[1]))

    def _scan_ranks(self, text: bytes) -> None:
        if text.startswith(b"[rank") and text.find(b"[rank", 1) < 0:
            # One `[rankN]:` envelope at the start, as on every line of a tee'd console: seen once is enough.
            end = text.find(b"]:", 5) + 2   # what the scan can find is decided by the text up to here
            if end > 1 and text[:end] in self.rank_tags:
                return
            if end > 1 and len(self.rank_tags) < MAX_SEEN:
                self.rank_tags.add(text[:end])
        for local, rank in _RANK_SCAN_RE.findall(text):
            self.envelope_ranks.add(int(rank))
            if local:
                self.result.rank_pairs.add((int(local), int(rank)))

    def _continue(self, fh: IO[bytes], num: int, offset: int) -> int:
        """Feed the lines after line `num` (at `offset`) while a parser wants them; the last line read."""
        fh.seek(offset)
        row = fh.readline(MAX_LINE + 1)
        while row and row[-1:] != b"\n":
            row = fh.readline(MAX_LINE + 1)
        while self.active:
            row = fh.readline(MAX_LINE + 1)
            if not row:
                break
            num += 1
            if row[-1:] == b"\n":
                row = row[:-1]
            else:
                rest = row
                while rest and rest[-1:] != b"\n":
                    rest = fh.readline(MAX_LINE + 1)
            if b"[rank" in row:
                self._scan_ranks(row)
            self._handle(row, num)
        return num

    def _close(self) -> None:
        if self.repeats:
            self.result.notes.append(f"{self.repeats} lines repeat an earlier line that gave no event (apart "
                                     "from the clock time); parsed once")
        for parser in self.parsers:
            try:
                self.result.events.extend(parser.close())
            except Exception as exc:
                self.result.notes.append(f"{parser.name} failed at end of file: {type(exc).__name__}")
        self._attribute()

    def _read_blocks(self, head: bytes, stream: ReadableStream, cr_only: bool) -> None:
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
                elif skipping:  # the file ends inside an over-long last line
                    lineno += 1
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

    def _read_unwrapped(self, head: bytes, stream: ReadableStream, width: int) -> None:
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
        # In a console where workers' lines carry torchrun's `[defaultN]:` tag, untagged lines are the
        # agent's own (worker failures, SIGTERMs, ChildFailedError): they belong to no worker rank.
        teed = own_local is None and any(e.local_rank is not None for e in res.events)

        glued = res.glued_bar_lines

        def rank_for(e: Event) -> int | None:
            if (self.origin.rank is None and e.kind == "progress" and e.local_rank is None
                    and e.ref.line in glued):
                # A bar with another process's line glued to it: in a console holding one `[rankN]:`
                # envelope, that envelope's rank printed the glued line, so the bar may be anyone's.
                return None
            if e.local_rank is not None and e.local_rank != own_local:
                ranks = by_local.get(e.local_rank, set())
                return next(iter(ranks)) if len(ranks) == 1 else None
            if self.origin.rank is None and (teed or _is_agent_event(e)):
                return None
            return file_rank

        res.events = [e if e.rank is not None or rank_for(e) is None else replace(e, rank=rank_for(e))
                      for e in res.events]
        res.ranks = {e.rank for e in res.events if e.rank is not None} | self.envelope_ranks
        res.hosts = {e.host for e in res.events if e.host}
