"""The world size two `srun -l` tasks' torchrun failure tables state together (build._world_of_task_tables).

Consoles written here from log-formats.md section 3.5 (the ChildFailedError table) and section 9.3 (`srun -l`
task labels): two nodes, one torchrun agent per task.
"""
from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis.build import world_size_of


def _table(task: int, rank: int, local: int, others: str = "  <NO_OTHER_FAILURES>") -> str:
    rows = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        others,
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-05-19_10:02:11",
        "  host      : node-4",
        f"  rank      : {rank} (local_rank: {local})",
        f"  exitcode  : 1 (pid: {4410 + rank})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    return "".join(f"{task}: {r}\n" for r in rows)


def _world(tmp_path: Path, text: str) -> int | None:
    (tmp_path / "slurm-77.out").write_text(text)
    return world_size_of(api.read([tmp_path]).events)


def test_every_task_table_together_gives_the_world(tmp_path: Path) -> None:
    assert _world(tmp_path, _table(0, 0, 0) + _table(1, 1, 0)) == 2


def test_a_task_without_a_table_gives_nothing(tmp_path: Path) -> None:
    # task 0's table is missing: rank 0 (and any other) may exist unseen
    assert _world(tmp_path, _table(1, 1, 0)) is None


def test_a_gap_between_the_tables_gives_nothing(tmp_path: Path) -> None:
    # task 1's worker is rank 2: rank 1 is nobody's, so the tables do not hold the whole job
    assert _world(tmp_path, _table(0, 0, 0) + _table(1, 2, 0)) is None


def test_a_task_that_wrote_lines_but_no_table_gives_nothing(tmp_path: Path) -> None:
    # task 1's node was killed with its agent: its ranks wrote lines, but no table says how many there were
    other = ("[1]:\n0:   time      : 2026-05-19_10:02:11\n0:   host      : node-4\n"
             "0:   rank      : 0 (local_rank: 0)\n0:   exitcode  : -15 (pid: 4409)\n0:   error_file: <N/A>\n"
             "0:   traceback : Signal 15 (SIGTERM) received by PID 4409")
    both = _table(0, 1, 1, other)
    assert _world(tmp_path, both) == 2   # the table alone places ranks 0-1
    lines = "1: | distributed init (rank 2): env://\n1: | distributed init (rank 3): env://\n"
    assert _world(tmp_path, lines + both) is None
