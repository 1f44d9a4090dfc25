"""Stream one input's bytes into parsers: literal prefilter over big blocks, lines only where it hits.

Memory stays bounded by the block size whatever the input size. In each block RE2 (Arrow, `rows.py`)
picks the lines holding any parser trigger (a small block: one `re` alternation), the `[rankN]:`
envelopes are collected with one scan, and only the picked lines (plus every line while a parser is
inside a multi-line block) reach Python. The torchtitan step lines of a big block are read for the
whole block (RE2 and numpy) and each only moves its rank's series on (`FastProgress.take_row`). Of the
other lines, one repeating an inert earlier one is dropped on its bytes, and any other is decoded,
split on `\\r`; a plain tqdm redraw whose head was checked once moves its bar's series on without the
per-segment machinery (`_bar`), and each other segment goes, after one dispatch (`dispatch.py`), to the
parsers whose triggers it holds. A physical line is cut at the line limit (`max_line_bytes`, MAX_LINE
by default).
"""

from __future__ import annotations

import codecs
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, AnyStr, NamedTuple, cast

from hanglens import lazyre as re
from hanglens.ingest.dispatch import ZERO_DIGITS, dispatch_for, trie_regex
from hanglens.ingest.jsonlines import (
    CsvLines,
    JsonArrayLines,
    JsonDocumentLines,
    JsonLinesText,
    ReversedLines,
    export_kind,
    message_path,
    newest_first,
    text_newest_first,
)
from hanglens.ingest.prefilter import (
    FAST_BODY,
    FAST_HEAD_RE2,
    FAST_STEP_RE2,
    FastProgress,
    valid_date,
)
from hanglens.ingest.prefix import (
    ANSI_RE,
    PDSH_NAME_RE,
    RANK_RE,
    RAY_RE,
    SLURM_RE,
    VLLM_WORKER_RE,
    Dialect,
    Envelope,
    detect_dialect,
    field_glue_re,
    field_pattern,
    strip_prefixes,
)
from hanglens.ingest.sources import ReadableStream
from hanglens.ingest.streams import (
    DUMP_PARSERS,
    dumped_pid,
    is_agent_event,
    is_mpirun_exit,
    mpirun_starts_ranks,
    non_negative_int,
    outer_stream,
    stream_ranks,
    tasks_are_ranks,
)
from hanglens.ingest.tail import Tail, tail_events
from hanglens.limits import MINIMUMS, human_bytes
from hanglens.model import Event, LogLine, Origin, SourceRef
from hanglens.parsers.base import Parser
from hanglens.parsers.progress import (
    BAR_REDRAW_RE,
    Groups,
    ProgressParser,
    bar_fields,
    bar_label,
    bar_line,
    series_owner,
)

if TYPE_CHECKING:
    import numpy

    from hanglens.ingest.rows import Rows

BLOCK = 1 << 21            # bytes searched per regex call (4 MiB held ~18 MiB more per reader, no faster)
MAX_LINE = 1 << 20         # a longer physical line is cut here (the rest of it is skipped, and said)
MIN_LINE = MINIMUMS["max_line_bytes"]  # a smaller line limit (as `Limits(...)`) is raised to this
SAMPLE_LINES = 200         # lines sampled to decide the file's prefix dialect and hard-wrap width
ROWS_MIN_BYTES = 1 << 18   # a smaller block is searched with `re` (Arrow's per-call cost is higher there)
MAX_SEEN = 1 << 14         # distinct repeated-line keys remembered per file

# `[rankN]:` on lines no parser wants still says whose file this is; scanned per block, not per line.
_RANK_SCAN_RE = re.compile(rb"(?:\[(?!rank)[A-Za-z_][\w-]*?(\d{1,4})\]:)?\[rank(\d{1,6})\]:")
# The same without the optional `[defaultN]:` tag in front: it starts with a literal, so `re` skips to each
# `[rank` at memchr speed instead of trying the tag at every byte. A block without `]:[rank` holds no tag
# that ends right before a `[rank`, so there both patterns find the same ranks.
_RANK_ONLY_RE = re.compile(rb"\[rank(\d{1,6})\]:")
_TAGGED_RANK = b"]:[rank"
# A Ray or vLLM worker tag opening a line (prefix.VLLM_WORKER_RE, prefix.RAY_RE, as bytes at every line
# start): the rank a vLLM tag names is an envelope rank as `[rankN]:` is, read for every line of a block as
# `_scan_block_ranks` does.
_WORKER_TAG_SCAN_RE = re.compile(
    b"(?m)(?:" + VLLM_WORKER_RE.pattern.encode() + b")|(?:" + RAY_RE.pattern.encode() + b")")
# A line that starts a log record, so it cannot continue a hard-wrapped one. NCCL's envelope is
# `<host>:<pid>:<tid> [<dev>] NCCL INFO` and, for WARNs, `... [<dev>] <file>:<line> NCCL WARN` (log-formats.md
# section 4.1); a launcher prefix may come first: pdsh `<host>: `, `srun -l` `<task>: `, Open MPI
# `[<job>,<rank>]<stream>:` (section 9.3), Ray's `(<Actor> pid=<pid>[, ip=<ip>]) ` (section 9.2). Several
# ranks' WARNs of one width are separate records, and so are the Python logging records of torch 1.9-2.0's
# default format `<LEVEL>:<logger.name>:<message>` (section 3.4), as every rank's `INFO:torch.distributed.
# distributed_c10d:Added key: ... for rank: <r>` is one line of the same width as its neighbours.
_WRAP_START_RE = re.compile(
    r"^(?:[A-Za-z0-9][\w.-]{0,63}: |\s{0,4}\d{1,5}: |\[[\w.@-]+,\d+\]<\w+>: ?)?"
    r"(?:\[rank\d+\]|\[default\d+\]|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[A-Za-z_][\w.]*:|"
    r"\[[VIWEF]\d{0,4}[ \d:.]*[\w.+-]*\.(?:cpp|cc|h|hpp)|[VIWEC]\d{4} |"
    r"\([\w.]{1,128} pid=\d+[,)]|\d{4}-\d\d-\d\d|Traceback|\s+File \"|\w*(?:Error|Exception)\b|\[\d{4}-|"
    r"\S+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL|frame #\d+:|Exception raised from |#\d+ )"
)


# The clock time near the start of a line (the envelope's stamp): two lines equal apart from it are one
# message printed again (a periodic info line, a retried warning). Bounded look-ahead: linear.
_STAMP_RE = re.compile(r"^(.{0,48}?)\d\d:\d\d:\d\d(?:[.,]\d{1,9})?")
# The same found by a search that starts at a digit (`re` skips to one) and looks no further than a stamp
# starting at 48 can reach (`STAMP_END`): the first match, when it starts by 48 and no newline is before
# it, is the one `_STAMP_RE` finds (its `.` stops at a newline).
_STAMP_AT_RE = re.compile(r"\d\d:\d\d:\d\d(?:[.,]\d{1,9})?")
_STAMP_AT_B_RE = re.compile(_STAMP_AT_RE.pattern.encode())
STAMP_START, STAMP_END = 48, 48 + 18


def repeat_key(raw: str) -> str:
    """`raw` without its first clock time (within its first 48 characters): the key of a repeated line."""
    if "\n" in raw[:STAMP_END]:  # (`_STAMP_RE`'s `.` stops at a newline: the definition decides)
        m = _STAMP_RE.match(raw)
        return raw if m is None else raw[:m.end(1)] + raw[m.end():]
    return _without_stamp(raw, _STAMP_AT_RE)


def _without_stamp(raw: AnyStr, stamp_at: re.Pattern[AnyStr]) -> AnyStr:
    """`repeat_key` of a line without a newline in its first STAMP_END characters (str, or bytes with
    `_STAMP_AT_B_RE`): the first stamp, when it starts by STAMP_START, cut out."""
    m = stamp_at.search(raw, 0, STAMP_END)
    return raw if m is None or m.start() > STAMP_START else raw[:m.start()] + raw[m.end():]


# Where `_without_stamp` cuts a line's bytes, per shape of its first STAMP_END bytes (digits written `0`): the
# stamp pattern tells digits apart from other bytes but never one digit from another, so lines of one shape
# have their first stamp at the same place (the search stops at STAMP_END). Chatter repeats a few shapes.
_STAMP_SPANS: dict[bytes, tuple[int, int] | None] = {}


def _bytes_key(line: bytes) -> bytes:
    """`_without_stamp(line, _STAMP_AT_B_RE)`, the search memoised per shape of the line's head."""
    shape = line[:STAMP_END].translate(ZERO_DIGITS)
    try:
        span = _STAMP_SPANS[shape]
    except KeyError:
        m = _STAMP_AT_B_RE.search(line, 0, STAMP_END)
        span = None if m is None or m.start() > STAMP_START else m.span()
        if len(_STAMP_SPANS) >= MAX_SHAPES:
            _STAMP_SPANS.clear()
        _STAMP_SPANS[shape] = span
    return line if span is None else line[:span[0]] + line[span[1]:]


def compile_triggers(parsers: Sequence[type[Parser]]) -> re.Pattern[bytes]:
    """One pattern matching any parser's literal trigger (a prefix trie of the literals).

    `re` tries each branch of a flat alternation at every position; a trie tries one branch per distinct
    next byte, which halves the prefilter's time on 90 literals (benchmarks/bench_ingest.py). The trie is
    built over the literals' bytes read as Latin-1 (one char per byte), so the pattern matches bytes.
    """
    lits = sorted({t.encode() for p in parsers for t in p.triggers if t})
    if not lits:
        return re.compile(b"(?!)")
    return re.compile(trie_regex((w.decode("latin-1") for w in lits), longest=False).encode("latin-1"))


_FAST_LINE_RE = re.compile(FAST_BODY)


@lru_cache(maxsize=8)
def _other_triggers(parsers: tuple[type[Parser], ...]) -> re.Pattern[bytes]:
    """Every trigger of a parser other than the progress parser (a step line holding one is not fast)."""
    return compile_triggers(tuple(p for p in parsers if p is not ProgressParser))


# Whether a line holds one of the literals of a trigger pattern, per shape of line: the line with every
# digit written as `0`. A literal without a digit lies within a run of non-digits, which the shape keeps as
# it is, so a line holds one exactly when its shape does (patterns whose literals hold a digit are not
# memoised). Step lines differ mostly in their digits: one search of the trie per shape, not per line.
_SHAPES: dict[tuple[bytes, bytes], bool] = {}
_DIGIT_FREE: dict[bytes, bool] = {}  # trigger pattern -> no digit in it (so none in its literals)
MAX_SHAPES = 1 << 12


def holds_trigger(triggers: re.Pattern[bytes], line: bytes) -> bool:
    """`triggers.search(line) is not None` for a pattern built by `compile_triggers`, memoised by shape."""
    pattern = triggers.pattern
    if pattern not in _DIGIT_FREE:
        _DIGIT_FREE[pattern] = not any(d in pattern for d in b"0123456789")
    if not _DIGIT_FREE[pattern]:
        return triggers.search(line) is not None
    key = (pattern, line.translate(ZERO_DIGITS))
    got = _SHAPES.get(key)
    if got is None:
        if len(_SHAPES) >= MAX_SHAPES:
            _SHAPES.clear()
        got = _SHAPES[key] = triggers.search(line) is not None
    return got


# `Reader._bar_head`'s answer per (head, dialect, parser classes, their triggers): (the label,) of a bar whose
# redraws are read in bulk, or None.
_BAR_HEADS: dict[tuple[Any, ...], tuple[str | None] | None] = {}

_PRINTABLE = bytes(range(0x20, 0x7F))  # printable ASCII: deleting it leaves nothing of a printable line
# ASCII but NUL, `\r` and ESC (what `_handle` removes, splits on or strips from): deleting it leaves nothing
# of a line `_repeat` may decide on its bytes.
_PLAIN = bytes(b for b in range(0x80) if b not in b"\x00\r\x1b")


