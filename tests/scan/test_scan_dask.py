"""The dask engine on a real LocalCluster (loopback, 2 worker processes) gives the local engine's table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scan_helpers import FAKE, copy_logs, fixture_dirs, pack

from hanglens.scan import scan

distributed = pytest.importorskip("distributed")
FIXTURES = fixture_dirs()[:6]


@pytest.mark.skipif(len(FIXTURES) < 6, reason="needs committed fixtures")
def test_dask_and_local_engines_give_equal_tables(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for i, fx in enumerate(FIXTURES):
        logs = copy_logs(fx, root / "folders" / fx.name)
        if i % 2:
            pack(logs, root / "archives" / f"{fx.name}.tar.gz")
    (root / "archives" / "broken.zip").write_bytes(b"PK\x03\x04 nope")
    local = scan([root], jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        remote = scan([root], out=tmp_path / "out", engine="dask", scheduler=cluster.scheduler_address)
    assert len(local) == 10 and local["error"].notna().sum() == 1
    pd.testing.assert_frame_equal(local.sort_values("job_id").reset_index(drop=True),
                                  remote.sort_values("job_id").reset_index(drop=True))
    assert (tmp_path / "out" / "index.html").is_file()


def test_dask_engine_gives_each_job_the_deadline_and_memory_cap(tmp_path: Path) -> None:
    """As with the local engine, a hanging, dying or memory-hungry job is one row; the others complete."""
    from hanglens.limits import DEFAULT_LIMITS
    from hanglens.scan.run import stop_children

    root = tmp_path / "root"
    for name in ("a__oom__r1", "b__hang", "c__die", "d__hog", "e__none__r"):
        (root / name).mkdir(parents=True)
        (root / name / "rank0.log").write_text("line\n")
    # The deadline is long enough for a quick job on a loaded machine; only the hanging job waits it out.
    lim = DEFAULT_LIMITS.with_overrides(job_deadline_s=8.0, job_memory_bytes=3 << 30)
    # Worker threads in this process (no worker processes to start): run_guarded's children do the work.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        df = scan([root], out=tmp_path / "out", engine="dask", scheduler=cluster.scheduler_address,
                  analyzer=FAKE, limits=lim)
    status = dict(zip(df["path"].map(lambda p: Path(p).name), df["status"], strict=True))
    assert status == {"a__oom__r1": "ok", "b__hang": "timeout", "c__die": "crashed", "d__hog": "oom",
                      "e__none__r": "ok"}
    errors = dict(zip(df["path"].map(lambda p: Path(p).name), df["error"], strict=True))
    assert "limit job_deadline_s" in errors["b__hang"] and "limit job_memory_bytes" in errors["d__hog"]
    assert "exit code 3" in errors["c__die"]
    assert stop_children() == 0  # the scan ended its children on every worker
