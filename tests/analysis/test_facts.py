"""Fact functions on hand-built events: lag, disagreement, stuck calls, progress, victims, clocks."""

from __future__ import annotations

from typing import Any

import pytest

from hanglens.analysis import build
from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.model import Event, SourceRef

_line = iter(range(1, 10_000))


def ev(
    kind: str,
    rank: int | None = None,
    *,
    host: str | None = None,
    time: float | None = None,
    path: str = "job.log",
    **fields: Any,
) -> Event:
    return Event(
        kind=kind,
        ref=SourceRef(path, next(_line)),
        text=f"{kind} {fields}",
        parser="test",
        rank=rank,
        host=host,
        time=time,
        fields=fields,
    )


def rows(tables: Any, name: str) -> list[dict[str, Any]]:
    return list(tables.fact(name).to_dict(orient="records"))


def watchdog(rank: int, seq: int, op: str = "ALLREDUCE", numel: int = 10, **kw: Any) -> Event:
    return ev(
        "hang_detected",
        rank,
        detector="watchdog",
        seq=seq,
        op=op,
        numel_in=numel,
        numel_out=numel,
        timeout_ms=600000,
        **kw,
    )


def test_every_table_has_exactly_its_spec_columns() -> None:
    t = build([watchdog(0, 5)])
    assert set(t.tables) == set(FACT_SPECS)
    for name, spec in FACT_SPECS.items():
        assert list(t.fact(name).columns) == list(spec.columns), name


def test_rank_behind_its_process_group_majority_lags() -> None:
    evs = [
        ev("pg_status", r, pg="0", last_enqueued=120 if r != 3 else 119, last_completed=119) for r in range(4)
    ]
    lag = {r["rank"]: r for r in rows(build(evs), "pg_enqueue_lag")}
    assert lag[3]["lag"] == 1 and lag[3]["pg_max_enqueued"] == 120
    assert all(lag[r]["lag"] == 0 for r in (0, 1, 2))


def test_desync_report_names_lagging_rank_and_world() -> None:
    t = build(
        [
            ev(
                "desync_report",
                0,
                seq=90,
                op="ALLREDUCE",
                lagging_ranks=[7],
                not_joined_ranks=[7],
                not_finished_ranks=[],
                joined_seq=89,
                snapshot=["#90 started ALLREDUCE: 0,1,2,3,4,5,6"],
            )
        ]
    )
    lag = rows(t, "pg_enqueue_lag")
    assert [(r["rank"], r["lag"], r["basis"]) for r in lag] == [(7, 1, "desync")]
    assert t.ranks == list(range(8))


def test_size_disagreement_names_the_minority() -> None:
    evs = [watchdog(r, 50, op="BROADCAST", numel=24 if r == 2 else 64) for r in range(4)]
    dis = {r["rank"]: r for r in rows(build(evs), "collective_disagreement")}
    assert dis[2]["minority"] and not dis[0]["minority"]
    assert dis[2]["size_differs"] and not dis[2]["op_differs"]


def test_unnumbered_timeouts_of_torch_110_are_compared_at_each_ranks_oldest_work() -> None:
    """torch 1.10 prints no SeqNum: each rank's first timed-out work is its oldest unfinished one."""
    def old(rank: int, op: str) -> Event:
        return ev("hang_detected", rank, detector="watchdog", seq=None, op=op, timeout_ms=1800000)

    evs = [old(r, "BROADCAST" if r == 1 else "ALLREDUCE") for r in range(4)]
    evs.append(old(0, "BROADCAST"))  # a later work of rank 0: not its oldest, not compared
    dis = {r["rank"]: r for r in rows(build(evs), "collective_disagreement")}
    assert [r for r, d in dis.items() if d["minority"]] == [1]
    assert dis[1]["op_differs"] and dis[1]["seq"] is None
    same = [old(r, "ALLREDUCE") for r in range(4)]
    assert rows(build(same), "collective_disagreement") == []
    # a rank that also states a sequence number is compared by it, never at the unnumbered frontier
    mixed = [old(0, "ALLGATHER"), *(watchdog(r, 9) for r in range(1, 4)), watchdog(0, 9)]
    assert rows(build(mixed), "collective_disagreement") == []


def test_two_sided_size_tie_has_no_minority_and_no_tie_breaker() -> None:
    for big in (0, 1):  # mirrored: neither the larger buffer nor the lower rank is singled out
        evs = [watchdog(0, 7, numel=100 if big == 0 else 50), watchdog(1, 7, numel=50 if big == 0 else 100)]
        dis = {r["rank"]: r for r in rows(build(evs), "collective_disagreement")}
        assert not dis[0]["minority"] and not dis[1]["minority"]
        assert "larger" not in dis[0]


