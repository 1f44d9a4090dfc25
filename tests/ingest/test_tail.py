"""Each writer's last lines (hanglens/ingest/tail.py): bounded, per writer, without a stop's leftovers."""

from __future__ import annotations

from pathlib import Path

from hanglens.ingest import read_inputs
from hanglens.ingest.tail import TAIL_BYTES, TAIL_LINES, Tail
from hanglens.model import Event


def last_lines(events: list[Event]) -> dict[int | None, Event]:
    return {e.rank: e for e in events if e.kind == "last_line"}


def test_a_worker_file_s_last_line_and_the_lines_before_it(tmp_path: Path) -> None:
    # a --log-dir tree (torchrun 2.13 `attempt_0/<local rank>/stdout.log`), the script's own prints
    for r, upto in ((0, 3), (1, 2)):
        d = tmp_path / "logs" / "none_x" / "attempt_0" / str(r)
        d.mkdir(parents=True)
        lines = ["worker up", "building vocabulary ...", "vocabulary ready: 32000 tokens"][:upto]
        (d / "stdout.log").write_text("\n".join(lines) + "\n")
    got = last_lines(read_inputs([tmp_path]).events)
    assert got[0].text == "vocabulary ready: 32000 tokens"
    assert got[0].get("before") == ["worker up", "building vocabulary ..."]
    assert got[1].text == "building vocabulary ..." and got[1].line == 2


def test_a_tee_console_gives_each_worker_its_own_last_line_and_skips_the_interrupt(tmp_path: Path) -> None:
    # torchrun --tee 3 (log-formats.md section 3): `[default<local rank>]:` on every worker line; a Ctrl-C
    # leaves a KeyboardInterrupt traceback behind each worker's last line of its own
    (tmp_path / "console.log").write_text(
        "[default0]:loading shard 3 of 5\n"
        "[default1]:loading shard 3 of 5\n"
        "[default0]:shard 3: batch ready, syncing gradients\n"
        "W1206 00:07:55.006000 9727 torch/distributed/elastic/agent/server/api.py:753] Received 2 death "
        "signal, shutting down workers\n"
        "[default1]:[rank1]: Traceback (most recent call last):\n"
        '[default1]:[rank1]:   File "/home/user/train/silent.py", line 81, in stall\n'
        "[default1]:[rank1]:     time.sleep(3600)\n"
        "[default1]:[rank1]: KeyboardInterrupt\n")
    got = last_lines(read_inputs([tmp_path]).events)
    assert got[0].text == "shard 3: batch ready, syncing gradients"
    assert got[1].text == "loading shard 3 of 5"


def test_a_stack_dump_file_has_no_last_line_of_its_own(tmp_path: Path) -> None:
    # py-spy 0.4 `dump` output: its header and the dumped stack say where the process was, not what it printed
    (tmp_path / "pyspy_rank2.txt").write_text(
        "Process 14804: /home/user/.venv/bin/python3 -u /home/user/train/silent.py\n"
        "Python v3.11.7 (/home/user/.pyenv/versions/3.11.7/bin/python3.11)\n\n"
        'Thread 14804 (idle): "MainThread"\n'
        "    stall (silent.py:81)\n"
        "    main (silent.py:110)\n")
    assert not last_lines(read_inputs([tmp_path]).events)


def test_the_kept_end_is_bounded_and_starts_at_a_line() -> None:
    tail = Tail()
    line = b"x" * 99 + b"\n"
    for _ in range(3):
        tail.keep(line * (TAIL_BYTES // 100))
    assert len(tail.data) <= 2 * TAIL_BYTES and tail.data.startswith(b"x") and tail.data.endswith(b"\n")
    tail.keep(line * (3 * TAIL_BYTES // 100))
    assert len(tail.data) <= TAIL_BYTES and tail.data.startswith(b"x")


def test_at_most_tail_lines_per_writer(tmp_path: Path) -> None:
    (tmp_path / "rank3.log").write_text("".join(f"step {i} done\n" for i in range(50)))
    (e,) = [e for e in read_inputs([tmp_path]).events if e.kind == "last_line"]
    assert e.text == "step 49 done" and len(e.get("before")) == TAIL_LINES - 1


def test_a_bar_redrawn_after_the_envelope_is_that_rank_s_one_event_per_process(tmp_path: Path) -> None:
    # torch 2.13 `[rank0]:` envelope, then a tqdm bar redrawn in place with `\r` (its redraws carry no
    # envelope): the bar is rank 0's, one last line for the process (not one per envelope and bar)
    (tmp_path / "rank0.log").write_text(
        "[rank0]:step 11 loss 2.60\n"
        "[rank0]:step 12 loss 2.41\n"
        "[rank0]:\r eval:   0%|          | 0/50\r eval:  40%|####      | 20/50\n"
    )
    got = [e for e in read_inputs([tmp_path]).events if e.kind == "last_line"]
    assert len(got) == 1
    assert got[0].rank == 0 and got[0].text.startswith("eval:  40%")
    assert got[0].get("before") == ["step 11 loss 2.60", "step 12 loss 2.41"]


def test_no_last_line_from_a_file_whose_rank_reported_its_hang(tmp_path: Path) -> None:
    # the last-line rules stand down once a rank reported where it waited (a gloo timeout, torch 2.13)
    (tmp_path / "rank1.log").write_text(
        "[rank1]:step 12 loss 2.41\n"
        "[rank1]:[E1206 00:07:55.006000000 ProcessGroupGloo.cpp:143] Rank 1 timed out in allreduce: "
        "Timed out waiting 1800000ms for recv operation to complete\n"
        "[rank1]:step 12 cleanup\n"
    )
    (tmp_path / "rank0.log").write_text("[rank0]:step 12 loss 2.40\n")
    got = last_lines(read_inputs([tmp_path]).events)
    assert 1 not in got and got[0].text == "step 12 loss 2.40"
