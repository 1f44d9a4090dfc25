"""Placeholder: replaced by the real traceback parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class TracebackParser(Parser):
    name = "traceback"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