def test_a_garbled_peer_still_counts_as_differing_from_the_writers_who_agree() -> None:
    """Two writers with the same own fingerprint both report rank 1 as different: rank 1 is the odd one."""
    evs = [
        ev("collective_mismatch", r, ranks=[r, 1], seqs=[311, 0], seq=311, ops=["ALLREDUCE", "BROADCAST"],
           shapes=["[8]", None], dtypes=["Float", None])
        for r in (2, 3)
    ]
    dis = {r["rank"]: r for r in rows(build(evs), "collective_disagreement")}
    # rank 0 is below the rank both reports name first: it ran what the writers ran (ProcessGroupWrapper.cpp
    # compares in rank order and raises at the first rank that differs)
    assert set(dis) == {0, 1, 2, 3}
    assert dis[1]["minority"] and dis[1]["op_differs"]
    assert not dis[0]["minority"] and not dis[2]["minority"] and not dis[3]["minority"]


def test_mismatch_reports_trust_the_writers_own_fingerprint_over_a_garbled_peer() -> None:
    evs = [
        ev(
            "collective_mismatch",
            r,
            ranks=[r, 2 if r != 2 else 0],
            seqs=[5, 0],
            seq=5,
            ops=["BARRIER" if r == 2 else "ALLREDUCE", "GATHER"],
            shapes=[None, None],
            dtypes=[None, None],
        )
        for r in range(4)
    ]
    dis = {r["rank"]: r for r in rows(build(evs), "collective_disagreement")}
    assert dis[2]["op"] == "BARRIER" and dis[2]["minority"] and dis[2]["op_differs"]
    assert {r for r, d in dis.items() if d["minority"]} == {2}


def fr(rank: int, seq: int, op: str = "ALLREDUCE", numel: int = 10, state: str = "completed",
       retired: bool = True, **kw: Any) -> Event:
    """A flight recorder entry as hanglens.ingest.flight emits it."""
    return ev("fr_entry", rank, path=f"nccl_trace_rank_{rank}", pg="0", pg_desc="default_pg", seq=seq,
              is_p2p=False, op=op, numel_in=numel, numel_out=numel, state=state, retired=retired,
              timeout_ms=600000, **kw)


def test_flight_recorder_op_disagreement_at_the_frontier_names_the_odd_rank() -> None:
    evs = [fr(r, s) for r in range(4) for s in range(1, 40)]
    evs += [fr(r, 40, op="BARRIER" if r == 2 else "ALLREDUCE", state="scheduled", retired=False)
            for r in range(4)]
    t = build(evs)
    dis = {r["rank"]: r for r in rows(t, "collective_disagreement")}
    assert set(dis) == {0, 1, 2, 3} and {r["seq"] for r in dis.values()} == {40}
    assert dis[2]["op"] == "BARRIER" and dis[2]["minority"] and dis[2]["op_differs"]
    assert not dis[0]["minority"]
    # The healthy history is not in the per-collective table; only each rank's position is.
    assert set(t.collectives["seq"]) == {40}


def test_flight_recorder_size_disagreement_on_a_timed_out_entry() -> None:
    evs = [fr(r, 7, numel=24 if r == 1 else 64, state="scheduled") for r in range(3)]
    t = build(evs)
    dis = {r["rank"]: r for r in rows(t, "collective_disagreement")}
    assert dis[1]["minority"] and dis[1]["size_differs"] and not dis[1]["op_differs"]
    assert set(t.collectives["state"]) == {"timed_out"}


def test_flight_recorder_rank_that_never_enqueued_lags() -> None:
    evs = [fr(r, s) for r in range(4) for s in range(1, 10)]
    evs += [fr(r, 10, state="scheduled", retired=False) for r in (0, 1, 2)]
    t = build(evs)
    lag = {r["rank"]: r for r in rows(t, "pg_enqueue_lag")}
    assert lag[3]["lag"] == 1 and lag[3]["last_enqueued"] == 9 and lag[3]["basis"] == "flight_recorder"
    assert all(lag[r]["lag"] == 0 for r in (0, 1, 2))
    assert rows(t, "collective_disagreement") == []


def test_flight_recorder_healthy_history_gives_no_disagreement() -> None:
    # Sizes differ at old, completed collectives (e.g. uneven buckets): nothing at the frontier disagrees.
    evs = [fr(r, s, numel=s * (r + 1)) for r in range(4) for s in range(1, 20)]
    assert rows(build(evs), "collective_disagreement") == []


def test_gloo_flight_recorder_newest_retired_entry_counts_as_failed() -> None:
    # gloo never marks entries completed; only the newest, retired entry is where the ranks stopped.
    evs = [fr(r, s, state="scheduled") for r in range(2) for s in range(1, 5)]
    evs += [fr(r, 5, op="BARRIER" if r == 1 else "ALLREDUCE", state="scheduled") for r in range(3)]
    t = build(evs)
    dis = {r["rank"]: r for r in rows(t, "collective_disagreement")}
    assert set(dis) == {0, 1, 2} and dis[1]["minority"]
    assert set(t.collectives["seq"]) == {5}

