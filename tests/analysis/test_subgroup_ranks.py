"""DETAIL mismatch reports of a new_group subgroup number ranks by group rank; the analysis maps them back."""

from __future__ import annotations

from typing import Any

from hanglens.analysis.build import build
from hanglens.analysis.collectives import mismatch_global_ranks
from hanglens.model import Event, SourceRef

_n = iter(range(1, 1000))


def report(line_rank: int | None, me: int, peer: int, shapes: tuple[str, str], seq: int = 9) -> Event:
    fields: dict[str, Any] = {"seq": seq, "seqs": [seq, seq], "ranks": [me, peer], "ops": ["ALLREDUCE"] * 2,
                              "shapes": list(shapes), "dtypes": ["Float", "Float"], "aspects": ["shape"],
                              "stated_rank": me}
    return Event(kind="collective_mismatch", ref=SourceRef("run.log", next(_n)), text="mismatch",
                 parser="test", rank=line_rank, fields=fields)


def test_subgroup_reports_are_read_as_global_ranks() -> None:
    # Subgroup [4, 6]: global 4 is group rank 0, global 6 group rank 1.
    a = report(6, 1, 0, ("[2]", "[5]"))
    b = report(4, 0, 1, ("[5]", "[2]"))
    got = mismatch_global_ranks([a, b])
    assert got[id(a)] == [6, 4]
    assert got[id(b)] == [4, 6]
    rows = build([a, b]).fact("collective_disagreement").to_dict(orient="records")
    assert sorted((r["rank"], r["shape"]) for r in rows) == [(4, "[5]"), (6, "[2]")]


def test_a_side_learned_from_one_comparison_names_the_peer_of_another() -> None:
    # Subgroup [0, 2, 4] (new_subgroups_by_enumeration): global 4, group rank 2, runs [5]; global 0 and 2
    # (group ranks 0 and 1) run [4]. Each member compares itself with group rank 2 (or 0): group rank 2 is
    # global 4 in every comparison that names it, also in global 2's, which global 4 never answered.
    a = report(0, 0, 2, ("[4]", "[5]"), seq=0)
    b = report(2, 1, 2, ("[4]", "[5]"), seq=0)
    c = report(4, 2, 0, ("[5]", "[4]"), seq=0)
    got = mismatch_global_ranks([a, b, c])
    assert (got[id(a)], got[id(b)], got[id(c)]) == ([0, 4], [2, 4], [4, 0])
    # torchrun's failure table repeats global 2's report on a line that only its printed rank attributes
    copy = report(1, 1, 2, ("[4]", "[5]"), seq=0)
    assert mismatch_global_ranks([a, b, c, copy])[id(copy)] == [2, 4]
    rows = build([a, b, c]).fact("collective_disagreement").to_dict(orient="records")
    assert sorted((r["rank"], r["shape"], r["minority"]) for r in rows) == [
        (0, "[4]", False), (2, "[4]", False), (4, "[5]", True)]


def test_a_copy_without_its_own_rank_follows_its_writer() -> None:
    # The same report again in a launcher's summary, whose line carried no rank: its group rank 0 is global 4.
    a = report(6, 1, 0, ("[2]", "[5]"))
    b = report(4, 0, 1, ("[5]", "[2]"))
    copy = report(None, 0, 1, ("[5]", "[2]"))
    assert mismatch_global_ranks([a, b, copy])[id(copy)] == [4, 6]


def test_default_group_reports_stay_as_printed() -> None:
    a = report(0, 0, 1, ("[3]", "[4]"))
    b = report(1, 1, 0, ("[4]", "[3]"))
    assert mismatch_global_ranks([a, b]) == {}


def test_a_group_rank_seen_as_two_global_ranks_is_left_alone() -> None:
    # Two subgroups compared the same fingerprints at one number: group rank 1 is 3 in one, 7 in the other.
    a = report(3, 1, 0, ("[2]", "[5]"))
    b = report(7, 1, 0, ("[2]", "[5]"))
    c = report(2, 0, 1, ("[5]", "[2]"))
    assert mismatch_global_ranks([a, b, c]) == {}  # c's peer, group rank 1, is 3 or 7


def _barrier(rank: int, stated: int, missing: list[int] | None, line: int) -> Event:
    from hanglens.model import SourceRef

    return Event(kind="monitored_barrier_failure", ref=SourceRef("console.log", line), text="",
                 parser="wrapper", rank=rank, fields={"stated_rank": stated, "missing_ranks": missing,
                                    "points_to_rank0": missing is None})


def test_subgroup_barrier_group_ranks_are_placed_by_sorted_membership() -> None:
    """new_group sorts its ranks (distributed_c10d.py): group [1, 2, x] of a world of 4 has x = 3."""
    from hanglens.analysis.barriers import subgroup_barrier_rows

    evs = [_barrier(0, 0, [1, 2], 1), _barrier(1, 0, [2], 2), _barrier(2, 1, None, 3)]
    rows = subgroup_barrier_rows(evs, 4)
    assert [(r["subgroup"], r["missing"], r["members"], r["waits_in_subgroup"]) for r in rows] == [
        (False, [1, 2], None, True), (True, [3], [1, 2], False)]
    # a world of 6 leaves 3, 4 and 5 for group rank 2: not placed
    assert subgroup_barrier_rows(evs, 6)[1]["missing"] is None
    # a group rank between two known ones with exactly one global rank between them
    gap = [_barrier(1, 0, [1], 1), _barrier(5, 2, None, 2)]
    assert subgroup_barrier_rows(gap, None)[0]["missing"] is None          # 2, 3 or 4
    tight = [_barrier(1, 0, [1], 1), _barrier(3, 2, None, 2)]
    assert subgroup_barrier_rows(tight, None)[0]["missing"] == [2]
    # two reports giving one group rank two global ranks: two subgroups, nothing is placed
    two = [_barrier(1, 0, [2], 1), _barrier(4, 0, [1], 2)]
    assert [r["missing"] for r in subgroup_barrier_rows(two, 8)] == [None, None]


