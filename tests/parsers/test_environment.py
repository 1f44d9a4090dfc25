"""Tests of the environment parser: its examples, near-misses, random input and the real-log corpus."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, Origin
from hanglens.parsers.environment import EnvironmentParser

P = EnvironmentParser
KINDS = {spec.kind for spec in P.emits}
REAL_LOGS = Path("/work/shared/real-logs")


def read(text: str | bytes) -> FileResult:
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    return Reader("t.log", Origin(), [P]).read(io.BytesIO(data))


def events(text: str, kind: str | None = None) -> list[Event]:
    return [e for e in read(text).events if kind is None or e.kind == kind]


def parser_failures(result: FileResult) -> list[str]:
    return [n for n in result.notes if n.startswith(f"{P.name} failed")]


def has(found: list[Event], fields: dict[str, Any]) -> bool:
    return any(all(e.get(k, "<absent>") == v for k, v in fields.items()) for e in found)


@pytest.mark.parametrize("example", P.examples, ids=lambda ex: f"{ex.kind}:{ex.era}")
def test_example_yields_its_event(example: Any) -> None:
    found = events(example.text, example.kind)
    assert has(found, dict(example.fields)), [dict(e.fields) for e in found]


@pytest.mark.parametrize("text", P.near_misses)
def test_near_miss_yields_nothing(text: str) -> None:
    assert [e for e in events(text) if e.kind in KINDS] == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_random_text_never_breaks_the_parser(text: str) -> None:
    assert parser_failures(read(text)) == []


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([ex.text for ex in P.examples]), st.integers(0, 10_000), st.integers(0, 10_000),
       st.text(max_size=20), st.booleans())
def test_mutated_examples_never_break_the_parser(text: str, cut: int, at: int, junk: str, dup: bool) -> None:
    lines = text.split("\n")
    if dup and lines:
        lines.insert(at % len(lines), lines[cut % len(lines)])
    mutated = "\n".join(lines)
    mutated = mutated[: cut % (len(mutated) + 1)] + junk + mutated[at % (len(mutated) + 1):]
    assert parser_failures(read(mutated)) == []


def _real_files() -> list[Path]:
    if not REAL_LOGS.is_dir():
        return []
    return sorted(p for p in REAL_LOGS.glob("*/*/*") if p.is_file() and p.name != "case.yaml")


@pytest.mark.skipif(not REAL_LOGS.is_dir(), reason="real-log corpus not present")
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_logs_never_break_the_parser(path: Path) -> None:
    assert parser_failures(read(path.read_bytes())) == []


def test_rank_echo_fields_are_ints_and_unexpanded_values_are_ignored() -> None:
    (ev,) = events("RANK=2 WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=0", "world_info")
    assert dict(ev.fields) == {"global_rank": 2, "local_rank": 0, "stated_rank": 2}
