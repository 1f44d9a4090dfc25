"""Placeholder: replaced by the real c10d parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class C10dParser(Parser):
    name = "c10d"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
