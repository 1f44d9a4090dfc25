"""Find every log in the given paths, read each into events, attribute ranks and hosts job-wide."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from hanglens import lazyre as re
from hanglens.errors import InputError
from hanglens.ingest import flight
from hanglens.ingest.attribute import FileEvents, attribute
from hanglens.ingest.jsonlines import export_kind
from hanglens.ingest.origin import MAX_ERROR_JSON, error_file_event, origin_of
from hanglens.ingest.prefix import ANSI_RE, strip_prefixes
from hanglens.ingest.progress import Meter, OnProgress, ReadProgress
from hanglens.ingest.reader import (
    BLOCK,
    UTF16_BOMS,
    FileResult,
    Reader,
    Replay,
    Utf16ToUtf8,
    compile_triggers,
    json_message_path,
    ordered_stream,
    topped_up,
)
from hanglens.ingest.runs import RunInfo, apply_runs, plan_runs, runs_summary
from hanglens.ingest.sources import (
    SNIFF,
    ByteBudget,
    Head,
    Locator,
    Opened,
    ReadableStream,
    Sources,
    Unit,
    discover,
    open_unit,
)
from hanglens.ingest.split import SPLIT_MAX_BYTES, SPLIT_MIN_BYTES, PartOut, PartSpec, join, plan, read_part
from hanglens.ingest.tail import with_last_lines
from hanglens.limits import DEFAULT_LIMITS, Limits
from hanglens.model import Event, Fields, InputFile, Origin, Skipped, SourceRef, event_order, events_in_order
from hanglens.parsers import PARSERS
from hanglens.parsers.base import Parser

if TYPE_CHECKING:
    from concurrent.futures import Future

PARALLEL_MIN_BYTES = 32 << 20   # below this, starting worker processes costs more than it saves
CONTEXT_LINE_CHARS = 2000       # evidence context lines are cut here
_TORCHRUN_JSON_RE = re.compile(r"(?:^|[/!])error[\w.-]*\.json$")
# Configuration and source files that sit beside the logs (Hydra's `.hydra/config.yaml` in its run folder,
# a DeepSpeed `ds_config.json`, torchtitan's `.toml`, the training script itself): what they say is
# settings or code, never something that happened, so a comment such as "# lower if CUDA out of memory"
# must not become evidence. Shell scripts are still read (a `torchrun --nproc_per_node` line is context
# the launcher parsers use), as are notebooks (their outputs hold real tracebacks).
_CONTEXT_EXTS = {
    "yaml": "configuration", "yml": "configuration", "toml": "configuration", "ini": "configuration",
    "cfg": "configuration", "conf": "configuration", "py": "Python source",
}


def context_reason(rel: str, head: bytes) -> str | None:
    """Why the file at `rel` (its first bytes `head`) is context rather than a log, else None.

    By the name's extension for configuration and source files; a `.json` file only when it is one JSON
    document (an object that is not JSON lines with a message field, `json_message_path`, or an array that
    is not an export of records, `export_kind`), as error.json files and Flight Recorder dumps are read
    before this is asked.
    """
    name = PurePosixPath(rel.replace("!", "/")).name.lower()
    ext = name.rpartition(".")[2] if "." in name else ""
    if ext in _CONTEXT_EXTS:
        return f"{_CONTEXT_EXTS[ext]} file (.{ext}): read as context, not as a log"
    if ext != "json":
        return None
    first = head.lstrip()[:1]
    if (first == b"{" and json_message_path(head[: 1 << 16]) is None
            and not isinstance(export_kind(head.lstrip()), tuple)) or (
            first == b"[" and export_kind(head.lstrip()) != "array"):
        return "JSON document (settings or state, not log records): read as context, not as a log"
    return None


@dataclass
class Ingested:
    """Everything read from the inputs: events sorted by (path, line), files read, inputs skipped.

    `sources` maps each display path to where its bytes live, so evidence context can be re-read;
    `notes` holds what the reader noticed per file (rejoined hard-wraps, cut over-long lines).
    """

    events: list[Event] = field(default_factory=list)
    files: list[InputFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    sources: Sources = field(default_factory=Sources)
    notes: dict[str, list[str]] = field(default_factory=dict)
    run_table: list[RunInfo] = field(default_factory=list)   # the runs held, oldest first ([] for one)

    @property
    def runs(self) -> str:
        """How many runs the inputs hold and which was judged, in words ("" for one; ingest/runs.py)."""
        return runs_summary(self.run_table)

    def context(self, refs: Iterable[SourceRef], before: int = 2,
                after: int = 2) -> dict[SourceRef, list[tuple[int, str]]]:
        return read_context(self, refs, before=before, after=after)


# (one empty set for every file whose lines state no rank: each of thousands of files would hold its own, and
# a frozenset takes 216 bytes)
_NO_RANKS: frozenset[int] = frozenset()


@dataclass(slots=True)
class _FileOut:
    """What the job keeps of one file read (a FileResult's working sets are left behind: thousands of
    small files would each hold several)."""

    display: str
    size: int
    origin: Origin
    pid: int | None
    locator: Locator
    events: list[Event]
    lines: int
    dated: tuple[float, float] | None
    envelope_ranks: frozenset[int]
    notes: tuple[str, ...]
    last_lines: list[Event]   # each writer's last line (ingest/tail.py), placed after attribution

    @classmethod
    def of(cls, display: str, size: int, origin: Origin, pid: int | None, res: FileResult,
           locator: Locator) -> _FileOut:
        return cls(display, size, origin, pid, locator, res.events, res.lines, res.dated,
                   frozenset(res.envelope_ranks) if res.envelope_ranks else _NO_RANKS, tuple(res.notes),
                   res.last_lines)

    def __reduce__(self) -> tuple[Any, ...]:
        # From a worker to the job's process the events travel as columns: unpickling builds each Event at
        # once, leaving no per-event state dict and argument tuple behind (a big job's events would sit
        # among the holes those leave, and that memory is not given back to the system).
        return (_file_out, (self.display, self.size, self.origin, self.pid, self.locator, _pack(self.events),
                            self.lines, self.dated, self.envelope_ranks, self.notes, _pack(self.last_lines)))


def _pack(events: list[Event]) -> tuple[list[Any], ...]:
    """`events` as one list per field, in Event's order."""
    if not events:
        return ()
    return tuple(map(list, zip(*[(e.kind, e.path, e.line, e.text, e.parser, e.rank, e.host, e.time,
                                  e.local_rank, e.attempt, e.level, e.fields, e.writer) for e in events],
                               strict=True)))


