"""Read ProcessGroupNCCL's watchdog, heartbeat monitor, dump-signal, flight-recorder and desync-report lines.

Example (torch 2.4+): `[rank3]:[E709 17:05:38.162904317 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught
collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000)
ran for 600410 milliseconds before timing out.` → `hang_detected` (detector=watchdog, seq=12, op=ALLREDUCE).

PyTorch reports one hang several ways (the watchdog line, the same text again inside "watchdog thread
terminated with exception", `what():`, "communicator was aborted ... Original reason", and from 2.3 a
heartbeat monitor that complains twice). Within one file each hang becomes one `hang_detected`: repeats
of the same (rank, seq) or of the same rank's heartbeat verdict are dropped.

Rank fields: `pg`/`pg_rank`/`pg_desc` come from the PG prefix (`[PG 0 Rank 2]`, `[PG 0 (default_pg) Rank 1]`,
`[PG ID 2 PG GUID 3(desc) Rank 3]`); `stated_rank` is a rank the message gives as the writer's own: the
work-level `[Rank N]` (in 2.3+ it is the rank of whichever work logged first, so only trust it for the
default PG) or `pg_rank` when the PG is the default one (GUID/uid "0" or description "default_pg").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import (
    EntryGate,
    EventSpec,
    Example,
    Parser,
    QuietTexts,
    int_list,
    quoted_in_prose,
    to_count,
    to_int,
)

_PGP_SRC = (
    r"\[PG ID (?P<pg_id>\d{1,10}) PG GUID (?P<pg_guid>[^\s()\[\]]{1,128})(?:\((?P<pg_desc>[^()]{0,256})\))? "
    r"Rank (?P<pg_rank>\d{1,10})\]"
    r"|\[PG (?P<pg_uid>[^\s()\[\]]{1,128})(?: \((?P<pg_desc4>[^()]{0,256})\))? Rank (?P<pg_rank4>\d{1,10})\]"
)
PGP_RE = re.compile(_PGP_SRC)
RANK_TAG_RE = re.compile(r"\[Rank (?P<rank>\d+)\]:? ?$")

# -- hang detectors ------------------------------------------------------------------------------
WATCHDOG_RE = re.compile(r"Watchdog caught collective operation timeout")
BLOCKING_1X_RE = re.compile(r"(?<![A-Za-z])Caught collective operation timeout")
BLOCKING_2X_RE = re.compile(r"Work (?=WorkNCCL\().{0,400}?timed out in blocking wait")
SEQ_RE = re.compile(r"SeqNum=(?P<v>-?\d+)")
# The op and sizes count only when their value is closed by `,` or `)` as WorkNCCL's description prints
# them: a line cut mid-value (a paste truncated there, or another rank's text glued in, log-formats.md
# section 9.1) would otherwise read `OpType=ALLRED` as an op of its own or `NumelIn=83` as a size, which
# the cross-rank comparisons would take for a different collective.
OP_RE = re.compile(r"OpType=(?P<v>[A-Z_][A-Z0-9_]*)(?=[,)])")
NUMEL_IN_RE = re.compile(r"NumelIn=(?P<v>-?\d+)(?=[,)])")
NUMEL_OUT_RE = re.compile(r"NumelOut=(?P<v>-?\d+)(?=[,)])")
TIMEOUT_RE = re.compile(r"Timeout\(ms\)=(?P<v>\d+)")
RAN_FOR_RE = re.compile(r"ran for (?P<v>\d+) milliseconds")
WORK_END_RE = re.compile(r"before timing out|timed out in blocking wait")

STUCK_RE = re.compile(r"watchdog got stuck for (?P<sec>\d+) seconds")
HB_TIMED_OUT_RE = re.compile(r"Heartbeat monitor timed out!|monitoring thread detects no heartbeat")
HB_F22_RE = re.compile(r"NCCL monitor thread timeout\. Basically")
HB_VERDICT_RE = re.compile(
    r"ProcessGroupNCCL's watchdog (?P<why>detected a collective timeout from the local rank"
    r"|detected a collective timeout on some other rank|detected an exception from the local rank"
    r"|detected a dump signal from rank (?P<src>\d+))"
)
TERMINATING_RE = re.compile(
    r"Terminating the process after attempting to dump debug info, due to (?P<reason>[^.]*)"
)
MONITOR_OFF_RE = re.compile(
    r"monitor thread is disabled, but would have terminated the process ?after attempting to dump "
    r"debug info, "
    r"due to (?P<reason>[^.]*)|PGNCCL Monitor Thread is disabled, but would have killed this job"
)

# -- sequence-number status ----------------------------------------------------------------------
TIMEOUT_AT_RE = re.compile(
    r"Timeout at NCCL work: (?P<seq>-?\d+), last enqueued NCCL work: (?P<enq>-?\d+), "
    r"last completed NCCL work: (?P<comp>-?\d+)"
)
EXC_AT_RE = re.compile(
    r"Exception \(either an error or timeout\) detected by watchdog at work: (?P<seq>-?\d+), "
    r"last enqueued NCCL work: (?P<enq>-?\d+), last completed NCCL work: (?P<comp>-?\d+)"
)
FAILURE_AT_RE = re.compile(
    r"failure detected by watchdog at work sequence id: (?P<seq>-?\d+)\s+PG status: "
    r"last enqueued work: (?P<enq>-?\d+), last completed work: (?P<comp>-?\d+)"
)

# -- dump signals ----------------------------------------------------------------------------------
DUMP_25_RE = re.compile(
    r"Received a dump signal due to a collective timeout from "
    r"(?:(?P<local>this local rank)|\s*rank (?P<src>\d+))"
    r"(?:[^\r\n]{0,1024}?Last enqueued NCCL work: (?P<enq>-?\d+), last completed NCCL work: (?P<comp>-?\d+))?"
)
DUMP_24_RE = re.compile(
    r"Received a (?:(?P<local>dump signal from this local rank)|global dump signal from rank (?P<src>\d+),?) "
    r"and will start to dump"
)
DUMP_23_RE = re.compile(
    r"Received a (?:(?P<local>timeout signal from this local rank)"
    r"|(?P<remote>global timeout from another rank)) "
    r"and will start to dump"
)
DUMP_BOOK_RE = re.compile(
    r"(?P<remote>Observed flight recorder dump signal from another rank"
    r"|First PG on this rank detecting the dump signal through tcpstore)"
    r"|(?P<local>First PG on this rank to signal dumping|First watchdog to set the dump signal)"
    r"|(?P<pipe>Dump signal received through pipe)"
)

# -- flight recorder -------------------------------------------------------------------------------
FR_RES = (
    (re.compile(r"ProcessGroupNCCL dumping nccl trace to (?P<path>\S+)"), "dumping"),
    (re.compile(r"ProcessGroupNCCL preparing to dump debug info"), "dumping"),
    (re.compile(r"Finished writing (?:NCCLPG|Flight Recorder) debug info to (?P<path>\S+)"), "dumped"),
    (
        re.compile(r"Flight Recorder trace successfully dumped|Finished flight recorder successfully"),
        "dumped",
    ),
    (
        re.compile(
            r"Stack trace of the failed collective not found, potentially because FlightRecorder is disabled"
        ),
        "disabled",
    ),
    (
        re.compile(r"Error opening file for writing (?:NCCLPG|Flight Recorder) debug info: ?(?P<path>\S+)?"),
        "failed",
    ),
    (re.compile(r"Error (?:writing|flushing) (?:NCCLPG|Flight Recorder) debug info"), "failed"),
    (re.compile(r"timed out after waiting for \d+ms flight recorder dumps to finish"), "failed"),
)

# -- teardown -------------------------------------------------------------------------------------
SOME_OPS_RE = re.compile(r"Some NCCL operations have failed or timed out")
COMBINED_1X_RE = re.compile(r"To avoid this inconsistency, we are taking the entire process down")
DATA_INCONS_RE = re.compile(r"To avoid data inconsistency, we are taking the entire process down")
WD_TERMINATED_RE = re.compile(
    r"(?:NCCL|Process group) watchdog thread terminated(?: with(?: exception:?)?)? ?(?P<error>.*)"
)
TERMINATE_RE = re.compile(
    r"terminate called (?:after throwing an instance of '(?P<type>[^'\s]*?)(?:'|(?=terminate called)|$)"
    r"|(?P<other>recursively|without an active exception))"
    r"|Unhandled exception: (?P<mangled>\w+)\.? (?=what\(\):)"
)
MANGLED_PART_RE = re.compile(r"(\d{1,6})")
WHAT_RE = re.compile(r"what\(\):\s*(?P<what>.*)")
LEAD_WHO_RE = re.compile(r"(?:(?:" + _PGP_SRC.replace("?P<", "?P<l_") + r")\s*|\[Rank \d+\] ?)+")

# -- desync report (TORCH_NCCL_DESYNC_DEBUG) ------------------------------------------------------
DESYNC_HDR_RE = re.compile(r"\[(?P<r>\d+)\] Timeout at collective: (?P<op>\w+), #(?P<seq>\d+)")
DESYNC_LAG_RE = re.compile(r"ranks \[(?P<ranks>[^\[\]]*)\] are the lagging ranks")
DESYNC_NOTFIN_RE = re.compile(r"\[(?P<ranks>[^\[\]]*)\] joined but didn't finish collective #(?P<seq>\d+)")
DESYNC_NOTJOIN_RE = re.compile(
    r"\[(?P<ranks>[^\[\]]*)\] finished collective #(?P<seq>\d+), but didn't join collective #(?P<next>\d+)"
)
DESYNC_SNAP_HDR_RE = re.compile(r"#(?P<seq>\d+) (?P<phase>started|finished) ranks:")
DESYNC_SNAP_ITEM_RE = re.compile(r"^\s*\[(?P<ranks>[\d, ]*)\] (?P<phase>started|finished) (?P<op>\w+)\s*$")
DESYNC_CONT_RE = re.compile(r"^\s*(?:- |\[[\d, ]*\] |#\d+ |To our best knowledge|Snapshot of)")
# The report's verdict sentence, which opens its body (TraceUtils.h `retrieveDesyncReport`): a paste that
# starts below the report's first line (`Timeout at collective`, or the bare `[PG ...] Rank r` prefix before
# it) still holds the ranks the report names. Read as a report of the default group when no line says which,
# unless its writer is none of the ranks it lists (then its group is UNSTATED_PG: no rank is mapped).
UNSTATED_PG = "unstated"
DESYNC_BODY_RE = re.compile(
    r"To our best knowledge, (?:ranks \[[\d, ]*\] are the lagging ranks|the lagging/dead/mismatched ranks)"
)
DESYNC_HEADER_ONLY_RE = re.compile(
    r"(?:^|\]\s)\s*(?:Rank (?P<r>\d+)|" + _PGP_SRC.replace("?P<", "?P<h_") + r")\s*$"
)



def _bare_prefix(text: str) -> re.Match[str] | None:
    """`DESYNC_HEADER_ONLY_RE.search(text)`, without the search when `text` cannot end as it must (`]`, or
    `Rank ` and digits, then only whitespace): most lines holding its literals end otherwise."""
    end = text.rstrip()
    if not end.endswith("]"):
        rest = end.rstrip("0123456789")
        # (a digit other than 0-9 the pattern's `\d` may take: the pattern decides)
        if not (rest.endswith("Rank ") or rest[-1:].isdecimal()):
            return None
    return DESYNC_HEADER_ONLY_RE.search(text)


def _same_process(a: LogLine, b: LogLine) -> bool:
    """Whether two lines may come from one process: the same launcher stream (`writer`, e.g. torchrun's
    `[default2]:`), else the same rank; a line that says neither may be anyone's."""
    if a.writer is not None and b.writer is not None:
        return a.writer == b.writer
    return a.rank is None or b.rank is None or a.rank == b.rank