@dataclass
class FileResult:
    """What reading one input produced."""

    events: list[Event] = field(default_factory=list)
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    lines_with_events: int = 0  # (read in parts: also counts lines whose events the join dropped)
    size: int | None = None     # bytes of the file when the reader opened it itself (grep path)
    envelope_ranks: set[int] = field(default_factory=set)
    rank_pairs: set[tuple[int, int]] = field(default_factory=set)   # (local_rank, rank) stated on one line
    # the same pairs with the outer launcher stream they came through (`task 1` of `srun -l`, a pdsh host)
    scoped_pairs: set[tuple[str, int, int]] = field(default_factory=set)
    dated: tuple[float, float] | None = None     # earliest, latest stamp that stated its year
    glued_bar_lines: set[int] = field(default_factory=set)  # lines where text was glued to a tqdm bar
    # A Ray or vLLM worker tag (`(RayTrainWorker pid=...)`, `(VllmWorker rank=...)`) was seen: those tools
    # tag every other process's lines in the console of the process that started them.
    worker_tagged: bool = False
    # Each writer's last line (`last_line` events, ingest/tail.py), apart from `events`: job-wide attribution
    # does not read them; the job's reader then gives them their writers' ranks and puts them among them.
    last_lines: list[Event] = field(default_factory=list)



# A rule: one punctuation character repeated across the line (Open MPI's help messages sit between rules of
# 74 dashes, torchrun's failure table between rules of `=` and `-`). Printed at a fixed width by the program,
# it is no piece of a cut line, and what follows it does not continue it.
_RULE_RE = re.compile(r"^\s*([-=*_~#+.])\1{7,}\s*$")
# A row of a box drawn at the console's width (rich's traceback and panels pad each row to the width and
# close it with a border, rich/box.py): a whole row, not a piece of a cut line.
_BOX_ROW_RE = re.compile(r"[│┃║╮╯┐┘]\s*$")
# A record row of rich's logging handler (`RichHandler`, rich/_log_render.py `LogRender`): the time column
# (`[%X]`, blanked when it repeats), the level padded to 8, the message, and the `file:line` of the call
# right-aligned to the console's width: a whole row, not a piece of a cut line (`\x01`: the filler that stands
# for a row's colour codes where a byte-counting wrap is measured).
_RICH_RECORD_RE = re.compile(
    r"^(?:\[[^\]\n]{1,32}\] | {2,34})?(?:DEBUG   |INFO    |WARNING |ERROR   |CRITICAL) "
    r"\S.*\S\.py:\d{1,6}\x01*$")


def _wrap_width(sample: list[str], lead: str = "") -> int | None:
    """Width of a terminal hard-wrap, or None (`lead`: the paste's indentation or `> ` quote on every line).

    A wrapped paste has no line longer than some width W >= 60, most lines exactly W long, and most
    of those followed by a line that does not start like a log line (it continues the message).
    A log of many short lines (launcher output, progress prints, a failure table) wrapped at a terminal's
    width has fewer lines at W: from a quarter of the lines, W >= 80 (terminals are 80 columns or wider;
    torchrun's table rules are 60) and at least three in four of them continued is a wrap as well. Rules
    (`_RULE_RE`), the rows of a drawn box (`_BOX_ROW_RE`) and rich's log record rows (`_RICH_RECORD_RE`) are
    left out of the count.
    """
    lines = [s for s in sample[:-1]
             if s and not _RULE_RE.match(s) and not _BOX_ROW_RE.search(s) and not _RICH_RECORD_RE.match(s)]
    if len(lines) < 4:
        return None
    lengths = [_cut_length(s) for s in lines]
    found = _wrap_width_at(lines, lengths, max(lengths))
    if found is not None:
        return found
    # A paste into an issue has the user's own sentences around the log, and a sentence can be longer than
    # the terminal the log was copied from: then the width is the length most lines of 60 or more share,
    # with only a few lines (the prose) longer than it.
    common = Counter(n for n in lengths if n >= 60).most_common(1)
    if not common or common[0][0] == max(lengths) or common[0][1] < max(4, 0.25 * len(lines)):
        return None
    width = common[0][0]
    longer = sum(1 for n in lengths if n > width)
    if longer > max(2, 0.05 * len(lines)):
        return None
    kept = [s for s in lines if _cut_length(s) <= width]
    # Records of one template that happen to share a length (ranks' timestamped lines behind a log shipper's
    # prefix) are not pieces of a cut line: a piece cut from the middle of a message does not start with a
    # timestamped envelope of its own.
    at = [i for i, s in enumerate(kept) if len(s) == width]
    stamped = sum(1 for i in at
                  if i + 1 < len(kept) and strip_prefixes(_unlead(kept[i + 1], lead)).time is not None)
    if stamped > len(at) // 4:
        return None
    return _wrap_width_at(kept, [_cut_length(s) for s in kept], width)


def _unlead(line: str, lead: str) -> str:
    """`line` without the paste's `lead` (a quoted paste's `> `): the envelope after it is the record's."""
    return line[len(lead):] if lead and line.startswith(lead) else line


def _cut_length(line: str) -> int:
    """How long `line` is as a terminal's cut would leave it: a line padded with spaces to the console's
    width was printed whole, not cut there (a rich `Table.grid(expand=True)` pads each row to the console's
    width, 80 columns when not a terminal, rich/segment.py `Segment.adjust_line_length`: Lightning's model
    summary, lightning/pytorch/callbacks/rich_model_summary.py), so it counts without its padding; one
    space at the end may be where a cut fell."""
    return len(line.rstrip(" ")) if line.endswith("  ") else len(line)


# How far short of the width a word-wrapped line may end: the word that did not fit moved whole to the
# next line, and a word of a log line (a path, a hex address) is seldom longer.
SOFT_WRAP_SLACK = 24


def _soft_break(line: str, nxt: str) -> bool:
    """`line` was broken at a space before `nxt`: one space left at its end or carried to `nxt`'s start
    (a traceback's indented source line starts with four), and `nxt` does not start a record."""
    at_space = ((line.endswith(" ") and not line.endswith("  "))
                or (nxt[:1] == " " and nxt[1:2] not in (" ", "")))
    return at_space and bool(nxt.strip()) and not _WRAP_START_RE.match(nxt)


def _soft_wrap_width(sample: list[str]) -> int | None:
    """Width of a terminal's or a web page's word wrap, or None.

    A word-wrapping view (a terminal with word wrap, an issue page, `fold -s`) breaks a long line at the
    last space before its width W, so the pieces are of different lengths, at most W and most within
    SOFT_WRAP_SLACK of it, and the space is left at the end of the broken piece (or carried to the start of
    the next). W is the longest broken piece (60 to 240 columns); a few longer lines are the user's own
    prose around the paste (as in `_wrap_width`). A paste is word-wrapped when four or more of its long lines
    (within the slack of W) are broken that way and they are most of its long lines.
    """
    lines = [s for s in sample[:-1] if s]
    broken_at = [i for i in range(len(lines) - 1) if _soft_break(lines[i], lines[i + 1])]
    found = _broken_width(lines, broken_at)
    if found is None:
        return None
    width, long = found
    broken = [i for i in broken_at if len(lines[i]) >= width - SOFT_WRAP_SLACK]
    if len(broken) >= 4 and len(broken) >= 0.75 * long:
        return width
    return None


def _broken_width(lines: list[str], broken_at: list[int]) -> tuple[int, int] | None:
    """The width W a wrap broke `lines` at (the longest piece broken at `broken_at`, four breaks at least,
    60 to 240 columns, at most a few lines longer: the user's own prose around the paste), and how many lines
    end within SOFT_WRAP_SLACK of W; None when the breaks cannot be a wrap's."""
    if len(broken_at) < 4:
        return None
    width = max(len(lines[i]) for i in broken_at)
    longer = sum(1 for s in lines if len(s) > width)
    if not 60 <= width <= 240 or longer > max(2, 0.05 * len(lines)):
        return None
    return width, sum(1 for s in lines if width - SOFT_WRAP_SLACK <= len(s) <= width)


def _dropped_space_break(line: str, nxt: str) -> bool:
    """`line` may have been broken at a space the wrap dropped (an editor's reflow, Python's textwrap): no
    blank at either side of the break, and `nxt` does not start a record."""
    return (bool(line) and not line[-1].isspace() and nxt[:1] not in (" ", "\t", "") and bool(nxt.strip())
            and not _WRAP_START_RE.match(nxt))


def _carried_word(piece: str, nxt: str, width: int) -> bool:
    """`nxt` continues `piece` in a wrap that dropped the space it broke at: its first word would not have
    fitted after `piece` within `width` (the greedy rule that broke there), and no blank is at the break."""
    return (bool(piece) and not piece[-1].isspace() and nxt[:1] not in (" ", "\t")
            and len(piece) + 1 + len(nxt.split(" ", 1)[0]) > width)


# A line's head with its digits blanked: the template a record's first words follow.
_HEAD_DIGITS_RE = re.compile(r"\d")


def _dropped_space_wrap_width(sample: list[str]) -> int | None:
    """Width of a word wrap that dropped the space it broke at (an editor's reflow, `textwrap.wrap`), or None.

    Without the space the break is told by the greedy rule itself: a broken piece ends within
    SOFT_WRAP_SLACK of the width W and the next line's first word would not have fitted after it
    (`len(piece) + 1 + len(word) > W`). Four such breaks at least, three in five of the long lines, and the
    lines after them must start in different ways (digits aside: no head for half of them, and half as many
    heads as breaks): a line of a repeated template after a long one
    (`[2]:` of torchrun's failure table, a logger's `[WARNING|file.py:N] date` envelope, an Open MPI tag this
    reader does not list) is a record of its own, while the pieces a wrap carries over start with words.
    """
    lines = [s for s in sample[:-1] if s and not _RULE_RE.match(s) and not _BOX_ROW_RE.search(s)]
    if len(lines) < 5:
        return None
    broken_at = [i for i in range(len(lines) - 1) if _dropped_space_break(lines[i], lines[i + 1])]
    found = _broken_width(lines, broken_at)
    if found is None:
        return None
    width, long = found
    broken = [i for i in broken_at if len(lines[i]) >= width - SOFT_WRAP_SLACK
              and _carried_word(lines[i], lines[i + 1], width)]
    if len(broken) < 4 or len(broken) < 0.6 * long:
        return None
    heads = Counter(_HEAD_DIGITS_RE.sub("0", lines[i + 1][:6]) for i in broken)
    if len(heads) < 0.5 * len(broken) or 2 * heads.most_common(1)[0][1] > len(broken):
        return None
    return width


def _wrap_width_at(lines: list[str], lengths: list[int], width: int) -> int | None:
    """`width` when `lines` (none longer than it) read as hard-wrapped at that column (see `_wrap_width`)."""
    if len(lines) < 4:
        return None
    at_width = [i for i, n in enumerate(lengths) if n == width]
    if width < 60 or (len(at_width) < 4 and len(at_width) < 0.5 * len(lines)):
        return None
    continued = sum(1 for i in at_width if i + 1 < len(lines) and not _WRAP_START_RE.match(lines[i + 1]))
    if len(at_width) >= 0.5 * len(lines):
        return width if continued >= 0.5 * len(at_width) else None
    relaxed = width >= 80 and len(at_width) >= 0.25 * len(lines) and continued >= 0.75 * len(at_width)
    if relaxed:
        return width
    # A longer log with only a few wrapped messages (two ranks' DETAIL mismatch reports among short
    # lines): three or more lines of exactly W >= 80 that are not one message repeated, every one followed
    # by a line that does not start a record and most of those going on mid-text (a terminal cuts at the
    # column, not at a space; a warning's source line or an indented context line starts with blanks).
    if width >= 80 and len(at_width) >= 3 and continued == len(at_width) \
            and len({lines[i] for i in at_width}) >= 2:
        mid = sum(1 for i in at_width if i + 1 < len(lines) and not lines[i + 1][:1].isspace())
        if mid >= 0.75 * len(at_width):
            return width
    return None


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def json_message_path(head: bytes) -> tuple[str, ...] | None:
    """The field holding the log line when the file's head is one JSON record per line, or holds log records
    among plain lines (`jsonlines`)."""
    if b'{"' not in head:
        return None
    sample = head.decode("utf-8", "replace").split("\n")[:SAMPLE_LINES]
    if len(sample) > 1 and not head.endswith(b"\n"):
        sample = sample[:-1]
    return message_path(sample)


