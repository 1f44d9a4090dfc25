"""The scan machinery with a stand-in analyzer: outputs, error rows, cache, resume, engines agree."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from scan_helpers import FAKE, pack, snapshot

from hanglens.scan import COLUMNS, ScanSummary, scan


def _job(root: Path, rel: str, text: str = "line\n") -> Path:
    p = root / rel / "rank0.log"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p.parent


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    _job(root, "d1/a__oom__r2__node-c")
    _job(root, "d1/b__rank_crash__r1-3__node-c")
    _job(root, "d2/c__none__r")
    _job(root, "d2/x__boom")
    src = _job(tmp_path / "src", "e__network_transport__r0__node-d")
    pack(src, root / "d3" / "e__network_transport__r0__node-d.tar.gz")
    pack(src, root / "d3" / "f__cuda_error__r5__node-c.zip")
    return root


def _scan(root: Path, out: Path | None, **kw: Any) -> tuple[pd.DataFrame, ScanSummary]:
    got: list[ScanSummary] = []
    df = scan([root], out=out, analyzer=FAKE, on_summary=got.append, **kw)
    return df, got[0]


def test_outputs_rows_and_error_rows(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    before = snapshot(tmp_path)
    df, s = _scan(root, out, jobs=2)
    assert list(df.columns) == list(COLUMNS)
    assert (s.jobs, s.analysed, s.cached, s.errors) == (6, 6, 0, 1)
    assert list(df["path"]) == sorted(df["path"])
    by = {os.path.basename(r["path"]).split(".")[0]: r for r in df.to_dict("records")}
    assert by["a__oom__r2__node-c"]["category"] == "oom"
    assert by["b__rank_crash__r1-3__node-c"]["culprit_ranks"] == [1, 3]
    assert by["f__cuda_error__r5__node-c"]["culprit_hosts"] == ["node-c"]
    assert by["c__none__r"]["hosts"] == ["node-a", "node-b"]
    assert by["c__none__r"]["nccl_version"] == "2.18.1;2.20.5" and by["c__none__r"]["world_size"] == 4
    assert by["c__none__r"]["first_ts"] == 1714560000.0
    boom = by["x__boom"]
    assert boom["category"] is None
    assert boom["error"] == "ValueError: analysis blew up (+1 more lines)"
    # Files: tables, index, one report per analysed job, and nothing outside DIR.
    csv = pd.read_csv(out / "jobs.csv")
    assert list(csv.columns) == list(COLUMNS) and len(csv) == 6
    crash_id = by["b__rank_crash__r1-3__node-c"]["job_id"]
    assert csv.loc[csv["job_id"] == crash_id, "culprit_ranks"].item() == "1;3"
    pq = pd.read_parquet(out / "jobs.parquet")
    assert list(pq["job_id"]) == list(df["job_id"]) and list(pq.loc[1, "culprit_ranks"]) == [1, 3]
    for r in df.to_dict("records"):
        report = out / "jobs" / r["job_id"] / "report.json"
        assert report.is_file() == (r["error"] is None)
    assert json.loads((out / "jobs" / by["a__oom__r2__node-c"]["job_id"] / "report.json").read_text())[
        "verdict"]["category"] == "oom"
    after = {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("out")}
    assert after == before
    html = (out / "index.html").read_text()
    assert "node-c" in html and "<svg" in html and "http://" not in html and "https://" not in html


def test_cache_skips_unchanged_jobs_and_force_ignores_it(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    first, _ = _scan(root, out, engine="inline")
    again, s = _scan(root, out, engine="inline")
    assert (s.analysed, s.cached) == (1, 5)        # only the error row is retried
    pd.testing.assert_frame_equal(first, again)
    (root / "d1" / "a__oom__r2__node-c" / "rank0.log").write_text("changed, longer\n")
    _, s = _scan(root, out, engine="inline")
    assert (s.analysed, s.cached) == (2, 4)
    _, s = _scan(root, out, engine="inline", force=True)
    assert (s.analysed, s.cached) == (6, 0)


def test_interrupt_leaves_consistent_outputs_and_the_rerun_resumes(tmp_path: Path) -> None:
    root, out = _root(tmp_path), tmp_path / "out"
    stop = _job(root, "d2/y__stop")
    with pytest.raises(KeyboardInterrupt):
        _scan(root, out, engine="inline")
    done = pd.read_csv(out / "jobs.csv")
    assert 0 < len(done) < 7                       # the jobs before d2/y__stop, in path order
    assert all((out / "jobs" / j / "report.json").is_file() for j in done.loc[done["error"].isna(), "job_id"])
    os.rename(stop, root / "d2" / "y__none")
    _, s = _scan(root, out, engine="inline")
    assert s.cached == sum(done["error"].isna()) and s.analysed == 7 - s.cached


def test_a_dying_worker_costs_only_its_own_job(tmp_path: Path) -> None:
    root = _root(tmp_path)
    _job(root, "d2/z__die")
    df, s = _scan(root, None, jobs=2)
    errors = dict(zip(df["path"].map(os.path.basename), df["error"], strict=True))
    assert errors["z__die"] == "the worker process died (exit code 3)"
    assert dict(zip(df["path"].map(os.path.basename), df["status"], strict=True))["z__die"] == "crashed"
    assert [k for k, v in errors.items() if v] == ["x__boom", "z__die"]
    assert s.errors == 2


def test_local_pool_and_inline_give_the_same_table(tmp_path: Path) -> None:
    root = _root(tmp_path)
    pool, _ = _scan(root, None, jobs=2)
    inline, _ = _scan(root, None, engine="inline")
    pd.testing.assert_frame_equal(pool, inline)


def test_index_escapes_hostile_names(tmp_path: Path) -> None:
    root, out = tmp_path / "root", tmp_path / "out"
    _job(root, "j__oom__r1__<script>alert(1)<")
    _scan(root, out, engine="inline")
    html = (out / "index.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;" in html


def test_usage_errors(tmp_path: Path) -> None:
    from hanglens.errors import UsageError

    with pytest.raises(UsageError):
        scan([tmp_path], engine="spark", analyzer=FAKE)
    with pytest.raises(UsageError):
        scan([tmp_path], since="last tuesday", analyzer=FAKE)
    with pytest.raises(UsageError):
        scan([tmp_path], jobs=0, analyzer=FAKE)
