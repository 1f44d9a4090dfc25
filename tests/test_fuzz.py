"""Property-based fuzzing (hypothesis) of the readers of hostile input: bad input never raises.

Bounded for CI: a few dozen examples each, short inputs. The long run is benchmarks/fuzz.py.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import pickle
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanglens.engine import collect_rules
from hanglens.ingest import flight, strip_prefixes
from hanglens.ingest.reader import Reader, compile_triggers
from hanglens.ingest.sources import Opened, Unit, open_unit
from hanglens.limits import Limits
from hanglens.model import Origin
from hanglens.parsers import PARSERS

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TRIGGERS = compile_triggers(PARSERS)

# Pieces of real log formats (written here from ../shared/reference, own values) that the fuzzer
# recombines with arbitrary text, so the parsers' interesting branches are reached.
PIECES = [
    "[rank3]:", "[default1]:", "I1201 04:05:06.789012 3141 ", "2026-12-01T04:05:06.123+00:00 ",
    "[E ProcessGroupNCCL.cpp:1537] ", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=",
    "OpType=ALLREDUCE", ", NumelIn=1048576", ", Timeout(ms)=600000)", "NCCL INFO ", "NCCL WARN ",
    "node-7:2718:2731 [1] ", "NCCL version 2.21.5+cuda12.4", "Traceback (most recent call last):",
    '  File "train.py", line 41, in step', "RuntimeError: ", "torch.OutOfMemoryError: CUDA out of memory. ",
    "Tried to allocate 2.00 GiB", "step ", "loss ", "exitcode: -9", "local_rank: 2 (pid: 5150)",
    "ChildFailedError", "DataLoader worker (pid 777) is killed by signal: Killed.", "99999999999999999999999",
    "-1", "\x1b[31m", "\x1b]0;x\x07", "\r", "\t", "\x00", "\u202e", "0" * 300,
]
log_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=40)), max_size=12).map("".join)
log_lines = st.lists(log_text, max_size=8).map("\n".join)


@FUZZ
@given(log_lines, st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_line_reader_never_raises(text: str, eol: bytes) -> None:
    data = text.encode("utf-8", "surrogatepass").replace(b"\n", eol)
    res = Reader("fuzz.log", Origin(), PARSERS, TRIGGERS).read(io.BytesIO(data))
    assert res.lines >= 0
    assert all(1 <= e.ref.line <= max(1, res.lines) for e in res.events)


@FUZZ
@given(log_text)
def test_prefix_stripper_never_raises(text: str) -> None:
    env = strip_prefixes(text)
    assert isinstance(env.text, str)


def _pack(kind: str, payload: bytes, name: str) -> bytes:
    if kind == "gz":
        return gzip.compress(payload, mtime=0)
    if kind == "bz2":
        return bz2.compress(payload)
    if kind == "xz":
        return lzma.compress(payload)
    if kind == "zst":
        return zstandard.ZstdCompressor().compress(payload)
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(name, payload)
        return buf.getvalue()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


@FUZZ
@given(kind=st.sampled_from(["gz", "bz2", "xz", "zst", "zip", "tar"]),
       payload=st.binary(max_size=300) | log_lines.map(lambda t: t.encode("utf-8", "surrogatepass")),
       name=st.sampled_from(["rank0.log", "../up.log", "/abs.log", "a/b/rank1.log.gz", "x.zip", "C:evil"]),
       cut=st.integers(min_value=0, max_value=400), flips=st.lists(st.integers(0, 10_000), max_size=4))
def test_archive_readers_never_raise(tmp_path_factory: Any, kind: str, payload: bytes, name: str, cut: int,
                                     flips: list[int]) -> None:
    """Compressed files and archives, whole, truncated or with flipped bytes: skips, never exceptions."""
    data = bytearray(_pack(kind, payload, name))
    for f in flips:
        if data:
            data[f % len(data)] ^= 0x5A
    if cut and cut < len(data):
        del data[len(data) - cut:]
    path: Path = tmp_path_factory.mktemp("arch") / f"input.{kind}"
    path.write_bytes(bytes(data))
    unit = Unit(fs_path=str(path), display=path.name, rel=path.name, size=len(data))
    for item in open_unit(unit, limits=Limits(max_member_bytes=1 << 20)):
        if isinstance(item, Opened):
            while item.stream.read(4096):
                pass


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
    | st.binary(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    | st.tuples(inner, inner),
    max_leaves=30,
)
ENTRY_KEYS = ["record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id",
              "profiling_name", "time_created_ns", "input_sizes", "output_sizes", "state",
              "time_discovered_started_ns", "time_discovered_completed_ns", "frames", "timeout_ms", "is_p2p"]
entry = st.dictionaries(st.sampled_from(ENTRY_KEYS), plain, max_size=10)
dump = st.fixed_dictionaries({"entries": st.lists(entry, max_size=5)},
                             optional={"version": plain, "pg_config": plain, "pg_status": plain})


@FUZZ
@given(st.one_of(dump.map(pickle.dumps), st.binary(max_size=200), dump.map(lambda d: pickle.dumps(d)[:-3])))
def test_flight_recorder_reader_never_raises(data: bytes) -> None:
    got = flight.read_dump(data, "fr/dump_0", 0, Origin())
    assert isinstance(got, list) or got.reason


RULE = """\
id: fuzzed
title: A rule the fuzzer edits
category: rank_crash
confidence: low
match:
  all:
    - event: exception
      bind: ex
explanation: |
  {{ ex.rank | rank_list }}
remediation:
  - 'Nothing.'
"""
yaml_bits = st.sampled_from(["&a ", "*a", "<<: *a", "!!python/object:os.system ", "{", "}", "[", "]", ": ",
                             "- ", "\n", "  ", "'", '"', "|", ">", "#", "%YAML 1.1\n", "---\n", "{{", "}}",
                             "regex: '(a+)+$'", "\t", "\x00", "~", "1e999", "0x", "?"])


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(RULE)), yaml_bits | st.text(max_size=8)), max_size=6))
def test_rule_loader_reports_problems_never_raises(tmp_path_factory: Any,
                                                   edits: list[tuple[int, str]]) -> None:
    text = RULE
    for at, bit in edits:
        text = text[:at] + bit + text[at:]
    folder: Path = tmp_path_factory.mktemp("rules")
    (folder / "fuzzed.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    rules, problems = collect_rules([folder], builtin=False)
    assert len(rules) + len(problems) >= 1
    assert all(p.line >= 1 and p.col >= 1 for p in problems)
