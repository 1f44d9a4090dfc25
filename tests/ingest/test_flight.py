"""Flight Recorder dumps: found among the inputs, loaded without running code, read into events."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from hanglens.ingest import flight, read_inputs
from hanglens.limits import Limits
from hanglens.model import Event, Origin


def _entry(seq: int, name: str = "nccl:all_reduce", state: str = "completed", **kw: Any) -> dict[str, Any]:
    """An entry in the reference's §8.3 schema (synthetic; shaped like a torch 2.5-2.9 NCCL dump)."""
    out: dict[str, Any] = {
        "record_id": seq - 1, "pg_id": 1, "process_group": ("7", "my_group"), "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": name, "time_created_ns": 1724779239936775119,
        "input_sizes": [[3, 4], [2]], "input_dtypes": ["Float", "Float"], "output_sizes": [[3, 4], [2]],
        "output_dtypes": ["Float", "Float"], "state": state, "time_discovered_started_ns": None,
        "time_discovered_completed_ns": None, "retired": state == "completed", "timeout_ms": 600000,
        "is_p2p": False,
        "frames": [
            {"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2501},
            {"name": "step", "filename": "train.py", "line": 42},
            {"name": "<module>", "filename": "train.py", "line": 90},
        ],
    }
    out.update(kw)
    return out


def _dump(entries: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": "2.5",
        "pg_config": {"7": {"name": "7", "desc": "my_group", "ranks": "[0, 1]"}},
        "pg_status": {"1": {"last_enqueued_collective": 3, "last_started_collective": -1,
                            "last_completed_collective": 2}},
        "entries": entries,
    }
    doc.update(kw)
    return doc


def _write(folder: Path, name: str, doc: object, protocol: int = 2) -> Path:
    path = folder / name
    path.write_bytes(pickle.dumps(doc, protocol=protocol))
    return path


def _job(tmp_path: Path) -> Path:
    (tmp_path / "rank0.log").write_text("step 1\n")
    return tmp_path


def _kinds(events: list[Event], path: str) -> list[tuple[str, int]]:
    return [(e.kind, e.ref.line) for e in events if e.ref.path == path]


@pytest.mark.parametrize(
    ("name", "head", "rank"),
    [
        ("nccl_trace_rank_3", b"\x80\x02}", 3),
        ("comm_lib_trace_rank_12", b"\x80\x04\x95", 12),
        ("logs/fr_trace_rank_0", b"\x80\x05\x95", 0),
        ("my_prefix7", b"\x80\x03}", 7),
        ("nccl_trace_rank_3", b"[E918 19:29:24", None),      # a text log keeps the text path
        ("model.pkl", b"\x80\x04\x95", None),                # a pickle without a rank in its name
        ("nccl_trace_rank_3.txt", b"\x80\x02}", None),
        ("rank_3", b"\x80\x01", None),                       # protocol 1 is not what torch writes
    ],
)
def test_dumps_are_recognised_by_name_and_pickle_header(name: str, head: bytes, rank: int | None) -> None:
    assert flight.dump_rank(name, head) == rank


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("nccl:all_reduce", "ALLREDUCE"),
        ("gloo:barrier", "BARRIER"),
        ("nccl:_allgather_base", "_ALLGATHER_BASE"),
        ("nccl:_all_gather_base", "_ALLGATHER_BASE"),
        ("nccl:reduce_scatter_tensor_coalesced", "REDUCE_SCATTER_TENSOR_COALESCED"),
        ("nccl:all_to_all", "ALLTOALL"),
        ("nccl:send 0->1", "SEND"),
        ("nccl:recv 1<-0", "RECV"),
        ("", None),
        (None, None),
    ],
)
def test_profiling_names_map_to_the_watchdogs_op_type(name: str | None, op: str | None) -> None:
    assert flight.op_name(name) == op


