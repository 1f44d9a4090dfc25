"""Run a scan: discover jobs, skip cached ones, analyse the rest on a pool or dask, write the outputs.

Rows are written as jobs complete (report files, then one line appended to the cache), so an
interrupted scan resumes where it stopped and its final tables reflect exactly the jobs that completed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from hanglens import __version__
from hanglens.errors import UsageError
from hanglens.limits import DEFAULT_LIMITS, Limits
from hanglens.model import YEARLESS_YEAR, log_datetime, utf8_text
from hanglens.scan.discover import Discovery, Job, Skip, discover
from hanglens.scan.task import (
    COLUMNS,
    DEFAULT_ANALYZER,
    LIST_COLUMNS,
    JobResult,
    Settings,
    empty_row,
    load_analyzer,
    load_rules,
    one_line,
    run_job,
)

ENGINES = ("local", "dask", "inline")
CACHE_DIR = ".hanglens-cache"
CACHE_FILE = "rows.jsonl"
CACHE_FORMAT = 1


@dataclass
class ScanSummary:
    """What one scan did, for the CLI's closing line and the index page."""

    jobs: int = 0
    analysed: int = 0
    cached: int = 0
    errors: int = 0
    interrupted: bool = False
    parquet: str = ""               # "" written, else why it was skipped
    skipped: list[Skip] = field(default_factory=list)


# -- settings and cache ----------------------------------------------------------------------------
def _builtin_rules_dir() -> Path | None:
    pkg = Path(__file__).resolve().parent.parent
    for cand in (pkg / "_rules", pkg.parent / "rules"):
        if cand.is_dir():
            return cand
    return None


def rules_fingerprint(rules: Sequence[str], analyzer: str = DEFAULT_ANALYZER,
                      limits: Limits = DEFAULT_LIMITS) -> str:
    """Hash of the hanglens version, the analyzer, the limits, and every rule file the analysis may load."""
    h = hashlib.sha256(f"{__version__}\0{analyzer}\0{limits!r}\0".encode())
    dirs = [d for d in (_builtin_rules_dir(), *map(Path, rules)) if d is not None]
    for d in dirs:
        files = [d] if d.is_file() else sorted(p for p in d.rglob("*") if p.suffix in (".yaml", ".yml"))
        for p in files:
            h.update(f"{p.relative_to(d) if p != d else p.name}\0".encode())
            with contextlib.suppress(OSError):
                h.update(p.read_bytes())
    return h.hexdigest()


class Cache:
    """Completed rows in `DIR/.hanglens-cache/rows.jsonl`, one JSON object per line, appended as jobs end.

    An entry is reused when the job's file stats (`Job.key`) and the fingerprint both match and its
    report files still exist. Error rows are not cached: a failed job is retried on the next scan.
    """

    def __init__(self, out: Path, fingerprint: str) -> None:
        self.dir = out / CACHE_DIR
        self.path = self.dir / CACHE_FILE
        self.fingerprint = fingerprint
        self.entries: dict[str, dict[str, Any]] = {}

    def load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a line cut by an interruption
            if isinstance(entry, dict) and entry.get("format") == CACHE_FORMAT and "job_id" in entry:
                self.entries[str(entry["job_id"])] = entry

    def get(self, job: Job, out: Path) -> dict[str, Any] | None:
        e = self.entries.get(job.job_id)
        if not e or e.get("key") != job.key or e.get("fingerprint") != self.fingerprint:
            return None
        if not (out / "jobs" / job.job_id / "report.json").is_file():
            return None
        row = e.get("row")
        return row if isinstance(row, dict) and set(row) == set(COLUMNS) else None

    def append(self, res: JobResult) -> None:
        entry = {"format": CACHE_FORMAT, "job_id": res.job_id, "key": res.key,
                 "fingerprint": self.fingerprint, "row": res.row}
        self.entries[res.job_id] = entry
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")  # ASCII: a path may not be UTF-8
            fh.flush()

    def compact(self, keep: Iterable[str]) -> None:
        """Rewrite the cache with one line per job still present (drops superseded lines)."""
        lines = [json.dumps(self.entries[j], sort_keys=True)
                 for j in sorted(set(keep)) if j in self.entries]
        self.dir.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.path, "".join(x + "\n" for x in lines))