def _traceback(rank: int, call: str) -> Event:
    frames = [
        "/job/train.py:151 in main",
        f"/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py:3252 in {call}",
    ]
    return ev("exception", rank, exc_type="RuntimeError", message="Timed out waiting 10000ms", frames=frames)


def test_rank_stuck_in_a_different_collective_call_is_the_odd_one() -> None:
    t = build([_traceback(0, "all_reduce"), _traceback(1, "all_reduce"), _traceback(2, "barrier")])
    calls = {r["rank"]: r for r in rows(t, "collective_call")}
    assert calls[2]["minority"] and calls[2]["call"] == "barrier"
    assert calls[2]["user_frame"] == "train.py:151 in main"
    assert not calls[0]["minority"]


def _stack_dump(rank: int, call: str, thread: str = "MainThread") -> Event:
    # py-spy prints library paths relative to sys.path and qualified function names, innermost first;
    # the parser turns them outermost first.
    frames = [
        "train.py:196 in <module>",
        "torch/distributed/elastic/multiprocessing/errors/__init__.py:367 in "
        "record.<locals>.wrap.<locals>.wrapper",
        "train.py:180 in main",
        "torch/distributed/c10d_logger.py:83 in _exception_logger.<locals>.wrapper",
        f"torch/distributed/distributed_c10d.py:3252 in {call}",
    ]
    return ev("stack_dump", rank, thread=thread, state="idle", frames=frames)


def test_stack_dumps_name_the_rank_stuck_in_a_different_collective() -> None:
    t = build([_stack_dump(0, "all_reduce"), _stack_dump(1, "all_reduce"), _stack_dump(2, "barrier"),
               _stack_dump(3, "all_reduce")])
    calls = {r["rank"]: r for r in rows(t, "collective_call")}
    assert {r for r, c in calls.items() if c["minority"]} == {2}
    assert calls[2]["call"] == "barrier" and calls[0]["call"] == "all_reduce"
    assert calls[2]["user_frame"] == "train.py:180 in main"  # not the relative torch wrapper frame


def test_stack_dumps_count_only_the_first_main_thread_and_yield_to_tracebacks() -> None:
    evs = [
        _stack_dump(0, "broadcast", thread="pt_elastic"),  # another thread: ignored
        _stack_dump(0, "all_reduce"),
        _stack_dump(0, "barrier"),  # a later dump of the same rank: ignored
        _traceback(1, "all_reduce"),
        _stack_dump(1, "barrier"),  # the traceback wins
        _stack_dump(2, "barrier"),
    ]
    calls = {r["rank"]: r for r in rows(build(evs), "collective_call")}
    assert {r: c["call"] for r, c in calls.items()} == {0: "all_reduce", 1: "all_reduce", 2: "barrier"}
    assert {r for r, c in calls.items() if c["minority"]} == {2}


def test_progress_gap_and_early_stop() -> None:
    evs = [
        ev("progress", 0, step=1),
        ev("progress", 0, step=5),
        ev("progress", 1, step=1),
        ev("progress", 1, step=5, gap_after=2),
        ev("progress", 2, step=1),
        ev("progress", 2, step=3),
    ]
    prog = {r["rank"]: r for r in rows(build(evs), "progress")}
    assert prog[1]["gap"] and prog[1]["gap_after"] == 2
    assert prog[2]["stopped_early"] and prog[2]["steps_behind"] == 2
    assert not prog[0]["gap"] and not prog[0]["stopped_early"]


def test_a_bar_of_one_rank_own_phase_is_not_its_training_step() -> None:
    # rank 3's "Rebuilding token cache" bar counts cache items, not steps: read as steps it put rank 0 (the
    # only rank logging training steps) 19 steps behind a rank that was not training at all
    evs = [
        ev("progress", 0, step=2, pattern="step"),
        ev("progress", 0, step=4, pattern="step"),
        ev("progress", 3, step=1, total=45, pattern="tqdm", label="Rebuilding token cache"),
        ev("progress", 3, step=23, total=45, pattern="tqdm", label="Rebuilding token cache"),
    ]
    prog = {r["rank"]: r for r in rows(build(evs), "progress")}
    assert set(prog) == {0}
    assert not prog[0]["stopped_early"]
    # the same label on two ranks is one loop, compared as such
    evs += [ev("progress", 1, step=40, total=45, pattern="tqdm", label="Rebuilding token cache")]
    prog = {r["rank"]: r for r in rows(build(evs), "progress")}
    assert prog[3]["stopped_early"] and prog[3]["last_step"] == 23