def _unpack(cols: tuple[list[Any], ...]) -> list[Event]:
    """The events `_pack` gave `cols`; the events of one line share its line number's int object and its
    time's float object (a pickle carries an int or a float once per event)."""
    out: list[Event] = []
    prev, prev_time = -1, None
    for kind, path, line, text, parser, rank, host, time, local_rank, attempt, level, fields, writer in zip(
            *cols, strict=True):
        if line == prev:
            line = prev
            if time is not None and time == prev_time:
                time = prev_time
        prev, prev_time = line, time
        out.append(Event(kind, None, text, parser, rank, host, time, local_rank, attempt, level, fields,
                         writer, path=path, line=line))
    return out


def _file_out(display: str, size: int, origin: Origin, pid: int | None, locator: Locator,
              cols: tuple[list[Any], ...], lines: int, dated: tuple[float, float] | None,
              envelope_ranks: frozenset[int], notes: tuple[str, ...],
              last_cols: tuple[list[Any], ...] = ()) -> _FileOut:
    """A `_FileOut` unpickled (see `_FileOut.__reduce__`)."""
    return _FileOut(display, size, origin, pid, locator, _unpack(cols), lines, dated,
                    envelope_ranks or _NO_RANKS, notes, _unpack(last_cols))


@lru_cache(maxsize=8)
def _triggers(parsers: tuple[type[Parser], ...]) -> re.Pattern[bytes]:
    return compile_triggers(parsers)


def _read_opened(op: Opened, parsers: tuple[type[Parser], ...],
                 limits: Limits = DEFAULT_LIMITS) -> _FileOut | Skipped:
    hints = origin_of(op.rel)
    origin = hints.origin
    stream: Head = op.stream
    res: FileResult | None = None
    if _TORCHRUN_JSON_RE.search(op.rel):
        data = stream.read(MAX_ERROR_JSON + 1)
        ev = error_file_event(data, op.display, origin) if len(data) <= MAX_ERROR_JSON else None
        if ev is not None:
            res = FileResult(events=[ev], lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1))
        else:
            stream = Head(data, stream)
    if res is None:
        try:
            reader = Reader(op.display, origin, parsers, _triggers(parsers), max_line=limits.max_line_bytes)
            res = reader.read(stream)
        except Exception as exc:  # logs never raise: a reader bug costs this file, not the run
            return Skipped(op.display, f"internal error while reading ({type(exc).__name__}: {exc})")
    size = res.size if res.size is not None else stream.count
    return _FileOut.of(op.display, size, origin, hints.pid, res, op.locator)