def _raise(rank: int | None, message: str, line: int, call: str, kind: str = "exception") -> Event:
    """The traceback that raised a barrier report: the program's call line, then torch's monitored_barrier."""
    return Event(kind=kind, ref=SourceRef("console.log", line), text=f"RuntimeError: {message}",
                 parser="test", rank=rank,
                 fields={"message": message, "exc_type": "RuntimeError",
                         "frames": ["/home/user/job/fit.py:40 in sync",
                                    "/home/user/venv/lib/python3.11/site-packages/torch/distributed/"
                                    "distributed_c10d.py:5435 in monitored_barrier"],
                         "sources": [call, "return group_to_use.monitored_barrier("]})


def _report(rank: int | None, stated: int, missing: list[int], line: int) -> Event:
    text = f"[Rank {stated}]: Rank {', '.join(map(str, missing))} failed to pass monitoredBarrier in 5000 ms"
    return Event(kind="monitored_barrier_failure", ref=SourceRef("console.log", line), text=text,
                 parser="wrapper", rank=rank, fields={"stated_rank": stated, "missing_ranks": missing,
                                                      "points_to_rank0": False})


def test_a_writer_read_from_its_printed_rank_names_nobody_on_a_subgroup() -> None:
    """An unprefixed console: ingest read the printed group rank 0 as the writer; the traceback shows
    `monitored_barrier(group=pair)` and gives no rank of its own, so the missing group rank 1 is not
    rank 1."""
    from hanglens.analysis.barriers import subgroup_barrier_rows

    msg = "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 5000 ms"
    evs = [_report(0, 0, [1], 10), _raise(None, msg, 11, "dist.monitored_barrier(group=pair, timeout=t)")]
    [row] = subgroup_barrier_rows(evs, 4)
    assert (row["subgroup"], row["missing"], row["rank"]) == (True, None, None)


def test_the_traceback_s_own_rank_places_the_report() -> None:
    """The traceback was attributed to global rank 2 (its agent's exit line): group [2, x] of a world of 4."""
    from hanglens.analysis.barriers import subgroup_barrier_rows

    msg = "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 5000 ms"
    evs = [_report(0, 0, [1], 10), _raise(2, msg, 11, "dist.monitored_barrier(group=pair, timeout=t)")]
    [row] = subgroup_barrier_rows(evs, 4)
    assert (row["subgroup"], row["missing"], row["rank"]) == (True, [3], 2)


def test_a_failure_table_copy_follows_the_error_file_s_rank() -> None:
    """torchrun's failure table repeats the error (no `[rankN]:`); its error file's row states rank 1."""
    from hanglens.analysis.barriers import subgroup_barrier_rows

    msg = "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 5000 ms"
    copy = _report(0, 0, [1], 30)
    copy = Event(kind=copy.kind, ref=copy.ref, text=f"  RuntimeError: {msg}", parser=copy.parser, rank=0,
                 fields=copy.fields)
    evs = [_report(1, 0, [1], 10), _raise(1, msg, 29, "", kind="error_file"), copy]
    rows = subgroup_barrier_rows(evs, 4)
    assert [(r["rank"], r["subgroup"], r["missing"]) for r in rows] == [(1, True, None), (1, True, None)]


def test_a_default_group_traceback_keeps_the_printed_ranks() -> None:
    from hanglens.analysis.barriers import subgroup_barrier_rows

    msg = "[Rank 0]: Rank 3 failed to pass monitoredBarrier in 5000 ms"
    evs = [_report(0, 0, [3], 10), _raise(None, msg, 11, "dist.monitored_barrier(timeout=t)")]
    [row] = subgroup_barrier_rows(evs, 4)
    assert (row["subgroup"], row["missing"], row["rank"]) == (False, [3], 0)


def test_first_missing_report_adds_the_later_quiet_ranks_that_never_said_they_arrived() -> None:
    """wait_all_ranks=False names the first missing rank only (ProcessGroupGloo.cpp monitoredBarrier)."""
    from hanglens.analysis.barriers import subgroup_barrier_rows

    first = _barrier(0, 0, [1], 1)
    reached = _barrier(3, 3, None, 2)
    # rank 2 is quiet (stopped with no error) and never said it reached: late too; rank 3 said it did
    assert subgroup_barrier_rows([first, reached], 4, quiet=[1, 2])[0]["late"] == [1, 2]
    # a rank that is not quiet, or no rank that said it reached: nothing is added
    assert subgroup_barrier_rows([first, reached], 4, quiet=[1])[0]["late"] == [1]
    assert subgroup_barrier_rows([first], 4, quiet=[1, 2, 3])[0]["late"] == [1]
    # without the world size the later ranks are unknown
    assert subgroup_barrier_rows([first, reached], None, quiet=[1, 2])[0]["late"] == [1]
