"""The analysis document as stable JSON: sorted keys, UTF-8 kept, one trailing newline."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from itertools import islice
from typing import Any, TextIO

# Chunks of the encoder joined per write: the text of a big job (tens of MB, millions of chunks) is never
# held whole, nor its list of chunks.
_CHUNKS_PER_WRITE = 8192


def _clean(value: Any) -> Any:
    """`value` as JSON can hold it: NaN/inf become None, mappings plain dicts with string keys.

    What needs no change is returned as it is (not copied): the document of a big job is large.
    """
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        changed = {k: c for k, v in value.items() if (c := _clean(v)) is not v}
        if not changed and all(type(k) is str for k in value):
            return value
        return {str(k): changed.get(k, v) for k, v in value.items()}
    if t is list:
        items = [_clean(v) for v in value]
        return value if all(c is v for c, v in zip(items, value, strict=True)) else items
    # NaN/inf are not JSON; a float that slipped through from a table must not make the output invalid
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # (a tuple is written as a list either way)
        items = [_clean(v) for v in value]
        return value if all(c is v for c, v in zip(items, value, strict=True)) else items
    return value


def _encoder() -> json.JSONEncoder:
    return json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False, default=str)


def render_json(doc: Mapping[str, Any]) -> str:
    """Byte-stable JSON of `doc` (the same document always gives the same text)."""
    return _encoder().encode(_clean(doc)) + "\n"


def write_json(doc: Mapping[str, Any], out: TextIO) -> None:
    """`render_json(doc)` written to `out` piece by piece (the same text, never held whole)."""
    chunks = _encoder().iterencode(_clean(doc))
    while batch := list(islice(chunks, _CHUNKS_PER_WRITE)):
        out.write("".join(batch))
    out.write("\n")
