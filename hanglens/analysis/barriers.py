"""Monitored-barrier reports of a `new_group` subgroup, with their group ranks read as global ranks.

ProcessGroupGloo::monitoredBarrier numbers ranks by the process group's own rank (`[Rank <g>]: Rank <k>
failed to pass monitoredBarrier`, `Rank <g> successfully reached monitoredBarrier`; log-formats.md section
2.2), which is the global rank only for the default group, while `[rankN]:` before the line is the writer's
global rank (section 9.1). A report whose printed rank differs from its writer's global rank therefore
comes from a subgroup, and says which global rank that group rank is. `new_group` orders a group's ranks by
global rank (torch/distributed/distributed_c10d.py `_new_group_with_tag`: `ranks = sorted(ranks)`, group rank
= position), so a group rank nobody printed lies strictly between the global ranks of its known neighbours:
when one global rank fits (the world size bounding the top), it is that rank.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hanglens.model import Event

Row = dict[str, Any]


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _learned(events: Sequence[Event]) -> dict[int, int] | None:
    """group rank -> global rank from every subgroup report; None when the pairs contradict one sorted
    membership (two subgroups, or a misattributed line)."""
    seen: dict[int, set[int]] = {}
    for e in events:
        g = _int(e.get("stated_rank"))
        if e.kind == "monitored_barrier_failure" and g is not None and e.rank is not None and g != e.rank:
            seen.setdefault(g, set()).add(e.rank)
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


def subgroup_barrier_rows(events: Sequence[Event], world: int | None) -> list[Row]:
    """One row per monitored-barrier report that names missing ranks: `subgroup` when its printed rank is
    not its writer's global rank, `missing` its missing ranks as global ranks (None where a subgroup's group
    rank cannot be placed), `members` the subgroup's global ranks its reports show present (the reporter,
    the members that reached the barrier); a default-group report has `missing` as printed."""
    known = _learned(events)
    rows: list[Row] = []
    present = sorted(set(known.values())) if known else []
    for e in events:
        if e.kind != "monitored_barrier_failure" or not isinstance(e.get("missing_ranks"), list):
            continue
        printed = [r for r in (_int(x) for x in e.get("missing_ranks")) if r is not None]
        g = _int(e.get("stated_rank"))
        sub = g is not None and e.rank is not None and g != e.rank
        missing: list[int] | None = printed
        if sub:
            mapped = [_global(r, known, world) for r in printed] if known else [None]
            missing = None if any(m is None for m in mapped) else sorted({m for m in mapped if m is not None})
        rows.append({"rank": e.rank, "subgroup": sub, "missing": missing, "printed": printed,
                     "members": present if sub else None, "timeout_ms": e.get("timeout_ms"),
                     "path": e.ref.path, "line": e.ref.line})
    # A default-group report whose missing ranks are all present in a subgroup's barrier: they did not
    # arrive because they wait there (for that subgroup's missing ranks), not because they were slow.
    inside = set(present) if any(r["subgroup"] and r["missing"] for r in rows) else set()
    for r in rows:
        r["waits_in_subgroup"] = (not r["subgroup"] and bool(r["missing"]) and set(r["missing"]) <= inside)
    return rows
