"""Placeholder: replaced by the real cuda parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class CudaParser(Parser):
    name = "cuda"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
