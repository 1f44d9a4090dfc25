"""Communicators whose NCCL init started on some ranks and completed nowhere: who never arrived."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens.model import Event

Row = dict[str, Any]


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def init_pending_rows(events: Sequence[Event]) -> list[Row]:
    """One row per communicator rank of a communicator (NCCL `commId`) that printed `Init START` on some
    ranks and `Init COMPLETE` on none: `started` tells whether that rank's START line is here.

    NCCL bootstrap has no timeout, so the ranks that started wait silently for the ones that never called
    the communicator's first collective (log-formats.md section 4.3, failure-signatures.md sections 10.9
    and 16 item 5). `rank` is the communicator rank when the communicator spans the largest `nranks` seen
    (the world communicator), where it equals the global rank; otherwise None.
    """
    started: dict[str, dict[int, Event]] = defaultdict(dict)
    completed: set[str] = set()
    nranks: dict[str, int] = {}
    for e in events:
        if e.kind != "nccl_comm_init":
            continue
        cid, crank, n = e.get("comm_id"), _int(e.get("comm_rank")), _int(e.get("nranks"))
        if not isinstance(cid, str) or crank is None or n is None or not 0 < n <= 65536:
            continue
        nranks[cid] = n
        if e.get("phase") == "init_start":
            started[cid].setdefault(crank, e)
        elif e.get("phase") == "init_complete":
            completed.add(cid)
    world = max(nranks.values(), default=0)
    rows: list[Row] = []
    for cid in sorted(started):
        n = nranks[cid]
        if cid in completed or not started[cid]:
            continue
        for crank in range(n):
            first = started[cid].get(crank)
            rows.append(
                {
                    "comm_id": cid,
                    "comm_rank": crank,
                    "nranks": n,
                    "rank": crank if n == world else None,
                    "started": first is not None,
                    "missing": n - len(started[cid]),
                    "path": first.ref.path if first is not None else None,
                    "line": first.ref.line if first is not None else None,
                }
            )
    return rows
