"""Behaviour tests of the store parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.store import StoreParser, timedelta_ms

from .harness import events as read_events
from .harness import has

events = partial(read_events, [StoreParser])


def test_timedelta_forms() -> None:
    assert [timedelta_ms(t) for t in ("0:30:00", "1 day, 0:00:01", "1800s", "600000ms", "junk", None)] == [
        1_800_000, 86_401_000, 1_800_000, 600_000, None, None]


def test_store_wait_timeout_is_a_store_hang_and_connect_timeout_is_not() -> None:
    wait = events("[E socket.cpp:1]  wait timeout after 5000ms, keys: /k1")
    assert has([e for e in wait if e.kind == "hang_detected"], {"detector": "store", "timeout_ms": 5000})
    conn = events("[E socket.cpp:1] [c10d] The client socket has timed out after 90s while trying to "
                  "connect to "
                  "(h, 1).")
    assert [e.kind for e in conn] == ["store_error"]
