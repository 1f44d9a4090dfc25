"""An error its writer trained on after is not a failure (status.survived_failures), read through the real
pipeline from logs written here in torchrun 2.x shapes (`--tee 3` prefixes, `--log-dir` files)."""

from __future__ import annotations

from pathlib import Path

from hanglens import api

LOGGED = """\
[default0]:[2025-06-03 11:20:04,100] INFO train: rank 0 step 30/90 loss=0.4121
[default0]:[2025-06-03 11:20:04,410] ERROR train: checkpoint upload failed, will retry
[default0]:Traceback (most recent call last):
[default0]:  File "/home/user/job/train.py", line 77, in upload
[default0]:    client.put(path)
[default0]:ConnectionResetError: [Errno 104] Connection reset by peer
[default1]:[2025-06-03 11:20:04,102] INFO train: rank 1 step 30/90 loss=0.4410
[default0]:[2025-06-03 11:20:09,733] INFO train: rank 0 step 60/90 loss=0.2203
[default1]:[2025-06-03 11:20:09,735] INFO train: rank 1 step 60/90 loss=0.2318
[default0]:[2025-06-03 11:20:15,020] INFO train: rank 0 step 90/90 loss=0.1190
[default1]:[2025-06-03 11:20:15,024] INFO train: rank 1 step 90/90 loss=0.1207
"""

# The same shapes, but the traceback is the rank's end: its stdout prints (no timestamps, block-buffered
# into the pipe) reach the console only when the process exits, after the traceback.
FATAL_THEN_BUFFERED = """\
[default1]:step 0 loss 0.5512
[default1]:step 1 loss 0.4180
[default0]:[rank0]: Traceback (most recent call last):
[default0]:[rank0]:   File "/home/user/job/train.py", line 88, in <module>
[default0]:[rank0]:     batch = next(it)
[default0]:[rank0]: ValueError: shard 17 has no rows
[default0]:step 0 loss 0.5020
[default0]:step 1 loss 0.4377
[default1]:[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by \
peer [10.1.0.5]:41622
"""


def _verdict(tmp_path: Path, files: dict[str, str]) -> tuple[str, list[int]]:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    v = api.analyze([tmp_path]).result.verdict
    return v.category.value, list(v.culprit_ranks)


def test_a_logged_traceback_followed_by_later_steps_is_not_a_failure(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"console.log": LOGGED})[0] == "none"


def test_buffered_prints_after_a_traceback_do_not_hide_the_crash(tmp_path: Path) -> None:
    category, culprits = _verdict(tmp_path, {"console.log": FATAL_THEN_BUFFERED})
    assert category != "none"
    assert culprits == [0]


UPLOAD_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/job/train.py", line 77, in upload\n'
    "    client.put(path)\n"
    "ConnectionResetError: [Errno 104] Connection reset by peer\n"
)


def _log_dir(rank0: str) -> dict[str, str]:
    """A two-rank torchrun `--log-dir` tree (stderr.log per local rank); rank 1 trains on throughout."""
    tree = "logs/none_ab12cd/attempt_0/{}/stderr.log"
    return {tree.format(0): rank0, tree.format(1): "step 31 loss 0.4101\nstep 32 loss 0.4066\n"}


def test_a_one_stream_log_dir_file_is_read_in_line_order(tmp_path: Path) -> None:
    rank0 = ("[2025-06-03 11:20:04,410] ERROR train: checkpoint upload failed, will retry\n"
             + UPLOAD_TRACEBACK + "step 31 loss 0.4020\nstep 32 loss 0.3981\n")
    assert _verdict(tmp_path, _log_dir(rank0))[0] == "none"


def test_the_same_traceback_with_no_later_step_stays_a_failure(tmp_path: Path) -> None:
    rank0 = "step 31 loss 0.4020\n" + UPLOAD_TRACEBACK
    assert _verdict(tmp_path, _log_dir(rank0))[0] != "none"


def test_in_a_shared_console_other_ranks_lines_prove_nothing(tmp_path: Path) -> None:
    console = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/job/train.py", line 88, in <module>\n'
        "    batch = next(it)\n"
        "ValueError: shard 17 has no rows\n"
        "step 31 loss 0.4020\n"
        "step 32 loss 0.3981\n"
    )
    assert _verdict(tmp_path, {"console.log": console})[0] != "none"