def _read_flight(op: Opened, head: bytes, fmt: str, limits: Limits = DEFAULT_LIMITS) -> _FileOut | Skipped:
    """A Flight Recorder dump (pickle or JSON; plain, compressed or an archive member) read as one."""
    hints = origin_of(op.rel)
    rank = flight.dump_rank(op.rel, head)
    assert rank is not None  # dump_format said this is a dump, so its name ends in the rank
    data = op.stream.read(limits.max_pickle_bytes + 1)   # the stream replays `head` first
    got = flight.read_dump(data, op.display, rank, hints.origin, fmt, limits)
    if isinstance(got, Skipped):
        return got
    origin = replace(hints.origin, rank=rank)
    res = FileResult(events=got, lines=len(got), ranks={rank})
    return _FileOut.of(op.display, len(data), origin, hints.pid, res, op.locator)


_WORKER_BUDGET: list[ByteBudget] = []  # the job's byte budget, shared by the pool's workers


def _init_worker(total: int, shared: Any) -> None:
    _WORKER_BUDGET[:] = [ByteBudget(total, shared)]


def _read_unit(unit: Unit, parsers: tuple[type[Parser], ...], limits: Limits = DEFAULT_LIMITS,
               budget: ByteBudget | None = None) -> list[_FileOut | Skipped]:
    if budget is None and _WORKER_BUDGET:
        budget = _WORKER_BUDGET[0]
    out: list[_FileOut | Skipped] = []
    for item in open_unit(unit, limits=limits, budget=budget):
        if isinstance(item, Skipped):
            out.append(item)
            continue
        inner = item.stream
        head = inner.read(SNIFF)
        item = replace(item, stream=Head(head, inner))
        fmt = flight.dump_format(item.rel, head)
        why = None if fmt or _TORCHRUN_JSON_RE.search(item.rel) else context_reason(item.rel, head)
        if why is not None:
            out.append(Skipped(item.display, why))
            continue
        got = _read_flight(item, head, fmt, limits) if fmt else _read_opened(item, parsers, limits)
        out.append(got)
        err = item.stream.error or inner.error
        if err is not None and isinstance(got, _FileOut):
            out.append(Skipped(item.display, f"read stopped after line {got.lines}: {err} "
                                             "(the lines before were read)"))
    return out


def _splittable(u: Unit) -> bool:
    """A file of SPLIT_MIN_BYTES to SPLIT_MAX_BYTES: read in parts by several processes (`split.py`)."""
    return SPLIT_MIN_BYTES <= u.size <= SPLIT_MAX_BYTES


def _workers(jobs: int | None, units: list[Unit]) -> int:
    """Processes to read with: a `_splittable` file counts as one piece per process, any other as one."""
    big = sum(1 for u in units if _splittable(u))
    if jobs is not None:
        return max(1, min(jobs, len(units) + big * (jobs - 1)))
    cpus = os.cpu_count() or 1
    if sum(u.size for u in units) < PARALLEL_MIN_BYTES or (len(units) < 2 and not big):
        return 1
    return max(1, min(cpus, len(units) + big * (cpus - 1)))


# A worker gets units in batches (one future per file costs more than a small file's read): each batch holds
# up to this many bytes or files, and there are at least BATCHES_PER_WORKER batches per worker to balance.
BATCH_BYTES = 4 << 20
BATCH_FILES = 256
BATCHES_PER_WORKER = 8


