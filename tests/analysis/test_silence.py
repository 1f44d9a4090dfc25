"""Silent-hang facts (hanglens/analysis/silence.py) on hand-built events: stops from outside, where each
rank stopped, who differs, phase boundaries, cadence."""

from __future__ import annotations

from itertools import count
from typing import Any

from hanglens.analysis import build
from hanglens.analysis.silence import is_error, silent_hang_rows, stop_kind, stop_rows
from hanglens.model import Event, SourceRef

_line = count(1)


def ev(kind: str, rank: int | None = None, *, time: float | None = None, parser: str = "test",
       path: str = "job.log", text: str = "", **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef(path, next(_line)), text=text or f"{kind} {fields}", parser=parser,
                 rank=rank, time=time, fields=fields)


def step(rank: int | None, n: int, *, total: int | None = None, gap_after: int | None = None,
         time: float | None = None, label: str | None = None, path: str = "job.log") -> Event:
    return ev("progress", rank, time=time, parser="progress", path=path, step=n, total=total, epoch=None,
              pattern="tqdm" if total else "step", label=label, gap_after=gap_after)


def by_rank(events: list[Event]) -> dict[int | None, dict[str, Any]]:
    return {r["rank"]: r for r in silent_hang_rows(events, {})}


def test_agent_signal_and_keyboard_interrupt_are_stops_from_outside() -> None:
    sig = ev("exception", exc_type="torch.distributed.elastic.multiprocessing.api.SignalException",
             message="Process 811 got signal: 2")
    ctrl_c = ev("exception", 1, exc_type="KeyboardInterrupt", message="")
    told = ev("job_stopped", how="scheduler_cancel", signal=None, reason="TIME LIMIT")
    assert stop_kind(sig) == ("agent_signal", "SIGINT")
    assert stop_kind(ctrl_c) == ("keyboard_interrupt", "SIGINT")
    rows = stop_rows([sig, ctrl_c, told], {})
    assert [r["how"] for r in rows] == ["agent_signal", "keyboard_interrupt", "scheduler_cancel"]
    assert rows[2]["said"] == "the scheduler cancelled the job, due to time limit"
    assert stop_kind(ev("exception", exc_type="ValueError", message="bad batch")) is None


def test_closing_signal_is_a_stop_only_when_no_worker_failed() -> None:
    closing = ev("closing_signal", pid=42, signal="SIGTERM")
    assert [r["how"] for r in stop_rows([closing], {})] == ["agent_closing"]
    failed = ev("worker_failed", exitcode=1, local_rank=0, signal=None)
    assert stop_rows([failed, closing], {}) == []
    stopped_worker = ev("worker_failed", exitcode=-15, local_rank=0, signal="SIGTERM")
    assert [r["how"] for r in stop_rows([stopped_worker, closing], {})] == ["agent_closing"]


def test_the_stop_and_its_consequences_are_not_errors() -> None:
    assert not is_error(ev("exception", exc_type="KeyboardInterrupt", message=""))
    assert not is_error(ev("job_stopped", how="agent_signal", signal="SIGTERM"))
    assert not is_error(ev("worker_failed", exitcode=-15, signal="SIGTERM"))
    assert is_error(ev("exception", exc_type="ValueError", message="boom"))
    assert is_error(ev("hang_detected", 0, detector="watchdog"))


def test_rank_that_skipped_a_step_its_peers_printed() -> None:
    events = [step(0, 0), step(0, 6), step(1, 0), step(1, 6), step(2, 0), step(2, 7, gap_after=3)]
    rows = by_rank(events)
    assert rows[2]["sequence"] == "skipped" and rows[2]["skipped_after"] == 3
    assert rows[2]["position"] == "ahead" and rows[2]["differs"]
    assert rows[0]["sequence"] is None and rows[0]["position"] == "same" and not rows[0]["differs"]
    assert {r["common_step"] for r in rows.values()} == {6}
    assert all(r["no_error"] for r in rows.values())


def test_a_gap_every_rank_shares_is_no_skip_and_the_rank_without_it_printed_extra() -> None:
    events = [step(0, 0), step(0, 9, gap_after=4), step(1, 0), step(1, 9, gap_after=4), step(2, 0),
              step(2, 9)]
    rows = by_rank(events)
    assert rows[0]["sequence"] is None and rows[1]["sequence"] is None
    assert rows[2]["sequence"] == "extra" and rows[2]["skipped_after"] == 4


