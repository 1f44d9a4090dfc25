"""Behaviour tests of the py-spy parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from hanglens.parsers.pyspy import PyspyParser

from .harness import assert_never_breaks, feed_direct, has
from .harness import events as read_events

events = partial(read_events, [PyspyParser])
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "divergence-pyspy"

# The shape py-spy 0.4.3 prints for a gloo worker blocked in all_reduce (see fixtures/divergence-pyspy).
DUMP = (
    "Process 4100: /usr/bin/python3 -u train.py --pg-timeout 60\n"
    "Python v3.11.7 (/usr/bin/python3.11)\n"
    "\n"
    "Thread 4100 (idle): \"MainThread\"\n"
    "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
    "    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)\n"
    "    main (train.py:180)\n"
    "    <module> (train.py:196)\n"
    "Thread 4107 (active+gil): \"pt_elastic\"\n"
    "    wait (threading.py:324)\n"
    "    Thread.run (threading.py:982)\n"
    "Thread 4108 (idle): \"Thread-2 (worker)\"\n"
    "    worker (loader.py:12)\n"
)
MAIN_FRAMES = [
    "train.py:196 in <module>",
    "train.py:180 in main",
    "torch/distributed/c10d_logger.py:83 in _exception_logger.<locals>.wrapper",
    "torch/distributed/distributed_c10d.py:3252 in all_reduce",
]


def test_one_event_per_thread_all_sharing_the_process() -> None:
    found = events(DUMP, "stack_dump")
    assert [e.get("thread") for e in found] == ["MainThread", "pt_elastic", "Thread-2 (worker)"]
    assert {e.get("pid") for e in found} == {4100}
    assert {e.get("command") for e in found} == {"/usr/bin/python3 -u train.py --pg-timeout 60"}
    main, elastic, worker = found
    assert main.get("frames") == MAIN_FRAMES and main.get("frame_func") == "all_reduce"
    assert main.ref.line == 4 and main.get("state") == "idle"
    assert elastic.get("state") == "active+gil" and elastic.get("thread_id") == 4107
    assert elastic.get("frames") == ["threading.py:982 in Thread.run", "threading.py:324 in wait"]
    assert worker.get("frames") == ["loader.py:12 in worker"]


def test_native_frames_and_locals_blocks_are_skipped() -> None:
    text = (
        "Thread 4100 (idle): \"MainThread\"\n"
        "    __futex_abstimed_wait_common (libc.so.6)\n"
        "    c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >) "
        "(libtorch_cpu.so)\n"
        "    gloo::transport::tcp::UnboundBuffer::waitRecv (unbound_buffer.cc:81)\n"
        "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
        "        Arguments:\n"
        "            tensor: <Tensor at 0x7f00deadbeef>\n"
        "            group: None\n"
        "        Locals:\n"
        "            work: <torch._C._distributed_c10d.Work at 0x7f0012345678>\n"
        "    main (train.py:180)\n"
        "        Locals:\n"
        "            step (train.py:1)\n"
        "    0x7f78ad23b24a (libc.so.6)\n"
        "step 6 loss 0.1\n"
    )
    found = events(text, "stack_dump")
    assert len(found) == 1
    assert found[0].get("frames") == ["train.py:180 in main",
                                      "torch/distributed/distributed_c10d.py:3252 in all_reduce"]
    assert found[0].get("pid") is None and found[0].get("command") is None


def test_rank_prefixed_dumps_interleaved_are_kept_apart() -> None:
    text = (
        "[rank0]: Thread 11 (idle): \"MainThread\"\n"
        "[rank1]: Thread 12 (idle): \"MainThread\"\n"
        "[rank0]:     all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
        "[rank1]:     barrier (torch/distributed/distributed_c10d.py:5356)\n"
        "[rank0]:     main (train.py:180)\n"
        "[rank1]:     main (train.py:190)\n"
    )
    by_rank = {e.rank: e for e in events(text, "stack_dump")}
    assert by_rank[0].get("frames") == ["train.py:180 in main",
                                        "torch/distributed/distributed_c10d.py:3252 in all_reduce"]
    assert by_rank[1].get("frame_func") == "barrier"


def test_a_dump_cut_off_inside_a_thread_keeps_what_was_read() -> None:
    cut = DUMP[: DUMP.index("    main (train.py:180)") + len("    main (trai")]
    found = events(cut, "stack_dump")
    assert len(found) == 1
    assert found[0].get("frames") == MAIN_FRAMES[2:]
    assert has(feed_direct(PyspyParser, cut), {"frame_func": "all_reduce", "thread": "MainThread"})


def test_a_dump_ends_at_the_first_line_that_is_no_frame() -> None:
    noise = "W1130 10:38:42 api.py:1028] Sending process 4100 closing signal\n    later (other.py:1)\n"
    text = DUMP.split("Thread 4107")[0] + noise
    found = events(text, "stack_dump")
    assert len(found) == 1 and found[0].get("frames") == MAIN_FRAMES


def test_a_process_line_without_threads_emits_nothing() -> None:
    assert events("Process 12: python train.py\nPython v3.11.7 (/usr/bin/python3)\n\nError: no such "
                  "process\n    main (train.py:3)\n") == []


def test_thread_without_a_name_and_without_frames() -> None:
    found = events("Thread 0x7F3A2C1B8740 (idle)\n")
    assert has(found, {"thread": None, "thread_id": 0x7F3A2C1B8740, "frames": [], "frame_func": None})


def test_garbage_never_breaks_it() -> None:
    assert_never_breaks(PyspyParser, DUMP.replace("\n", "\r\n") + "\x00\xff Thread 1 (idle): \"\n")
    assert_never_breaks(PyspyParser, "Thread 1 (idle): \"MainThread\"\n" + "    f (a.py:1)\n" * 5000)


def test_the_real_dumps_of_the_fixture() -> None:
    funcs = {}
    for path in sorted(FIXTURE.glob("pyspy-rank*.txt")):
        found = events(path.read_text(), "stack_dump")
        assert [e.get("thread") for e in found] == ["MainThread"]
        funcs[path.name] = found[0].get("frame_func")
    assert funcs == {"pyspy-rank0.txt": "all_reduce", "pyspy-rank1.txt": "all_reduce",
                     "pyspy-rank2.txt": "barrier", "pyspy-rank3.txt": "all_reduce"}


def test_the_dumped_process_argv_names_its_local_rank() -> None:
    # torch.distributed.launch (without --use-env) and DeepSpeed's launcher put `--local_rank=<l>` (torch
    # 2.0+: `--local-rank=<l>`) in each worker's argv; a dump of that process is local rank <l>'s.
    for arg, lr in (("--local_rank=3", 3), ("--local-rank=12", 12), ("--local_rank 5", 5)):
        text = DUMP.replace("--pg-timeout 60", f"{arg} --cfg a.yaml")
        found = events(text, "stack_dump") + events(text, "hang_detected")
        assert found and {e.local_rank for e in found} == {lr}
    # not a flag of the process (a value of another option, or a longer option name)
    for cmd in ("train.py --note=--local_rank=3", "train.py --local_rank=3x", "train.py --local_ranks=3"):
        found = events(DUMP.replace("train.py --pg-timeout 60", cmd), "stack_dump")
        assert found and {e.local_rank for e in found} == {None}


def test_a_rank_prefix_wins_over_the_argv() -> None:
    dump = DUMP.replace("--pg-timeout 60", "--local_rank=3")
    text = "".join(f"[rank1]:{line}\n" for line in dump.splitlines())
    found = events(text, "stack_dump")
    assert found and {(e.rank, e.local_rank) for e in found} == {(1, None)}
