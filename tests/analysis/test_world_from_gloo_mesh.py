"""The world size gloo's mesh-setup lines state (`[Gloo] Rank <r> is connected to <n> peer ranks. Expected
number of connected peer ranks is : <m>`, printed by every process for each gloo group it joins), and what
it decides: one rank dead of a native signal in a console that shows no other rank's fault.

Consoles written here from parsers/gloo.py (the line as torch 2.9.1, 2.13 and 2.14.1 print it), log-formats.md
section 3.5 (the agent's `failed (exitcode: -11)` and SIGTERM lines) and section 3.6 (the failure table);
values our own. Shape seen in probe37 (session 22): a torch 2.9.1 worker died of SIGSEGV before its first
step and the agent stopped the other three.
"""
from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis.build import world_size_of


def _mesh(ranks: range, peers: int) -> str:
    return "".join(f"[Gloo] Rank {r} is connected to {peers} peer ranks. Expected number of connected peer "
                   f"ranks is : {peers}\n" for r in ranks)


SEGV = (
    "W0314 10:02:16.552000 4100 torch/distributed/elastic/multiprocessing/api.py:908] Sending process 4137 "
    "closing signal SIGTERM\n"
    "W0314 10:02:16.554000 4100 torch/distributed/elastic/multiprocessing/api.py:908] Sending process 4138 "
    "closing signal SIGTERM\n"
    "W0314 10:02:16.554000 4100 torch/distributed/elastic/multiprocessing/api.py:908] Sending process 4139 "
    "closing signal SIGTERM\n"
    "E0314 10:02:16.751000 4100 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -11) "
    "local_rank: 0 (pid: 4136) of binary: /home/user/.venv/bin/python3.11\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "=======================================================\n"
    "train.py FAILED\n"
    "-------------------------------------------------------\n"
    "Failures:\n"
    "  <NO_OTHER_FAILURES>\n"
    "-------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2026-03-14_10:02:16\n"
    "  host      : trainer-3\n"
    "  rank      : 0 (local_rank: 0)\n"
    "  exitcode  : -11 (pid: 4136)\n"
    "  error_file: <N/A>\n"
    "  traceback : Signal 11 (SIGSEGV) received by PID 4136\n"
    "=======================================================\n"
)


def test_gloo_mesh_lines_that_agree_state_the_world(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(_mesh(range(4), 3) + _mesh(range(4), 3))
    assert world_size_of(api.read([tmp_path]).events) == 4


def test_gloo_mesh_lines_of_groups_of_two_sizes_state_no_world(tmp_path: Path) -> None:
    # two jobs' logs side by side (or an excerpt starting after the default group): no one size
    (tmp_path / "a.log").write_text(_mesh(range(4), 3))
    (tmp_path / "b.log").write_text(_mesh(range(2), 1))
    assert world_size_of(api.read([tmp_path]).events) is None


def test_a_lone_process_group_of_one_states_no_world(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(_mesh(range(1), 0) * 3)
    assert world_size_of(api.read([tmp_path]).events) is None


def test_one_worker_dead_of_sigsegv_among_four_gloo_ranks_is_the_culprit(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(_mesh(range(4), 3) + "epoch 0 building model\n" + SEGV)
    v = api.analyze([str(tmp_path)]).to_dict()["verdict"]
    assert (v["category"], v["culprit_ranks"]) == ("rank_crash", [0])
