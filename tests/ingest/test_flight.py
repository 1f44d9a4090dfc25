"""Flight Recorder dumps: found among the inputs, loaded without running code, read into events."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from hanglens.ingest import flight, read_inputs
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
    assert _kinds(got.events, "nccl_trace_rank_1") == [("fr_entry", 1), ("pg_status", 1), ("fr_entry", 2),
                                                      ("fr_entry", 3)]
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
        (None, "big", "larger than"),
    ],
)
def test_unreadable_dumps_become_skipped_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc: object, setup: str | None, reason: str
) -> None:
    path = _write(_job(tmp_path), "comm_lib_trace_rank_2", doc if doc is not None else _dump([_entry(1)]))
    if setup == "truncate":
        path.write_bytes(path.read_bytes()[:40])
    if setup == "big":
        monkeypatch.setattr(flight, "MAX_DUMP", 100)
    got = read_inputs([tmp_path])
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
    from hanglens.parsers import FR_ENTRY_FIELDS, FR_PG_STATUS_FIELDS

    events = flight.dump_events(_dump([_entry(1)]), "nccl_trace_rank_0", 0, Origin())
    assert {e.kind: set(e.fields) for e in events} == {"fr_entry": set(FR_ENTRY_FIELDS),
                                                       "pg_status": set(FR_PG_STATUS_FIELDS)}
