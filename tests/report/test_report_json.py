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