def _owned(line: LogLine) -> bool:
    """Whether a line says which process wrote it."""
    return line.writer is not None or line.rank is not None


PROBE_LINES = 2  # lines after a timeout/what()/bare prefix in which a desync report may start
HB_WINDOW = 12  # lines a heartbeat "timed out" waits for the "got stuck for N seconds" verdict
TERMINATE_WINDOW = 3  # lines between "terminate called" and its `what():`
# libstdc++'s verbose terminate handler writes `terminate called after throwing an instance of '<T>'` and
# `  what():  <message>` to the process's stderr, back to back. A console that merges many processes
# (torchrun `--tee`, whose agent tails each rank's stdout and stderr files in turn) puts the other ranks'
# lines, and this rank's own stdout flushed meanwhile, between them: when the lines say which process wrote
# them (launcher stream or rank), only that process's lines count, up to TERMINATE_RANK_WINDOW of them, and
# at most TERMINATE_MAX_LINES lines in all.
TERMINATE_RANK_WINDOW = 24
TERMINATE_MAX_LINES = 400
DESYNC_MAX = 200  # a desync report longer than this is cut (a runaway block must not eat the file)

TEARDOWN_REASONS = (  # matched as prefixes: pasted excerpts often cut the sentence
    ("collective", "collective_timeout_or_exception"),
    ("ProcessGroupNCCL", "watchdog_hang"),
)
VERDICT_REASONS = {
    "detected a collective timeout from the local rank": "collective_timeout_local",
    "detected a collective timeout on some other rank": "collective_timeout_remote",
    "detected an exception from the local rank": "exception_local",
}

_PG_FIELDS = ("pg", "pg_rank", "pg_desc", "stated_rank")
_HANG_WORK = ("seq", "op", "numel_in", "numel_out", "timeout_ms", "elapsed_ms", "stuck_s")


def _hang_fields(detector: str, who: dict[str, Any], **known: Any) -> dict[str, Any]:
    """A hang_detected field set: what the message states in `known`, every other work field None."""
    return {"detector": detector, **who, **dict.fromkeys(_HANG_WORK), **known}


def _who(text: str, end: int) -> dict[str, Any]:
    """PG identity of the message ending the prefix at `end`, and a rank the message says is its writer's."""
    head = text[:end]
    pg: str | None = None
    pg_rank: int | None = None
    pg_desc: str | None = None
    last = None
    for pm in PGP_RE.finditer(head):
        last = pm
    if last is not None:
        pg = last["pg_guid"] or last["pg_uid"]
        pg_rank = to_count(last["pg_rank"] or last["pg_rank4"])
        desc = last["pg_desc"] if last["pg_guid"] else last["pg_desc4"]
        pg_desc = desc if desc and desc != "undefined" else None
    stated: int | None = None
    m = RANK_TAG_RE.search(head)
    if m:
        stated = to_count(m["rank"])
    elif pg_rank is not None and (pg == "0" or pg_desc == "default_pg"):
        stated = pg_rank
    return {"pg": pg, "pg_rank": pg_rank, "pg_desc": pg_desc, "stated_rank": stated}


def _work_fields(text: str, start: int) -> dict[str, Any]:
    """The WorkNCCL(...) fields and "ran for" of one timeout message, tolerating truncation and reordering."""
    end_m = WORK_END_RE.search(text, start)
    seg = text[start : end_m.end() if end_m else start + 400]

    def grab(rx: re.Pattern[str]) -> int | None:
        m = rx.search(seg)
        return to_int(m["v"]) if m else None

    op = OP_RE.search(seg)
    return {
        "seq": grab(SEQ_RE),
        "op": op["v"] if op else None,
        "numel_in": grab(NUMEL_IN_RE),
        "numel_out": grab(NUMEL_OUT_RE),
        "timeout_ms": grab(TIMEOUT_RE),
        "elapsed_ms": grab(RAN_FOR_RE),
    }


def _reason(text: str) -> str | None:
    for prefix, reason in TEARDOWN_REASONS:
        if text.startswith(prefix):
            return reason
    return text or None


def _demangle(name: str | None) -> str | None:
    """`N3c1016DistBackendErrorE` → `c10::DistBackendError`, `St13runtime_error` → `std::runtime_error`."""
    if not name:
        return None
    body, parts = name, []
    if body.startswith("St"):
        parts.append("std")
        body = body[2:]
    elif body.startswith("N") and body.endswith("E"):
        body = body[1:-1]
    pos = 0
    while pos < len(body):
        m = MANGLED_PART_RE.match(body, pos)
        if not m:
            return name
        n = to_count(m.group(1))
        if n is None or n > len(body):
            return name
        parts.append(body[m.end() : m.end() + n])
        pos = m.end() + n
    return "::".join(parts) if parts else name


def _completed(enq: int | None, comp: int | None) -> int | None:
    """2.3 prints an uninitialised "last completed" when nothing completed yet; report that as -1 (none)."""
    if enq is not None and comp is not None and comp > enq:
        return -1
    return comp


