"""The rank overview as an HTML table: one bar per run of consecutive ranks in the same state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from hanglens.report._common import (
    STATUSES,
    Run,
    as_rank,
    fold_runs,
    how_it_ended,
    last_seq_text,
    plural,
)

MAX_ROWS = 240  # beyond this a page stops being an overview; coarser folding takes over


@dataclass(frozen=True, slots=True)
class OverviewRow:
    """One row of the overview: a rank range and how many of its ranks are in each state."""

    label: str
    first: int
    last: int
    hosts: str
    counts: tuple[tuple[str, int], ...]  # (status, ranks) in STATUSES order, non-zero only
    progress: float | None  # 0..1 of the furthest rank's progress
    detail: str


@dataclass(frozen=True, slots=True)
class Overview:
    rows: tuple[OverviewRow, ...]
    mode: str  # "exact" | "status" | "blocks"
    measure: str  # what the bar length shows
    total_ranks: int
    status_counts: tuple[tuple[str, int], ...]


def _status(row: Mapping[str, Any]) -> str:
    s = str(row.get("status") or "ok")
    return s if s in STATUSES else "ok"


def _measure(ranks: Sequence[Mapping[str, Any]]) -> tuple[str, str | None, float, float]:
    """Pick the bar length: last training step when any rank reported one, else the busiest PG's sequence.

    Returns (measure, pg, low, high): bars are scaled between the slowest and the furthest rank, because
    a culprit one step behind 4,000 must not look as long as its peers.
    """
    steps = [r["last_step"] for r in ranks if isinstance(r.get("last_step"), int)]
    if steps:
        return "last_step", None, float(min(steps)), float(max(steps))
    per_pg: Counter[str] = Counter()
    top: dict[str, int] = {}
    for r in ranks:
        for pg, seq in (r.get("last_seq") or {}).items():
            if isinstance(seq, int):
                per_pg[str(pg)] += 1
                top[str(pg)] = max(top.get(str(pg), 0), seq)
    if not per_pg:
        return "none", None, 0.0, 0.0
    pg = sorted(per_pg, key=lambda p: (-per_pg[p], p))[0]
    low = min(
        int(s)
        for r in ranks
        for p, s in (r.get("last_seq") or {}).items()
        if str(p) == pg and isinstance(s, int)
    )
    return "last_seq", pg, float(low), float(top[pg])


def _value(row: Mapping[str, Any], measure: str, pg: str | None) -> float | None:
    if measure == "last_step":
        v = row.get("last_step")
    elif measure == "last_seq" and pg is not None:
        v = (row.get("last_seq") or {}).get(pg)
    else:
        v = None
    return float(v) if isinstance(v, int) else None


def _exact_key(row: Mapping[str, Any]) -> Hashable:
    seq = tuple(sorted((str(k), v) for k, v in (row.get("last_seq") or {}).items()))
    return (_status(row), row.get("last_step"), seq, how_it_ended(row))


def _scale(v: float, low: float, high: float) -> float:
    if high <= low:
        return 1.0
    return 0.15 + 0.85 * (v - low) / (high - low)


def _hosts(items: Sequence[Mapping[str, Any]]) -> str:
    names = sorted({str(r["host"]) for r in items if r.get("host")})
    if not names:
        return "unknown host"
    shorts = {n.split(".", 1)[0] for n in names if not n.replace(".", "").isdigit()}
    if len(shorts) == len(names):
        names = sorted(shorts)
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]}, {names[1]}"
    return f"{names[0]} … {names[-1]} ({len(names)} hosts)"


def _row_from_run(
    run: Run, measure: str, pg: str | None, scale: tuple[float, float], exact: bool
) -> OverviewRow:
    counts = Counter(_status(r) for r in run.items)
    values = [v for v in (_value(r, measure, pg) for r in run.items) if v is not None]
    progress = _scale(max(values), *scale) if values else None
    hosts = _hosts(run.items)
    if exact:
        first = run.items[0]
        parts = []
        if isinstance(first.get("last_step"), int):
            parts.append(f"step {first['last_step']}")
        seq = last_seq_text(first.get("last_seq"))
        if seq:
            parts.append(seq)
        how = how_it_ended(first)
        if how:
            parts.insert(0, how)
        if not isinstance(first.get("last_step"), int) and not seq:
            parts.append("no progress reported")
        detail = " · ".join(parts)
    else:
        steps = sorted({int(r["last_step"]) for r in run.items if isinstance(r.get("last_step"), int)})
        detail = (f"steps {steps[0]}–{steps[-1]}" if len(steps) > 1 else f"step {steps[0]}") if steps else ""
        if not exact and len(counts) > 1:
            detail = ", ".join(f"{n} {s}" for s, n in _ordered(counts)) + (f" · {detail}" if detail else "")
    return OverviewRow(run.label, run.first, run.last, hosts, _ordered(counts), progress, detail)


def _ordered(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple((s, counts[s]) for s in STATUSES if counts.get(s))


def build_overview(ranks: Sequence[Mapping[str, Any]], max_rows: int = MAX_ROWS) -> Overview:
    """Fold ranks into at most `max_rows` rows: exact state first, then status only, then fixed blocks."""
    rows = [r for r in ranks if isinstance(r, Mapping) and as_rank(r.get("rank")) is not None]
    measure, pg, low, high = _measure(rows)
    span = f", scaled from {low:.0f} to {high:.0f}" if high > low else ""
    measure_text = {
        "last_step": f"last training step reported{span}",
        "last_seq": f"last collective sequence number in process group {pg}{span}",
        "none": "no progress information in the logs",
    }[measure]
    total = Counter(_status(r) for r in rows)
    runs = fold_runs(rows, _exact_key)
    mode = "exact"
    if len(runs) > max_rows:
        runs, mode = fold_runs(rows, _status), "status"
    if len(runs) > max_rows:
        mode = "blocks"
        ordered = sorted(rows, key=lambda r: as_rank(r["rank"]) or 0)
        size = -(-len(ordered) // max_rows)
        runs = []
        for i in range(0, len(ordered), size):
            chunk = ordered[i : i + size]
            runs.append(Run(as_rank(chunk[0]["rank"]) or 0, as_rank(chunk[-1]["rank"]) or 0, i, list(chunk)))
    out = tuple(_row_from_run(run, measure, pg, (low, high), mode == "exact") for run in runs)
    return Overview(out, mode, measure_text, len(rows), _ordered(total))


def render_table(ov: Overview) -> str:
    """The overview as an HTML table with CSS bars: text keeps its size at any page width and in print.

    A bar is drawn only from a known step or sequence number; a row without one shows an empty track.
    Every text is escaped; colours come from CSS classes.
    """
    out = [
        '<table class="rankmap" aria-label="Rank overview: '
        f'{escape(plural(ov.total_ranks, "rank"))} in {escape(plural(len(ov.rows), "row"))}">',
        '<thead><tr><th>ranks</th><th>hosts</th><th class="barcol">progress</th><th>state</th></tr></thead>'
        "<tbody>",
    ]
    for row in ov.rows:
        worst = row.counts[0][0] if row.counts else "ok"
        bars = []
        if row.progress is not None:
            total = sum(n for _, n in row.counts) or 1
            for status, n in row.counts:
                pct = 100.0 * row.progress * n / total
                bars.append(f'<span class="bar st-{status}" style="width:{max(pct, 1.0):.1f}%"></span>')
        out.append(
            f'<tr class="st-{worst}"><td class="lbl mono">{escape(row.label)}</td>'
            f'<td class="host small">{escape(row.hosts)}</td>'
            f'<td class="barcol"><span class="track">{"".join(bars)}</span></td>'
            f'<td class="note st-{worst}">{escape(_note(row))}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _note(row: OverviewRow) -> str:
    if len(row.counts) == 1:
        status = row.counts[0][0]
        mark = {
            "culprit": "✖ culprit",
            "failed": "! failed",
            "victim": "victim",
            "ok": "ok",
            "silent": "silent — no log",
        }[status]
        return f"{mark} · {row.detail}" if row.detail and status != "silent" else mark
    return row.detail
