"""A rank's status row: "silent" only for a rank with no line of its own in the input."""

from __future__ import annotations

from pathlib import Path

from failure_table import Failure as F
from failure_table import failure_table

from hanglens import api

# Four ranks each print a warning no parser reads, then a shared progress bar finishes: every rank wrote.
CONSOLE = "".join(
    f"[rank{r}]:[W0310 09:14:02.11820{r}000 ProcessGroupNCCL.cpp:4115] [PG 0 (default_pg) Rank {r}]"
    f"  using GPU {r} to perform barrier as devices used by this process are currently unknown."
    " This can potentially cause a hang if this rank to GPU mapping is incorrect.\n"
    for r in (1, 0, 3, 2)
) + "100%|##########| 120/120 [04:10<00:00,  2.09s/it]\n"


def _statuses(tmp_path: Path, text: str) -> dict[int, str]:
    (tmp_path / "console.log").write_text(text)
    doc = api.analyze([tmp_path]).to_dict()
    return {r["rank"]: r["status"] for r in doc["ranks"]}


def test_ranks_whose_lines_no_parser_reads_are_not_silent(tmp_path: Path) -> None:
    assert _statuses(tmp_path, CONSOLE) == {0: "ok", 1: "ok", 2: "ok", 3: "ok"}


def test_a_rank_below_the_highest_with_no_line_is_silent(tmp_path: Path) -> None:
    text = "".join(ln + "\n" for ln in CONSOLE.splitlines() if not ln.startswith("[rank1]"))
    assert _statuses(tmp_path, text)[1] == "silent"


# torch 2.13 `--tee 3` console (written here from log-formats.md section 3.5 and the gloo lost-peer template):
# local rank 3 stops early and exits 0, so the agent's table lists 0-2 only; its tee prefix shows it was
# one of this agent's workers.
TEE_EXIT0 = """\
[default0]:step 1 loss 0.5120
[default1]:step 1 loss 0.5305
[default2]:step 1 loss 0.4988
[default3]:step 1 loss 0.5077
[default3]:step 2 loss 0.4811
[default1]:[rank1]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:40213
W0519 10:02:11.512000 4410 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 4412 closing signal SIGTERM
W0519 10:02:11.513000 4410 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 4414 closing signal SIGTERM
E0519 10:02:11.700000 4410 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 4413) of binary: /home/user/venv/bin/python
""" + failure_table(F(1, 1, 4413), F(0, -15, 4412), F(2, -15, 4414))  # noqa: E501


def test_a_teed_worker_missing_from_a_whole_table_exited_clean(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(TEE_EXIT0)
    a = api.analyze([tmp_path])
    status = a.tables.fact("rank_status")
    assert set(status[status["exited_clean"]]["rank"]) == {3}
    assert list(a.result.verdict.culprit_ranks) == [3]


# torch 2.13-style console written here from log-formats.md section 3.4-3.6 (the agent's failure table) and
# the gloo timeout template: rank 1 died of SIGSEGV (its own death), rank 0 then timed out waiting for it.
SEGV = """\
[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete
E0519 10:32:11.700000 4410 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -11) local_rank: 1 (pid: 4413) of binary: /home/user/venv/bin/python
""" + failure_table(F(1, -11, 4413), F(0, 1, 4412, time="2026-05-19_10:32:11"))  # noqa: E501


# A rule that names no culprit and no victims: the engine's default victims are used.
NAMELESS_RULE = """\
id: timeout-seen
title: A rank timed out
description: test rule, names nobody (the engine's default victims apply)
category: control_flow_divergence
confidence: low
priority: 99
match:
  all:
    - event: hang_detected
explanation: A rank timed out.
remediation: ['none']
tests:
  - name: a-timeout
    expect: match
    logs:
      r.log: |
        [rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete
  - name: nothing
    expect: no-match
    logs:
      r.log: |
        step 1 loss 0.5
"""  # noqa: E501


def test_a_rank_that_died_of_its_own_signal_is_never_a_default_victim(tmp_path: Path) -> None:
    rules = tmp_path / "rules" / "control_flow_divergence"
    rules.mkdir(parents=True)
    (rules / "timeout-seen.yaml").write_text(NAMELESS_RULE)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "console.log").write_text(SEGV)
    found = api.analyze([logs], rules=api.load_rules([tmp_path / "rules"], builtin=False))
    v = found.to_dict()["verdict"]
    assert v["rule_id"] == "timeout-seen" and v["culprit_ranks"] == []
    assert v["victim_ranks"] == [0]   # rank 0 timed out waiting; rank 1 died of SIGSEGV, its own death