ORDER_HEAD = 1 << 16   # bytes a file's head holds (or all of a shorter file) before its order is judged


def topped_up(head: bytes, stream: ReadableStream) -> bytes:
    """`head` read on from `stream` to ORDER_HEAD bytes or the stream's end (a first read may return only
    the bytes sniffed to open the file)."""
    while len(head) < ORDER_HEAD:
        more = stream.read(BLOCK)
        if not more:
            break
        head += more
    return head


def ordered_stream(head: bytes, stream: ReadableStream) -> tuple[ReadableStream, str] | None:
    """`stream` as the plain lines its JSON log records hold (`json_records_stream`), or its text lines
    oldest first when their stamps run newest first (`text_newest_first`), and a note; else None. `head`
    is what was read of the stream (`topped_up`)."""
    unwrapped = json_records_stream(head, stream)
    if unwrapped is not None:
        return unwrapped
    sample = head[: 1 << 16].decode("utf-8", "replace").split("\n")[:SAMPLE_LINES]
    if text_newest_first(sample):
        return ReversedLines(Replay(head, stream)), "read oldest first (the export lists the newest first)"
    return None


def json_records_stream(head: bytes, stream: ReadableStream) -> tuple[ReadableStream, str] | None:
    """`stream` (whose first bytes `head` were read) as the plain lines its JSON log records hold, oldest
    first, and a note saying so; None when it holds no such records."""
    kind = export_kind(head)
    export: ReadableStream | None = None
    if kind == "array":
        export = JsonArrayLines(Replay(head, stream))
    elif isinstance(kind, tuple) and kind[0] == "document":
        export = JsonDocumentLines(Replay(head, stream), tuple(str(k) for k in kind[1:]))
    elif isinstance(kind, tuple):
        export = CsvLines(Replay(head, stream), *kind)
    if export is not None:
        stream, head = export, export.read(BLOCK)
    path = json_message_path(head[: 1 << 16])
    if path is None:
        return None if export is None else (Replay(head, stream), "a JSON array or CSV export")
    note = f"JSON records; read the lines their `{'.'.join(path)}` field holds"
    if export is not None:
        what = "a JSON array" if kind == "array" else "a JSON document's record array" if isinstance(
            kind, tuple) and kind[0] == "document" else "a CSV export"
        note = what + " of " + note
    replay: ReadableStream = Replay(head, stream)
    if newest_first(head[: 1 << 16].decode("utf-8", "replace").split("\n")[:SAMPLE_LINES]):
        replay = ReversedLines(replay)
        note += ", oldest first (the export lists the newest first)"
    return JsonLinesText(replay, path), note


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


# Terminal colour and hyperlink codes (`prefix.ANSI_RE`) as bytes: a coloured console (rich's handler and
# traceback with FORCE_COLOR, colorlog) splits a trigger's words with them (`Traceback \x1b[0m\x1b[1;2;31m`
# before `(most recent call last)`), so the literal prefilter must see its lines without them.
ANSI_B_RE = re.compile(ANSI_RE.pattern.encode())


class AnsiFree:
    """A stream with its colour codes removed, UTF-8 bytes, cut at line ends (a code never spans one)."""

    def __init__(self, stream: ReadableStream) -> None:
        self.stream = stream
        self.carry = b""

    def read(self, size: int = -1, /) -> bytes:
        while True:
            data = self.stream.read(size)
            if not data:
                rest, self.carry = self.carry, b""
                return ANSI_B_RE.sub(b"", rest) if b"\x1b" in rest else rest
            buf = self.carry + data
            cut = buf.rfind(b"\n") + 1
            if cut == 0 and len(buf) < MAX_CARRY:
                self.carry = buf
                continue
            cut = cut or len(buf)
            out, self.carry = buf[:cut], buf[cut:]
            return ANSI_B_RE.sub(b"", out) if b"\x1b" in out else out


MAX_CARRY = 1 << 22   # bytes of one line held whole for `AnsiFree` (a longer one is cut where a read ended)


def coloured(head: bytes) -> bool:
    """Whether a file whose first `BLOCK` bytes are `head` is read without its colour codes (`AnsiFree`):
    decided once per file, by the whole-file reader and by the planner of a file read in parts alike."""
    return b"\x1b" in head[:BLOCK]


class Replay:
    """`head` (already read) followed by the rest of `stream`."""

    def __init__(self, head: bytes, stream: ReadableStream) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1, /) -> bytes:
        if self.head:
            out, self.head = self.head, b""
            return out
        return self.stream.read(size)


def _srun_task_rank(e: Event) -> Event:
    """srun's exit line of one task (or its `Out Of Memory` line, an `oom` event), ranked by that task (where
    the file's tasks are its ranks)."""
    ids = e.get("tasks")
    if (e.kind in ("launcher_exit", "oom") and e.get("launcher") == "srun" and e.rank is None
            and isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], int)):
        return replace(e, rank=ids[0])
    return e


def _mpirun_rank(e: Event) -> Event:
    """mpirun's report of one failed process, ranked by that process's MPI rank."""
    ids = e.get("tasks")
    if (is_mpirun_exit(e) and e.rank is None and isinstance(ids, list) and len(ids) == 1
            and isinstance(ids[0], int)):
        return replace(e, rank=ids[0])
    return e


def _long_line_note(num: int, max_line: int) -> str:
    return (f"line {num} is longer than {human_bytes(max_line)}; read its start only "
            "(limit max_line_bytes, --limit max_line_bytes=SIZE)")


# What `_inert` looks for: a date with its year (every stamp `_line` dates has one), a launcher tag such as
# `[default3]:` (a local rank), and the `[rankN]:` envelope the block scan records.
_YEAR_DATE_RE = re.compile(r"\d{4}-\d\d-\d\d")
_YEAR_DATE_BYTES_RE = re.compile(rb"\d{4}-\d\d-\d\d")
_TAG_RE = re.compile(r"\[(?!rank\d)[A-Za-z_][\w-]{0,63}?\d{1,6}\]:")
_RANK_ENVELOPE_RE = re.compile(r"\[rank\d{1,6}\]:")

# A user-style rank tag (`[rank 3] `, Lightning's `[rank: 3] `, not the `[rank3]:` envelope) glued to the end
# of another line, with or without the date-time stamp a logging format puts before it: `print` writes its
# text and its newline apart, so a second process writing the same pipe lands right after the first one's
# last character (log-formats.md section 9.1, "Concurrent writers").
_RANK_TAG_SPLIT_RE = re.compile(
    r"(?<=[^\s\]:])(?=(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,9})? )?\[rank(?:: ?| ?)\d+\](?!:))"
)
# A c10 log line's `[rankN]:[<L>` envelope glued after another writer's unfinished text: ranks that share a
# terminal and log at the same moment interleave within lines (log-formats.md section 9.1, "Concurrent
# writers"). The envelope starts a line of its own; a `:` before it is an outer prefix (`[default1]:[rank5]:`,
# a doubled `[rank3]:[rank3]:`), not another writer's text, and a space before it is a Ray/TorchX prefix.
_ENVELOPE_GLUE_RE = re.compile(
    r"(?<=[^\s:\]])(?=\[rank\d{1,6}\]:\[[VIWEF]\d{0,4}[ \w.:]{0,48}?\.(?:cpp|cc|cu|h|hpp|c):\d+\] )"
)
# The end of a tqdm bar (`[<elapsed><<remaining>, <rate>]`, or `<n>it [<elapsed>, <rate>]` without a
# total) with more text right after it: tqdm redraws with `\r` and writes no newline, so whatever another
# process (or the same one) prints next is glued to the bar. tqdm ends its line with that bracket, so the
# rest is another line (log-formats.md, failure-signatures.md section 15). Bounded pieces: linear.
_BAR_END_RE = re.compile(
    r"(?:\[\d{1,9}:\d\d(?::\d\d)?<(?:\d{1,9}:\d\d(?::\d\d)?|\?)|(?<=\dit )\[\d{1,9}:\d\d(?::\d\d)?)"
    r"(?:,[^\[\]\r\n]{0,256})?\](?=\S)"
)


# A `\r`-segment starting with a plain tqdm redraw, and what is glued after it: a `[rankN]:` envelope
# (the next redraw's, as `torchrun --tee` writes them), other text, or nothing. A redraw followed by a
# space is not cut there (`_BAR_END_RE`), so it is not one of these.
_BAR_SEG_RE = re.compile(BAR_REDRAW_RE.pattern + r"(?=(?P<env>\[rank\d{1,6}\]: ?\Z)|\S|\Z)")


_ENVELOPE_ONLY_RE = re.compile(r"\[rank\d{1,6}\]: ?")


class SegMatch:
    """A `_BAR_SEG_RE` match of a line's `\r`-segment as `_bar` and `progress.bar_fields` read it (its
    groups by name), from the spans in the line that its plan holds (`_cr_plan`)."""

    __slots__ = ("spans", "string")

    def __init__(self, string: str, spans: dict[str, tuple[int, int] | None]) -> None:
        self.string, self.spans = string, spans

    def __getitem__(self, name: str) -> str | None:
        span = self.spans[name]
        return None if span is None else self.string[span[0]:span[1]]


# What a line's `\r`-segment is, as `_handle` reads it: its start and end in the line, whether it is a
# `[rankN]:` envelope alone, and when it starts with a plain tqdm redraw (`_BAR_SEG_RE`), a `BarSeg`.
class BarSeg(NamedTuple):
    """A `\r`-segment starting with a plain tqdm redraw: where the redraw ends, its `head` group, where its
    step is, the colons in it, whether a `[rankN]:` envelope alone follows it, and its groups' spans."""

    end: int
    head: str
    step: tuple[int, int]
    colons: int
    env: bool
    spans: dict[str, tuple[int, int] | None]


CrPlan = tuple[tuple[int, int, BarSeg | None, bool], ...]
_SEG_GROUPS = ("head", "pct", "step", "total", "elapsed", "remaining", "env")
# Plans per shape of line (its bytes with every digit written `0`): `_BAR_SEG_RE` and `_ENVELOPE_ONLY_RE` tell
# ASCII digits apart from other characters but never one digit from another (`\d`, and classes holding all
# of 0-9), and UTF-8 decoding cuts two lines of one shape at the same places, so they have their segments,
# matches and groups at the same places, the same `head` (it holds no digit) and as many colons. A tqdm bar
# prints a few shapes (one per count of redraws and width of its numbers): the regexes run once per shape.
_CR_PLANS: dict[bytes, CrPlan] = {}
MAX_PLAN_LINE = 1 << 12  # a longer line is planned each time it is read (a plan is held per shape)


def _cr_plan_of(text: str) -> CrPlan:
    """The plan of `text` (see `CrPlan`), found with the regexes."""
    out = []
    a = 0
    for seg in text.split("\r"):
        b = a + len(seg)
        m = _BAR_SEG_RE.match(seg) if "%|" in seg else None
        bar = None
        if m is not None:
            spans = {g: (None if m.start(g) < 0 else (a + m.start(g), a + m.end(g))) for g in _SEG_GROUPS}
            bar = BarSeg(a + m.end(), m["head"], cast(tuple[int, int], spans["step"]), m[0].count(":"),
                         m["env"] is not None, spans)
        out.append((a, b, bar, _ENVELOPE_ONLY_RE.fullmatch(seg) is not None))
        a = b + 1
    return tuple(out)


