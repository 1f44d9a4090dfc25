"""Ranks whose gloo rendezvous key their peers timed out on in init_process_group (facts_init)."""

from __future__ import annotations

from typing import Any

from hanglens.analysis.facts_init import init_key_missing_rows
from hanglens.model import Event, SourceRef

_n = iter(range(1, 1000))


def store(rank: int | None, keys: str) -> Event:
    return Event(kind="store_error", ref=SourceRef("job.log", next(_n)), text="", parser="test", rank=rank,
                 fields={"op": "wait", "timeout_ms": 900000, "keys": keys, "error": "wait timeout"})


def missing(evs: list[Event], world: int | None = 4) -> list[tuple[Any, ...]]:
    return [(r["rank"], r["waiting"]) for r in init_key_missing_rows(evs, world)]


def test_the_key_names_the_rank_that_never_arrived() -> None:
    evs = [store(0, "/default_pg/0//cpu//0/3"), store(1, "/default_pg/0//cpu//0/3"), store(None,
           "/default_pg/0//cpu//0/3")]
    assert missing(evs) == [(3, 3)]


def test_keys_that_name_no_absent_global_rank() -> None:
    evs = [
        store(1, "/default_pg//cuda//0"),          # NCCL: a communicator counter, not a rank
        store(2, "/default_pg/0//cpu//0/2"),       # the waiting rank itself
        store(0, "/default_pg/0//cpu//0/7"),       # outside the world
        store(0, "/3/0//cpu//0/1"),                # a new_group: group ranks, not global ones
        store(0, "store_based_barrier_key:1"),
    ]
    assert missing(evs) == []


def test_several_keys_in_one_error() -> None:
    evs = [store(0, "/default_pg/0//cpu//0/1, /default_pg/0//cpu//0/2")]
    assert missing(evs, world=None) == [(1, 1), (2, 1)]
