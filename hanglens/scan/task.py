"""Analyse one job (on any worker): unpack if needed, call the analyzer, return its row and reports.

Everything here is a pure function of the job and the scan settings, so the local pool and dask give
identical results. Workers only read the job's path (archives are streamed by ingest, never unpacked);
the driver writes every output file.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hanglens import __version__
from hanglens.limits import DEFAULT_LIMITS, Limits, human_bytes
from hanglens.scan.discover import Job

COLUMNS = (
    "job_id", "path", "first_ts", "last_ts", "world_size", "hosts", "category", "rule_id", "confidence",
    "culprit_ranks", "culprit_hosts", "torch_version", "nccl_version", "hanglens_version", "files",
    "bytes", "notes", "error", "status",
)
# A row's status: the job was analysed ("ok"), or why not: its analysis raised ("error"), its worker
# died ("crashed"), it passed the deadline ("timeout") or the memory cap ("oom").
STATUSES = ("ok", "error", "crashed", "timeout", "oom")
LIST_COLUMNS = ("hosts", "culprit_ranks", "culprit_hosts")
DEFAULT_ANALYZER = "hanglens.api:analyze"


@dataclass(frozen=True, slots=True)
class Settings:
    """What every job of one scan shares. `analyzer` is `module:function`, imported on the worker."""

    rules: tuple[str, ...] = ()
    analyzer: str = DEFAULT_ANALYZER
    limits: Limits = DEFAULT_LIMITS


@dataclass(frozen=True, slots=True)
class JobResult:
    """One job's row (keys = COLUMNS) and its reports as text (None when the job failed)."""

    job_id: str
    key: str
    row: dict[str, Any]
    report_json: str | None
    report_html: str | None
    bytes_read: int


def one_line(text: str, limit: int = 500) -> str:
    """An error for a table cell: its first line, cut at `limit`, saying how much was left out."""
    lines = text.strip().splitlines() or [""]
    first = lines[0] if len(lines[0]) <= limit else lines[0][:limit] + "..."
    return first + (f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else "")


def empty_row(job: Job) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(job_id=job.job_id, path=job.path, hosts=[], culprit_ranks=[], culprit_hosts=[],
               hanglens_version=__version__, files=len(job.files), bytes=job.bytes, notes="", status="ok")
    return row


def _times(doc: dict[str, Any]) -> list[float]:
    out: list[Any] = [t.get("time") for t in doc.get("timeline") or []]
    out += [r.get("first_error_time") for r in doc.get("ranks") or []]
    for f in doc.get("findings") or []:
        out += [e.get("time") for e in f.get("evidence") or []]
    return [float(t) for t in out if isinstance(t, (int, float)) and math.isfinite(t)]


def _joined(values: Any) -> str | None:
    vals = sorted({str(v) for v in values or []})
    return ";".join(vals) or None


def row_from_doc(job: Job, doc: dict[str, Any]) -> dict[str, Any]:
    """The jobs-table row of one analysis document (docs/analysis-json.md)."""
    row = empty_row(job)
    verdict = doc.get("verdict") or {}
    inputs = doc.get("inputs") or {}
    distinct = (doc.get("versions") or {}).get("distinct") or {}
    times = _times(doc)
    row.update(
        first_ts=min(times) if times else None,
        last_ts=max(times) if times else None,
        world_size=inputs.get("world_size"),
        hosts=sorted({str(h) for h in inputs.get("hosts") or []}),
        category=verdict.get("category"),
        rule_id=verdict.get("rule_id"),
        confidence=verdict.get("confidence"),
        culprit_ranks=sorted({int(r) for r in verdict.get("culprit_ranks") or []}),
        culprit_hosts=sorted({str(h) for h in verdict.get("culprit_hosts") or []}),
        torch_version=_joined(distinct.get("torch")),
        nccl_version=_joined(distinct.get("nccl")),
        hanglens_version=doc.get("hanglens_version") or __version__,
    )
    return row


def load_analyzer(spec: str) -> Callable[..., Any]:
    mod, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(mod), name, None)
    if not callable(fn):
        raise RuntimeError(f"{spec} is not available in this hanglens install")
    return fn  # type: ignore[no-any-return]


