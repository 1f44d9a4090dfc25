"""nccl_init_pending: communicators whose NCCL init started on some ranks and completed on none."""

from __future__ import annotations

from typing import Any

from hanglens.analysis import build
from hanglens.model import Event, SourceRef


def init(line: int, comm_rank: int, nranks: int, phase: str, comm_id: str = "c0ffee") -> Event:
    fields: dict[str, Any] = {"comm_rank": comm_rank, "nranks": nranks, "phase": phase, "comm_id": comm_id}
    return Event(kind="nccl_comm_init", ref=SourceRef("nccl.log", line), text="init", parser="test",
                 fields=fields)


def pending(events: list[Event]) -> list[dict[str, Any]]:
    return list(build(events).fact("nccl_init_pending").to_dict(orient="records"))


def test_ranks_that_never_started_are_marked() -> None:
    rows = pending([init(1, 0, 4, "init_start"), init(2, 1, 4, "init_start"), init(3, 3, 4, "init_start")])
    absent = [r["rank"] for r in rows if not r["started"]]
    assert absent == [2]
    assert {r["missing"] for r in rows} == {1}


def test_a_completed_communicator_is_not_pending() -> None:
    events = [init(1, 0, 2, "init_start"), init(2, 1, 2, "init_start"), init(3, 0, 2, "init_complete")]
    assert pending(events) == []


def test_sub_communicator_ranks_are_not_global_ranks() -> None:
    events = [init(1, 0, 8, "init_complete", "world"), init(2, 0, 2, "init_start", "pair")]
    rows = pending(events)
    assert [(r["comm_rank"], r["rank"], r["started"]) for r in rows] == [(0, None, True), (1, None, False)]
