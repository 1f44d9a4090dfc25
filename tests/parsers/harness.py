"""What every parser test shares: reading text through the Reader, matching events, fuzzing, the real logs."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shared_dir import REAL_LOGS

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, LogLine, Origin, SourceRef
from hanglens.parsers.base import Parser

_ABSENT = "<absent>"  # tells a field that is missing from one that is present and None


def read(parsers: Sequence[type[Parser]], text: str | bytes) -> FileResult:
    """Read `text` as one log file through the full Reader (prefixes, triggers, blocks) with `parsers`."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return Reader("t.log", Origin(), list(parsers)).read(io.BytesIO(data))


def events(parsers: Sequence[type[Parser]], text: str | bytes, kind: str | None = None) -> list[Event]:
    """The events `parsers` produce from `text` through the Reader, only those of `kind` when given."""
    return [e for e in read(parsers, text).events if kind is None or e.kind == kind]


def has(found: Sequence[Event], fields: Mapping[str, Any]) -> bool:
    """True when one event carries every one of `fields` (a None value must be present, not absent)."""
    return any(all(e.get(k, _ABSENT) == v for k, v in fields.items()) for e in found)


def parser_failures(result: FileResult, parser: type[Parser]) -> list[str]:
    """The reader's notes saying `parser` raised (the reader survives a raising parser and says so)."""
    return [n for n in result.notes if n.startswith(f"{parser.name} failed")]


def feed_direct(parser: type[Parser], text: str) -> list[Event]:
    """Feed every line straight to a new `parser` (no reader, no trigger filter), so an exception surfaces."""
    instance = parser()
    out: list[Event] = []
    for i, raw in enumerate(text.split("\n"), 1):
        out.extend(instance.feed(LogLine(text=raw, raw=raw, ref=SourceRef("t.log", i))))
    out.extend(instance.close())
    return out


def undeclared(parser: type[Parser], found: Sequence[Event]) -> list[tuple[str, str, list[str]]]:
    """Events that `parser` did not declare: (parser, kind, undeclared fields) for each, empty when clean."""
    declared = {spec.kind: set(spec.fields) for spec in parser.emits}
    bad = []
    for e in found:
        extra = set(e.fields) - declared.get(e.kind, set())
        if e.parser != parser.name or e.kind not in declared or extra:
            bad.append((e.parser, e.kind, sorted(extra)))
    return bad


def assert_never_breaks(parser: type[Parser], text: str | bytes) -> None:
    """`parser` survives `text` both behind the Reader and fed raw, and emits only what it declares."""
    result = read([parser], text)
    assert parser_failures(result, parser) == []
    assert undeclared(parser, result.events) == []
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    assert undeclared(parser, feed_direct(parser, raw)) == []


def mutate(text: str, cut: int, at: int, junk: str, dup: bool) -> str:
    """`text` with one line maybe duplicated elsewhere, then cut at one place and `junk` spliced in."""
    lines = text.split("\n")
    if dup and lines:
        lines.insert(at % len(lines), lines[cut % len(lines)])
    mutated = "\n".join(lines)
    return mutated[: cut % (len(mutated) + 1)] + junk + mutated[at % (len(mutated) + 1) :]


def real_log_files() -> list[Path]:
    """Every log file of the real-log corpus (dev and holdout cases), empty when the corpus is absent."""
    if not REAL_LOGS.is_dir():
        return []
    return sorted(p for p in REAL_LOGS.glob("*/*/*") if p.is_file() and p.name != "case.yaml")
