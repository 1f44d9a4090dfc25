"""The mesh parser: which texts state mesh coordinates or a DeviceMesh, and which only look alike.

Lines written here, in the shapes user code and torch's DeviceMesh repr print
(torch/distributed/device_mesh.py).
"""
from __future__ import annotations

import pytest

from hanglens.model import LogLine, SourceRef
from hanglens.parsers.mesh import MeshParser, coordinate_statement


@pytest.mark.parametrize("text, dims, values", [
    ("2026-12-04 20:09:17,209 INFO [dp=1 tp=0] step 3 loss 0.41", "dp,tp", "1,0"),
    ("12:00:01 | pp0 dp1 tp1 | INFO | step 2", "pp,dp,tp", "0,1,1"),
    ("replicate=0, shard=3: loaded shard", "replicate,shard", "0,3"),
    ("dp_rank=2 tp_rank=1 ready", "dp,tp", "2,1"),
    ("rank 5 mesh coordinate [1, 0, 1]", "", "1,0,1"),
])
def test_coordinates_are_read(text: str, dims: str, values: str) -> None:
    assert coordinate_statement(text) == (dims, values)


@pytest.mark.parametrize("text", [
    "step=3 tp=1 loss 0.2",            # one dimension only
    "timestamp=12 temp=40 ep=3",      # `ep=` inside longer words, one name
    "resharding 4 shards to 2",       # words, no indices
    "dp=1 dp=2",                      # the same name twice is no coordinate
])
def test_near_misses_are_not_coordinates(text: str) -> None:
    assert coordinate_statement(text) is None


def _feed(texts: list[tuple[int, str]]) -> list[tuple[str, int | None, dict[str, object]]]:
    p = MeshParser()
    out = []
    for i, (rank, text) in enumerate(texts, 1):
        line = LogLine(text=text, raw=text, ref=SourceRef("run.log", i), rank=rank)
        out += [(e.kind, e.rank, dict(e.fields)) for e in p.feed(line)]
    return out


def test_a_prefix_on_every_line_gives_one_event_per_rank() -> None:
    got = _feed([(3, "[dp=1 tp=1] step 1"), (3, "[dp=1 tp=1] step 2"), (2, "[dp=1 tp=0] step 1")])
    assert got == [("mesh_coordinate", 3, {"dims": "dp,tp", "values": "1,1"}),
                   ("mesh_coordinate", 2, {"dims": "dp,tp", "values": "1,0"})]


def test_new_repr_gives_sizes_and_strides_not_coordinates() -> None:
    got = _feed([(5, "DeviceMesh((pp=2, dp=2, tp=2), 'cpu', stride=(4, 2, 1)) coordinate [1, 0, 1]")])
    assert got == [("device_mesh", 5, {"dims": "pp,dp,tp", "sizes": [2, 2, 2], "strides": [4, 2, 1],
                                       "ranks": None}),
                   ("mesh_coordinate", 5, {"dims": "", "values": "1,0,1"})]


def test_old_repr_gives_the_ranks() -> None:
    got = _feed([(0, "DeviceMesh('cuda', [[0, 2], [1, 3]], mesh_dim_names=('dp', 'tp'))")])
    assert got == [("device_mesh", 0, {"dims": "dp,tp", "sizes": [2, 2], "strides": None,
                                       "ranks": [0, 2, 1, 3]})]


def test_ragged_mesh_list_is_no_mesh() -> None:
    assert _feed([(0, "DeviceMesh('cuda', [[0, 1], [2]])")]) == []