def test_a_rank_zero_only_bar_is_not_compared_with_every_ranks_logged_steps() -> None:
    # tqdm on rank 0 only (`disable=rank != 0`) counts completed iterations ("4/6" after the iteration the
    # log lines call step 3); every rank logs `step=N`: rank 0 is placed by the series all ranks share
    evs = [ev("progress", r, step=s, pattern="step") for r in range(4) for s in (0, 3)]
    evs += [ev("progress", 0, step=4, total=6, pattern="tqdm")]
    prog = {r["rank"]: r for r in rows(build(evs), "progress")}
    assert {r: p["last_step"] for r, p in prog.items()} == {0: 3, 1: 3, 2: 3, 3: 3}
    assert prog[0]["position"] == "same"
    # a bar is still what places a rank that prints nothing else, and bars printed by two ranks compare
    evs2 = [ev("progress", 0, step=4, total=6, pattern="tqdm"), ev("progress", 1, step=2, pattern="step")]
    assert {r["rank"]: r["last_step"] for r in rows(build(evs2), "progress")} == {0: 4, 1: 2}
    evs3 = [*evs, ev("progress", 1, step=2, total=6, pattern="tqdm")]
    assert {r["rank"]: r["last_step"] for r in rows(build(evs3), "progress")}[0] == 4


def test_a_rank_that_raised_first_is_the_crash_and_peers_are_victims() -> None:
    evs = [
        ev("exception", 2, time=100.0, exc_type="ValueError", message="bad batch"),
        ev("peer_closed", 0, time=101.0, transport="gloo"),
        ev("hang_detected", 1, time=110.0, detector="gloo", timeout_ms=10000),
    ]
    t = build(evs)
    crash = rows(t, "crash")
    assert [(c["rank"], c["first"]) for c in crash] == [(2, True)]
    signals = {(v["rank"], v["signal"]) for v in rows(t, "victim_signals")}
    assert (0, "peer_closed") in signals and (1, "timeout_after_crash") in signals
    status = {r["rank"]: r for r in rows(t, "rank_status")}
    assert status[2]["crashed"] and not status[0]["crashed"] and status[1]["hung"]


def test_timeouts_and_sigterm_are_not_own_faults() -> None:
    evs = [
        ev("exception", 0, exc_type="RuntimeError", message="[pair.cc:534] Connection closed by peer"),
        ev("child_failed", None, failed_rank=1, exitcode=-15, signal="SIGTERM"),
        ev(
            "exception",
            2,
            exc_type="torch.distributed.DistBackendError",
            message="Watchdog caught collective operation timeout",
        ),
    ]
    t = build(evs)
    assert rows(t, "crash") == []
    status = {r["rank"]: r for r in rows(t, "rank_status")}
    assert status[1]["quiet"] and not status[0]["quiet"]


def test_exit_code_alone_counts_only_for_ranks_without_their_own_lines() -> None:
    evs = [
        ev("child_failed", None, failed_rank=0, exitcode=1),
        ev("child_failed", None, failed_rank=1, exitcode=1),
        ev("exception", 1, exc_type="RuntimeError", message="Timed out waiting 10000ms for recv"),
    ]
    crashed = {c["rank"] for c in rows(build(evs), "crash")}
    assert crashed == {0}


def test_agent_lines_never_take_a_workers_rank() -> None:
    evs = [
        ev("worker_failed", 3, exitcode=-9, local_rank=1, signal="SIGKILL"),
        ev(
            "exception",
            3,
            exc_type="torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
            message="",
        ),
    ]
    t = build(evs)
    assert {c["rank"] for c in rows(t, "crash")} == {1}


def test_clock_offsets_from_watchdogs_firing_together() -> None:
    evs = [
        watchdog(0, 9, host="a", time=1000.0),
        watchdog(1, 9, host="a", time=1000.2),
        watchdog(2, 9, host="b", time=1030.1),
        watchdog(3, 9, host="b", time=1030.3),
    ]
    t = build(evs)
    assert t.offsets == {"b": pytest.approx(30.1, abs=0.01)}
    assert "aligned" in t.clock_note
    times = sorted(e.time for e in t.events if e.time is not None)
    assert times[-1] - times[0] < 1.0


def test_small_clock_differences_are_left_alone() -> None:
    evs = [watchdog(0, 9, host="a", time=1000.0), watchdog(1, 9, host="b", time=1000.4)]
    assert build(evs).offsets == {}


