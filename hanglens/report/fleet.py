"""Render a scan's index page (one self-contained HTML file) from its job rows; no hanglens internals.

The page works without JavaScript: the table is complete and pre-sorted, the category filter is CSS
(`:has()` on radio buttons), every job links to its report. Script only adds column sorting and a
text filter. Nothing is fetched: CSS, SVG charts and script are inline, every value is escaped.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from hanglens.model import YEARLESS_YEAR, log_datetime

_TEMPLATES = Path(__file__).resolve().parent / "templates"
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(_TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined,
    trim_blocks=True, lstrip_blocks=True,
)
ERROR_CATEGORY = "error"
NO_FAILURE = ("none", ERROR_CATEGORY)
BAR_WIDTH = 360


def ts_text(t: Any) -> str:
    """The writer's wall clock of a normalised timeline time (POSIX seconds of a naive clock)."""
    d = log_datetime(t)
    if d is None:
        return ""
    # Logs that state no year (c10/glog stamps) are read into a placeholder year: print without it.
    return d.strftime("%m-%d %H:%M:%S" if d.year == YEARLESS_YEAR else "%Y-%m-%d %H:%M:%S")


def _category(row: Mapping[str, Any]) -> str:
    if row.get("error"):
        return ERROR_CATEGORY
    return str(row.get("category") or "unknown")


def _bars(counts: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    top = max((n for _, n in counts), default=0) or 1
    return [{"label": k, "count": n, "width": max(1, round(BAR_WIDTH * n / top)), "y": i * 22}
            for i, (k, n) in enumerate(counts)]


def _list_text(v: Any) -> str:
    return ", ".join(str(x) for x in v) if isinstance(v, (list, tuple)) else ""


def index_context(rows: Sequence[Mapping[str, Any]], skipped: Sequence[Mapping[str, Any]],
                  meta: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, computed and sorted here (the template only lays it out)."""
    cats = Counter(_category(r) for r in rows)
    cat_counts = sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))
    cat_class = {c: f"c{i}" for i, (c, _) in enumerate(cat_counts)}
    hosts: Counter[str] = Counter()
    days: Counter[str] = Counter()
    for r in rows:
        hosts.update(set(r.get("culprit_hosts") or []))
        day = ts_text(r.get("first_ts"))[:10]
        if len(day) == 10 and day[4] == "-" and _category(r) not in NO_FAILURE:  # dated stamps only
            days[day] += 1
    table = []
    for r in rows:
        cat = _category(r)
        linked = not r.get("error")
        table.append({
            "job_id": str(r.get("job_id") or ""),
            "href": f"jobs/{quote(str(r.get('job_id') or ''))}/report.html" if linked else "",
            "path": str(r.get("path") or ""),
            "category": cat, "cls": cat_class[cat],
            "rule_id": str(r.get("rule_id") or ""),
            "confidence": str(r.get("confidence") or ""),
            "culprit_ranks": _list_text(r.get("culprit_ranks")),
            "culprit_hosts": _list_text(r.get("culprit_hosts")),
            "world_size": "" if r.get("world_size") is None else str(r.get("world_size")),
            "first_ts": ts_text(r.get("first_ts")),
            "first_ts_key": "" if ts_text(r.get("first_ts")) == "" else f"{float(r['first_ts']):.3f}",
            "torch": str(r.get("torch_version") or ""), "nccl": str(r.get("nccl_version") or ""),
            "error": str(r.get("error") or ""), "notes": str(r.get("notes") or ""),
        })
    return {
        "meta": dict(meta),
        "total": len(rows),
        "categories": [{"name": c, "count": n, "cls": cat_class[c]} for c, n in cat_counts],
        "cat_bars": _bars(cat_counts),
        "offenders": sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0])),
        "day_bars": _bars(sorted(days.items())),
        "rows": table,
        "skipped": [{"path": str(s.get("path")), "reason": str(s.get("reason"))} for s in skipped],
    }


def render_index(rows: Sequence[Mapping[str, Any]], skipped: Sequence[Mapping[str, Any]],
                 meta: Mapping[str, Any]) -> str:
    """The scan's `index.html`: category chart, job table, repeat-offender hosts, failures per day."""
    return _ENV.get_template("fleet.html.j2").render(**index_context(rows, skipped, meta))


def render_job_fallback(doc: Mapping[str, Any]) -> str:
    """A plain per-job page (verdict and the full document) for when no HTML report renderer exists."""
    v = doc.get("verdict") or {}
    esc = html.escape
    fields = [("Category", v.get("category_title") or v.get("category")), ("Rule", v.get("rule_id")),
              ("Confidence", v.get("confidence")), ("Culprit ranks", _list_text(v.get("culprit_ranks"))),
              ("Culprit hosts", _list_text(v.get("culprit_hosts"))), ("Summary", v.get("summary")),
              ("First step", v.get("first_step"))]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(str(val or ''))}</dd>" for k, val in fields)
    body = esc(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, default=str))
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>hanglens report</title>"
            "<style>body{font:14px system-ui,sans-serif;margin:2em}dt{font-weight:600}"
            "pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>"
            f"<h1>hanglens report</h1><dl>{dl}</dl><h2>Analysis document</h2><pre>{body}</pre>"
            "</body></html>\n")
