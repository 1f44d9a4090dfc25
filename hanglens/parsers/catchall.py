"""Placeholder: replaced by the real catchall parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class CatchallParser(Parser):
    name = "catchall"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