# A plain console (no --tee, Python logging without the rank): torchrun's own banner, a logged traceback
# with no rank, and every rank training on to its end.
AGENT = (
    "W0412 08:01:10.510000 9120 torch/distributed/run.py:792] \n"
    "W0412 08:01:10.510000 9120 torch/distributed/run.py:792] *****************************************\n"
    "W0412 08:01:10.510000 9120 torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment variable "
    "for each process to be 1 in default, to avoid your system being overloaded, please further tune the "
    "variable for optimal performance in your application as needed. \n"
)
UNRANKED_LOGGED = (
    "2025-04-12 08:01:22,310 INFO run: rank 0 epoch 1 step 40 loss 0.812\n"
    "2025-04-12 08:01:22,311 INFO run: rank 1 epoch 1 step 40 loss 0.790\n"
    "2025-04-12 08:01:22,402 ERROR run.metrics: pushing metrics failed, retrying in 30 s\n"
    "Traceback (most recent call last):\n"
    '  File "/home/user/job/metrics.py", line 51, in push\n'
    "    sock.connect(addr)\n"
    "ConnectionRefusedError: [Errno 111] Connection refused\n"
    "2025-04-12 08:01:25,010 INFO run: rank 0 epoch 1 step 80 loss 0.655\n"
    "2025-04-12 08:01:25,012 INFO run: rank 1 epoch 1 step 80 loss 0.671\n"
)
FINISHED = (
    "2025-04-12 08:01:30,118 INFO run: rank 1 training finished\n"
    "2025-04-12 08:01:30,120 INFO run: rank 0 training finished\n"
)


def test_an_unranked_logged_traceback_in_a_job_finished_on_every_rank_is_survived(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"console.log": AGENT + UNRANKED_LOGGED + FINISHED}) == ("none", [])


def test_an_unranked_traceback_without_the_finish_of_every_rank_stays_a_failure(tmp_path: Path) -> None:
    one_finish = FINISHED.splitlines(keepends=True)[0]
    assert _verdict(tmp_path, {"console.log": AGENT + UNRANKED_LOGGED + one_finish})[0] != "none"


def test_an_unranked_traceback_beside_a_launcher_failure_stays_a_failure(tmp_path: Path) -> None:
    failed = ("E0412 08:01:31.200000 9120 torch/distributed/elastic/multiprocessing/api.py:869] failed "
              "(exitcode: 1) local_rank: 1 (pid: 9125) of binary: /home/user/venv/bin/python3\n")
    assert _verdict(tmp_path, {"console.log": AGENT + UNRANKED_LOGGED + FINISHED + failed})[0] != "none"


def test_an_unranked_traceback_without_the_launchers_output_stays_a_failure(tmp_path: Path) -> None:
    # Without torchrun's own lines in the file nothing says that no worker failed unseen.
    assert _verdict(tmp_path, {"console.log": UNRANKED_LOGGED + FINISHED})[0] != "none"


TAGGED = (
    "2025-04-12 08:01:22,310 [INFO] [RANK 0] run: epoch 1 step 40 loss 0.812\n"
    "2025-04-12 08:01:22,311 [INFO] [RANK 1] run: epoch 1 step 40 loss 0.790\n"
    "2025-04-12 08:01:22,402 [WARNING] [RANK 1] run.metrics: pushing metrics failed, retrying in 30 s\n"
    "Traceback (most recent call last):\n"
    '  File "/home/user/job/metrics.py", line 51, in push\n'
    "    sock.connect(addr)\n"
    "ConnectionRefusedError: [Errno 111] Connection refused\n"
    "2025-04-12 08:01:25,010 [INFO] [RANK 0] run: epoch 1 step 80 loss 0.655\n"
    "2025-04-12 08:01:25,012 [INFO] [RANK 1] run: epoch 1 step 80 loss 0.671\n"
)
TAGGED_FINISHED = (
    "2025-04-12 08:01:30,118 [INFO] [RANK 1] run: training finished\n"
    "2025-04-12 08:01:30,120 [INFO] [RANK 0] run: training finished\n"
)


