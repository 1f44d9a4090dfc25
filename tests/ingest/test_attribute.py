"""Job-level attribution: local -> global ranks, NCCL pids, stated ranks, hosts, yearless stamps."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from failure_table import Failure as F
from failure_table import failure_table

from hanglens.ingest.attribute import FileEvents, attribute
from hanglens.model import Event, Origin, SourceRef


def ev(kind: str = "x", rank: int | None = None, local_rank: int | None = None, host: str | None = None,
       time: float | None = None, line: int = 1, **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef("f", line), text="", parser="t", rank=rank, local_rank=local_rank,
                 host=host, time=time, fields=fields)


def tree(node: str, lr: int, events: list[Event], stated: frozenset[int] = frozenset()) -> FileEvents:
    origin = Origin(local_rank=lr, attempt=0, node_dir=node)
    return FileEvents(f"{node}/attempt_0/{lr}/stderr.log", origin, events, stated_ranks=stated)


def test_offset_from_one_local_rank_applies_to_its_node_only() -> None:
    a = tree("run_a", 0, [ev(local_rank=0)], stated=frozenset({8}))
    b = tree("run_a", 3, [ev(local_rank=3)])
    c = tree("run_b", 3, [ev(local_rank=3)])
    attribute([a, b, c])
    assert [f.events[0].rank for f in (a, b, c)] == [8, 11, None]


def test_conflicting_offsets_are_not_used() -> None:
    a = tree("run_a", 0, [ev(kind="world_info", local_rank=0, global_rank=0)])
    b = tree("run_a", 1, [ev(kind="world_info", local_rank=1, global_rank=5)])
    c = tree("run_a", 2, [ev(local_rank=2)])
    attribute([a, b, c])
    assert (a.events[0].rank, b.events[0].rank, c.events[0].rank) == (0, 5, None)


def test_child_failed_table_maps_host_local_ranks() -> None:
    failed = Event(kind="child_failed", ref=SourceRef("launcher.log", 1), text="", parser="t",
                   fields={"failed_rank": 13, "local_rank": 5, "failed_host": "gpu7.cluster", "pid": 99})
    table = FileEvents("launcher.log", Origin(), [failed])
    worker = tree("run_z", 2, [ev(local_rank=2, host="gpu7")])
    attribute([table, worker])
    assert worker.events[0].rank == 10
    assert table.events[0].rank is None      # the launcher's own line is not written by rank 13


def test_nccl_pid_through_largest_communicator() -> None:
    inits = [ev(kind="nccl_comm_init", comm_rank=r, nranks=16, nccl_host="h1", pid=100 + r) for r in range(2)]
    sub = ev(kind="nccl_comm_init", comm_rank=0, nranks=2, nccl_host="h1", pid=101)
    warn = ev(kind="nccl_warn", nccl_host="h1", pid=101)
    other = ev(kind="nccl_warn", nccl_host="h2", pid=101)
    f = FileEvents("combined.log", Origin(), [*inits, sub, warn, other])
    attribute([f])
    assert (f.events[3].rank, f.events[3].host) == (1, "h1")
    assert (f.events[4].rank, f.events[4].host) == (None, "h2")


def test_a_split_communicators_rank_names_no_pid() -> None:
    """log-formats.md section 4.3: a communicator split from a parent (`ncclCommSplit ... parent <ptr> color
    <c> key <k>`) states the rank inside the subgroup; with only tensor-parallel splits in a console, its
    `rank 1` is no global rank for the pid's other NCCL lines."""
    split = ev(kind="nccl_comm_init", comm_rank=1, nranks=4, nccl_host="h1", pid=301, api="ncclCommSplit",
               parent="0x55c1041af0d0")
    warn = ev(kind="nccl_warn", nccl_host="h1", pid=301)
    f = FileEvents("console.log", Origin(), [split, warn])
    attribute([f])
    assert f.events[1].rank is None


def test_a_dynamic_rendezvous_consoles_workers_place_its_agents_local_rank() -> None:
    """A torchrun console (`--nproc-per-node=4`, a c10d rendezvous: no node rank stated, log-formats.md
    section 3.5) whose workers print `[rank4]:` and `[rank6]:` is the node of ranks 4-7: the agent's
    `failed (exitcode: -9) local_rank: 2` is about rank 6; workers of two blocks place nothing."""
    def console(*ranks: int) -> FileEvents:
        cfg = ev(kind="launch_config", launcher="torchrun", nnodes=2, node_rank=None, nproc_per_node=4)
        workers = [ev(kind="progress", rank=r, line=2 + i) for i, r in enumerate(ranks)]
        failed = Event(kind="worker_failed", ref=SourceRef("f", 9), text="", parser="t",
                       fields={"exitcode": -9, "local_rank": 2, "pid": 77120, "signal": "SIGKILL"})
        return FileEvents("node-n2.log", Origin(), [cfg, *workers, failed])

    one = console(6, 4)
    attribute([one])
    assert one.events[-1].get("placed_rank") == 6 and one.events[-1].rank is None
    two = console(6, 1)
    attribute([two])
    assert two.events[-1].get("placed_rank") is None


