"""The last lines each writer of a file printed, of any kind (failure-signatures.md section 16 item 1: per
rank, its last line), as `last_line` events: bounded to the file's last TAIL_BYTES, TAIL_LINES per writer.

The block reader passes on the lines no parser triggers on, so a script whose every line is its own (`print(
f"rank {r}: building vocabulary ...")`, `logging.info("loading shard 3/8")`) leaves no event saying where each
rank stopped. A file's tail is kept as it is read (`Tail`), and when the file ends each writer's last line
becomes an event, its earlier ones a field of it (`before`, oldest first): the writer of a line is what its
prefixes say (a `--tee` tag, a `[rankN]:` envelope, the script's own `rank R:`), else the file's (a
`--log-dir` worker file). Lines that are what a stop from outside
left behind are not a writer's last line: a traceback (Ctrl-C's `KeyboardInterrupt`, the agent's
`SignalException`), a failure line a parser read, a stack dump and whatever follows it in the file.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import Any

from hanglens import lazyre as re
from hanglens.ingest.prefix import ANSI_RE, Dialect, strip_prefixes
from hanglens.model import Event, Origin, event_order

TAIL_BYTES = 1 << 16   # of a file's end kept while it is read (every line of a small file)
TAIL_LINES = 6         # a writer's last lines kept (one event: its last line, the others as `before`)
TAIL_SCAN = 600        # lines of the kept end looked at
QUICK_LINES = TAIL_LINES + 4   # looked at first: enough for a file of one writer that states no rank
TAIL_TEXT = 300        # characters of a line kept
KIND = "last_line"      # (declared with its fields in hanglens/parsers/__init__.py: LAST_LINE_FIELDS)
PARSER = "tail"

# Event kinds whose line is what a stop, a crash or a stack dump printed, never where a rank stopped.
_NOT_A_STOP_POINT = frozenset({
    "exception", "error_line", "job_stopped", "closing_signal", "worker_failed", "child_failed",
    "launcher_exit", "peer_closed", "gloo_error", "network_error", "store_error", "process_teardown",
    "watchdog_terminated", "hang_detected",
})
_DUMP_KINDS = frozenset({"stack_dump"})
# The lines a traceback is made of after its header: frames, source lines and caret marks (indented), and
# the chaining sentences between two tracebacks.
_TB_HEAD_RE = re.compile(r"^Traceback \(most recent call last\):|\(most recent call first\):$")
_TB_CHAIN_RE = re.compile(
    r"^(?:During handling of the above exception|The above exception was the direct cause)")
# The lines a stack dump opens with before its first thread: py-spy's `Process <pid>: <command>` and `Python
# v<version> (<path>)` (py-spy's dump command), faulthandler's `Timeout (0:10:00)!` of `dump_traceback_later`
# (CPython Modules/faulthandler.c): the dumper's, not the process's own last words (failure-signatures.md
# section 16 item 4).
_DUMP_HEAD_RE = re.compile(r"^(?:Process \d{1,10}: |Python v\d|Timeout \(\d{1,4}:\d\d:\d\d\)!$)")


_Writer = tuple[int | None, int | None, str | None]   # (rank, local rank, launcher stream) its prefixes state


class Tail:
    """The last bytes of a file read so far, from a line's start (blocks arrive as whole lines)."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = b""

    def keep(self, block: bytes) -> None:
        if len(block) >= TAIL_BYTES:
            cut = block.find(b"\n", len(block) - TAIL_BYTES)
            self.data = block[cut + 1:] if cut >= 0 else block[-TAIL_BYTES:]
            return
        data = self.data + block if self.data else block
        if len(data) > 2 * TAIL_BYTES:
            cut = data.find(b"\n", len(data) - TAIL_BYTES)
            data = data[cut + 1:] if cut >= 0 else data[-TAIL_BYTES:]
        self.data = data


def _last_segment(text: str) -> str:
    """The last non-blank `\\r` segment of a line: a bar redrawn in place shows its last redraw."""
    if "\r" not in text:
        return text
    return next((s for s in reversed(text.split("\r")) if s.strip()), "")


