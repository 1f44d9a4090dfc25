"""Behaviour tests of the catchall parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.catchall import CatchallParser, template_of

from .harness import events as read_events

events = partial(read_events, [CatchallParser])


def test_template_masks_each_kind() -> None:
    assert template_of("Error at 0xdeadbeef in /opt/x/y.so from [fe80::1]:29500 and 10.1.2.3, n=42 'q'") == (
        "Error at <hex> in <path> from <ip> and <ip>, n=<num> <str>")


def test_template_is_bounded_and_repeats_are_capped() -> None:
    assert len(template_of("Error " + "word " * 1000)) <= 200
    found = events("".join(f"FAILED item {i}\n" for i in range(200)), "error_line")
    assert len(found) == 50