def test_behind_and_no_majority() -> None:
    rows = by_rank([step(0, 8), step(1, 8), step(2, 5)])
    assert (rows[0]["position"], rows[2]["position"]) == ("same", "behind")
    two = by_rank([step(0, 8), step(1, 5)])
    # no majority: against the common step
    assert (two[0]["position"], two[1]["position"]) == ("ahead", "same")
    assert two[0]["common_step"] == 5


def test_a_loop_counted_from_zero_that_ended_short_ran_out_beside_the_same_step() -> None:
    # Rank 0 counts 0..2 of 3 and ended its loop; rank 1 stopped at step 2 of 6 (two ranks, no majority).
    rows = by_rank([step(0, 0, total=3), step(0, 2, total=3), step(1, 0, total=6), step(1, 2, total=6)])
    assert rows[0]["ran_out"] and not rows[1]["ran_out"]
    # the same totals, or a short rank still inside its loop, say nothing
    same = by_rank([step(0, 0, total=6), step(0, 2, total=6), step(1, 0, total=6), step(1, 2, total=6)])
    assert not any(r["ran_out"] for r in same.values())
    inside = by_rank([step(0, 0, total=4), step(0, 2, total=4), step(1, 0, total=6), step(1, 2, total=6)])
    assert not any(r["ran_out"] for r in inside.values())


def test_first_silent_by_cadence() -> None:
    events = [step(0, 0, time=100.0), step(0, 20, time=120.0), step(1, 0, time=100.0),
              step(1, 12, time=112.0)]
    rows = by_rank(events)
    assert rows[1]["cadence_s"] == 1.0 and rows[1]["silent_for_s"] == 8.0
    assert rows[1]["first_silent"] and not rows[0]["first_silent"]
    close = by_rank([step(0, 0, time=100.0), step(0, 20, time=120.0), step(1, 0, time=100.0),
                     step(1, 19, time=119.0)])
    assert not close[1]["first_silent"]  # one interval late is the interleaving of two streams, not silence


def test_new_epoch_bar_that_never_advanced_after_validation() -> None:
    events = [step(None, 0, total=300), step(None, 300, total=300), step(None, 50, total=50),
              step(None, 0, total=300)]
    rows = by_rank(events)
    assert list(rows) == [None]
    assert rows[None]["stalled_start"] and rows[None]["boundary"] == "validation"
    plain = by_rank([step(None, 300, total=300), step(None, 0, total=300)])
    assert plain[None]["boundary"] == "epoch_start"
    mid = by_rank([step(None, 300, total=300), step(None, 120, total=300)])
    assert not mid[None]["stalled_start"] and mid[None]["boundary"] is None


def test_phase_line_after_the_last_step_is_the_boundary() -> None:
    events = [step(0, 99), ev("phase", 0, parser="lifecycle", phase="checkpoint_save"), step(1, 99)]
    rows = by_rank(events)
    assert rows[0]["boundary"] == "checkpoint_save" and rows[0]["last_phase"] == "checkpoint_save"
    assert rows[1]["boundary"] is None
    before = by_rank([ev("phase", 0, parser="lifecycle", phase="checkpoint_load"), step(0, 5)])
    assert before[0]["last_phase"] == "checkpoint_load" and before[0]["boundary"] is None


def test_last_distributed_line_and_errors() -> None:
    events = [ev("world_info", 0, parser="elastic"), step(0, 3),
              ev("exception", 0, exc_type="RuntimeError", message="CUDA error: unknown error")]
    rows = by_rank(events)
    assert rows[0]["last_dist"] == "world_info" and rows[0]["no_error"] is False


def test_unattributed_output_is_one_row_only_when_no_rank_has_its_own() -> None:
    assert list(by_rank([step(None, 3), step(0, 3)])) == [0]
    assert by_rank([]) == {}


def test_tables_are_built() -> None:
    t = build([step(0, 1), ev("job_stopped", how="agent_signal", signal="SIGTERM")])
    assert list(t.fact("silent_hang")["rank"]) == [0]
    assert list(t.fact("job_stopped")["how"]) == ["agent_signal"]