def test_an_unranked_traceback_then_every_tagged_rank_finished_is_survived(tmp_path: Path) -> None:
    # No launcher output, but each rank says in a line tagged with its own rank that it finished.
    assert _verdict(tmp_path, {"console.log": TAGGED + TAGGED_FINISHED}) == ("none", [])


def test_an_unranked_traceback_then_one_tagged_rank_finished_stays_a_failure(tmp_path: Path) -> None:
    one_finish = TAGGED_FINISHED.splitlines(keepends=True)[0]
    assert _verdict(tmp_path, {"console.log": TAGGED + one_finish})[0] != "none"


def _srun(last_step_time: str) -> str:
    """`srun -l`, one task per rank: task 1 logs a caught error and never prints a step; task 0 trains on."""
    return (
        "0: 2026-02-11 10:00:05 | INFO | step 100/900 loss=2.91\n"
        "1: 2026-02-11 10:03:40 | ERROR | pushing metrics failed, will retry\n"
        "1: Traceback (most recent call last):\n"
        '1:   File "/home/user/job/metrics.py", line 40, in push\n'
        "1:     conn.request(\"POST\", path, body)\n"
        "1: ConnectionResetError: [Errno 104] Connection reset by peer\n"
        f"0: {last_step_time} | INFO | step 900/900 loss=1.77\n"
    )


def test_an_error_then_a_peer_training_on_for_minutes_is_survived(tmp_path: Path) -> None:
    # rank 0 could not have finished 800 more steps of a job whose rank 1 was gone (failure-signatures 0.1)
    assert _verdict(tmp_path, {"slurm-5120.out": _srun("2026-02-11 10:41:12")})[0] == "none"


def test_a_peers_step_just_after_the_error_proves_nothing(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"slurm-5120.out": _srun("2026-02-11 10:04:01")})[0] != "none"


def test_a_bare_traceback_under_an_old_print_is_not_timed_by_that_print(tmp_path: Path) -> None:
    # Rank 1 prints one timed line at start-up, then (much later, untimed) an uncaught OOM traceback; rank 0
    # trains on for half an hour after rank 1's print, then times out (log-formats.md sections 5.2, 1.5).
    # The print above the traceback only bounds the error from below: rank 0's later steps do not show
    # that it came after the error, so the OOM is not survived.
    rank1 = (
        "[2026-02-11 10:00:04] Loading dataset shard from /home/user/data/part-00001.parquet\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/job/train.py", line 212, in <module>\n'
        "    loss = model(x).sum()\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
        "capacty of 39.39 GiB of which 1.02 GiB is free. Of the allocated memory 36.10 GiB is allocated by "
        "PyTorch, and 1.33 GiB is reserved by PyTorch but unallocated.\n"
    )
    rank0 = (
        "[2026-02-11 10:00:03] rank 0 loaded shard part-00000 (48190 samples)\n"
        "[2026-02-11 10:20:11] step 1000 loss 2.114\n"
        "[2026-02-11 10:35:40] step 1800 loss 1.986\n"
        "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5402, OpType=ALLREDUCE, NumelIn=4194304, NumelOut=4194304, Timeout(ms)=1800000) ran "
        "for 1800311 milliseconds before timing out.\n"
    )
    assert _verdict(tmp_path, {"rank0.log": rank0, "rank1.log": rank1}) == ("oom", [1])


# A shared console without launcher prefixes: rank 0's logging records carry its rank, and `logger.exception`
# puts the traceback (unprefixed) right under its ERROR record; rank 0's later records show it trained on.
LOGGED_UNPREFIXED = """\
[10:02:11][fit][INFO][rank 0] - epoch 0 step 1 loss 1.3021
[10:02:11][fit][INFO][rank 1] - epoch 0 step 1 loss 1.2877
[10:02:12][fit][ERROR][rank 0] - metrics sidecar unreachable, continuing without it
Traceback (most recent call last):
  File "/home/user/fit/metrics.py", line 31, in connect
    sock.connect((host, port))
ConnectionRefusedError: [Errno 111] Connection refused
[10:02:12][fit][INFO][rank 1] - epoch 0 step 2 loss 1.1130
[10:02:12][fit][INFO][rank 0] - epoch 0 step 2 loss 1.0964
[10:02:13][fit][INFO][rank 0] - epoch 1 step 3 loss 0.9120
[10:02:13][fit][INFO][rank 1] - epoch 1 step 3 loss 0.9391
[10:02:13][fit][INFO][rank 0] - training done after 3 steps
"""