DESYNC_TEXT_LINES = 12  # lines of a desync report kept as the event's text


@dataclass
class _PendingHb:
    """A heartbeat monitor's `timed out` report waiting for its `got stuck` verdict (log-formats.md 1.7)."""

    line: LogLine
    fields: dict[str, Any]
    left: int = 0   # lines still to read before it is emitted on its own


@dataclass
class _Desync:
    line: LogLine
    who: dict[str, Any]
    reporter: int | None = None
    seq: int | None = None
    op: str | None = None
    lagging: set[int] = field(default_factory=set)
    not_joined: set[int] = field(default_factory=set)
    not_finished: set[int] = field(default_factory=set)
    joined_seq: int | None = None
    snapshot: list[str] = field(default_factory=list)
    snap_seq: int | None = None
    started: int | None = None  # the highest collective the snapshot says ranks started
    members: set[int] = field(default_factory=set)  # the ranks the snapshot lists
    headless: bool = False  # read from its verdict sentence on: the line naming its group is not there
    lines: int = 0
    texts: list[str] = field(default_factory=list)


# Texts an idle parser reads without a trace, and how often others were read without one (`_maybe_quiet`).
_QUIET = QuietTexts()
_SIGHTED: dict[str, int] = {}
QUIET_AFTER = 3
# Whether a text may hold a match of a pattern `_match` starts from. The others refine such a match, in its
# text (a PG prefix, the collective's fields, a mangled name) or in a desync report's lines read while the
# parser is not idle; a bare PG prefix line (`_bare_prefix`) is tested on its own.
_ENTRY = EntryGate(__name__, refiners=(PGP_RE, LEAD_WHO_RE, DESYNC_HEADER_ONLY_RE, DESYNC_CONT_RE,
                                       MANGLED_PART_RE))