def test_nccl_init_line_outranks_a_file_name_rank() -> None:
    """A console named after node 0 holds its local processes' NCCL lines: the pid whose own init line
    says rank 3 is rank 3 (log-formats.md section 4.3), not the name's 0; a stated `[rank0]:` rank stays."""
    init3 = ev(kind="nccl_comm_init", rank=0, comm_rank=3, nranks=8, nccl_host="pod-a", pid=215)
    init0 = ev(kind="nccl_comm_init", rank=0, comm_rank=0, nranks=8, nccl_host="pod-a", pid=212)
    warn3 = ev(kind="nccl_warn", rank=0, nccl_host="pod-a", pid=215)
    warn0 = ev(kind="nccl_warn", rank=0, nccl_host="pod-a", pid=212)
    plain = ev(kind="exception", rank=0)
    f = FileEvents("worker-0.log", Origin(rank=0), [init3, init0, warn3, warn0, plain])
    attribute([f])
    assert [e.rank for e in f.events] == [3, 0, 3, 0, 0]
    init = ev(kind="nccl_comm_init", rank=0, comm_rank=3, nranks=8, nccl_host="pod-a", pid=215)
    stated = FileEvents("worker-0.log", Origin(rank=0), [init], stated_ranks=frozenset({0}))
    attribute([stated])
    assert stated.events[0].rank == 0   # a `[rank0]:` line in the file: the name's rank is stated, kept


def test_stated_rank_is_the_last_resort() -> None:
    f = FileEvents("c.log", Origin(), [ev(kind="hang_detected", stated_rank=3),
                                       ev(kind="y", rank=1, stated_rank=3)])
    attribute([f])
    assert [e.rank for e in f.events] == [3, 1]


def test_an_unenveloped_pg_rank_after_its_writers_enveloped_line_is_that_writers() -> None:
    """`[rank19]:[E ...] [Rank 3] NCCL watchdog thread terminated ...` then `what():  [Rank 3] ...` on the
    same stream: `[Rank 3]` is a process-group rank (log-formats.md section 1.2); the what() line is
    rank 19's."""
    enveloped = Event(kind="watchdog_terminated", ref=SourceRef("ds.log", 5), text="", parser="t", rank=19,
                      host="worker-2", fields={"stated_rank": 3})
    what = Event(kind="watchdog_terminated", ref=SourceRef("ds.log", 10), text="", parser="t",
                 host="worker-2", fields={"stated_rank": 3})
    other = Event(kind="watchdog_terminated", ref=SourceRef("ds.log", 12), text="", parser="t",
                  host="worker-0", fields={"stated_rank": 3})
    f = FileEvents("ds.log", Origin(), [enveloped, what, other])
    attribute([f])
    assert [e.rank for e in f.events] == [19, 19, 3]


def test_an_nccl_errors_last_error_names_the_pid_that_warned_it() -> None:
    """`Last error:` repeats the last NCCL WARN of the raising process (log-formats.md section 1.6): the pid
    that alone warned that text is the rank that raised, and its other WARN lines (a port event) are too."""
    ib = "NET/IB : Got completion from peer 10.0.9.66<52290> with status=12 opcode=0 len=0 vendor err 129"

    def warn(line: int, pid: int, msg: str) -> Event:
        return Event(kind="nccl_warn", ref=SourceRef("p.txt", line), text="", parser="t", host="gpu-r12",
                     fields={"message": msg, "nccl_host": "gpu-r12", "pid": pid})
    port = warn(1, 40088, "NET/IB : Got async event : port error")
    other = warn(2, 40089, "NET/IB : Got async event : port error")
    err = Event(kind="nccl_error", ref=SourceRef("p.txt", 4), text="", parser="t", rank=88,
                fields={"last_error": ib})
    f = FileEvents("p.txt", Origin(), [port, other, warn(3, 40088, ib), err])
    attribute([f])
    assert [e.rank for e in f.events] == [88, None, 88, 88]


def test_host_from_rank_map() -> None:
    f = FileEvents("c.log", Origin(), [ev(kind="world_info", rank=4, global_rank=4, hostname="nodeA"),
                                       ev(kind="z", rank=4)])
    attribute([f])
    assert f.events[1].host == "nodeA"


def test_a_launchers_report_of_one_rank_task_names_its_node() -> None:
    """mpirun's `process rank 1 ... on node n01` and srun's `srun: error: n02: task 3: Killed`, ranked by
    their task, give that rank's host; a report whose task is not the event's rank gives none."""
    f = FileEvents("c.log", Origin(), [
        ev(kind="launcher_exit", rank=1, launcher="mpirun", tasks=[1], task_host="n01", line=1),
        ev(kind="launcher_exit", rank=3, launcher="srun", tasks=[3], task_host="n02", line=2),
        ev(kind="launcher_exit", rank=5, launcher="srun", tasks=[0], task_host="n03", line=3),
        ev(kind="exception", rank=1, line=4), ev(kind="exception", rank=3, line=5),
        ev(kind="exception", rank=5, line=6)])
    attribute([f])
    assert [e.host for e in f.events[3:]] == ["n01", "n02", None]


def _utc(t: float | None) -> tuple[int, int, int]:
    d = dt.datetime.fromtimestamp(t or 0, dt.timezone.utc)
    return d.year, d.month, d.day


def test_yearless_stamps_dated_by_job_and_rollover() -> None:
    y2000 = dt.datetime(2000, 12, 31, 23, 59, tzinfo=dt.timezone.utc).timestamp()
    jan = dt.datetime(2000, 1, 1, 0, 1, tzinfo=dt.timezone.utc).timestamp()
    dated = dt.datetime(2025, 1, 1, 0, 0, tzinfo=dt.timezone.utc).timestamp()
    f = FileEvents("a", Origin(), [ev(time=y2000), ev(time=jan, line=2)], dated=(dated, dated))
    attribute([f])
    assert [_utc(e.time) for e in f.events] == [(2024, 12, 31), (2025, 1, 1)]