# -- output files ------------------------------------------------------------------------------
def _file_mode() -> int:
    """The mode a plain `open()` would give a new file: 0666 less the umask (mkstemp's files are 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _atomic_write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_reports(out: Path, res: JobResult) -> None:
    if res.report_json is None:
        return
    d = out / "jobs" / res.job_id
    if res.report_html is not None:
        _atomic_write(d / "report.html", res.report_html)
    _atomic_write(d / "report.json", res.report_json)


def _utf8(value: Any) -> Any:
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, (list, tuple)):
        return [utf8_text(v) if isinstance(v, str) else v for v in value]
    return value


def jobs_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """The jobs table: COLUMNS, declared dtypes, sorted by path then job_id, index 0..n-1.

    Text is UTF-8-safe: a path whose bytes are not UTF-8 shows them as `\\xNN` (as the reports do).
    """
    df = pd.DataFrame([{c: _utf8(r.get(c)) for c in COLUMNS} for r in rows], columns=list(COLUMNS))
    for c in ("first_ts", "last_ts"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for c in ("world_size", "files", "bytes"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
    for c in LIST_COLUMNS:
        df[c] = pd.Series([list(v) if isinstance(v, (list, tuple)) else [] for v in df[c]], index=df.index,
                          dtype="object")
    for c in set(COLUMNS) - {"first_ts", "last_ts", "world_size", "files", "bytes", *LIST_COLUMNS}:
        df[c] = df[c].astype("object").where(df[c].notna(), None)
    return df.sort_values(["path", "job_id"], kind="mergesort").reset_index(drop=True)


def _iso_time(t: Any) -> str:
    """ISO 8601 of a log time (the log's own clock, no zone); "" when unknown or the log gave no year."""
    d = log_datetime(t)
    return "" if d is None or d.year == YEARLESS_YEAR else d.isoformat(timespec="milliseconds")


def _csv_text(df: pd.DataFrame) -> str:
    flat = df.copy()
    for c in ("first_ts", "last_ts"):
        flat[c] = [_iso_time(v) for v in flat[c]]
    for c in LIST_COLUMNS:
        flat[c] = [";".join(str(x) for x in v) for v in flat[c]]
    return str(flat.to_csv(index=False, lineterminator="\n", float_format="%.6f"))


def _write_parquet(df: pd.DataFrame, path: Path) -> str:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return "pyarrow is not installed (pip install 'hanglens[scan]')"
    s, i64 = pa.string(), pa.int64()
    types = {"first_ts": pa.float64(), "last_ts": pa.float64(), "world_size": i64, "files": i64, "bytes": i64,
             "hosts": pa.list_(s), "culprit_ranks": pa.list_(i64), "culprit_hosts": pa.list_(s)}
    schema = pa.schema([(c, types.get(c, s)) for c in COLUMNS])
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    fd, tmp = tempfile.mkstemp(prefix=".jobs.parquet.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return ""


def write_outputs(out: Path, df: pd.DataFrame, summary: ScanSummary) -> None:
    """jobs.csv, jobs.parquet (when pyarrow is there) and index.html, each replaced atomically."""
    from hanglens.report.fleet import render_index

    _atomic_write(out / "jobs.csv", _csv_text(df))
    summary.parquet = _write_parquet(df, out / "jobs.parquet")
    skipped = [{"path": s.path, "reason": s.reason} for s in summary.skipped]
    rows = df.astype("object").where(df.notna(), None).to_dict(orient="records")
    meta = {"jobs": summary.jobs, "analysed": summary.analysed, "cached": summary.cached,
            "errors": summary.errors, "interrupted": summary.interrupted, "hanglens_version": __version__}
    _atomic_write(out / "index.html", render_index(rows, skipped, meta))


# -- engines -------------------------------------------------------------------------------------
def _ignore_sigint() -> None:
    # Ctrl-C is the driver's to handle: it stops handing out jobs and writes what completed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _failed_row(job: Job, status: str, reason: str) -> JobResult:
    row = empty_row(job)
    row["status"] = status
    row["error"] = one_line(reason)
    return JobResult(job.job_id, job.key, row, None, None, job.bytes)


def _timed_out(job: Job, deadline: float) -> JobResult:
    return _failed_row(job, "timeout", f"analysis passed the deadline of {deadline:g} s "
                                       "(limit job_deadline_s, --job-timeout SECONDS)")


def _crashed(job: Job, exc: BaseException) -> JobResult:
    return _failed_row(job, "crashed", f"worker failed: {type(exc).__name__}: {exc}")


def _cap_memory(limit: int) -> None:
    """Cap this process's address space: a job allocating past it gets MemoryError, the host keeps its RAM."""
    try:
        import resource
    except ImportError:  # not on this platform: the deadline still applies
        return
    with contextlib.suppress(ValueError, OSError):
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _worker(conn: Any, settings: Settings) -> None:
    """A scan worker: jobs in on `conn`, results out, until it receives None (or is killed)."""
    _ignore_sigint()
    if settings.limits.job_memory_bytes > 0:
        _cap_memory(settings.limits.job_memory_bytes)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(run_job(job, settings))


@dataclass
class _Slot:
    """One worker process of the local engine and the job it runs."""

    proc: Any
    conn: Any
    job: Job | None = None
    started: float = 0.0


def _death(exitcode: int | None) -> tuple[str, str]:
    """(status, reason) of a worker that died while running a job."""
    if exitcode is not None and exitcode < 0:
        sig = -exitcode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        if sig == signal.SIGKILL:
            return "oom", f"the worker process was killed ({name}; most likely the system ran out of memory)"
        return "crashed", f"the worker process died ({name})"
    return "crashed", f"the worker process died (exit code {exitcode})"


HEARTBEAT_S = 1.0  # the local engine yields None this often while it waits, so the driver can write


def run_local(jobs: Sequence[Job], settings: Settings,
              workers: int) -> Generator[JobResult | None, None, None]:
    """Worker processes that each run one job at a time, under the job's deadline and memory cap.

    A job that passes `job_deadline_s` has its worker killed and becomes a `timeout` row; a worker that
    dies (segfault, OOM kill, os._exit) costs only the job it was running (`crashed` or `oom`); the
    others go on, on a new worker. While no job ends, None is yielded every HEARTBEAT_S.
    """
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["hanglens.scan.task", "hanglens.api"])  # workers fork ready to analyse
    deadline = settings.limits.job_deadline_s
    todo = list(jobs)
    todo.reverse()  # popped from the end: the given order
    slots: list[_Slot] = []

    def start() -> _Slot:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, settings), daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def stop(slot: _Slot) -> None:
        slots.remove(slot)
        with contextlib.suppress(OSError, ValueError):
            slot.conn.close()
        if slot.proc.is_alive():
            slot.proc.kill()
        slot.proc.join(5)

    try:
        while todo or any(s.job is not None for s in slots):
            while todo and len([s for s in slots if s.job is not None]) < workers:
                idle = next((s for s in slots if s.job is None), None) or start()
                if idle not in slots:
                    slots.append(idle)
                idle.job, idle.started = todo.pop(), time.monotonic()
                try:
                    idle.conn.send(idle.job)
                except (OSError, ValueError):
                    todo.append(idle.job)
                    stop(idle)
            busy = [s for s in slots if s.job is not None]
            now = time.monotonic()
            wait_s = HEARTBEAT_S
            if deadline > 0:
                wait_s = max(0.0, min(wait_s, *(s.started + deadline - now for s in busy)))
            ready = multiprocessing.connection.wait([s.conn for s in busy], timeout=wait_s)
            if not ready:
                yield None
            for slot in busy:
                job = slot.job
                assert job is not None
                if slot.conn in ready:
                    try:
                        res = slot.conn.recv()
                    except (EOFError, OSError):
                        slot.proc.join(5)
                        status, why = _death(slot.proc.exitcode)
                        stop(slot)
                        yield _failed_row(job, status, why)
                        continue
                    slot.job = None
                    yield res
                    if res.row.get("status") == "oom":
                        stop(slot)  # a worker that hit MemoryError may be in a bad state: start afresh
                elif deadline > 0 and time.monotonic() - slot.started > deadline:
                    stop(slot)
                    yield _timed_out(job, deadline)
        for slot in list(slots):
            with contextlib.suppress(OSError, ValueError):
                slot.conn.send(None)
    finally:
        # Done, interrupted (Ctrl-C) or closed by the consumer: no worker outlives the scan.
        for slot in list(slots):
            stop(slot)


