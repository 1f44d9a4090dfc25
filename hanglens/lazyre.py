"""`re` with module-level patterns compiled on first use, so importing the parsers compiles none of them.

The reader and the parsers hold a few hundred patterns; compiling them all when `hanglens.api` was imported
took about a third of a small analysis's own time, though a run uses only the families its logs hold.
Modules that hold many patterns import this module as `re` (`from hanglens import lazyre as re`): their
`re.compile(...)` lines stay as they are, everything else is the standard `re`.

`compile` returns a stand-in typed as `re.Pattern`: the first call of any pattern method compiles it once
and stores the compiled pattern's bound methods in the stand-in's slots, so every later call costs what
a call on the compiled pattern costs. `pattern` is there without compiling (patterns built from others
read it). Not a `re.Pattern` instance: pass `.compiled()` to code that checks the type, and tell patterns
apart by what was searched, not by `match.re is NAME_RE` (`match.re` is the compiled pattern).

A pattern that does not start with a literal but cannot match without one of a few literals (`required`:
`(?<!\\w)PyTorch version: ...` needs `PyTorch version: `) searches only strings that hold one of them:
`search`, `finditer`, `findall`, `sub` and `subn` first test them with `in` (the substring search of
`str`, far faster than `re` trying the pattern at every position), and answer "no match" without `re`
when none is there. The answer is the same either way: every match holds one of those literals.
"""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Callable, Iterator
from re import (
    ASCII,
    DOTALL,
    IGNORECASE,
    LOCALE,
    MULTILINE,
    UNICODE,
    VERBOSE,
    A,
    I,
    L,
    M,
    Match,
    Pattern,
    RegexFlag,
    S,
    U,
    X,
    error,
    escape,
    findall,
    finditer,
    fullmatch,
    match,
    purge,
    search,
    split,
    sub,
    subn,
)
from typing import Any, AnyStr, cast

__all__ = [
    "ASCII", "DOTALL", "IGNORECASE", "LOCALE", "MULTILINE", "UNICODE", "VERBOSE", "A", "I", "L",
    "LazyPattern", "M", "Match", "Pattern", "RegexFlag", "S", "U", "X", "compile", "error", "escape",
    "findall", "finditer", "fullmatch", "match", "purge", "search", "split", "sub", "subn",
]

# Methods that answer "no match" without `re` once the pattern's literal gate is installed.
_GATED = ("search", "findall", "finditer", "sub", "subn")
# Calls of a pattern's gated methods before its literal gate is computed.
GATE_AFTER = 256
# What the stand-in answers after compiling: re.Pattern's methods and attributes (not `pattern`).
_FILLED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
           "groupindex", "groups", "flags")


