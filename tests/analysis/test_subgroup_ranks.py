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
