"""The world size DeepSpeed's launcher states with its `global_rank_mapping=` (deepspeed/launcher/launch.py
`main`: each node's launcher logs the whole job's layout, every host with its global ranks), and the
straggler whose rank-less progress bar it lets us name.

Lines written here from log-formats.md section 9.2-9.3 (DeepSpeed logger, pdsh `<host>: ` prefix),
section 1.5 (2.6+ watchdog lines) and failure-signatures.md section 15 (peers time out in a barrier while
one rank's preprocessing bar still runs), values our own.
"""
# ruff: noqa: E501 - log lines stay whole, as NCCL and the launchers print them
from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis.build import world_size_of

MAPPING = ("n1: [2026-01-05 09:00:01,100] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict("
           "<class 'list'>, {'n1': [0, 1, 2], 'n2': [3, 4, 5]})\n")


def _timeout(host: str, rank: int) -> str:
    return (f"{host}: [rank{rank}]:[E105 09:40:1{rank}.123456789 ProcessGroupNCCL.cpp:685] [Rank {rank}] Watchdog "
            f"caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=1800000) ran for 18000{rank:02d} milliseconds before timing out.\n")


def test_the_deepspeed_mapping_states_the_world(tmp_path: Path) -> None:
    (tmp_path / "ds.log").write_text(MAPPING)
    assert world_size_of(api.read([tmp_path]).events) == 6


def test_a_mapping_with_a_gap_states_no_world(tmp_path: Path) -> None:
    (tmp_path / "ds.log").write_text(MAPPING.replace("[3, 4, 5]", "[4, 5]"))
    assert world_size_of(api.read([tmp_path]).events) is None


def test_the_rankless_bar_of_a_mapped_world_is_the_one_rank_not_waiting(tmp_path: Path) -> None:
    text = MAPPING + ("n1: Running tokenizer on dataset (num_proc=8):  52%|█████▏    | 520000/1000000 "
                      "[29:50<27:32, 290.50 examples/s]\n")
    text += "".join(_timeout("n1", r) for r in (1, 2)) + "".join(_timeout("n2", r) for r in (3, 4, 5))
    (tmp_path / "ds.log").write_text(text)
    v = api.analyze([str(tmp_path / "ds.log")]).to_dict()["verdict"]
    assert (v["category"], v["culprit_ranks"]) == ("straggler", [0])
