"""Immutable records shared by every layer: where a line came from, what it says, what was skipped."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hanglens import lazyre as re

# Timestamps whose logs state no year (c10/glog envelopes) are placed in this year, a leap year so that
# Feb 29 survives; renderers print such times without a year and never bucket them by calendar day.
YEARLESS_YEAR = 2000


# The severities (`LogLine.level`) of an error: E(rror), F(atal), C(ritical).
ERROR_LEVELS = frozenset("EFC")

# Events the torchrun agent (not a worker) writes, also into a worker's console: they never take a
# worker's rank from the file they are in.
AGENT_EVENT_KINDS = frozenset(
    {"child_failed", "worker_failed", "closing_signal", "launcher_exit", "worker_group_restart",
     "agent_succeeded", "launch_config", "job_stopped", "rank_layout", "worker_spawned"}
)


class Category(str, enum.Enum):
    """Root-cause categories. The values are stable ids that appear in JSON and reports."""

    CONTROL_FLOW_DIVERGENCE = "control_flow_divergence"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    ILLEGAL_MEMORY_ACCESS = "illegal_memory_access"
    CUDA_ERROR = "cuda_error"
    OOM = "oom"
    RANK_CRASH = "rank_crash"
    DATALOADER_STALL = "dataloader_stall"
    DATALOADER_CRASH = "dataloader_crash"
    NETWORK_TRANSPORT = "network_transport"
    NCCL_INIT_FAILURE = "nccl_init_failure"
    VERSION_MISMATCH = "version_mismatch"
    RENDEZVOUS_FAILURE = "rendezvous_failure"
    DDP_UNUSED_PARAMETERS = "ddp_unused_parameters"
    WATCHDOG_STUCK = "watchdog_stuck"
    STRAGGLER = "straggler"
    NONE = "none"
    UNKNOWN = "unknown"


class Confidence(str, enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def order(self) -> int:
        return {"low": 0, "medium": 1, "high": 2}[self.value]


class Detector(str, enum.Enum):
    """Who noticed a hang. One hang, one event kind (`hang_detected`), whoever reported it."""

    WATCHDOG = "watchdog"
    HEARTBEAT_MONITOR = "heartbeat_monitor"
    BLOCKING_WAIT = "blocking_wait"
    GLOO = "gloo"
    STORE = "store"
    DATALOADER = "dataloader"
    MONITORED_BARRIER = "monitored_barrier"


@dataclass(frozen=True, slots=True, order=True)
class SourceRef:
    """A physical line of an input: `path` as shown to the user, `line` 1-based (counted by `\\n`).

    Archive members are shown as `archive.tar.gz!member/path`.
    """

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class Origin:
    """What the input's location says about who wrote it (file names, torchrun log_dir trees)."""

    rank: int | None = None
    host: str | None = None
    local_rank: int | None = None
    attempt: int | None = None
    stream: str | None = None          # "stdout" | "stderr" | None
    node_dir: str | None = None        # torchrun agent folder (<run_id>_<suffix>) the file sits in


@dataclass(frozen=True, slots=True)
class LogLine:
    """One logical line after outer prefixes (scheduler, launcher, `[rankN]:`, envelopes) were removed.

    `text` is the payload parsers match on; `raw` is the line as read (decoded, ANSI stripped) for
    evidence. `time` is POSIX seconds (naive local clock of the writer) or None; `clock` names the
    envelope the time came from ("c10", "glog", "pylog", "iso", "nccl", ...), because different
    envelopes on the same host may carry different clocks. `level` is the one-letter severity
    (I, W, E, F, C, D) when an envelope states one. `writer` names the output stream a launcher prefix says
    the line came from (`mpi 1,3` for Open MPI's `[1,3]<stderr>:`, `tee default1`, `task 3`, `host gpu-07`),
    None when no prefix says.
    """

    text: str
    raw: str
    ref: SourceRef
    rank: int | None = None
    host: str | None = None
    local_rank: int | None = None
    attempt: int | None = None
    stream: str | None = None
    time: float | None = None
    clock: str | None = None
    level: str | None = None
    writer: str | None = None


# Key layouts of `Fields` (key -> position), one per distinct tuple of keys; parsers emit a few dozen.
_LAYOUTS: dict[tuple[str, ...], dict[str, int]] = {}
_MAX_LAYOUTS = 4096


class Fields(Mapping[str, Any]):
    """A read-only field mapping that takes a third to half the memory of a dict: the values in a tuple,
    the keys' positions in a layout shared by every mapping with the same keys (a big job holds a few
    events per rank, each with up to 15 fields). Compares equal to a dict with the same items."""

    __slots__ = ("_at", "_values")

    def __init__(self, items: Mapping[str, Any]) -> None:
        keys = tuple(items)
        at = _LAYOUTS.get(keys)
        if at is None:
            at = {k: i for i, k in enumerate(keys)}
            if len(_LAYOUTS) < _MAX_LAYOUTS:
                _LAYOUTS[keys] = at
        self._at = at
        self._values = tuple(items.values())

    def __getitem__(self, key: str) -> Any:
        return self._values[self._at[key]]

    def get(self, key: str, default: Any = None) -> Any:
        i = self._at.get(key)
        return default if i is None else self._values[i]

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(zip(self._at, self._values, strict=True)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Fields, (dict(zip(self._at, self._values, strict=True)),))