def _cr_plan(bline: bytes, text: str) -> CrPlan:
    """`_cr_plan_of(text)` for `text` decoded from `bline` (without NUL or ESC), memoised per shape."""
    if len(bline) > MAX_PLAN_LINE:
        return _cr_plan_of(text)
    shape = bline.translate(ZERO_DIGITS)
    plan = _CR_PLANS.get(shape)
    if plan is None:
        if len(_CR_PLANS) >= MAX_SHAPES:
            _CR_PLANS.clear()
        plan = _CR_PLANS[shape] = _cr_plan_of(text)
    return plan


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


# A torchrun `--tee` tag (`[<role><local_rank>]:`, log-formats.md section 3) right after text on the same
# line. torchrun's tee writes each worker's output as it comes, behind that worker's tag, and a worker's text
# that ends without a newline (a `\r` progress bar, `print(..., end="")`) leaves the next worker's tag and
# line glued after it: the line holds two writers.
_TEE_GLUE_RE = re.compile(r"(?<=\S)\[(?!rank\d)[A-Za-z_][\w-]{0,63}?\d{1,6}\]:")


def split_tee(seg: str) -> list[str]:
    """`seg` cut before every `--tee` tag glued after another writer's text, each later piece behind the
    outer prefixes (a pdsh host, a Slurm label) the line has before its own first tag; `[seg]` when the
    line does not start with a tag (behind such prefixes) or holds no second one."""
    if seg.count("]:") < 2:
        return [seg]
    first = _TAG_RE.search(seg)
    if first is None:
        return [seg]
    outer = seg[:first.start()]
    if outer and (len(outer) > 256 or not outer.rstrip().endswith(":")):
        return [seg]
    cuts = [m.start() for m in _TEE_GLUE_RE.finditer(seg, first.end())]
    if not cuts:
        return [seg]
    out = [seg[:cuts[0]]]
    for a, b in itertools.pairwise([*cuts, len(seg)]):
        out.append(outer + seg[a:b])
    return out


def _glued_parts(seg: str) -> list[str]:
    """`seg` cut before a user-style rank tag and before a c10 `[rankN]:[<L>` envelope glued after another
    writer's text (each piece one writer's)."""
    out: list[str] = []
    for part in _RANK_TAG_SPLIT_RE.split(seg):
        out.extend(_ENVELOPE_GLUE_RE.split(part) if "]:[" in part else (part,))
    return out


def _empty_text(raw: str) -> bool:
    """True when `raw`'s first `[rankN]:` envelope ends it (a tqdm redraw glued to the next line's tag):
    no prefix before it can reach into it, so the line's text after `strip_prefixes` is empty."""
    m = RANK_RE.search(raw)
    return m is not None and m.end() == len(raw)


def _explained(events: list[Event], first: int, num: int) -> bool:
    """True when `events[first:]` (what the parsers read from line `num` so far) hold an event of that line
    and no progress report: a fallback parser (`Parser.fallback`) is not fed the line. (A block's event
    that line `num` closed is of the block's first line. A line with a progress report is fed on: the
    number of an error line may read as a step, and the fallback's `error_line` is what tells the tables
    it is no progress: see `analysis.build`.)"""
    kinds = {e.kind for e in itertools.islice(events, first, None) if e.line == num}
    return bool(kinds) and "progress" not in kinds


class _Static(NamedTuple):
    """What a Reader derives from its parser classes and their triggers alone (the same for every file)."""

    trig_text: tuple[tuple[str, ...], ...]
    literals: tuple[str, ...]
    other_literals: tuple[str, ...]
    line_triggers: bool
    repeat_matters: list[bool]
    fallbacks: list[bool]
    progress_at: list[int]
    wanted: dict[int, list[int]]   # shared by the readers of these classes: the same answer for a mask


@lru_cache(maxsize=8)
def _static(classes: tuple[type[Parser], ...], trig_text: tuple[tuple[str, ...], ...]) -> _Static:
    """`_Static` of `classes` whose triggers are `trig_text` (part of the key: a user pattern adds some)."""
    literals = tuple(t for lits in trig_text for t in lits if t)
    return _Static(
        trig_text=trig_text, literals=literals,
        other_literals=tuple(t for cls, lits in zip(classes, trig_text, strict=True)
                             if cls is not ProgressParser for t in lits if t),
        line_triggers=not any("\n" in lit for lit in literals),
        repeat_matters=[cls.repeats_matter for cls in classes], fallbacks=[cls.fallback for cls in classes],
        progress_at=[i for i, cls in enumerate(classes) if cls is ProgressParser], wanted={},
    )


