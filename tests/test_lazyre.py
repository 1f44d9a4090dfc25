"""The literal gates of `hanglens.lazyre`: a gated pattern answers exactly what `re` answers.

A pattern that needs one of a few literals (`required`) answers "no match" without `re` when the string
holds none of them. These tests check the literals found on hand-made patterns, compare the gated methods
with the compiled pattern's on every built-in pattern over the parsers' own lines, and compare them on
random patterns and strings (hypothesis).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hanglens
from hanglens import lazyre
from hanglens.lazyre import LazyPattern, gate_literals, required
from hanglens.parsers import PARSERS


@pytest.mark.parametrize(("pattern", "lits"), [
    (r"(?<![\w])PyTorch version: v?(?P<v>\d+)", ("PyTorch version: ",)),
    (r"(?:[Tt]orch|PyTorch) version\s*[:=]?", (" version",)),
    (r"\d+ (?:Watchdog|watchdog) caught", ("Watchdog", "watchdog")),
    (r"x?yz", ("yz",)),
    (r"(?:foo)?bar", ("bar",)),
    (r"(ab)*cd", ("cd",)),
    (r"(?:ab){2}", ("ab",)),
    (r"(?:abc)+\d", ("abc",)),
    (r"(?>abc)\d", ("abc",)),
    (rb"\d\[rank(\d+)\]:", (b"[rank",)),
])
def test_required_literals(pattern: str, lits: tuple[Any, ...]) -> None:
    assert required(pattern) == lits


@pytest.mark.parametrize("pattern", [
    r"a|bc",                # a one-character branch
    r"(?i)hello world",     # case-insensitive: no case-sensitive literal
    r"(?:foo)?\d+",         # optional
    r"(?:abc|\d)x",         # one branch needs nothing
    r"(?=abc)\w+",          # lookahead: the literal may lie outside the match
    r"(?<=abc)\d",
    r"(a)b?\1",             # a back reference
    r"(?:ab)*",
    r"[ab]{3}",
    r"(?:a1|b2|c3|d4|e5|f6|g7|h8|i9)",  # more branches than MAX_GATE_LITERALS
])
def test_no_required_literals(pattern: str) -> None:
    assert required(pattern) is None


def test_folded_literals_for_case_insensitive_patterns() -> None:
    assert required(r"(?i)hello world", fold=True) == ("hello world",)
    assert required(r"\d(?i:Nccl)x", fold=True) == ("nccl",)
    assert required(r"\d(?i:Nccl)x") is None
    assert gate_literals(re.compile(r"(?i)\bcheckpoint")) == ((("checkpoint",),), True)
    assert gate_literals(re.compile(r"(?<!\w)Python (?P<v>\d)")) == ((("Python ",),), False)
    # Every set is needed: `checkpoint` and a word of saving (one per alternative of the branch).
    both = re.compile(r"(?i)\bsav(?:e|ing)\b.{0,9}checkpoint|\bcheckpoint\b.{0,9}\bwritten")
    assert gate_literals(both) == ((("checkpoint",), ("sav", "written")), True)
    assert gate_literals(re.compile(r"PyTorch version: \d")) is None  # starts with a literal: `re` is fast


def _gated(pattern: str | bytes, flags: int = 0) -> LazyPattern:
    rx: LazyPattern = lazyre.compile(pattern, flags)  # type: ignore[assignment]
    rx.compiled()
    rx._install_gate()  # (done after `GATE_AFTER` calls otherwise)
    return rx


def test_the_gate_is_computed_after_gate_after_calls_and_answers_stay_the_same() -> None:
    rx: LazyPattern = lazyre.compile(r"(?<!\w)Python (?P<v>\d\.\d+)")  # type: ignore[assignment]
    plain = rx.compiled()
    counting = rx.search
    texts = ["Python 3.11", "no such thing", "x Python 3.1"]
    for i in range(lazyre.GATE_AFTER - 1):
        got, want = rx.search(texts[i % 3]), plain.search(texts[i % 3])
        assert (got and got.span()) == (want and want.span())
    assert rx.search is counting  # not gated yet: a short log never pays for the gate
    rx.findall("Python 3.12")  # the GATE_AFTER-th call of a gated method
    assert rx.search is not counting and rx.search is not plain.search
    for text in texts:
        _same(rx, plain, text)


def _same(rx: LazyPattern, plain: re.Pattern[Any], text: Any) -> None:
    def key(m: re.Match[Any] | None) -> Any:
        return None if m is None else (m.span(), m.groups())

    assert key(rx.search(text)) == key(plain.search(text))
    assert key(rx.search(text, 1)) == key(plain.search(text, 1))
    assert rx.findall(text) == plain.findall(text)
    assert [key(m) for m in rx.finditer(text)] == [key(m) for m in plain.finditer(text)]
    empty = "" if isinstance(text, str) else b""
    assert rx.sub(empty, text) == plain.sub(empty, text)
    assert rx.subn(empty, text, count=1) == plain.subn(empty, text, count=1)


def test_the_gate_answers_without_re_and_the_same() -> None:
    rx = _gated(r"(?<!\w)Python (?P<v>\d\.\d+)")
    assert rx.search is not rx.compiled().search  # gated
    for text in ("Python 3.11", "no such thing", "x Python 3.1 and Python 3.12", ""):
        _same(rx, rx.compiled(), text)
    folded = _gated(r"(?i)(?<!\w)eval(?:uation)? loop")
    for text in ("EVAL LOOP", "Eval loop", "evaluation Loop", "x", "ÉVAL LOOP eval loop"):
        _same(folded, folded.compiled(), text)
    brx = _gated(rb"\d\[rank(\d+)\]:")
    for data in (b"1[rank3]:", b"rank", bytearray(b"2[rank4]:"), memoryview(b"3[rank5]:")):
        assert (brx.search(data) is None) == (brx.compiled().search(data) is None)


def _modules() -> list[Any]:
    out = []
    for info in pkgutil.walk_packages(hanglens.__path__, "hanglens."):
        if info.name.rsplit(".", 1)[-1].startswith("_") or ".cli" in info.name:
            continue  # (`__main__`, generated modules such as the precompiled report template)
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:  # an optional extra not installed
            continue
    return out


def _builtin_patterns() -> list[tuple[str, LazyPattern]]:
    found: dict[int, tuple[str, LazyPattern]] = {}

    def visit(name: str, value: Any, depth: int = 0) -> None:
        if isinstance(value, LazyPattern):
            found.setdefault(id(value), (name, value))
        elif isinstance(value, (tuple, list)) and depth < 3:
            for item in value:
                visit(name, item, depth + 1)

    for mod in _modules():
        for key, value in vars(mod).items():
            visit(f"{mod.__name__}.{key}", value)
    return sorted(found.values(), key=lambda kv: kv[0])


def _lines() -> list[str]:
    lines: list[str] = []
    for parser in PARSERS:
        for ex in parser.examples:
            lines.extend(ex.text.split("\n"))
        lines.extend(parser.near_misses)
        lines.extend(parser.triggers)
    more = [s for line in lines for s in (line.upper(), line.lower())]  # (the folded gates)
    return lines + more


def test_every_builtin_gated_pattern_answers_as_re() -> None:
    patterns = _builtin_patterns()
    gated = [(name, rx) for name, rx in patterns if gate_literals(rx.compiled())]
    assert len(gated) > 50
    lines = _lines()
    for name, rx in gated:
        plain = rx.compiled()
        assert rx.search is not plain.search, name
        texts: list[Any] = [line.encode() for line in lines] if isinstance(plain.pattern, bytes) else lines
        # Every method shares one gate: `search` on every line, all methods on the first lines.
        assert [m and (m.span(), m.groups()) for m in map(rx.search, texts)] == \
            [m and (m.span(), m.groups()) for m in map(plain.search, texts)], name
        for text in texts[:150]:
            _same(rx, plain, text)


# -- random patterns ----------------------------------------------------------------------------------------
ALPHABET = "abAB1 :"
_atom = st.sampled_from(["a", "b", "ab", "ba", "AB", "1", " ", ":", "[ab]", r"\d", r"\w", ".", "a:b", "bA1"])


def _regexes() -> st.SearchStrategy[str]:
    return st.recursive(
        _atom,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
            st.tuples(inner, st.sampled_from(["?", "*", "+", "{2}", "{0,2}", "{1,3}", "??", "+?"])).map(
                lambda p: f"(?:{p[0]}){p[1]}"),
            inner.map(lambda p: f"(?i:{p})"),
            inner.map(lambda p: f"({p})"),
            inner.map(lambda p: f"(?={p})"),
            inner.map(lambda p: f"(?!{p})"),
            st.tuples(inner, inner).map(lambda p: f"(?<!a){p[0]}(?<=b){p[1]}"),
        ),
        max_leaves=8,
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_regexes(), flags=st.sampled_from([0, re.IGNORECASE]),
       texts=st.lists(st.text(alphabet=ALPHABET, max_size=14), min_size=1, max_size=6))
def test_random_patterns_answer_as_re(pattern: str, flags: int, texts: list[str]) -> None:
    try:
        plain = re.compile(pattern, flags)
    except re.error:
        return
    rx = lazyre.compile(pattern, flags)
    rx.search  # noqa: B018
    for text in [*texts, "".join(texts), "".join(texts).upper()]:
        _same(rx, plain, text)  # type: ignore[arg-type]
        _same(lazyre.compile(pattern.encode(), flags), re.compile(pattern.encode(), flags),  # type: ignore[arg-type]
              text.encode())


def test_every_precompiled_pattern_is_what_re_compiles() -> None:
    # The code made at build time gives the pattern `re.compile` gives (the same code, flags and groups), on
    # the interpreter the module was made for; on another one nothing is taken from it.
    from hanglens import _patterns

    table = lazyre._table()
    if lazyre.code_stamp() != _patterns.STAMP:
        assert table == {}
        pytest.skip(f"hanglens/_patterns.py was made for {_patterns.STAMP}")
    assert len(table) == _patterns.COUNT
    for (pattern, flags), _ in sorted(table.items(), key=repr):
        got, want = lazyre.precompiled(pattern, flags), re.compile(pattern, flags)
        assert got is not None
        assert (got == want, got.flags, got.groups, dict(got.groupindex)) == \
            (True, want.flags, want.groups, dict(want.groupindex)), pattern
        assert lazyre.compile_parts(pattern, flags) == table[(pattern, flags)]
    assert lazyre.precompiled("not a built-in pattern (x)") is None


def test_the_precompiled_module_is_up_to_date() -> None:
    # Fails after a built-in pattern or a parser trigger changed: run `python tools/precompile_patterns.py`.
    from hanglens import _patterns

    if lazyre.code_stamp() != _patterns.STAMP:
        pytest.skip(f"hanglens/_patterns.py was made for {_patterns.STAMP}")
    tool = Path(__file__).resolve().parents[1] / "tools" / "precompile_patterns.py"
    want = subprocess.run([sys.executable, str(tool), "--stdout"], check=True, capture_output=True,
                          text=True).stdout
    have = Path(_patterns.__file__).read_text(encoding="utf-8")
    assert have == want, "run python tools/precompile_patterns.py"


def test_a_kept_counting_method_installs_the_gate_once(monkeypatch: Any) -> None:
    # `search = rx.search` taken before the gate is installed keeps the counting method: past GATE_AFTER
    # calls it must answer through the installed gate, not compute the gate again on every call
    import hanglens.lazyre as lazyre

    rx = lazyre.compile(r"(?<!\w)Python (?P<v>\d\.\d+)")
    rx.compiled()
    search = rx.search
    computed = []
    real = lazyre.gate_literals
    monkeypatch.setattr(lazyre, "gate_literals", lambda c: computed.append(1) or real(c))
    answers = [search("x Python 3.12") for _ in range(3 * lazyre.GATE_AFTER)]
    assert computed == [1]
    assert all(m is not None and m["v"] == "3.12" for m in answers)
    assert search("no such thing") is None
