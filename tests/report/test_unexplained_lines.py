"""Error lines no rule explained: sorted events are read line by line, others through sets; same answer."""

from __future__ import annotations

import random

from hanglens.document import _unexplained_errors
from hanglens.model import Event, SourceRef, events_in_order


def _events() -> list[Event]:
    def ev(kind: str, path: str, line: int) -> Event:
        return Event(kind=kind, ref=SourceRef(path, line), text=f"{kind} at {path}:{line}", parser="t")

    return [
        ev("error_line", "a.log", 3),                              # alone: unexplained
        ev("error_line", "a.log", 7), ev("hang_detected", "a.log", 7),   # another event on its line
        ev("progress", "a.log", 9),
        ev("error_line", "a.log", 12),                             # cited by a finding
        ev("error_line", "b.log", 3), ev("error_line", "b.log", 3),      # two on one line, both kept
        ev("error_line", "b.log", 5), ev("exception", "b.log", 5),
    ]


def test_error_lines_without_other_events_or_citations() -> None:
    events = _events()
    assert events_in_order(events)   # (the line-by-line path; the shuffled copy takes the sets)
    cited = {SourceRef("a.log", 12)}
    got = [(e.ref.path, e.ref.line) for e in _unexplained_errors(events, cited)]
    assert got == [("a.log", 3), ("b.log", 3), ("b.log", 3)]
    shuffled = list(events)
    random.Random(7).shuffle(shuffled)
    assert not events_in_order(shuffled)
    assert sorted((e.ref.path, e.ref.line) for e in _unexplained_errors(shuffled, cited)) == sorted(got)
