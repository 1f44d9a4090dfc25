"""`EntryGate`: a line the gate turns away gives nothing and changes nothing, on every line the repo holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from hanglens.ingest.prefix import strip_prefixes
from hanglens.model import LogLine, SourceRef
from hanglens.parsers import c10d
from hanglens.parsers.base import EntryGate
from hanglens.parsers.c10d import C10dParser

ROOT = Path(__file__).resolve().parents[2]


def _lines() -> list[str]:
    """Every line of the real-run fixtures, the written cases and the parsers' own examples."""
    out: list[str] = []
    for base in (ROOT / "fixtures", ROOT / "tests" / "written_cases"):
        for path in sorted(base.rglob("*")):
            small = path.is_file() and path.stat().st_size < 4 << 20
            if small and path.suffix in {".log", ".txt", ".out", ""}:
                out.extend(path.read_text("utf-8", "replace").splitlines())
    out.extend(line for ex in C10dParser.examples for line in ex.text.split("\n"))
    return out


def _fresh_state(p: C10dParser) -> dict[str, object]:
    return {k: v for k, v in vars(p).items() if k not in C10dParser.idle_ignores}


def test_gate_turns_away_process_group_info_lines_and_keeps_failure_lines() -> None:
    info = "[PG ID 2 PG GUID 2(dp) Rank 5] ProcessGroupNCCL initialization options: size: 4, global rank: 13"
    assert not c10d._ENTRY.may_match(info)
    for ex in C10dParser.examples:
        assert any(c10d._ENTRY.may_match(strip_prefixes(t).text) for t in ex.text.split("\n")), ex.text


def test_turned_away_lines_give_nothing_and_leave_the_parser_fresh() -> None:
    lines = _lines()
    assert len(lines) > 10_000   # (the repository's logs, not an empty glob)
    closed = 0
    for raw in lines:
        text = strip_prefixes(raw).text
        if c10d._ENTRY.may_match(text) or c10d._bare_prefix(text) is not None:
            continue
        closed += 1
        p = C10dParser()
        before = _fresh_state(p)
        line = LogLine(text=text, raw=raw, ref=SourceRef("x", 1))
        assert p._match(line) == [], raw
        assert _fresh_state(p) == before and not p.wants_more(), raw
    assert closed > 1000


def test_environment_lines_turned_away_give_nothing() -> None:
    from hanglens.parsers import environment
    from hanglens.parsers.environment import EnvironmentParser

    assert environment._ENTRY.literals() is not None   # (the gate can close)
    closed = 0
    for raw in _lines() + [line for ex in EnvironmentParser.examples for line in ex.text.split("\n")]:
        text = strip_prefixes(raw).text
        if environment._ENTRY.may_match(text):
            continue
        closed += 1
        assert EnvironmentParser()._read(LogLine(text=text, raw=raw, ref=SourceRef("x", 1))) == [], raw
    assert closed > 1000


def test_a_pattern_without_literals_keeps_the_gate_open(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from hanglens import lazyre

    mod = types.ModuleType("hanglens_gate_probe")
    mod.A = lazyre.compile(r"needle (\d+)")
    monkeypatch.setitem(__import__("sys").modules, mod.__name__, mod)
    gate = EntryGate(mod.__name__)
    assert gate.may_match("a needle 3") and not gate.may_match("nothing here")
    mod.B = lazyre.compile(r"\d+ [a-z]+")    # no literal every match holds
    assert EntryGate(mod.__name__).may_match("nothing here")
    mod.C = (lazyre.compile(r"(?i)ABORT(?:ED|ING)"),)   # inside a tuple, case-insensitive
    del mod.B
    gate = EntryGate(mod.__name__)
    assert gate.may_match("Aborting now") and not gate.may_match("nothing here")