class Reader:
    """Reads one binary stream. A fresh Reader (and fresh parser instances) per input file."""

    def __init__(self, path: str, origin: Origin, parser_classes: Sequence[type[Parser]],
                 triggers: re.Pattern[bytes] | None = None, reference: bool = False,
                 max_line: int = MAX_LINE) -> None:
        self.path = path
        self.max_line = max(MIN_LINE, max_line)
        # The plain reader (for tests): every trigger line parsed with an `in` test per parser's trigger,
        # no repeat memo, no fast paths, blocks searched with `re`.
        self.reference = reference
        self.origin = origin
        # The file's part of the LogLine of a tqdm redraw read in bulk (`progress.bar_line`).
        self.bar_origin = (path, origin.rank, origin.host, origin.local_rank, origin.attempt, origin.stream)
        self.parser_classes = tuple(parser_classes)
        self.parsers = [cls() for cls in parser_classes]
        self.fast: FastProgress | None = None
        static = _static(self.parser_classes, tuple(tuple(cls.triggers) for cls in parser_classes))
        self.trig_text = static.trig_text
        self.dispatch = dispatch_for(self.trig_text)
        self.wanted = static.wanted  # parser mask -> the parsers' indices, in feeding order
        self.literals, self.other_literals = static.literals, static.other_literals
        self.triggers = triggers if triggers is not None else compile_triggers(parser_classes)
        # Small blocks are read line by line (`_block_lines`) when no trigger holds a newline.
        self.line_triggers = static.line_triggers
        self.others = self.triggers
        self.result = FileResult()
        self.dialect = Dialect()
        self.wrap_slack = 0         # a word wrap's slack (prepare), 0 for a hard wrap
        self.wrap_joint = ""        # what rejoins two pieces: " " where the wrap dropped its space
        self.active: set[int] = set()
        self.envelope_ranks = self.result.envelope_ranks
        self.agent_unranked = False   # the agent's lines keep no rank from the file's name (several workers)
        # Lines already fed that gave no event and left every parser idle (and that no parser declaring
        # `repeats_matter` read): a line equal to one of them apart from its clock time is the same
        # message again, which gives no event either, so it is not parsed again.
        self.seen: set[str] = set()
        self.seen_b: set[bytes] = set()  # the ASCII keys of `seen`, as bytes (checked before decoding)
        self.mpi_ranks: dict[str, int] = {}   # Open MPI writer -> its tag's rank
        self.task_ranks: dict[str, int] = {}  # SLURM `srun -l` writer -> its task id
        self.task_launcher = False
        self.repeats = 0
        # Per key, the segments parsed although their key was not in `seen` (when read in parts: a part's
        # reader does not know the lines before it, which may have made them repeats; see `take_over`).
        self.misses: dict[str, int] | None = None
        self.repeat_matters, self.fallbacks = static.repeat_matters, static.fallbacks
        self.scanned = False  # True while reading blocks whose `[rankN]:` envelopes `_block` records
        # [index of the progress parser] when its `reads` applies (no user pattern), else never equal.
        at = static.progress_at
        self.progress_only = at if at and not ProgressParser.user_triggers and not reference else [-1]
        # Text before a tqdm redraw's percentage -> the progress series when such redraws are read in bulk
        # (`_bar`), else ().
        self.bar_heads: dict[str, tuple[Any, ...]] = {}
        self.ansi_free = False  # a part of a coloured file (`begin_part`): read without its colour codes
        self.tail: Tail | None = Tail()   # the file's end, for each writer's last lines (ingest/tail.py)

    # -- line level --------------------------------------------------------------------------
    def _handle(self, bline: bytes, num: int) -> None:
        if len(bline) > self.max_line:
            bline = bline[:self.max_line]
        clean = True
        if b"\x00" in bline:
            bline = bline.replace(b"\x00", b"")
            clean = False
        text = bline.decode("utf-8", "replace")
        if "\x1b" in text:
            text = ANSI_RE.sub("", text)
            clean = False
        scanned = self.scanned and clean
        if "\r" not in text:
            self._cr_segment(text, num, scanned)
            return
        fast = self.fast
        if fast is None:
            for cr_seg in text.split("\r"):
                self._cr_segment(cr_seg, num, scanned)
            return
        heads, seen, held_bars = self.bar_heads, self.seen, fast.bars
        glued = False
        for a, b, bar, env_only in (_cr_plan(bline, text) if clean else _cr_plan_of(text)):
            if bar is None or self.active:  # (not read as a redraw inside a block, as `_cr_segment` would)
                cr_seg = text[a:b]
                if env_only and not self.active and cr_seg in seen:
                    self.repeats += 1  # (`_segment` on a `[rankN]:` seen before: a redraw's envelope)
                else:
                    self._cr_segment(cr_seg, num, scanned)
                continue
            end = bar.end
            piece = text[a:end]
            key = heads.get(bar.head)
            if key and bar.colons <= 3:
                # `_bar` inline for a head read in bulk (its repeat key is the redraw: no time has hours)
                if piece in seen:
                    self.repeats += 1
                else:
                    step = int(text[bar.step[0]:bar.step[1]])
                    held = held_bars.get(key)
                    if held is not None and step >= held[0]:  # the common case: a held series moves on
                        if step > held[0]:  # (same count: no report, see redraw_in_place)
                            self.parsers[fast.index].count_step(key, held[0], step)  # type: ignore[attr-defined]
                            held[0], held[1], held[2], held[3] = step, num, piece, SegMatch(text, bar.spans)
                    elif not fast.take_bar(key, step, num, piece, m := SegMatch(text, bar.spans)):
                        self._bar_report(key, piece, m, num)
            elif not self._bar(piece, SegMatch(text, bar.spans), num):
                self._cr_segment(text[a:b], num, scanned)
                continue
            if end < b:
                rest = text[end:b]
                if not glued:  # (as `_cr_segment` would; once is enough: `num` is this line's)
                    self._mark_glued(num)
                    glued = True
                if bar.env and not self.active and rest in seen:
                    self.repeats += 1  # (`_segment` on a `[rankN]:` seen before)
                else:
                    self._cr_segment(rest, num, scanned)

    def _rejoined(self, text: str, num: int) -> None:
        """Feed a record rejoined from a wrapped paste's pieces as `_handle` feeds a line: a tqdm redraw's
        `\r`-segments and a `--tee` tag glued after another worker's bar are cut the same way."""
        for cr_seg in text.split("\r"):
            self._cr_segment(cr_seg, num, False)

    def _cr_segment(self, cr_seg: str, num: int, scanned: bool) -> None:
        """Feed one `\r`-segment of a line: cut before a `--tee` tag glued after another worker's text, after
        a tqdm bar with text glued to it, and between two ranks' glued lines."""
        for piece in split_tee(cr_seg):
            glued = split_glued(piece)
            for k, seg in enumerate(glued):
                if k + 1 < len(glued):
                    self._mark_glued(num)
                # Two ranks printing at once can glue their lines: `...loss 0.29[rank 0] step 2 ...`.
                parts = _glued_parts(seg) if seg.find("[rank", 1) > 0 else (seg,)
                for part in parts:
                    for piece_ in self._field_glued(part):
                        if piece_.strip():
                            self._segment(piece_, num, scanned)

    def _field_glued(self, seg: str) -> Sequence[str]:
        """`seg` cut before every record of the file's learned rank-field header glued after another
        writer's text (`...dt_ms=16612:35:15.808 INFO  [gpu-st-81:6611] [r00/24] step=3 ...`), each later
        piece behind the launcher label (`srun -l`'s task, pdsh's host) the line opens with, as its own line
        would be; `(seg,)` when it holds one record."""
        d = self.dialect
        field = d.rank_field
        if field is None or seg.count("/" + str(field[2]) if field[2] else field[0]) < 2:
            return (seg,)
        rx = field_glue_re(field, d.slurm, d.pdsh)
        if rx is None:
            return (seg,)
        lead = d.lead if d.lead and seg.startswith(d.lead) else ""
        rest = seg[len(lead):]
        outer_m = SLURM_RE.match(rest) if d.slurm else PDSH_NAME_RE.match(rest) if d.pdsh else None
        outer = lead + (outer_m.group(0) if outer_m is not None else "")
        cuts = [m.start() for m in rx.finditer(seg, len(outer) + 1)]
        if not cuts:
            return (seg,)
        out = [seg[:cuts[0]]]
        for a, b in itertools.pairwise([*cuts, len(seg)]):
            out.append(outer + seg[a:b])
        return out

    def _mark_glued(self, num: int) -> None:
        """Line `num` has text glued after a tqdm bar: the bar's writer is not the writer of what follows,
        so the bar keeps no rank from the file's envelope (see `_attribute`)."""
        if len(self.result.glued_bar_lines) < MAX_SEEN:
            self.result.glued_bar_lines.add(num)

    def _feed(self, i: int, num: int, read: Callable[[Parser], Iterable[Event]]) -> list[Event]:
        """The events `read` gets from parser `i` on line `num`; a parser bug costs that line (said in the
        notes) and the parser's state, not the rest of the file."""
        parser = self.parsers[i]
        try:
            return list(read(parser))
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.result.notes.append(f"{parser.name} failed on line {num}: {why[:200]}")
            self.parsers[i] = type(parser)()
            return []

    def _remember_inert(self, key: str) -> None:
        """Remember `key` (`repeat_key` of a line that gave nothing) so its repeats are skipped."""
        if len(self.seen) < MAX_SEEN:
            self.seen.add(key)
            if key.isascii():
                self.seen_b.add(key.encode())

    def _bar(self, piece: str, m: Groups, num: int) -> bool:
        """Read one plain tqdm redraw (`BAR_REDRAW_RE`) in bulk; False when `_cr_segment` must.

        Per distinct text before the percentage (`head`), the first redraw is read the ordinary way, and
        checked: the parsers its triggers reach beside the progress parser are stateless and give
        nothing for it, and the progress parser reads the fields `bar_fields` gives. Later redraws with
        that head skip dispatch, `strip_prefixes` and the parsers' searches (their text differs only in
        digits and bar characters, which hold no trigger and no prefix): the progress series moves on
        in `FastProgress.take_bar`, and a restart or first report is fed with the fields read here.
        """
        head = m["head"]
        key = self.bar_heads.get(head)
        if not key:
            if key is None and len(self.bar_heads) < MAX_SEEN:
                self.bar_heads[head] = self._bar_head(piece, m, head)
            return False
        # (`repeat_key` cuts nothing unless a time has hours: the label holds no colon, the times one each)
        if (repeat_key(piece) if piece.count(":") > 3 else piece) in self.seen:
            self.repeats += 1
            return True
        fast = self.fast
        assert fast is not None
        if not fast.take_bar(key, int(cast(str, m["step"])), num, piece, m):
            self._bar_report(key, piece, m, num)
        return True

    def _bar_report(self, key: tuple[Any, ...], piece: str, m: Groups, num: int) -> None:
        """Feed the progress parser a redraw of series `key` that `take_bar` did not take (the series' first
        report, or a restart), after the redraw held back for that series."""
        fast = self.fast
        assert fast is not None
        fast.sync_bar(key)
        stub, fields = (piece, num, self.bar_origin), bar_fields(m, key[3])
        # (`key` is the series `feed_fields` would give the redraw's LogLine: see `_bar_head`)
        out = self._feed(fast.index, num, lambda p: cast(ProgressParser, p).feed_bar(key, stub, fields))
        if out:
            self.result.events.extend(out)
            self.result.lines_with_events += 1

    def _bar_line(self, piece: str, num: int) -> LogLine:
        """`_line` of a redraw `_bar` reads: no prefix (checked per head by `_bar_head`), so the file's."""
        return bar_line((piece, num, self.bar_origin))

    def _bar_head(self, piece: str, m: Groups, head: str) -> tuple[Any, ...]:
        """The progress series of the redraws starting with `head` when they can be read in bulk (see
        `_bar`), else ().

        Whether they can is decided once per process for a head, dialect and set of parsers (and which of
        them hold state): the checks read the redraw's text only (a redraw without prefix has the file's
        LogLine whatever the file), and `_bar` takes them for every later redraw with that head, as those
        differ only in digits and bar characters; thousands of per-rank files show the same bar.
        """
        # (whether each parser holds state now is part of the key: a parser may take state as it reads)
        key = (head, self.dialect, self.parser_classes, tuple(self.trig_text),
               tuple(getattr(p, "__dict__", None) != {} for p in self.parsers))
        if key in _BAR_HEADS:
            got = _BAR_HEADS[key]
        else:
            got = self._bar_usable(piece, m, head)
            if len(_BAR_HEADS) >= MAX_SHAPES:
                _BAR_HEADS.clear()
            _BAR_HEADS[key] = got
        return () if got is None else (self.origin.rank, self.origin.local_rank, "tqdm", got[0])

    def _bar_usable(self, piece: str, m: Groups, head: str) -> tuple[str | None] | None:
        """(the label,) of the redraws starting with `head` when they can be read in bulk, else None."""
        usable, label = bar_label(head)
        if not usable or ProgressParser._builtin(piece) != bar_fields(m, label):
            return None
        fast = self.fast
        assert fast is not None
        bits = self.dispatch.mask(piece)
        if not bits >> fast.index & 1:
            return None
        if strip_prefixes(piece, self.dialect, None) != Envelope(text=piece):
            return None
        line = self._bar_line(piece, 0)
        if line != self._line(piece, 0):  # (which records nothing: no prefix)
            return None
        for i, parser in enumerate(self.parsers):
            if i == fast.index or not bits >> i & 1:
                continue
            cls = type(parser)
            state = getattr(parser, "__dict__", None)
            if state is None or state or cls.wants_more is not Parser.wants_more \
                    or cls.close is not Parser.close:
                return None  # a parser with state: it must see every redraw
            try:
                if list(parser.feed(line)) or parser.wants_more():
                    return None
            except Exception:
                return None
        return (label,)

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
        if env.writer is not None and env.writer.startswith(("vllm rank ", "ray ")):
            self.result.worker_tagged = True
        if env.rank is not None:
            self.envelope_ranks.add(env.rank)
            if env.local_rank is not None:
                self.result.rank_pairs.add((env.local_rank, env.rank))
                if len(self.result.scoped_pairs) < MAX_SEEN:
                    self.result.scoped_pairs.add((outer_stream(env.writer), env.local_rank, env.rank))
        if env.mpi_rank is not None and env.writer is not None and len(self.mpi_ranks) < MAX_SEEN:
            self.mpi_ranks.setdefault(env.writer, env.mpi_rank)
        elif env.task is not None and env.writer == f"task {env.task}" and len(self.task_ranks) < MAX_SEEN:
            self.task_ranks.setdefault(env.writer, env.task)
        elif env.task is not None and env.mpi_rank is None:
            self.task_launcher = True   # a launcher prefix under a label (`3: [default1]:`): tasks are nodes
        return LogLine(
            text=env.text, raw=raw.rstrip("\n"), ref=SourceRef(self.path, num), rank=rank,
            host=env.host or o.host,
            local_rank=env.local_rank if env.local_rank is not None else o.local_rank,
            attempt=o.attempt, stream=env.stream or o.stream, time=env.time, clock=env.clock, level=env.level,
            writer=env.writer,
        )

    def _segment(self, raw: str, num: int, scanned: bool = False) -> None:
        """Feed one segment to the parsers whose triggers it holds (and to those inside a block).

        `scanned`: the block scan saw this segment's bytes as they are (no NUL or ANSI code removed),
        so its `[rankN]:` envelopes are recorded already.
        """
        key = None
        active = self.active
        if not active and not self.reference:
            key = repeat_key(raw)
            if key in self.seen:
                self.repeats += 1
                if _YEAR_DATE_RE.search(raw) is not None:
                    self._line(raw, num)  # (a repeat differs in its clock time: its dated stamp still counts)
                return
            misses = self.misses
            if misses is not None and (key in misses or len(misses) < MAX_SEEN):
                misses[key] = misses.get(key, 0) + 1
        bits = self.dispatch.mask(raw) if not self.reference else self._plain_mask(raw)
        for i in active:
            bits |= 1 << i
        wanted = self.wanted.get(bits)
        if wanted is None:
            order = sorted(range(len(self.parsers)), key=self.fallbacks.__getitem__)  # (fallbacks last)
            wanted = [i for i in order if bits >> i & 1]
            if len(self.wanted) < MAX_SHAPES:
                self.wanted[bits] = wanted
        if not wanted:
            if not scanned or not self._inert(raw):
                self._line(raw, num)  # its rank and dated stamp still count
            if key is not None:
                self._remember_inert(key)
            return
        if wanted == self.progress_only and scanned and \
                (_empty_text(raw) or not ProgressParser.reads(raw)) and self._inert(raw):
            return  # the progress parser would read nothing here, and the line says nothing else
        line = self._line(raw, num)
        produced = fed_repeat = False
        fast = self.fast
        events = self.result.events
        first = len(events)
        for i in wanted:
            if produced and self.fallbacks[i] and _explained(events, first, num):
                continue
            fed_repeat = fed_repeat or self.repeat_matters[i]
            if fast is not None and i == fast.index and (fast.state or fast.bars):
                # The progress parser gets the step report the fast path held back for this line's rank
                # (the other parsers and the other ranks' series never see it, so they need not wait),
                # and the tqdm redraws held back for the series this line may continue.
                fast.sync_rank(line.rank)
                if fast.bars:
                    fast.sync_who(series_owner(line))
            out = self._feed(i, num, lambda p: p.feed(line))
            if out:
                produced = True
                events.extend(out)
            if self.parsers[i].wants_more():
                active.add(i)
            else:
                active.discard(i)
        if produced:
            self.result.lines_with_events += 1
        if key is not None and not produced and not active and not fed_repeat:
            self._remember_inert(key)

    def _plain_mask(self, raw: str) -> int:
        """The reference reader's dispatch: an `in` test per trigger of every parser."""
        return sum(1 << i for i, lits in enumerate(self.trig_text) if any(lit in raw for lit in lits))

    def _inert(self, raw: str) -> bool:
        """True when building `raw`'s LogLine would record nothing: no year-dated stamp, no rank or
        local-rank pairing beyond the `[rankN]:` envelopes the block scan already recorded."""
        if _YEAR_DATE_RE.search(raw) is not None or _TAG_RE.search(raw) is not None or "<std" in raw:
            return False  # (an Open MPI `[job,rank]<stdout>:` tag names its writer)
        return raw.count("[rank") == len(_RANK_ENVELOPE_RE.findall(raw))

    # -- block level -------------------------------------------------------------------------
    def _block(self, block: bytes, lineno: int) -> int:
        """Feed the interesting lines of `block` (complete lines); return the updated line count."""
        pos, n = 0, len(block)
        search = self.triggers.search
        self._note_long_lines(block, lineno)
        if b"[rank" in block:
            self._scan_block_ranks(block)
        if b" pid=" in block or b"(Worker (TP" in block:
            self._scan_worker_tags(block)
        if self.dialect.rank_field is not None:
            self._scan_block_fields(block)
        if n >= ROWS_MIN_BYTES and not self.reference:
            return self._block_rows(block, lineno)
        if not self.reference and self.line_triggers:
            return self._block_lines(block, lineno)
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
            if (self.fast is None or not self._take_fast(line, lineno + 1)) and not self._repeat(line):
                self._handle(line, lineno + 1)
            lineno += 1
            pos = end + 1
        return lineno

    def _block_lines(self, block: bytes, lineno: int) -> int:
        """`_block` for a small block, line by line: whether a line holds a trigger is remembered per shape
        (`holds_trigger`), so chatter seen before with other numbers costs no search of the trie.

        The same lines as the search over the block: no trigger holds a newline (`line_triggers`), so every
        match lies within one line.
        """
        lines = block.split(b"\n")
        if not lines[-1]:
            lines.pop()  # (the block ends with a newline)
        triggers, fast = self.triggers, self.fast
        for k, line in enumerate(lines, lineno + 1):
            # (inside a multi-line block every line goes on; else a trigger line not read another way)
            if self.active or (holds_trigger(triggers, line)
                               and (fast is None or not self._take_fast(line, k)) and not self._repeat(line)):
                self._handle(line, k)
        return lineno + len(lines)

    def _block_rows(self, block: bytes, lineno: int) -> int:
        """`_block` for a big block: RE2 picks the trigger lines; Python sees only those (and the lines
        a multi-line block asks for).

        The torchtitan step lines are sorted out for the whole block in Arrow before the loop (rank, step
        and stamp extracted by RE2), so `FastProgress.take_row` only compares integers for each.
        """
        # (numpy and Arrow only for big blocks: a job of small files is read, here and in every worker forked
        # from this process, without their 16 MB and more)
        from hanglens.ingest.rows import Rows, release_arrow_memory

        rows = Rows(block)
        hits = rows.hits(self.literals)
        count = rows.count
        upto = 0  # lines before this one were fed already (a multi-line block)
        while self.active and upto < count:  # a block open at the end of the previous one goes on here
            self._handle(rows.line(upto), lineno + upto + 1)
            upto += 1
        nhits = len(hits)
        fast = self.fast
        # Per hit: the step line's rank (-1: not one), step and stamp key.
        rank_of: list[int] = [-1] * nhits
        step_of: list[int] = []
        stamp_of: list[int] = []
        if nhits and fast is not None:
            rank_of, step_of, stamp_of = self._step_rows(rows, hits, rows.subset(hits))
        # Arrow's allocator keeps what the block's arrays freed (10-20 MB more at the peak of `analyze`).
        release_arrow_memory()
        starts = rows.starts[hits].tolist()
        ends = rows.ends[hits].tolist()
        # `FastProgress.take_row` and `_repeat` inline (their common cases), as these are most of the hits.
        state: dict[int, list[Any]] = fast.state if fast is not None else {}
        lo, hi = (fast.lo, fast.hi) if fast is not None else ((0, 0, b""), (0, 0, b""))
        seen_b, max_line = self.seen_b, self.max_line
        for j, i in enumerate(hits.tolist()):
            if i < upto:
                continue
            num = lineno + i + 1
            line = block[starts[j]:ends[j]]
            r = rank_of[j]
            if r >= 0:
                assert fast is not None
                step = step_of[j]
                st = state.get(r)
                if st is not None and st[1] is not None and step >= st[1]:  # a series moving on
                    if step > st[1]:
                        self.parsers[fast.index].count_step(st[0], st[1], step)  # type: ignore[attr-defined]
                    st[1], st[3], st[4] = step, num, line
                    stamp = stamp_of[j]
                    if stamp < lo[0]:
                        lo = (stamp, num, line)
                    if stamp > hi[0]:
                        hi = (stamp, num, line)
                    continue
                fast.lo, fast.hi = lo, hi
                took = fast.take_row(r, step, num, line, stamp_of[j])
                lo, hi = fast.lo, fast.hi
                if took:
                    continue
            if seen_b and not self.active and line.find(b"[rank", 1) < 0 and len(line) <= max_line \
                    and not line.translate(None, _PLAIN) and _bytes_key(line) in seen_b:
                self.repeats += 1
                continue
            if fast is not None:
                fast.lo, fast.hi = lo, hi
            self._handle(line, num)
            i += 1
            while self.active and i < count:
                self._handle(rows.line(i), lineno + i + 1)
                i += 1
            upto = i
            if fast is not None:
                lo, hi = fast.lo, fast.hi
        if fast is not None:
            fast.lo, fast.hi = lo, hi
        return lineno + count

    def _step_rows(self, rows: Rows, hits: numpy.ndarray, arr: Any
                   ) -> tuple[list[int], list[int], list[int]]:
        """Per hit, the rank (-1 when not a fast step line), step and stamp key of the torchtitan step lines
        among `hits` (`arr`: their Arrow values).

        A hit is one when `_take_fast` would read it: `FAST_HEAD_RE2` and `FAST_STEP_RE2` match, printable
        ASCII, no other parser's trigger, no `poch` or `iteration`, within the line limit, a valid date,
        a step of at most 18 digits.
        """
        import numpy
        import pyarrow.compute as pc

        from hanglens.ingest.rows import Digits, alternation, index_array, ints, matching, offsets_of, true_at

        n = len(hits)
        rank_of = numpy.full(n, -1, dtype=numpy.int64)
        step_of = numpy.zeros(n, dtype=numpy.int64)
        stamp_of = numpy.zeros(n, dtype=numpy.int64)
        # `step:` first (a plain substring search), then the regexes over those lines only.
        at = true_at(pc.match_substring_regex(arr, "step:"))  # (RE2's literal search beats `match_substring`)
        at = at[rows.ends[hits[at]] - rows.starts[hits[at]] <= self.max_line]
        if len(at):
            # Rank, stamp and step by place from the block's bytes (extracting the envelope's groups with
            # RE2 costs 12 MB per reader): the envelope matched, so the rank's digits start at `[rank`'s
            # end, the first `YYYY-MM-DD ` is its date; the step is the one group extracted. (Over every
            # `step:` line, not only those the checks keep: nearly all of them are kept, and one array less.)
            sub = arr.take(index_array(at))
            ok = matching(sub, FAST_HEAD_RE2 + r"[ -~]*\n?$")
            ok &= ~matching(sub, alternation(("poch", "iteration", *self.other_literals)))
            steps = pc.extract_regex(sub, FAST_STEP_RE2)
            ok[true_at(pc.invert(steps.is_valid()))] = False
            ok[true_at(pc.invert(pc.match_substring_regex(steps.field("step"), r"^\d{1,18}$")))] = False
            idx = numpy.flatnonzero(ok)
            dates = offsets_of(pc.find_substring_regex(sub, r"\d{4}-\d\d-\d\d "))[idx]
            at, got = at[idx], steps.field("step").take(index_array(idx))
        if len(at):
            start = rows.starts[hits[at]]
            digits = Digits(rows.block)
            rank, _ = digits.run(start + 5, 6)
            date_at = start + dates
            stamp = digits.stamps(date_at)
            ms, ms_len = digits.run(date_at + 20, 3)
            comma = digits.bytes[date_at + 19] == 44
            stamp = stamp * 1000 + numpy.where(comma & (ms_len == 3), ms, 0)
            day = stamp // 1_000_000_000  # YYYYMMDD
            days = day[:1] if day.min() == day.max() else numpy.unique(day)  # (a block spans a day or two)
            good = [d for d in days.tolist()
                    if valid_date(f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d}".encode())]
            keep = numpy.arange(len(day)) if len(good) == len(days) else \
                numpy.flatnonzero(numpy.isin(day, good))
            pos = at[keep]
            rank_of[pos] = rank[keep]
            step_of[pos] = ints(got.take(index_array(keep)))
            stamp_of[pos] = stamp[keep]
        return rank_of.tolist(), step_of.tolist(), stamp_of.tolist()

    def _scan_block_ranks(self, block: bytes) -> None:
        """Record every `[rankN]:` envelope (and `[tagM]:[rankN]:` local-rank pairing) in `block`."""
        if _TAGGED_RANK in block:
            for local, rank in set(_RANK_SCAN_RE.findall(block)):
                self.envelope_ranks.add(int(rank))
                if local:
                    self.result.rank_pairs.add((int(local), int(rank)))
            return
        for rank in set(_RANK_ONLY_RE.findall(block)):
            self.envelope_ranks.add(int(rank))

    def _scan_worker_tags(self, block: bytes) -> None:
        """Record the Ray/vLLM worker tags opening lines of `block` (the ranks vLLM's tags name, and that
        the console holds tagged workers' lines), as `_line` does for the lines it reads one by one."""
        ranks = {m["rank"] or m["tp"] or m["tp2"] for m in _WORKER_TAG_SCAN_RE.finditer(block)}
        if ranks:
            self.result.worker_tagged = True
            self.envelope_ranks.update(int(r) for r in ranks if r is not None)

    def _scan_block_fields(self, block: bytes) -> None:
        """Record the rank of every line in `block` whose learned rank field names one (as `[rankN]:`
        envelopes are, `_scan_block_ranks`): a console of several such writers gives none of them the rest."""
        field = self.dialect.rank_field
        assert field is not None
        for rank in set(_field_scan(self.dialect.lead, field).findall(block)):
            if int(rank) < field[2] or not field[2]:
                self.envelope_ranks.add(int(rank))

    def _repeat(self, line: bytes) -> bool:
        """True (and counted) when `line` is one plain segment repeating an inert earlier one (see `seen`).

        Decided on the bytes: an ASCII line within the line limit, without NUL, ESC or `\r` (the bytes
        `_handle` removes, strips from or splits on) and with no second `[rank`, is exactly the one segment
        `_handle` would feed, and its key is the bytes of the key `_segment` would compute.
        """
        if self.active or not self.seen_b or line.find(b"[rank", 1) >= 0:
            return False
        if line.translate(None, _PLAIN) or len(line) > self.max_line:
            return False
        key = _bytes_key(line)  # (no newline in `line`)
        if key in self.seen_b and _YEAR_DATE_BYTES_RE.search(line) is None:  # (a dated one: see `_segment`)
            self.repeats += 1
            return True
        return False

    def _take_fast(self, line: bytes, num: int, vetted: bool = False) -> bool:
        """Give a torchtitan step line to the progress fast path; False if not one.

        `vetted`: the caller knows that no trigger of another parser is in the line.
        """
        m = _FAST_LINE_RE.match(line)
        if m is None or len(line) > self.max_line or b"poch" in line or b"iteration" in line:
            return False
        if line.translate(None, _PRINTABLE) or (not vetted and holds_trigger(self.others, line)):
            return False
        assert self.fast is not None
        rank = self.fast.take((b"", b"", line, *m.groups()), num)
        if rank is None:
            return False
        self.envelope_ranks.add(rank)
        return True

    def _note_long_lines(self, block: bytes, lineno: int) -> None:
        """Note every line of `block` longer than the line limit (`_handle` cuts them), in line order.

        A window of max_line + 1 bytes without a newline starts a long line; otherwise every line that
        starts before the window's last newline is short, so the search jumps there (memrchr speed).
        """
        pos, n = 0, len(block)
        while pos + self.max_line < n:
            nl = block.rfind(b"\n", pos, pos + self.max_line + 1)
            if nl >= 0:
                pos = nl + 1
                continue
            self.result.notes.append(_long_line_note(lineno + block.count(b"\n", 0, pos) + 1, self.max_line))
            end = block.find(b"\n", pos)
            pos = n if end < 0 else end + 1

    def prepare(self, head: bytes) -> tuple[bool, int | None]:
        """Decide CR-only line ends, the prefix dialect and a hard-wrap width from the file's head (a word
        wrap's width sets `wrap_slack`: its lines end up to SOFT_WRAP_SLACK short of the width)."""
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
        plain = [ANSI_RE.sub("", s) for s in sample] if b"\x1b" in text else sample
        hard = _wrap_width(plain, self.dialect.lead)
        if hard is not None:
            return cr_only, hard
        if plain is not sample:
            # A byte-counting wrap (`fold -w N` over a log saved with its colour codes) cut the lines at N
            # bytes, escape sequences included: measure each line with its codes (as filler at its end,
            # so it still starts like the record it is), read it without them.
            counted = [p + "\x01" * (len(s) - len(p)) for s, p in zip(sample, plain, strict=True)]
            hard = _wrap_width(counted, self.dialect.lead)
            if hard is not None:
                return cr_only, hard
        soft = _soft_wrap_width(plain)
        if soft is None:
            soft = _dropped_space_wrap_width(plain)
            if soft is not None:
                self.wrap_joint = " "
        if soft is not None:
            self.wrap_slack = SOFT_WRAP_SLACK
        return cr_only, soft

    def read(self, stream: ReadableStream) -> FileResult:
        head = stream.read(BLOCK)
        if head.startswith(UTF16_BOMS):
            self.result.notes.append("UTF-16 text (byte-order mark); decoded")
            stream = Utf16ToUtf8(Replay(head, stream))
            head = stream.read(BLOCK)
        head = topped_up(head, stream)
        unwrapped = ordered_stream(head, stream)
        if unwrapped is not None:
            stream = unwrapped[0]
            self.result.notes.append(unwrapped[1])
            head = stream.read(BLOCK)
        cr_only, wrap = self.prepare(head[: 1 << 16])
        if wrap:
            self._read_unwrapped(head, stream, wrap)
        else:
            if coloured(head):
                stream = AnsiFree(Replay(head, stream))
                head = stream.read(BLOCK)
            fast_at = None if self.reference else FastProgress.usable(self.parser_classes)
            if fast_at is not None:
                self.fast = FastProgress(self.parsers, fast_at, self.origin.local_rank, self._line,
                                         self.bar_origin)
                self.others = _other_triggers(self.parser_classes)
            self.scanned = not self.reference
            self._read_blocks(head, stream, cr_only, 0)
            self.scanned = False
            if self.fast is not None:
                self.fast.finish()
        self._close()
        return self.result

    # -- a big plain file read in parts by several workers (`hanglens.ingest.split`) ----------------------
    def __getstate__(self) -> dict[str, Any]:
        """A part's reader goes back from its worker without what the receiver rebuilds (`seen_b`)."""
        state = dict(self.__dict__)
        state["seen_b"] = None
        state["wanted"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.seen_b = {key.encode() for key in self.seen if key.isascii()}

    def begin_part(self, dialect: Dialect, later: bool = False, ansi_free: bool = False) -> None:
        """Get ready to read a part of a file whose head was read elsewhere and decided `dialect` (not a
        hard-wrapped paste, `\r`-only or UTF-16 text: those are read whole); `later`: not its first part
        (a reader another one may `take_over`); `ansi_free`: the file is read without its colour codes
        (`coloured`), as the whole-file reader reads it."""
        self.dialect = dialect
        self.ansi_free = ansi_free
        if later and self.misses is None:
            self.misses = {}
        fast_at = None if self.reference else FastProgress.usable(self.parser_classes)
        if fast_at is not None and self.fast is None:
            self.fast = FastProgress(self.parsers, fast_at, self.origin.local_rank, self._line,
                                     self.bar_origin)
            self.others = _other_triggers(self.parser_classes)
        self.scanned = not self.reference

    def read_part(self, stream: ReadableStream, lineno: int) -> int:
        """Read `stream` (whole lines) as the lines after line `lineno`; the number of the last one."""
        if self.ansi_free:
            stream = AnsiFree(stream)
        return self._read_blocks(stream.read(BLOCK), stream, False, lineno)

    def read_line(self, line: bytes, lineno: int) -> int:
        """Read one more line (`line` holds at most one newline, at its end); the new line count."""
        if self.ansi_free and b"\x1b" in line:
            line = ANSI_B_RE.sub(b"", line)
        if self.tail is not None:
            self.tail.keep(line)
        lineno = self._block(line, lineno)
        self.result.lines = lineno
        return lineno

    @property
    def idle(self) -> bool:
        """No parser is inside a multi-line block: a part of the file may end here."""
        return not self.active

    def end_part(self) -> None:
        """Put what the fast path holds back into the progress parser (before a merge or the end)."""
        self.scanned = False
        if self.fast is not None:
            self.fast.finish()

    def finish(self) -> FileResult:
        """The file's result after its last part: what the parsers flush at the end, ranks attributed."""
        self._close()
        return self.result

    def take_over(self, later: Reader) -> bool:
        """Take in `later`, which read the next part of this file from a fresh start while this reader
        was idle where that part starts (both after `end_part`): afterwards this reader is what it
        would be had it read that part itself, and holds the same events. False, with nothing changed,
        when a parser cannot say so exactly (`Parser.take_history`): then read the part again here."""
        res, got = self.result, later.result
        if len(later.mpi_ranks) >= MAX_SEEN or not self.idle:
            return False
        by_parser: dict[str, list[Event]] = {}
        for e in got.events:
            by_parser.setdefault(e.parser, []).append(e)
        subs: dict[int, list[Event]] = {}
        for mine, theirs in zip(self.parsers, later.parsers, strict=True):
            try:
                out = theirs.take_history(mine, by_parser.get(theirs.name, []))
            except Exception:  # a merge bug costs speed (the part is read again), never the file
                out = None
            if out is None:
                return False
            subs.update(out)
        events = res.events
        for e in got.events:
            swap = subs.get(id(e))
            if swap is None:
                events.append(e)
            else:
                events.extend(swap)
        self.parsers[:] = later.parsers  # (the same list object: FastProgress holds it)
        self.active = later.active
        res.lines = got.lines
        if self.tail is not None and later.tail is not None and later.tail.data:
            self.tail.keep(later.tail.data)
        res.lines_with_events += got.lines_with_events
        res.notes.extend(got.notes)
        self.envelope_ranks |= got.envelope_ranks
        res.rank_pairs |= got.rank_pairs
        res.scoped_pairs |= got.scoped_pairs
        res.worker_tagged = res.worker_tagged or got.worker_tagged
        if got.dated is not None:
            d = res.dated
            res.dated = got.dated if d is None else (min(d[0], got.dated[0]), max(d[1], got.dated[1]))
        room = MAX_SEEN - len(res.glued_bar_lines)
        res.glued_bar_lines.update(sorted(got.glued_bar_lines)[:max(0, room)])
        for writer, rank in later.mpi_ranks.items():
            if len(self.mpi_ranks) < MAX_SEEN:
                self.mpi_ranks.setdefault(writer, rank)
        # The lines that part parsed although this reader knew them as inert were repeats here.
        seen = self.seen
        self.repeats += later.repeats + sum(n for key, n in (later.misses or {}).items() if key in seen)
        if len(seen | later.seen) <= MAX_SEEN:  # (past that, which keys it keeps depends on the order)
            for key in later.seen:
                self._remember_inert(key)
        for head, series in later.bar_heads.items():
            if len(self.bar_heads) < MAX_SEEN:
                self.bar_heads.setdefault(head, series)
        return True

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
        if self.tail is not None:
            self._add_tail(self.tail)

    def _add_tail(self, tail: Tail) -> None:
        """Each writer's last lines (`last_line` events, ingest/tail.py), after the file's events got their
        ranks: a writer the prefixes name no rank for takes the rank its other lines were given."""
        res = self.result
        if any(e.kind == "hang_detected" for e in res.events):
            # A rank here reported its own hang (where it waited): the rules on the last lines of a job with
            # no failure line (analysis/tails.py) stand down for the whole job; a big job keeps none of these.
            self.tail = None
            return
        owners: dict[tuple[str | None, int | None], int] = {}
        clash: set[tuple[str | None, int | None]] = set()
        for e in res.events:
            if e.rank is not None and not is_agent_event(e):
                k = (e.writer, e.local_rank)
                if owners.setdefault(k, e.rank) != e.rank:
                    clash.add(k)
        for k in clash:
            del owners[k]
        res.last_lines = tail_events(tail, res.lines, self.path, self.origin, self.dialect, res.events,
                                     owners)
        self.tail = None

    def _read_blocks(self, head: bytes, stream: ReadableStream, cr_only: bool, lineno: int = 0) -> int:
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
                    if self.tail is not None:
                        self.tail.keep(buf)
                    lineno = self._block(buf, lineno)
                elif skipping:  # the file ends inside an over-long last line
                    lineno += 1
                break
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                if len(buf) > self.max_line:
                    self.result.notes.append(_long_line_note(lineno + 1, self.max_line))
                    self._handle(buf[:self.max_line], lineno + 1)
                    carry, skipping = b"", True
                else:
                    carry = buf
                data = stream.read(BLOCK)
                continue
            carry = buf[cut:]
            if self.tail is not None:
                self.tail.keep(buf[:cut])
            lineno = self._block(buf[:cut], lineno)
            if len(carry) > self.max_line:
                self.result.notes.append(_long_line_note(lineno + 1, self.max_line))
                self._handle(carry[:self.max_line], lineno + 1)
                carry, skipping = b"", True
            data = stream.read(BLOCK)
        self.result.lines = lineno
        return lineno

    def _read_unwrapped(self, head: bytes, stream: ReadableStream, width: int) -> None:
        """Slow path for terminal-wrapped pastes: rejoin physical lines into logical ones."""
        slack, joint = self.wrap_slack, self.wrap_joint
        how = "word-wrapped" if slack else "hard-wrapped"
        self.result.notes.append(f"lines {how} at {width} columns were rejoined")
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
            if self.tail is not None and pieces:
                # (physical lines, numbered as the file's: a wrapped record's end is its last piece)
                self.tail.keep(b"\n".join(pieces) + b"\n")
            if len(carry) > self.max_line:
                self.result.notes.append(_long_line_note(lineno + len(pieces) + 1, self.max_line))
                pieces.append(carry[:self.max_line])
                carry, skipping = b"", True
            for piece in pieces:
                lineno += 1
                raw = piece[:self.max_line].replace(b"\x00", b"").decode("utf-8", "replace")
                text = ANSI_RE.sub("", raw)
                # (a line cut at the width counted with its colour codes is as long as the width with them;
                # a terminal wraps at visible columns, so a piece longer than that with them is measured
                # without)
                measured = len(raw) if len(raw) <= width else len(text)
                if pending and (_WRAP_START_RE.match(text) or not text.strip()
                                or (joint and not _carried_word(pending[-1], text, width))):
                    self._rejoined(joint.join(pending).rstrip(), pending_num)
                    pending = []
                if not pending:
                    pending_num = lineno
                pending.append(text)
                # (a wrap that dropped its spaces is judged by the next piece, `_carried_word`)
                padded = ((not joint and (len(text) - len(text.rstrip(" ")) >= 2 or measured < width - slack))
                          or len(pending) * width > self.max_line)
                if padded:
                    self._rejoined(joint.join(pending).rstrip(), pending_num)
                    pending = []
            if not data:
                break
            data = stream.read(BLOCK)
        if pending:
            self._rejoined(joint.join(pending).rstrip(), pending_num)
        self.result.lines = lineno

    def _drop_contradicted_name_rank(self) -> None:
        """Forget a rank read from the file name (`worker1.out`) that the file's own launcher table denies.

        torchrun's agent prints its ChildFailedError table into the console it was started from, listing
        the failed workers of that node by global rank (log-formats.md section 3.6, elastic/multiprocessing/
        errors/__init__.py). A file holding such a table is a node's console: when the table names two
        ranks, or ranks that are not the one in the file name, and no line of the file carries that rank's
        own `[rankN]:` envelope, the number in the name is a node or machine index, not the rank of the
        file's unprefixed lines.
        """
        own = self.origin.rank
        if own is None:
            return
        if len(self.envelope_ranks) > 1 or any(
                e.kind == "launch_config" and e.get("several_workers") for e in self.result.events):
            # A console of several workers (two ranks' own envelopes, or torchrun's OMP_NUM_THREADS banner,
            # printed only for --nproc-per-node above 1: torch/distributed/run.py): the agent's own lines
            # in it belong to no worker, whatever number the file's name holds (a pod's `worker-0.log`).
            self.result.events = [replace(e, rank=None) if e.rank == own and is_agent_event(e) else e
                                  for e in self.result.events]
            self.agent_unranked = True
        if own in self.envelope_ranks:
            return
        if any(e.kind == "launch_config" and e.get("several_workers") for e in self.result.events):
            # No line of this several-worker console carries the name's rank as its own envelope: the
            # number is the pod's or node's index (a `<job>-worker-1.log` pod running torchrun with two
            # workers holds ranks 2 and 3), so its unprefixed lines (the agent's store and rendezvous
            # errors, workers' output before init_process_group) are given no rank by the name. A line that
            # tags itself with that rank (`[rank 1] ...`) keeps it.
            tag = re.compile(rf"\[rank:? ?{own}\]")
            self.origin = replace(self.origin, rank=None)
            self.result.events = [replace(e, rank=None) if e.rank == own and not tag.search(e.text) else e
                                  for e in self.result.events]
            return
        named = {e.get("failed_rank") for e in self.result.events if e.kind == "child_failed"} - {None}
        if not named or (len(named) == 1 and own in named):
            return
        self.origin = replace(self.origin, rank=None)
        self.result.events = [replace(e, rank=None) if e.rank == own else e for e in self.result.events]

    def _attribute(self) -> None:
        """Give rank-less events the rank the file states unambiguously.

        The location's rank wins; else a single `[rankN]:` rank in the whole file. Events tagged with a
        torchrun local rank (`[default1]:`) only take a rank a line pairs with that local rank, so a
        console that interleaves several local ranks is not credited to the one that printed `[rankN]:`.
        """
        res = self.result
        self._drop_contradicted_name_rank()
        res.events = spawn_ranks(res.events, self.envelope_ranks)
        file_rank = self.origin.rank
        # A console where torchrun started several workers holds every worker's unprefixed output (a C++
        # abort's `terminate called ...`, plain prints): one `[rankN]:` rank in it does not own the rest.
        several = any(e.kind == "launch_config" and e.get("several_workers") for e in res.events)
        if not several:
            # torchrun prints no start banner when OMP_NUM_THREADS is set; its ChildFailedError table still
            # lists the workers it started (elastic/multiprocessing/errors/__init__.py): two of them, or one
            # that is not the `[rankN]:` rank, mean several workers wrote to this console.
            failed = [e for e in res.events if e.kind == "child_failed"]
            named = {e.get("failed_rank") for e in failed} - {None}
            several = len(named) > 1 or not named <= self.envelope_ranks or any(
                isinstance(t := e.get("table_local_ranks"), list) and len(t) > 1 for e in failed)
        if not several:
            # Two launcher-tagged streams (Open MPI `[job,0]` and `[job,1]`, two `srun -l` tasks, two pdsh
            # hosts) are two processes' output: the one `[rankN]:` among them speaks for its own stream only.
            # A Ray/vLLM worker tag (`(RayWorker pid=...)`) marks another process in the driver's console.
            writers = {e.writer for e in res.events if e.writer}
            several = len(writers) > 1 or any(w.startswith("ray ") for w in writers)
        if not several:
            # Lines that state two different ranks as their writer's own (a job runner's `RANK=<n>` echo
            # per worker, a ncclUniqueId failure's `[<r>] is setting up NCCL communicator`) are several
            # processes' output behind prefixes the reader does not know: the one `[rankN]:` speaks for
            # its own lines only.
            stated = {r for e in res.events if not is_agent_event(e)
                      for r in [non_negative_int(e.get("stated_rank"))] if r is not None}
            several = len(stated) > 1
        if not several:
            # NCCL lines of two processes (`<host>:<pid>:<tid>`, log-formats.md section 4.1: every process
            # prints its own pid; a node's output file holds all its local ranks'): the one `[rankN]:` rank
            # speaks for its own lines only, the other pid's init line states its own rank (section 4.3).
            pids = {(e.get("nccl_host"), e.get("pid")) for e in res.events
                    if isinstance(e.get("nccl_host"), str) and isinstance(e.get("pid"), int)
                    and e.parser not in DUMP_PARSERS}
            several = len(pids) > 1
        if not several:
            # Stack dumps of two processes are two processes' stacks pasted together (`dumped_pid`): the one
            # `[rankN]:` rank of the file owns at most one of them, and the file does not say which.
            several = len({p for e in res.events if (p := dumped_pid(e)) is not None}) > 1
        if file_rank is None and len(self.envelope_ranks) == 1 and not several:
            file_rank = next(iter(self.envelope_ranks))
        by_local: dict[int, set[int]] = {}
        for lr, r in res.rank_pairs:
            by_local.setdefault(lr, set()).add(r)
        # Two launcher streams in one file (`srun -l` tasks, pdsh hosts: one torchrun agent per node) number
        # their workers' local ranks each from 0 (log-formats.md section 9.3): a `[default0]:` line takes the
        # rank its own stream paired with local rank 0, never another node's.
        scoped: dict[tuple[str, int], set[int]] = {}
        for outer, lr, r in res.scoped_pairs:
            scoped.setdefault((outer, lr), set()).add(r)
        streams = {outer_stream(e.writer) for e in res.events if e.local_rank is not None and e.writer}
        split = len(streams) > 1
        own_local = self.origin.local_rank
        # In a console where workers' lines carry torchrun's `[defaultN]:` tag, untagged lines are the
        # agent's own (worker failures, SIGTERMs, ChildFailedError): they belong to no worker rank.
        teed = own_local is None and any(e.local_rank is not None for e in res.events)

        glued = res.glued_bar_lines

        def two_writers(e: Event) -> bool:
            # A tqdm bar with another process's line glued to it: a line of two writers is given to
            # neither by what the rest of the file says (in a console holding one `[rankN]:` envelope,
            # that rank printed the glued line, so the bar may be anyone's).
            return self.origin.rank is None and e.local_rank is None and e.line in glued

        def rank_for(e: Event) -> int | None:
            if two_writers(e):
                return None
            if e.local_rank is not None and e.local_rank != own_local:
                ranks = (scoped.get((outer_stream(e.writer), e.local_rank), set()) if split
                         else by_local.get(e.local_rank, set()))
                return next(iter(ranks)) if len(ranks) == 1 else None
            if (self.origin.rank is None and (teed or is_agent_event(e))) or (self.agent_unranked
                                                                            and is_agent_event(e)):
                return None
            return file_rank

        res.events = [e if e.rank is not None or rank_for(e) is None else replace(e, rank=rank_for(e))
                      for e in res.events]
        if self.origin.rank is None:
            # A stream whose own lines name one rank (or one Open MPI process's tag) owns its unranked lines.
            owners = stream_ranks(res.events, self.mpi_ranks, self.envelope_ranks,
                                  {} if self.task_launcher else self.task_ranks)
            # A tqdm bar with another writer's line glued to it is not that writer's (see `rank_for`).
            res.events = [replace(e, rank=owners[e.writer])
                          if e.rank is None and e.writer in owners and not is_agent_event(e)
                          and not two_writers(e) else e
                          for e in res.events]
            # srun's own `task <t>: Exited with exit code <c>` line names the task; in a file whose task
            # labels are its ranks (srun started the ranks itself, `tasks_are_ranks`) that task is the rank
            # (failure-signatures.md section 6, SLURM row; log-formats.md section 9.3). A task stream that
            # owns one rank is not enough: with one torchrun per node, node 0's stream may state only rank
            # 0 while node 1's states ranks 8-15, and srun's `task 1` is then node 1.
            tasks = {w: r for w, r in owners.items() if w is not None and w.startswith("task ")}
            if (tasks and all(w == f"task {r}" for w, r in tasks.items()) and not self.task_launcher
                    and tasks_are_ranks(res.events, self.task_ranks)):
                res.events = [_srun_task_rank(e) for e in res.events]
            # mpirun's report of the first failed process names its MPI_COMM_WORLD rank (parsers/mpirun.py),
            # the global rank when mpirun started the training processes themselves.
            if any(is_mpirun_exit(e) for e in res.events) and mpirun_starts_ranks(res.events):
                res.events = [_mpirun_rank(e) for e in res.events]
        if res.worker_tagged and self.origin.rank is None:
            # Ray and vLLM tag every worker process's lines in the console of the process that started
            # them (log-formats.md section 9.2), so that console's untagged lines are its own: one writer,
            # the driver (Ray's driver script, vLLM's API server or engine), whose later lines may show it
            # went on after an error (a serving process rejects a request, logs it and keeps serving).
            res.events = [replace(e, writer="driver")
                          if e.rank is None and e.writer is None and not is_agent_event(e) else e
                          for e in res.events]
        res.ranks = {e.rank for e in res.events if e.rank is not None} | self.envelope_ranks
        res.hosts = {e.host for e in res.events if e.host}


@lru_cache(maxsize=8)
def _field_scan(lead: str, field: tuple[str, str, int]) -> re.Pattern[bytes]:
    """`prefix.field_pattern` over the lines of a block (each line's start)."""
    return re.compile(b"(?m)" + field_pattern(lead, field).encode())


def _fewer_than_the_world(events: list[Event], marks: list[Event]) -> bool:
    """This parent ran fewer processes than the world size its console states: it is one node's launcher of
    several (one `mp.spawn` per node, rank = node_rank * nprocs + index), and with no rank on any line the
    node's offset is unknown, so a process index is no global rank (torch/multiprocessing/spawn.py numbers
    its processes 0..nprocs-1 on every node). Its processes: the ones it stopped after the first failure
    (`Terminating process <pid>`, counted into `stopped`) and the failed one, or the distinct worker pids
    its processes stated, whichever is more. The world: stated by every line that states one, alike."""
    worlds = {e.get("world_size") for e in events if e.kind == "world_info" and e.get("world_size")}
    if len(worlds) != 1:
        return False
    world = next(iter(worlds))
    stopped = max((non_negative_int(e.get("stopped")) or 0 for e in marks), default=0)
    pids = {e.get("worker_pid") for e in events if e.kind == "world_info" and e.get("worker_pid")}
    ran = max(stopped + 1, len(pids))
    return isinstance(world, int) and ran >= 2 and ran < world


def spawn_ranks(events: list[Event], envelope_ranks: set[int]) -> list[Event]:
    """Place the processes torch.multiprocessing.spawn's parent names (parsers/spawn.py) in the job.

    The process index is the script's local rank; the parent's console holds the output of its own processes
    only, so when their own lines name a block of ranks starting at a multiple of its size (node_rank *
    nprocs, as a launcher per node gives them), that start is the node's offset, else the index is the rank
    (one launcher for every rank). The failed process's traceback, printed by the parent after
    `-- Process N terminated with the following error:`, is that process's: its events take its rank.
    """
    marks = [e for e in events if e.kind == "launcher_exit" and e.get("launcher") == "mp.spawn"]
    if not marks:
        return events
    ranks = set(envelope_ranks) | {e.rank for e in events if e.rank is not None and not is_agent_event(e)}
    lo = min(ranks, default=0)
    offset = lo if len(ranks) >= 2 and max(ranks) - lo + 1 == len(ranks) and lo % len(ranks) == 0 else 0
    if not ranks and _fewer_than_the_world(events, marks):
        return events
    placed: dict[int, int] = {}
    spans: list[tuple[str, int, int, int]] = []
    for e in marks:
        idx = non_negative_int(e.get("local_rank"))
        if idx is None:
            continue
        placed[id(e)] = offset + idx
        end = non_negative_int(e.get("block_end"))
        if e.get("raised") and end is not None:
            spans.append((e.path, e.line, end, offset + idx))
    out: list[Event] = []
    for e in events:
        if id(e) in placed:
            e = replace(e, fields={**e.fields, "placed_rank": placed[id(e)]})
        elif e.rank is None and not is_agent_event(e):
            for path, first, last, rank in spans:
                if e.path == path and first < e.line <= last:
                    e = replace(e, rank=rank)
                    break
        out.append(e)
    return out