def test_points_compare_epoch_first_and_the_main_loop_only() -> None:
    def bar(rank: int, n: int, total: int, epoch: int | None, label: str | None = None) -> Event:
        return ev("progress", rank, parser="progress", step=n, total=total, epoch=epoch,
                  pattern="lightning" if label is None else "tqdm", label=label, gap_after=None)

    events = [bar(0, 8, 8, 3), bar(0, 5, 5, None, "Validation"),
              ev("phase", 0, parser="lifecycle", phase="checkpoint_save")]
    for r in (1, 2):
        events += [bar(r, 8, 8, 3), bar(r, 5, 5, None, "Validation"), bar(r, 0, 8, 4)]
    rows = by_rank(events)
    assert (rows[0]["last_step"], rows[0]["last_epoch"], rows[0]["position"]) == (8, 3, "behind")
    assert rows[0]["boundary"] == "checkpoint_save" and not rows[0]["stalled_start"]
    assert rows[1]["position"] == "same"
    assert rows[1]["boundary"] == "validation" and rows[1]["stalled_start"]
    assert (rows[1]["common_epoch"], rows[1]["common_step"]) == (3, 8)


def test_errors_after_the_stop_are_its_consequences() -> None:
    stop = ev("job_stopped", time=200.0, how="agent_signal", signal="SIGTERM")
    late = ev("store_error", 1, time=200.5, op="get")
    assert by_rank([step(1, 4, time=150.0), stop, late])[1]["no_error"]
    early = ev("store_error", 1, time=190.0, op="get")
    assert not by_rank([step(1, 4, time=150.0), early, stop])[1]["no_error"]
    # untimed: order within the same file
    untimed_stop = ev("exception", path="console.log", exc_type="KeyboardInterrupt", message="")
    after = ev("peer_closed", 0, path="console.log")
    assert by_rank([step(0, 2, path="console.log"), untimed_stop, after])[0]["no_error"]


def _finished(events: list[Event]) -> bool:
    from hanglens.analysis.silence import finished_before_stop

    return finished_before_stop(events, stop_rows(events, {}), silent_hang_rows(events, {}))


def test_a_stop_after_the_run_said_it_finished_is_not_a_hang() -> None:
    done = ev("run_finished", 0, phrase="Training complete")
    ctrl_c = ev("exception", 0, exc_type="KeyboardInterrupt", message="",
                frames=["/home/user/job/train.py:88 in <module>"])
    evs = [step(0, 9), step(1, 9), done, ev("job_stopped", how="agent_signal", signal="SIGINT"), ctrl_c]
    assert _finished(evs)
    tables = build(evs)
    assert tables.fact("job_stopped")["after_finish"].tolist() == [True, True]


def test_a_stop_that_is_still_a_hang_after_a_finish_line() -> None:
    def done() -> Event:
        return ev("run_finished", 0, phrase="Training complete")

    def stop() -> Event:
        return ev("job_stopped", how="agent_signal", signal="SIGINT")

    assert not _finished([step(0, 9), step(1, 9), stop()])            # nobody said the run was over
    assert not _finished([step(0, 9), step(1, 9), done()])            # not stopped from outside
    assert not _finished([stop(), done()])                             # the finish line came after the stop
    assert not _finished([step(0, 9), step(1, 4), done(), stop()])    # rank 1 stopped at another point
    hang = ev("hang_detected", 1, detector="watchdog", seq=3, op="ALLREDUCE")
    assert not _finished([step(0, 9), step(1, 9), done(), hang, stop()])  # a failure before the stop
    for frame in ("/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:2110 in "
                  "destroy_process_group",
                  "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:1580 in "
                  "_shutdown_workers"):
        evs = [step(0, 9), step(1, 9), done(), stop()]
        waiting = ev("exception", 1, exc_type="KeyboardInterrupt", message="",
                     frames=["/home/user/job/train.py:90 in <module>", frame])
        assert not _finished([*evs, waiting])
    evs = [step(0, 9), step(1, 9), done()]
    agent = ev("exception", exc_type="torch.distributed.elastic.multiprocessing.api.SignalException",
               message="Process 811 got signal: 2",
               frames=["/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py:"
                       "870 in _invoke_run"])
    assert _finished([*evs, agent])                                    # the agent's own sleep says nothing


