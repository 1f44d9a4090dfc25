"""Pick the lines of a block that hold a parser trigger, in C: newline split by numpy, RE2 match by Arrow.

The block's bytes become an Arrow binary array without a copy (one offset per line, found by numpy),
and one `match_substring_regex` call runs RE2 over every line with the alternation of all trigger
literals (about 10x Python's `re` on a trie of the same literals, and without a subprocess, so the
same on every platform). Only the indices of the lines that hit come back to Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy

_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def re2_literal(literal: str) -> str:
    """`literal` as an RE2 pattern over raw bytes (Arrow runs RE2 on binary arrays as Latin-1)."""
    return "".join(chr(b) if b in _ALNUM else f"\\x{b:02x}" for b in literal.encode("utf-8"))


@lru_cache(maxsize=16)
def alternation(literals: tuple[str, ...]) -> str:
    """An RE2 pattern matching any of `literals` (raw bytes)."""
    return "|".join(re2_literal(lit) for lit in sorted(set(literals)))


@lru_cache(maxsize=16)
def _options(literals: tuple[str, ...]) -> Any:
    import pyarrow.compute as pc

    return pc.MatchSubstringOptions(alternation(literals))


class Rows:
    """The lines of one block: numpy `starts`/`ends` (end without the newline) and the Arrow array."""

    def __init__(self, block: bytes) -> None:
        import pyarrow as pa

        n = len(block)
        nl = numpy.flatnonzero(numpy.frombuffer(block, dtype=numpy.uint8) == 10)
        tail = n > 0 and (len(nl) == 0 or int(nl[-1]) != n - 1)  # a last line without its newline
        count = len(nl) + (1 if tail else 0)
        offsets = numpy.empty(count + 1, dtype=numpy.int64)
        offsets[0] = 0
        offsets[1:len(nl) + 1] = nl + 1
        if tail:
            offsets[-1] = n
        self.count = count
        self.block = block
        self.starts = offsets[:-1]
        self.ends = offsets[1:] - 1  # the newline's offset
        if tail:
            self.ends[-1] = n
        # Each value keeps its newline: no trigger holds one, so the match is the same.
        self.array = pa.LargeBinaryArray.from_buffers(pa.large_binary(), count,
                                                      [None, pa.py_buffer(offsets), pa.py_buffer(block)])

    def line(self, i: int) -> bytes:
        """Line `i` without its newline."""
        return self.block[int(self.starts[i]):int(self.ends[i])]

    def hits(self, literals: Sequence[str], among: numpy.ndarray | None = None) -> numpy.ndarray:
        """Indices of the lines (of `among`, when given) holding any of `literals`, ascending."""
        import pyarrow.compute as pc

        lits = tuple(sorted(set(literals)))
        if not lits or self.count == 0:
            return numpy.zeros(0, dtype=numpy.int64)
        arr = self.array if among is None else self.subset(among)
        mask = pc.call_function("match_substring_regex", [arr], _options(lits))
        picked = true_at(mask)
        return picked if among is None else among[picked]

    def subset(self, among: numpy.ndarray) -> Any:
        """The Arrow array of the lines `among` (each value with its newline)."""
        return self.array.take(index_array(among))


# Arrays are built from buffers: `pa.array` would import pandas (40 MB in every reader process).
def index_array(index: numpy.ndarray) -> Any:
    """An Arrow int64 array of `index`."""
    import pyarrow as pa

    values = numpy.ascontiguousarray(index, dtype=numpy.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def matching(arr: Any, pattern: str) -> numpy.ndarray:
    """A numpy bool per value of `arr`: does RE2 `pattern` match in it."""
    import pyarrow.compute as pc

    mask = pc.match_substring_regex(arr, pattern)
    out = numpy.zeros(len(arr), dtype=bool)
    out[true_at(mask)] = True
    return out


def ints(arr: Any) -> numpy.ndarray:
    """The values of a null-free binary array of ASCII digits (at most 18 each) as int64."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(arr) == 0:
        return numpy.zeros(0, dtype=numpy.int64)
    return _int64_values(pc.cast(pc.cast(arr, pa.large_string()), pa.int64()))


def release_arrow_memory() -> None:
    """Give the memory Arrow's pool holds unused back to the system."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def true_at(mask: Any) -> numpy.ndarray:
    """Indices of the true values of a null-free Arrow boolean array, unpacked from its bitmap.

    (`to_numpy` on a boolean array goes through pandas, which would cost every reader process 40 MB.)
    """
    n, off = len(mask), mask.offset
    bits = numpy.frombuffer(mask.buffers()[1], dtype=numpy.uint8)
    flags = numpy.unpackbits(bits, count=off + n, bitorder="little")[off:]
    return numpy.flatnonzero(flags)


_STAMP_DIGITS = numpy.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
_STAMP_POWERS = 10 ** numpy.arange(13, -1, -1, dtype=numpy.int64)


def offsets_of(arr: Any) -> numpy.ndarray:
    """int64 positions, one per value, of a null-free int32/int64 Arrow array (as `find_substring_regex`
    gives them)."""
    import pyarrow as pa

    return _int64_values(arr if arr.type == pa.int64() else arr.cast(pa.int64()))


def _int64_values(arr: Any) -> numpy.ndarray:
    """The values of a null-free Arrow int64 array as a numpy view (no copy, no pandas)."""
    return numpy.frombuffer(arr.buffers()[1], dtype=numpy.int64, count=len(arr) + arr.offset)[arr.offset:]


class Digits:
    """Fixed-place reads of ASCII digits in a block's bytes (numpy, one row per position)."""

    def __init__(self, block: bytes) -> None:
        self.bytes = numpy.frombuffer(block, dtype=numpy.uint8)  # (callers read inside lines only)

    def stamps(self, at: numpy.ndarray) -> numpy.ndarray:
        """`YYYY-MM-DD hh:mm:ss` at each of `at` (known to be one) as the int64 `YYYYMMDDhhmmss`."""
        chars = self.bytes[at[:, None] + _STAMP_DIGITS].astype(numpy.int64) - 48
        out: numpy.ndarray = chars @ _STAMP_POWERS
        return out

    def run(self, at: numpy.ndarray, width: int) -> tuple[numpy.ndarray, numpy.ndarray]:
        """(value, length) of the run of at most `width` digits starting at each of `at` (the run may be
        longer: then length is `width`)."""
        chars = self.bytes[at[:, None] + numpy.arange(width)].astype(numpy.int64) - 48
        digit = (chars >= 0) & (chars <= 9)
        length = numpy.where(digit.all(axis=1), width, numpy.argmin(digit, axis=1))
        value = numpy.zeros(len(at), dtype=numpy.int64)
        for k in range(width):
            value = numpy.where(k < length, value * 10 + chars[:, k], value)
        return value, length
