"""JSON output: stable, sorted, UTF-8, always valid."""

from __future__ import annotations

import json
from typing import Any

from hanglens.report import render_json


def test_stable_sorted_and_newline_terminated(doc: dict[str, Any]) -> None:
    shuffled = dict(reversed(list(doc.items())))
    a, b = render_json(doc), render_json(shuffled)
    assert a == b and a.endswith("}\n") and json.loads(a) == json.loads(b)
    assert list(json.loads(a)) == sorted(doc)


def test_unicode_kept_and_nan_becomes_null() -> None:
    out = render_json({"text": "naïve — ✓", "x": float("nan"), "y": (1, 2)})
    assert "naïve — ✓" in out
    assert json.loads(out) == {"text": "naïve — ✓", "x": None, "y": [1, 2]}


def test_written_piece_by_piece_is_the_same_text_and_no_copy_when_clean() -> None:
    import io

    from hanglens.report import write_json
    from hanglens.report.jsondoc import _clean

    doc: dict[str, Any] = {"b": [1, 2.5, {"x": None}], "a": {"c": "é", "d": (1, 2)}, "n": list(range(20000))}
    assert _clean(doc) is doc
    out = io.StringIO()
    write_json(doc, out)
    plain = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert out.getvalue() == render_json(doc) == plain
    odd: dict[Any, Any] = {1: float("nan"), "k": [float("inf"), (3,)], "m": {True: 1}}
    out = io.StringIO()
    write_json(odd, out)
    assert out.getvalue() == render_json(odd)
    assert json.loads(out.getvalue()) == {"1": None, "k": [None, [3]], "m": {"True": 1}}