# Written here from failure-signatures.md section 15 ("knock-on errors ... that make it look like a victim"):
# ranks 2-3 time out at 11:20:16; ranks 0-1 lose their connections a minute later, when 2-3 have exited.
def _timeouts_then_lost(lost_at: str) -> dict[str, str]:
    lost = (f"2026-05-02 {lost_at},300 ERROR train: training failed\nTraceback (most recent call last):\n"
            '  File "/home/user/train.py", line 88, in main\n    work.wait()\n'
            "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
            "peer [127.0.0.1]:4410\n")
    timed = ("2026-05-02 11:20:16,400 ERROR train: training failed\nTraceback (most recent call last):\n"
             '  File "/home/user/train.py", line 88, in main\n    work.wait(timeout=timedelta(seconds=15))\n'
             "RuntimeError: Operation timed out!\n")
    step = "2026-05-02 11:20:01,100 INFO train: iteration 5 loss 4.20\n"
    return {"rank0.log": step + lost, "rank1.log": step + lost, "rank2.log": step + timed,
            "rank3.log": step + timed}


def _quiet(tmp_path: Path, files: dict[str, str]) -> set[int]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    frame = api.analyze([tmp_path]).tables.fact("rank_status")
    return {int(r) for r, q in zip(frame["rank"], frame["quiet"], strict=True) if q}


def test_lost_connection_after_the_peers_timed_out_leaves_a_rank_quiet(tmp_path: Path) -> None:
    assert _quiet(tmp_path, _timeouts_then_lost("11:21:02")) == {0, 1}


def test_lost_connection_before_the_peers_timed_out_is_an_error_of_its_own(tmp_path: Path) -> None:
    assert _quiet(tmp_path, _timeouts_then_lost("11:20:05")) == set()


# A torch.multiprocessing.spawn console (written here from torch/multiprocessing/spawn.py's messages): the
# parent stopped the survivors and raised for the process that died of a signal; gloo's size check was
# printed without a rank (log-formats.md section 9.2: the C++ abort writes straight to stderr).
SPAWN_ABORT = """\
[rank 0] step 3 loss 2.11
[rank 1] step 3 loss 2.09
[rank 2] step 3 loss 2.14
terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at /opt/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 2048 vs 16. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?
W0101 10:00:03.100000 700 torch/multiprocessing/spawn.py:165] Terminating process 701 via signal SIGTERM
W0101 10:00:03.101000 700 torch/multiprocessing/spawn.py:165] Terminating process 703 via signal SIGTERM
Traceback (most recent call last):
  File "/home/user/train.py", line 90, in <module>
    mp.spawn(main, nprocs=3, join=True)
  File "/home/user/.venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 208, in join
    raise ProcessExitedException(
torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT
"""  # noqa: E501


def test_a_spawn_process_that_died_of_a_signal_has_it_in_its_status(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(SPAWN_ABORT)
    analysis = api.analyze([tmp_path])
    status = analysis.tables.fact("rank_status").set_index("rank")
    assert status.loc[1, "signal"] == "SIGABRT" and status.loc[0, "signal"] is None
    # ... so the size check printed without a rank is that process's
    assert list(analysis.tables.fact("transfer_size_error")["rank"]) == [1]
