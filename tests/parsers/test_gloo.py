"""Contract tests of the gloo parser: examples, near-misses, declared fields, random input, real logs."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, Origin
from hanglens.parsers.gloo import GlooParser

P = GlooParser
KINDS = {spec.kind for spec in P.emits}
DECLARED = {spec.kind: set(spec.fields) for spec in P.emits}
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


@pytest.mark.parametrize("example", P.examples, ids=lambda ex: f"{ex.kind}:{ex.era}")
def test_emitted_fields_are_declared(example: Any) -> None:
    assert set(example.fields) <= DECLARED[example.kind]
    for e in read(example.text).events:
        assert e.parser == P.name
        assert set(e.fields) <= DECLARED[e.kind], (e.kind, set(e.fields) - DECLARED[e.kind])


def test_every_kind_has_an_example() -> None:
    assert {ex.kind for ex in P.examples} == KINDS


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
    result = read(mutated)
    assert parser_failures(result) == []
    for e in result.events:
        assert set(e.fields) <= DECLARED[e.kind]


def _real_files() -> list[Path]:
    if not REAL_LOGS.is_dir():
        return []
    return sorted(p for p in REAL_LOGS.glob("*/*/*") if p.is_file() and p.name != "case.yaml")


@pytest.mark.skipif(not REAL_LOGS.is_dir(), reason="real-log corpus not present")
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_logs_never_break_the_parser(path: Path) -> None:
    result = read(path.read_bytes())
    assert parser_failures(result) == []
    for e in result.events:
        assert set(e.fields) <= DECLARED[e.kind]


def test_peer_closed_and_timeout_carry_exact_numbers() -> None:
    text = ("RuntimeError: [pair.cc:598] Connection closed by peer [fe80::1%eth0]:8594\nRuntimeError: "
            "[unbound_buffer.cc:81] Timed out waiting 600000ms for send operation to complete\n")
    found = read(text).events
    assert [(e.kind, e.get("peer"), e.get("port")) for e in found if e.kind == "peer_closed"] == [
        ("peer_closed", "fe80::1%eth0", 8594)]
    hangs = [(e.get("timeout_ms"), e.get("io")) for e in found if e.kind == "hang_detected"]
    assert hangs == [(600000, "send")]


def test_connect_full_mesh_names_the_inner_peer() -> None:
    text = "RuntimeError: Gloo connectFullMesh failed with [pair.cc:210] Connect timeout [10.0.0.5]:41000"
    found = read(text).events
    assert has([e for e in found if e.kind == "gloo_error"], {"peer": "10.0.0.5", "port": 41000})
    assert has([e for e in found if e.kind == "network_error"], {"error": "connect_timeout"})
