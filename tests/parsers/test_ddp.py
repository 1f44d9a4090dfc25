"""Contract tests of the ddp parser: its examples, near-misses, random input and the real-log corpus."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, LogLine, Origin, SourceRef
from hanglens.parsers.ddp import DdpParser

P = DdpParser
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


def feed_direct(text: str) -> list[Event]:
    """Feed every line straight to a parser instance (no reader), so an exception surfaces here."""
    parser = P()
    out: list[Event] = []
    for i, raw in enumerate(text.split("\n"), 1):
        out.extend(parser.feed(LogLine(text=raw, raw=raw, ref=SourceRef("t.log", i))))
    out.extend(parser.close())
    return out


@pytest.mark.parametrize("example", P.examples, ids=lambda ex: f"{ex.kind}:{ex.era}")
def test_example_yields_its_event(example: Any) -> None:
    found = events(example.text, example.kind)
    assert has(found, dict(example.fields)), [dict(e.fields) for e in found]


def test_example_fields_are_declared() -> None:
    declared = {spec.kind: set(spec.fields) for spec in P.emits}
    for ex in P.examples:
        assert set(ex.fields) <= declared[ex.kind], (ex.kind, set(ex.fields) - declared[ex.kind])
    assert {ex.kind for ex in P.examples} == set(declared)


@pytest.mark.parametrize("example", P.examples, ids=lambda ex: f"{ex.kind}:{ex.era}")
def test_emitted_fields_are_declared(example: Any) -> None:
    declared = {spec.kind: set(spec.fields) for spec in P.emits}
    for e in read(example.text).events:
        assert set(e.fields) <= declared[e.kind], (e.kind, set(e.fields) - declared[e.kind])


@pytest.mark.parametrize("text", P.near_misses)
def test_near_miss_yields_nothing(text: str) -> None:
    assert [e for e in events(text) if e.kind in KINDS] == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_random_text_never_breaks_the_parser(text: str) -> None:
    assert parser_failures(read(text)) == []
    feed_direct(text)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([ex.text for ex in P.examples]),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.text(max_size=20),
    st.booleans(),
)
def test_mutated_examples_never_break_the_parser(text: str, cut: int, at: int, junk: str, dup: bool) -> None:
    lines = text.split("\n")
    if dup and lines:
        lines.insert(at % len(lines), lines[cut % len(lines)])
    mutated = "\n".join(lines)
    mutated = mutated[: cut % (len(mutated) + 1)] + junk + mutated[at % (len(mutated) + 1) :]
    assert parser_failures(read(mutated)) == []
    feed_direct(mutated)


def _real_files() -> list[Path]:
    if not REAL_LOGS.is_dir():
        return []
    return sorted(p for p in REAL_LOGS.glob("*/*/*") if p.is_file() and p.name != "case.yaml")


@pytest.mark.skipif(not REAL_LOGS.is_dir(), reason="real-log corpus not present")
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_logs_never_break_the_parser(path: Path) -> None:
    assert parser_failures(read(path.read_bytes())) == []
    feed_direct(path.read_bytes().decode("utf-8", "replace"))


# -- behaviour beyond single examples ------------------------------------------------------------------
UNFINISHED = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing loss."
)


def test_unused_lines_of_different_ranks_are_not_merged() -> None:
    text = (
        "Parameter indices which did not receive grad for rank 0: 1 2\n"
        "Parameters which did not receive grad for rank 1: a.weight"
    )
    found = events(text, "ddp_unused_parameters")
    assert sorted((e.get("for_rank"), e.get("param_indices"), e.get("param_names")) for e in found) == [
        (0, [1, 2], None),
        (1, None, ["a.weight"]),
    ]


def test_unused_lines_far_apart_are_emitted_alone() -> None:
    filler = "\n".join(f"step {i}" for i in range(12))
    text = (
        f"Parameter indices which did not receive grad for rank 0: 1 2\n{filler}\n"
        "Parameters which did not receive grad for rank 0: a.weight"
    )
    assert len(events(text, "ddp_unused_parameters")) == 2


def test_same_rank_error_in_log_and_traceback_is_one_event() -> None:
    assert len(events(UNFINISHED + "\n" + UNFINISHED, "ddp_reduction_unfinished")) == 1


def test_each_rank_keeps_its_own_unfinished_reduction() -> None:
    text = f"[rank0]: {UNFINISHED}\n[rank1]: {UNFINISHED}"
    assert sorted(e.rank for e in events(text, "ddp_reduction_unfinished") if e.rank is not None) == [0, 1]


def test_variant_sentence_on_a_later_line_is_attached() -> None:
    text = (
        UNFINISHED
        + "\nSince `find_unused_parameters=True` is enabled, this likely  means that not all outputs"
    )
    assert has(events(text, "ddp_reduction_unfinished"), {"find_unused": True})
