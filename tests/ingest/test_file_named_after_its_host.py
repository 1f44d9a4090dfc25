"""A file named after the one host its NCCL lines name (`node-b.log`) is that node's output: its `[rankN]:`
lines without a host of their own ran there, even when the file holds two processes' lines (two NCCL pids,
so no one rank owns the NCCL lines) (log-formats.md section 4.1: NCCL's `<host>:<pid>:<tid>`
envelope; failure-signatures.md section 0.2 R5: a node's fault reaches the ranks on it).

Lines written here from log-formats.md sections 4.1 and 1.6, values our own.
"""
# ruff: noqa: E501 - log lines stay whole, as NCCL and the launchers print them
from __future__ import annotations

from pathlib import Path

from hanglens import api

LINES = """\
[2025-09-02 10:14:52] node-b:5530:5530 [0] misc/socket.cc:800 NCCL WARN Bootstrap : no socket interface found
[2025-09-02 10:14:52] node-b:5531:5531 [1] misc/socket.cc:800 NCCL WARN Bootstrap : no socket interface found
[rank2]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3699, internal error - please report this issue to the NCCL developers, NCCL version 2.27.3
[rank3]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3699, internal error - please report this issue to the NCCL developers, NCCL version 2.27.3
"""


def _hosts(tmp_path: Path, name: str, text: str = LINES) -> dict[int | None, set[str | None]]:
    (tmp_path / name).write_text(text)
    out: dict[int | None, set[str | None]] = {}
    for e in api.read([tmp_path]).events:
        out.setdefault(e.rank, set()).add(e.host)
    return out


def test_a_rank_line_in_a_file_named_after_its_nccl_host_is_on_that_host(tmp_path: Path) -> None:
    assert _hosts(tmp_path, "node-b.log")[3] == {"node-b"}


def test_a_file_whose_name_does_not_carry_the_host_places_nobody(tmp_path: Path) -> None:
    assert _hosts(tmp_path, "paste.txt")[3] == {None}


def test_a_host_that_is_only_part_of_a_word_of_the_name_places_nobody(tmp_path: Path) -> None:
    assert _hosts(tmp_path, "node-bx.log")[3] == {None}


def test_a_file_naming_two_hosts_places_nobody(tmp_path: Path) -> None:
    text = LINES + "node-c:6001:6001 [0] NCCL INFO Bootstrap : Using ib0:10.1.0.3<0>\n"
    assert _hosts(tmp_path, "node-b.log", text)[3] == {None}