# The same console, but the traceback is no logged record's: it is an uncaught exception of a process.
UNCAUGHT_UNPREFIXED = """\
[10:02:11][fit][INFO][rank 0] - epoch 0 step 1 loss 1.3021
[10:02:11][fit][INFO][rank 1] - epoch 0 step 1 loss 1.2877
Traceback (most recent call last):
  File "/home/user/fit/train.py", line 88, in <module>
    batch = next(it)
ValueError: shard 17 has no rows
[10:02:12][fit][INFO][rank 0] - epoch 0 step 2 loss 1.0964
"""


def test_logged_exception_under_its_record_is_survived_by_line_order(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"train.log": LOGGED_UNPREFIXED})[0] == "none"


def test_uncaught_traceback_without_a_record_above_stays_a_failure(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"train.log": UNCAUGHT_UNPREFIXED})[0] != "none"
# A caught traceback (stderr) amid untimed prints: the prints prove nothing by their place (buffering),
# but the same rank's finish line does: an uncaught exception ends the process before the end of its script.
CAUGHT_THEN_DONE = """\
[default0]:[rank 0] epoch 0 step 0 loss 3.10
[default1]:[rank 1] epoch 0 step 0 loss 3.12
[default0]:Traceback (most recent call last):
[default0]:  File "/home/user/job/train.py", line 120, in save_preview
[default0]:    img.save(path)
[default0]:PermissionError: [Errno 13] Permission denied: '/data/previews/step0.png'
[default0]:[rank 0] epoch 0 step 1 loss 2.80
[default1]:[rank 1] epoch 0 step 1 loss 2.81
[default0]:[rank 0] done in 41s
[default1]:[rank 1] done in 41s
"""


def test_a_traceback_then_the_same_ranks_finish_line_is_survived(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"console.log": CAUGHT_THEN_DONE})[0] == "none"


def test_a_finish_line_above_the_traceback_does_not_cover_it(tmp_path: Path) -> None:
    # The crash came after the finish line (at teardown): the finish line says nothing of it.
    lines = CAUGHT_THEN_DONE.splitlines(keepends=True)
    done = [ln for ln in lines if "done in" in ln and "[default0]" in ln]
    rest = [ln for ln in lines if ln not in done]
    category, culprits = _verdict(tmp_path, {"console.log": "".join(done + rest)})
    assert category != "none"
    assert culprits == [0]


def test_another_ranks_finish_line_does_not_cover_the_error(tmp_path: Path) -> None:
    text = "".join(ln for ln in CAUGHT_THEN_DONE.splitlines(keepends=True)
                   if not ("done in" in ln and "[default0]" in ln))
    assert _verdict(tmp_path, {"console.log": text})[0] != "none"


# torchrun `--max-restarts 1 --log-dir logs` (log-formats.md section 3.5; agent/server/api.py): attempt 0
# fails on local rank 1, attempt 1 finishes on both ranks, and the agent's console (WARNING level, no INFO
# lines) holds only attempt 0's failure report. Written here.
RESTART_TREE = {
    "console.log": (
        "W0407 16:02:10.310000 8120 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
        "8125 closing signal SIGTERM\n"
        "E0407 16:02:10.340000 8120 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: "
        "1) local_rank: 1 (pid: 8126) of binary: /home/user/venv/bin/python\n"
    ),
    "logs/run_q1/attempt_0/0/stdout.log": "epoch 0 step 4 loss 0.73\n",
    "logs/run_q1/attempt_0/1/stderr.log": (
        "Traceback (most recent call last):\n"
        '  File "/home/user/job/train.py", line 61, in <module>\n'
        "    rows = read_rows(part)\n"
        "OSError: part-0009 could not be read\n"
    ),
    "logs/run_q1/attempt_1/0/stdout.log": "epoch 1 step 8 loss 0.41\ntraining complete\n",
    "logs/run_q1/attempt_1/1/stdout.log": "epoch 1 step 8 loss 0.41\ntraining complete\n",
}