def test_yearless_rollover_without_any_dated_stamp() -> None:
    dec = dt.datetime(2000, 12, 31, 23, 59, tzinfo=dt.timezone.utc).timestamp()
    jan = dt.datetime(2000, 1, 1, 0, 1, tzinfo=dt.timezone.utc).timestamp()
    f = FileEvents("a", Origin(), [ev(time=dec), ev(time=jan, line=2)])
    attribute([f])
    assert f.events[0].time is not None and f.events[1].time is not None
    assert f.events[0].time < f.events[1].time


def console(events: list[Event]) -> FileEvents:
    return FileEvents("console.log", Origin(), events)


def test_one_tee_console_and_nothing_of_a_second_node_maps_local_to_global() -> None:
    """torchrun's --nnodes defaults to 1:1: one agent's local ranks are the global ranks."""
    c = console([ev(local_rank=0, line=1), ev(local_rank=1, line=2),
                 ev(kind="worker_failed", local_rank=1, line=3)])
    attribute([c])
    assert [e.rank for e in c.events[:2]] == [0, 1]


def test_a_second_node_or_a_bigger_world_keeps_local_ranks_unmapped() -> None:
    cases = [
        [ev(local_rank=1), ev(kind="launch_config", nnodes=2, node_rank=None, nproc_per_node=2)],
        [ev(local_rank=1), ev(kind="world_info", world_size=8)],
        [ev(local_rank=1), ev(kind="nccl_comm_init", nranks=16, comm_rank=3)],
        [ev(local_rank=1), ev(rank=9)],
        [ev(local_rank=1, host="node-a"), ev(local_rank=0, host="node-b")],
        [ev(local_rank=1), Event(kind="child_failed", ref=SourceRef("f", 2), text="", parser="t",
                                 fields={"failed_rank": 3, "local_rank": 1, "failed_host": "n2"})],
    ]
    for evs in cases:
        c = console(evs)
        attribute([c])
        assert c.events[0].rank is None, evs[1].kind
    two = [console([ev(local_rank=1)]), FileEvents("other.log", Origin(), [ev(local_rank=0)])]
    attribute(two)
    assert two[0].events[0].rank is None


def test_slurm_task_file_names() -> None:
    from hanglens.ingest.origin import slurm_task

    assert slurm_task("logs/88120.3.out") == (("logs", "", "88120"), 3)
    assert slurm_task("slurm-88120_12.out") == (("", "slurm-", "88120"), 12)
    assert slurm_task("train-88120-0.err") == (("", "train-", "88120"), 0)
    for name in ("rank3.out", "88120.out", "model.3.pt", "epoch-12.png", "88120.3.out.gz"):
        assert slurm_task(name) is None, name


def slurm(name: str, events: list[Event], stated: frozenset[int] = frozenset()) -> FileEvents:
    return FileEvents(name, Origin(), events, stated_ranks=stated)


def test_slurm_task_files_of_one_worker_each_are_ranks() -> None:
    files = [slurm(f"88120.{t}.{x}", [ev(line=1)]) for t in (0, 1, 3) for x in ("err", "out")]
    attribute(files)
    assert [(f.events[0].rank, f.origin.rank) for f in files] == [(t, t) for t in (0, 1, 3) for _ in "eo"]


def test_slurm_task_files_that_are_nodes_or_name_other_ranks_keep_no_rank() -> None:
    agent = ev(kind="worker_failed", line=2, local_rank=1, exitcode=1)
    cases = [
        [slurm("88120.0.out", [ev(line=1)]), slurm("88120.1.out", [ev(line=1), agent])],   # torchrun per task
        [slurm("88120.0.out", [ev(line=1)]), slurm("88120.1.out", [ev(line=1, rank=5)])],   # states rank 5
        [slurm("88120.0.out", [ev(line=1)]), slurm("88120.1.out", [ev(line=1)], frozenset({4}))],
        [slurm("88120.2.out", [ev(line=1)])],                                               # no series
        [slurm("88120.0.out", [ev(line=1)]), slurm("88120.7.out", [ev(line=1)]),
         slurm("n.log", [ev(kind="world_info", world_size=4, line=1)])],                    # beyond the world
    ]
    for files in cases:
        attribute(files)
        assert files[0].events[0].rank is None, [f.display for f in files]


def _e(kind: str, line: int, *, text: str = "", parser: str = "t", writer: str | None = None,
       own_local_rank: int | None = None, **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef("console.log", line), text=text, parser=parser,
                 local_rank=own_local_rank, fields=fields, writer=writer)


def test_a_failure_table_maps_the_local_ranks_of_its_own_launcher_stream() -> None:
    """`srun -l` with one torchrun per node: the table node 1's agent printed maps node 1's local rank 3;
    node 0's local rank 3 is another process (log-formats.md sections 3.6, 9.3)."""
    c = FileEvents("console.log", Origin(), [
        _e("oom", 2, writer="task 1/tee default3", own_local_rank=3),
        _e("hang_detected", 5, writer="task 0/tee default3", own_local_rank=3),
        _e("child_failed", 9, parser="elastic", writer="task 1", failed_rank=7, local_rank=3,
           failed_host="n2", exitcode=1, pid=60),
    ])
    attribute([c])
    assert [e.rank for e in c.events[:2]] == [7, None]


IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"


def _console_with_exit(*failures: Event, exc_line: int = 7) -> FileEvents:
    return FileEvents("console.log", Origin(), [
        _e("progress", 3, text="epoch 11 iter 1800/2600"),
        _e("exception", exc_line, text=IMA, parser="traceback"),   # at `Traceback (most recent call last):`
        _e("cuda_error", exc_line + 9, text=IMA, parser="cuda"),    # at the exception's own line
        *failures,
    ])