def test_a_dump_becomes_pg_status_and_one_fr_entry_per_entry(tmp_path: Path) -> None:
    _write(_job(tmp_path), "nccl_trace_rank_1", _dump([_entry(1), _entry(2), _entry(3, state="scheduled")]))
    got = read_inputs([tmp_path])
    assert got.skipped == []
    assert _kinds(got.events, "nccl_trace_rank_1") == [("fr_dump", 1), ("fr_entry", 1), ("pg_status", 1),
                                                      ("fr_entry", 2), ("fr_entry", 3)]
    dump = next(e for e in got.events if e.kind == "fr_dump")
    assert dict(dump.fields) == {"version": "2.5", "format": "pickle", "entries": 3,
                                 "pg_config": [["7", "my_group", [0, 1]]], "comm_lib_version": None}
    status = next(e for e in got.events if e.kind == "pg_status")
    assert status.rank == 1 and status.parser == "flight"
    # pg_status is keyed by the local PG id; the event names the group's GUID, as log lines do.
    assert dict(status.fields) == {"pg": "7", "pg_desc": "my_group", "last_enqueued": 3, "last_started": -1,
                                   "last_completed": 2}
    last = [e for e in got.events if e.kind == "fr_entry"][-1]
    assert last.rank == 1
    assert {k: last.get(k) for k in ("pg", "pg_desc", "seq", "op", "numel_in", "numel_out", "state",
                                     "retired", "timeout_ms", "is_p2p", "input_dtypes")} == {
        "pg": "7", "pg_desc": "my_group", "seq": 3, "op": "ALLREDUCE", "numel_in": 14, "numel_out": 14,
        "state": "scheduled", "retired": False, "timeout_ms": 600000, "is_p2p": False,
        "input_dtypes": ["Float", "Float"],
    }
    assert (last.get("record_id"), last.get("input_sizes"), last.get("time_created_ns"), last.time) == (
        2, [[3, 4], [2]], 1724779239936775119, 1724779239936775119 / 1e9)
    assert last.get("frames") == ["train.py:90 in <module>", "train.py:42 in step",
                                  "torch/distributed/distributed_c10d.py:2501 in all_reduce"]
    assert (last.get("frame_file"), last.get("frame_line"), last.get("frame_func")) == (
        "torch/distributed/distributed_c10d.py", 2501, "all_reduce")
    assert [f.path for f in got.files] == ["nccl_trace_rank_1", "rank0.log"]
    assert got.files[0].ranks == (1,)


def test_only_the_newest_entries_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flight, "MAX_ENTRIES", 2)
    _write(_job(tmp_path), "fr_trace_rank_0", _dump([_entry(s) for s in range(1, 6)], pg_status={}))
    got = read_inputs([tmp_path])
    assert [(e.ref.line, e.get("seq")) for e in got.events if e.kind == "fr_entry"] == [(4, 4), (5, 5)]


def test_a_pickle_that_calls_a_function_is_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    _write(_job(tmp_path), "nccl_trace_rank_0", {"version": "2.5", "entries": [Evil()]})
    data = (tmp_path / "nccl_trace_rank_0").read_bytes()
    assert b"system" in data and b"R" in data     # GLOBAL posix/nt system, then REDUCE
    got = read_inputs([tmp_path])
    assert not marker.exists()
    assert [s.path for s in got.skipped] == ["nccl_trace_rank_0"]
    assert "refused to load" in got.skipped[0].reason and "system" in got.skipped[0].reason
    assert all(e.ref.path != "nccl_trace_rank_0" for e in got.events)


@pytest.mark.parametrize(
    ("doc", "setup", "reason"),
    [
        (["not", "a", "dump"], None, "not a flight recorder dump"),
        ({"entries": "nope"}, None, "not a flight recorder dump"),
        (None, "truncate", "unreadable pickle"),
        (None, "big", "larger than max_pickle_bytes (100 bytes)"),
    ],
)
def test_unreadable_dumps_become_skipped_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc: object, setup: str | None, reason: str
) -> None:
    path = _write(_job(tmp_path), "comm_lib_trace_rank_2", doc if doc is not None else _dump([_entry(1)]))
    if setup == "truncate":
        path.write_bytes(path.read_bytes()[:40])
    got = read_inputs([tmp_path], limits=Limits(max_pickle_bytes=100) if setup == "big" else Limits())
    assert [s.path for s in got.skipped] == ["comm_lib_trace_rank_2"]
    assert reason in got.skipped[0].reason


def test_other_pickles_are_skipped_as_before(tmp_path: Path) -> None:
    _write(_job(tmp_path), "weights.pkl", {"entries": []})
    got = read_inputs([tmp_path])
    assert [(s.path, s.reason) for s in got.skipped] == [("weights.pkl", "binary file (Python pickle)")]


def test_the_real_gloo_fixture_dumps_read_cleanly() -> None:
    folder = Path(__file__).resolve().parents[2] / "fixtures" / "divergence-flight-recorder"
    got = read_inputs(sorted(str(p) for p in folder.glob("fr_trace_rank_*")))
    assert got.skipped == []
    last = {e.rank: e for e in got.events if e.kind == "fr_entry"}
    assert {r: e.get("op") for r, e in last.items()} == {0: "ALLREDUCE", 1: "ALLREDUCE", 2: "BARRIER",
                                                          3: "ALLREDUCE"}
    assert {e.get("seq") for e in last.values()} == {6}


