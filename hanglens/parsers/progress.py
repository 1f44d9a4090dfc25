"""Placeholder: replaced by the real progress parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class ProgressParser(Parser):
    name = "progress"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