def test_versions_mark_the_minority_and_leave_ties_alone() -> None:
    three = [
        ev("nccl_version", r, host=h, version=v)
        for r, (h, v) in enumerate([("a", "2.18.5"), ("b", "2.18.5"), ("c", "2.21.5")])
    ]
    odd = {(r["host"], r["version"]): r["minority"] for r in rows(build(three), "versions")}
    assert odd == {("a", "2.18.5"): False, ("b", "2.18.5"): False, ("c", "2.21.5"): True}
    two = three[1:]
    assert not any(r["minority"] for r in rows(build(two), "versions"))


def test_ranks_below_the_highest_seen_exist_even_when_silent() -> None:
    t = build([ev("hang_detected", 2, detector="heartbeat_monitor")])
    status = {r["rank"]: r["status"] for r in rows(t, "rank_status")}
    assert status == {0: "silent", 1: "silent", 2: "hung"}


def test_build_is_deterministic() -> None:
    evs = [watchdog(r, 5 + (r == 3)) for r in range(4)] + [ev("progress", r, step=3) for r in range(4)]
    a, b = build(evs), build(list(reversed(evs)))
    for name in FACT_SPECS:
        assert a.fact(name).equals(b.fact(name)), name


@pytest.mark.parametrize(
    ("component", "raw", "norm"),
    [("torch", "2.3", "2.3.0"), ("torch", "2.3.0+cu121", "2.3.0"), ("torch", "2.3.0", "2.3.0"),
     ("nccl", "2.20.5", "2.20.5"), ("driver", "550.54.15", "550.54.15"), ("torch", "nightly", "nightly")],
)
def test_versions_of_one_release_are_one_version(component: str, raw: str, norm: str) -> None:
    from hanglens.analysis.status import normalise_version

    assert normalise_version(component, raw) == norm


def test_environment_dump_versions_are_context_not_a_mismatch() -> None:
    """A dump that names no rank or host (collect_env, pip list, a README) never makes a mismatch."""
    evs = [
        ev("version_info", 0, component="torch", version="2.3.0+cu121"),
        ev("version_info", 1, component="torch", version="2.3"),
        ev("version_info", None, path="collect_env.txt", component="torch", version="2.1.2"),
    ]
    vers = rows(build(evs), "versions")
    assert not any(r["minority"] for r in vers)
    assert {r["distinct"] for r in vers if r["rank"] is not None} == {1}


def test_two_ranks_on_different_releases_are_a_mismatch() -> None:
    evs = [ev("version_info", r, component="torch", version=v)
           for r, v in ((0, "2.3.0+cu121"), (1, "2.3.0"), (2, "2.4.1"))]
    vers = {r["rank"]: r for r in rows(build(evs), "versions")}
    assert vers[2]["minority"] and vers[2]["distinct"] == 2
    assert not vers[0]["minority"] and not vers[1]["minority"]


def bar(rank: int | None, step: int, total: int, elapsed: int, remaining: int | None, **kw: Any) -> Event:
    kw.setdefault("label", "packing")
    return ev("progress", rank, step=step, total=total, elapsed_s=elapsed, remaining_s=remaining,
              pattern="tqdm", **kw)


def store_wait(rank: int | None, ms: int | None = 900000) -> Event:
    return ev("hang_detected", rank, detector="store", op="wait", timeout_ms=ms)


def test_a_bar_still_running_past_the_printed_timeout_outlasts_it() -> None:
    (row,) = rows(build([bar(0, 700, 1000, 910, 390), store_wait(1), store_wait(2)]), "slow_phase")
    assert row["rank"] == 0 and row["owner_basis"] == "own"
    assert row["timeout_s"] == 900 and row["timeout_basis"] == "printed by the waiting processes"
    assert row["projected_s"] == 1300 and row["running"] and row["outlasts_timeout"]
    assert row["waiting_ranks"] == [1, 2] and row["wait"] == "timeout" and not row["fault_seen"]


@pytest.mark.parametrize(
    ("step", "elapsed", "remaining", "why"),
    [
        (1000, 400, 0, "finished well within the timeout"),
        (950, 800, 40, "projected length 840 s below the 900 s timeout"),
        (300, 200, 400, "only 200 s in when it was last drawn"),
        (300, 3 * 3600, 9 * 3600, "running for 12 timeouts: it began long before the peers waited"),
    ],
)
def test_red_herring_bars_do_not_outlast(step: int, elapsed: int, remaining: int, why: str) -> None:
    (row,) = rows(build([bar(0, step, 1000, elapsed, remaining), store_wait(1)]), "slow_phase")
    assert not row["outlasts_timeout"], why


def test_a_rank_that_timed_out_itself_is_not_the_busy_one() -> None:
    (row,) = rows(build([bar(1, 700, 1000, 910, 390), store_wait(1), store_wait(2)]), "slow_phase")
    assert not row["outlasts_timeout"]


