"""Which parsers' triggers a line holds, found with one regex call instead of a search per parser.

One `findall` of a prefix trie of every trigger literal (longest literal at each start) lists the
literals the line holds, left to right without overlap. A literal hidden by a found one is either inside
it (its parsers are folded into the found literal's mask beforehand) or starts inside it and runs past
its end; those few candidates are checked with `in`. The mask is therefore exactly the set of parsers
with a trigger in the line, as a per-parser `in` test over every trigger would give.

Masks are remembered per shape of text (its UTF-8 bytes with every digit written as `0`): a literal without
a digit occurs at the same places in a text and in its shape, so texts of one shape hold the same
literals. Chatter repeats its shapes with other numbers (ranks, ids, stamps), so most lines cost one
`bytes.translate` and a dict lookup instead of the trie search. Triggers holding a digit turn this off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from hanglens.lazyre import compile_now


def trie_regex(words: Iterable[str], longest: bool = True) -> str:
    """A regex matching any of `words`, factored by common prefix (one branch per distinct next char).

    `longest`: at each start the longest word that starts there (a word that ends may go on); else the
    first word to end, which is all a test for "holds any of them" needs.
    """
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:  # type: ignore[type-arg]
        if "" in node and not longest:
            return ""
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:  # a word ends here; a longer one may go on (greedy, so the longest wins)
            return "(?:" + body + ")?"
        return body

    return emit(root)


class Dispatch:
    """The parsers (bit i = parser i) whose trigger literals a text holds."""

    def __init__(self, triggers: Sequence[tuple[str, ...]]) -> None:
        self.triggers = tuple(tuple(ts) for ts in triggers)
        lits = sorted({t for ts in triggers for t in ts if t})
        own = {lit: 0 for lit in lits}
        for i, ts in enumerate(triggers):
            for t in ts:
                if t:
                    own[t] |= 1 << i
        self.closure = {a: _or(own[b] for b in lits if b in a) for a in lits}
        starting: dict[str, set[str]] = {}  # proper prefix -> the literals that start with it
        for b in lits:
            for k in range(1, len(b)):
                starting.setdefault(b[:k], set()).add(b)
        self.overlaps = {a: tuple(sorted({b for k in range(1, len(a)) for b in starting.get(a[-k:], ())
                                          if b not in a})) for a in lits}
        self.pattern = compile_now(trie_regex(lits)) if lits else None
        self.shapes: dict[bytes, int] | None = None if any(
            ch in "0123456789" for lit in lits for ch in lit) else {}

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its triggers (a reader sent between processes): the receiver's own, memo and all."""
        return (dispatch_for, (self.triggers,))

    def mask(self, text: str) -> int:
        shapes = self.shapes
        if shapes is None:
            return self.find(text)
        shape = text.encode("utf-8", "surrogatepass").translate(ZERO_DIGITS)
        bits = shapes.get(shape)
        if bits is None:
            if len(shapes) >= MAX_SHAPES:
                shapes.clear()
            bits = shapes[shape] = self.find(text)
        return bits

    def find(self, text: str) -> int:
        """The mask, found by searching `text` (`mask` without the memo)."""
        if self.pattern is None:
            return 0
        bits = 0
        closure, overlaps = self.closure, self.overlaps
        # (each literal once: a line repeating one literal thousands of times would otherwise search the
        # whole text for its overlapping literals at every occurrence, quadratic in the line's length)
        for lit in set(self.pattern.findall(text)):
            bits |= closure[lit]
            for other in overlaps[lit]:
                if other in text:
                    bits |= closure[other]
        return bits


# UTF-8 bytes of a digit are that ASCII byte and no other character's bytes hold one, so these bytes are the
# shape's UTF-8 (`str.translate` is several times slower).
ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
MAX_SHAPES = 1 << 13  # shapes remembered per trigger set (cleared when full)


def _or(values: Iterable[int]) -> int:
    out = 0
    for v in values:
        out |= v
    return out


@lru_cache(maxsize=16)
def dispatch_for(triggers: tuple[tuple[str, ...], ...]) -> Dispatch:
    return Dispatch(triggers)
