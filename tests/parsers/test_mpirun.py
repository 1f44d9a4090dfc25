"""Behaviour tests of the mpirun parser beyond its examples (its contract: test_all_parsers.py), and of
the reader's ranking of mpirun's report (ingest/reader.py `_mpirun_rank`, ingest/streams.py
`mpirun_starts_ranks`).

Texts written here from Open MPI 4.1's `help-orterun.txt` (`[orterun:non-zero-exit]`,
`[orterun:proc-aborted-strsignal]`) and its `--tag-output` tags, with our own values.
"""

from __future__ import annotations

from hanglens.parsers import PARSERS

from .harness import events as read_events

BOX = "-" * 74 + "\n"
FIRST = (BOX + "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
         "the job to be terminated. The first process to do so was:\n\n"
         "  Process name: [[3310,1],{rank}]\n  Exit code:    {code}\n" + BOX)
NOTICED = (BOX + "mpirun noticed that process rank {rank} with PID 0 on node trainer-b exited on signal 9 "
           "(Killed).\n" + BOX)

VICTIMS = (
    "[1,0]<stdout>:rank 0/3 | epoch 2 step 4/8 loss 3.91\n"
    "[1,2]<stdout>:rank 2/3 | epoch 2 step 4/8 loss 3.90\n"
    "[1,0]<stderr>:[rank0]: Traceback (most recent call last):\n"
    '[1,0]<stderr>:[rank0]:   File "/home/user/simclr/train.py", line 88, in <module>\n'
    "[1,0]<stderr>:[rank0]:     work.wait()\n"
    "[1,0]<stderr>:[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
    "[10.1.0.7]:4410: Connection reset by peer\n"
)


def _exits(text: str) -> list[tuple[int | None, int | None, str | None, list[int] | None]]:
    return [(e.rank, e.get("exitcode"), e.get("signal"), e.get("tasks"))
            for e in read_events(PARSERS, text) if e.kind == "launcher_exit"]


def test_the_signal_report_is_the_named_ranks_when_mpirun_started_the_ranks() -> None:
    assert _exits(VICTIMS + NOTICED.format(rank=1)) == [(1, -9, "SIGKILL", [1])]


def test_the_first_nonzero_exit_is_the_named_ranks() -> None:
    assert _exits(VICTIMS + FIRST.format(rank=2, code=1)) == [(2, 1, None, [2])]


def test_tagged_streams_keep_their_ranks_beside_mpiruns_report() -> None:
    # mpirun's own lines are no launcher that it started: the `[1,0]` stream's unranked lines stay rank 0's.
    text = "[1,0]<stderr>:Fatal Python error: Aborted\n" + VICTIMS + NOTICED.format(rank=1)
    found = read_events(PARSERS, text)
    assert {e.rank for e in found if e.writer == "mpi 1,0"} == {0}


def test_an_mpi_rank_is_no_global_rank_when_mpirun_started_torchrun_agents() -> None:
    # One torchrun per node under mpirun: the agent's lines say so, and MPI rank 1 is the second node.
    text = ("[1,1]<stderr>:E1204 19:02:11.512000 4410 torch/distributed/elastic/multiprocessing/api.py:882] "
            "failed (exitcode: 1) local_rank: 3 (pid: 4419) of binary: /usr/bin/python3\n"
            + FIRST.format(rank=1, code=1))
    found = read_events(PARSERS, text)
    assert [e.rank for e in found if e.kind == "launcher_exit" and e.get("launcher") == "mpirun"] == [None]


def test_a_name_without_its_exit_code_is_still_reported() -> None:
    text = ("mpirun detected that one or more processes exited with non-zero status, thus causing\n"
            "the job to be terminated. The first process to do so was:\n\n"
            "  Process name: [[3310,1],4]\n"
            "some other line\n")
    assert _exits(text) == [(4, None, None, [4])]


def test_a_first_process_line_without_a_name_gives_nothing() -> None:
    text = ("the job to be terminated. The first process to do so was:\n\n\n\n\n\n"
            "  Process name: [[3310,1],4]\n  Exit code:    1\n")
    assert _exits(text) == []