def run_inline(jobs: Sequence[Job], settings: Settings) -> Generator[JobResult, None, None]:
    """In this process, one job after another (debugging, and `jobs=1` without a pool)."""
    for j in jobs:
        yield run_job(j, settings)


# -- one job at a time in a child process, for engines whose workers run tasks (dask) -------------------
@dataclass
class _Child:
    """The process `run_guarded` runs jobs in, for one worker thread and one scan's settings."""

    settings: Settings
    proc: subprocess.Popen[bytes]
    conn: Any

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.close()
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


_CHILDREN: dict[int, _Child] = {}  # by worker thread
_CHILDREN_LOCK = threading.Lock()


CHILD_START_S = 300.0  # a `run_guarded` child imports hanglens and the analyzer before its first deadline


def _child_main() -> None:
    """Entry point of a `run_guarded` child: the settings, then jobs, on the inherited socket."""
    conn = multiprocessing.connection.Connection(int(os.environ["HANGLENS_SCAN_FD"]))
    settings: Settings = conn.recv()
    with contextlib.suppress(Exception):  # imported now, so a job's deadline is not spent importing
        load_analyzer(settings.analyzer)
    conn.send("ready")
    _worker(conn, settings)


def _start_child(settings: Settings) -> _Child:
    # subprocess, not multiprocessing: dask runs tasks in daemon processes, which may not fork children
    # through multiprocessing. The child sees the modules this process sees (a test's analyzer, too).
    parent, child = multiprocessing.Pipe()
    env = {**os.environ, "HANGLENS_SCAN_FD": str(child.fileno()),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    code = "from hanglens.scan.run import _child_main; _child_main()"
    proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(child.fileno(),), env=env,
                            stdin=subprocess.DEVNULL)
    child.close()
    started = _Child(settings, proc, parent)
    try:
        parent.send(settings)
        if parent.poll(CHILD_START_S) and parent.recv() == "ready":
            return started
    except (EOFError, OSError):
        pass
    started.stop()
    raise RuntimeError(f"the job's worker process did not start ({_death(proc.returncode)[1]})")