def test_an_unprefixed_traceback_is_the_only_exit_code_1_workers() -> None:
    """A worker dying of a Python exception exits with 1 after its traceback; signalled workers print none
    (log-formats.md sections 3.5-3.6): the traceback before the agent's report is that worker's."""
    c = _console_with_exit(
        _e("worker_failed", 19, parser="elastic", exitcode=1, local_rank=1, pid=305),
        _e("child_failed", 30, parser="elastic", exitcode=1, local_rank=1, pid=305, failed_rank=1,
           failed_host="box"))
    attribute([c])
    assert [e.rank for e in c.events[:3]] == [None, 1, 1]      # the progress line is nobody's in particular
    assert c.events[3].rank is None and c.events[4].rank is None


def test_two_exit_code_1_workers_or_a_later_traceback_stay_unattributed() -> None:
    two = _console_with_exit(
        _e("child_failed", 30, parser="elastic", exitcode=1, local_rank=1, pid=305, failed_rank=1),
        _e("child_failed", 31, parser="elastic", exitcode=1, local_rank=0, pid=304, failed_rank=0))
    later = _console_with_exit(
        _e("child_failed", 4, parser="elastic", exitcode=1, local_rank=1, pid=305, failed_rank=1))
    signalled = _console_with_exit(
        _e("child_failed", 30, parser="elastic", exitcode=-6, local_rank=1, pid=305, failed_rank=1))
    for c in (two, later, signalled):
        attribute([c])
        assert [e.rank for e in c.events[:3]] == [None, None, None]


def test_restart_attempts_of_the_only_node_keep_local_ranks_as_global_ranks() -> None:
    """`attempt_0` and `attempt_1` of one `--log-dir` tree are the same agent's workers restarted
    (log-formats.md section 3.1); a single node's local ranks are its global ranks in every attempt."""
    files = [FileEvents(f"run_q/attempt_{a}/{lr}/stderr.log",
                        Origin(local_rank=lr, attempt=a, node_dir="run_q"), [ev(local_rank=lr)])
             for a in (0, 1) for lr in (0, 2)]
    attribute(files)
    assert [f.events[0].rank for f in files] == [0, 2, 0, 2]


def test_a_launcher_layout_maps_the_local_ranks_of_its_hosts_streams() -> None:
    """DeepSpeed's `global_rank_mapping=` names every host's ranks in local-rank order
    (deepspeed/launcher/launch.py): a pdsh stream of host gpu-w2 numbers its local rank 1 as rank 3, and
    the ranks that left no line get their host too; host gpu-w1's stream is not renumbered by gpu-w2's."""
    layout = [_e("rank_layout", 1, parser="elastic", writer="host gpu-w1", node_host="gpu-w1", node_index=0,
                 global_ranks=[0, 1]),
              _e("rank_layout", 1, parser="elastic", writer="host gpu-w1", node_host="gpu-w2", node_index=1,
                 global_ranks=[2, 3])]
    w2 = replace(_e("exception", 4, writer="host gpu-w2/tee default1", own_local_rank=1), host="gpu-w2")
    w1 = replace(_e("exception", 6, writer="host gpu-w1/tee default1", own_local_rank=1), host="gpu-w1")
    c = FileEvents("console.log", Origin(), [*(replace(e, host="gpu-w1") for e in layout), w2, w1])
    attribute([c])
    assert [e.rank for e in c.events[2:]] == [3, 1]


def test_a_rendezvous_result_maps_its_agents_workers_and_names_their_host() -> None:
    """torchrun's rendezvous result lists its own workers' local and global ranks (log-formats.md 3.5)."""
    c = FileEvents("console.log", Origin(), [
        replace(_e("world_info", 1, parser="elastic", writer="host n7", local_ranks=[0, 1, 2],
                   global_ranks=[6, 7, 8], node_rank=2), host="n7"),
        replace(_e("oom", 3, writer="host n7/tee default2", own_local_rank=2), host="n7"),
    ])
    attribute([c])
    assert c.events[1].rank == 8


# DeepSpeed under pdsh with torch 2.3 (no `[rankN]: ` on tracebacks, log-formats.md section 3.3): the
# launcher's layout and its exit line for local rank 1 of gpu-w2 name the crashed worker. Written here.
DS_CRASH = """\
gpu-w1: [2025-02-11 08:30:01,004] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict(\
<class 'list'>, {'gpu-w1': [0, 1], 'gpu-w2': [2, 3]})
gpu-w2: [2025-02-11 08:30:01,211] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict(\
<class 'list'>, {'gpu-w1': [0, 1], 'gpu-w2': [2, 3]})
gpu-w1: step 10 loss 2.113
gpu-w2: step 10 loss 2.108
gpu-w2: Traceback (most recent call last):
gpu-w2:   File "/home/user/job/fit.py", line 88, in <module>
gpu-w2:     batch = next(it)
gpu-w2: KeyError: 'input_ids'
gpu-w2: [2025-02-11 08:31:04,870] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 7120
gpu-w2: [2025-02-11 08:31:04,990] [ERROR] [launch.py:325:sigkill_handler] ['/home/user/venv/bin/python', \
'-u', 'fit.py', '--local_rank=1', '--deepspeed', 'ds.json'] exits with return code = 1
"""


def test_a_deepspeed_exit_line_and_layout_name_the_crashed_worker(tmp_path: Any) -> None:
    from hanglens import api

    (tmp_path / "launch.log").write_text(DS_CRASH)
    a = api.analyze([tmp_path])
    exits = [e for e in a.tables.events if e.kind == "launcher_exit"]
    assert [(e.rank, e.get("placed_rank")) for e in exits] == [(None, 3)]   # the launcher's own line
    assert [e.rank for e in a.tables.events if e.kind == "exception"] == [3]
    assert a.result.verdict.culprit_ranks == (3,)
    # two exit lines in one launcher stream: nobody is its only failed worker
    tail = DS_CRASH.splitlines(keepends=True)
    twice = DS_CRASH + tail[-2] + tail[-1]
    (tmp_path / "launch.log").write_text(twice)
    assert [e.rank for e in api.analyze([tmp_path]).tables.events if e.kind == "exception"] == [None]