def tail_events(tail: Tail, last_line: int, path: str, origin: Origin, dialect: Dialect,
                events: Sequence[Event], owners: dict[tuple[str | None, int | None], int]) -> list[Event]:
    """`last_line` events for each writer's last TAIL_LINES own lines of the file whose last line is
    `last_line` and whose end `tail` kept; `events` are the file's events (to leave out the lines of a stop,
    a failure or a stack dump), `owners` the rank of each (writer, local rank) the file's events were given.
    """
    data = tail.data
    if not data or last_line <= 0:
        return []
    data = data[:-1] if data.endswith(b"\n") else data
    skip: set[int] = set()
    dumped: int | None = None
    for e in events:
        if e.kind in _NOT_A_STOP_POINT:
            skip.add(e.line)
        elif e.kind in _DUMP_KINDS and (dumped is None or e.line < dumped):
            dumped = e.line
    # A file of one writer whose lines state none (a `--log-dir` worker file, a rank's own log): its last
    # few lines are enough, when they are all plain lines of that one writer (no traceback among them).
    few = data.rsplit(b"\n", QUICK_LINES)
    kept: dict[_Writer, deque[tuple[int, str, float | None, str | None]]] = {}
    if len(few) > QUICK_LINES:
        few = few[1:]
        kept, plain = _kept(few, last_line - len(few) + 1, dialect, skip, dumped)
        if plain and len(kept) == 1 and (None, None, None) in kept \
                and len(kept[None, None, None]) == TAIL_LINES:
            few = []
    if few:
        lines = data.split(b"\n")[-TAIL_SCAN:]
        first = last_line - len(lines) + 1
        if dumped is not None and dumped <= first:
            return []
        kept, _ = _kept(lines, first, dialect, skip, dumped)
    # One event per process: writers of one rank in the file (its `[rankN]:` envelope and its plain lines,
    # a `--log-dir` worker file's) are that rank's lines together, its newest TAIL_LINES of them.
    merged: dict[tuple[int | None, Any], list[tuple[int, str, float | None, str | None, _Writer]]] = {}
    for (rank, local_rank, writer), q in kept.items():
        if rank is None:
            rank = origin.rank if origin.rank is not None else owners.get((writer, local_rank))
        key: tuple[int | None, Any] = (rank, None) if rank is not None else (None, (local_rank, writer))
        merged.setdefault(key, []).extend((*item, (rank, local_rank, writer)) for item in q)
    out: list[Event] = []
    for (rank, _), items in merged.items():
        items = sorted(items, key=lambda x: x[0])[-TAIL_LINES:]
        num, body, time, level, (_, local_rank, writer) = items[-1]
        out.append(Event(KIND, None, body, PARSER, rank, origin.host, time,
                         local_rank if local_rank is not None else origin.local_rank, origin.attempt, level,
                         {"before": [b for _, b, _, _, _ in items[:-1]]}, writer, path=path, line=num))
    return out


def _kept(lines: list[bytes], first: int, dialect: Dialect, skip: set[int],
          dumped: int | None) -> tuple[dict[_Writer, deque[tuple[int, str, float | None, str | None]]], bool]:
    """Each writer's last TAIL_LINES own lines among `lines` (numbered from `first`), and whether every
    line read was a plain one (no traceback, no indented line, nothing left out)."""
    kept: dict[_Writer, deque[tuple[int, str, float | None, str | None]]] = {}
    in_tb: set[_Writer] = set()
    plain = True
    for num, raw in enumerate(lines, first):
        if dumped is not None and num >= dumped:
            break
        text = raw.decode("utf-8", "replace")
        if "\x1b" in text:
            text = ANSI_RE.sub("", text)
        text = text.rstrip("\r")
        env = strip_prefixes(text, dialect, None)
        if "\r" in text:
            # a bar redrawn in place shows its last redraw; the line's prefix (`[rank0]:` before the first
            # redraw) names its writer when the redraw itself carries none
            seg = _last_segment(env.text)
            inner = strip_prefixes(seg, dialect, None)
            if inner.rank is not None or inner.local_rank is not None or inner.writer is not None:
                env = inner
            else:
                env = dataclasses.replace(env, text=seg)
        body = env.text.strip()
        key = (env.rank, env.local_rank, env.writer)
        if not body:
            continue
        if env.text[:1] in (" ", "\t"):
            plain = False
        if _TB_HEAD_RE.search(body) or _TB_CHAIN_RE.match(body):
            in_tb.add(key)
            plain = False
            continue
        if key in in_tb:
            if env.text[:1] in (" ", "\t") or body.startswith("^"):
                continue
            in_tb.discard(key)   # (the exception's own line ends the traceback)
            continue
        if num in skip or _DUMP_HEAD_RE.match(body):
            plain = False
            continue
        q = kept.get(key)
        if q is None:
            q = kept[key] = deque(maxlen=TAIL_LINES)
        q.append((num, body[:TAIL_TEXT], env.time if env.year_known else None, env.level))
    return kept, plain


def with_last_lines(events: list[Event], lasts: list[Event]) -> list[Event]:
    """`events` (a file's, in file order) with `lasts` each in its place (by `event_order`: the job's events
    then need no sort); a file's kept end is its last lines, so few events lie after any of them."""
    for t in sorted(lasts, key=event_order):
        key = event_order(t)
        i = len(events)
        while i > 0 and event_order(events[i - 1]) > key:
            i -= 1
        events.insert(i, t)
    return events
