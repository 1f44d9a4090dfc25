"""torchrun `--max-restarts`: a console's restart attempts are numbered (ingest/attribute.py
`_console_attempts`), the verdict is about the last attempt that trained, and the earlier attempts are
worded in it (analysis/status.py `earlier_attempts`, `restarts`). The consoles are written here in
the shapes torch 2.x's agent prints at its default level (torch/distributed/elastic/multiprocessing/api.py:
`Sending process P closing signal SIGTERM`, `failed (exitcode: N) local_rank: L (pid: P)`; no restart
banner), with values of our own."""

from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.ingest import read_inputs

AGENT = "torch/distributed/elastic/multiprocessing/api.py"


def _closing(t: str, pid: int) -> str:
    return f"W0611 08:{t} 4410 {AGENT}:1028] Sending process {pid} closing signal SIGTERM\n"


def _failed(t: str, code: int, lr: int, pid: int) -> str:
    return (f"E0611 08:{t} 4410 {AGENT}:1002] failed (exitcode: {code}) local_rank: {lr} (pid: {pid}) "
            "of binary: /home/user/env/bin/python3\n")


def _steps(ranks: range, steps: range) -> str:
    return "".join(f"[rank{r}]:step {s} loss {1.5 - s / 10:.3f}\n" for s in steps for r in ranks)


def _crash(rank: int, exc: str) -> str:
    return (f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/home/user/proj/run.py", line 61, in <module>\n'
            f"[rank{rank}]:     batch = next(loader)\n"
            f"[rank{rank}]: {exc}\n")


def _closed(rank: int, port: int) -> str:
    return (f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/home/user/proj/run.py", line 70, in <module>\n'
            f"[rank{rank}]:     loss.backward()\n"
            f"[rank{rank}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
            f"Connection closed by peer [127.0.0.1]:{port}\n")


def _table(rows: list[tuple[int, int, int]]) -> str:
    out = ["Traceback (most recent call last):\n",
           '  File "/home/user/env/bin/torchrun", line 8, in <module>\n',
           "    sys.exit(main())\n",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n",
           "============================================================\n",
           "/home/user/proj/run.py FAILED\n",
           "------------------------------------------------------------\n",
           "Root Cause (first observed failure):\n"]
    for i, (rank, code, pid) in enumerate(rows):
        out += [f"[{i}]:\n", "  time      : 2025-06-11_08:41:07\n", "  host      : box3\n",
                f"  rank      : {rank} (local_rank: {rank})\n", f"  exitcode  : {code} (pid: {pid})\n",
                "  error_file: <N/A>\n"]
    return "".join(out) + "============================================================\n"


# attempt 0: rank 2 raises KeyError, the agent stops ranks 0, 1 and reports rank 2; attempt 1 trains to the
# end on every rank and torchrun exits 0 (no ChildFailedError).
RECOVERED = (
    _steps(range(3), range(0, 3))
    + _crash(2, "KeyError: 'label_77'")
    + _closed(0, 40121) + _closed(1, 40122)
    + _closing("40:11.101000", 7001) + _closing("40:11.102000", 7002)
    + _failed("40:11.130000", 1, 2, 7003)
    + _steps(range(3), range(0, 8))
    + "".join(f"[rank{r}]:finished training\n" for r in range(3))
)

# attempt 0: local rank 0 is SIGKILLed; attempt 1 (new pids): rank 1 raises ValueError at step 3.
KILL_THEN_CRASH = (
    _steps(range(2), range(0, 3))
    + _closed(1, 40211)
    + _closing("40:20.201000", 7102)
    + _failed("40:20.230000", -9, 0, 7101)
    + _steps(range(2), range(0, 3))
    + _crash(1, "ValueError: column 'age' has 0 rows")
    + _closed(0, 40311)
    + _closing("40:31.301000", 7201)
    + _failed("40:31.330000", 1, 1, 7202)
    + _table([(1, 1, 7202), (0, -15, 7201)])
)

# the same ValueError of rank 1 in both attempts
REPEATED = (
    _steps(range(2), range(0, 2))
    + _crash(1, "ValueError: column 'age' has 0 rows")
    + _closed(0, 40411)
    + _closing("40:40.401000", 7301)
    + _failed("40:40.430000", 1, 1, 7302)
    + _steps(range(2), range(0, 2))
    + _crash(1, "ValueError: column 'age' has 0 rows")
    + _closed(0, 40511)
    + _closing("40:50.501000", 7401)
    + _failed("40:50.530000", 1, 1, 7402)
    + _table([(1, 1, 7402), (0, -15, 7401)])
)


def _analyze(tmp_path: Path, text: str) -> api.Analysis:
    (tmp_path / "console.log").write_text(text)
    return api.analyze([tmp_path])


