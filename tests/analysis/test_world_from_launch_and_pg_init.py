"""World sizes stated by the launcher's command line and by the default group's init options, and the rank
that wrote nothing while every other rank of that world reported its wait (status._unheard).

Consoles written here from log-formats.md section 3.5 (torchrun options), section 1.6 (`ProcessGroupNCCL
initialization options: size: <n>, global rank: <g>`) and section 1.4 (watchdog timeouts), values our own.
"""
from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis.build import world_size_of


def _timeout(rank: int, seq: int = 904) -> str:
    return (f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=16, NumelOut=16, Timeout(ms)=1800000) ran for "
            f"18003{rank:02d} milliseconds before timing out.\n")


def _read(tmp_path: Path, text: str) -> api.Analysis:
    (tmp_path / "console.txt").write_text(text)
    return api.analyze([str(tmp_path / "console.txt")])


def test_a_torchrun_command_with_nnodes_and_nproc_states_the_world(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text("$ torchrun --nnodes=2 --nproc-per-node=3 --rdzv-backend=c10d x.py\n")
    assert world_size_of(api.read([tmp_path]).events) == 6


def test_a_torchrun_command_without_a_fixed_node_count_states_no_world(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text("$ torchrun --nnodes=1:4 --nproc-per-node=3 x.py\n")
    assert world_size_of(api.read([tmp_path]).events) is None


def test_the_one_rank_of_a_stated_world_that_wrote_nothing_is_named(tmp_path: Path) -> None:
    text = "$ torchrun --standalone --nproc_per_node=6 train.py\n"
    text += "".join(_timeout(r) for r in (0, 1, 2, 4, 5))
    v = _read(tmp_path, text).to_dict()["verdict"]
    assert v["rule_id"] == "rank-unheard-while-all-others-waited"
    assert (v["culprit_ranks"], v["confidence"]) == ([3], "low")


def test_without_the_stated_world_the_gap_names_nobody(tmp_path: Path) -> None:
    v = _read(tmp_path, "".join(_timeout(r) for r in (0, 1, 2, 4, 5))).to_dict()["verdict"]
    assert v["culprit_ranks"] == []


def test_half_the_world_silent_names_nobody(tmp_path: Path) -> None:
    text = "$ torchrun --standalone --nproc_per_node=6 train.py\n" + "".join(_timeout(r) for r in (1, 4, 5))
    v = _read(tmp_path, text).to_dict()["verdict"]
    assert v["culprit_ranks"] == []


def test_the_default_groups_size_line_states_the_world_for_the_gap(tmp_path: Path) -> None:
    init = ("[rank0]:[I0521 11:40:09.771204318 ProcessGroupNCCL.cpp:905] [PG 0 (default_pg) Rank 0] "
            "ProcessGroupNCCL initialization options: size: 4, global rank: 0, TIMEOUT(ms): 1800000, "
            "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0\n")
    v = _read(tmp_path, init + "".join(_timeout(r) for r in (0, 2, 3))).to_dict()["verdict"]
    assert v["culprit_ranks"] == [1]
