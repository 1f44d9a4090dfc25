"""A failed DCP save raises one CheckpointException on every rank: the exits it explains are not culprits."""

from __future__ import annotations

from typing import Any

from failure_table import Failure as F
from failure_table import failure_table

from hanglens import api

_NODE_B = {"host": "node-b", "time": "2026-04-11_09:02:33"}

# written here from log-formats.md sections 3.3 and 3.6 (a `[rank0]:` console and torchrun's failure table,
# entries without a callstack when the worker's error.json was not written) and failure-signatures.md
# section 6 (an OSError of one rank's storage write); torch/distributed/checkpoint/utils.py
# `_DistWrapper.all_reduce` gathers rank 2's error to the coordinator and raises CheckpointException on every
# rank, whose text names rank 2; torchtitan's `--local-ranks-filter 0` shows rank 0's lines only (torch 2.13,
# 4 workers, values of our own)
CONSOLE = """\
[rank0]:[rank0]: Traceback (most recent call last):
[rank0]:[rank0]:   File "/home/user/titan/train.py", line 61, in <module>
[rank0]:[rank0]:     trainer.train()
[rank0]:[rank0]:   File \
"/home/user/.venv/lib/python3.11/site-packages/torch/distributed/checkpoint/utils.py", \
line 263, in all_reduce
[rank0]:[rank0]:     raise final_result
[rank0]:[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException \
ranks:dict_keys([2])
[rank0]:[rank0]: Traceback (most recent call last): (RANK 2)
[rank0]:[rank0]:   File \
"/home/user/.venv/lib/python3.11/site-packages/torch/distributed/checkpoint/filesystem.py", \
line 662, in write_data
[rank0]:[rank0]:     _write_files_from_queue(
[rank0]:[rank0]: OSError: [Errno 122] Disk quota exceeded: '/mnt/ckpt/step-40/__2_0.distcp'
W0411 09:02:33.120000 5120 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process \
5131 closing \
signal SIGTERM
E0411 09:02:33.400000 5120 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) \
local_rank: 1 (pid: 5132) of binary: /home/user/.venv/bin/python
""" + failure_table(
    F(1, 1, 5132, **_NODE_B), F(0, 1, 5130, **_NODE_B), F(2, 1, 5133, **_NODE_B),
    F(3, -15, 5134, signal_suffix=True, **_NODE_B))


def test_exits_of_ranks_a_checkpoint_exception_does_not_name_are_its_relay(tmp_path: Any) -> None:
    (tmp_path / "console.log").write_text(CONSOLE)
    assert api.analyze([tmp_path]).result.verdict.culprit_ranks == (2,)


def test_without_a_checkpoint_exception_every_exit_1_counts(tmp_path: Any) -> None:
    lines = [ln for ln in CONSOLE.splitlines(keepends=True) if "[rank0]:" not in ln]
    (tmp_path / "console.log").write_text("".join(lines))
    assert api.analyze([tmp_path]).result.verdict.culprit_ranks != (2,)