def test_an_archive_s_own_name_is_no_host() -> None:
    """`run-7.tar.gz!run-7/...`: the archive's name (and the folder packed in it under that name) names the
    job, not a machine; so does the one folder every member lies in, whatever its name (`tar czf a4.tar.gz
    trainer-03`), where the lines name a host of their own; folders beside others stay hosts, and so does
    the one folder of an archive whose lines name no host."""
    def f(display: str, host: str, writer: str | None = None) -> FileEvents:
        e = replace(ev(host=host), writer=writer)
        return FileEvents(display, Origin(host=host), [e, ev(host="localhost")])

    packed = [f("run-7.tar.gz!run-7/rank0.log", "run-7"), f("jobs/run-7.tar.gz!run-7/rank1.log", "run-7")]
    attribute(packed)
    assert [(x.origin.host, [e.host for e in x.events]) for x in packed] == [(None, [None, "localhost"])] * 2
    inner = [f("a3.tar.gz!node07/rank0.log", "node07"), f("a3.tar.gz!node08/rank1.log", "node08"),
             f("job/node09/rank2.log", "node09")]
    attribute(inner)
    assert [x.origin.host for x in inner] == ["node07", "node08", "node09"]
    alone = [f(f"a4.tar.gz!trainer-03/rank{r}.log", "trainer-03") for r in (0, 1)]
    attribute(alone)
    assert [x.origin.host for x in alone] == [None, None]
    quiet = [FileEvents("a5.tar.gz!node03/rank0.log", Origin(host="node03"), [ev(host="node03")])]
    attribute(quiet)
    assert quiet[0].origin.host == "node03"
    # a line whose own pdsh prefix names the host keeps it
    pdsh = [f("trn-node-12.zip!console.log", "trn-node-12", writer="host trn-node-12")]
    attribute(pdsh)
    assert pdsh[0].origin.host is None and pdsh[0].events[0].host == "trn-node-12"


def test_a_stack_dumps_local_rank_neither_adds_an_agent_nor_is_lost_on_one_node() -> None:
    # py-spy's argv `--local_rank=<l>` gives a dump its process's local rank (parsers/pyspy.py): on the
    # job's only node it is that rank, and it does not make a one-node --tee console look like a second
    # agent's.
    console = FileEvents("console.log", Origin(),
                         [ev("progress", local_rank=0), ev("progress", local_rank=1)])
    dump = FileEvents("dump.txt", Origin(), [replace(ev("stack_dump", local_rank=1), parser="pyspy")])
    attribute([console, dump])
    assert [e.rank for e in console.events] == [0, 1]
    assert [e.rank for e in dump.events] == [1]
    alone = FileEvents("stack-gpu3.txt", Origin(), [replace(ev("stack_dump", local_rank=3), parser="pyspy")])
    attribute([alone, FileEvents("train.log", Origin(), [ev("hang_detected", rank=1)])])
    assert [e.rank for e in alone.events] == [3]


def _oom_console(*extra: Event, gpu: int = 1) -> FileEvents:
    """A one-node torchrun console (written here from log-formats.md sections 1.4 and 5.2): a rank-less
    OOM naming `GPU <gpu>`, watchdog timeouts that state ranks 0-3, the agent's report."""
    return FileEvents("train.log", Origin(), [
        ev(kind="oom", line=1, device="cuda", gpu=gpu),
        *[ev(kind="hang_detected", rank=r, line=10 + r) for r in range(4)],
        replace(ev(kind="worker_failed", line=20, exitcode=-6, local_rank=0), parser="elastic"),
        *extra])


def test_a_rankless_oom_on_gpu_d_of_a_one_node_torchrun_job_is_rank_d() -> None:
    """failure-signatures.md section 5.1: under torchrun `GPU <d>` is the local rank, the global rank on
    the job's only node."""
    c = _oom_console()
    attribute([c])
    assert c.events[0].rank == 1


def test_gpu_0_a_second_node_or_no_agent_keep_the_oom_rankless() -> None:
    gpu0 = _oom_console(gpu=0)
    second = _oom_console(ev(kind="launch_config", line=30, node_rank=1, nnodes=2))
    hosts = _oom_console(ev(kind="x", line=31, host="node-a"), ev(kind="x", line=32, host="node-b"))
    no_agent = FileEvents("train.log", Origin(), [ev(kind="oom", line=1, device="cuda", gpu=1),
                                                   *[ev(kind="hang_detected", rank=r, line=10 + r)
                                                     for r in range(4)]])
    other_node = FileEvents("node1.log", Origin(), [
        ev(kind="oom", line=1, device="cuda", gpu=1),
        *[ev(kind="hang_detected", rank=r, line=10 + r) for r in range(4, 8)],
        replace(ev(kind="worker_failed", line=20, exitcode=-6, local_rank=0), parser="elastic")])
    for c in (gpu0, second, hosts, no_agent, other_node):
        attribute([c])
        assert c.events[0].rank is None, c.display