def _render_html(doc: dict[str, Any], notes: list[str]) -> str:
    """The report engineer's page; if that renderer is missing or fails, a plain page (and a note)."""
    from hanglens.report.fleet import render_job_fallback

    try:
        from hanglens.report.html import render_html
    except ImportError:
        return render_job_fallback(doc)
    try:
        return str(render_html(doc))
    except Exception as exc:  # a renderer bug must not cost the job its verdict row
        notes.append(one_line(f"HTML report fell back to a plain page: {type(exc).__name__}: {exc}", 200))
        return render_job_fallback(doc)


@functools.lru_cache(maxsize=4)
def load_rules(rules: tuple[str, ...], limits: Limits = DEFAULT_LIMITS) -> list[Any]:
    """The rules, loaded once per process (a worker analyses many jobs with the same rules)."""
    from hanglens.api import load_rules as _load_rules

    return _load_rules(list(rules), limits=limits)


def _analyse(job: Job, settings: Settings) -> dict[str, Any]:
    fn = load_analyzer(settings.analyzer)
    # One job per worker: the analysis must not start a pool of its own inside the scan's pool.
    kwargs: dict[str, Any] = {"jobs": 1, "command": f"hanglens analyze {shlex.quote(job.path)}"}
    if settings.analyzer == DEFAULT_ANALYZER:
        kwargs["rules"] = load_rules(settings.rules, settings.limits)
        kwargs["limits"] = settings.limits
    else:
        kwargs["rules_dirs"] = list(settings.rules)
    result = fn([job.path], **kwargs)
    doc = result if isinstance(result, dict) else result.to_dict()
    if not isinstance(doc, dict):
        raise TypeError(f"analysis document is a {type(doc).__name__}, not a dict")
    return doc


def _nothing_read(doc: dict[str, Any]) -> str | None:
    """Why a job yielded no readable input (corrupt archive, empty or unreadable folder), or None."""
    inputs = doc.get("inputs") or {}
    if inputs.get("files"):
        return None
    reasons = sorted({f"{s.get('path')}: {s.get('reason')}" for s in inputs.get("skipped") or []})
    return "nothing readable" + (f" ({'; '.join(reasons[:3])})" if reasons else "")


def run_job(job: Job, settings: Settings) -> JobResult:
    """Analyse `job`. Never raises for a job's own problems: they become the row's `error`."""
    row = empty_row(job)
    notes = list(job.notes)
    try:
        if not job.files:
            raise RuntimeError("no files to read" if job.kind == "folder" else "cannot read the job")
        doc = _analyse(job, settings)
        empty = _nothing_read(doc)
        if empty is not None:
            raise RuntimeError(empty)
        row = row_from_doc(job, doc)
        inputs = doc.get("inputs") or {}
        runs = inputs.get("runs") or []
        if len(runs) > 1:
            # the folder holds several runs (a reused --log-dir, an appended console): the row is the latest's
            failed = [str(r.get("run")) for r in runs if r.get("failed")]
            notes.append(f"holds {len(runs)} runs, the latest judged"
                         + (f"; earlier run {', '.join(failed)} ended in a failure" if failed else ""))
        skipped = len(inputs.get("skipped") or [])
        if skipped:
            notes.append(f"{skipped} input(s) skipped, see the report")
        report_json = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n"
        html = _render_html(doc, notes)
        row["notes"] = "; ".join(notes)
        return JobResult(job.job_id, job.key, row, report_json, html, job.bytes)
    except MemoryError:
        row["notes"] = "; ".join(notes)
        row["status"] = "oom"
        cap = human_bytes(settings.limits.job_memory_bytes)
        row["error"] = one_line(f"out of memory (the worker's cap is {cap}; limit job_memory_bytes)")
        return JobResult(job.job_id, job.key, row, None, None, job.bytes)
    except Exception as exc:  # one bad job must not stop the scan: it becomes an error row
        row["notes"] = "; ".join(notes)
        row["status"] = "error"
        row["error"] = one_line(f"{type(exc).__name__}: {exc}")
        return JobResult(job.job_id, job.key, row, None, None, job.bytes)
