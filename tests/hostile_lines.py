"""Adversarial log lines for every built-in parser, built from the parser's own trigger words and examples.

Each line is shaped to make a backtracking regex super-linear: long runs of digits, spaces, brackets or
separators right after a keyword, a keyword repeated across the whole line, and real example lines cut
where their first number starts and continued by thousands of digits. A linear pattern reads each of
them in time proportional to its length; a quadratic one needs minutes (issue 12, item 7).
"""

from __future__ import annotations

from collections.abc import Iterator

from hanglens.parsers.base import Parser

LONG = 40_000  # characters of the main adversarial lines (the 40 KB)
SHORT = 10_000  # the other shapes: a quadratic pattern already needs seconds here
HUGE = 200_000  # one line per parser this long, built from all its trigger words


def _fill(unit: str, size: int) -> str:
    return (unit * (size // max(1, len(unit)) + 1))[:size]


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def trigger_lines(word: str, size: int = LONG, short: int = SHORT) -> Iterator[str]:
    """Lines that start with `word` and continue with a long run of one shape."""
    yield word + " " + _fill("7", size)  # digits after the keyword (cubic in the old step pattern)
    yield _fill(word + " ", size)  # the keyword again and again
    size = short
    yield word + _fill("1", size) + "x"  # digits glued to the keyword, then a failing character
    yield word + _fill(" ", size) + "x"  # spaces where a pattern allows `\s*...\s*`
    yield _fill(word + " 1 ", size)  # keyword and a number, repeated
    yield word + " [" + _fill("12, ", size)  # a printed list that never closes
    yield word + _fill("[", size)  # brackets that never close
    yield word + _fill("(", size)
    yield word + ": " + _fill("a: ", size)  # separators without the value they announce
    yield word + " " + _fill("1.", size)  # version-like dotted numbers without an end
    yield word + " " + _fill("1%|", size)  # progress-bar fragments
    yield word + " " + _fill("a/", size)  # path-like runs


def example_lines(parser: type[Parser], size: int = SHORT) -> Iterator[str]:
    """The parser's own examples cut at their first digit and continued by digits, or repeated."""
    for ex in parser.examples:
        text = _first_line(ex.text)
        cut = next((i for i, ch in enumerate(text) if ch.isdigit()), None)
        if cut is not None:
            yield text[:cut] + _fill("9", size)
            yield text[:cut] + _fill("9", size // 4) + text[cut:]  # one huge number inside a real line
        yield _fill(text + " ", size)


def battery(parser: type[Parser]) -> list[str]:
    """Every adversarial line for `parser` (deduplicated, in a stable order)."""
    lines: list[str] = []
    for word in parser.triggers:
        lines.extend(trigger_lines(word))
    lines.extend(example_lines(parser))
    lines.append(_fill(" ".join(parser.triggers) + " 123 ", HUGE))
    return list(dict.fromkeys(lines))
