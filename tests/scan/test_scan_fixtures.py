"""A generated archive of 30+ jobs built from the committed fixtures, scanned with the real analysis.

Each row must equal what `hanglens analyze` gives for the same logs (the scan machinery) and the
fixture's truth.yaml (category, or one of its `accept` categories, and culprit ranks). Bad inputs ride
along and must become error rows or skips, never a crash.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from scan_helpers import copy_logs, fixture_dirs, pack, snapshot

from hanglens import api
from hanglens.scan import ScanSummary, scan

FIXTURES = fixture_dirs()
FIXTURES_BY_NAME = {p.name: p for p in FIXTURES}
FORMATS = (".tar.gz", ".zip", ".tar.zst", ".tgz", ".tar")
pytestmark = pytest.mark.skipif(len(FIXTURES) < 15, reason="needs at least 15 committed fixtures")


def _bad_inputs(root: Path) -> None:
    (root / "bad").mkdir()
    (root / "bad" / "corrupt.tar.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip" * 10)
    (root / "bad" / "truncated.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in ("../escaped.log", "/abs/escaped.log", "ok/rank0.log"):
            data = b"[rank0]: RuntimeError: something failed\n"
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (root / "bad" / "evil.tar").write_bytes(buf.getvalue())
    (root / "bad" / "loop").mkdir()
    os.symlink(root / "bad", root / "bad" / "loop" / "again")


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("fleet")
    root, out, plain = base / "root", base / "out", base / "plain"
    expected: dict[str, tuple[str, Any]] = {}
    for i, fx in enumerate(FIXTURES):
        logs = copy_logs(fx, plain / fx.name)
        folder = copy_logs(fx, root / f"cluster-{i % 3}" / f"2024-05-0{1 + i % 4}" / fx.name)
        expected[str(folder)] = (fx.name, logs)
        if i < max(5, 30 - len(FIXTURES)):  # 30+ jobs in all, every archive format at least once
            archive = pack(logs, root / "archived" / f"{fx.name}{FORMATS[i % len(FORMATS)]}")
            expected[str(archive)] = (fx.name, logs)
    _bad_inputs(root)
    before = snapshot(base)
    summaries: list[ScanSummary] = []
    df = scan([root], out=out, jobs=2, on_summary=summaries.append)
    return {"root": root, "out": out, "df": df, "summary": summaries[0], "expected": expected,
            "before": before, "base": base}


def test_every_fixture_job_matches_hanglens_analyze(scanned: dict[str, Any]) -> None:
    df: pd.DataFrame = scanned["df"]
    rows = {r["path"]: r for r in df.to_dict("records")}
    assert len(scanned["expected"]) >= 30
    reference: dict[str, dict[str, Any]] = {}
    vs_truth = []
    for path, (name, logs) in sorted(scanned["expected"].items()):
        if name not in reference:
            reference[name] = api.analyze([str(logs)], jobs=1).to_dict()["verdict"]
            doc = yaml.safe_load((FIXTURES_BY_NAME[name] / "truth.yaml").read_text())
            truth = doc["expect"]
            got = reference[name]
            accept = {truth["category"], *(truth.get("accept") or [])}
            same_culprits = sorted(got["culprit_ranks"]) == sorted(truth["culprit_ranks"])
            # a known_gap scenario is wrong today on purpose: tests/test_golden.py holds it (strict xfail)
            if not doc.get("known_gap") and (got["category"] not in accept or not same_culprits):
                vs_truth.append(f"{name}: analyze says {got['category']} {got['culprit_ranks']}, truth says "
                                f"{truth['category']} {truth['culprit_ranks']}")
        row, ref = rows[path], reference[name]
        assert row["error"] is None, (path, row["error"])
        assert (row["category"], row["culprit_ranks"], row["rule_id"]) == (
            ref["category"], sorted(ref["culprit_ranks"]), ref["rule_id"]), path
    assert not vs_truth, "scan rows disagree with truth.yaml:\n  " + "\n  ".join(vs_truth)


def test_bad_inputs_become_error_rows_or_skips_and_nothing_escapes(scanned: dict[str, Any]) -> None:
    df: pd.DataFrame = scanned["df"]
    rows = {os.path.relpath(r["path"], scanned["root"]): r for r in df.to_dict("records")}
    for bad in ("corrupt.tar.gz", "truncated.zip"):
        error = rows[f"bad/{bad}"]["error"]
        assert bad in error and "\n" not in error and rows[f"bad/{bad}"]["category"] is None
    evil = rows["bad/evil.tar"]
    assert evil["error"] is None and "2 input(s) skipped" in evil["notes"]
    reasons = {os.path.relpath(s["path"], scanned["root"]): s["reason"] for s in df.attrs["skipped"]}
    assert reasons["bad/loop/again"] == "symlink loop"
    after = snapshot(scanned["base"])
    new = sorted(k for k in after if k not in scanned["before"])
    assert new and all(k.startswith("out") for k in new)
    assert not (scanned["base"] / "escaped.log").exists() and not Path("/abs/escaped.log").exists()


def test_outputs_and_a_rerun_takes_everything_from_the_cache(scanned: dict[str, Any]) -> None:
    out: Path = scanned["out"]
    df: pd.DataFrame = scanned["df"]
    assert pd.read_csv(out / "jobs.csv")["job_id"].tolist() == df["job_id"].tolist()
    parquet = pd.read_parquet(out / "jobs.parquet")
    assert parquet["category"].fillna("").tolist() == df["category"].fillna("").tolist()
    assert parquet["culprit_ranks"].map(list).tolist() == df["culprit_ranks"].tolist()
    for job_id in df.loc[df["error"].isna(), "job_id"]:
        assert (out / "jobs" / job_id / "report.html").is_file()
    index = (out / "index.html").read_text()
    assert all(f'href="jobs/{j}/report.html"' in index for j in df.loc[df["error"].isna(), "job_id"])
    summaries: list[ScanSummary] = []
    again = scan([scanned["root"]], out=out, jobs=2, on_summary=summaries.append)
    s = summaries[0]
    assert s.cached == int(df["error"].isna().sum()) and s.analysed == int(df["error"].notna().sum())
    pd.testing.assert_frame_equal(again, df)
