"""Stream attribution: a file (or a launcher-prefixed stream) whose own lines state one rank owns its unranked
events; an Open MPI tag names its process's rank; torchrun command lines and the agent's printed error file.

Every log line here is written from ../shared/reference/log-formats.md with values of our own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hanglens.ingest import read_inputs
from hanglens.ingest import reader as reader_module
from hanglens.ingest.streams import stream_ranks
from hanglens.model import Event, SourceRef


def events(tmp_path: Path, files: dict[str, str]) -> list[Event]:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return read_inputs([tmp_path]).events


def ranks_of(evs: list[Event], kind: str) -> list[int | None]:
    return [e.rank for e in evs if e.kind == kind]


# torch 1.10-1.12: a device assert, its traceback, then the NCCL abort naming the process group's rank.
ASSERT_THEN_ABORT = "".join(line + "\n" for line in (
    "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [3,0,0], thread: [64,0,0] "
    "Assertion `index >= -sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.",
    "Traceback (most recent call last):",
    "  File \"fit.py\", line 402, in <module>",
    "    main()",
    "  File \"fit.py\", line 377, in train_step",
    "    logits = head(feats)[labels]",
    "RuntimeError: CUDA error: device-side assert triggered",
    "terminate called after throwing an instance of 'c10::Error'",
    "  what():  NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:181, unhandled cuda error, "
    "NCCL version 21.0.3",
    "Process Group destroyed on rank 3",
    "Exception raised from ncclCommAbort at ../torch/csrc/distributed/c10d/NCCLUtils.hpp:181 "
    "(most recent call first):",
))


@pytest.mark.parametrize("rows_min", [0, 1 << 62])  # every block through RE2 rows / through `re`
def test_abort_reason_names_the_file_writer(tmp_path: Path, rows_min: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_module, "ROWS_MIN_BYTES", rows_min)
    evs = events(tmp_path, {"console.log": ASSERT_THEN_ABORT})
    assert ranks_of(evs, "device_assert") == [3]
    assert ranks_of(evs, "cuda_error") == [3]
    assert ranks_of(evs, "exception") == [3]


def test_a_second_writer_in_the_console_stops_it(tmp_path: Path) -> None:
    # torchrun prints this banner only when it starts several workers: their output shares the console.
    banner = ("W0307 14:02:11.518000 7310 torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment "
              "variable for each process to be 1 in default, to avoid your system being overloaded, please "
              "further tune the variable for optimal performance in your application as needed.\n")
    evs = events(tmp_path, {"console.log": banner + ASSERT_THEN_ABORT})
    assert ranks_of(evs, "device_assert") == [None]
    assert ranks_of(evs, "exception") == [None]


def test_two_ranks_stated_in_one_file_give_nothing(tmp_path: Path) -> None:
    second = ("terminate called after throwing an instance of 'c10::Error'\n"
              "  what():  NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:181, unhandled cuda "
              "error, NCCL version 21.0.3\nProcess Group destroyed on rank 1\n")
    evs = events(tmp_path, {"console.log": ASSERT_THEN_ABORT + second})
    assert ranks_of(evs, "device_assert") == [None]


def test_the_same_exception_twice_is_two_writers(tmp_path: Path) -> None:
    twice = ASSERT_THEN_ABORT.replace(
        "terminate called", "RuntimeError: CUDA error: device-side assert triggered\nterminate called", 1)
    tb = ("Traceback (most recent call last):\n  File \"fit.py\", line 402, in <module>\n    main()\n"
          "RuntimeError: CUDA error: device-side assert triggered\n")
    evs = events(tmp_path, {"console.log": tb + twice})
    assert set(ranks_of(evs, "device_assert")) == {None}


def test_two_tracebacks_are_two_writers(tmp_path: Path) -> None:
    # Two ranks sharing a console, only one of which states its rank (torch < 2.2: no `[rankN]:` prefix).
    other = ("Traceback (most recent call last):\n  File \"fit.py\", line 390, in <module>\n    main()\n"
             "OSError: [Errno 5] Input/output error: '/data/shard-3.bin'\n")
    evs = events(tmp_path, {"console.log": other + ASSERT_THEN_ABORT})
    assert set(ranks_of(evs, "exception")) == {None}


def test_a_sub_group_rank_is_not_the_writers_global_rank(tmp_path: Path) -> None:
    # torch 2.5+: the PG prefix names a process group other than the default one; its rank is a group rank.
    text = ("Traceback (most recent call last):\n  File \"serve.py\", line 51, in forward\n"
            "    out = kern(x)\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "[E1104 07:12:40.118223047 ProcessGroupNCCL.cpp:1911] [PG ID 3 PG GUID 7 Rank 0] Process group "
            "watchdog thread terminated with exception: CUDA error: an illegal memory access was "
            "encountered\n")
    evs = events(tmp_path, {"worker.log": text})
    assert set(ranks_of(evs, "exception")) == {None}
    default = text.replace("[PG ID 3 PG GUID 7 Rank 0]", "[PG ID 0 PG GUID 0(default_pg) Rank 2]")
    evs = events(tmp_path, {"worker.log": default})
    assert set(ranks_of(evs, "exception")) == {2}


def test_rank_echo_names_the_writer(tmp_path: Path) -> None:
    text = ("RANK=5 LOCAL_RANK=1 WORLD_SIZE=8\nepoch 0 step 10 loss 2.31\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    evs = events(tmp_path, {"worker.log": text})
    assert ranks_of(evs, "cuda_error") == [5]


def test_two_nccl_processes_in_one_file_give_nothing(tmp_path: Path) -> None:
    text = ("RANK=5 LOCAL_RANK=1 WORLD_SIZE=8\n"
            "\ngpu-c11:40112:40190 [1] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed by "
            "remote peer gpu-c12<46011>\n"
            "\ngpu-c11:40113:40191 [2] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed by "
            "remote peer gpu-c12<46017>\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    evs = events(tmp_path, {"worker.log": text})
    assert ranks_of(evs, "cuda_error") == [None]


# Open MPI 4 `mpirun --tag-output`: one tag per MPI process (reference section 9.3).
def test_open_mpi_tag_names_the_rank(tmp_path: Path) -> None:
    text = ("[1,2]<stdout>:epoch 1 [12800/50000 (26%)]\tloss 0.4127\n"
            "[1,2]<stderr>:ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).\n"
            "[1,2]<stderr>:[1,2]<stderr>:Traceback (most recent call last):\n"
            "[1,2]<stderr>:  File \"/opt/lib/torch/utils/data/dataloader.py\", line 1133, in _try_get_data\n"
            "[1,2]<stderr>:    data = self._data_queue.get(timeout=timeout)\n"
            "[1,0]<stdout>:epoch 1 [12800/50000 (26%)]\tloss 0.3988\n")
    evs = events(tmp_path, {"mpirun.log": text})
    assert ranks_of(evs, "dataloader_worker_died") == [2]
    assert ranks_of(evs, "exception") == [2]


def test_open_mpi_tag_of_a_launcher_is_not_a_rank(tmp_path: Path) -> None:
    # mpirun started one torchrun per node: the tag is the node, its workers state other ranks.
    text = ("[1,1]<stdout>:RANK=2 LOCAL_RANK=0 WORLD_SIZE=4\n"
            "[1,1]<stdout>:RANK=3 LOCAL_RANK=1 WORLD_SIZE=4\n"
            "[1,1]<stderr>:Traceback (most recent call last):\n"
            "[1,1]<stderr>:  File \"fit.py\", line 88, in <module>\n"
            "[1,1]<stderr>:ValueError: non-finite loss at step 7\n")
    evs = events(tmp_path, {"mpirun.log": text})
    assert ranks_of(evs, "exception") == [None]
    agent = ("[1,1]<stderr>:E0307 14:09:40.101000 7311 torch/distributed/elastic/multiprocessing/api.py:869] "
             "failed (exitcode: 1) local_rank: 0 (pid: 7320) of binary: /opt/venv/bin/python\n"
             "[1,1]<stderr>:Traceback (most recent call last):\n"
             "[1,1]<stderr>:  File \"fit.py\", line 88, in <module>\n"
             "[1,1]<stderr>:ValueError: non-finite loss at step 7\n")
    evs = events(tmp_path, {"mpirun.log": agent})
    assert ranks_of(evs, "exception") == [None]


def test_torchrun_one_worker_per_node_names_the_node_rank(tmp_path: Path) -> None:
    text = ("$ torchrun --nproc-per-node=1 --nnodes=3 --node-rank=2 --master-addr=10.8.0.2 fit.py\n"
            "Traceback (most recent call last):\n  File \"fit.py\", line 88, in <module>\n    run(cfg)\n"
            "FileNotFoundError: [Errno 2] No such file or directory: '/data/shard-11.bin'\n")
    evs = events(tmp_path, {"node2.log": text})
    assert ranks_of(evs, "exception") == [2]
    several = text.replace("--nproc-per-node=1", "--nproc-per-node=4")
    evs = events(tmp_path, {"node2.log": several})
    assert ranks_of(evs, "exception") == [None]
    dynamic = text.replace("--node-rank=2",
                           "--node-rank=2 --rdzv-backend=c10d --rdzv-endpoint=10.8.0.2:29400")
    evs = events(tmp_path, {"node2.log": dynamic})
    assert ranks_of(evs, "exception") == [None]   # a dynamic rendezvous assigns the node rank itself


def test_torchrun_command_line_maps_tee_local_ranks(tmp_path: Path) -> None:
    text = ("torchrun --nnodes 2 --node_rank 1 --nproc_per_node 4 --tee 3 fit.py\n"
            "[default0]:epoch 0 step 3 loss 1.92\n"
            "[default2]:Traceback (most recent call last):\n"
            "[default2]:  File \"fit.py\", line 88, in <module>\n"
            "[default2]:KeyError: 'labels'\n")
    evs = events(tmp_path, {"node1.log": text})
    assert ranks_of(evs, "exception") == [6]


CFE_ROOT = "".join(line + "\n" for line in (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "=" * 60,
    "fit.py FAILED",
    "-" * 60,
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "-" * 60,
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2025-11-04_07:41:19",
    "  host      : gpu-b07",
    "  rank      : 5 (local_rank: 1)",
    "  exitcode  : 1 (pid: 88213)",
    "  error_file: /tmp/torchelastic_k3j9x0aa/none_p0q7w2ee/attempt_0/1/error.json",
    "  traceback : Traceback (most recent call last):",
    "    File \"/srv/job/fit.py\", line 140, in <module>",
    "      main()",
    "    File \"/srv/job/fit.py\", line 97, in main",
    "      batch = next(it)",
    "  KeyError: 'pixel_values'",
    "  ",
    "=" * 60,
))


def test_root_cause_callstack_is_its_ranks_error_file(tmp_path: Path) -> None:
    evs = events(tmp_path, {"agent.log": CFE_ROOT})
    files = [e for e in evs if e.kind == "error_file"]
    assert [(e.rank, e.local_rank, e.get("exc_type")) for e in files] == [(5, 1, "KeyError")]
    assert files[0].get("frames") == ["/srv/job/fit.py:140 in <module>", "/srv/job/fit.py:97 in main"]
    # the table's copy is not read as a traceback of the agent's own
    assert [e for e in evs if e.kind == "exception" and e.get("exc_type") == "KeyError"] == []


def test_callstack_after_the_named_error_file_is_that_local_ranks(tmp_path: Path) -> None:
    # torch 2.1-2.2 agent logging; the excerpt keeps the callstack but not the table head.
    text = ("torchrun --nnodes=1 --nproc-per-node=4 fit.py\n"
            "[2025-03-02 11:05:09,401] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
            "(exitcode: 1) local_rank: 3 (pid: 51220) of binary: /opt/venv/bin/python\n"
            "[2025-03-02 11:05:09,412] torch.distributed.elastic.multiprocessing.errors.error_handler: "
            "[ERROR] "
            "no error file defined for parent, to copy child error file "
            "(/tmp/torchelastic_q1w2e3r4/none_zx81k2lm/attempt_0/3/error.json)\n"
            "    File \"/srv/job/fit.py\", line 212, in save\n"
            "      dist.broadcast_object_list(state, src=0)\n"
            "    File \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line "
            "3318, in broadcast_object_list\n"
            "      broadcast(sizes, src=src, group=group)\n"
            "============================================================\n")
    evs = events(tmp_path, {"console.log": text})
    files = [e for e in evs if e.kind == "error_file"]
    assert [(e.rank, e.local_rank, e.get("frame_func")) for e in files] == [(3, 3, "broadcast_object_list")]


def test_frames_long_after_the_named_error_file_are_not_taken(tmp_path: Path) -> None:
    text = ("[2025-03-02 11:05:09,412] torch.distributed.elastic.multiprocessing.errors.error_handler: "
            "[ERROR] "
            "no error file defined for parent, to copy child error file "
            "(/tmp/torchelastic_q1w2e3r4/none_zx81k2lm/attempt_0/3/error.json)\n"
            + "step 4 loss 0.5\n" * 450
            + "    File \"/srv/job/fit.py\", line 212, in save\n      dist.barrier()\n")
    evs = events(tmp_path, {"console.log": text})
    assert [e for e in evs if e.kind == "error_file"] == []


def test_root_cause_callstack_behind_a_launcher_tag(tmp_path: Path) -> None:
    # Open MPI 4 writes no space after its tag; the prefix is stripped with an optional one, which takes
    # one space of the table's indentation.
    tagged = "".join(f"[1,1]<stderr>:{line}\n" for line in CFE_ROOT.splitlines())
    evs = events(tmp_path, {"mpirun.log": tagged})
    files = [e for e in evs if e.kind == "error_file"]
    assert [(e.rank, e.get("exc_type"), e.get("frame_line")) for e in files] == [(5, "KeyError", 97)]


def _task(task: int, kind: str = "x", rank: int | None = None, **fields: object) -> Event:
    return Event(kind=kind, ref=SourceRef("slurm.out", task + 1), text="", parser="t", rank=rank,
                 fields=dict(fields), writer=f"task {task}")


def test_srun_label_tasks_are_ranks_only_when_srun_started_the_workers() -> None:
    """srun -l: the task id is SLURM_PROCID: the rank with one task per rank, the node under torchrun."""
    tasks = {"task 0": 0, "task 1": 1, "task 2": 2}
    plain = [_task(0, stated_rank=0), _task(1), _task(2)]
    assert stream_ranks(plain, {}, set(), tasks) == {"task 0": 0, "task 1": 1, "task 2": 2}
    torchrun = [_task(0), _task(1, kind="worker_failed", local_rank=1), _task(2)]
    assert "task 2" not in stream_ranks(torchrun, {}, set(), tasks)
    other = [_task(0), _task(1, stated_rank=5), _task(2)]
    assert "task 2" not in stream_ranks(other, {}, set(), tasks)


# coloredlogs' default format (date, host, logger[pid], level; written here): each process is its own
# stream, so the error line of pid 1235 belongs to the rank its other lines state.
COLOREDLOGS = """\
2026-01-05 10:11:10 host-3 trainer[1234] INFO [rank 0] step 1 loss 0.912
2026-01-05 10:11:10 host-3 trainer[1235] INFO [rank 1] step 1 loss 0.907
2026-01-05 10:11:11 host-3 trainer[1234] INFO [rank 0] step 2 loss 0.874
2026-01-05 10:11:12 host-3 trainer[1235] ERROR step 2: CUDA error: an illegal memory access was encountered
"""


def test_a_coloredlogs_process_is_one_stream_whose_stated_rank_owns_its_error(tmp_path: Path) -> None:
    from hanglens import api

    (tmp_path / "train.log").write_text(COLOREDLOGS)
    a = api.analyze([tmp_path])
    err = [e for e in a.tables.events if e.kind == "cuda_error"]
    assert [(e.rank, e.host, e.level) for e in err] == [(1, "host-3", "E")]
    verdict = a.result.verdict
    assert (verdict.category.value, verdict.culprit_ranks) == ("illegal_memory_access", (1,))


def test_srun_task_exit_line_names_the_rank_only_where_tasks_are_ranks(tmp_path: Path) -> None:
    # Written from failure-signatures.md section 6 (SLURM row: `srun: error: <host>: task <t>: Exited with
    # exit code <c>`, SchedMD/slurm src/srun/launch.c `_task_finish`) and log-formats.md section 9.3 (`srun
    # -l` labels right-aligned to the widest task id; the id is the rank only when srun starts the ranks).
    labelled = (" 0: epoch 2 step 700 loss 0.52\n"
                " 9: epoch 2 step 700 loss 0.50\n"
                "11: epoch 2 step 710 loss 0.49\n"
                " 4: epoch 2 step 710 loss 0.51\n"
                "srun: error: cn-0207: task 9: Exited with exit code 1\n"
                "srun: error: cn-0207: tasks 8,10-11: Terminated\n")
    evs = events(tmp_path, {"job.out": labelled})
    assert sorted(ranks_of(evs, "launcher_exit"), key=lambda r: (r is None, r)) == [9, None]
    # One torchrun per node under srun: the task is the node, its workers' `[defaultN]:` tags say so.
    per_node = (" 0: [default0]:epoch 2 step 700 loss 0.52\n"
                " 1: [default1]:epoch 2 step 700 loss 0.50\n"
                " 1: [default0]:epoch 2 step 710 loss 0.49\n"
                " 0: [default1]:epoch 2 step 710 loss 0.51\n"
                "srun: error: cn-0208: task 1: Exited with exit code 1\n")
    evs = events(tmp_path / "n", {"job.out": per_node})
    assert ranks_of(evs, "launcher_exit") == [None]


def test_srun_task_exit_line_keeps_no_rank_where_a_task_stream_states_other_ranks(tmp_path: Path) -> None:
    # Written from log-formats.md section 9.3 (with one torchrun per node under `srun -l` the task id is
    # the node index) and failure-signatures.md section 6: task 0's stream states only rank 0 (its one
    # traceback), task 1's stream states ranks 12 and 9 of the same node, so the labels are nodes and srun's
    # `task 1: Exited` line is node 1's, not rank 1's.
    per_node = ("0: [rank0]: Traceback (most recent call last):\n"
                '0: [rank0]:   File "/home/user/job/run.py", line 40, in <module>\n'
                "0: [rank0]: ValueError: bad shard index 17\n"
                "0: E0302 11:20:04.551000 4410 torch/distributed/elastic/multiprocessing/api.py:874] failed "
                "(exitcode: 1) local_rank: 0 (pid: 4419) of binary: /home/user/venv/bin/python\n"
                "1: [rank12]:[W0302 11:20:06.118220341 TCPStore.cpp:125] [c10d] recvValue failed on "
                "SocketImpl(fd=61, addr=[cn-12]:40118, remote=[cn-11]:29500): Connection reset by peer\n"
                "1: [rank9]:[W0302 11:20:06.118771002 TCPStore.cpp:125] [c10d] recvValue failed on "
                "SocketImpl(fd=61, addr=[cn-12]:40177, remote=[cn-11]:29500): Connection reset by peer\n"
                "srun: error: cn-11: task 0: Exited with exit code 1\n"
                "srun: error: cn-12: task 1: Exited with exit code 1\n")
    evs = events(tmp_path, {"job.out": per_node})
    assert 1 not in ranks_of(evs, "launcher_exit")


# torch.multiprocessing.spawn's parent (torch/multiprocessing/spawn.py, torch 2.13): it terminates the
# processes still alive, then re-raises the failed one's traceback with its index. Every spawned process
# inherited the parent's console, so the lines before it are not the failed process's alone (an Ignite
# `setup_logger` line here is rank 0's: ignite/utils.py gives ranks above 0 a NullHandler).
SPAWN_CONSOLE = "".join(line + "\n" for line in (
    "2026-04-02 11:20:31,118 fit INFO: Epoch[2] Iteration[40] loss: 1.0021",
    "2026-04-02 11:20:33,402 trainer ERROR: Engine run is terminating due to exception: [../third_party/gloo/"
    "gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.1.0.4]:40112",
    "W0402 11:20:39.012000 7710 torch/multiprocessing/spawn.py:165] Terminating process 7733 via signal "
    "SIGTERM",
    "Traceback (most recent call last):",
    "  File \"/home/user/fit.py\", line 90, in <module>",
    "    parallel.run(training, cfg)",
    "torch.multiprocessing.spawn.ProcessRaisedException: ",
    "",
    "-- Process 1 terminated with the following error:",
    "Traceback (most recent call last):",
    "  File \"/home/user/fit.py\", line 51, in forward",
    "    raise ValueError('bad crop size 0')",
    "ValueError: bad crop size 0",
))


def test_a_spawn_parent_that_stopped_other_processes_shows_several_writers(tmp_path: Path) -> None:
    evs = events(tmp_path, {"console.log": SPAWN_CONSOLE})
    assert [e.rank for e in evs if e.kind == "exception" and "bad crop" in e.text] == [1]
    assert ranks_of(evs, "peer_closed") == [None]
    assert [e.rank for e in evs if e.kind == "progress"] == [None]


def test_a_spawn_parent_with_no_process_left_to_stop_keeps_the_one_writer(tmp_path: Path) -> None:
    one = SPAWN_CONSOLE.replace(SPAWN_CONSOLE.splitlines()[2] + "\n", "")
    evs = events(tmp_path, {"console.log": one})
    assert [e.rank for e in evs if e.kind == "progress"] == [1]