def _ds_oom(text: str, hosts: tuple[str, ...] = ("localhost",)) -> FileEvents:
    """A DeepSpeed launcher console (written here from log-formats.md sections 5.2 and 9.2): the launcher's
    rank mapping, its `process <pid> spawned ... --local_rank=<l>` lines, and a rank-less CUDA OOM."""
    mapping = [ev(kind="rank_layout", line=1, node_host=h, node_index=i, global_ranks=[2 * i, 2 * i + 1])
               for i, h in enumerate(hosts)]
    # (the launcher line's local rank is a field: the line is the launcher's, not the worker's)
    spawned = [replace(ev(kind="worker_spawned", line=3 + lr),
                       fields={"launcher": "deepspeed", "local_rank": lr, "pid": 7100 + lr})
               for lr in range(2)]
    oom = replace(ev(kind="oom", line=9, device="cuda", gpu=1), text=text)
    return FileEvents("ds.log", Origin(), [*mapping, *spawned, oom])


def test_an_oom_listing_one_launched_worker_s_pid_is_that_worker_s_rank() -> None:
    """log-formats.md section 5.2: the 2.1+ message lists the processes on the GPU (`Process <pid> has <size>
    memory in use.`); the launcher's spawn line ties the pid to local rank 1, rank 1 on the one node."""
    c = _ds_oom("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
                "total capacity of 79.15 GiB of which 1.02 GiB is free. Process 7101 has 78.12 GiB memory in "
                "use. Of the allocated memory 70.11 GiB is allocated by PyTorch")
    attribute([c])
    assert c.events[-1].rank == 1


def test_an_oom_naming_two_workers_or_no_mapped_one_stays_rankless() -> None:
    two = _ds_oom("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB "
                  "of which 1.02 GiB is free. Process 7100 has 40.00 GiB memory in use. Process 7101 has "
                  "38.00 GiB memory in use.")
    stranger = _ds_oom("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 "
                       "GiB of which 1.02 GiB is free. Process 9999 has 78.12 GiB memory in use.")
    # two hosts in the mapping: the spawn lines carry no host, so a local rank is no global rank here
    hosts = _ds_oom("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB "
                    "of which 1.02 GiB is free. Process 7101 has 78.12 GiB memory in use.",
                    hosts=("node-a", "node-b"))
    for c in (two, stranger, hosts):
        attribute([c])
        assert c.events[-1].rank is None, c.display


def test_a_traceback_behind_a_learned_prefix_is_the_rank_its_prefix_s_lines_state() -> None:
    """Written here: lines behind `job/worker-3 | ` state RANK=3 (a launch echo), so the rank-less traceback
    learned behind that prefix is rank 3's; a prefix whose lines state two ranks, or none, names nobody."""
    env = [replace(ev(kind="world_info", line=1, stated_rank=3), text="job/worker-3 | starting (RANK=3)"),
           replace(ev(kind="world_info", line=2, stated_rank=0), text="job/worker-0 | starting (RANK=0)"),
           replace(ev(kind="world_info", line=3, stated_rank=1), text="job/worker-0 | starting (RANK=1)")]
    tb3 = ev(kind="exception", line=5, exc_type="ImportError", writer_tag="job/worker-3 | ")
    tb0 = ev(kind="exception", line=6, exc_type="KeyError", writer_tag="job/worker-0 | ")
    tb9 = ev(kind="exception", line=7, exc_type="KeyError", writer_tag="job/worker-9 | ")
    f = FileEvents("job.log", Origin(), [*env, tb3, tb0, tb9])
    attribute([f])
    assert [e.rank for e in f.events[3:]] == [3, None, None]
def test_a_file_whose_process_announced_its_rank_is_that_ranks() -> None:
    # A per-rank file under a name of the script's choosing (`logs/tp1-dp0.log`): its one process said its
    # global rank (rank_init), so its unranked lines are that rank's.
    own = FileEvents("logs/tp1-dp0.log", Origin(), [ev(kind="rank_init", rank=1, global_rank=1, line=1),
                                                    ev(kind="progress", line=2),
                                                    ev(kind="exception", line=3)])
    attribute([own])
    assert [e.rank for e in own.events] == [1, 1, 1]


def test_a_file_announcing_two_ranks_or_holding_another_ranks_lines_stays_unattributed() -> None:
    two = FileEvents("all.log", Origin(), [ev(kind="rank_init", rank=0, global_rank=0, line=1),
                                           ev(kind="rank_init", rank=3, global_rank=3, line=2),
                                           ev(kind="progress", line=3)])
    mixed = FileEvents("mixed.log", Origin(), [ev(kind="rank_init", rank=2, global_rank=2, line=1),
                                               ev(kind="progress", rank=5, line=2),
                                               ev(kind="progress", line=3)])
    attribute([two, mixed])
    assert two.events[2].rank is None
    assert mixed.events[2].rank is None


# -- end to end through the reader: text written here from log-formats.md sections 3.5 and 9.2 -----------

def _read_events(tmp_path: Any, files: dict[str, str]) -> list[Event]:
    from hanglens.api import read
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return read([tmp_path]).events