def test_a_failed_attempt_followed_by_a_finished_restart_is_survived(tmp_path: Path) -> None:
    assert _verdict(tmp_path, RESTART_TREE) == ("none", [])
    v = api.analyze([tmp_path]).result.verdict
    assert "restarted" in v.summary


def test_a_restart_whose_last_attempt_did_not_finish_is_still_a_failure(tmp_path: Path) -> None:
    files = dict(RESTART_TREE)
    files["logs/run_q1/attempt_1/1/stdout.log"] = "epoch 1 step 3 loss 0.52\n"
    assert _verdict(tmp_path, files)[0] != "none"


# A successful run's agent (torch 2.x INFO) after the heartbeat monitor lost the store at teardown
# (failure-signatures.md section 17.7). Written here.
STORE_GONE_AFTER_SUCCESS = (
    "[rank3]:step 500/500 loss 0.2011\n"
    '[rank3]:[W0407 16:40:02.120300400 ProcessGroupNCCL.cpp:1371] [PG ID 0 PG GUID 0(default_pg) Rank 3] '
    'Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), '
    "with error: Connection reset by peer\n"
    "I0407 16:40:03.500000 9001 torch/distributed/elastic/agent/server/api.py:932] Local worker group "
    "finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n"
)


def test_store_gone_after_the_agent_reported_success_is_teardown_noise(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"node1.log": STORE_GONE_AFTER_SUCCESS}) == ("none", [])
    head = STORE_GONE_AFTER_SUCCESS.rsplit("I0407", 1)[0]
    assert _verdict(tmp_path / "b", {"node1.log": head})[0] != "none"


# Two nodes under pdsh (log-formats.md section 9.3): gpu-n1's agent reports success, gpu-n2's workers lose the
# store and the node's output ends there (lost). Written here.
TWO_NODES = (
    "gpu-n1: [rank0]:step 500/500 loss 0.2011\n"
    "gpu-n2: [rank2]:step 480/500 loss 0.2150\n"
    "gpu-n1: I0407 16:40:03.500000 9001 torch/distributed/elastic/agent/server/api.py:932] Local worker "
    "group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n"
    "gpu-n2: [rank2]:[W0407 16:40:04.120300400 TCPStore.cpp:125] [c10d] recvValue failed on "
    "SocketImpl(fd=41, addr=[gpu-n2]:51812, remote=[gpu-n1]:29500): Connection reset by peer\n"
)


def test_a_store_error_on_a_node_whose_own_agent_did_not_succeed_is_a_failure(tmp_path: Path) -> None:
    """Each agent's success is its own node's: gpu-n2 was lost while gpu-n1 finished."""
    assert _verdict(tmp_path, {"pdsh.log": TWO_NODES})[0] != "none"
    # the same lines when gpu-n2's agent also reported success: teardown on both nodes
    both = TWO_NODES + (
        "gpu-n2: I0407 16:40:05.000000 7120 torch/distributed/elastic/agent/server/api.py:932] Local worker "
        "group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n")
    assert _verdict(tmp_path / "b", {"pdsh.log": both}) == ("none", [])


def test_a_store_error_in_another_agents_console_without_success_is_a_failure(tmp_path: Path) -> None:
    # node1.log is its own agent's console (torchrun's OMP_NUM_THREADS banner, run.py) with no success line
    node1 = ("W0407 09:00:00.100000 7120 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment "
             "variable for each process to be 1 in default, to avoid your system being overloaded, please "
             "further tune the variable for optimal performance in your application as needed.\n"
             + STORE_GONE_AFTER_SUCCESS.rsplit("I0407", 1)[0])
    node0 = ("[rank0]:step 500/500 loss 0.2011\n"
             "I0407 16:40:03.500000 9001 torch/distributed/elastic/agent/server/api.py:932] Local worker "
             "group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n")
    assert _verdict(tmp_path, {"node0.log": node0, "node1.log": node1})[0] != "none"


