"""The document's JSON writer gives the standard library encoder's text byte for byte."""

from __future__ import annotations

import enum
import io
import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hanglens.report.jsondoc import _clean, _encoder, render_json, write_json


class _Shade(str, enum.Enum):
    DARK = "dark"


class _Size(enum.IntEnum):
    BIG = 7


class _Odd:
    def __str__(self) -> str:
        return "odd \u00e9 \"quoted\""


def _reference(doc: Any) -> str:
    return _encoder().encode(_clean(doc)) + "\n"


_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
            | st.text() | st.sampled_from([_Shade.DARK, _Size.BIG, _Odd(), "\x00\x1f\"\\\u2028 tab\t"]))
_DOCS = st.recursive(
    _SCALARS,
    lambda inner: (st.lists(inner, max_size=5) | st.tuples(inner, inner)
                   | st.dictionaries(st.text(max_size=6), inner, max_size=5)),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _DOCS, max_size=6))
def test_same_text_as_the_standard_encoder(doc: dict[str, Any]) -> None:
    want = _reference(doc)
    assert render_json(doc) == want
    out = io.StringIO()
    write_json(doc, out)
    assert out.getvalue() == want


def test_keys_of_other_types_and_values_json_cannot_hold() -> None:
    doc = {"a": {1: "x", 2.5: [], None: [1, 2.0, math.nan]}, "b": [{"z": 1, "y": [math.inf, -0.0]}],
           "c": (1, "t"), "d": [[], {}, [[]]], "e": _Odd()}
    assert render_json(doc) == _reference(doc)
    # (keys as _clean makes them: str() of each; NaN and infinities as null)
    assert json.loads(render_json(doc))["a"] == {"1": "x", "2.5": [], "None": [1, 2.0, None]}
    assert json.loads(render_json(doc))["b"] == [{"y": [None, -0.0], "z": 1}]