def test_without_a_printed_timeout_the_default_is_assumed_and_said() -> None:
    cut = ev("exception", None, frames=["train.py:12 in main"])  # a traceback cut before its last line
    (row,) = rows(build([bar(None, 400, 1000, 1815, 2700), cut]), "slow_phase")
    assert row["timeout_s"] == 1800 and row["timeout_basis"].startswith("none printed; assumed")
    assert row["wait"] == "traceback" and row["outlasts_timeout"] and row["rank"] is None
    (row,) = rows(build([bar(None, 400, 1000, 590, 900), cut]), "slow_phase")
    assert row["timeout_s"] == 600 and row["outlasts_timeout"]
    for young_or_old in (200, 1300, 4 * 3600):  # no default timeout is near these
        (row,) = rows(build([bar(None, 40, 1000, young_or_old, 99999), cut]), "slow_phase")
        assert row["timeout_s"] is None and not row["outlasts_timeout"]


def test_a_fault_of_another_process_is_flagged() -> None:
    fault = ev("exception", 2, exc_type="KeyError", message="'input_ids'")
    (row,) = rows(build([bar(0, 700, 1000, 910, 390), store_wait(1), fault]), "slow_phase")
    assert row["fault_seen"]


def test_an_unnamed_bar_is_the_only_rank_of_a_known_world_not_waiting() -> None:
    world = [ev("world_info", r, world_size=3, global_rank=r) for r in range(3)]
    (row,) = rows(build([*world, bar(None, 700, 1000, 910, 390), store_wait(0), store_wait(2)]), "slow_phase")
    assert row["rank"] == 1 and row["owner_basis"] == "the only rank of 3 not seen waiting"
    (row,) = rows(build([*world, bar(None, 700, 1000, 910, 390, label="compressing"), store_wait(2)]),
                  "slow_phase")
    assert row["rank"] is None  # rank 0 is not seen at all: absence is no evidence


def test_an_unnamed_dataset_bar_is_rank_0_when_rank_0_does_not_wait_on_one_host() -> None:
    # `main_process_first()`: the main process preprocesses while the others wait in a barrier.
    (row,) = rows(build([bar(None, 700, 1000, 910, 390), store_wait(2), store_wait(3)]), "slow_phase")
    assert row["rank"] == 0 and row["owner_basis"].startswith("the main process")
    (row,) = rows(build([bar(None, 700, 1000, 910, 390, label="Map (num_proc=8)"), store_wait(0),
                         store_wait(2)]), "slow_phase")
    assert row["rank"] is None  # rank 0 waits itself
    (row,) = rows(build([bar(None, 700, 1000, 910, 390, label="Epoch 3"), store_wait(2)]), "slow_phase")
    assert row["rank"] is None  # not a preprocessing bar


def test_an_unnamed_bar_is_the_one_writer_of_its_console_not_waiting() -> None:
    # Two node consoles, no world size stated: node 1's console holds ranks 5-7's timeouts, rank 4's own
    # line and a rank-less bar; ranks 0-3 wait in node 0's console (failure-signatures.md section 15,
    # `local_main_process_first`: each node's local rank 0 preprocesses while the others wait).
    node0 = [store_wait(r) for r in range(4)]
    node1 = [ev("phase", 4, path="n1.log", label="tokenizing"),
             bar(None, 410, 1000, 910, 1300, path="n1.log"),
             *(ev("hang_detected", r, path="n1.log", detector="store", op="wait", timeout_ms=900000)
               for r in (5, 6, 7))]
    (row,) = rows(build([*node0, *node1]), "slow_phase")
    assert row["rank"] == 4 and row["owner_basis"].startswith("the only rank with lines of its own")
    # Two writers of that console not waiting (rank 3 left node 0's waits and wrote here): no owner.
    node1.append(ev("phase", 3, path="n1.log", label="eval"))
    (row,) = rows(build([*node0[:3], *node1]), "slow_phase")
    assert row["rank"] is None


def test_glued_marks_another_writers_line_on_the_bars_line() -> None:
    b = bar(None, 700, 1000, 910, 390)
    wait = Event(kind="hang_detected", ref=b.ref, text="timed out", parser="test", rank=3,
                 fields={"detector": "store", "op": "wait", "timeout_ms": 900000})
    (row,) = rows(build([b, wait]), "slow_phase")
    assert row["glued"] and row["waiting_ranks"] == [3]
    (row,) = rows(build([bar(None, 700, 1000, 910, 390), store_wait(3)]), "slow_phase")
    assert not row["glued"]