def test_a_console_restart_numbers_the_attempts(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(KILL_THEN_CRASH)
    events = read_inputs([tmp_path]).events
    value_errors = [e for e in events if e.kind == "exception" and "ValueError" in e.text]
    sigkill = [e for e in events if e.kind == "worker_failed" and e.get("exitcode") == -9]
    assert [e.attempt for e in value_errors] == [1]
    assert [e.attempt for e in sigkill] == [0]


def test_one_attempt_keeps_no_attempt_number(tmp_path: Path) -> None:
    one = KILL_THEN_CRASH[KILL_THEN_CRASH.index(_steps(range(2), range(0, 3)), 1):]
    (tmp_path / "console.log").write_text(_steps(range(2), range(0, 3)) + one)
    events = read_inputs([tmp_path]).events
    assert {e.attempt for e in events} == {None}


def test_a_restart_that_trained_to_the_end_is_a_recovered_job(tmp_path: Path) -> None:
    v = _analyze(tmp_path, RECOVERED).result.verdict
    assert v.category.value == "none"
    assert "attempt 0: local rank 2 exited with code 1 after KeyError" in v.summary
    assert "survived" in v.summary


def test_the_verdict_is_about_the_last_attempt(tmp_path: Path) -> None:
    v = _analyze(tmp_path, KILL_THEN_CRASH).result.verdict
    assert v.category.value == "rank_crash"
    assert list(v.culprit_ranks) == [1]
    assert "attempt 0: local rank 0 was killed by SIGKILL (exit code -9)" in v.summary


def test_every_attempt_failing_alike_is_said(tmp_path: Path) -> None:
    v = _analyze(tmp_path, REPEATED).result.verdict
    assert v.category.value == "rank_crash"
    assert list(v.culprit_ranks) == [1]
    assert "Every one of the 2 attempts" in v.summary
    assert "ValueError" in v.summary


# attempt 0: local rank 1 is SIGKILLed; attempt 1 (new pids) fails while starting: rank 0 cannot connect in
# init_process_group, before any step. A restart is a follow-up of the previous attempt's failure
# (failure-signatures.md section 12, last row): the attempts are judged together.
KILL_THEN_INIT_FAILURE = (
    _steps(range(2), range(0, 3))
    + _closed(0, 40611)
    + _closing("41:00.601000", 7501)
    + _failed("41:00.630000", -9, 1, 7502)
    + "[rank0]: Traceback (most recent call last):\n"
    + '[rank0]:   File "/home/user/proj/run.py", line 40, in <module>\n'
    + '[rank0]:     dist.init_process_group("gloo")\n'
    + "[rank0]: RuntimeError: Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/"
    + "pair.cc:144] no error\n"
    + _closing("41:03.701000", 7602)
    + _failed("41:03.730000", 1, 0, 7601)
    + _table([(0, 1, 7601), (1, -15, 7602)])
)


def test_a_last_attempt_that_never_trained_is_judged_with_the_earlier_ones(tmp_path: Path) -> None:
    v = _analyze(tmp_path, KILL_THEN_INIT_FAILURE).result.verdict
    assert list(v.culprit_ranks) == [1]
    assert "failed before any training step" in v.summary


# At INFO level the agent says it restarts (agent/server/api.py `_invoke_run`); the new workers' pids are not
# needed then.
RESTART_LINE = (
    "I0611 08:41:10.800000 4410 torch/distributed/elastic/agent/server/api.py:900] [default] Worker group "
    "FAILED. 1/2 attempts left; will restart worker group\n"
)


def test_the_agents_restart_line_is_a_boundary(tmp_path: Path) -> None:
    text = RECOVERED.replace(_failed("40:11.130000", 1, 2, 7003),
                             _failed("40:11.130000", 1, 2, 7003) + RESTART_LINE)
    (tmp_path / "console.log").write_text(text)
    events = read_inputs([tmp_path]).events
    assert {e.attempt for e in events if e.kind == "exception" and "KeyError" in e.text} == {0}
    assert {e.attempt for e in events if e.kind == "run_finished"} == {1}
    v = api.analyze([tmp_path]).result.verdict
    assert v.category.value == "none"


def test_two_agents_reports_in_one_console_are_no_restart(tmp_path: Path) -> None:
    # kubectl logs of two pods one after the other: each agent reports its own workers (other pids), but no
    # rank writes again after its agent's report, so nothing was restarted
    text = (_steps(range(2), range(0, 2)) + _crash(1, "ValueError: column 'age' has 0 rows")
            + _closing("42:00.100000", 801) + _failed("42:00.130000", 1, 1, 802)
            + _steps(range(2, 4), range(0, 2)) + _closed(2, 40711) + _closed(3, 40712)
            + _closing("42:01.100000", 901) + _failed("42:01.130000", 1, 0, 900))
    (tmp_path / "console.log").write_text(text)
    assert {e.attempt for e in read_inputs([tmp_path]).events} == {None}


def _tree_attempt(root: Path, attempt: int, world: int, culprit: int, exc: str) -> None:
    """One attempt of a `--log-dir DIR --redirects 3` tree (`<run_id>/attempt_<n>/<local_rank>/`): every
    rank logs its steps, the culprit raises at step 3, the others lose their connection to it."""
    for lr in range(world):
        d = root / "logs" / "none_k2j8q1x0" / f"attempt_{attempt}" / str(lr)
        d.mkdir(parents=True)
        (d / "stdout.log").write_text("".join(f"[rank {lr}] step {s}/8 loss {2.5 - s / 10:.3f}\n"
                                              for s in range(3)))
        (d / "stderr.log").write_text(_crash(lr, exc) if lr == culprit else _closed(lr, 40800 + lr))


def test_a_log_dir_trees_earlier_attempts_are_history_when_the_last_one_failed_too(tmp_path: Path) -> None:
    # --max-restarts 2: the same RuntimeError hits rank 0, then rank 3, then rank 1; the job ends on rank 1
    exc = "RuntimeError: shard index corrupted: expected 32 records, read 29"
    pids = {0: (7700, 0), 1: (7710, 3), 2: (7720, 1)}
    console = ""
    for attempt, (pid, culprit) in pids.items():
        _tree_attempt(tmp_path, attempt, 4, culprit, exc)
        console += "".join(_closing(f"4{attempt}:00.10000{lr}", pid + lr) for lr in range(4) if lr != culprit)
        console += _failed(f"4{attempt}:00.130000", 1, culprit, pid + culprit)
    console += _table([(1, 1, 7721), (0, -15, 7720), (2, -15, 7722), (3, -15, 7723)])
    (tmp_path / "console.log").write_text(console)
    v = api.analyze([tmp_path]).result.verdict
    assert v.category.value == "rank_crash"
    assert list(v.culprit_ranks) == [1]
    assert "attempt 0: rank 0 raised RuntimeError" in v.summary
    assert "attempt 1: rank 3 raised RuntimeError" in v.summary


# One node's console of a two-node elastic job: attempt 0 ends with rank 3's KeyError (the agent reports
# local rank 1); in the next round the workers cannot reach the store and the agent restarts them for a
# membership change, with closing signals and no failed line (agent/server/api.py `_restart_workers`);
# the round after that trains to the end.
MEMBERSHIP_RESTART = (
    _steps(range(2, 4), range(0, 3))
    + _crash(3, "KeyError: 'label_12'")
    + _closing("43:00.100000", 8002)
    + _failed("43:00.130000", 1, 1, 8003)
    + "[rank2]:[E0611 08:43:21.500000 socket.cpp:1028] [c10d] The client socket has timed out after 20000ms "
      "while trying to connect to (127.0.0.1, 29511).\n"
    + _closing("43:30.100000", 8102) + _closing("43:30.101000", 8103)
    + _steps(range(2, 4), range(0, 6))
    + "".join(f"[rank{r}]:finished training\n" for r in range(2, 4))
)


def test_a_restart_for_a_membership_change_is_a_boundary(tmp_path: Path) -> None:
    (tmp_path / "console.log").write_text(MEMBERSHIP_RESTART)
    events = read_inputs([tmp_path]).events
    assert {e.attempt for e in events if e.kind == "run_finished"} == {2}
    v = api.analyze([tmp_path]).result.verdict
    assert v.category.value == "none"


def _dated_steps(ranks: range, steps: range, minute: int) -> str:
    return "".join(f"2025-06-11 08:{minute}:{10 + s:02d},500 [rank {r}] step {s}/12 loss {1.5 - s / 10:.3f}\n"
                   for s in steps for r in ranks)


def test_a_node_that_left_an_elastic_job_that_finished_without_it_is_history(tmp_path: Path) -> None:
    # --nnodes 1:2: node 1's agent is stopped (a preemption) at step 4; node 0's workers lose it, its agent
    # restarts them in a world of two, and they train to the end
    (tmp_path / "node1-console.log").write_text(
        _dated_steps(range(2, 4), range(0, 5), 44)
        + "W0611 08:44:15.100000 5101 torch/distributed/elastic/agent/server/api.py:753] Received 15 death "
          "signal, shutting down workers\n"
        + "W0611 08:44:15.101000 5101 " + AGENT + ":1028] Sending process 5120 closing signal SIGTERM\n"
        + "W0611 08:44:15.102000 5101 " + AGENT + ":1028] Sending process 5121 closing signal SIGTERM\n"
        + "torch.distributed.elastic.multiprocessing.api.SignalException: Process 5101 got signal: 15\n")
    (tmp_path / "node0-console.log").write_text(
        _dated_steps(range(0, 2), range(0, 5), 44)
        + _closed(0, 40901) + _closed(1, 40902)
        + _closing("44:16.100000", 5111) + _failed("44:16.130000", 1, 0, 5110)
        + _dated_steps(range(0, 2), range(0, 12), 45)
        + "".join(f"2025-06-11 08:45:40,000 [rank {r}] finished training\n" for r in range(2)))
    v = api.analyze([tmp_path]).result.verdict
    assert v.category.value == "none"


def test_an_attempts_own_error_is_named_when_the_agent_reported_a_victim_first(tmp_path: Path) -> None:
    # attempt 0: rank 1 raises ValueError, rank 0 loses it and happens to exit first, so the agent's one
    # failed line names local rank 0; attempt 1 trains to the end
    text = (_steps(range(2), range(0, 3))
            + _closed(0, 41011)
            + _crash(1, "ValueError: column 'age' has 0 rows")
            + _closing("41:20.101000", 7702) + _failed("41:20.130000", 1, 0, 7701)
            + _steps(range(2), range(0, 8))
            + "".join(f"[rank{r}]:finished training\n" for r in range(2)))
    v = _analyze(tmp_path, text).result.verdict
    assert v.category.value == "none"
    assert "attempt 0: rank 1 raised ValueError" in v.summary


def _init_wait(rank: int) -> str:
    return (f"Traceback (most recent call last):\n"
            f'  File "/home/user/proj/run.py", line 22, in <module>\n'
            f'    dist.init_process_group("gloo")\n'
            f'  File "/home/user/env/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
            f"line 1710, in init_process_group\n"
            f"    store, rank, world_size = next(rendezvous_iterator)\n"
            "torch.distributed.DistStoreError: wait timeout after 30000ms, keys: "
            f"/default_pg/0//cpu//0/{rank}\n")


def _backward_closed(rank: int, port: int) -> str:
    site = "/home/user/env/lib/python3.11/site-packages/torch"
    return "".join(f"[rank{rank}]: {x}\n" for x in [
        "Traceback (most recent call last):",
        '  File "/home/user/proj/run.py", line 70, in <module>',
        "    loss.backward()",
        f'  File "{site}/_tensor.py", line 623, in backward',
        "    torch.autograd.backward(",
        f'  File "{site}/autograd/__init__.py", line 395, in backward',
        "    _engine_run_backward(",
        f'  File "{site}/autograd/graph.py", line 979, in _engine_run_backward',
        "    return Variable._execution_engine.run_backward(",
        f"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        f"[127.0.0.1]:{port}. This is typically caused by a remote worker crashing."])


# attempt 0: rank 3 raises while ranks 0-2 are in backward (DDP's all_reduce) and lose it; attempt 1 (new
# pids): rank 3's only collective stack is init_process_group's, the others left none.
CRASH_THEN_INIT = (
    _steps(range(4), range(0, 3))
    + _crash(3, "RuntimeError: shard manifest corrupted: expected 64 records, read 61")
    + _backward_closed(0, 40611) + _backward_closed(1, 40612) + _backward_closed(2, 40613)
    + _closing("41:00.101000", 7501) + _closing("41:00.102000", 7502) + _closing("41:00.103000", 7503)
    + _failed("41:00.130000", 1, 3, 7504)
    + "[rank 3] restarting: attempt 1\n" + _init_wait(0).replace("Traceback", "[rank3]: Traceback", 1)
    .replace("\n  ", "\n[rank3]:   ").replace("\n    ", "\n[rank3]:     ")
    .replace("\ntorch.", "\n[rank3]: torch.")
    + _closing("41:31.301000", 7601) + _closing("41:31.302000", 7602) + _closing("41:31.303000", 7603)
    + _failed("41:31.330000", 1, 3, 7604)
    + _table([(3, 1, 7604), (0, -15, 7601)])
)


def test_stacks_of_different_attempts_are_not_compared(tmp_path: Path) -> None:
    """Rank 3's init_process_group stack is of the second attempt, its peers' backward stacks of the first:
    they were never blocked side by side, so no rank is called the odd one by its call (probe38, a real
    two-node `--max-restarts 1` run under pdsh)."""
    from hanglens.analysis import collectives

    (tmp_path / "console.log").write_text(CRASH_THEN_INIT)
    events = read_inputs([tmp_path]).events
    assert {e.attempt for e in events if e.kind == "exception" and e.rank == 3} == {0, 1}
    rows = collectives.call_rows(events, {})
    assert not [r for r in rows if r.get("minority")]
