"""Training progress per rank: the last step reported, gaps in the steps, ranks that stopped early."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens.model import Event


def progress_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[dict[str, Any]]:
    """One row per rank that reported progress.

    `gap` is true when a rank skipped a step its own cadence says it should have printed (e.g. 0,1,2,4);
    `gap_after` is the step before the hole (the progress parser tracks each series' increments).
    `stopped_early` is true when the rank's last step is behind the furthest rank's (so its peers went on
    without it).
    """
    steps: dict[int, list[int]] = defaultdict(list)
    gaps: dict[int, int] = {}
    last_ev: dict[int, Event] = {}
    for e in events:
        step = e.get("step")
        if e.kind != "progress" or e.rank is None or not isinstance(step, int):
            continue
        steps[e.rank].append(step)
        gap = e.get("gap_after")
        if isinstance(gap, int):
            gaps[e.rank] = min(gap, gaps.get(e.rank, gap))
        if e.rank not in last_ev or step >= (last_ev[e.rank].get("step") or -1):
            last_ev[e.rank] = e
    if not steps:
        return []
    max_step = max(max(s) for s in steps.values())
    rows = []
    for rank in sorted(steps):
        last = max(steps[rank])
        gap_after = gaps.get(rank)
        ev = last_ev[rank]
        rows.append(
            {
                "rank": rank,
                "host": hosts.get(rank),
                "last_step": last,
                "max_step": max_step,
                "steps_behind": max_step - last,
                "gap": gap_after is not None,
                "gap_after": gap_after,
                "stopped_early": len(steps) > 1 and last < max_step,
                "path": ev.ref.path,
                "line": ev.ref.line,
            }
        )
    return rows
