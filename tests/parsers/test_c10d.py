"""Behaviour tests of the c10d parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.c10d import DESYNC_HEADER_ONLY_RE, QUIET_AFTER, C10dParser, _bare_prefix, _demangle

from .harness import events as read_events
from .harness import has

events = partial(read_events, [C10dParser])


WD = (
    "[rank{r}]:[E1107 04:12:09.118402771 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
    "operation "
    "timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for "
    "600100 "
    "milliseconds before timing out."
)


def test_one_timeout_reported_three_ways_is_one_hang() -> None:
    text = "\n".join(
        [
            WD.format(r=1),
            "[rank1]:[E1107 04:12:09.222222222 ProcessGroupNCCL.cpp:1500] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Process group "
            "watchdog thread terminated with exception: "
            + WD.format(r=1).split("] ", 1)[1].split("] ", 1)[1],
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
            "exception: "
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, "
            "NumelIn=4, "
            "NumelOut=4, Timeout(ms)=600000) ran for 600100 milliseconds before timing out.",
        ]
    )
    found = events(text)
    hangs = [e for e in found if e.kind == "hang_detected"]
    assert len(hangs) == 1 and hangs[0].rank == 1 and hangs[0].get("seq") == 88
    assert len([e for e in found if e.kind == "watchdog_terminated"]) == 2
    assert has([e for e in found if e.kind == "process_teardown"], {"exc_type": "c10::DistBackendError"})


def test_each_rank_of_a_combined_log_keeps_its_own_hang() -> None:
    found = events(WD.format(r=0) + "\n" + WD.format(r=3), "hang_detected")
    assert sorted(e.rank for e in found if e.rank is not None) == [0, 3]
    assert sorted(e.get("stated_rank") for e in found) == [0, 3]


def test_heartbeat_monitor_reporting_twice_is_one_hang() -> None:
    text = "\n".join(
        [
            "[rank4]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 4] Heartbeat monitor timed out! Process will "
            "be "
            "terminated "
            "after dumping debug info. workMetaList_.size()=1",
            "[rank4]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 4] [PG 0 Rank 4] ProcessGroupNCCL's watchdog "
            "got "
            "stuck for "
            "600 seconds without making progress in monitoring enqueued collectives.",
        ]
    )
    found = events(text)
    hangs = [e for e in found if e.kind == "hang_detected"]
    assert [(e.get("detector"), e.get("stuck_s"), e.ref.line) for e in hangs] == [
        ("heartbeat_monitor", 600, 1)
    ]
    assert has([e for e in found if e.kind == "process_teardown"], {"reason": "watchdog_hang", "fatal": True})


def test_heartbeat_timeout_alone_is_flushed() -> None:
    found = events(
        "[rank4]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 4] Heartbeat monitor timed out! Process will "
        "be terminated after dumping debug info. workMetaList_.size()=1",
        "hang_detected",
    )
    assert [(e.get("detector"), e.get("stuck_s"), e.get("pg")) for e in found] == [
        ("heartbeat_monitor", None, "0")
    ]


def test_heartbeat_lines_of_several_ranks_in_one_console_are_each_a_hang() -> None:
    # written here from log-formats.md section 1.7 (torch 2.2: `[Rank <r>] monitoring thread detects no
    # heartbeat and will finally kill the process!`, then the F `NCCL monitor thread timeout` line; 2.3: the
    # `Heartbeat monitor timed out!` line waits for its `got stuck for <sec> seconds` verdict): every rank
    # of a node whose GPU hung prints them, so in one console the ranks' lines follow each other and each
    # rank's report is its own hang, not only the first rank's
    stuck = "ProcessGroupNCCL's watchdog got stuck for 600 seconds without making progress in monitoring."
    timed_out = "Heartbeat monitor timed out! Process will be terminated after dumping debug info."
    text = "\n".join(
        [
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:1182] [Rank {r}] monitoring thread detects no heartbeat and "
            "will finally kill the process!"
            for r in (4, 5, 6)
        ]
        + [
            f"[rank{r}]:[F ProcessGroupNCCL.cpp:1204] [Rank {r}] NCCL monitor thread timeout. Basically, "
            "this could be due to CUDA or NCCL calls being unexpectedly blocking."
            for r in (4, 5, 6)
        ]
        + [
            f"[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] {timed_out}",
            f"[rank2]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 2] {timed_out}",
            f"[rank2]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 2] [PG 0 Rank 2] {stuck}",
            f"[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 1] [PG 0 Rank 1] {stuck}",
        ]
    )
    hangs = [e for e in events(text) if e.kind == "hang_detected"]
    assert sorted((e.rank, e.get("stuck_s")) for e in hangs) == [
        (1, 600), (2, 600), (4, None), (5, None), (6, None)
    ]
    # each rank's hang is dated at its own first report
    assert {e.rank: e.ref.line for e in hangs if e.rank in (1, 2)} == {1: 7, 2: 8}


def test_watchdog_and_heartbeat_are_different_detectors_of_one_kind() -> None:
    text = (
        WD.format(r=2)
        + "\n"
        + (
            "[rank2]:[E1107 04:22:09.111111111 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 2] "
            "ProcessGroupNCCL's "
            "watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives."
        )
    )
    found = events(text)
    assert {e.kind for e in found} == {"hang_detected"}
    assert sorted(e.get("detector") for e in found) == ["heartbeat_monitor", "watchdog"]


def test_desync_block_ends_and_the_next_line_is_still_read() -> None:
    text = "\n".join(
        [
            "[rank0]:[E1017 09:58:03.333333333 ProcessGroupNCCL.cpp:1937] Rank 0",
            "\t - [0] Timeout at collective: ALLREDUCE, #9",
            "\t - To our best knowledge, ranks [1, 2] are the lagging ranks that caused this timeout. They "
            "never "
            "joined "
            "any collectives",
            "[rank0]:[E1017 09:58:03.444444444 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 0] "
            " failure "
            "detected by watchdog at work sequence id: 9 PG status: last enqueued work: 9, last completed "
            "work: "
            "8",
        ]
    )
    found = events(text)
    desync = [e for e in found if e.kind == "desync_report"]
    assert len(desync) == 1 and desync[0].ref.line == 1 and desync[0].rank == 0
    assert desync[0].get("lagging_ranks") == [1, 2] and desync[0].get("reporter_rank") == 0
    assert has([e for e in found if e.kind == "pg_status"], {"failed_seq": 9, "last_completed": 8})


def test_same_status_printed_twice_is_one_pg_status() -> None:
    text = "\n".join(
        [
            "[rank1]:[E1003 10:00:01.000000000 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] "
            "Exception "
            "(either an error or "
            "timeout) detected by watchdog at work: 64, last enqueued NCCL work: 64, last completed NCCL "
            "work: "
            "63.",
            "[rank1]:[E1003 10:00:01.000000000 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 1] Timeout "
            "at "
            "NCCL work: 64, last "
            "enqueued NCCL work: 64, last completed NCCL work: 63.",
        ]
    )
    assert len(events(text, "pg_status")) == 1
    assert len(events(text, "hang_detected")) == 1


def test_interleaved_terminate_keeps_the_type() -> None:
    text = (
        "terminate called after throwing an instance of 'c10::DistBackendErrorterminate called after "
        "throwing an "
        "instance of ''\n  what():  [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: "
        "unknown"
    )
    found = events(text, "process_teardown")
    assert has(found, {"exc_type": "c10::DistBackendError", "stated_rank": 0})


def test_mangled_unhandled_exception_form() -> None:
    # Ray's C++ terminate handler: `[<date> <time>,<ms> <L> <pid> <tid>] logging.cc:<n>: Unhandled exception:
    # <mangled type>. what(): <message>` (written here; torch 1.13-2.1 text inside what()).
    text = (
        "[2026-02-11 07:31:52,418 E 4417 4502] logging.cc:115: Unhandled exception: St13runtime_error. "
        "what(): [Rank 5] NCCL watchdog thread terminated with exception: CUDA error: unspecified launch "
        "failure"
    )
    found = events(text)
    teardown = [e for e in found if e.kind == "process_teardown"]
    assert has(teardown, {"exc_type": "std::runtime_error", "stated_rank": 5})
    assert has([e for e in found if e.kind == "watchdog_terminated"], {"stated_rank": 5})


def test_mangled_unhandled_exception_without_a_c10d_word() -> None:
    # Ray's terminate handler in a gloo worker (a Ray Train run, torch 2.13): no c10d word in the line but
    # `Unhandled exception:` itself (written here with our own sizes and pids).
    text = (
        "(RayTrainWorker pid=5120, ip=10.0.0.3) [2026-03-02 11:04:17,206 E 5120 5188] logging.cc:118: "
        "Unhandled exception: N4gloo13EnforceNotMetE. what(): [enforce fail at /pytorch/third_party/gloo/"
        "gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 1032 vs 8. Received data size "
        "doesn't match expected size. Is there a distributed collective mismatch in your code?"
    )
    found = events(text, "process_teardown")
    assert has(found, {"exc_type": "gloo::EnforceNotMet", "reason": "uncaught_exception"})


def test_demangles_itanium_type_names() -> None:
    assert _demangle("N3c1016DistBackendErrorE") == "c10::DistBackendError"
    assert _demangle("St13runtime_error") == "std::runtime_error"
    assert _demangle("N5torch3jit12JITExceptionE") == "torch::jit::JITException"


def test_line_glued_after_a_progress_bar() -> None:
    found = events(
        "Train:  20%|##   | 375/1881 [3:40:16<14:52:25, 35.55s/it]" + WD.format(r=3), "hang_detected"
    )
    assert [(e.rank, e.get("seq"), e.get("op")) for e in found] == [(3, 88, "ALLREDUCE")]


def test_truncated_timeout_line_keeps_what_it_has() -> None:
    found = events(
        "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1573",
        "hang_detected",
    )
    assert has(found, {"seq": 1573, "op": None, "timeout_ms": None, "stated_rank": 3})


def test_remote_dump_signal_then_bookkeeping_is_one_signal() -> None:
    text = "\n".join(
        [
            "[rank1]:[E703 10:00:01.111111111 ProcessGroupNCCL.cpp:1801] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Observed flight "
            "recorder dump signal from another rank via TCPStore.",
            "[rank1]:[E703 10:00:01.222222222 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Received a dump signal "
            "due to a collective timeout from  rank 6 and we will try our best to dump the debug info. Last "
            "enqueued "
            "NCCL work: 5, last completed NCCL work: 5.",
            "[rank1]:[E703 10:00:01.333333333 ProcessGroupNCCL.cpp:1801] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] "
            "Observed flight "
            "recorder dump signal from another rank via TCPStore.",
        ]
    )
    found = events(text, "dump_signal")
    assert [e.get("from_rank") for e in found] == [None, 6]


def test_a_line_deduplicated_in_every_file_still_gives_its_event_in_each() -> None:
    # The third line gives nothing in its file (the signal was reported), read in many files it stays a
    # first sighting in each: the process-wide memo of quiet texts must not take it for one.
    text = "\n".join(
        [
            "[rank1]:[E703 10:00:01.111111111 ProcessGroupNCCL.cpp:1801] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] Observed flight recorder dump signal from another rank via TCPStore.",
            "[rank1]:[I703 10:00:01.222222222 ProcessGroupNCCL.cpp:2384] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] ProcessGroupNCCL created ncclComm_ 0x7f3a00000001 on CUDA device: 1",
            "[rank1]:[E703 10:00:01.333333333 ProcessGroupNCCL.cpp:1801] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 1] Observed flight recorder dump signal from another rank via TCPStore.",
        ]
    )
    for _ in range(QUIET_AFTER + 3):
        assert [e.ref.line for e in events(text, "dump_signal")] == [1]


def test_bare_prefix_answers_as_the_pattern() -> None:
    texts = ["", "  ", "Rank 3", "Rank 3 \n", "x] Rank 12", "[PG ID 0 PG GUID 0(default_pg) Rank 3]",
             "a [PG ID 0 PG GUID 0 Rank 3]  ", "] Rank \u0663", "] Rank 3x", "[Rank 3]", "] Rank 33]",
             "x]\tRank 4\n", "1", "Rank", "] Rank ", "] Rank 5\x1c", "[PG 7 (dp) Rank 2] ",
             "[PG ID 1 PG GUID 1(tp) Rank 5] ProcessGroupNCCL initialization options: size: 8, PG Name: 1"]
    for text in texts:
        want, got = DESYNC_HEADER_ONLY_RE.search(text), _bare_prefix(text)
        assert (want and want.span()) == (got and got.span()), text


def test_terminate_and_its_what_stay_paired_across_other_ranks_lines_in_a_tee_console() -> None:
    # torchrun --tee: the agent tails each rank's stdout and stderr files in turn, so the C++ terminate
    # handler's two stderr lines of rank 2 arrive with rank 2's own stdout and the other ranks' lines
    # between.
    lines = ["[default2]:terminate called after throwing an instance of 'gloo::EnforceNotMet'"]
    lines += [f"[default2]:2026-01-05 10:00:0{i},100 [INFO] [rank 2/4] fit: step {i}/6 loss 0.5"
              for i in range(4)]
    lines += [f"[default{r}]:[rank{r}]:   File \"/home/user/job/train.py\", line 9, in main"
              for r in (0, 1, 3)] * 3
    lines.append(
        "[default2]:  what():  [enforce fail at /opt/gloo/gloo/transport/tcp/pair.cc:456] "
        "op.preamble.length <= op.nbytes. 292 vs 4. Received data size doesn't match expected size. Is "
        "there a distributed collective mismatch in your code?"
    )
    teardowns = events("\n".join(lines), "process_teardown")
    assert len(teardowns) == 1
    assert "op.preamble.length" in (teardowns[0].get("error") or "")
    # a what() of another process never completes rank 2's terminate
    other = [lines[0], lines[-1].replace("[default2]", "[default1]")]
    assert [e.get("error") for e in events("\n".join(other), "process_teardown")] == [None]
