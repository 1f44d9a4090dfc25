"""Placeholder: replaced by the real dataloader parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class DataloaderParser(Parser):
    name = "dataloader"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
