"""A DETAIL mismatch report from rank w naming rank p says that every rank below p ran what w ran:
ProcessGroupWrapper compares w's fingerprint with each rank's in rank order and raises at the first that
differs (torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp `verify_tensors`). One report of four ranks
then names the odd one.

Lines written here from log-formats.md section 2.1 (the DETAIL `Detected mismatch between collectives on
ranks` text, torch 2.13 shape), values our own.
"""
# ruff: noqa: E501 - log lines stay whole, as the runtime prints them
from __future__ import annotations

from pathlib import Path

from hanglens import api

FP = "CollectiveFingerPrint(SequenceNumber=27, OpType={op}, TensorShape=[2], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))"


def _report(w: int, p: int, mine: str, theirs: str) -> str:
    return (f"[rank{w}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {w} is running collective: "
            f"{FP.format(op=mine)}, but Rank {p} is running collective: {FP.format(op=theirs)}.Collectives differ in the "
            f"following aspects:   Op type: {mine}vs {theirs}\n")


def _verdict(tmp_path: Path, text: str) -> dict:
    (tmp_path / "issue.txt").write_text("rank 0/4 started on pid 100\n" + text)
    return api.analyze([tmp_path]).to_dict()["verdict"]


def test_rank_0_naming_rank_3_says_ranks_1_and_2_agree_with_it(tmp_path: Path) -> None:
    v = _verdict(tmp_path, _report(0, 3, "ALLREDUCE", "ALLGATHER"))
    assert v["culprit_ranks"] == [3]


def test_rank_3_naming_rank_0_says_nothing_of_ranks_1_and_2(tmp_path: Path) -> None:
    v = _verdict(tmp_path, _report(3, 0, "ALLGATHER", "ALLREDUCE"))
    assert v["culprit_ranks"] == []