@dataclass(frozen=True, slots=True, init=False)
class Event:
    """A typed fact read from one line (or one multi-line block starting at line `line` of `path`).

    `fields` holds JSON-compatible values only (str, int, float, bool, None, lists of those).
    `rank` is the global rank when known. `parser` names the module that produced it. `writer` is the
    launcher-prefixed stream of its line (see LogLine), used to attribute a stream to one rank.

    Made as `Event(kind, ref, text, parser, ...)`: the line's SourceRef is kept as its path and line number
    (`ref` gives it back), so a big job's events hold no SourceRef object each (48 bytes apiece: 8 MiB for
    the 180,000 lines 16,384 ranks' logs yield). `dataclasses.replace` works as on any dataclass.
    """

    kind: str
    path: str
    line: int
    text: str
    parser: str
    rank: int | None
    host: str | None
    time: float | None
    local_rank: int | None
    attempt: int | None
    level: str | None
    fields: Mapping[str, Any]
    writer: str | None

    def __init__(self, kind: str, ref: SourceRef | None = None, text: str = "", parser: str = "",
                 rank: int | None = None, host: str | None = None, time: float | None = None,
                 local_rank: int | None = None, attempt: int | None = None, level: str | None = None,
                 fields: Mapping[str, Any] | None = None, writer: str | None = None, *,
                 path: str | None = None, line: int | None = None) -> None:
        setter = object.__setattr__
        if ref is not None:
            path, line = ref.path, ref.line
        elif path is None or line is None:
            raise TypeError("Event needs a ref (or a path and a line)")
        setter(self, "kind", kind)
        setter(self, "path", path)
        setter(self, "line", line)
        setter(self, "text", text)
        setter(self, "parser", parser)
        setter(self, "rank", rank)
        setter(self, "host", host)
        setter(self, "time", time)
        setter(self, "local_rank", local_rank)
        setter(self, "attempt", attempt)
        setter(self, "level", level)
        setter(self, "fields", {} if fields is None else fields)
        setter(self, "writer", writer)

    @property
    def ref(self) -> SourceRef:
        """The line this event was read from (made on each call: hot loops read `path` and `line`)."""
        return SourceRef(self.path, self.line)

    def get(self, name: str, default: Any = None) -> Any:
        f = self.fields
        if f.__class__ is Fields:  # (inlined: the analysis asks a big job's events millions of times)
            i = f._at.get(name)
            return default if i is None else f._values[i]
        return f.get(name, default)


@dataclass(frozen=True, slots=True)
class Skipped:
    """An input that was not read, and why (shown to the user, never silently dropped)."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class InputFile:
    """An input that was read: its display path, size in bytes, lines, and what its location says."""

    path: str
    size: int
    lines: int
    origin: Origin
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    events: int = 0
    unknown_lines: int = 0


def ray_writer(actor: str, pid: str | int) -> str:
    """The writer of a Ray worker's lines, `ray <Actor> <pid>`: Ray's `(<Actor> pid=<pid>)` prefix on its
    lines (ingest/prefix.py) and a `RayTaskError` relaying its traceback (parsers/traceback.py) name it
    alike, and ingest/attribute.py reads its pid back (log-formats.md section 9.2)."""
    return f"ray {actor} {pid}"


# Ray re-raises a remote task's or actor method's exception in the process that called `ray.get` as
# `RayTaskError(<cause>)` (ray/exceptions.py `RayTaskError.as_instanceof_cause`: a class named
# `f"RayTaskError({cause_cls.__name__})"`), whose text replaces the remote traceback's `Traceback (most recent
# call last):` header with `ray::<proctitle>() (pid=<pid>, ip=<ip>[, actor_id=<id>, repr=<repr>])`
# (`RayTaskError.__str__`), then the remote frames and the cause's own `<Type>: <message>` line. One pattern
# for the parser that reads the relayed traceback (parsers/traceback.py) and the attribution that gives its
# lines the remote worker's rank by pid (ingest/attribute.py). Unanchored: callers that need the line to
# start with it check what precedes `m.start()` (a module path such as `ray.exceptions.`).
RAY_TASK_ERROR_RE = re.compile(
    r"RayTaskError(?:\([\w.]{1,200}\))?: ray::(?P<proc>[^\s()]{1,200})(?:\(\))? "
    r"\(pid=(?P<pid>\d{1,10})(?:, ip=(?P<ip>[\w.:]{1,64}))?[,)]")


def short_host(host: str) -> str:
    """A host name without its domain (`gpu-07.cluster.local` → gpu-07), an IP address as it is: launchers,
    NCCL and the kernel name one node in both forms."""
    return host if host.replace(".", "").isdigit() else host.split(".")[0]


def utf8_text(s: str) -> str:
    """Text that encodes as UTF-8: undecodable file-name bytes (surrogate-escaped) show as `\\xNN`."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        try:
            return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return s.encode("utf-8", "backslashreplace").decode("utf-8")


def log_datetime(t: Any) -> datetime | None:
    """A normalised log time (POSIX seconds of the writer's naive clock) as a naive datetime; None if unknown.

    A year of YEARLESS_YEAR means the log stated none: callers print such times without a year.
    """
    if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t:
        return None
    try:
        return datetime.fromtimestamp(float(t), tz=timezone.utc).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        return None


def event_order(e: Event) -> tuple[str, int, str, str]:
    """The order of a job's events: by file, line, kind and parser (how the reader gives them)."""
    return (e.path, e.line, e.kind, e.parser)


def events_in_order(events: Iterable[Event]) -> bool:
    """True when `events` are sorted by `event_order` already (as they mostly come): checked pair by pair,
    so a big job needs no list of sort keys."""
    prev: tuple[str, int, str, str] | None = None
    for e in events:
        key = event_order(e)
        if prev is not None and key < prev:
            return False
        prev = key
    return True
