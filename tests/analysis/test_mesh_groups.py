"""Device-mesh groups from what the logs state (hanglens/analysis/mesh.py), and the split of a stuck group.

Events written here in the shapes hanglens/parsers/mesh.py gives; the layout rules are torch's
(torch/distributed/device_mesh.py: init_device_mesh lays ranks out row-major, one group per slice).
"""
from __future__ import annotations

from typing import Any

from hanglens.analysis import mesh
from hanglens.model import Event, SourceRef

_n = iter(range(1, 100000))


def ev(kind: str, rank: int | None, text: str = "", **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef("run.log", next(_n)), text=text, parser="test", rank=rank,
                 fields=fields)


def coord(rank: int | None, dims: str, values: str, text: str = "") -> Event:
    return ev("mesh_coordinate", rank, text, dims=dims, values=values)


def groups(layout: mesh.Layout | None, dim: str) -> set[tuple[int, ...]]:
    assert layout is not None
    i = layout.dims.index(dim)
    return {layout.group(r, i) for r in layout.coords}


def test_coordinates_of_every_rank_give_the_groups() -> None:
    evs = [coord(r, "dp,tp", f"{r // 4},{r % 4}") for r in range(8)]
    lay = mesh.mesh_layout(evs, 8)
    assert groups(lay, "tp") == {(0, 1, 2, 3), (4, 5, 6, 7)}
    assert groups(lay, "dp") == {(0, 4), (1, 5), (2, 6), (3, 7)}


def test_a_shape_every_rank_states_alike_is_the_shape() -> None:
    # `mesh ready dp=2 tp=4` on ranks 0 and 4: the same values twice are no coordinates.
    lay = mesh.mesh_layout([coord(0, "dp,tp", "2,4"), coord(4, "dp,tp", "2,4")], 8)
    assert lay is not None and lay.sizes == (2, 4) and lay.source == "the mesh shape the ranks logged"
    assert groups(lay, "tp") == {(0, 1, 2, 3), (4, 5, 6, 7)}


def test_a_shape_that_does_not_fill_the_world_is_no_mesh() -> None:
    assert mesh.mesh_layout([coord(0, "dp,tp", "2,2"), coord(4, "dp,tp", "2,2")], 8) is None


def test_coordinates_that_contradict_row_major_without_every_rank_are_no_mesh() -> None:
    evs = [coord(0, "dp,tp", "0,0"), coord(1, "dp,tp", "1,0"), coord(2, "dp,tp", "0,1")]
    assert mesh.mesh_layout(evs, 4) is None


def test_a_repr_with_strides_lays_out_every_rank() -> None:
    lay = mesh.mesh_layout([ev("device_mesh", 0, dims="pp,dp,tp", sizes=[2, 2, 2], strides=[4, 2, 1])], 8)
    assert groups(lay, "pp") == {(0, 4), (1, 5), (2, 6), (3, 7)}
    # A column-major mesh's strides say so.
    lay = mesh.mesh_layout([ev("device_mesh", 0, dims="dp,tp", sizes=[2, 2], strides=[1, 2])], 4)
    assert groups(lay, "tp") == {(0, 2), (1, 3)}


def test_a_repr_of_another_world_size_is_not_the_job_mesh() -> None:
    assert mesh.mesh_layout([ev("device_mesh", 0, dims="tp", sizes=[2], strides=[1])], 8) is None


def test_unprefixed_coordinates_filling_the_grid_give_shape_and_ranks() -> None:
    evs = [coord(None, "replicate,shard", f"{r // 2},{r % 2}") for r in range(4)]
    skip = ev("sync_skipped", None, "| replicate0 shard1 | INFO | skipping metric sync",
              phrase="skipping metric sync")
    lay = mesh.mesh_layout([*evs, skip], 4)
    assert groups(lay, "shard") == {(0, 1), (2, 3)}
    out = mesh.attribute([*evs, skip], lay, {})
    assert out[-1].rank == 1


def call(rank: int, name: str, line: int, source: str, subgroup: bool = True) -> dict[str, Any]:
    return {"rank": rank, "call": name, "user_frame": f"train.py:{line} in step", "subgroup": subgroup,
            "source": source, "path": "run.log", "line": rank}


