"""In a tail excerpt, a rank the launcher's failure table lists with exit code 1 and no line of its own is
not named for it when the ranks whose collective timeouts are in the excerpt exited with that same code: it
may be one more timed-out rank whose lines were cut off (failure-signatures.md sections 0.1 and 17). A
failure-table entry is the agent's line about a rank, not the rank's own output.

Lines written here from log-formats.md sections 3.4-3.6 (torchrun 2.5+ agent lines, the failure table) and
7 (gloo's `Timed out waiting <ms>ms for recv operation to complete`), shaped like probe50's torch 2.13 runs.
"""
# ruff: noqa: E501 - console lines stay whole, as torchrun prints them
from __future__ import annotations

from pathlib import Path

from hanglens import api


def _entry(i: int, rank: int, code: int, pid: int) -> str:
    sig = "  (SIGTERM)" if code == -15 else ""
    tb = (f"Signal 15 (SIGTERM) received by PID {pid}" if code == -15
          else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    return f"""[{i}]:
  time      : 2026-12-06_00:09:38
  host      : localhost
  rank      : {rank} (local_rank: {rank})
  exitcode  : {code} (pid: {pid}){sig}
  error_file: <N/A>
  traceback : {tb}"""


TAIL = f"""\
[default0]:[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting 10000ms for send operation to complete
[default2]:[rank2]: Traceback (most recent call last):
[default2]:[rank2]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete
W1206 00:09:38.696000 10818 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 10842 closing signal SIGTERM
E1206 00:09:38.897000 10818 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 10839) of binary: /home/user/.venv/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/home/user/train/train.py FAILED
------------------------------------------------------------
Failures:
{_entry(1, 1, 1, 10840)}
{_entry(2, 2, 1, 10841)}
{_entry(3, 3, -15, 10842)}
------------------------------------------------------------
Root Cause (first observed failure):
{_entry(0, 0, 1, 10839)}
============================================================
"""


def _verdict(tmp_path: Path, text: str) -> dict:
    (tmp_path / "console.log").write_text(text)
    return api.analyze([tmp_path]).to_dict()["verdict"]


def test_an_exit_code_like_the_timed_out_ranks_names_nobody(tmp_path: Path) -> None:
    v = _verdict(tmp_path, TAIL)
    assert v["category"] != "rank_crash"
    assert v["culprit_ranks"] == []


def test_a_table_entry_alone_is_not_a_rank_s_own_output(tmp_path: Path) -> None:
    v = _verdict(tmp_path, TAIL)
    assert 1 not in v["culprit_ranks"] and 3 not in v["culprit_ranks"]


def test_an_exit_code_unlike_the_victims_still_names_the_rank(tmp_path: Path) -> None:
    # the peers lost the connection and were stopped by the agent (-15): rank 1's exit 1 is its own
    text = (TAIL.replace("Timed out waiting 10000ms for send operation to complete", "Connection closed by peer [127.0.0.1]:9426")
            .replace("Timed out waiting 10000ms for recv operation to complete", "Connection closed by peer [127.0.0.1]:9427")
            .replace(_entry(2, 2, 1, 10841), _entry(2, 2, -15, 10841))
            .replace(_entry(0, 0, 1, 10839), _entry(0, 0, -15, 10839)))
    v = _verdict(tmp_path, text)
    assert v["category"] == "rank_crash"
    assert v["culprit_ranks"] == [1]


def test_a_gloo_timeout_whose_rank_was_stopped_still_explains_an_exit_code_1(tmp_path: Path) -> None:
    # probe56 (an accelerate loop, torch 2.13): the one traceback left is rank 2's gloo timeout, and the agent
    # SIGTERMed rank 2 before it exited; gloo raises its timeouts in the caller, so a timed-out rank that
    # exits does so with code 1: rank 3's exit 1 with no line of its own names no fault of its own
    text = (TAIL.replace("[default0]:[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting 10000ms for send operation to complete\n", "")
            .replace(_entry(1, 1, 1, 10840), _entry(1, 1, -15, 10840))
            .replace(_entry(2, 2, 1, 10841), _entry(2, 2, -15, 10841))
            .replace(_entry(3, 3, -15, 10842), _entry(3, 3, 1, 10842))
            .replace(_entry(0, 0, 1, 10839), _entry(0, 0, -15, 10839))
            .replace("failed (exitcode: 1) local_rank: 0 (pid: 10839)", "failed (exitcode: 1) local_rank: 3 (pid: 10842)"))
    v = _verdict(tmp_path, text)
    assert v["category"] != "rank_crash"
    assert 3 not in v["culprit_ranks"]