def _batches(units: list[Unit], workers: int) -> list[list[int]]:
    """Indices of `units` grouped into batches, the biggest units first (so one big file does not start
    last); a unit bigger than a batch is a batch of its own."""
    order = sorted(range(len(units)), key=lambda i: (-units[i].size, units[i].display))
    total = sum(u.size for u in units)
    cap = max(1, min(BATCH_BYTES, total // max(1, workers * BATCHES_PER_WORKER)))
    most = max(1, min(BATCH_FILES, -(-len(units) // (workers * BATCHES_PER_WORKER))))
    out: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for i in order:
        if cur and (size + units[i].size > cap or len(cur) >= most):
            out.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += units[i].size
    if cur:
        out.append(cur)
    return out


def _read_batch(units: list[Unit], parsers: tuple[type[Parser], ...], limits: Limits = DEFAULT_LIMITS,
                budget: ByteBudget | None = None) -> list[list[_FileOut | Skipped]]:
    """`_read_unit` over a batch (in a worker, or in the job's process), its events' equal texts and field
    mappings made one object each: a worker's pickle carries each once, and its unpickling keeps them one.

    The sharing is per batch, not job-wide: a job-wide table would hold a key for every distinct mapping
    of the job until the end of reading, and free them all then, leaving holes among the events that
    the process's memory never gives back (a batch's are reused by the next batch's).
    """
    outs = [_read_unit(u, parsers, limits, budget=budget) for u in units]
    sharer = Sharer(compact=True)
    for items in outs:
        _share_all(sharer, items)
    return outs


_SCALARS = frozenset({str, int, float, bool, type(None)})
_NO_FIELDS = Fields({})


class Sharer:
    """Makes equal event texts, hosts and field mappings one object each (thousands of ranks print the same
    lines and fields), so that the events of a big job take a fraction of the memory, and a worker's
    pickle carries each once. Only for events nobody else holds yet: it sets their fields in place."""

    MAX_VALUE = 128    # longer string values are rarely repeated

    def __init__(self, compact: bool = False) -> None:
        self.strs: dict[str, str] = {}
        self.ints: dict[int, int] = {}   # (sequence numbers, sizes and timeouts repeat across ranks)
        self.maps: dict[tuple[Any, ...], Any] = {}
        # `compact`: the field mappings become `Fields` (as the job keeps them; a worker's pickle carries each
        # distinct one once, and unpickling keeps it one).
        self.compact = compact

    def share(self, events: Iterable[Event]) -> None:
        strs, ints, maps, cap, compact = self.strs, self.ints, self.maps, self.MAX_VALUE, self.compact
        setter = object.__setattr__  # the events are frozen dataclasses, fresh from the reader
        events = _share_texts(events, strs)
        for e in events:
            f = e.fields
            if type(f) is not dict:
                continue
            if not f:
                if compact:
                    setter(e, "fields", _NO_FIELDS)
                continue
            # The value's type is part of the key (1, 1.0 and True are equal but not the same field), and a
            # float's repr (0.0 == -0.0); one flat tuple per mapping. A list value: the mapping is not
            # shared, its strings still are.
            key = None
            if all(v.__class__ in _SCALARS for v in f.values()):
                key = tuple(itertools.chain.from_iterable(
                    (k, v.__class__, repr(v) if v.__class__ is float else v) for k, v in f.items()))
            if key is not None:
                same = maps.get(key)
                if same is not None:
                    if same is not f:
                        setter(e, "fields", same)
                    continue
            for k, v in f.items():
                if v.__class__ is str and len(v) <= cap:
                    f[k] = strs.setdefault(v, v)
                elif v.__class__ is int and not -5 <= v <= 256:   # (smaller ints are one object already)
                    f[k] = ints.setdefault(v, v)
            if compact:
                f = Fields(f)
                setter(e, "fields", f)
            if key is not None:
                maps[key] = f


def _share_texts(events: Iterable[Event], strs: dict[str, str]) -> list[Event]:
    """`events` (as a list) with their equal texts and hosts made one object each through `strs`; the events
    are fresh from the reader and changed in place."""
    events = events if isinstance(events, list) else list(events)
    setter = object.__setattr__  # (frozen dataclasses)
    for e in events:
        text = strs.setdefault(e.text, e.text)
        if text is not e.text:
            setter(e, "text", text)
        if e.host is not None:
            host = strs.setdefault(e.host, e.host)
            if host is not e.host:
                setter(e, "host", host)
    return events


def _share_rank(e: Event, ints: dict[int, int]) -> None:
    """`e`'s rank made the job's one int object of that value (ints past 256 are one object per event)."""
    rank = e.rank
    if rank is not None and rank.__class__ is int and not -5 <= rank <= 256:   # (smaller ints are shared)
        same = ints.setdefault(rank, rank)
        if same is not rank:
            object.__setattr__(e, "rank", same)


def _share_all(sharer: Sharer | JobSharer, items: list[_FileOut | Skipped]) -> None:
    for item in items:
        if isinstance(item, _FileOut):
            sharer.share(item.events)


_KEYABLE = frozenset({str, int, type(None)})   # (no bool or float: True == 1 == 1.0 and 0.0 == -0.0)


class JobSharer:
    """Makes equal texts, hosts, ranks and field mappings of the whole job one object each, batch by batch as
    the batches reach the job's process (from a worker's pickle, or read here).

    `Sharer` does so within a batch; across batches every rank prints the same lines and fields, and a
    pickle gives each batch its own copies (ints are never shared by pickle). Shared as each batch
    arrives, a copy is freed while the next batch can still reuse its memory; shared once at the end
    (`_share_job`), the job's copies would all be freed at once, leaving holes among the events that the
    process never gives back (round 11: shape (c) at 16,384 ranks held 40 MiB of such holes after reading).
    Only for the job's own events, fresh from the reader: it sets their fields in place.
    """

    def __init__(self) -> None:
        self.strs: dict[str, str] = {}
        self.ints: dict[int, int] = {}
        # id of a `Fields` key layout -> (the layout, kept alive so its id stays its own; values -> mapping)
        self.fields: dict[int, tuple[dict[str, int], dict[tuple[Any, ...], Fields]]] = {}

    def share(self, events: Iterable[Event]) -> None:
        strs, ints, keyable = self.strs, self.ints, _KEYABLE
        setter = object.__setattr__
        for e in _share_texts(events, strs):
            _share_rank(e, ints)
            f = e.fields
            if f.__class__ is not Fields or not f._values:
                continue
            values = f._values
            if not all(v.__class__ in keyable for v in values):
                continue
            at = f._at
            slot = self.fields.get(id(at))
            if slot is None:
                slot = self.fields[id(at)] = (at, {})
            same = slot[1].get(values)
            if same is not None:
                if same is not f:
                    setter(e, "fields", same)
                continue
            # The job's first mapping with these values: its strings and ints become the job's.
            own = tuple(strs.setdefault(v, v) if v.__class__ is str
                        else ints.setdefault(v, v) if v.__class__ is int and not -5 <= v <= 256 else v
                        for v in values)
            if any(a is not b for a, b in zip(own, values, strict=True)):
                f._values = own
            slot[1][own] = f



def _split_plans(units: list[Unit], chosen: tuple[type[Parser], ...], limits: Limits,
                 workers: int) -> dict[int, list[PartSpec]]:
    """The big plain files to read in parts (one per worker), by index in `units`."""
    out: dict[int, list[PartSpec]] = {}
    for i, u in enumerate(units):
        if _splittable(u) and not _TORCHRUN_JSON_RE.search(u.rel):
            specs = plan(u, u.rel, origin_of(u.rel).origin, chosen, limits.max_line_bytes, workers,
                         min_bytes=SPLIT_MIN_BYTES)
            if specs:
                out[i] = specs
    return out


def _joined(unit: Unit, specs: list[PartSpec], parts: list[PartOut], chosen: tuple[type[Parser], ...],
            limits: Limits, budget: ByteBudget) -> list[_FileOut | Skipped]:
    """The file read in parts, as `_read_unit` would give it (read whole if joining fails)."""
    try:
        res, size = join(specs[0], parts)
    except Exception:  # a bug in the parts' join costs their speed, not the file: read it whole
        return _read_unit(unit, chosen, limits, budget=budget)
    hints = origin_of(unit.rel)
    return [_FileOut.of(unit.display, size, hints.origin, hints.pid, res, Locator(unit.fs_path))]


class _Pool:
    """The reader's worker processes, started while `discover` is still finding the inputs.

    A forked worker starts with this process's memory, and the memory of a job is summed over every
    process: forked after a folder of 32,768 files was listed, each worker held the list too (about 20 MiB
    of shape (c)'s 16,384 ranks). So the pool starts as soon as the files found so far are enough to
    read in parallel (what `_workers` asks: PARALLEL_MIN_BYTES, and a file per process), with the list
    still short. Smaller inputs start it after `discover`, when `_read_parallel` needs it, or never.
    """

    def __init__(self, jobs: int | None, limits: Limits) -> None:
        self.limits = limits
        self.want = jobs if jobs is not None else (os.cpu_count() or 1)
        self.bytes = 0
        self.files = 0
        self.executor: Any = None
        self.shared: Any = None

    def found(self, size: int) -> None:
        """`discover` found a file of `size` bytes."""
        if self.executor is not None or self.want < 2:
            return
        self.bytes += size
        self.files += 1
        if self.bytes >= PARALLEL_MIN_BYTES and self.files >= self.want:
            self.start(self.want)

    def start(self, workers: int) -> None:
        """A pool of `workers - 1` processes (this one is the other reader), forked now."""
        # Imported here: a job read by this process alone (most small ones) never loads them.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.shared = multiprocessing.get_context().Value("q", self.limits.max_job_bytes)
        self.executor = ProcessPoolExecutor(max_workers=workers - 1, initializer=_init_worker,
                                            initargs=(self.limits.max_job_bytes, self.shared))
        # (a forked pool starts all its processes at its first task)
        self.executor.submit(int)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None


def _read_parallel(units: list[Unit], chosen: tuple[type[Parser], ...], limits: Limits, workers: int,
                   meter: Meter, job: JobSharer, pool: _Pool) -> list[list[_FileOut | Skipped]]:
    """Read `units` with `workers` processes: this one and a pool of `workers - 1` (`pool`'s, started here
    unless `discover` started it; shut down before the parts of big files are joined).

    The pool takes batches from the big end (the parts of big files first, then batches biggest first, a
    few in flight per worker); this process reads from the small end while they run, so it is not one
    more process that only waits (the memory of a job is summed over every process). Results are put
    back in display order; a file read in parts is joined when its parts are in (`split.py`).
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    if pool.executor is None:
        pool.start(workers)
    workers = min(workers, pool.want)   # (a pool started early has `want` processes with this one)
    budget = ByteBudget(limits.max_job_bytes, pool.shared)
    splits = _split_plans(units, chosen, limits, workers)
    whole = [i for i in range(len(units)) if i not in splits]
    pending: deque[list[int] | PartSpec] = deque(
        spec for i in sorted(splits, key=lambda i: -units[i].size) for spec in splits[i])
    pending.extend([whole[j] for j in batch] for batch in _batches([units[i] for i in whole], workers))
    part_outs: dict[tuple[int, int], PartOut] = {}
    owner = {id(spec): i for i, specs in splits.items() for spec in specs}
    done: dict[int, list[_FileOut | Skipped]] = {}

    def store(batch: list[int], results: list[list[_FileOut | Skipped]]) -> None:
        for i, items in zip(batch, results, strict=True):
            _share_all(job, items)
            done[i] = items
            meter.file_done(units[i].size)

    def store_part(spec: PartSpec, out: PartOut) -> None:
        part_outs[owner[id(spec)], spec.index] = out

    def finish(item: list[int] | PartSpec, fut: Future[Any]) -> None:
        if isinstance(item, PartSpec):
            store_part(item, fut.result())
        else:
            store(item, fut.result())

    executor = pool.executor
    try:
        inflight: dict[Future[Any], list[int] | PartSpec] = {}
        while pending or inflight:
            # (the last item pending is left to this process: one big file's last part, say)
            while len(pending) > 1 and len(inflight) < 2 * (workers - 1):
                item = pending.popleft()
                if isinstance(item, PartSpec):
                    inflight[executor.submit(read_part, item)] = item
                else:
                    inflight[executor.submit(_read_batch, [units[i] for i in item], chosen, limits)] = item
            for fut in [f for f in inflight if f.done()]:
                finish(inflight.pop(fut), fut)
            if pending:
                item = pending.pop()
                if isinstance(item, PartSpec):
                    store_part(item, read_part(item))
                else:
                    store(item, _read_batch([units[i] for i in item], chosen, limits, budget))
            elif inflight:
                finished, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                for fut in finished:
                    finish(inflight.pop(fut), fut)
    finally:
        pool.close()
    # The parts are joined once the pool is gone: its processes' memory is not held beside the join's.
    for i, specs in splits.items():
        parts = [part_outs.pop((i, s.index)) for s in specs]
        joined = _joined(units[i], specs, parts, chosen, limits, budget)
        _share_all(Sharer(compact=True), joined)
        store([i], [joined])
    return [done.pop(i) for i in range(len(units))]


def read_inputs(paths: Sequence[str | os.PathLike[str]], *, jobs: int | None = None,
                parsers: Sequence[type[Parser]] | None = None,
                limits: Limits = DEFAULT_LIMITS, progress: OnProgress | None = None) -> Ingested:
    """Read every log under `paths` (files, folders, globs, compressed files, archives) into events.

    Raises InputError when a path does not exist or nothing readable was found; every other problem
    with an input is a `Skipped` entry. `jobs` caps the processes that read (default: the cores, and only
    when the input is big enough to pay for them; this process is one of them); the events do not
    depend on it (a big plain file read in parts may count a few repeated lines fewer in its note,
    `split.py`). Plain, compressed
    and archived logs are read by the same code. `limits` bound the work (see hanglens.limits): what
    passes one is skipped. `progress` is told the bytes (on disk) and input files read so far as each
    input finishes.
    """
    pool = _Pool(jobs, limits)
    try:
        return _read_inputs(paths, jobs, parsers, limits, progress, pool)
    finally:
        pool.close()


def _read_inputs(paths: Sequence[str | os.PathLike[str]], jobs: int | None,
                 parsers: Sequence[type[Parser]] | None, limits: Limits, progress: OnProgress | None,
                 pool: _Pool) -> Ingested:
    units, skipped = discover([os.fspath(p) for p in paths], pool.found)
    if len(units) > limits.max_files:
        # A folder of a hundred thousand files: read the first ones (display order), say what was left.
        rest = units[limits.max_files:]
        units = units[: limits.max_files]
        why = (f"this and {len(rest) - 1} more files not read: more than {limits.max_files} files "
               "(limit max_files, --limit max_files=N)")
        skipped.append(Skipped(rest[0].display, why))
    chosen = tuple(PARSERS if parsers is None else parsers)
    workers = _workers(jobs, units)
    meter = Meter(sum(u.size for u in units), len(units), progress)
    shared_job = JobSharer()
    if workers > 1:
        outs = _read_parallel(units, chosen, limits, workers, meter, shared_job, pool)
    else:
        pool.close()   # (started for files that turned out to be too few, say past max_files)
        budget = ByteBudget(limits.max_job_bytes)
        outs = []
        sharer, held = Sharer(compact=True), 0
        for u in units:
            if held >= BATCH_FILES:   # shared per batch of files, as a worker does (`_read_batch`)
                sharer, held = Sharer(compact=True), 0
            items = _read_unit(u, chosen, limits, budget=budget)
            _share_all(sharer, items)
            _share_all(shared_job, items)
            held += 1
            outs.append(items)
            meter.file_done(u.size)
        del sharer
    files: list[_FileOut] = []
    for items in outs:
        for item in items:
            if isinstance(item, Skipped):
                skipped.append(item)
            else:
                files.append(item)
    files.sort(key=lambda f: f.display)
    _share_file_strings(files)
    skipped.sort(key=lambda s: (s.path, s.reason))
    if not files:
        shown = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:3])
        more = f" (+{len(skipped) - 3} more)" if len(skipped) > 3 else ""
        where = os.fspath(paths[0]) if len(paths) == 1 else None
        raise InputError("no log files found", path=where,
                         hint=f"skipped {shown}{more}" if skipped else "the folders hold no files")
    # The events were made for this job (read here or unpickled from a worker): attribution may change them.
    # Each writer's last line goes with its file's events: attribution gives it the rank its writer has.
    job = [FileEvents(f.display, f.origin, with_last_lines(f.events, f.last_lines), f.pid, f.dated,
                      f.envelope_ranks, owned=True)
           for f in files]
    for f in files:
        del f.events  # `job` holds them now
    runs = plan_runs(job, _tree_mtimes(files))
    if runs.count > 1:
        keep = apply_runs(job, runs)
        skipped.extend(Skipped(f.display, runs.drop[f.display]) for f, k in zip(files, keep, strict=True)
                       if not k)
        skipped.sort(key=lambda s: (s.path, s.reason))
        files = [f for f, k in zip(files, keep, strict=True) if k]
        job = [fe for fe, k in zip(job, keep, strict=True) if k]
        for f, fe in zip(files, job, strict=True):
            if f.display in runs.notes:
                f.notes = (*f.notes, runs.notes[f.display])
                f.envelope_ranks = fe.stated_ranks
    attribute(job)
    out = Ingested(skipped=skipped, run_table=runs.table)
    tuples: dict[tuple[Any, ...], tuple[Any, ...]] = {}   # (a rank's files name its rank, a node's its host)
    for f, fe in zip(files, job, strict=True):
        ranks = {e.rank for e in fe.events if e.rank is not None} | f.envelope_ranks
        if fe.origin.rank is not None:   # attribution may learn a file's rank from its series (Slurm tasks)
            ranks.add(fe.origin.rank)
        hosts = {e.host for e in fe.events if e.host} | ({fe.origin.host} if fe.origin.host else set())
        rank_t, host_t = tuple(sorted(ranks)), tuple(sorted(hosts))
        out.files.append(InputFile(f.display, f.size, f.lines, fe.origin, tuples.setdefault(rank_t, rank_t),
                                   tuples.setdefault(host_t, host_t),
                                   sum(1 for e in fe.events if e.kind != "last_line")))
        out.events.extend(fe.events)
        out.sources[f.display] = f.locator
        if f.notes:
            out.notes[f.display] = list(f.notes)
    if not events_in_order(out.events):
        out.events.sort(key=event_order)
    _share_job(out.events, shared_job)
    return out


def _tree_mtimes(files: list[_FileOut]) -> dict[str, float]:
    """The modification times of the plain files in `--log-dir` trees: what orders two invocations' trees
    whose lines state no time (ingest/runs.py)."""
    out: dict[str, float] = {}
    for f in files:
        if f.origin.node_dir is not None and f.locator.member is None:
            with contextlib.suppress(OSError):
                out[f.display] = os.stat(f.locator.fs_path).st_mtime
    return out


def _share_job(events: list[Event], job: JobSharer) -> None:
    """The line numbers of one line made one int object, and every rank one int object, job-wide.

    `job` made the texts, hosts and field mappings one object each as the batches arrived; attribution has
    since given events ranks of their own (one int per event), and the events of a line made apart (in
    different batches, or by different parsers) hold line numbers of their own. The events are the job's
    own (`read_inputs`), sorted by path and line: a line's events are neighbours.
    """
    setter = object.__setattr__
    ints = job.ints
    prev_line, prev_path = -1, ""
    for e in events:
        line = e.line
        if line is not prev_line:
            if line == prev_line and e.path == prev_path:
                setter(e, "line", prev_line)
            else:
                prev_line, prev_path = line, e.path
        _share_rank(e, ints)


def _share_file_strings(files: list[_FileOut]) -> None:
    """Equal notes and origin strings (host, torchrun folder, stream) of the job's files made one object each:
    thousands of per-rank files say the same few (each file's record lives until the end)."""
    seen: dict[str, str] = {}
    for f in files:
        if f.notes:
            f.notes = tuple(seen.setdefault(n, n) for n in f.notes)
        o = f.origin
        for name in ("host", "stream", "node_dir"):
            v = getattr(o, name)
            if v is not None:
                same = seen.setdefault(v, v)
                if same is not v:
                    object.__setattr__(o, name, same)   # (a frozen dataclass, made for this file)


def read_context(ingested: Ingested, refs: Iterable[SourceRef], before: int = 2,
                 after: int = 2) -> dict[SourceRef, list[tuple[int, str]]]:
    """The lines around each ref, `(line number, text)` with ANSI codes removed, re-read from its source.

    Plain files, compressed files and archive members alike; a source that is gone or changed gives
    what it still has (possibly nothing), never an error.
    """
    by_path: dict[str, list[SourceRef]] = {}
    for ref in refs:
        by_path.setdefault(ref.path, []).append(ref)
    out: dict[SourceRef, list[tuple[int, str]]] = {}
    for path in sorted(by_path):
        wanted = {n for r in by_path[path] for n in range(max(1, r.line - before), r.line + after + 1)}
        lines = _lines_at(ingested.sources.get(path), path, wanted)
        for ref in by_path[path]:
            lo, hi = ref.line - before, ref.line + after
            out[ref] = [(n, lines[n]) for n in sorted(lines) if lo <= n <= hi]
    return out


def _lines_at(loc: Locator | None, display: str, wanted: set[int]) -> dict[int, str]:
    if loc is None or not wanted:
        return {}
    found: dict[int, str] = {}
    last = max(wanted)
    name = display.split("!", 1)[0] if loc.member else display
    unit = Unit(fs_path=loc.fs_path, display=name, rel=PurePosixPath(name).name, size=0)
    for item in open_unit(unit, member=loc.member):
        if isinstance(item, Skipped):
            return found
        stream: ReadableStream = item.stream
        data = stream.read(BLOCK)
        if data.startswith(UTF16_BOMS):
            stream = Utf16ToUtf8(Replay(data, stream))
            data = stream.read(BLOCK)
        data = topped_up(data, stream)
        unwrapped = ordered_stream(data, stream)
        if unwrapped is not None:  # (numbered as the reader numbers them: the lines the records hold)
            stream = unwrapped[0]
            data = stream.read(BLOCK)
        cr_only = b"\n" not in data[: 1 << 16] and b"\r" in data[: 1 << 16]
        num, carry = 1, b""
        while data and num <= last:
            if cr_only:
                data = data.replace(b"\r", b"\n")
            buf = carry + data
            parts = buf.split(b"\n")
            carry = parts.pop()
            if len(carry) > BLOCK:
                carry = carry[:BLOCK]
            for part in parts:
                if num in wanted:
                    found[num] = _clean(part)
                num += 1
            data = stream.read(BLOCK)
        if carry and num in wanted:
            found[num] = _clean(carry)
        break
    return found


def _clean(line: bytes) -> str:
    text = ANSI_RE.sub("", line[: CONTEXT_LINE_CHARS * 4].replace(b"\x00", b"").decode("utf-8", "replace"))
    return text.rstrip("\r\n")[:CONTEXT_LINE_CHARS]


__all__ = ["Ingested", "Meter", "OnProgress", "ReadProgress", "read_context", "read_inputs", "strip_prefixes"]