# Rank 0 says its run is over, then its TCPStore server is gone for the others (torch 2.6 shapes, written here
# from log-formats.md sections 1.7 and 3.7; failure-signatures.md section 17 item 7).
STORE_GONE_AFTER_RANK0_FINISHED = (
    "[rank0]:step 900/900 loss 0.3310\n"
    "[rank0]:saving final weights to /home/user/out/final.pt, training complete\n"
    "[rank3]:[W0512 07:31:40.210330512 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=52, "
    "addr=[gpu-b]:40118, remote=[gpu-a]:29500): Connection reset by peer\n"
    "[rank3]:[W0512 07:31:40.210901877 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
    "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), "
    "with error: Connection reset by peer\n"
)


def test_store_gone_after_rank0_said_its_run_finished_is_teardown_noise(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"console.log": STORE_GONE_AFTER_RANK0_FINISHED}) == ("none", [])
    # without rank 0's finish line the store host's exit is unexplained
    lines = STORE_GONE_AFTER_RANK0_FINISHED.splitlines(keepends=True)
    assert _verdict(tmp_path / "b", {"console.log": lines[0] + "".join(lines[2:])})[0] != "none"
    # store errors above the finish line came first: rank 0 finishing later does not explain them
    assert _verdict(tmp_path / "c", {"console.log": lines[0] + "".join(lines[2:]) + lines[1]})[0] != "none"


# A trainer that catches CUDA OOM and halves its micro-batch logs the error text at WARNING and trains on
# (torch 2.3 OOM wording, log-formats.md section 5.2; the log format is the user's, written here).
CAUGHT_OOM = (
    "2026-07-02 10:11:40 | rank 2 | WARNING | caught OOM at step 812, retrying with micro_batch=8: CUDA "
    "out of memory. Tried to allocate 1.50 GiB. GPU 2 has a total capacity of 39.39 GiB of which 1.02 GiB "
    "is free. "
    "Of the allocated memory 35.88 GiB is allocated by PyTorch, and 1.97 GiB is reserved by PyTorch but "
    "unallocated.\n"
    "2026-07-02 10:11:41 | rank 2 | INFO | micro_batch now 8\n"
    "2026-07-02 10:11:52 | rank 0 | INFO | step 813 | loss 2.551\n"
    "2026-07-02 11:02:10 | rank 0 | INFO | step 2400 | loss 2.102\n"
    "2026-07-02 13:40:09 | rank 0 | INFO | step 6000 | loss 1.884\n"
    "2026-07-02 13:40:31 | rank 0 | INFO | exporting model\n"
)


def test_an_oom_a_rank_logged_then_peers_trained_on_for_hours_is_survived(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"train.log": CAUGHT_OOM}) == ("none", [])
    # the same OOM as the excerpt's last word: nobody trained on after it
    before = "".join(f"2026-07-02 10:0{i}:10 | rank 0 | INFO | step {800 + i} | loss 2.6{i}\n"
                     for i in range(5))
    last = before + "".join(CAUGHT_OOM.splitlines(keepends=True)[:2])
    assert _verdict(tmp_path / "b", {"train.log": last})[0] == "oom"


# A run that finished (its agent's SUCCEEDED line, log-formats.md section 3.5) whose rank printed an NCCL
# WARN at shutdown: the other node's processes exited first and closed their sockets (section 4.4
# `socketProgress: Connection closed by remote peer`, 2.26+ timestamped WARN). Written here.
WARN_AT_SHUTDOWN_THEN_SUCCESS = (
    "[default0]:step 9000/9000 loss 0.8120\n"
    "[default0]:training finished\n"
    "[default1]:\n"
    "[default1]:[2025-05-11 21:04:11] gpu-k1:4410:4522 [1] misc/socket.cc:58 NCCL WARN socketProgress: "
    "Connection closed by remote peer gpu-k2<40112>\n"
    "I0511 21:04:14.002000 4400 torch/distributed/elastic/agent/server/api.py:932] Local worker group "
    "finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n"
)


def test_an_nccl_warn_before_the_agents_success_is_survived(tmp_path: Path) -> None:
    assert _verdict(tmp_path, {"gpu-k1.log": WARN_AT_SHUTDOWN_THEN_SUCCESS}) == ("none", [])
    head = WARN_AT_SHUTDOWN_THEN_SUCCESS.rsplit("I0511", 1)[0]
    assert _verdict(tmp_path / "b", {"gpu-k1.log": head})[0] != "none"