def test_unattributed_output_stops_at_the_highest_step_printed_not_the_last_line() -> None:
    # Bare `step N` lines of three ranks, interleaved: the one that went ahead printed step 5 before the
    # others' step 4 lines; the last line is any rank's.
    rows = by_rank([step(None, 0), step(None, 2), step(None, 0), step(None, 5), step(None, 3), step(None, 4)])
    row = rows[None]
    assert row["last_step"] == 5
    assert "step 5" in row["unranked_note"] and "step 4" in row["unranked_note"]


def test_unattributed_output_ending_on_its_highest_step_still_says_the_ranks_are_unknown() -> None:
    row = by_rank([step(None, 0), step(None, 1), step(None, 2)])[None]
    assert row["last_step"] == 2
    assert "cannot be told" in row["unranked_note"]


def test_unattributed_per_epoch_counters_compare_by_epoch_first() -> None:
    # A counter that restarts every epoch (MMEngine's `Epoch(train) [e][i/n]`, Lightning's bar): epoch 2's
    # step 250 is behind epoch 3's step 150, so the last line is the furthest one and nothing is said
    # against it.
    def at(epoch: int, n: int) -> Event:
        return ev("progress", None, parser="progress", step=n, total=1251, epoch=epoch, pattern="mmengine")
    row = by_rank([at(2, 200), at(2, 250), at(3, 50), at(3, 150)])[None]
    assert row["last_step"] == 150 and row["last_epoch"] == 3
    assert row["unranked_note"] == "no line names its rank: which rank stopped where cannot be told"
    row = by_rank([at(3, 50), at(3, 150), at(3, 100)])[None]
    assert row["last_step"] == 150
    assert "step 150" in row["unranked_note"] and "step 100" in row["unranked_note"]


def test_ranked_rows_have_no_unranked_note() -> None:
    rows = by_rank([step(0, 1), step(1, 2)])
    assert rows[0]["unranked_note"] is None and rows[1]["unranked_note"] is None


def test_phase_line_glued_after_the_last_redraw_is_the_boundary() -> None:
    # tqdm writes no newline: the logger's `Saving checkpoint` line lands on the bar's physical line, after
    # its last redraw; the redraw has no time, the phase line has its logger's.
    bar = Event(kind="progress", ref=SourceRef("train.log", 23),
                text="Epoch 0:  45%|#   | 5/11 [00:01<00:01]", parser="progress", rank=None, time=None,
                fields={"step": 5, "total": 11, "epoch": 0, "pattern": "tqdm", "label": None})
    saving = Event(kind="phase", ref=SourceRef("train.log", 23), text="Saving checkpoint to /ckpt/step-5",
                   parser="lifecycle", rank=None, time=1796291851.4, fields={"phase": "checkpoint_save"})
    rows = by_rank([saving, bar])
    assert rows[None]["boundary"] == "checkpoint_save"
    earlier = Event(kind="phase", ref=SourceRef("train.log", 22), text="Saving checkpoint to /ckpt/step-0",
                    parser="lifecycle", rank=None, time=1796291850.0, fields={"phase": "checkpoint_save"})
    assert by_rank([earlier, bar])[None]["boundary"] is None


def test_quiet_before_the_stop_against_the_longest_interval_since_the_first_step() -> None:
    sig = ev("exception", exc_type="torch.distributed.elastic.multiprocessing.api.SignalException",
             message="Process 811 got signal: 15", time=140.0)
    setup = ev("phase", 0, time=50.0, phase="data_prep")   # long before the first step: not an interval
    hung = by_rank([setup, step(0, 1, time=100.0), step(0, 2, time=102.0), step(0, 3, time=104.0), sig])
    assert hung[0]["quiet_before_stop_s"] == 36.0 and hung[0]["hung_before_stop"]
    running = by_rank([step(0, 1, time=100.0), step(0, 2, time=110.0), step(0, 3, time=120.0), sig])
    assert running[0]["quiet_before_stop_s"] == 20.0 and not running[0]["hung_before_stop"]
    # stamps of one-second resolution: three steps in one second still need more than 3 s of quiet
    coarse = by_rank([step(0, 1, time=139.0), step(0, 2, time=139.0), sig])
    assert not coarse[0]["hung_before_stop"]
    unstopped = by_rank([step(0, 1, time=100.0), step(0, 2, time=101.0)])
    assert unstopped[0]["quiet_before_stop_s"] is None and not unstopped[0]["hung_before_stop"]


