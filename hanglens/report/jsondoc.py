"""The analysis document as stable JSON: sorted keys, UTF-8 kept, one trailing newline."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from itertools import islice
from json.encoder import encode_basestring
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
        # (plain values, most of them, are not passed to _clean() one by one)
        changed = {k: c for k, v in value.items()
                   if not (v is None or (tv := type(v)) is str or tv is int or tv is bool)
                   and (c := _clean(v)) is not v}
        if not changed and all(type(k) is str for k in value):
            return value
        return {str(k): changed.get(k, v) for k, v in value.items()}
    if t is list:
        items = [v if v is None or (tv := type(v)) is str or tv is int or tv is bool else _clean(v)
                 for v in value]
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
    """The encoder whose text `_chunks` writes (the standard library's, pure Python when it indents)."""
    return json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False, default=str)


_INDENT = " "


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == math.inf:
        return "Infinity"
    if o == -math.inf:
        return "-Infinity"
    return float.__repr__(o)


def _scalar(o: Any) -> str | None:
    """`o` as `_encoder()` writes it when it is not a container (else None); same tests in the same order."""
    if isinstance(o, str):
        return encode_basestring(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return _float(o)
    return None


def _key(k: Any) -> str:
    """A dict key as the standard encoder writes it: a string, or a number, bool or None as its scalar text
    in quotes."""
    if isinstance(k, str):
        return encode_basestring(k)
    if k is None or isinstance(k, (int, float)):  # (bool is an int)
        return encode_basestring(_scalar(k) or "")
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def _chunks(o: Any, level: int = 0) -> Iterator[str]:
    """The text of `_encoder().iterencode(o)` (byte for byte), in other chunks: a list or dict of plain
    values is one string made at once (the standard encoder yields each value, key and separator apart;
    a big job's document has one such dict per rank in several sections)."""
    s = _scalar(o)
    if s is not None:
        yield s
    elif isinstance(o, (list, tuple)):
        yield from _list(o, level)
    elif isinstance(o, dict):
        yield from _dict(o, level)
    else:
        yield from _chunks(str(o), level)   # (default=str)


def _list(lst: list[Any] | tuple[Any, ...], level: int) -> Iterator[str]:
    if not lst:
        yield "[]"
        return
    level += 1
    nl = "\n" + _INDENT * level
    end = "\n" + _INDENT * (level - 1) + "]"
    parts = [_scalar(v) for v in lst]
    plain = [p for p in parts if p is not None]
    if len(plain) == len(parts):
        yield "[" + nl + ("," + nl).join(plain) + end
        return
    lead = "[" + nl
    for v, p in zip(lst, parts, strict=True):
        if p is not None:
            yield lead + p
        else:
            yield lead
            yield from _chunks(v, level)
        lead = "," + nl
    yield end


def _dict(dct: dict[Any, Any], level: int) -> Iterator[str]:
    if not dct:
        yield "{}"
        return
    level += 1
    nl = "\n" + _INDENT * level
    end = "\n" + _INDENT * (level - 1) + "}"
    items = sorted(dct.items())
    parts = [_scalar(v) for _, v in items]
    if all(p is not None for p in parts):
        pairs = [_key(k) + ": " + str(p) for (k, _), p in zip(items, parts, strict=True)]
        yield "{" + nl + ("," + nl).join(pairs) + end
        return
    lead = "{" + nl
    for (k, v), p in zip(items, parts, strict=True):
        if p is not None:
            yield lead + _key(k) + ": " + p
        else:
            yield lead + _key(k) + ": "
            yield from _chunks(v, level)
        lead = "," + nl
    yield end


def render_json(doc: Mapping[str, Any]) -> str:
    """Byte-stable JSON of `doc` (the same document always gives the same text)."""
    return "".join(_chunks(_clean(doc))) + "\n"


def write_json(doc: Mapping[str, Any], out: TextIO) -> None:
    """`render_json(doc)` written to `out` piece by piece (the same text, never held whole)."""
    chunks = _chunks(_clean(doc))
    while batch := list(islice(chunks, _CHUNKS_PER_WRITE)):
        out.write("".join(batch))
    out.write("\n")
