"""`record_type` rows read and write like the dicts they replace, and only hold their table's columns."""

from __future__ import annotations

import pytest

from hanglens.analysis.build import frame
from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.analysis.record import record_type


def test_reads_and_writes_like_a_dict() -> None:
    row_type = record_type("progress")
    r = row_type(rank=3, host="node-1", last_step=7)
    assert r["rank"] == 3 and r.get("host") == "node-1" and r.get("position") is None
    assert r.get("position", "x") == "x"
    assert "rank" in r and "position" not in r and "nonsense" not in r
    with pytest.raises(KeyError):
        r["position"]
    r["position"] = "behind"
    r.update(gap=True, gap_after=4)
    assert dict(r) == {"rank": 3, "host": "node-1", "last_step": 7, "gap": True, "gap_after": 4,
                       "position": "behind"}
    assert {**r, "path": "a.log"}["path"] == "a.log"
    assert len(r) == 6 and list(r)[:3] == ["rank", "host", "last_step"]
    del r["gap"]
    assert "gap" not in r
    with pytest.raises(KeyError):
        del r["gap"]


def test_only_its_columns_and_extras() -> None:
    row_type = record_type("silent_hang", extra=("_series",))
    r = row_type(rank=0, _series=("p", None))
    assert r["_series"] == ("p", None)
    with pytest.raises(AttributeError):
        row_type(rank=0, misspelt=1)
    with pytest.raises(KeyError):
        r["misspelt"] = 1
    assert r.get("get") is None and r.get("update") is None   # (method names are no columns)
    assert not hasattr(r, "__dict__")   # slotted: no per-row dict
    assert record_type("silent_hang", extra=("_series",)) is row_type


def test_frame_of_records_equals_frame_of_dicts() -> None:
    cols = FACT_SPECS["pg_enqueue_lag"].columns
    dicts = [{"pg": "0", "rank": i, "lag": i % 2, "basis": "status"} for i in range(5)]
    row_type = record_type("pg_enqueue_lag")
    records = [row_type(**d) for d in dicts]
    a, b = frame("pg_enqueue_lag", dicts), frame("pg_enqueue_lag", records)
    assert list(b.columns) == list(cols)
    assert a.equals(b)