def run_guarded(job: Job, settings: Settings) -> JobResult:
    """`run_job` in a child process under the job's deadline and memory cap, as the local engine does.

    The child is kept for the next job of the same thread and settings; a job past `job_deadline_s` has
    it killed (status `timeout`), one that kills it costs only that job (`crashed` or `oom`).
    """
    me = threading.get_ident()
    with _CHILDREN_LOCK:
        child = _CHILDREN.pop(me, None)
    if child is not None and (child.settings != settings or child.proc.poll() is not None):
        child.stop()
        child = None
    if child is None:
        try:
            child = _start_child(settings)
        except RuntimeError as exc:
            return _failed_row(job, "crashed", str(exc))
    deadline = settings.limits.job_deadline_s
    try:
        child.conn.send(job)
        if not child.conn.poll(deadline if deadline > 0 else None):
            child.stop()
            return _timed_out(job, deadline)
        res: JobResult = child.conn.recv()
    except (EOFError, OSError):
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.proc.wait(5)
        child.stop()
        return _failed_row(job, *_death(child.proc.returncode))
    if res.row.get("status") == "oom":
        child.stop()  # a process that hit MemoryError may be in a bad state: the next job gets a new one
    else:
        with _CHILDREN_LOCK:
            _CHILDREN[me] = child
    return res


