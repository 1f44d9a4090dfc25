"""The library facade: every CLI command is one call into this module."""

from __future__ import annotations

import os
from collections.abc import Sequence

from hanglens.ingest import Ingested, read_inputs

PathLike = str | os.PathLike[str]


def read(paths: Sequence[PathLike], *, jobs: int | None = None) -> Ingested:
    """Discover and read every log under `paths` into rank-attributed events."""
    return read_inputs(paths, jobs=jobs)