def test_what_the_peers_did_leaves_out_the_bars_own_rank() -> None:
    # Rank 0 printed the shortest timeout and a fault of its own, rank 1 only a traceback: for rank 0's
    # bar the peers printed 900 s and only a traceback and no fault; for rank 1's bar, rank 0's 300 s.
    own_timeout = ev("hang_detected", 0, detector="store", op="wait", timeout_ms=300000)
    fault = ev("exception", 0, exc_type="KeyError", message="'x'")
    peer_tb = ev("exception", 1, frames=["train.py:12 in main"])
    peer_timeout = ev("hang_detected", 2, detector="gloo", timeout_ms=900000)
    evs = [bar(0, 700, 1000, 910, 390), bar(1, 10, 1000, 910, 390), own_timeout, fault,
           peer_tb, peer_timeout]
    got = {r["rank"]: r for r in rows(build(evs), "slow_phase")}
    assert got[0]["timeout_s"] == 900 and got[0]["wait"] == "timeout" and not got[0]["fault_seen"]
    assert not got[0]["outlasts_timeout"] and got[0]["waiting_ranks"] == []  # it timed out itself
    assert got[1]["timeout_s"] == 300 and got[1]["fault_seen"]
    only_tb = {r["rank"]: r for r in rows(build([bar(1, 10, 1000, 910, 390), peer_tb]), "slow_phase")}
    assert only_tb[1]["wait"] is None  # its own traceback is not a peer's wait


def test_waiting_ranks_are_listed_for_a_bar_that_outlasts_only() -> None:
    waits = [store_wait(r) for r in range(1, 200)]
    done = ev("progress", 5, step=1000, total=1000, elapsed_s=910, remaining_s=0, pattern="tqdm",
              label="done")
    got = rows(build([bar(0, 700, 1000, 910, 390), done, *waits]), "slow_phase")
    by_label = {r["label"]: r for r in got}
    packing = by_label["packing"]
    assert packing["outlasts_timeout"] and packing["waiting_ranks"] == list(range(1, 200))
    assert not by_label["done"]["outlasts_timeout"] and by_label["done"]["waiting_ranks"] == []
    assert by_label["done"]["wait"] == "timeout" and by_label["done"]["timeout_s"] == 900


def test_an_agents_local_rank_is_not_global_when_its_workers_print_higher_ranks() -> None:
    """A node whose workers print ranks 4-7 is not the first node: the agent's local rank 1 is not rank 1."""
    from hanglens.analysis.status import single_node

    workers = [ev("progress", r, step=10) for r in (4, 5, 6, 7)]
    failed = ev("worker_failed", None, exitcode=1, local_rank=1, signal=None)
    assert not single_node([*workers, failed])
    assert single_node([ev("progress", r, step=10) for r in (0, 1, 3)] + [failed])


def test_a_worker_line_whose_global_rank_is_not_its_local_rank_is_a_second_node() -> None:
    """`[default1]:[rank5]:`: rank = node_rank * nproc + local rank, so this worker's node is not the first
    and the agent's `failed ... local_rank: 1` does not name rank 1 (log-formats.md section 3.5)."""
    from dataclasses import replace

    from hanglens.analysis.status import single_node

    failed = ev("worker_failed", None, exitcode=1, local_rank=1, signal=None)
    worker = replace(ev("progress", 5, step=800), local_rank=1)
    first = replace(ev("progress", 0, step=800), local_rank=0)
    assert not single_node([first, worker, failed])
    assert single_node([first, replace(ev("progress", 1, step=800), local_rank=1), failed])


def test_a_failure_table_row_of_another_global_rank_is_a_second_node() -> None:
    """ChildFailedError `rank: 21 (local_rank: 5)`: this agent's node is not the first (global rank =
    node_rank * nproc_per_node + local rank, log-formats.md sections 3.5-3.6), so the same agent's
    `failed (exitcode: -9) local_rank: 5 (pid: P)` is not rank 5; the pid is the table row's rank 21."""
    from hanglens.analysis.pids import pid_ranks
    from hanglens.analysis.status import single_node

    failed = ev("worker_failed", None, exitcode=-9, local_rank=5, pid=18810, signal="SIGKILL")
    row = ev("child_failed", None, exitcode=-9, local_rank=5, failed_rank=21, failed_host="ip-10-0-3-41",
             pid=18810, signal="SIGKILL", root_cause=True)
    hangs = [ev("hang_detected", r, seq=88107, op="ALLGATHER") for r in (0, 1, 2, 3)]
    assert not single_node([failed, row, *hangs])
    assert pid_ranks([failed, row, *hangs], single_node([failed, row, *hangs])) == {18810: 21}
    same = ev("child_failed", None, exitcode=-9, local_rank=5, failed_rank=5, failed_host="n1", pid=18810)
    assert single_node([failed, same, *hangs])