def stop_children() -> int:
    """End this process's `run_guarded` children (run on every dask worker when a scan ends)."""
    with _CHILDREN_LOCK:
        children = list(_CHILDREN.values())
        _CHILDREN.clear()
    for c in children:
        c.stop()
    return len(children)


def run_dask(jobs: Sequence[Job], settings: Settings, workers: int,
             scheduler: str | None) -> Generator[JobResult, None, None]:
    """The same jobs on dask.distributed, each under the deadline and memory cap (`run_guarded`).

    Workers must see the job paths under the same names.
    """
    try:
        # dask is an optional extra, and untyped: imported here, held as Any.
        dd: Any = importlib.import_module("distributed")
    except ImportError as exc:
        raise UsageError("the dask engine needs dask.distributed",
                         hint="pip install 'hanglens[dask]'") from exc
    cluster = None
    if scheduler:
        client = dd.Client(scheduler)
    else:
        cluster = dd.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None)
        client = dd.Client(cluster)
    try:
        futures = client.map(run_guarded, list(jobs), settings=settings, pure=False)
        by_key = {f.key: j for f, j in zip(futures, jobs, strict=True)}
        for fut in dd.as_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:
                yield _crashed(by_key[fut.key], exc)
            fut.release()
    finally:
        with contextlib.suppress(Exception):  # a worker already gone has no children left
            client.run(stop_children)
        client.close()
        if cluster is not None:
            cluster.close()


# -- the scan ------------------------------------------------------------------------------------
def parse_since(since: str | date | datetime | None) -> int | None:
    """POSIX ns of `since` (a date or ISO datetime, local time when it has no zone)."""
    if since is None or since == "":
        return None
    if isinstance(since, str):
        try:
            since = datetime.fromisoformat(since)
        except ValueError as exc:
            raise UsageError(f"--since: cannot read {since!r} as a date",
                             hint="use YYYY-MM-DD or YYYY-MM-DDTHH:MM") from exc
    if not isinstance(since, datetime):
        since = datetime(since.year, since.month, since.day)
    return int(since.timestamp() * 1e9)


def _progress(enabled: bool, total: int, cached: int) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[mb]:.1f} MB"), TimeRemainingColumn(),
                   console=console, disable=not (enabled and console.is_terminal), transient=False)
    task = bar.add_task(f"scanning ({cached} cached)", total=total, mb=0.0)
    return bar, task


