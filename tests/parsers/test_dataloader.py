"""Behaviour tests of the dataloader parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

import pytest

from hanglens.parsers.dataloader import DataloaderParser

from .harness import events as read_events
from .harness import has

events = partial(read_events, [DataloaderParser])


@pytest.mark.parametrize(("signal_text", "signal", "cause"), [
    ("Killed", "SIGKILL", "killed"), ("Bus error", "SIGBUS", "bus_error"),
    ("Segmentation fault", "SIGSEGV", "segfault"),
    ("Floating point exception", "SIGFPE", "fpe"), ("Aborted", "SIGABRT", "killed"),
    ("Terminated", "SIGTERM", "killed"),
])
def test_signals_are_named_exactly(signal_text: str, signal: str, cause: str) -> None:
    text = f"RuntimeError: DataLoader worker (pid 77) is killed by signal: {signal_text}. "
    assert has(events(text, "dataloader_worker_died"), {"pid": 77, "signal": signal, "cause": cause})


def test_negative_exit_code_and_fractional_timeout() -> None:
    text = "RuntimeError: DataLoader worker (pid 9) exited unexpectedly with exit code -11. Details"
    assert has(events(text), {"exit_code": -11, "cause": "exited"})
    assert has(events("RuntimeError: DataLoader timed out after 2.5 seconds"), {"timeout_ms": 2500})
