"""Placeholder: replaced by the real wrapper parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class WrapperParser(Parser):
    name = "wrapper"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