def test_quiet_before_the_stop_from_print_prefixes_with_the_time_of_day_only() -> None:
    """DeiT/MAE-style `[HH:MM:SS.ffffff] ` prints carry no date: compared with the stop's time of day."""
    day = 975_801_600.0   # a midnight (UTC): the stop's stamp is yearless, its time of day is what counts
    sig = ev("exception", exc_type="torch.distributed.elastic.multiprocessing.api.SignalException",
             message="Process 811 got signal: 15", time=day + 11 * 3600 + 13 * 60 + 15.0)

    def tod_step(n: int, hms: str) -> Event:
        return ev("progress", None, parser="progress", text=f"[{hms}] Epoch: [0]  [{n}/6]  eta: 0:00:04",
                  step=n, total=6, epoch=0, pattern="metric_logger", label=None)

    hung = by_rank([tod_step(0, "11:12:54.591687"), tod_step(2, "11:12:54.759150"), sig])
    assert round(hung[None]["quiet_before_stop_s"], 1) == 20.2 and hung[None]["hung_before_stop"]
    running = by_rank([tod_step(0, "11:13:09.000000"), tod_step(2, "11:13:13.000000"), sig])
    assert not running[None]["hung_before_stop"]
    across_midnight = by_rank([tod_step(0, "23:59:50.000000"), tod_step(2, "23:59:51.000000"),
                               ev("job_stopped", how="agent_signal", signal="SIGTERM", time=day + 30.0)])
    assert round(across_midnight[None]["quiet_before_stop_s"]) == 39


def end_of_epoch(rank: int | None, epoch: int, path: str = "job.log") -> Event:
    return ev("progress", rank, parser="progress", path=path, step=None, total=None, epoch=epoch,
              pattern="epoch_end", label=None)


def epoch_step(rank: int | None, epoch: int, n: int) -> Event:
    return ev("progress", rank, parser="progress", step=n, total=None, epoch=epoch, pattern="step",
              label=None)


def test_a_rank_that_said_its_epoch_ended_is_past_every_step_of_it() -> None:
    rows = by_rank([epoch_step(0, 0, 10), epoch_step(1, 0, 10), epoch_step(2, 0, 10), end_of_epoch(2, 0)])
    assert rows[2]["epoch_done"] == 0
    assert [rows[r]["position"] for r in (0, 1, 2)] == ["same", "same", "ahead"]
    assert rows[0]["common_step"] == 10


def test_an_epoch_end_with_no_step_of_its_own_still_places_the_rank() -> None:
    rows = by_rank([end_of_epoch(0, 0), epoch_step(1, 0, 20)])
    assert (rows[0]["position"], rows[1]["position"]) == ("ahead", "same")


def test_epoch_ends_one_rank_prints_alone_say_nothing_of_how_far_it_got() -> None:
    rows = by_rank([end_of_epoch(0, 0), epoch_step(0, 1, 10), epoch_step(1, 1, 10), end_of_epoch(0, 1)])
    assert rows[0]["epoch_done"] is None
    assert rows[0]["position"] == rows[1]["position"] == "same"


def test_steps_after_the_epoch_end_move_the_rank_on() -> None:
    rows = by_rank([epoch_step(0, 0, 10), end_of_epoch(0, 0), epoch_step(0, 1, 4), epoch_step(1, 0, 10),
                    end_of_epoch(1, 0), epoch_step(1, 1, 4)])
    assert rows[0]["epoch_done"] is None and rows[0]["position"] == "same"


