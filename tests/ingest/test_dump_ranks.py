"""Ranks of stack dumps saved under names of the user's choosing: from a numbered series of files matching the
stated world size, or from the dump's `Process <pid>` mapped through the job's other lines; never guessed.
Dumps and console lines are written here (py-spy 0.3-0.4 format, torchrun 2.x ChildFailedError table).
"""

from __future__ import annotations

from pathlib import Path

from failure_table import Failure as F
from failure_table import failure_table

from hanglens.ingest import read_inputs


def dump(pid: int, call: str) -> str:
    return (f"Process {pid}: /home/user/venv/bin/python -u train.py\n"
            "Python v3.11.7 (/usr/bin/python3.11)\n\n"
            f"Thread {pid} (idle): \"MainThread\"\n"
            f"    {call} (torch/distributed/distributed_c10d.py:2610)\n"
            "    <module> (train.py:50)\n")


def console(world: int) -> str:
    return "".join(f"[rank {r}] RANK={r} LOCAL_RANK={r} WORLD_SIZE={world} MASTER_ADDR=10.0.0.9\n"
                   for r in range(world))


def dump_ranks(root: Path) -> dict[str, int | None]:
    ing = read_inputs([root], jobs=1)
    return {e.ref.path: e.rank for e in ing.events if e.kind == "stack_dump"}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    return root


def test_numbered_series_matching_the_world_size(tmp_path: Path) -> None:
    files = {f"hang/snap_{r}.out": dump(9100 + r, "all_reduce") for r in range(3)}
    files["console.log"] = console(3)
    assert dump_ranks(write(tmp_path, files)) == {f"hang/snap_{r}.out": r for r in range(3)}


def test_series_without_a_stated_world_size_stays_unknown(tmp_path: Path) -> None:
    files = {f"snap_{r}.out": dump(9100 + r, "all_reduce") for r in range(3)}
    assert set(dump_ranks(write(tmp_path, files)).values()) == {None}


def _proc_file(r: int, timed_out: bool) -> str:
    # one process's output file (a launcher that writes `<name>_<N>.txt` per process and adds no prefix);
    # torch 2.1 watchdog lines state the writer's rank as `[Rank r]` (log-formats.md section 1.5)
    if not timed_out:
        return ("Traceback (most recent call last):\n  File \"/home/user/t.py\", line 9, in <module>\n"
                "KeyError: 'pixel_values'\n")
    return (f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=310, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=1800000) "
            "ran for 1800212 milliseconds before timing out.\n")


def exception_ranks(root: Path) -> set[int | None]:
    return {e.rank for e in read_inputs([root], jobs=1).events if e.kind == "exception"}


def test_series_whose_writers_state_their_numbers_needs_no_world_size(tmp_path: Path) -> None:
    # no line states the world size; files 0 and 2 hold their writers' own `[Rank 0]` and `[Rank 2]` lines
    files = {f"out/proc_log_{r}.txt": _proc_file(r, r != 1) for r in range(3)}
    assert exception_ranks(write(tmp_path, files)) == {1}


def test_series_with_one_writer_stating_its_number_stays_unknown(tmp_path: Path) -> None:
    files = {f"out/proc_log_{r}.txt": _proc_file(r, r == 0) for r in range(3)}
    assert exception_ranks(write(tmp_path, files)) == {None}


def test_series_numbered_like_the_ranks_other_files_show(tmp_path: Path) -> None:
    # no line states the world size; each rank's own log (`run/rank<N>.log`) shows ranks 0..3
    files = {f"stacks/stuck_r{r}.dump": dump(9100 + r, "all_gather") for r in range(4)}
    files.update({f"run/rank{r}.log": f"2026-01-20 03:11:0{r} | INFO | step=4 loss=1.{r}\n"
                  for r in range(4)})
    assert dump_ranks(write(tmp_path, files)) == {f"stacks/stuck_r{r}.dump": r for r in range(4)}


def test_series_not_numbered_like_the_ranks_shown_stays_unknown(tmp_path: Path) -> None:
    # the other files show ranks 0..3, the series holds 3 files: not one per rank
    files = {f"stuck_r{r}.dump": dump(9100 + r, "all_gather") for r in range(3)}
    files["console.log"] = "".join(f"[rank{r}]: step 4\n" for r in range(4))
    assert set(dump_ranks(write(tmp_path / "a", files)).values()) == {None}
    # ranks 1 and 2 shown: not 0..W-1, so no world size stands for them
    files = {f"stuck_r{r}.dump": dump(9100 + r, "all_gather") for r in range(2)}
    files["console.log"] = "".join(f"[rank{r}]: step 4\n" for r in (1, 2))
    assert set(dump_ranks(write(tmp_path / "b", files)).values()) == {None}


def test_series_shorter_than_the_world_stays_unknown(tmp_path: Path) -> None:
    files = {f"snap_{r}.out": dump(9100 + r, "all_reduce") for r in (0, 1)}
    files["console.log"] = console(4)
    assert set(dump_ranks(write(tmp_path, files)).values()) == {None}


def test_series_contradicted_by_a_stated_rank_stays_unknown(tmp_path: Path) -> None:
    files = {f"snap_{r}.out": dump(9100 + r, "all_reduce") for r in (0, 1)}
    files["snap_1.out"] = "[rank0]: hello\n" + files["snap_1.out"]
    files["console.log"] = console(2)
    assert dump_ranks(write(tmp_path, files))["snap_0.out"] is None


def _child_failed(pid0: int, pid1: int) -> str:
    """Both workers of one agent stopped by SIGTERM, rank 0 the root cause."""
    node = {"host": "box-5", "time": "2026-01-20_03:11:09"}
    return failure_table(F(0, -15, pid0, **node), F(1, -15, pid1, **node))


def test_process_pid_mapped_through_the_failure_table(tmp_path: Path) -> None:
    files = {"a.txt": dump(30411, "barrier"), "b.txt": dump(30412, "all_reduce"),
             "c.txt": dump(3099, "barrier"),
             "torchrun.log": _child_failed(30411, 30412)}
    assert dump_ranks(write(tmp_path, files)) == {"a.txt": 0, "b.txt": 1, "c.txt": None}


def test_two_processes_dumps_in_one_paste_are_not_its_one_ranks(tmp_path: Path) -> None:
    """Two py-spy dumps (two `Process <pid>` headers) pasted into one file beside one rank's `[rankN]:`
    line are two processes' stacks; the file's one rank owns at most one of them and the file does not say
    which (failure-signatures.md section 16.4)."""
    body = (dump(40221, "_try_get_data") + "\n" + dump(40219, "synchronize")
            + "[rank0]:[E614 03:28:40.221093876 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
              "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
              "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")
    ing = read_inputs([write(tmp_path, {"issue.txt": body})], jobs=1)
    assert {e.rank for e in ing.events if e.kind == "stack_dump"} == {None}
