"""An unprefixed traceback of a local fault belongs to the only rank the launcher saw exit with code 1."""
# ruff: noqa: E501 - console lines stay whole, as torchrun prints them

from __future__ import annotations

from pathlib import Path

from hanglens import api


# torch 2.2-style console, written here from log-formats.md section 3.4 (the agent's `failed (exitcode ...)`
# line) and section 5.2 (a CUDA allocation failure raised as a RuntimeError): the worker's traceback carries
# no `[rankN]:` prefix (before 2.4), the agent names local rank 2 on one node.
def _console(exc_line: str, failed: str) -> str:
    return f"""\
Traceback (most recent call last):
  File "/home/user/proj/train.py", line 88, in <module>
    loss = model(batch).sum()
  File "/home/user/proj/model.py", line 41, in forward
    return self.head(x)
{exc_line}
[2025-02-11 08:14:03,220] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 5120 closing signal SIGTERM
[2025-02-11 08:14:03,221] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 5121 closing signal SIGTERM
[2025-02-11 08:14:03,222] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 5123 closing signal SIGTERM
{failed}
"""


OOM = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
       "capacity of 23.65 GiB of which 1.10 GiB is free.")
FAILED_2 = ("[2025-02-11 08:14:04,002] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
            "local_rank: 2 (pid: 5122) of binary: /usr/bin/python3")
FAILED_M6 = FAILED_2.replace("exitcode: 1", "exitcode: -6")


def _verdict(tmp_path: Path, text: str) -> dict:
    (tmp_path / "console.log").write_text(text)
    return api.analyze([tmp_path]).to_dict()["verdict"]


def test_unprefixed_oom_is_the_rank_that_exited_with_code_1(tmp_path: Path) -> None:
    v = _verdict(tmp_path, _console(OOM, FAILED_2))
    assert v["category"] == "oom"
    assert v["culprit_ranks"] == [2]


def test_a_rank_that_died_of_a_signal_is_not_the_writer(tmp_path: Path) -> None:
    # -6 is the watchdog's abort, not an exception: nothing says the traceback is rank 2's.
    v = _verdict(tmp_path, _console(OOM, FAILED_M6))
    assert v["culprit_ranks"] == []


def test_two_ranks_exiting_with_code_1_leave_the_writer_open(tmp_path: Path) -> None:
    other = FAILED_2.replace("local_rank: 2 (pid: 5122)", "local_rank: 0 (pid: 5120)")
    v = _verdict(tmp_path, _console(OOM, FAILED_2 + "\n" + other))
    assert v["culprit_ranks"] == []


def test_a_victims_timeout_traceback_is_not_moved(tmp_path: Path) -> None:
    victim = ("torch.distributed.DistBackendError: [Rank 2] Watchdog caught collective operation timeout: "
              "WorkNCCL(SeqNum=40, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
              "600310 milliseconds before timing out.")
    v = _verdict(tmp_path, _console(victim, FAILED_2))
    assert 2 not in v["culprit_ranks"]
