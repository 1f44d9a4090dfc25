"""A node's output file holds the NCCL lines of two processes (`<host>:<pid>:<tid>`, log-formats.md section
4.1) and one `[rankN]:` c10 line: that rank does not own the other process's lines, whose own
communicator-init line (`comm <ptr> rank <r> nranks <n>`, section 4.3) states its rank.

Lines written here from log-formats.md sections 4.1-4.4 and 1.5 (2.2 envelope), values our own.
"""
# ruff: noqa: E501 - log lines stay whole, as NCCL and the launchers print them
from __future__ import annotations

from pathlib import Path

from hanglens import api

NODE_B = """\
node-b:7700:7751 [0] NCCL INFO comm 0x55c4e1b02f20 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0x71ac0e55b3d2f049 - Init COMPLETE
node-b:7701:7752 [1] NCCL INFO comm 0x561d20a7e6c0 rank 3 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 commId 0x71ac0e55b3d2f049 - Init COMPLETE

node-b:7701:7783 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.4.0.1<38221> with error 12, opcode 0, len 0, vendor err 129 (Send) localGid ::ffff:10.4.0.2 remoteGids ::ffff:10.4.0.1
[rank2]:[E ProcessGroupNCCL.cpp:1182] [Rank 2] NCCL watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.19.3
"""


def test_the_second_pids_lines_keep_the_rank_its_init_line_states(tmp_path: Path) -> None:
    (tmp_path / "node-b.out").write_text(NODE_B)
    by_line = {(e.line, e.kind): e.rank for e in api.read([tmp_path]).events}
    assert by_line[(1, "nccl_comm_init")] == 2
    assert by_line[(2, "nccl_comm_init")] == 3
    assert by_line[(4, "network_error")] == 3
    assert by_line[(5, "watchdog_terminated")] == 2


def test_one_pids_nccl_lines_still_take_the_files_one_rank(tmp_path: Path) -> None:
    one = "\n".join(ln for ln in NODE_B.splitlines() if ":7701:" not in ln) + "\n"
    (tmp_path / "node-b.out").write_text(one + "plain print from the training loop\n")
    ranks = {e.rank for e in api.read([tmp_path]).events}
    assert ranks == {2}
