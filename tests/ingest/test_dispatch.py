"""One dispatch per segment names exactly the parsers an `in` test per trigger would name."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hanglens.ingest.dispatch import Dispatch
from hanglens.parsers import PARSERS

TRIGGERS = [tuple(p.triggers) for p in PARSERS]
LITERALS = sorted({t for ts in TRIGGERS for t in ts})
DISPATCH = Dispatch(TRIGGERS)


def _plain(text: str) -> int:
    return sum(1 << i for i, ts in enumerate(TRIGGERS) if any(t in text for t in ts))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LITERALS), st.text(alphabet="".join(sorted(set("".join(LITERALS))))
                                                              + " x", max_size=6)), max_size=8),
       st.integers(0, 40))
def test_mask_is_the_set_of_parsers_with_a_trigger_in_the_text(parts: list[str], cut: int) -> None:
    text = "".join(parts)
    for t in (text, text[cut:], text[:cut]):
        assert DISPATCH.mask(t) == _plain(t)


def test_overlapping_and_nested_triggers() -> None:
    # `NCCL version` holds `ersion` (environment); `CUDA out of memory` runs into `of memory: Kill`.
    for text in ("NCCL version 2.21.5", "CUDA out of memory: Killed process", "Iteration 5",
                 "ChildFailedError:", "plain text", ""):
        assert DISPATCH.mask(text) == _plain(text), text
    assert Dispatch([()]).mask("anything") == 0


PIECES = ["0", "7", "12", "9.5", "é", "\udc80", " "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LITERALS), st.sampled_from(PIECES)),
                max_size=10).map("".join))
def test_masks_remembered_by_shape_are_the_searched_ones(text: str) -> None:
    """`mask` remembers masks by the text with its digits zeroed: the same as the search, first and later."""
    assert DISPATCH.shapes is not None  # (no built-in trigger holds a digit)
    assert DISPATCH.mask(text) == DISPATCH.find(text) == _plain(text)
    assert DISPATCH.mask(text) == _plain(text)
    shifted = text.translate(str.maketrans("0123456789", "1234567890"))
    assert DISPATCH.mask(shifted) == _plain(shifted)
    digits = Dispatch([("e1", "x"), ("Error",)])
    assert digits.shapes is None
    assert digits.mask(text) == ("e1" in text or "x" in text) | ("Error" in text) << 1


class _CountingText(str):
    """A text that counts the `in` tests made on it (each one a scan of the whole text)."""

    scans = 0

    def __contains__(self, other: object) -> bool:
        type(self).scans += 1
        return super().__contains__(other)  # type: ignore[operator]


def test_a_literal_repeated_across_a_line_checks_its_overlapping_literals_once() -> None:
    """`Error` overlaps `or: ` (a literal starting inside it and running past its end), which is checked with
    `in`, a scan of the whole text: once per distinct literal found, not once per occurrence (a 100 KB line
    of `Error ` made that quadratic, about 15 s)."""
    d = Dispatch([("Error",), ("or: x",)])
    text = _CountingText("Error " * 20_000)
    _CountingText.scans = 0
    assert d.find(text) == 0b01
    assert _CountingText.scans <= 1
