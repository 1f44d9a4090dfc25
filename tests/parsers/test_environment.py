"""Behaviour tests of the environment parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.environment import EnvironmentParser

from .harness import events as read_events

events = partial(read_events, [EnvironmentParser])


def test_rank_echo_fields_are_ints_and_unexpanded_values_are_ignored() -> None:
    (ev,) = events("RANK=2 WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=0", "world_info")
    assert dict(ev.fields) == {"global_rank": 2, "local_rank": 0, "stated_rank": 2}
