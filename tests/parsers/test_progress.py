"""Behaviour tests of the progress parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

import pytest

from hanglens.parsers.progress import ProgressParser, set_user_pattern

from .harness import events as read_events
from .harness import has

events = partial(read_events, [ProgressParser])


def test_series_keeps_first_last_and_restarts_only() -> None:
    text = "".join(f"step {n} loss 1.0\n" for n in (1, 2, 3, 4, 1, 2, 9))
    assert [e.get("step") for e in events(text, "progress")] == [1, 4, 1, 9]


def test_user_pattern_is_used_and_removed() -> None:
    try:
        set_user_pattern(r"done (?P<step>\d+) batches")
        assert ProgressParser.user_triggers == (" batches",)
        assert " batches" in ProgressParser.triggers
        assert has(events("done 77 batches"), {"step": 77, "pattern": "user"})
    finally:
        set_user_pattern(None)
    assert " batches" not in ProgressParser.triggers
    assert events("done 77 batches") == []


def test_user_pattern_needs_a_step_group() -> None:
    from hanglens.errors import UsageError

    with pytest.raises(UsageError):
        set_user_pattern(r"done \d+")
    set_user_pattern(None)
