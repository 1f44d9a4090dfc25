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
"""

from __future__ import annotations

import re
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

# What the stand-in answers after compiling: re.Pattern's methods and attributes (not `pattern`).
_FILLED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
           "groupindex", "groups", "flags")


class LazyPattern:
    """A regular expression compiled the first time one of its methods or attributes is read."""

    __slots__ = ("pattern", "_flags", "_compiled", *_FILLED)
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
            compiled = re.compile(self.pattern, self._flags)
            for name in _FILLED:
                setattr(self, name, getattr(compiled, name))
            self._compiled = compiled
            return compiled

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
