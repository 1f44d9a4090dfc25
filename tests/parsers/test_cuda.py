"""Contract tests of the cuda parser: examples, near-misses, declared fields, random input, real logs."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.ingest.reader import FileResult, Reader
from hanglens.model import Event, Origin
from hanglens.parsers.cuda import CudaParser, classify_cuda, size_bytes

P = CudaParser
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


@pytest.mark.parametrize(("message", "error"), [
    ("an illegal memory access was encountered", "illegal_memory_access"),
    ("misaligned address", "misaligned_address"),
    ("device-side assert triggered", "device_side_assert"),
    ("unknown error", "unknown"),
    ("uncorrectable ECC error encountered", "ecc"),
    ("unspecified launch failure", "launch_failure"),
    ("invalid device ordinal", "invalid_device_ordinal"),
    ("invalid argument", "invalid_argument"),
    ("CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", "cublas"),
    ("CUDNN_STATUS_MAPPING_ERROR", "cudnn"),
    ("an illegal instruction was encountered", "other"),
])
def test_cuda_messages_are_classified(message: str, error: str) -> None:
    assert classify_cuda(message) == error


@pytest.mark.parametrize(("text", "value"), [
    ("20.00 MiB", 20 << 20), ("1.5 GiB", 3 << 29), ("512 bytes", 512), ("3.00 KiB", 3072), ("", None),
    ("x", None),
])
def test_sizes_are_bytes(text: str, value: int | None) -> None:
    assert size_bytes(text) == value


def test_cuda_error_out_of_memory_is_also_an_oom() -> None:
    found = events("RuntimeError: CUDA error: out of memory")
    assert {e.kind for e in found} == {"cuda_error", "oom"}


def test_message_stops_before_joined_boilerplate() -> None:
    text = ("RuntimeError: CUDA error: an illegal memory access was encountered\\nCUDA kernel errors might "
            "be asynchronously reported at some other API call")
    messages = [e.get("message") for e in events(text, "cuda_error")]
    assert messages == ["an illegal memory access was encountered"]


def test_each_assert_line_keeps_its_own_thread() -> None:
    text = "".join(f"k.cu:7: f(): block: [0,0,0], thread: [{t},0,0] Assertion `ok` failed.\n" for t in (3, 4))
    assert [e.get("thread") for e in events(text, "device_assert")] == ["3,0,0", "4,0,0"]