class C10dParser(Parser):
    """ProcessGroupNCCL, torch 1.10-2.9: hangs, PG status, dump signals, flight recorder, desync, teardown."""

    name = "c10d"
    triggers = (
        "ProcessGroupNCCL",
        "WorkNCCL(",
        "watchdog",
        "NCCL work",
        "terminate called",
        # Ray's C++ terminate handler (ray/src/ray/util/logging.cc `TerminateHandler`) in a Ray worker:
        # `Unhandled exception: <mangled type>. what(): <message>`, whatever the message (`TERMINATE_RE`)
        "Unhandled exception: ",
        "debug info",
        "Timeout at collective",
        "To our best knowledge",
        "entire process down",
    )
    emits = (
        EventSpec(
            "hang_detected",
            ("detector", *_PG_FIELDS, *_HANG_WORK),
            "a watchdog / blocking-wait timeout or a heartbeat-monitor verdict on this rank",
        ),
        EventSpec(
            "pg_status",
            (*_PG_FIELDS, "failed_seq", "last_enqueued", "last_started", "last_completed"),
            "last enqueued/completed SeqNum of one PG on this rank (-1 = none completed)",
        ),
        EventSpec(
            "dump_signal",
            (*_PG_FIELDS, "from_rank", "source", "last_enqueued", "last_completed"),
            "this rank is dumping debug info; source local/remote/pipe, from_rank = signalling global rank",
        ),
        EventSpec("flight_recorder", (*_PG_FIELDS, "action", "path"), "flight-recorder dump activity"),
        EventSpec(
            "process_teardown",
            (*_PG_FIELDS, "reason", "fatal", "detector", "exc_type", "error"),
            "ProcessGroupNCCL (or a C++ terminate) taking the process down, or saying it would have",
        ),
        EventSpec(
            "watchdog_terminated", (*_PG_FIELDS, "error"), "the watchdog thread died with an exception"
        ),
        EventSpec(
            "desync_report",
            (
                "pg",
                "pg_rank",
                "pg_desc",
                "reporter_rank",
                "seq",
                "op",
                "lagging_ranks",
                "not_joined_ranks",
                "not_finished_ranks",
                "joined_seq",
                "snapshot",
            ),
            "TORCH_NCCL_DESYNC_DEBUG report (ranks are PG ranks)",
        ),
    )

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()
        self._dump_seen: dict[tuple[Any, ...], int | None] = {}
        self._probe = 0  # lines left in which a desync may start
        self._probe_line: LogLine | None = None
        self._desync: _Desync | None = None
        # heartbeat "timed out" lines waiting for their "got stuck" verdict, one per (rank, group): in a
        # shared console every rank of a hung node prints its own pair, interleaved (log-formats.md 1.7)
        self._hb: dict[tuple[Any, ...], _PendingHb] = {}
        self._term: tuple[LogLine, str | None] | None = None
        self._term_left = 0
        self._term_total = 0

    idle_ignores = ("_probe_line", "_term_left", "_term_total")
    history = ("_seen", "_dump_seen")

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        return {} if self.same_as_fresh(earlier) and self.merge_seen(earlier) else None

    # -- state machine -----------------------------------------------------------------------------
    def wants_more(self) -> bool:
        return self._desync is not None or self._probe > 0 or bool(self._hb) or self._term is not None

    def close(self) -> Iterable[Event]:
        out: list[Event] = []
        if self._desync is not None:
            out.append(self._desync_event(self._desync))
            self._desync = None
        out.extend(self._flush_hb())
        out.extend(self._flush_term(None))
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        text = line.text
        idle = not self.wants_more()
        if idle and (text in _QUIET or (not _ENTRY.may_match(text) and _bare_prefix(text) is None)):
            return out  # (idle, a line no pattern matches gives nothing and changes nothing)
        if self._desync is not None:
            if self._desync.lines < DESYNC_MAX and DESYNC_CONT_RE.match(text):
                self._desync_line(self._desync, text)
                return out
            out.append(self._desync_event(self._desync))
            self._desync = None
        if self._probe > 0:
            self._probe -= 1
            if DESYNC_CONT_RE.match(text) and self._probe_line is not None:
                head = self._probe_line
                self._desync = _Desync(head, _who(head.text, len(head.text)))
                hm = DESYNC_HEADER_ONLY_RE.search(head.text)
                if hm and hm["r"]:
                    self._desync.reporter = to_count(hm["r"])
                self._probe = 0
                self._desync_line(self._desync, text)
                return out
        for pending in self._hb.values():
            pending.left -= 1
        if self._term is not None:
            self._term_total -= 1
            if _same_process(self._term[0], line):
                self._term_left -= 1
        out.extend(self._match(line))
        for key in [k for k, pending in self._hb.items() if pending.left <= 0]:
            out.extend(self._flush_hb_of(key))
        if self._term is not None and (self._term_left <= 0 or self._term_total <= 0):
            out.extend(self._flush_term(None))
        if idle and not out and not self.wants_more() and "ProcessGroupNCCL" in line.raw:
            self._maybe_quiet(line)
        return out

    @staticmethod
    def _maybe_quiet(line: LogLine) -> None:
        """Remember `line.text` as quiet when a fresh parser reading it gives nothing and stays fresh (on the
        text's QUIET_AFTER-th such sighting: a text seen once or twice, as most are, costs no second reading).

        Idle, this parser's answer to a line depends on its text, on `ProcessGroupNCCL` in its raw line
        (required here, so a quiet text is quiet without it too) and on its first-seen memos, which only
        hold back an event a fresh parser would give: what a fresh parser reads without a trace, any idle
        one does.
        """
        text = line.text
        seen = _SIGHTED.get(text, 0) + 1
        if seen < QUIET_AFTER:
            if len(text) <= _QUIET.max_len:
                if len(_SIGHTED) >= _QUIET.cap:
                    _SIGHTED.clear()
                _SIGHTED[text] = seen
            return
        fresh = C10dParser()
        if not fresh._match(line) and not fresh.wants_more() and not fresh._seen and not fresh._dump_seen:
            _QUIET.add(text)

    # -- one line ----------------------------------------------------------------------------------
    def _match(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        probe = False

        tm = TERMINATE_RE.search(text)
        if tm:
            out.extend(self._flush_term(None))
            if tm["other"] != "recursively":
                self._term = (line, tm["type"] or _demangle(tm["mangled"]))
                self._term_left = TERMINATE_RANK_WINDOW if _owned(line) else TERMINATE_WINDOW
                self._term_total = TERMINATE_MAX_LINES
                wm = WHAT_RE.search(text, tm.end())
                if wm:
                    out.extend(self._flush_term(wm["what"].strip() or None))
        else:
            wm = WHAT_RE.search(text)
            if wm:
                probe = True
                if self._term is not None and _same_process(self._term[0], line):
                    out.extend(self._flush_term(wm["what"].strip() or None))

        for rx, detector in (
            (WATCHDOG_RE, "watchdog"),
            (BLOCKING_1X_RE, "blocking_wait"),
            (BLOCKING_2X_RE, "blocking_wait"),
        ):
            for hit in rx.finditer(text):
                if quoted_in_prose(text, hit.start()):
                    continue    # an issue's sentence quoting the timeout of another run
                fields = _hang_fields(detector, _who(text, hit.start()), **_work_fields(text, hit.start()))
                out.extend(self._hang(line, fields))
                probe = True

        for rx in (TIMEOUT_AT_RE, EXC_AT_RE, FAILURE_AT_RE):
            m = rx.search(text)
            if m:
                who = _who(text, m.start())
                enq, comp = to_int(m["enq"]), to_int(m["comp"])
                out.extend(self._status(line, who, to_int(m["seq"]), enq, _completed(enq, comp)))
                if rx is TIMEOUT_AT_RE:
                    out.extend(self._hang(line, _hang_fields("watchdog", who, seq=to_int(m["seq"]))))

        out.extend(self._heartbeat(line))
        out.extend(self._dump(line))
        out.extend(self._flight(line))
        out.extend(self._teardown(line))

        m = WD_TERMINATED_RE.search(text)
        if m:
            error = m["error"].strip() or None
            out.append(self.event("watchdog_terminated", line, **_who(text, m.start()), error=error))

        m = DESYNC_HDR_RE.search(text)
        if m:
            who = _who(text, m.start())
            self._desync = _Desync(line, who)
            self._desync_line(self._desync, text)
            probe = False
        elif (mb := DESYNC_BODY_RE.search(text)) is not None:
            # (no header before it: a report open already reads this line as its continuation)
            self._desync = _Desync(line, _who(text, mb.start()), headless=True)
            self._desync_line(self._desync, text)
        elif _bare_prefix(text) and "ProcessGroupNCCL" in line.raw:
            probe = True
        if probe and self._desync is None:
            self._probe = PROBE_LINES
            self._probe_line = line
        return out

    def _hang(self, line: LogLine, fields: dict[str, Any]) -> list[Event]:
        who = line.rank if line.rank is not None else fields.get("stated_rank")
        if fields["detector"] == "heartbeat_monitor":
            key: tuple[Any, ...] = ("hb", who, line.attempt, fields.get("pg"), fields.get("pg_rank"))
        elif fields.get("seq") is not None:
            key = ("seq", who, line.attempt, fields["seq"])
        else:
            key = (
                "work",
                who,
                line.attempt,
                fields.get("op"),
                fields.get("timeout_ms"),
                fields.get("elapsed_ms"),
            )
        if key in self._seen:
            return []
        self._seen.add(key)
        return [self.event("hang_detected", line, **fields)]

    def _status(
        self, line: LogLine, who: dict[str, Any], seq: int | None, enq: int | None, comp: int | None
    ) -> list[Event]:
        key = (
            "status",
            line.rank,
            line.attempt,
            who["pg"],
            who["pg_rank"],
            who["stated_rank"],
            seq,
            enq,
            comp,
        )
        if key in self._seen:
            return []
        self._seen.add(key)
        return [
            self.event(
                "pg_status",
                line,
                **who,
                failed_seq=seq,
                last_enqueued=enq,
                last_started=None,
                last_completed=comp,
            )
        ]

    def _heartbeat(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        m = STUCK_RE.search(text)
        if m:
            who = _who(text, m.start())
            fields = _hang_fields("heartbeat_monitor", who, stuck_s=to_count(m["sec"]))
            head = line
            pending = self._hb.pop((line.rank, who["pg"]), None)
            if pending is not None:
                head = pending.line
            out.extend(self._hang(head, fields))
            if line.level == "F":
                out.append(
                    self._teardown_event(line, who, "watchdog_hang", fatal=True, detector="heartbeat_monitor")
                )
        m2 = HB_TIMED_OUT_RE.search(text)
        if m2 and not m:
            who = _who(text, m2.start())
            fields = _hang_fields("heartbeat_monitor", who)
            self._hb.setdefault((line.rank, who["pg"]), _PendingHb(line, fields, HB_WINDOW))
        m = HB_F22_RE.search(text)
        if m:
            out.extend(self._flush_hb_of(self._hb_key(line, _who(text, m.start()))))
            out.append(
                self._teardown_event(
                    line, _who(text, m.start()), "watchdog_hang", fatal=True, detector="heartbeat_monitor"
                )
            )
        m = HB_VERDICT_RE.search(text)
        if m:
            reason = VERDICT_REASONS.get(m["why"], "dump_signal_remote")
            out.append(
                self._teardown_event(
                    line, _who(text, m.start()), reason, fatal=line.level != "E", detector="heartbeat_monitor"
                )
            )
        m = TERMINATING_RE.search(text)
        if m:
            who = _who(text, m.start())
            why = _reason(m["reason"].strip())
            out.extend(self._monitor_verdict(line, who, why))
            out.append(self._teardown_event(line, who, why, fatal=True, detector="heartbeat_monitor"))
        m = MONITOR_OFF_RE.search(text)
        if m:
            who = _who(text, m.start())
            why = _reason((m["reason"] or "").strip())
            out.extend(self._monitor_verdict(line, who, why))
            out.append(self._teardown_event(line, who, why, fatal=False, detector="heartbeat_monitor"))
        return out

    def _monitor_verdict(self, line: LogLine, who: dict[str, Any], reason: str | None) -> list[Event]:
        """The heartbeat monitor's verdict that the watchdog got stuck, from its terminate (or would-have-
        terminated) line: its reason `ProcessGroupNCCL watchdog hang` is set only when the watchdog's
        heartbeat stopped (log-formats.md section 1.7, 2.5+; ProcessGroupNCCL.cpp HeartbeatMonitor). A paste
        cut after the `got stuck for <sec> seconds` sentence still says so; with that sentence read, this is
        the same verdict again (`_hang` keeps one per rank and group)."""
        if reason != "watchdog_hang":
            return []
        out = self._flush_hb_of(self._hb_key(line, who))
        out.extend(self._hang(line, _hang_fields("heartbeat_monitor", who)))
        return out

    def _hb_key(self, line: LogLine, who: dict[str, Any]) -> tuple[Any, ...] | None:
        """The pending heartbeat report of this line's rank and group (of its rank when the line names no
        group: the 2.2 lines carry `[Rank <r>]` only); None when that rank has none."""
        if (line.rank, who["pg"]) in self._hb:
            return (line.rank, who["pg"])
        return next((k for k in self._hb if k[0] == line.rank), None)

    def _flush_hb(self) -> list[Event]:
        """Emit every pending heartbeat report (the end of the input)."""
        out: list[Event] = []
        for key in list(self._hb):
            out.extend(self._flush_hb_of(key))
        return out

    def _flush_hb_of(self, key: tuple[Any, ...] | None) -> list[Event]:
        """Emit the pending heartbeat report of one (rank, group), if there is one."""
        if key is None or key not in self._hb:
            return []
        pending = self._hb.pop(key)
        return self._hang(pending.line, pending.fields)

    def _dump(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        for rx in (DUMP_25_RE, DUMP_24_RE, DUMP_23_RE, DUMP_BOOK_RE):
            m = rx.search(text)
            if not m:
                continue
            groups = m.groupdict()
            if groups.get("pipe"):
                source = "pipe"
            elif groups.get("local"):
                source = "local"
            else:
                source = "remote"
            from_rank = to_count(groups.get("src"))
            enq = to_int(groups.get("enq"))
            comp = _completed(enq, to_int(groups.get("comp")))
            who = _who(text, m.start())
            key = (line.rank, line.attempt, who["pg"], source)
            if (
                key in self._dump_seen
                and enq is None
                and (from_rank is None or self._dump_seen[key] is not None)
            ):
                break  # a bookkeeping line repeating a signal already reported for this PG
            if from_rank is not None or key not in self._dump_seen:
                self._dump_seen[key] = from_rank
            out.append(
                self.event(
                    "dump_signal",
                    line,
                    **who,
                    from_rank=from_rank,
                    source=source,
                    last_enqueued=enq,
                    last_completed=comp,
                )
            )
            if enq is not None or comp is not None:
                out.extend(self._status(line, who, None, enq, comp))
            break
        return out

    def _flight(self, line: LogLine) -> list[Event]:
        text = line.text
        for rx, action in FR_RES:
            m = rx.search(text)
            if m:
                path = m.groupdict().get("path")
                return [
                    self.event(
                        "flight_recorder",
                        line,
                        **_who(text, m.start()),
                        action=action,
                        path=path.rstrip(".") if path else None,
                    )
                ]
        return []

    def _teardown(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        m = SOME_OPS_RE.search(text)
        if m:
            combined = COMBINED_1X_RE.search(text, m.end()) is not None
            out.append(
                self._teardown_event(
                    line, _who(text, m.start()), "nccl_operations_failed", fatal=combined, detector="watchdog"
                )
            )
        else:
            m = COMBINED_1X_RE.search(text)
            if m:
                out.append(
                    self._teardown_event(
                        line, _who(text, m.start()), "nccl_operations_failed", fatal=True, detector="watchdog"
                    )
                )
        m = DATA_INCONS_RE.search(text)
        if m:
            out.append(
                self._teardown_event(
                    line, _who(text, m.start()), "data_inconsistency", fatal=True, detector="watchdog"
                )
            )
        return out

    def _teardown_event(
        self,
        line: LogLine,
        who: dict[str, Any],
        reason: str | None,
        *,
        fatal: bool,
        detector: str | None,
        exc_type: str | None = None,
        error: str | None = None,
    ) -> Event:
        """A process_teardown event; only a C++ terminate knows the exception type and message."""
        return self.event(
            "process_teardown",
            line,
            **who,
            reason=reason,
            fatal=fatal,
            detector=detector,
            exc_type=exc_type,
            error=error,
        )

    def _flush_term(self, what: str | None) -> list[Event]:
        if self._term is None:
            return []
        line, exc_type = self._term
        self._term = None
        who: dict[str, Any] = dict.fromkeys(_PG_FIELDS)
        if what:
            lead = LEAD_WHO_RE.match(what)
            if lead:
                who = _who(what, lead.end())
        return [
            self._teardown_event(
                line,
                who,
                "uncaught_exception",
                fatal=True,
                detector=None,
                exc_type=exc_type or None,
                error=what,
            )
        ]

    # -- desync --------------------------------------------------------------------------------------
    def _desync_line(self, d: _Desync, text: str) -> None:
        d.lines += 1
        if len(d.texts) < DESYNC_TEXT_LINES and text.strip():
            d.texts.append(text.strip())
        m = DESYNC_HDR_RE.search(text)
        if m:
            d.reporter, d.op, d.seq = to_count(m["r"]), m["op"], to_int(m["seq"])
            return
        for rx, behind in (
            (DESYNC_LAG_RE, d.not_joined),
            (DESYNC_NOTJOIN_RE, d.not_joined),
            (DESYNC_NOTFIN_RE, d.not_finished),
        ):
            m = rx.search(text)
            if m:
                ranks = int_list(m["ranks"])
                d.lagging.update(ranks)
                behind.update(ranks)
                at = to_int(m.groupdict().get("seq"))  # the lagging-ranks sentence names no collective
                if at is not None:
                    d.joined_seq = at if d.joined_seq is None else min(d.joined_seq, at)
                return
        m = DESYNC_SNAP_HDR_RE.search(text)
        if m:
            d.snap_seq = to_int(m["seq"])
            if m["phase"] == "started" and d.snap_seq is not None:
                d.started = max(d.started or 0, d.snap_seq)
            return
        m = DESYNC_SNAP_ITEM_RE.match(text)
        if m:
            d.members.update(int_list(m["ranks"]))
            members = ",".join(str(r) for r in int_list(m["ranks"]))
            seq = f"#{d.snap_seq} " if d.snap_seq is not None else ""
            d.snapshot.append(f"{seq}{m['phase']} {m['op']}: {members}")

    def _desync_event(self, d: _Desync) -> Event:
        pg = d.who["pg"]
        if d.headless and pg is None and d.line.rank is not None and d.members \
                and d.line.rank not in d.members:
            # The report's ranks are its group's ranks. Without the line naming the group, it is read as the
            # default group's only when the writer's own global rank is one of them (a subgroup's report,
            # written by global rank 9 about ranks 0-3, names no global rank).
            pg = UNSTATED_PG
        ev = self.event(
            "desync_report",
            d.line,
            pg=pg,
            pg_rank=d.who["pg_rank"],
            pg_desc=d.who["pg_desc"],
            reporter_rank=d.reporter,
            # (without its first line, the collective that timed out is the newest one the snapshot says
            # ranks started: the reporter's own, `Timeout at collective: <op>, #<seq>`)
            seq=d.seq if d.seq is not None else d.started,
            op=d.op,
            # The ranks that joined #s but did not finish it are the ones waiting in it when the report also
            # names ranks that never joined #s (TraceUtils.h retrieveDesyncReport; failure-signatures.md
            # section 1): those are the lagging ones then, the waiting ones only when nobody is named missing.
            lagging_ranks=sorted(d.not_joined or d.lagging),
            not_joined_ranks=sorted(d.not_joined),
            not_finished_ranks=sorted(d.not_finished),
            joined_seq=d.joined_seq,
            snapshot=d.snapshot,
        )
        # The report is one message over several lines: cite all of it, not only its first line.
        head = d.line.text.strip()
        body = [t for t in d.texts if t != head]
        return replace(ev, text="\n".join([head, *body]) if body else ev.text)

    examples = (
        # -- hang_detected: watchdog --------------------------------------------------------------------
        Example(
            "[E ProcessGroupNCCL.cpp:587] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1801442 milliseconds before timing "
            "out.",
            "hang_detected",
            {
                "detector": "watchdog",
                "seq": None,
                "op": "BROADCAST",
                "timeout_ms": 1800000,
                "elapsed_ms": 1801442,
                "stated_rank": 0,
            },
            "torch 1.10 (constructed)",
        ),
        Example(
            "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800532 milliseconds "
            "before timing out.",
            "hang_detected",
            {
                "detector": "watchdog",
                "seq": 4120,
                "op": "ALLREDUCE",
                "numel_in": None,
                "timeout_ms": 1800000,
                "elapsed_ms": 1800532,
                "stated_rank": 1,
            },
            "torch 1.11-2.0 (constructed)",
        ),
        Example(
            "[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=7, OpType=ALLGATHER, NumelIn=16, NumelOut=64, Timeout(ms)=600000) ran for "
            "600311 "
            "milliseconds before timing out.",
            "hang_detected",
            {
                "detector": "watchdog",
                "seq": 7,
                "op": "ALLGATHER",
                "numel_in": 16,
                "numel_out": 64,
                "timeout_ms": 600000,
                "elapsed_ms": 600311,
                "stated_rank": 2,
            },
            "torch 2.1-2.3 (constructed)",
        ),
        Example(
            "[rank5]:[E1107 04:12:09.118402771 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught "
            "collective "
            "operation timeout: WorkNCCL(SeqNum=301, OpType=_REDUCE_SCATTER_BASE, NumelIn=4096, "
            "NumelOut=512, "
            "Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
            "hang_detected",
            {
                "detector": "watchdog",
                "seq": 301,
                "op": "_REDUCE_SCATTER_BASE",
                "numel_in": 4096,
                "numel_out": 512,
                "elapsed_ms": 600047,
                "stated_rank": 5,
            },
            "torch 2.4-2.9 (constructed)",
        ),
        Example(
            "terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  [Rank 3] NCCL watchdog thread terminated with exception: [Rank 3] Watchdog "
            "caught "
            "collective operation timeout: WorkNCCL(SeqNum=11, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, "
            "Timeout(ms)=120000) ran for 120430 milliseconds before timing out.",
            "hang_detected",
            {"detector": "watchdog", "seq": 11, "op": "ALLREDUCE", "elapsed_ms": 120430, "stated_rank": 3},
            "torch 2.1 what() (constructed)",
        ),
        Example(
            "[rank6]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 6] Timeout at NCCL work: 42, last enqueued "
            "NCCL "
            "work: 42, last completed NCCL work: 41.",
            "hang_detected",
            {"detector": "watchdog", "seq": 42, "pg": "0", "pg_rank": 6, "stated_rank": 6},
            "torch 2.3-2.5 (constructed)",
        ),
        # -- hang_detected: blocking wait -------------------------------------------------------------
        Example(
            "RuntimeError: [Rank 3] Caught collective operation timeout: WorkNCCL(SeqNum=55, "
            "OpType=ALLREDUCE, "
            "Timeout(ms)=60000) ran for 60112 milliseconds before timing out.",
            "hang_detected",
            {
                "detector": "blocking_wait",
                "seq": 55,
                "op": "ALLREDUCE",
                "timeout_ms": 60000,
                "elapsed_ms": 60112,
                "stated_rank": 3,
            },
            "torch 1.11-2.2 (constructed)",
        ),
        Example(
            "torch.distributed.DistBackendError: [Rank 1] Work WorkNCCL(SeqNum=9, OpType=BARRIER, "
            "NumelIn=1, "
            "NumelOut=1, Timeout(ms)=60000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).",
            "hang_detected",
            {
                "detector": "blocking_wait",
                "seq": 9,
                "op": "BARRIER",
                "timeout_ms": 60000,
                "elapsed_ms": None,
                "stated_rank": 1,
            },
            "torch 2.3-2.4 (constructed)",
        ),
        Example(
            "torch.distributed.DistBackendError: [Rank 0] Work WorkNCCL(SeqNum=23, OpType=ALLTOALL_BASE, "
            "NumelIn=64, NumelOut=64, Timeout(ms)=30000) timed out in blocking wait.",
            "hang_detected",
            {"detector": "blocking_wait", "seq": 23, "op": "ALLTOALL_BASE", "numel_in": 64},
            "torch 2.5-2.9 (constructed)",
        ),
        # -- hang_detected: heartbeat monitor ---------------------------------------------------------
        Example(
            "[rank1]:[E ProcessGroupNCCL.cpp:1183] [Rank 1] monitoring thread detects no heartbeat and "
            "will "
            "finally kill the process!",
            "hang_detected",
            {"detector": "heartbeat_monitor", "stuck_s": None, "stated_rank": 1},
            "torch 2.2 (constructed)",
        ),
        Example(
            "[rank4]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 4] Heartbeat monitor timed out! Process "
            "will be "
            "terminated after dumping debug info. workMetaList_.size()=3\n"
            "[rank4]:[E ProcessGroupNCCL.cpp:1153] [PG 0 Rank 4] ProcessGroupNCCL preparing to dump "
            "debug info.\n"
            "[rank4]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 4] [PG 0 Rank 4] ProcessGroupNCCL's "
            "watchdog got "
            "stuck for 600 seconds without making progress in monitoring enqueued collectives. This "
            "typically "
            "indicates a NCCL/CUDA API hang blocking the watchdog, workMetaList_.size() = 3",
            "hang_detected",
            {"detector": "heartbeat_monitor", "stuck_s": 600, "pg": "0", "pg_rank": 4, "stated_rank": 4},
            "torch 2.3-2.4 (constructed)",
        ),
        Example(
            "[rank4]:[E1212 08:40:11.004120553 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 4] "
            "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring "
            "enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) "
            "hang "
            "blocking the watchdog, and could be triggered by another thread holding the GIL inside a "
            "CUDA api",
            "hang_detected",
            {
                "detector": "heartbeat_monitor",
                "stuck_s": 480,
                "pg": "0",
                "pg_rank": 4,
                "pg_desc": "default_pg",
                "stated_rank": 4,
            },
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank9]:[E1212 08:40:11.004120553 ProcessGroupNCCL.cpp:1870] [PG ID 3 PG GUID "
            "12(TENSOR_PARALLEL) "
            "Rank 1] ProcessGroupNCCL's watchdog got stuck for 660 seconds without making progress in "
            "monitoring enqueued collectives.",
            "hang_detected",
            {
                "detector": "heartbeat_monitor",
                "stuck_s": 660,
                "pg": "12",
                "pg_rank": 1,
                "pg_desc": "TENSOR_PARALLEL",
                "stated_rank": None,
            },
            "torch 2.5-2.9 named sub-group (constructed)",
        ),
        # -- pg_status -------------------------------------------------------------------------------
        Example(
            "[rank6]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 6] Timeout at NCCL work: 42, last enqueued "
            "NCCL "
            "work: 42, last completed NCCL work: 94175260721152.",
            "pg_status",
            {"pg": "0", "pg_rank": 6, "failed_seq": 42, "last_enqueued": 42, "last_completed": -1},
            "torch 2.3 uninitialised last-completed (constructed)",
        ),
        Example(
            "[rank1]:[E1003 10:02:44.118303129 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] "
            "Exception "
            "(either an error or timeout) detected by watchdog at work: 880, last enqueued NCCL work: "
            "881, last "
            "completed NCCL work: 879.",
            "pg_status",
            {
                "pg": "0",
                "pg_desc": "default_pg",
                "pg_rank": 1,
                "failed_seq": 880,
                "last_enqueued": 881,
                "last_completed": 879,
            },
            "torch 2.4 (constructed)",
        ),
        Example(
            "[rank2]:[E1003 10:02:44.118303129 ProcessGroupNCCL.cpp:1664] [PG ID 2 PG GUID 5 Rank 0] "
            "Exception "
            "(either an error or timeout) detected by watchdog at work: 17, last enqueued NCCL work: 20, "
            "last "
            "completed NCCL work: 16.",
            "pg_status",
            {
                "pg": "5",
                "pg_desc": None,
                "pg_rank": 0,
                "stated_rank": None,
                "failed_seq": 17,
                "last_enqueued": 20,
                "last_completed": 16,
            },
            "torch 2.5 (constructed)",
        ),
        Example(
            "[rank3]:[E1218 02:31:07.551020411 ProcessGroupNCCL.cpp:2395] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 3]  "
            "failure detected by watchdog at work sequence id: 1290 PG status: last enqueued work: 1290, "
            "last "
            "completed work: 1289",
            "pg_status",
            {
                "pg": "0",
                "pg_rank": 3,
                "stated_rank": 3,
                "failed_seq": 1290,
                "last_enqueued": 1290,
                "last_completed": 1289,
            },
            "torch 2.6-2.9 (constructed)",
        ),
        # -- dump_signal -----------------------------------------------------------------------------
        Example(
            "[rank0]:[E ProcessGroupNCCL.cpp:1291] [PG 0 Rank 0] Received a timeout signal from this "
            "local rank "
            "and will start to dump the debug info.",
            "dump_signal",
            {"source": "local", "from_rank": None, "pg": "0"},
            "torch 2.3 (constructed)",
        ),
        Example(
            "[rank2]:[E ProcessGroupNCCL.cpp:1295] [PG 0 Rank 2] Received a global timeout from another "
            "rank and "
            "will start to dump the debug info.",
            "dump_signal",
            {"source": "remote", "from_rank": None},
            "torch 2.3 (constructed)",
        ),
        Example(
            "[rank2]:[E921 11:00:01.000000001 ProcessGroupNCCL.cpp:1339] [PG 0 (default_pg) Rank 2] "
            "Received a "
            "global dump signal from rank 5, and will start to dump the debug info.",
            "dump_signal",
            {"source": "remote", "from_rank": 5, "pg": "0"},
            "torch 2.4 (constructed)",
        ),
        Example(
            "[rank1]:[E703 21:51:54.112730895 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Received a dump signal due to a collective timeout from  rank 3 and we will try our best to "
            "dump "
            "the debug info. Last enqueued NCCL work: 812, last completed NCCL work: 812.This is most "
            "likely "
            "caused by incorrect usages of collectives, e.g., wrong sizes used across ranks",
            "dump_signal",
            {
                "source": "remote",
                "from_rank": 3,
                "pg": "0",
                "pg_rank": 1,
                "last_enqueued": 812,
                "last_completed": 812,
            },
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank3]:[E703 21:51:54.112730895 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 3] "
            "Received a dump signal due to a collective timeout from this local rank and we will try our "
            "best to "
            "dump the debug info. Last enqueued NCCL work: 813, last completed NCCL work: 812.",
            "pg_status",
            {"pg": "0", "pg_rank": 3, "failed_seq": None, "last_enqueued": 813, "last_completed": 812},
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank3]:[E703 21:51:54.112730895 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 3] "
            "Received a dump signal due to a collective timeout from this local rank and we will try our "
            "best to "
            "dump the debug info. Last enqueued NCCL work: 813, last completed NCCL work: 812.",
            "dump_signal",
            {"source": "local", "from_rank": None, "last_enqueued": 813},
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank4]:[E703 21:51:54.112730895 ProcessGroupNCCL.cpp:1801] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 4] "
            "Observed flight recorder dump signal from another rank via TCPStore.",
            "dump_signal",
            {"source": "remote", "from_rank": None},
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank2]:[E214 03:12:47.508812406 ProcessGroupNCCL.cpp:2103] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 2] "
            "First PG on this rank to signal dumping.",
            "dump_signal",
            {"source": "local", "pg": "0"},
            "torch 2.7-2.9 (constructed)",
        ),
        Example(
            "[rank0]:[I214 03:12:47.508812406 ProcessGroupNCCL.cpp:1650] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 0] "
            "Dump signal received through pipe, triggering FR dump.",
            "dump_signal",
            {"source": "pipe"},
            "torch 2.8-2.9 (constructed)",
        ),
        # -- flight_recorder -------------------------------------------------------------------------
        Example(
            "[rank0]:[E ProcessGroupNCCL.cpp:1153] [PG 0 Rank 0] ProcessGroupNCCL preparing to dump "
            "debug info.",
            "flight_recorder",
            {"action": "dumping", "path": None},
            "torch 2.2-2.5 (constructed)",
        ),
        Example(
            "[rank0]:[E709 17:05:38.162904317 ProcessGroupNCCL.cpp:1399] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 0] "
            "ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1, only active "
            "collectives: 0",
            "flight_recorder",
            {"action": "dumping"},
            "torch 2.6-2.9 (constructed)",
        ),
        Example(
            "[rank1]:[I709 17:05:38.162904317 ProcessGroupNCCL.cpp:1202] [PG 0 (default_pg) Rank 1] "
            "ProcessGroupNCCL dumping nccl trace to /tmp/fr/nccl_trace_rank_1",
            "flight_recorder",
            {"action": "dumping", "path": "/tmp/fr/nccl_trace_rank_1"},
            "torch 2.4-2.9 (constructed)",
        ),
        Example(
            "[rank1]:[I709 17:05:39.000417206 ProcessGroupNCCL.cpp:1210] Finished writing NCCLPG debug "
            "info to "
            "/tmp/fr/nccl_trace_rank_1",
            "flight_recorder",
            {"action": "dumped", "path": "/tmp/fr/nccl_trace_rank_1"},
            "torch 2.2-2.6 (constructed)",
        ),
        Example(
            "[rank1]:[I709 17:05:39.000417206 FlightRecorder.cpp:88] Finished writing Flight Recorder "
            "debug info "
            "to /home/u/.cache/torch/nccl_trace_rank_1",
            "flight_recorder",
            {"action": "dumped", "path": "/home/u/.cache/torch/nccl_trace_rank_1"},
            "torch 2.7-2.9 (constructed)",
        ),
        Example(
            "[rank1]:[I709 17:05:39.000417206 ProcessGroupNCCL.cpp:1420] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Flight Recorder trace successfully dumped.",
            "flight_recorder",
            {"action": "dumped"},
            "torch 2.8-2.9 (constructed)",
        ),
        Example(
            "[rank2]:[E214 03:12:47.508790113 ProcessGroupNCCL.cpp:670] Stack trace of the failed "
            "collective not "
            "found, potentially because FlightRecorder is disabled. You can enable it by setting "
            "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
            "flight_recorder",
            {"action": "disabled"},
            "torch 2.6-2.9 (constructed)",
        ),
        Example(
            "[rank1]:[E709 17:05:39.000417206 ProcessGroupNCCL.cpp:1212] Error opening file for writing "
            "NCCLPG "
            "debug info: /readonly/nccl_trace_rank_1",
            "flight_recorder",
            {"action": "failed", "path": "/readonly/nccl_trace_rank_1"},
            "torch 2.2-2.6 (constructed)",
        ),
        # -- process_teardown ------------------------------------------------------------------------
        Example(
            "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the "
            "asynchronous "
            "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. "
            "To avoid "
            "this inconsistency, we are taking the entire process down.",
            "process_teardown",
            {"reason": "nccl_operations_failed", "fatal": True, "detector": "watchdog"},
            "torch 1.10-1.12 (constructed)",
        ),
        Example(
            "[E ProcessGroupNCCL.cpp:488] Some NCCL operations have failed or timed out. Due to the "
            "asynchronous "
            "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
            "process_teardown",
            {"reason": "nccl_operations_failed", "fatal": False, "stated_rank": None},
            "torch 1.13-2.1 (constructed)",
        ),
        Example(
            "[rank2]:[E ProcessGroupNCCL.cpp:583] [Rank 2] To avoid data inconsistency, we are taking "
            "the entire "
            "process down.",
            "process_teardown",
            {"reason": "data_inconsistency", "fatal": True, "stated_rank": 2},
            "torch 1.13-2.9 (constructed)",
        ),
        Example(
            "[rank0]:[F ProcessGroupNCCL.cpp:1210] [Rank 0] NCCL monitor thread timeout. Basically, this "
            "could "
            "be due to CUDA or NCCL calls being unexpectedly blocking, especially when your program "
            "enters a "
            "deadlock state in watchdogor destructors.",
            "process_teardown",
            {"reason": "watchdog_hang", "fatal": True, "detector": "heartbeat_monitor"},
            "torch 2.2 (constructed)",
        ),
        Example(
            "[rank4]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 4] [PG 0 Rank 4] ProcessGroupNCCL's "
            "watchdog got "
            "stuck for 600 seconds without making progress in monitoring enqueued collectives.",
            "process_teardown",
            {
                "reason": "watchdog_hang",
                "fatal": True,
                "detector": "heartbeat_monitor",
                "pg": "0",
                "pg_rank": 4,
            },
            "torch 2.3 (constructed)",
        ),
        Example(
            "[rank7]:[F1003 18:40:01.000000001 ProcessGroupNCCL.cpp:1285] [PG 0 (default_pg) Rank 7] [PG "
            "0 "
            "(default_pg) Rank 7] ProcessGroupNCCL's watchdog detected a dump signal from rank 2 and "
            "notified "
            "the current rank. This is most likely caused by incorrect usages of collectives",
            "process_teardown",
            {"reason": "dump_signal_remote", "fatal": True, "pg_rank": 7},
            "torch 2.4 (constructed)",
        ),
        Example(
            "[rank6]:[F612 01:26:36.903826604 ProcessGroupNCCL.cpp:1554] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 6] "
            "Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL "
            "watchdog hang.",
            "process_teardown",
            {
                "reason": "watchdog_hang",
                "fatal": True,
                "detector": "heartbeat_monitor",
                "pg": "0",
                "stated_rank": 6,
            },
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            # the same line is the heartbeat monitor's verdict that rank 6's watchdog got stuck (a paste cut
            # after the `got stuck for <sec> seconds` sentence still says so)
            "[rank6]:[F612 01:26:36.903826604 ProcessGroupNCCL.cpp:1554] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 6] "
            "Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL "
            "watchdog hang.",
            "hang_detected",
            {"detector": "heartbeat_monitor", "pg": "0", "stated_rank": 6, "stuck_s": None},
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank1]:[F612 01:26:36.903826604 ProcessGroupNCCL.cpp:1554] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Terminating the process after attempting to dump debug info, due to collective timeout or "
            "exception.",
            "process_teardown",
            {"reason": "collective_timeout_or_exception", "fatal": True},
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "[rank1]:[E ProcessGroupNCCL.cpp:1300] PGNCCL Monitor Thread is disabled, but would have "
            "killed this "
            "job:[PG 0 Rank 1] Heartbeat monitor timed out!",
            "process_teardown",
            {"fatal": False, "detector": "heartbeat_monitor"},
            "torch 2.3-2.4 (constructed)",
        ),
        Example(
            "[rank1]:[E612 01:26:36.903826604 ProcessGroupNCCL.cpp:1560] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "ProcessGroupNCCL monitor thread is disabled, but would have terminated the processafter "
            "attempting "
            "to dump debug info, due to ProcessGroupNCCL watchdog hang.",
            "process_teardown",
            {"reason": "watchdog_hang", "fatal": False, "detector": "heartbeat_monitor"},
            "torch 2.5-2.9 (constructed)",
        ),
        Example(
            "terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  [Rank 2] NCCL watchdog thread terminated with exception: CUDA error: an illegal "
            "memory "
            "access was encountered",
            "process_teardown",
            {
                "reason": "uncaught_exception",
                "fatal": True,
                "exc_type": "std::runtime_error",
                "stated_rank": 2,
            },
            "torch 1.13-2.1 (constructed)",
        ),
        Example(
            "terminate called after throwing an instance of 'c10::DistBackendError'\n"
            "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated "
            "with "
            "exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600019 milliseconds "
            "before "
            "timing out.",
            "process_teardown",
            {
                "reason": "uncaught_exception",
                "exc_type": "c10::DistBackendError",
                "pg": "0",
                "pg_rank": 3,
                "stated_rank": 3,
            },
            "torch 2.2-2.9 (constructed)",
        ),
        # -- watchdog_terminated ---------------------------------------------------------------------
        Example(
            "[E ProcessGroupNCCL.cpp:916] [Rank 7] NCCL watchdog thread terminated with exception: CUDA "
            "error: "
            "unknown error",
            "watchdog_terminated",
            {"error": "CUDA error: unknown error", "stated_rank": 7},
            "torch 1.13-2.2 (constructed)",
        ),
        Example(
            "[rank0]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 0] Process group watchdog thread "
            "terminated with "
            "exception: NCCL error: remote process exited or there was a network error, NCCL version "
            "2.20.5",
            "watchdog_terminated",
            {
                "error": "NCCL error: remote process exited or there was a network error, "
                "NCCL version 2.20.5",
                "pg": "0",
                "pg_rank": 0,
            },
            "torch 2.3 (constructed)",
        ),
        Example(
            "[rank12]:[E823 16:05:52.640195337 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 4] "
            "Process "
            "group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
            "encountered",
            "watchdog_terminated",
            {"pg": "0", "pg_desc": "default_pg", "pg_rank": 4, "stated_rank": 4},
            "torch 2.4 (constructed)",
        ),
        Example(
            "[rank0]:[E305 22:41:17.064318275 ProcessGroupNCCL.cpp:1897] [PG ID 1 PG GUID 1 Rank 0] "
            "Process "
            "group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
            "encountered",
            "watchdog_terminated",
            {"pg": "1", "pg_rank": 0, "stated_rank": None},
            "torch 2.5-2.9 (constructed)",
        ),
        # -- desync_report ---------------------------------------------------------------------------
        Example(
            "[E ProcessGroupNCCL.cpp:587] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800210 milliseconds "
            "before "
            "timing out.\n"
            "\t - [0] Timeout at collective: ALLREDUCE, #12\n"
            "\t - To our best knowledge, ranks [3] are the lagging ranks that caused this timeout. They "
            "never "
            "joined any collectives\n"
            "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out.",
            "desync_report",
            {
                "reporter_rank": 0,
                "seq": 12,
                "op": "ALLREDUCE",
                "lagging_ranks": [3],
                "not_joined_ranks": [3],
                "not_finished_ranks": [],
            },
            "torch 1.11-2.1 (constructed)",
        ),
        Example(
            "[rank1]:[E ProcessGroupNCCL.cpp:1502] [PG 0 Rank 1]\n"
            "\t - [1] Timeout at collective: BROADCAST, #40\n"
            "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
            "\t   - [2] joined but didn't finish collective #40 (count from 1)\n"
            "\t - Snapshot of ranks' latest states:\n"
            "\t   #40 started ranks:\n"
            "\t     [0, 1, 2] started BROADCAST\n"
            "[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 40, last enqueued "
            "NCCL "
            "work: 40, last completed NCCL work: 39.",
            "desync_report",
            {
                "pg": "0",
                "pg_rank": 1,
                "reporter_rank": 1,
                "seq": 40,
                "op": "BROADCAST",
                "lagging_ranks": [2],
                "not_finished_ranks": [2],
                "joined_seq": 40,
                "snapshot": ["#40 started BROADCAST: 0,1,2"],
            },
            "torch 2.2-2.5 (constructed)",
        ),
        Example(
            "[rank0]:[E1017 09:58:03.519034471 ProcessGroupNCCL.cpp:1937] Rank 0\n"
            "\t - [0] Timeout at collective: ALLREDUCE, #146\n"
            "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
            "\t   - [1, 3] finished collective #144, but didn't join collective #145 (count from 1)\n"
            "\t - Snapshot of ranks' latest states:\n"
            "\t   #144 finished ranks:\n"
            "\t     [1, 3] finished ALLREDUCE\n"
            "\t   #146 started ranks:\n"
            "\t     [0, 2] started ALLREDUCE\n",
            "desync_report",
            {
                "reporter_rank": 0,
                "seq": 146,
                "op": "ALLREDUCE",
                "lagging_ranks": [1, 3],
                "not_joined_ranks": [1, 3],
                "joined_seq": 144,
                "snapshot": ["#144 finished ALLREDUCE: 1,3", "#146 started ALLREDUCE: 0,2"],
            },
            "torch 2.6-2.9 (constructed)",
        ),
        Example(
            # both lists: the ranks that joined #57 and wait in it, and the one that finished #56 but never
            # joined #57; only the latter lags
            "[rank4]:[E305 11:20:41.880112074 ProcessGroupNCCL.cpp:703] Rank 4\n"
            "\t - [4] Timeout at collective: ALLREDUCE, #57\n"
            "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
            "\t   - [0, 1, 3, 4] joined but didn't finish collective #57 (count from 1)\n"
            "\t     [2] finished collective #56, but didn't join collective #57 (count from 1)\n",
            "desync_report",
            {
                "reporter_rank": 4,
                "seq": 57,
                "op": "ALLREDUCE",
                "lagging_ranks": [2],
                "not_joined_ranks": [2],
                "not_finished_ranks": [0, 1, 3, 4],
                "joined_seq": 56,
            },
            "torch 2.6-2.9 (constructed)",
        ),
        Example(
            # a paste that starts inside the report: its first line (`Rank 2` / `Timeout at collective`) is
            # not in it
            "[rank2]:\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync "
            "are:\n"
            "[rank2]:\t   - [5] finished collective #88, but didn't join collective #89 (count from 1)\n"
            "[rank2]:\t - Snapshot of ranks' latest states:\n"
            "[rank2]:\t   #88 finished ranks:\n"
            "[rank2]:\t     [5] finished ALLREDUCE\n"
            "[rank2]:\t   #90 started ranks:\n"
            "[rank2]:\t     [0, 1, 2, 3, 4] started ALLREDUCE\n",
            "desync_report",
            {
                "reporter_rank": None,
                "seq": 90,
                "lagging_ranks": [5],
                "not_joined_ranks": [5],
                "joined_seq": 88,
                "snapshot": ["#88 finished ALLREDUCE: 5", "#90 started ALLREDUCE: 0,1,2,3,4"],
            },
            "torch 2.6-2.9 (constructed)",
        ),
    )
    near_misses = (
        "A month ago the other ranks printed `Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=77, OpType=BROADCAST, ...)` after rank 0 died; is that still expected?",
        "[rank0]:[I ProcessGroupNCCL.cpp:669] [Rank 0] ProcessGroupNCCL initialization options: size: 8, "
        "global "
        "rank: 0, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0",
        "[rank0]:[I709 17:05:38.162904317 ProcessGroupNCCL.cpp:1012] HeartbeatMonitor environments: "
        "TORCH_NCCL_ENABLE_MONITORING (Whether to kill program when no watchdog heartbeat detected): 1",
        "[rank0]:[I709 17:05:38.162904317 ProcessGroupNCCL.cpp:1013] PGNCCL Watchdog environments: "
        "TORCH_NCCL_RETHROW_CUDA_ERRORS: 1, TORCH_NCCL_PROPAGATE_ERROR: 0, TORCH_NCCL_DESYNC_DEBUG: 0",
        "Set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so the watchdog tears the process down on a collective "
        "timeout",
        "training step 40: loss 2.31, Timeout(ms)=600000 configured for NCCL work queues",
        "[rank0]:[W ProcessGroupNCCL.cpp:4000] Warning: TORCH_NCCL_DUMP_ON_TIMEOUT is set but debug info "
        "will "
        "be written only when the trace buffer size is non-zero",
    )