def test_a_log_that_ends_inside_a_running_bar_is_cut() -> None:
    init = ev("world_info", 0, path="nohup.out")
    bar = step(None, 0, total=14, path="nohup.out")
    rows = silent_hang_rows([init, bar], {}, {"nohup.out": bar.line})
    assert rows[0]["bar_cut"] is True
    # a line after it, a finished bar, or a file longer than the bar's line: not cut
    later = ev("world_info", 1, path="nohup.out")
    assert silent_hang_rows([bar, later], {}, {"nohup.out": later.line})[0]["bar_cut"] is False
    done = step(None, 14, total=14, path="nohup.out")
    assert silent_hang_rows([done], {}, {"nohup.out": done.line})[0]["bar_cut"] is False
    assert silent_hang_rows([bar], {}, {"nohup.out": bar.line + 1})[0]["bar_cut"] is False
    assert silent_hang_rows([bar], {})[0]["bar_cut"] is False
    # a logged step line (`epoch 2 step 4/6 loss ...`, newline-terminated) short of its total: a script that
    # logs every second step ends each finished epoch on one
    logged = ev("progress", 1, parser="progress", path="rank.1/stdout", step=4, total=6, epoch=2,
                pattern="step", label=None, gap_after=None)
    assert silent_hang_rows([logged], {}, {"rank.1/stdout": logged.line})[0]["bar_cut"] is False


def test_a_sanity_check_bar_drawn_first_is_not_the_main_loop() -> None:
    # Lightning runs a short validation ("Sanity Checking", lightning/pytorch/callbacks/progress/
    # progress_bar.py `sanity_check_description`) before training: its bar comes first, the loop's after it.
    sanity = step(0, 2, total=2, label="Sanity Checking DataLoader 0", path="console.log")
    started = step(0, 0, total=8, path="console.log")
    cut = step(0, 5, total=8, path="console.log")
    row = silent_hang_rows([sanity, started, cut], {}, {"console.log": cut.line})[0]
    assert (row["last_step"], row["total"], row["bar_cut"]) == (5, 8, True)


def _logged(rank: int, n: int, total: int = 6, epoch: int = 0) -> Event:
    return ev("progress", rank, parser="progress", path=f"rank{rank}.log", step=n, total=total, epoch=epoch,
              pattern="step", label=None, gap_after=None)


def test_a_logged_report_one_stride_short_of_the_end_is_a_cut_loop() -> None:
    # logged every second step of six (0, 2, 4): a rank whose last report is step 2 had step 4 still to print
    rows = silent_hang_rows([_logged(0, 0), _logged(0, 2)], {})
    assert (rows[0]["stride"], rows[0]["logged_cut"]) == (2, True)
    # step 4 is the last report a finished epoch prints at that stride: nothing says the loop was cut
    assert silent_hang_rows([_logged(0, 0), _logged(0, 2), _logged(0, 4)], {})[0]["logged_cut"] is False
    # one report gives no stride; a drawn bar is judged by `bar_cut`; a finish line anywhere ends the question
    assert silent_hang_rows([_logged(0, 2)], {})[0]["logged_cut"] is False
    bar = [step(0, 0, total=6), step(0, 2, total=6)]
    assert silent_hang_rows(bar, {})[0]["logged_cut"] is False
    done = ev("run_finished", 1)
    assert silent_hang_rows([_logged(0, 0), _logged(0, 2), done], {})[0]["logged_cut"] is False
    # the stride is the last epoch's: a new epoch counts again from its own reports
    prev = [_logged(0, s, epoch=0) for s in (0, 1, 2, 3, 4, 5)]
    assert silent_hang_rows([*prev, _logged(0, 0, epoch=1), _logged(0, 2, epoch=1)], {})[0]["stride"] == 2
def test_a_bar_whose_description_carries_a_running_metric_is_one_series() -> None:
    # torchtune's recipes create the bar, then call `pbar.set_description(f"{epoch}|{step}|Loss: {loss}")`
    # after every step (recipes/full_finetune_distributed.py): the first redraws have no label, later ones
    # a label whose number changes on every step. It is one bar: the rank stopped at 3/4, not at 1/4.
    events = [step(0, 0, total=4), step(0, 1, total=4), step(0, 1, total=4, label="Loss: 29.98"),
              step(0, 2, total=4, label="Loss: 29.98"), step(0, 2, total=4, label="Loss: 29.97"),
              step(0, 3, total=4, label="Loss: 29.97"), step(0, 3, total=4, label="Loss: 29.96")]
    assert by_rank(events)[0]["last_step"] == 3