def test_ray_task_error_pid_names_the_worker_rank(tmp_path: Any) -> None:
    # Ray Train workers state their rank behind `(RayTrainWorker pid=<pid>, ip=<ip>)`; the driver's
    # `RayTaskError(...) ... (pid=<pid>, ...)` names the process the traceback below it comes from.
    log = "\n".join([
        "(RayTrainWorker pid=7101, ip=10.0.0.4) Setting up process group for: env:// [rank=0, world_size=2]",
        "(RayTrainWorker pid=7102, ip=10.0.0.4) Setting up process group for: env:// [rank=1, world_size=2]",
        "(RayTrainWorker pid=7101, ip=10.0.0.4) epoch 0 step 10 loss 1.25",
        "Traceback (most recent call last):",
        '  File "/opt/ray/_private/worker.py", line 870, in get_objects',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(ValueError): ray::_RayTrainWorker__execute.get_next() (pid=7102, "
        "ip=10.0.0.4, actor_id=ab12, repr=<RayTrainWorker object at 0x7f00>)",
        '  File "/job/train.py", line 40, in train_func',
        "    check(batch)",
        "ValueError: empty batch",
        "",
    ])
    events = _read_events(tmp_path, {"driver.log": log})
    exc = [e for e in events if e.kind == "exception"]
    assert exc and all(e.rank == 1 for e in exc)
    prog = [e for e in events if e.kind == "progress"]
    assert prog and prog[0].rank == 0


def test_ray_worker_list_pairs_pid_and_rank(tmp_path: Any) -> None:
    log = "\n".join([
        "(TorchTrainer pid=500, ip=10.0.0.4) Started distributed worker processes: ",
        "(TorchTrainer pid=500, ip=10.0.0.4) - (node_id=aa01, ip=10.0.0.4, pid=7101) world_rank=0, "
        "local_rank=0, node_rank=0",
        "(TorchTrainer pid=500, ip=10.0.0.4) - (node_id=bb02, ip=10.0.0.5, pid=8801) world_rank=1, "
        "local_rank=0, node_rank=1",
        "(RayTrainWorker pid=8801, ip=10.0.0.5) epoch 0 step 10 loss 1.25",
        "",
    ])
    events = _read_events(tmp_path, {"driver.log": log})
    assert [e.rank for e in events if e.kind == "progress"] == [1]


def test_restart_attempts_split_by_line_and_rendezvous_maps_local_rank(tmp_path: Any) -> None:
    # An unprefixed traceback's event comes after the agent lines that follow it; the attempt is still
    # the one its lines are in, and that attempt's rendezvous result maps the failed local rank.
    log = "\n".join([
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:",
        "  restart_count=0", "  master_addr=127.0.0.1", "  master_port=29500", "  group_rank=1",
        "  group_world_size=2", "  local_ranks=[0, 1]", "  role_ranks=[2, 3]", "  global_ranks=[2, 3]",
        "  role_world_sizes=[4, 4]", "  global_world_sizes=[4, 4]", "",
        "Traceback (most recent call last):",
        '  File "train.py", line 12, in <module>',
        "    load(path)",
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/shard-3.bin'",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 9120 closing signal SIGTERM",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 9121) "
        "of binary: /usr/bin/python",
        "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 1/1 attempts left; "
        "will restart worker group",
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:",
        "  restart_count=1", "  group_rank=1", "  group_world_size=2", "  local_ranks=[0, 1]",
        "  global_ranks=[2, 3]", "",
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        "    check()",
        "ValueError: second attempt",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 9177) "
        "of binary: /usr/bin/python",
        "",
    ])
    events = _read_events(tmp_path, {"node1.log": log})
    ranks = {e.get("exc_type"): e.rank for e in events if e.kind == "exception"}
    assert ranks == {"FileNotFoundError": 3, "ValueError": 2}


def test_hostless_rendezvous_result_maps_tee_local_ranks(tmp_path: Any) -> None:
    log = "\n".join([
        "[2023-10-20 07:00:04,512] torch.distributed.elastic.agent.server.api: [INFO] [default] Rendezvous "
        "complete for workers. Result:",
        "  restart_count=0", "  group_rank=1", "  group_world_size=2", "  local_ranks=[0, 1, 2, 3]",
        "  global_ranks=[4, 5, 6, 7]", "",
        "[default2]:Traceback (most recent call last):",
        '[default2]:  File "train.py", line 5, in <module>',
        "[default2]:    torch.cuda.set_device(2)",
        "[default2]:RuntimeError: CUDA error: invalid device ordinal",
        "",
    ])
    events = _read_events(tmp_path, {"node1.console": log})
    assert {e.rank for e in events if e.kind in ("exception", "cuda_error")} == {6}


def test_a_one_node_failure_table_places_a_worker_that_never_printed_its_rank(tmp_path: Any) -> None:
    # torch 2.13 --tee 3: a worker fails inside init_process_group (no `[rankN]:` yet); the agent's table
    # rows `rank: l (local_rank: l)` say its node runs local ranks 0-2, so `[default1]:` is rank 1
    rows = []
    for r, code in ((0, "-15 (pid: 411)  (SIGTERM)"), (1, "1 (pid: 412) "), (2, "-15 (pid: 413)  (SIGTERM)")):
        rows += [f"[{r}]:", "  time      : 2026-12-06_00:18:46", "  host      : trainer-a",
                 f"  rank      : {r} (local_rank: {r})", f"  exitcode  : {code}", "  error_file: <N/A>"]
    log = "\n".join([
        "[default1]:[E1206 00:18:44.756999625 socket.cpp:1028] [c10d] The client socket has timed out after "
        "20000ms while trying to connect to (127.0.0.1, 29851).",
        "[default1]:torch.distributed.DistNetworkError: The client socket has timed out after 20000ms while "
        "trying to connect to (127.0.0.1, 29851).",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================", "train.py FAILED",
        "------------------------------------------------------------", "Failures:", *rows[6:],
        "------------------------------------------------------------",
        "Root Cause (first observed failure):", *rows[:6],
        "============================================================", "",
    ])
    events = _read_events(tmp_path, {"console.log": log})
    assert {e.rank for e in events if e.kind == "store_error"} == {1}


