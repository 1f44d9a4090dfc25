"""Contract tests of the wrapper parser: its examples, near-misses, random input and the real-log corpus."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, LogLine, Origin, SourceRef
from hanglens.parsers.wrapper import WrapperParser

P = WrapperParser
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
FP_A = (
    "CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, memory_format=(nullopt)))"
)
FP_B = (
    "CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, TensorShape=[4], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, memory_format=(nullopt)))"
)
MISMATCH = (
    f"RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: {FP_A}, "
    f"but Rank 1 is running collective: {FP_B}.Collectives differ in the following aspects:   Op type: "
    "ALLREDUCEvs BROADCAST"
)


def test_mismatch_repeated_in_a_traceback_is_one_event() -> None:
    assert len(events(MISMATCH + "\n" + MISMATCH, "collective_mismatch")) == 1


def test_ops_come_from_fingerprints_when_another_writer_runs_into_the_diff() -> None:
    found = events(MISMATCH + "RANK1 EXC RuntimeError: something else", "collective_mismatch")
    assert has(found, {"ops": ["ALLREDUCE", "BROADCAST"], "aspects": ["op_type"], "ranks": [0, 1]})


def test_truncated_mismatch_keeps_what_it_has() -> None:
    cut = MISMATCH[: MISMATCH.index("TensorDtypes")]
    found = events(cut, "collective_mismatch")
    assert has(found, {"ranks": [0, None], "ops": ["ALLREDUCE", None], "seq": 7, "shapes": ["[4]", None]})


def test_barrier_error_logged_then_raised_is_one_hang() -> None:
    text = "\n".join(
        [
            "[rank0]:[E1130 09:33:30.138331809 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 2 failed to pass "
            "monitoredBarrier in 6000 ms",
            "[rank0]:[E1130 09:33:30.138362646 ProcessGroupGloo.cpp:67] [Rank 0]: Ranks 2 failed to pass "
            "monitoredBarrier in 6000 ms",
            "[rank0]: RuntimeError: [Rank 0]: Ranks 2 failed to pass monitoredBarrier in 6000 ms",
        ]
    )
    found = events(text)
    assert len([e for e in found if e.kind == "hang_detected"]) == 1
    assert len([e for e in found if e.kind == "monitored_barrier_failure"]) == 1


def test_wrapper_barrier_error_and_gloo_error_merge_into_one_hang() -> None:
    text = (
        "[rank0]:[E1130 09:33:30.138331809 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed to pass "
        "monitoredBarrier in 6000 ms\n"
        "[rank0]: RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running collective: "
        f"{FP_A}. Error: \n[rank0]: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 6000 ms"
    )
    hangs = events(text, "hang_detected")
    assert [(e.get("seq"), e.get("op"), e.get("timeout_ms"), e.ref.line) for e in hangs] == [
        (7, "ALLREDUCE", 6000, 1)
    ]


def test_rank_pointing_to_rank0_is_not_a_hang_of_its_own() -> None:
    text = (
        "Rank 2 successfully reached monitoredBarrier, but received errors while waiting for send/recv from "
        "rank 0. Please check rank 0 logs for faulty rank."
    )
    assert [e.kind for e in events(text)] == ["monitored_barrier_failure"]