def test_a_socket_peer_closed_on_another_named_host_is_a_second_node() -> None:
    """NCCL names the remote end of a closed socket (`socketProgress: Connection closed by remote peer
    <host><<port>>`, log-formats.md section 4.4): rank 0 on h1 losing its peer h2 means two nodes, so the
    agent's `failed (exitcode: 1) local_rank: 0` pasted from h2 is not rank 0 (section 3.5)."""
    from dataclasses import replace

    from hanglens.analysis.status import single_node

    failed = ev("worker_failed", None, exitcode=1, local_rank=0, pid=33154, signal=None)
    closed = replace(ev("peer_closed", 0, transport="socket", peer="h2", port=38417), host="h1")
    crash = ev("exception", 2, exc_type="KeyError", message="'input_ids'")
    assert not single_node([closed, crash, failed])
    # the same host, an address, or the proxy's local rank does not name a second node
    for peer in ("h1", "10.0.3.14", "localRank 1"):
        same = replace(ev("peer_closed", 0, transport="socket", peer=peer, port=38417), host="h1")
        assert single_node([same, crash, failed]), peer


def test_a_rendezvous_result_states_its_nodes_worker_count() -> None:
    """torchrun's rendezvous result lists the node's local ranks and their global ranks (log-formats.md
    section 3.5): four local ranks, four workers per node; two results that disagree state none."""
    from hanglens.analysis.build import node_size

    four = ev("world_info", None, local_ranks=[0, 1, 2, 3], global_ranks=[4, 5, 6, 7], node_rank=1, nnodes=2)
    assert node_size([four]) == 4
    two = ev("world_info", None, local_ranks=[0, 1], global_ranks=[0, 1], node_rank=0, nnodes=2)
    assert node_size([four, two]) is None


def test_a_line_that_reports_an_error_is_no_progress() -> None:
    """`ValueError: non-finite loss at step 5120` names a step; the rank did not train on after it."""
    err = ev("error_line", 1, template="ValueError: non-finite loss at step <num>")
    step = Event(kind="progress", ref=err.ref, text=err.text, parser="progress", rank=1,
                 fields={"step": 5120, "pattern": "step"})
    tables = build([ev("progress", 1, step=10), err, step])
    assert [r["last_step"] for r in rows(tables, "silent_hang") if r["rank"] == 1] == [10]



def test_an_error_glued_behind_a_bar_leaves_the_bar_a_progress_report() -> None:
    """log-formats.md section 9.2: tqdm redraws with `\\r`, so another writer's error line (here a torch 2.2
    watchdog timeout, section 1.4) lands on the bar's physical line; the reader splits the two texts, and the
    bar is still the bar."""
    b = bar(None, 1276000, 2000000, 1798, 1019)
    err = Event(kind="error_line", ref=b.ref, parser="catchall", rank=2,
                text="[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
                     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800419 "
                     "milliseconds before timing out.",
                fields={"template": "x"})
    wait = Event(kind="hang_detected", ref=b.ref, text=err.text, parser="test", rank=2,
                 fields={"detector": "watchdog", "op": "ALLREDUCE", "seq": 1, "timeout_ms": 1800000})
    (row,) = rows(build([b, err, wait]), "slow_phase")
    assert row["outlasts_timeout"] and row["glued"]
    # An error on the bar's own text still ends it as a progress report.
    own = Event(kind="error_line", ref=b.ref, parser="catchall", rank=None, text=b.text,
                fields={"template": "x"})
    assert rows(build([b, own, wait]), "slow_phase") == []


def _barrier(rank: int | None, stated: int | None, n: int = 8, m: int = 7,
             key: str = "store_based_barrier_key:1", path: str = "job.log") -> Event:
    return ev("rendezvous_error", rank, path=path, error_class="store_barrier_timeout", world_size=n,
              joined=m, key=key, stated_rank=stated)


def test_store_barrier_missing_when_every_arrival_reported() -> None:
    # distributed_c10d.py `_store_based_barrier`: the m reporters are all the ranks that arrived
    t = build([_barrier(None, r) for r in range(7)])
    got = [(r["rank"], r["world_size"], r["joined"]) for r in rows(t, "store_barrier_missing")]
    assert got == [(7, 8, 7)]
    t = build([_barrier(None, 1, n=4, m=2), _barrier(2, 2, n=4, m=2)])
    assert sorted(r["rank"] for r in rows(t, "store_barrier_missing")) == [0, 3]


def test_store_barrier_missing_names_nobody_from_an_excerpt_or_disagreeing_reports() -> None:
    # 2 of 7 reporters
    assert rows(build([_barrier(None, r) for r in (0, 5)]), "store_barrier_missing") == []
    # a report whose line rank contradicts its stated rank, or one key with two counts
    spoiled = [_barrier(None, r) for r in range(6)] + [_barrier(3, 6)]
    assert rows(build(spoiled), "store_barrier_missing") == []
    assert rows(build([_barrier(None, r) for r in range(7)] + [_barrier(None, 0, m=6)]),
                "store_barrier_missing") == []
