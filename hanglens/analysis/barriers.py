"""Monitored-barrier reports of a `new_group` subgroup, with their group ranks read as global ranks.

ProcessGroupGloo::monitoredBarrier numbers ranks by the process group's own rank (`[Rank <g>]: Rank <k>
failed to pass monitoredBarrier`, `Rank <g> successfully reached monitoredBarrier`; log-formats.md section
2.2), which is the global rank only for the default group, while `[rankN]:` before the line is the writer's
global rank (section 9.1). A report whose printed rank differs from its writer's global rank therefore
comes from a subgroup, and says which global rank that group rank is. `new_group` orders a group's ranks by
global rank (torch/distributed/distributed_c10d.py `_new_group_with_tag`: `ranks = sorted(ranks)`, group rank
= position), so a group rank nobody printed lies strictly between the global ranks of its known neighbours:
when one global rank fits (the world size bounding the top), it is that rank.

A report's writer is known from its line's `[rankN]:` prefix or file, or from the traceback that raised
it (the same message as the exception's, or as the error file's in torchrun's failure table); without
either, ingest takes the printed rank as the writer's (its last resort for messages that state their
writer's rank). When that traceback shows the barrier called with `group=` (a subgroup), the printed rank
is a group rank: the writer is then known only from the traceback's own rank, and a report whose writer
is unknown places none of its missing group ranks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hanglens import lazyre as re
from hanglens.analysis import callsite
from hanglens.ingest.streams import non_negative_int as _int
from hanglens.model import Event

Row = dict[str, Any]
# The exception type in front of a report's message when the report is the raise line itself.
_RAISED_RE = re.compile(r"^[\w.]+(?:Error|Exception):\s*")


def _raised_by(events: Sequence[Event]) -> dict[int, Event]:
    """id(report) -> the exception that carries the same message in the same file (the nearest one): the
    worker's traceback, or the copy of its error file in torchrun's failure table, whose rank the table
    states (log-formats.md section 3.5)."""
    reports = [e for e in events if e.kind == "monitored_barrier_failure" and e.text.strip()]
    if not reports:
        return {}
    by_path: dict[str, list[Event]] = {}
    for e in events:
        if e.kind in ("exception", "error_file") and "monitoredBarrier" in str(e.get("message") or ""):
            by_path.setdefault(e.path, []).append(e)
    out: dict[int, Event] = {}
    for r in reports:
        text = _RAISED_RE.sub("", r.text.strip())
        found = [x for x in by_path.get(r.path, ()) if text in str(x.get("message"))]
        if found:
            # the same writer's first, then the traceback after the report line (glog line, then raise)
            def order(x: Event, r: Event = r) -> tuple[bool, bool, int]:
                other = r.rank is not None and x.rank is not None and x.rank != r.rank
                return other, x.line < r.line, abs(x.line - r.line)

            out[id(r)] = min(found, key=order)
    return out


def _on_subgroup(exc: Event) -> bool:
    """Does this traceback raise from a monitored_barrier called with a subgroup (`group=pair`)?"""
    frames = [str(f) for f in exc.get("frames") or []]
    sources = [str(s) for s in exc.get("sources") or []]
    found = callsite.blocking_call(frames)
    return found is not None and found[3] == "monitored_barrier" and callsite.subgroup_call(frames, sources)


def _reporters(events: Sequence[Event]) -> dict[int, tuple[int | None, bool]]:
    """id(report) -> (its writer's global rank or None, whether it runs on a subgroup)."""
    raised = _raised_by(events)
    out: dict[int, tuple[int | None, bool]] = {}
    for e in events:
        if e.kind != "monitored_barrier_failure":
            continue
        g = _int(e.get("stated_rank"))
        exc = raised.get(id(e))
        on_call = exc is not None and _on_subgroup(exc)
        writer = exc.rank if exc is not None and exc.rank is not None else e.rank
        if on_call and (exc is None or exc.rank is None) and writer == g:
            writer = None   # maybe ingest's reading of the printed group rank
        out[id(e)] = (writer, on_call or (g is not None and writer is not None and g != writer))
    return out


def _learned(events: Sequence[Event], who: dict[int, tuple[int | None, bool]]) -> dict[int, int] | None:
    """group rank -> global rank from every subgroup report; None when the pairs contradict one sorted
    membership (two subgroups, or a misattributed line)."""
    seen: dict[int, set[int]] = {}
    for e in events:
        g = _int(e.get("stated_rank"))
        writer, sub = who.get(id(e), (None, False))
        if e.kind == "monitored_barrier_failure" and g is not None and writer is not None and sub:
            seen.setdefault(g, set()).add(writer)
    if not seen or any(len(v) > 1 for v in seen.values()):
        return None
    pairs = sorted((g, next(iter(v))) for g, v in seen.items())
    if any(b[1] - a[1] < b[0] - a[0] for a, b in itertools.pairwise(pairs)):
        return None   # not increasing with the group rank: not one sorted membership
    return dict(pairs)


def _global(g: int, known: dict[int, int], world: int | None) -> int | None:
    if g in known:
        return known[g]
    below = [k for k in known if k < g]
    above = [k for k in known if k > g]
    low = known[max(below)] + (g - max(below)) if below else g
    high = known[min(above)] - (min(above) - g) if above else (world - 1 if world else None)
    return low if high is not None and low == high else None


# wait_all_ranks=True (and DETAIL's wrapper) raises `Ranks <k1>, <k2> failed ...` naming every missing rank;
# the singular form is the first missing rank only (log-formats.md section 2.2).
_ALL_RANKS_RE = re.compile(r"\bRanks [\d, ]+ failed to pass monitoredBarrier")


def _unchecked(e: Event, printed: list[int], world: int | None, reached: set[int],
               quiet: set[int]) -> list[int]:
    """The ranks a first-missing report left unchecked that show they did not reach the barrier either.

    With wait_all_ranks=False rank 0 waits for the ranks in order and raises at the first that does not
    arrive (ProcessGroupGloo.cpp monitoredBarrier; log-formats.md section 2.2): it says nothing of the ranks
    after it. Each rank that did arrive waits for rank 0's answer and raises `Rank <r> successfully reached
    monitoredBarrier, but received errors ...` when rank 0 fails; a later rank with no such line, stopped
    with no error of its own (`quiet`: torchrun's SIGTERM) while that line shows its peers were answered,
    was still before the barrier.
    """
    if world is None or len(printed) != 1 or not reached:
        return []
    return [r for r in range(printed[0] + 1, world) if r not in reached and r in quiet]


def subgroup_barrier_rows(events: Sequence[Event], world: int | None, quiet: Sequence[int] = ()) -> list[Row]:
    """One row per monitored-barrier report that names missing ranks: `subgroup` when its printed rank is
    not its writer's global rank, `missing` its missing ranks as global ranks (None where a subgroup's group
    rank cannot be placed), `members` the subgroup's global ranks its reports show present; a default-group
    report has `missing` as printed. `late`: `missing` and, for a default-group report of the first missing
    rank only, the ranks after it that show they never arrived either (_unchecked; `quiet`: the ranks
    stopped with no error of their own)."""
    # Under wait_all_ranks=True each missing rank is logged alone before the report naming them all.
    every = any(e.kind == "monitored_barrier_failure" and _ALL_RANKS_RE.search(e.text) for e in events)
    said = [e for e in events if e.kind == "monitored_barrier_failure" and e.get("points_to_rank0")]
    reached = set() if every else {r for e in said for r in [_int(e.get("stated_rank"))]
                                   if r is not None and (e.rank is None or e.rank == r)}
    who = _reporters(events)
    known = _learned(events, who)
    rows: list[Row] = []
    present = sorted(set(known.values())) if known else []
    for e in events:
        if e.kind != "monitored_barrier_failure" or not isinstance(e.get("missing_ranks"), list):
            continue
        printed = [r for r in (_int(x) for x in e.get("missing_ranks")) if r is not None]
        writer, sub = who.get(id(e), (e.rank, False))
        missing: list[int] | None = printed
        if sub:
            mapped = ([_global(r, known, world) for r in printed]
                      if known and writer is not None else [None])
            missing = None if any(m is None for m in mapped) else sorted({m for m in mapped if m is not None})
        late = missing
        if not sub and missing is not None:
            late = sorted({*missing, *_unchecked(e, printed, world, reached, set(quiet))})
        rows.append({"rank": writer, "subgroup": sub, "missing": missing, "printed": printed, "late": late,
                     "members": present if sub else None, "timeout_ms": e.get("timeout_ms"),
                     "path": e.path, "line": e.line})
    # A default-group report whose missing ranks are all present in a subgroup's barrier: they did not
    # arrive because they wait there (for that subgroup's missing ranks), not because they were slow.
    # A subgroup report shows its writer inside that subgroup's barrier whether it reported missing members
    # (the subgroup's rank 0) or only that it reached the barrier and lost the subgroup's rank 0.
    inside = set(present)
    for r in rows:
        r["waits_in_subgroup"] = (not r["subgroup"] and bool(r["missing"]) and set(r["missing"]) <= inside)
    return rows
