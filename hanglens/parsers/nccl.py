"""Placeholder: replaced by the real nccl parser module."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens.model import Event, LogLine
from hanglens.parsers.base import Parser


class NcclParser(Parser):
    name = "nccl"

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()