class LazyPattern:
    """A regular expression compiled the first time one of its methods or attributes is read."""

    __slots__ = ("pattern", "_flags", "_compiled", "_calls", *_FILLED)
    pattern: str | bytes
    _flags: int
    _compiled: re.Pattern[Any]

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def compiled(self) -> re.Pattern[Any]:
        """The compiled pattern (compiled now, once, if it was not yet)."""
        try:
            return self._compiled
        except AttributeError:
            compiled = precompiled(self.pattern, self._flags) or re.compile(self.pattern, self._flags)
            for name in _FILLED:
                setattr(self, name, getattr(compiled, name))
            # The literal gate costs a second parse of the pattern: worth it for a pattern that reads many
            # strings, not for one a short log calls a few times. The first `GATE_AFTER` calls are counted.
            self._calls = 0
            for name in _GATED:
                setattr(self, name, self._counting(name, getattr(compiled, name)))
            self._compiled = compiled
            return compiled

    def _counting(self, name: str, plain: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self._calls += 1
            if self._calls < GATE_AFTER:
                return plain(*args, **kwargs)
            if self._calls == GATE_AFTER:
                self._install_gate()  # once: the count is shared by the five methods
            # A caller that kept this counting method (`search = rx.search`, `map(rx.search, lines)`)
            # reaches the installed one through it, without computing the gate again.
            return getattr(self, name)(*args, **kwargs)

        return call

    def _install_gate(self) -> None:
        """Replace the counting methods by the gated ones (`gate_literals`), or by the pattern's own."""
        compiled = self._compiled
        gate = gate_literals(compiled)
        if gate:
            self.search, self.findall, self.finditer, self.sub, self.subn = _gated(compiled, *gate)
        else:
            for name in _GATED:
                setattr(self, name, getattr(compiled, name))

    def __getattr__(self, name: str) -> Any:
        # Called only for a slot not filled yet (or a name the class lacks): compile, then answer.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (LazyPattern, (self.pattern, self._flags))

    def __repr__(self) -> str:
        return f"lazyre.compile({self.pattern!r}, {self._flags})"


def compile(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return cast("re.Pattern[AnyStr]", LazyPattern(pattern, int(flags)))


# -- compiled code made at build time (tools/precompile_patterns.py writes hanglens/_patterns.py) ------------
try:  # (Python 3.11+; `sre_compile` before)
    import _sre
    from re import _compiler as _sre_compile  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import _sre  # type: ignore[no-redef,unused-ignore]
    import sre_compile as _sre_compile  # type: ignore[no-redef,unused-ignore]

_CODE_TYPE = "I"  # an unsigned int of _sre.CODESIZE bytes (4) per code word
_TABLE: dict[tuple[Any, int], tuple[Any, ...]] | None = None


def code_stamp() -> tuple[Any, ...]:
    """What the compiled code of a pattern depends on beyond its text and flags: the interpreter's engine."""
    return (sys.implementation.name, tuple(sys.version_info[:2]), _sre.MAGIC, _sre.CODESIZE,
            array(_CODE_TYPE).itemsize, sys.byteorder)


def compile_parts(pattern: str | bytes, flags: int = 0) -> tuple[Any, ...]:
    """What `re.compile(pattern, flags)` hands `_sre.compile` after the pattern (as `re._compiler.compile`
    makes it): the final flags, the code (as bytes), the number of groups less one, the group index and its
    inverse."""
    parsed = _sre_parse.parse(pattern, flags)
    code = _sre_compile._code(parsed, flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    words = array(_CODE_TYPE, code).tobytes()
    return flags | parsed.state.flags, words, parsed.state.groups - 1, groupindex, tuple(indexgroup)


def _table() -> dict[tuple[Any, int], tuple[Any, ...]]:
    global _TABLE
    if _TABLE is None:
        _TABLE = {}
        try:
            from hanglens import _patterns
        except ImportError:  # pragma: no cover (a tree without the generated module)
            return _TABLE
        if code_stamp() == _patterns.STAMP:
            import base64
            import marshal
            import zlib

            _TABLE = marshal.loads(zlib.decompress(base64.b64decode(_patterns.DATA)))
    return _TABLE


def precompiled(pattern: str | bytes, flags: int = 0) -> re.Pattern[Any] | None:
    """`re.compile(pattern, flags)` from the code hanglens/_patterns.py holds for it (no parse, no compile),
    or None when it holds none for this pattern on this interpreter."""
    parts = _table().get((pattern, flags))
    if parts is None:
        return None
    final, code, groups, groupindex, indexgroup = parts
    return cast("re.Pattern[Any]", _sre.compile(pattern, final, array(_CODE_TYPE, code).tolist(), groups,
                                                groupindex, indexgroup))


def compile_now(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, from the code made at build time when there is some."""
    return precompiled(pattern, flags) or re.compile(pattern, flags)


# -- literal gates ------------------------------------------------------------------------------------------
try:  # (Python 3.11+; `sre_parse` before, the same parser)
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse  # type: ignore[no-redef,unused-ignore]

MAX_GATE_LITERALS = 8  # a pattern needing one of more literals than this is not gated
MIN_GATE_CHARS = 2     # nor one whose shortest needed literal is shorter (too common to skip much)
MAX_GATE_SETS = 3      # sets tested per string (every match holds a literal of each)

_Needs = frozenset[tuple[int, ...]]


def required(pattern: str | bytes, flags: int = 0, fold: bool = False) -> tuple[Any, ...] | None:
    """Literals (str or bytes, as `pattern`) of which every match of `pattern` holds at least one, or None
    when no such set of at most MAX_GATE_LITERALS literals of MIN_GATE_CHARS or more is found.

    Read from the parsed pattern: a run of case-sensitive literal characters in a sequence is needed by
    the sequence, and so is what any one item it must match needs (a group, a repeat of at least one, one
    literal of every branch); lookarounds, classes, case-insensitive parts and back references need
    nothing here. Of the needed sets the one whose shortest literal is longest is kept.

    `fold`: literals that an ASCII string lowered (`str.lower`) holds whenever the pattern matches it: every
    ASCII literal character counts, lowered, case-insensitive or not (a non-ASCII one ends a run).
    """
    parsed = _parse(pattern, flags)
    found = _all_needs(*parsed, fold) if parsed else []
    return _as_literals(found[0], isinstance(pattern, bytes)) if found else None


def _parse(pattern: str | bytes, flags: int) -> tuple[list[Any], int] | None:
    """The items of the parsed pattern and its flags (inline ones included), None when it does not parse."""
    try:
        parsed = _sre_parse.parse(pattern, flags)
    except (re.error, TypeError, ValueError, RecursionError):
        return None
    return list(parsed), parsed.state.flags


def _score(c: _Needs) -> tuple[int, int]:
    return -min(len(r) for r in c), len(c)  # (the longest shortest literal, then the fewest literals, first)


def _all_needs(items: list[Any], flags: int, fold: bool) -> list[_Needs]:
    """Sets of literals each of which every match holds one of (all of them hold together), best first, at
    most MAX_GATE_SETS of them, each of at most MAX_GATE_LITERALS literals of MIN_GATE_CHARS or more."""
    candidates: list[_Needs] = []
    run: list[int] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            if fold and av < 128:
                run.append(ord(chr(av).lower()))
                continue
            if not fold and not flags & re.IGNORECASE:
                run.append(av)
                continue
        if run:
            candidates.append(frozenset((tuple(run),)))
            run = []
        if name == "SUBPATTERN":
            _, add, remove, sub = av
            candidates.extend(_all_needs(list(sub), (flags | add) & ~remove, fold))
        elif name == "ATOMIC_GROUP":
            candidates.extend(_all_needs(list(av), flags, fold))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = av
            if low >= 1:
                candidates.extend(_all_needs(list(sub), flags, fold))
        elif name == "BRANCH":
            # A match matches one alternative, so it holds one literal of the union of one set per
            # alternative: the union of their best sets, of their second best (or best), and so on.
            alts = [_all_needs(list(alt), flags, fold) for alt in av[1]]
            if all(alts):
                for k in range(max(len(a) for a in alts)):
                    candidates.append(frozenset().union(*(a[min(k, len(a) - 1)] for a in alts)))
    if run:
        candidates.append(frozenset((tuple(run),)))
    good = sorted(dict.fromkeys(c for c in candidates  # (distinct, in order: ties keep it)
                                if len(c) <= MAX_GATE_LITERALS and min(len(r) for r in c) >= MIN_GATE_CHARS),
                  key=_score)
    return good[:MAX_GATE_SETS]


def gate_literals(compiled: re.Pattern[Any]) -> tuple[tuple[tuple[Any, ...], ...], bool] | None:
    """The literal sets (`_all_needs`) of a compiled pattern worth gating (one not starting with a
    case-sensitive literal: `re` finds such a pattern's first literal quickly itself), and whether they are
    to be looked for in the lowered string (`fold`: the pattern needs no case-sensitive set). A string
    can match only when it holds a literal of every set. None: no gate."""
    pattern = compiled.pattern
    if not isinstance(pattern, (str, bytes)) or compiled.flags & re.LOCALE:
        return None
    parsed = _parse(pattern, compiled.flags)
    if parsed is None:
        return None
    items, flags = parsed
    if items and str(items[0][0]) == "LITERAL" and not flags & re.IGNORECASE:
        return None
    for fold in (False, True):
        found = _all_needs(items, flags, fold)
        if found:
            return tuple(_as_literals(c, isinstance(pattern, bytes)) for c in found), fold
    return None


def _as_literals(needs: _Needs, as_bytes: bool) -> tuple[Any, ...]:
    if as_bytes:
        return tuple(sorted(bytes(run) for run in needs))
    return tuple(sorted("".join(map(chr, run)) for run in needs))


def _gated(compiled: re.Pattern[Any], sets: tuple[tuple[Any, ...], ...], fold: bool
           ) -> tuple[Callable[..., Any], ...]:
    """`search`, `findall`, `finditer`, `sub`, `subn` of `compiled` that answer without `re` when the
    string (a `str` or `bytes`, as the pattern) lacks every literal of one of `sets` (`fold`: an ASCII
    string lowered lacks them; a string with other characters is searched)."""
    kind = type(sets[0][0])
    search, findall, finditer, sub, subn = (compiled.search, compiled.findall, compiled.finditer,
                                            compiled.sub, compiled.subn)
    if fold:
        def absent(string: Any) -> bool:
            if type(string) is not kind or not string.isascii():
                return False
            has = string.lower().__contains__
            return not all(any(map(has, lits)) for lits in sets)

        def g_search(string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any:
            return None if absent(string) else search(string, pos, endpos)
    elif len(sets) == 1 and len(sets[0]) == 1:
        lit = sets[0][0]

        def absent(string: Any) -> bool:
            return type(string) is kind and lit not in string

        def g_search(string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any:
            if type(string) is kind and lit not in string:  # (`absent`, inline: the hot one)
                return None
            return search(string, pos, endpos)
    else:
        def absent(string: Any) -> bool:
            if type(string) is not kind:
                return False
            has = string.__contains__
            return not all(any(map(has, lits)) for lits in sets)

        def g_search(string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any:
            return None if absent(string) else search(string, pos, endpos)

    def g_findall(string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Any:
        return [] if absent(string) else findall(string, pos, endpos)

    def g_finditer(string: Any, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[Any]:
        return iter(()) if absent(string) else finditer(string, pos, endpos)

    def g_sub(repl: Any, string: Any, count: int = 0) -> Any:
        return string if absent(string) else sub(repl, string, count=count)

    def g_subn(repl: Any, string: Any, count: int = 0) -> Any:
        return (string, 0) if absent(string) else subn(repl, string, count=count)

    return g_search, g_findall, g_finditer, g_sub, g_subn