def scan(paths: Sequence[str | os.PathLike[str]], *, out: str | os.PathLike[str] | None = None,
         jobs: int | None = None, engine: str = "local", scheduler: str | None = None,
         job_glob: str | None = None, since: str | date | datetime | None = None,
         rules: Sequence[str | os.PathLike[str]] = (), force: bool = False, progress: bool = False,
         analyzer: str = DEFAULT_ANALYZER, on_summary: Callable[[ScanSummary], None] | None = None,
         limits: Limits = DEFAULT_LIMITS) -> pd.DataFrame:
    """Analyse every job under `paths`; return the jobs table (and write DIR's outputs when `out` is set).

    `engine`: "local" (process pool of `jobs` workers, default the number of cores), "dask"
    (`scheduler` address, or a LocalCluster on 127.0.0.1), or "inline" (this process, for debugging).
    On Ctrl-C (or SIGTERM) the outputs are written for the jobs that completed and KeyboardInterrupt is
    re-raised; they are also rewritten as rows complete, so even a killed scan leaves its finished rows.
    Each job runs under `limits.job_deadline_s` and `limits.job_memory_bytes` (on dask, in a child process
    of the worker), except with the inline engine.
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}", hint="use local or dask")
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    workers = jobs or os.cpu_count() or 1
    out_dir = Path(out).resolve() if out is not None else None
    rule_dirs = tuple(os.path.abspath(os.fspath(r)) for r in rules)
    for r in rule_dirs:
        if not os.path.exists(r):
            raise UsageError("no such rules folder", hint=r)
    since_ns = parse_since(since)
    if analyzer == DEFAULT_ANALYZER:
        load_rules(rule_dirs, limits)  # a broken rule fails the scan once, loudly, not every job
    found: Discovery = discover(paths, job_glob=job_glob, since_ns=since_ns)
    if out_dir is not None:
        found.jobs = [j for j in found.jobs if not _is_inside(j.path, out_dir)]
    summary = ScanSummary(jobs=len(found.jobs), skipped=found.skipped)
    fingerprint = rules_fingerprint(rule_dirs, analyzer, limits)
    settings = Settings(rules=rule_dirs, analyzer=analyzer, limits=limits)

    rows: dict[str, dict[str, Any]] = {}
    cache = Cache(out_dir, fingerprint) if out_dir is not None else None
    todo: list[Job] = []
    if cache is not None and out_dir is not None and not force:
        cache.load()
        for j in found.jobs:
            row = cache.get(j, out_dir)
            if row is None:
                todo.append(j)
            else:
                rows[j.job_id] = row
    else:
        todo = list(found.jobs)
    summary.cached = len(rows)

    results: Generator[JobResult | None, None, None]
    if engine == "dask":
        results = run_dask(todo, settings, workers, scheduler)
    elif engine == "inline":
        results = run_inline(todo, settings)
    else:
        results = run_local(todo, settings, min(workers, max(1, len(todo))))
    bar, task = _progress(progress, len(todo), summary.cached)
    mb = 0.0
    writer = _Writer(out_dir, summary)
    try:
        with bar, _term_as_interrupt():
            if todo:
                for res in results:
                    if res is None:  # a heartbeat: write what a throttled write left out
                        writer.maybe(rows)
                        continue
                    if out_dir is not None and cache is not None:
                        res = _stored(out_dir, cache, res)
                    rows[res.job_id] = res.row
                    summary.analysed += 1
                    mb += res.bytes_read / 1e6
                    bar.update(task, advance=1, mb=mb)
                    writer.maybe(rows)
    except KeyboardInterrupt:
        summary.interrupted = True
        results.close()
    summary.errors = sum(1 for r in rows.values() if r.get("error"))
    df = jobs_frame(rows.values())
    if out_dir is not None and cache is not None:
        if not summary.interrupted:
            cache.compact(rows)
        write_outputs(out_dir, df, summary)
    df.attrs["skipped"] = [{"path": s.path, "reason": s.reason} for s in summary.skipped]
    if on_summary is not None:
        on_summary(summary)
    if summary.interrupted:
        raise KeyboardInterrupt
    return df


def _stored(out: Path, cache: Cache, res: JobResult) -> JobResult:
    """Write one job's reports and cache line; if that fails, the job is an error row, not the scan's end."""
    try:
        _write_reports(out, res)
        if res.row.get("error") is None:
            cache.append(res)
        return res
    except Exception as exc:  # a disk or encoding problem with one job's files costs that job only
        row = {**res.row, "status": "error",
               "error": one_line(f"could not write the job's outputs: {type(exc).__name__}: {exc}")}
        return JobResult(res.job_id, res.key, row, None, None, res.bytes_read)


class _Writer:
    """Rewrites the outputs as rows complete, unless the last write took long (then less often)."""

    def __init__(self, out: Path | None, summary: ScanSummary) -> None:
        self.out = out
        self.summary = summary
        self.next_at = 0.0
        self.written = -1  # rows in the outputs on disk

    def maybe(self, rows: dict[str, dict[str, Any]]) -> None:
        if self.out is None or time.monotonic() < self.next_at or len(rows) == self.written:
            return
        self.written = len(rows)
        start = time.monotonic()
        self.summary.errors = sum(1 for r in rows.values() if r.get("error"))
        write_outputs(self.out, jobs_frame(rows.values()), self.summary)
        took = time.monotonic() - start
        self.next_at = time.monotonic() + 4 * took  # at most a fifth of the time goes to rewriting


@contextlib.contextmanager
def _term_as_interrupt() -> Generator[None, None, None]:
    """SIGTERM (a batch system's kill) ends the scan like Ctrl-C: the completed rows are written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _is_inside(path: str, folder: Path) -> bool:
    p = os.path.realpath(path)
    f = str(folder)
    return p == f or p.startswith(f.rstrip(os.sep) + os.sep)
