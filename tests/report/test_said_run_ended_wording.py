"""The explanation of rule silent-hang-rank-said-its-run-ended quotes one rank's last line: with several
ranks inside the loop it says whose line it is (each rank's line carries its own tag and step)."""

from __future__ import annotations

from pathlib import Path

from hanglens import api

HEAD = """\
[default0]:[rank 0] epoch 1 validation done: loss 0.0690
[default1]:[rank 1] epoch 1 validation done: loss 0.0690
[default2]:[rank 2] epoch 1 validation done: loss 0.0690
"""
STOP = ("W1206 03:13:37.092000 19534 torch/distributed/elastic/agent/server/api.py:753] "
        "Received 15 death signal, shutting down workers\n")


def _summary(tmp_path: Path, body: str) -> dict:
    (tmp_path / "console.log").write_text(body)
    v = api.analyze([str(tmp_path)]).to_dict()["verdict"]
    assert v["rule_id"] == "silent-hang-rank-said-its-run-ended"
    return v


def test_two_ranks_inside_the_loop_name_whose_line_is_quoted(tmp_path: Path) -> None:
    v = _summary(tmp_path, HEAD + "[default0]:[rank 0] epoch 2 train: 6 batches\n"
                 "[default2]:[rank 2] epoch 2 train: 6 batches\n"
                 "[default1]:[rank 1] early stopping: validation loss did not improve\n"
                 "[default1]:[rank 1] training finished\n" + STOP)
    assert v["culprit_ranks"] == [1]
    assert 'ranks 0, 2 never did and stopped inside the loop (rank 0 last printed "[rank 0] epoch 2' in \
        " ".join(v["summary"].split())


def test_one_rank_inside_the_loop_is_quoted_as_its_own(tmp_path: Path) -> None:
    body = HEAD.replace("[default2]:[rank 2] epoch 1 validation done: loss 0.0690\n", "")
    v = _summary(tmp_path, body + "[default0]:[rank 0] epoch 2 train: 6 batches\n"
                 "[default1]:[rank 1] early stopping: validation loss did not improve\n"
                 "[default1]:[rank 1] training finished\n" + STOP)
    text = " ".join(v["summary"].split())
    assert 'rank 0 never did and last printed "[rank 0] epoch 2 train: 6 batches"' in text
    assert "stopped inside the loop" not in text