def test_the_odd_member_of_a_named_group() -> None:
    lay = mesh.mesh_layout([coord(r, "dp,tp", f"{r // 4},{r % 4}") for r in range(8)], 8)
    ar, ag = "dist.all_reduce(stat, group=tp_group)", "dist.all_gather(outs, t, group=tp_group)"
    calls = [call(r, "backward", 90, "loss.backward()", False) for r in range(4)]
    calls += [call(4, "all_reduce", 84, ar), call(5, "all_reduce", 84, ar), call(6, "all_gather", 86, ag),
              call(7, "all_reduce", 84, ar)]
    rows = mesh.split_rows(lay, calls, {})
    assert {r["rank"]: r["side"] for r in rows} == {4: "majority", 5: "majority", 6: "odd", 7: "majority"}
    assert {r["how"] for r in rows} == {"name"}


def test_two_members_two_sides_is_a_tie() -> None:
    lay = mesh.mesh_layout([coord(r, "dp,tp", f"{r // 2},{r % 2}") for r in range(4)], 4)
    calls = [call(0, "backward", 90, "loss.backward()", False),
             call(1, "backward", 90, "loss.backward()", False),
             call(2, "all_reduce", 84, "dist.all_reduce(x, group=tp_group)"),
             call(3, "all_gather", 86, "dist.all_gather(o, x, group=tp_group)")]
    rows = mesh.split_rows(lay, calls, {})
    assert {r["rank"]: r["side"] for r in rows} == {2: "tie", 3: "tie"}


def test_unnamed_group_whose_members_all_wait_in_the_same_call_is_not_that_calls_group() -> None:
    # Ranks 0 and 2 (dp group) both wait in the all_gather: its group is tp, where rank 1 is elsewhere.
    lay = mesh.mesh_layout([coord(r, "dp,tp", f"{r // 2},{r % 2}") for r in range(4)], 4)
    ag, ar = "dist.all_gather(o, x, group=groups[k])", "dist.all_reduce(x, group=groups[k])"
    calls = [call(0, "all_gather", 83, ag), call(2, "all_gather", 83, ag), call(1, "all_reduce", 71, ar),
             call(3, "all_reduce", 76, ar)]
    rows = mesh.split_rows(lay, calls, {})
    assert {(r["rank"], r["dim"], r["how"]) for r in rows if r["rank"] in (0, 1)} == {(0, "tp", "calls"),
                                                                                       (1, "tp", "calls")}


def test_no_layout_no_rows() -> None:
    assert mesh.split_rows(None, [call(0, "all_reduce", 1, "x")], {}) == []
    assert mesh.mesh_layout([], 8) is None


def test_a_group_waiting_at_one_place_for_a_member_without_a_stack() -> None:
    lay = mesh.mesh_layout([coord(r, "replicate,shard", f"{r // 4},{r % 4}") for r in range(8)], 8)
    fsdp = "out = model(x)"
    calls = [call(r, "all_reduce", 117, "loss.backward()", False) for r in range(4)]
    calls += [call(r, "all_gather_single", 116, fsdp, False) for r in (4, 6, 7)]
    rows = mesh.waiting_rows(lay, calls, {})
    assert {(r["rank"], r["side"]) for r in rows} == {(4, "waiting"), (5, "missing"), (6, "waiting"),
                                                     (7, "waiting")}


def test_no_waiting_group_when_its_stacked_members_are_split_or_few() -> None:
    lay = mesh.mesh_layout([coord(r, "dp,tp", f"{r // 2},{r % 2}") for r in range(4)], 4)
    # Pairs: one stack and one missing member is no majority.
    assert mesh.waiting_rows(lay, [call(0, "all_reduce", 5, "x"), call(2, "all_gather", 6, "y")], {}) == []
    lay = mesh.mesh_layout([coord(r, "dp,tp", f"{r // 3},{r % 3}") for r in range(6)], 6)
    calls = [call(3, "all_reduce", 5, "x"), call(5, "all_gather", 6, "y")]
    assert mesh.waiting_rows(lay, calls, {}) == []


def test_a_member_waiting_in_a_point_to_point_op_is_not_at_another_collective_of_its_group() -> None:
    # dp x pp = 2 x 2: rank 3 waits in its pipeline recv for stage 0 (rank 2, still busy), rank 1 in the dp
    # group's all_reduce: rank 3 has not reached the group's collective yet, the group is not split.
    lay = mesh.mesh_layout([coord(r, "dp,pp", f"{r // 2},{r % 2}") for r in range(4)], 4)
    ar = "dist.all_reduce(p.grad, group=dp_group)"
    calls = [call(0, "all_reduce", 101, ar), call(1, "all_reduce", 101, ar),
             call(3, "recv", 95, "schedule.step(target=y, losses=losses)", False)]
    assert mesh.split_rows(lay, calls, {}) == []
    elsewhere = call(3, "all_gather", 88, "dist.all_gather(o, x, group=dp_group)")
    assert mesh.split_rows(lay, [*calls[:2], elsewhere], {}) != []
