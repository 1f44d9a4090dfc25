"""Behaviour tests of the progress parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

import pytest

from hanglens.parsers.progress import KEEP_RESTARTS, ProgressParser, set_user_pattern

from .harness import events as read_events
from .harness import has

events = partial(read_events, [ProgressParser])


def test_series_keeps_first_last_and_restarts_only() -> None:
    text = "".join(f"step {n} loss 1.0\n" for n in (1, 2, 3, 4, 1, 2, 9))
    assert [e.get("step") for e in events(text, "progress")] == [1, 4, 1, 9]


def test_restarts_kept_per_series_are_bounded() -> None:
    """An eval bar restarting every run keeps the first and the latest KEEP_RESTARTS runs, and the dropped
    runs reaching the highest and lowest step; events do not grow with the length of the log."""
    runs = 10 * KEEP_RESTARTS
    ends = [5 + (40 if r == 3 * KEEP_RESTARTS else 0) for r in range(runs)]  # one middle run goes furthest
    starts = [1 if r != 4 * KEEP_RESTARTS else 0 for r in range(runs)]      # one middle run starts lower
    text = "".join(f"eval {r}: step {n} loss 1.0\n" for r in range(runs) for n in (starts[r], ends[r]))
    got = events(text, "progress")
    lines = [e.ref.line for e in got]
    assert lines == sorted(lines) and len(lines) == len(set(lines))
    # the first report, KEEP_RESTARTS restart pairs, the extremes' pairs, the latest KEEP_RESTARTS pairs
    assert len(got) == 1 + 2 * KEEP_RESTARTS + 2 * 2 + 2 * KEEP_RESTARTS + 1
    steps = [e.get("step") for e in got]
    assert max(steps) == 45 and min(steps) == 0
    assert got[-1].ref.line == 2 * runs and got[-1].get("step") == ends[-1]
    assert got[0].ref.line == 1


def test_user_pattern_is_used_and_removed() -> None:
    try:
        set_user_pattern(r"done (?P<step>\d+) batches")
        assert ProgressParser.user_triggers == (" batches",)
        assert " batches" in ProgressParser.triggers
        assert has(events("done 77 batches"), {"step": 77, "pattern": "user"})
    finally:
        set_user_pattern(None)
    assert " batches" not in ProgressParser.triggers
    assert events("done 77 batches") == []


def test_user_pattern_needs_a_step_group() -> None:
    from hanglens.errors import UsageError

    with pytest.raises(UsageError):
        set_user_pattern(r"done \d+")
    set_user_pattern(None)


@pytest.mark.parametrize(
    ("line", "elapsed", "remaining"),
    [
        ("Map (num_proc=4):  12%|█▏        | 1200/10000 [02:03<15:01, 9.76 examples/s]", 123, 901),
        ("Map:  50%|█████     | 5/10 [1:00:00<1:00:00, 720.00s/it]", 3600, 3600),
        ("Loading shards:   0%|          | 0/8 [00:00<?, ?it/s]", 0, None),
        (" 25/100 [00:10<00:30,  2.50it/s]", 10, 30),
        ("Epoch 1:  45%|████▌     | 450/1000 [01:30<01:50, 4.98it/s, v_num=0]", 90, 110),
    ],
)
def test_tqdm_bars_carry_elapsed_and_remaining_seconds(
    line: str, elapsed: int, remaining: int | None
) -> None:
    (e,) = events(line + "\n", "progress")
    assert (e.get("elapsed_s"), e.get("remaining_s")) == (elapsed, remaining)


def test_interval_reads_tqdm_formats_only() -> None:
    from hanglens.parsers.progress import interval_s

    assert [interval_s(t) for t in ("00:07", "59:59", "2:03:04", "?", "", None, "1:2:3:4", "a:01")] == [
        7, 3599, 7384, None, None, None, None, None]
    assert events("step 7 loss 2.0\n", "progress")[0].get("elapsed_s") is None


def test_a_tqdm_redraw_at_the_same_count_is_no_new_report() -> None:
    """tqdm's close() (run by __del__ at exit, after a traceback) redraws the bar at the count it had with a
    later elapsed time: the series keeps the redraw that reached the count, not the late one."""
    bar = "Epoch 1:  50%|█████     | {n}/12 [00:{e}<00:{r}, 1.25it/s]"
    text = (
        "\r".join(bar.format(n=n, e=f"{n:02d}", r="07") for n in (4, 5, 6)) + "\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: something failed\n"
        "\r" + bar.format(n=6, e="47", r="47") + "\n"
    )
    got = events(text, "progress")
    assert [(e.get("step"), e.get("elapsed_s"), e.ref.line) for e in got] == [(4, 4, 1), (6, 6, 1)]


def test_a_tqdm_bar_moving_on_keeps_its_latest_redraw() -> None:
    bar = "Epoch 1:  50%|█████     | {n}/12 [00:{e}<00:07, 1.25it/s]"
    text = "".join(bar.format(n=n, e=f"{10 + n:02d}") + "\n" for n in (4, 5, 5, 6))
    got = events(text, "progress")
    assert [(e.get("step"), e.get("elapsed_s"), e.ref.line) for e in got] == [(4, 14, 1), (6, 16, 4)]


@pytest.mark.parametrize(("line", "epoch", "step", "total"), [
    # MMEngine's LogProcessor (mmengine/runner/log_processor.py, 0.10.7): epoch and iteration padded to the
    # widths of max_epochs and of the loader's length, two spaces before the first metric
    ("Epoch(train) [2][ 7/40]  lr: 2.0000e-02  eta: 0:01:10  time: 0.0312  loss: 0.8811", 2, 7, 40),
    ("Epoch(train)  [11][130/418]  base_lr: 1.0000e-03 lr: 1.0000e-03  loss: 0.4120", 11, 130, 418),
    ("Iter(train) [  250/20000]  lr: 1.0000e-04  eta: 3:10:02  time: 0.5110  loss: 2.3310", None, 250, 20000),
])
def test_mmengine_train_counter(line: str, epoch: int | None, step: int, total: int) -> None:
    got = events(line, "progress")
    assert has(got, {"pattern": "mmengine", "step": step, "total": total})
    assert got[0].get("epoch") == epoch


@pytest.mark.parametrize("line", [
    "Epoch(val) [3][ 8/25]    eta: 0:00:02  time: 0.0410  data_time: 0.0030",
    "Epoch(test) [ 8/25]    eta: 0:00:02  time: 0.0410",
    "Iter(val) [ 8/25]    eta: 0:00:02",
])
def test_mmengine_eval_counters_are_not_training_steps(line: str) -> None:
    """An evaluation loop's batch counter is not the training loop's position."""
    assert not has(events(line, "progress"), {"pattern": "mmengine"})
