"""A rank's status row: "silent" only for a rank with no line of its own in the input."""

from __future__ import annotations

from pathlib import Path

from hanglens import api

# Four ranks each print a warning no parser reads, then a shared progress bar finishes: every rank wrote.
CONSOLE = "".join(
    f"[rank{r}]:[W0310 09:14:02.11820{r}000 ProcessGroupNCCL.cpp:4115] [PG 0 (default_pg) Rank {r}]"
    f"  using GPU {r} to perform barrier as devices used by this process are currently unknown."
    " This can potentially cause a hang if this rank to GPU mapping is incorrect.\n"
    for r in (1, 0, 3, 2)
) + "100%|##########| 120/120 [04:10<00:00,  2.09s/it]\n"


def _statuses(tmp_path: Path, text: str) -> dict[int, str]:
    (tmp_path / "console.log").write_text(text)
    doc = api.analyze([tmp_path]).to_dict()
    return {r["rank"]: r["status"] for r in doc["ranks"]}


def test_ranks_whose_lines_no_parser_reads_are_not_silent(tmp_path: Path) -> None:
    assert _statuses(tmp_path, CONSOLE) == {0: "ok", 1: "ok", 2: "ok", 3: "ok"}


def test_a_rank_below_the_highest_with_no_line_is_silent(tmp_path: Path) -> None:
    text = "".join(ln + "\n" for ln in CONSOLE.splitlines() if not ln.startswith("[rank1]"))
    assert _statuses(tmp_path, text)[1] == "silent"