def test_emitted_fields_are_the_catalogued_ones() -> None:
    from hanglens.parsers import FR_DUMP_FIELDS, FR_ENTRY_FIELDS, FR_PG_STATUS_FIELDS

    events = flight.dump_events(_dump([_entry(1)]), "nccl_trace_rank_0", 0, Origin())
    assert {e.kind: set(e.fields) for e in events} == {"fr_entry": set(FR_ENTRY_FIELDS),
                                                       "pg_status": set(FR_PG_STATUS_FIELDS),
                                                       "fr_dump": set(FR_DUMP_FIELDS)}


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _by_key(events: list[Event]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """What a dump says, whatever its format: JSON dumps carry no stack frames (torch leaves them out)."""
    drop = {"format", "frames", "frame_file", "frame_line", "frame_func"}
    return {(e.kind, e.rank, e.ref.line, e.get("pg"), e.time):
            {k: v for k, v in e.fields.items() if k not in drop} for e in events}


@pytest.mark.parametrize("scenario", ["fr-healthy", "fr-skip", "fr-crash"])
def test_json_and_pickle_dumps_of_the_same_real_run_give_the_same_events(scenario: str) -> None:
    """Each rank took `_dump_fr_trace()` then `_dump_fr_trace_json()` right after: the same content, except
    that the watchdog may retire the newest entry in between (then the JSON, taken later, shows it)."""
    folder = FIXTURES / scenario
    pickles = read_inputs(sorted(str(p) for p in folder.glob("fr_trace_rank_*")))
    jsons = read_inputs(sorted(str(p) for p in (folder / "json").glob("fr_json_rank_*.json")))
    assert pickles.skipped == [] and jsons.skipped == []
    assert {e.get("format") for e in jsons.events if e.kind == "fr_dump"} == {"json"}
    assert {e.get("format") for e in pickles.events if e.kind == "fr_dump"} == {"pickle"}
    p, j = _by_key(pickles.events), _by_key(jsons.events)
    assert sorted(p, key=str) == sorted(j, key=str)
    for key in p:
        differs = {f for f in p[key] if p[key][f] != j[key][f]}
        assert differs <= {"retired", "last_completed"}, (key, differs)
        if "retired" in differs:
            assert (p[key]["retired"], j[key]["retired"]) == (False, True)
        if "last_completed" in differs:
            assert p[key]["last_completed"] < j[key]["last_completed"]
    assert any(e.get("frames") for e in pickles.events if e.kind == "fr_entry")
    assert not any(e.get("frames") for e in jsons.events if e.kind == "fr_entry")
    assert {e.get("version") for e in pickles.events if e.kind == "fr_dump"} == {"2.10"}


def test_dumps_load_compressed_and_inside_archives(tmp_path: Path) -> None:
    import gzip
    import tarfile
    import zipfile

    import zstandard

    src = FIXTURES / "fr-skip"
    data = {r: (src / f"fr_trace_rank_{r}").read_bytes() for r in range(4)}
    (tmp_path / "nccl_trace_rank_0.gz").write_bytes(gzip.compress(data[0]))
    (tmp_path / "my_prefix1.zst").write_bytes(zstandard.ZstdCompressor().compress(data[1]))
    with tarfile.open(tmp_path / "dumps.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("run/fr_trace_rank_2")
        info.size = len(data[2])
        tf.addfile(info, io.BytesIO(data[2]))
    with zipfile.ZipFile(tmp_path / "dumps.zip", "w") as zf:
        zf.writestr("out/comm_lib_trace_rank_3.json", (src / "json" / "fr_json_rank_3.json").read_bytes())
    got = read_inputs([tmp_path])
    assert got.skipped == []
    dumps = {e.ref.path: (e.rank, e.get("format")) for e in got.events if e.kind == "fr_dump"}
    assert dumps == {"nccl_trace_rank_0.gz": (0, "pickle"), "my_prefix1.zst": (1, "pickle"),
                     "dumps.tar.gz!run/fr_trace_rank_2": (2, "pickle"),
                     "dumps.zip!out/comm_lib_trace_rank_3.json": (3, "json")}
    plain = read_inputs([str(src / "fr_trace_rank_2")])
    assert [e.fields for e in got.events if e.rank == 2 and e.kind == "fr_entry"] == [
        e.fields for e in plain.events if e.kind == "fr_entry"]


def test_a_memo_reference_bomb_is_skipped_by_the_object_limit_quickly(tmp_path: Path) -> None:
    import time

    inner: list[Any] = []
    for _ in range(60):
        inner = [inner, inner]
    data = pickle.dumps({"version": "2.10", "entries": [{"input_sizes": inner}]}, protocol=2)
    assert len(data) < 2000                       # 60 levels, 2**60 objects once expanded
    (tmp_path / "nccl_trace_rank_0").write_bytes(data)
    start = time.monotonic()
    got = read_inputs([_job(tmp_path)])
    assert time.monotonic() - start < 60          # counted per distinct object: milliseconds, not 2**60

    assert [s.path for s in got.skipped] == ["nccl_trace_rank_0"]
    assert "max_pickle_objects" in got.skipped[0].reason


def test_the_object_limit_counts_opcodes_of_big_pickles_before_loading() -> None:
    limits = Limits(max_pickle_objects=1000)
    data = b"\x80\x02](" + b"K\x01" * 5000 + b"e."    # a list of 5000 ints: 5000 objects, 10 kB
    assert "max_pickle_objects (1000)" in str(flight.load_dump(data, "pickle", limits))
    evil = b"\x80\x02X\xd0\x07\x00\x00" + b"a" * 2000 + b"0cposix\nsystem\n."   # big enough to be scanned
    assert "refused to load posix system" in str(flight.load_dump(evil, "pickle", limits))
    entries = [{"seq_id": i, "profiling_name": f"gloo:all_reduce {i:040d}"} for i in range(60)]
    ok = pickle.dumps({"entries": entries}, protocol=2)
    assert len(ok) > 1000                               # scanned too: about 400 objects pass
    assert flight.load_dump(ok, "pickle", limits) == pickle.loads(ok)


@pytest.mark.parametrize(
    ("name", "head", "fmt"),
    [
        ("fr_json_rank_3.json", b'{"comm_lib_version":"","entries":[{"collective_seq_id":1', "json"),
        ("dumps/trace7", b'  {"pg_config": {}, "pg_status": {}}', "json"),
        ("config_3.json", b'{"lr": 0.1}', None),                 # JSON that is not a dump
        ("fr_json_rank_x.json", b'{"pg_config": {}}', None),      # no rank in the name
        ("nccl_trace_rank_2.pkl", b"\x80\x04\x95", "pickle"),
    ],
)
def test_json_dumps_are_recognised_by_content_and_name(name: str, head: bytes, fmt: str | None) -> None:
    assert flight.dump_format(name, head) == fmt


def test_old_format_versions_load(tmp_path: Path) -> None:
    """Format 1.x (torch 2.2-2.3): `seq_id`, `pg_id`, no process_group; read by key presence."""
    old = {"version": "1.1", "entries": [{"pg_id": 0, "seq_id": 4, "profiling_name": "nccl:all_reduce",
                                          "input_sizes": [[8]], "output_sizes": [[8]], "state": "scheduled",
                                          "time_created_ns": 1700000000000000000, "retired": False}]}
    _write(_job(tmp_path), "nccl_trace_rank_1", old)
    got = read_inputs([tmp_path])
    e = next(e for e in got.events if e.kind == "fr_entry")
    assert (e.get("pg"), e.get("seq"), e.get("op"), e.get("numel_in")) == ("0", 4, "ALLREDUCE", 8)
    assert next(e for e in got.events if e.kind == "fr_dump").get("version") == "1.1"


def test_a_pickle_bomb_inside_a_compressed_file_is_skipped_too(tmp_path: Path) -> None:
    import gzip

    inner: list[Any] = []
    for _ in range(60):
        inner = [inner, inner]
    data = pickle.dumps({"version": "2.10", "entries": [{"frames": inner}]}, protocol=4)
    (tmp_path / "comm_lib_trace_rank_1.gz").write_bytes(gzip.compress(data))
    got = read_inputs([_job(tmp_path)])
    assert [(s.path, "max_pickle_objects" in s.reason) for s in got.skipped] == [
        ("comm_lib_trace_rank_1.gz", True)]


@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_mutated_real_dumps_never_raise(fmt: str) -> None:
    """Fuzz the dump reader with byte flips, truncations and splices of a real dump: events or a skip."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    src = FIXTURES / "fr-skip" / ("fr_trace_rank_2" if fmt == "pickle" else "json/fr_json_rank_2.json")
    base = src.read_bytes()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.tuples(st.integers(0, len(base) - 1), st.integers(0, 255)), max_size=8),
           st.integers(1, len(base)))
    def check(flips: list[tuple[int, int]], cut: int) -> None:
        data = bytearray(base[:cut])
        for pos, value in flips:
            if pos < len(data):
                data[pos] = value
        got = flight.read_dump(bytes(data), "fr_trace_rank_2", 2, Origin(), fmt,
                               Limits(max_pickle_objects=50_000))
        assert isinstance(got, (list, flight.Skipped))

    check()


def test_a_pickle_whose_list_contains_itself_is_skipped(tmp_path: Path) -> None:
    loop: list[Any] = []
    loop.append(loop)
    _write(_job(tmp_path), "fr_trace_rank_0", {"version": "2.10", "entries": [{"frames": loop}]})
    got = read_inputs([tmp_path])
    assert [(s.path, s.reason) for s in got.skipped] == [
        ("fr_trace_rank_0", "a container that contains itself (not a flight recorder dump)")]