def test_an_unlabelled_bar_that_completed_is_not_joined_to_a_later_labelled_one() -> None:
    # a finished training bar (4/4), then a validation bar with a label and the same total: two loops
    events = [step(0, 0, total=4), step(0, 4, total=4), step(0, 1, total=4, label="Validation 0.5")]
    assert by_rank(events)[0]["last_step"] == 4


def test_a_stop_of_one_node_is_no_stop_of_the_other_nodes_ranks() -> None:
    # `srun -l` console of two torchrun agents: task 1's agent is signalled (its node preempted); task 0's
    # ranks lose their peers after it. Their errors are the loss of node 1, not a stop of their own.
    from hanglens.analysis.silence import mark_after_stop

    def line(kind: str, writer: str, rank: int | None, t: float, **fields: Any) -> Event:
        return Event(kind=kind, ref=SourceRef("slurm.out", next(_line)), text=f"{kind}", parser="test",
                     rank=rank, time=t, fields=fields, writer=writer)

    stop = line("job_stopped", "task 1", None, 10.0, how="agent_signal", signal="SIGTERM")
    lost = line("exception", "task 0/tee default0", 0, 10.5)
    own = line("exception", "task 1/tee default0", 2, 10.5)
    rows = [{"rank": e.rank, "host": None, "time": e.time, "path": e.path, "line": e.line}
            for e in (lost, own)]
    marked = mark_after_stop(rows, [stop, lost, own])
    assert [r["after_stop"] for r in marked] == [False, True]
    # a stop on every stream (or one whose stream is unknown) reaches every rank
    both = [stop, line("job_stopped", "task 0", None, 10.0, how="agent_signal", signal="SIGTERM"), lost, own]
    rows = [{"rank": e.rank, "host": None, "time": e.time, "path": e.path, "line": e.line}
            for e in (lost, own)]
    assert [r["after_stop"] for r in mark_after_stop(rows, both)] == [True, True]


def _said(rank: int, n: int, text: str) -> Event:
    return ev("progress", rank, parser="progress", text=text, step=n, total=None, epoch=None, pattern="step",
              label=None, gap_after=None)


def test_the_one_rank_whose_last_line_no_peer_printed_has_an_odd_tail() -> None:
    lines = [_said(r, n, f"[rank{r}] step {n} loss 0.{r}{n}") for n in (1, 2) for r in range(3)]
    lines.append(_said(1, 2, "[rank1] step 2: fetching shard 0004 from object store"))
    rows = by_rank(lines)
    assert rows[1]["odd_tail"] and rows[1]["tail_words"] == "fetching shard from object store"
    assert rows[1]["line"] == lines[-1].line   # the row cites the line it stopped at
    assert not rows[0]["odd_tail"] and rows[0]["tail_words"] is None and not rows[2]["odd_tail"]


def test_no_odd_tail_with_two_ranks_a_shared_line_or_a_rank_at_another_step() -> None:
    two = [_said(r, n, f"[rank{r}] step {n} loss 0.{r}{n}") for n in (1, 2) for r in range(2)]
    two.append(_said(1, 2, "[rank1] step 2: fetching shard 0004"))
    assert not any(r["odd_tail"] for r in by_rank(two).values())
    shared = [_said(r, n, f"[rank{r}] step {n} loss 0.{r}{n}") for n in (1, 2) for r in range(3)]
    shared += [_said(r, 2, f"[rank{r}] step 2: fetching shard 000{r}") for r in range(3)]
    assert not any(r["odd_tail"] for r in by_rank(shared).values())
    # a word the rank printed before is no new place; a rank one step ahead differs by its step already
    again = [_said(r, n, f"[rank{r}] step {n} loss 0.{r}{n}") for n in (1, 2) for r in range(3)]
    again += [_said(2, 1, "[rank2] step 1: fetching shard 0001"),
              _said(2, 2, "[rank2] step 2: fetching shard 0002")]
    assert not any(r["odd_tail"] for r in by_rank(again).values())
    ahead = [_said(r, n, f"[rank{r}] step {n} loss 0.{r}{n}") for n in (1, 2) for r in range(3)]
    ahead.append(_said(0, 3, "[rank0] step 3: fetching shard 0004"))
    assert not any(r["odd_tail"] for r in by_rank(ahead).values())
