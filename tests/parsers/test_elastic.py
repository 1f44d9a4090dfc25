"""Tests of the elastic parser: its examples, near-misses, random input and the real-log corpus."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, Origin
from hanglens.parsers.elastic import ElasticParser, signal_name

P = ElasticParser
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


def test_signal_names_follow_linux_numbering() -> None:
    assert [signal_name(c) for c in (-6, -9, -7, -11, -15, 1, 0, None)] == [
        "SIGABRT", "SIGKILL", "SIGBUS", "SIGSEGV", "SIGTERM", None, None, None]


def test_summary_yields_one_event_per_block_with_roles() -> None:
    text = P.examples[8].text
    found = events(text, "child_failed")
    assert sorted((e.get("failed_rank"), e.get("root_cause"), e.get("signal")) for e in found) == [
        (2, True, None), (3, False, "SIGABRT")]
    assert all(e.ref.line in (6, 15) for e in found)


def test_summary_without_other_failures() -> None:
    text = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 40 + "\n"
            "train.py FAILED\n" + "-" * 40 + "\nFailures:\n  <NO_OTHER_FAILURES>\n" + "-" * 40 + "\n"
            "Root Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_00:00:01\n"
            "  host      : n1\n  rank      : 5 (local_rank: 1)\n  exitcode  : -7 (pid: 77)\n"
            "  error_file: <N/A>\n  traceback : To enable traceback see: "
            "https://pytorch.org/docs/stable/elastic/errors.html\n" + "=" * 40 + "\n"
            "failed (exitcode: 1) local_rank: 0 (pid: 9) of binary: python\n")
    found = read(text).events
    assert [(e.kind, e.get("failed_rank"), e.get("signal"), e.get("root_cause")) for e in found
            if e.kind == "child_failed"] == [("child_failed", 5, "SIGBUS", True)]
    assert has([e for e in found if e.kind == "worker_failed"], {"exitcode": 1, "pid": 9})


def test_consecutive_closing_signals_keep_their_own_pid() -> None:
    envelope = "W1130 08:04:26.123000 1 torch/distributed/elastic/multiprocessing/api.py:897]"
    text = "".join(f"{envelope} Sending process {pid} closing signal SIGTERM\n" for pid in (11, 12, 13))
    assert [e.get("pid") for e in events(text, "closing_signal")] == [11, 12, 13]
