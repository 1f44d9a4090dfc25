"""Placeholder: replaced by the real environment parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class EnvironmentParser(Parser):
    name = "environment"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
