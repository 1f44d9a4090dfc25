"""Behaviour tests of the elastic parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.elastic import ElasticParser, signal_name

from .harness import events as read_events
from .harness import has

events = partial(read_events, [ElasticParser])


def test_signal_names_follow_linux_numbering() -> None:
    assert [signal_name(c) for c in (-6, -9, -7, -11, -15, 1, 0, None)] == [
        "SIGABRT", "SIGKILL", "SIGBUS", "SIGSEGV", "SIGTERM", None, None, None]


def test_summary_yields_one_event_per_block_with_roles() -> None:
    text = ElasticParser.examples[8].text
    found = events(text, "child_failed")
    assert sorted((e.get("failed_rank"), e.get("root_cause"), e.get("signal")) for e in found) == [
        (2, True, None), (3, False, "SIGABRT")]
    # each row is cited at its `exitcode : <n> (pid: <p>)` line, the one a reader of the evidence can use
    assert sorted(e.ref.line for e in found) == [10, 19]


def test_summary_without_other_failures() -> None:
    text = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 40 + "\n"
            "train.py FAILED\n" + "-" * 40 + "\nFailures:\n  <NO_OTHER_FAILURES>\n" + "-" * 40 + "\n"
            "Root Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_00:00:01\n"
            "  host      : n1\n  rank      : 5 (local_rank: 1)\n  exitcode  : -7 (pid: 77)\n"
            "  error_file: <N/A>\n  traceback : To enable traceback see: "
            "https://pytorch.org/docs/stable/elastic/errors.html\n" + "=" * 40 + "\n"
            "failed (exitcode: 1) local_rank: 0 (pid: 9) of binary: python\n")
    found = events(text)
    assert [(e.kind, e.get("failed_rank"), e.get("signal"), e.get("root_cause")) for e in found
            if e.kind == "child_failed"] == [("child_failed", 5, "SIGBUS", True)]
    assert has([e for e in found if e.kind == "worker_failed"], {"exitcode": 1, "pid": 9})


def test_consecutive_closing_signals_keep_their_own_pid() -> None:
    envelope = "W1130 08:04:26.123000 1 torch/distributed/elastic/multiprocessing/api.py:897]"
    text = "".join(f"{envelope} Sending process {pid} closing signal SIGTERM\n" for pid in (11, 12, 13))
    assert [e.get("pid") for e in events(text, "closing_signal")] == [11, 12, 13]
