"""Init-time absences: NCCL communicators whose init started on some ranks and completed nowhere, and gloo
rendezvous keys the waiting ranks timed out on: who never arrived."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens import lazyre as re
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
                    "path": first.path if first is not None else None,
                    "line": first.line if first is not None else None,
                }
            )
    return rows


# gloo's full-mesh rendezvous (gloo/transport/tcp/context.cc Context::createAndConnectAllPairs): every rank
# publishes its address under the key `<rank>` and reads its peers' keys; PyTorch's store prefixes the
# process group and the device (`/default_pg/0//cpu//0/2` in torch 2.13). Only the default group's keys
# name global ranks (a new_group's name their group ranks), and only gloo's CPU device keys end in a rank
# (NCCL's `/default_pg//cuda//0` counts communicators).
GLOO_RANK_KEY_RE = re.compile(r"(?:^|/)default_pg/[^,\s]{0,200}/cpu/[^,\s]{0,200}?/(?P<rank>\d{1,7})$")


def init_key_missing_rows(events: Sequence[Event], world: int | None) -> list[Row]:
    """One row per rank whose gloo rendezvous key its peers timed out waiting for in init_process_group.

    `waiting` counts the ranks (or unattributed errors) that named it. A key naming the waiting rank itself,
    or a rank outside a known world, is not read as anyone's absence.
    """
    found: dict[int, Row] = {}
    waiters: dict[int, set[Any]] = defaultdict(set)
    for e in events:
        if e.kind != "store_error":
            continue
        keys = str(e.get("keys") or "")
        for key in keys.replace(",", " ").split()[:64]:
            m = GLOO_RANK_KEY_RE.search(key)
            if m is None:
                continue
            rank = int(m["rank"])
            if rank == e.rank or (world is not None and rank >= world):
                continue
            waiters[rank].add(e.rank if e.rank is not None else (e.path, e.line))
            found.setdefault(rank, {"rank": rank, "key": key, "timeout_ms": _int(e.get("timeout_ms")),
                                    "path": e.path, "line": e.line})
    return [{**row, "waiting": len(waiters[r])} for r, row in sorted(found.items())]
