"""Helpers for ingest tests: a tiny parser that marks lines, so tests do not depend on real parsers."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class MarkParser(Parser):
    """Emits `mark` (or `kind=`) for each line with MARK; `key=value` words on the line become fields."""

    name = "mark"
    triggers = ("MARK",)

    def feed(self, line: LogLine) -> Iterable[Event]:
        fields: dict[str, object] = {}
        for word in line.text.split():
            if "=" in word:
                k, v = word.split("=", 1)
                fields[k] = int(v) if v.isdigit() else v
        kind = str(fields.pop("kind", "mark"))
        return [self.event(kind, line, **fields)]


@pytest.fixture
def mark() -> tuple[type[Parser], ...]:
    return (MarkParser,)
