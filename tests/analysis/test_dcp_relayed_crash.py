"""A DCP CheckpointException relays the failing ranks' own exceptions: the ranks it names failed, even when
only the coordinator's lines are in the input."""

from __future__ import annotations

from typing import Any

from hanglens import api
from hanglens.analysis.build import named_ranks


def _report(ranks: list[int], prefix: str = "[rank0]: ") -> str:
    """Rank 0's traceback of a failed dcp.save, in the shape torch 2.13 prints it (written here from
    torch/distributed/checkpoint/api.py `CheckpointException.__str__` and utils.py
    `_DistWrapper.reduce_scatter`; paths and messages of our own)."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/home/user/train/train.py", line 176, in main',
        "    dcp.save(states(model, optim, trainer), checkpoint_id=path)",
        '  File "/home/user/.venv/lib/python3.11/site-packages/torch/distributed/checkpoint/utils.py", '
        "line 221, in reduce_scatter",
        "    raise result",
        "torch.distributed.checkpoint.api.CheckpointException: CheckpointException "
        f"ranks:dict_keys([{', '.join(map(str, ranks))}])",
    ]
    for r in ranks:
        lines += [
            f"Traceback (most recent call last): (RANK {r})",
            '  File "/home/user/.venv/lib/python3.11/site-packages/torch/distributed/checkpoint/'
            'filesystem.py", line 652, in prepare_local_plan',
            "    self.fs.mkdir(self.path)",
            f"OSError: [Errno 30] Read-only file system: '/mnt/ckpt/step_{r}'",
        ]
    return "".join(f"{prefix}{x}\n" for x in lines)


def test_rank0_paste_names_the_relayed_rank(tmp_path: Any) -> None:
    saving = "2026-12-06 05:40:32,500 INFO [rank0] trainer: saving checkpoint to /mnt/ckpt/step_3\n"
    (tmp_path / "rank0.txt").write_text(saving + _report([2]))
    res = api.analyze([tmp_path]).result
    assert res.verdict.category.value == "rank_crash"
    assert res.verdict.culprit_ranks == (2,)
    assert 0 not in res.verdict.culprit_ranks


def test_relayed_row_quotes_the_failed_ranks_message(tmp_path: Any) -> None:
    (tmp_path / "rank0.txt").write_text(_report([1]))
    crash = api.analyze([tmp_path]).tables.fact("crash")
    row = crash[crash["rank"] == 1].iloc[0]
    assert "relayed by rank 0" in row["text"]
    assert "Read-only file system" in row["text"]


def test_two_named_ranks_are_both_culprits(tmp_path: Any) -> None:
    (tmp_path / "rank0.txt").write_text(_report([2, 3]))
    assert api.analyze([tmp_path]).result.verdict.culprit_ranks == (2, 3)


def test_unprefixed_paste_still_names_the_rank(tmp_path: Any) -> None:
    (tmp_path / "error.txt").write_text(_report([1], prefix=""))
    assert api.analyze([tmp_path]).result.verdict.culprit_ranks == (1,)


def test_named_ranks_count_as_ranks_of_the_job(tmp_path: Any) -> None:
    (tmp_path / "rank0.txt").write_text(_report([3]))
    tables = api.analyze([tmp_path]).tables
    assert 3 in named_ranks(tables.events)
    assert 3 in tables.ranks


def test_a_report_naming_its_own_rank_adds_nothing_new(tmp_path: Any) -> None:
    (tmp_path / "rank1.txt").write_text(_report([1], prefix="[rank1]: "))
    crash = api.analyze([tmp_path]).tables.fact("crash")
    assert list(crash["rank"]) == [1]
    assert "relayed" not in crash.iloc[0]["text"]


def test_the_failed_ranks_own_report_quotes_its_own_error(tmp_path: Any) -> None:
    """Every rank raises the same report; the named rank's own line says only that it failed, its error is
    in the traceback the report carries: the crash row quotes it."""
    (tmp_path / "rank2.txt").write_text(_report([2], prefix="[rank2]: "))
    crash = api.analyze([tmp_path]).tables.fact("crash")
    row = crash[crash["rank"] == 2].iloc[0]
    assert "relayed" not in row["text"]
    assert "(RANK 2: [Errno 30] Read-only file system" in row["text"]