def test_stack_dump_pid_named_by_a_ranks_own_pid_print(tmp_path: Any) -> None:
    log = "[rank 3] pid=40111 device=cuda:3\n[rank 2] pid=40110 device=cuda:2\n"
    dump = "\n".join([
        "Process 40111: /usr/bin/python3 -u train.py",
        "Python v3.10.12 (/usr/bin/python3.10)",
        "",
        'Thread 40111 (idle): "MainThread"',
        "    get (queue.py:171)",
        "    _try_get_data (torch/utils/data/dataloader.py:1132)",
        "    __next__ (torch/utils/data/dataloader.py:630)",
        "    main (train.py:44)",
        "",
    ])
    events = _read_events(tmp_path, {"train.log": log, "dump_a.txt": dump})
    stacks = [e for e in events if e.path.endswith("dump_a.txt") and e.kind != "version_info"]
    assert stacks and {e.rank for e in stacks} == {3}


def test_pod_logs_saved_under_the_replica_name_alone_are_nodes_not_ranks() -> None:
    # `kubectl logs` of a PyTorchJob saved as `master-0.log` / `worker-0.log` (no job prefix): worker 0 is
    # node 1 (the operator gives the master RANK 0, worker i RANK i+1), so the name's rank 0 is not the rank
    # of the worker pod's unprefixed lines (a tokenizer bar) while its `[rankN]:` lines state 5, 6 and 7.
    master = FileEvents("logs/master-0.log", Origin(), [ev(rank=0, line=1)], stated_ranks=frozenset({0, 2}))
    bar = ev(kind="progress", rank=0, line=1)
    worker = FileEvents("logs/worker-0.log", Origin(rank=0), [bar, ev(rank=5, line=2), ev(rank=6, line=3)],
                        stated_ranks=frozenset({5, 6, 7}))
    attribute([master, worker])
    assert [e.rank for e in worker.events] == [None, 5, 6]
    assert worker.origin.rank is None


# written here from log-formats.md section 3.6 (the ChildFailedError table with each worker's error.json
# callstack under `traceback :`) and failure-signatures.md section 8 (a DataLoader worker's death ends its
# rank's callstack); torchtitan's launch script shape `--local-ranks-filter 0 --role rank --tee 3`, so only
# rank 0's own lines are in the console (torch 2.13, 4 workers, values of our own)
FILTERED_CONSOLE = """\
[rank0]:[titan] 2026-03-02 11:20:05,118 - root - INFO - step:  3  loss:  7.4120  grad_norm:  1.6021
[rank0]:[rank0]: Traceback (most recent call last):
[rank0]:[rank0]:   File "/home/user/titan/train.py", line 88, in <module>
[rank0]:[rank0]:     trainer.train()
[rank0]:[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] \
Connection closed by \
peer [127.0.0.1]:41230. This is typically caused by a remote worker crashing.
W0302 11:20:11.402000 7300 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process \
7311 closing \
signal SIGTERM
E0302 11:20:11.655000 7300 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) \
local_rank: 3 (pid: 7314) of binary: /home/user/.venv/bin/python
""" + failure_table(
    F(3, 1, 7314, host="node-a", time="2026-03-02_11:20:06",
      error_file="/tmp/torchelastic_q1/none_w2/attempt_0/3/error.json",
      traceback="Traceback (most recent call last):\n"
                '    File "/home/user/titan/train.py", line 88, in train\n'
                "      batch = next(data_iterator)\n"
                '    File "/home/user/.venv/lib/python3.11/site-packages/torch/utils/data/_utils/'
                'signal_handling.py", line 73, in handler\n'
                "      _error_if_any_worker_fails()\n"
                "  RuntimeError: DataLoader worker (pid 7390) is killed by signal: Segmentation fault."),
    F(0, 1, 7311, host="node-a", time="2026-03-02_11:20:11",
      error_file="/tmp/torchelastic_q1/none_w2/attempt_0/0/error.json",
      traceback="Traceback (most recent call last):\n"
                '    File "/home/user/titan/train.py", line 88, in train\n'
                "      trainer.train()\n"
                "  RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
                "closed by peer [127.0.0.1]:41230"))


def test_a_failure_table_callstack_s_lines_belong_to_its_entry_s_rank(tmp_path: Any) -> None:
    """What other parsers read inside a table entry's callstack is that entry's worker's (here a DataLoader
    worker death of rank 3, whose own lines the console filtered out)."""
    from hanglens import api

    (tmp_path / "console.log").write_text(FILTERED_CONSOLE)
    a = api.analyze([tmp_path])
    died = [e for e in a.tables.events if e.kind == "dataloader_worker_died"]
    assert died and {e.rank for e in died} == {3}
    assert a.result.verdict.culprit_ranks == (3,)


def test_a_node_named_by_its_file_s_node_word_and_by_its_full_name_is_one_host(tmp_path: Any) -> None:
    """`gpu-node2.log` gives its lines the host `node2` (the name's node word); pdsh's prefix names the same
    node `gpu-node2` (written here: pdsh `<host>: ` prefix, torch 2.4+ `[rankN]:` lines, our own values)."""
    from hanglens.ingest import read_inputs

    (tmp_path / "gpu-node2.log").write_text(
        "[rank2]:[W1205 10:00:01.000000000 ProcessGroupGloo.cpp:100] step 3\n"
        "[rank2]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
        "by peer [10.0.0.3]:41230\n")
    steps = "".join(f"gpu-node{n}: [rank{r}]: step {s} loss 0.{s}1\n" for s in range(1, 4)
                    for n, r in ((1, 0), (1, 1), (2, 3)))
    (tmp_path / "pdsh.log").write_text(
        steps + "gpu-node2: [rank3]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553]"
        " Connection closed by peer [10.0.0.3]:41231\n")
    hosts = {e.host for e in read_inputs([tmp_path]).events if e.rank in (2, 3)}
    assert hosts == {"gpu-node2"}
