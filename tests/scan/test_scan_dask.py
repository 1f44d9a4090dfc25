"""The dask engine on a real LocalCluster (loopback, 2 worker processes) gives the local engine's table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scan_helpers import copy_logs, fixture_dirs, pack

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
