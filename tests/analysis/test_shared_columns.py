"""Fact tables of many rows keep a column that holds one object in every row as that object once."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hanglens import api

build_module = importlib.import_module("hanglens.analysis.build")
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _columns(n: int) -> list[list[object]]:
    host = "gpu-node0007"
    return [list(range(n)), [host] * n, [None] * n, [[1, 2]] * n, [i % 3 for i in range(n)]]


def test_big_frame_keeps_constant_columns_once() -> None:
    n = build_module.SHARED_COLUMN_ROWS
    cols = ["rank", "host", "pg", "ranks", "phase"]
    big = build_module.object_frame(cols, (iter(c) for c in _columns(n)), n)
    assert list(big.columns) == cols
    assert all(dt == np.dtype(object) for dt in big.dtypes)
    strides = {c: big[c].to_numpy().strides for c in cols}
    assert strides["host"] == strides["pg"] == strides["ranks"] == (0,)
    assert strides["rank"] == strides["phase"] == (8,)
    assert big["host"].tolist() == ["gpu-node0007"] * n
    assert big["pg"].isna().all()
    assert big["ranks"].iloc[5] == [1, 2]
    # the same values as the one-block frame of fewer rows would hold
    block = np.empty((len(cols), n), dtype=object)
    for j, c in enumerate(_columns(n)):
        block[j] = np.fromiter(c, dtype=object, count=n)
    small = pd.DataFrame(block.T, columns=cols, dtype=object)
    assert big.equals(small)
    # selecting, grouping and sorting work on the shared columns and leave them shared
    assert len(big[big["phase"] == 1]) == len([i for i in range(n) if i % 3 == 1])
    assert big.groupby("host")["rank"].count().to_dict() == {"gpu-node0007": n}
    assert big.sort_values("rank", ascending=False)["host"].iloc[0] == "gpu-node0007"
    assert big["host"].to_numpy().strides == (0,)


def test_a_column_of_equal_but_distinct_objects_is_not_shared() -> None:
    n = build_module.SHARED_COLUMN_ROWS
    values = [float(i % 1) for i in range(n)]   # equal values, distinct objects: kept as they are
    frame = build_module.object_frame(["t"], [iter(values)], n)
    assert frame["t"].to_numpy().strides == (8,)


SOME = sorted(p.parent.name for p in FIXTURES.glob("*/truth.yaml"))[::3]


@pytest.mark.parametrize("scenario", SOME)
def test_documents_are_the_same_with_every_table_sharing(scenario: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixtures have few ranks: with the threshold at one row, every table of theirs takes the shared path."""
    paths = [str(p) for p in sorted((FIXTURES / scenario).iterdir()) if p.name != "truth.yaml"]
    plain = api.analyze(paths, command="x").to_dict()
    monkeypatch.setattr(build_module, "SHARED_COLUMN_ROWS", 1)
    shared = api.analyze(paths, command="x").to_dict()
    assert shared == plain
