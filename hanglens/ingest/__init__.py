"""Find every log in the given paths, read each into events, attribute ranks and hosts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hanglens.errors import InputError
from hanglens.ingest.reader import Reader, compile_triggers
from hanglens.model import Event, InputFile, Origin, Skipped
from hanglens.parsers import PARSERS


@dataclass
class Ingested:
    """Everything read from the inputs: events sorted by (path, line), files read, inputs skipped."""

    events: list[Event] = field(default_factory=list)
    files: list[InputFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def read_inputs(paths: Sequence[str | os.PathLike[str]], *, jobs: int | None = None) -> Ingested:
    """Read `paths` (files or folders). Minimal first version: plain files only."""
    out = Ingested()
    triggers = compile_triggers(PARSERS)
    for p in paths:
        root = Path(p)
        if not root.exists():
            raise InputError("no such file or folder", path=str(p))
        files = [root] if root.is_file() else sorted(x for x in root.rglob("*") if x.is_file())
        for f in files:
            rel = f.name if root.is_file() else str(f.relative_to(root))
            with open(f, "rb") as fh:
                res = Reader(rel, Origin(), PARSERS, triggers).read(fh)
            out.events.extend(res.events)
            out.files.append(InputFile(rel, f.stat().st_size, res.lines, Origin(),
                                       tuple(sorted(res.ranks)), tuple(sorted(res.hosts)), len(res.events)))
    out.events.sort(key=lambda e: (e.ref.path, e.ref.line, e.kind, e.parser))
    return out
