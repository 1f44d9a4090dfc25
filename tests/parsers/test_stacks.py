"""Stack dumps by their shape: faulthandler and py-spy output in any file, behind prefixes, read into what the
main thread waits on; and the verdicts they lead to. Every dump here is written from the formats (CPython
`Python/traceback.c`'s faulthandler output, py-spy 0.3-0.4 `dump`) with made-up paths, pids and lines.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from hanglens import api
from hanglens.parsers.faulthandler import FaulthandlerParser
from hanglens.parsers.pyspy import PyspyParser
from hanglens.parsers.stacks import is_main, waits_on

from .harness import assert_never_breaks, has
from .harness import events as read_events

events = partial(read_events, [PyspyParser, FaulthandlerParser])

SITE = "/srv/env/lib/python3.11/site-packages"


def fh_thread(tid: str, frames: list[tuple[str, int, str]], current: bool = False) -> str:
    """A faulthandler thread block; `frames` outermost first (faulthandler prints them innermost first)."""
    head = f"{'Current thread' if current else 'Thread'} {tid} (most recent call first):\n"
    return head + "".join(f"  File \"{f}\", line {n} in {fn}\n" for f, n, fn in reversed(frames))


MAIN_IN_LOADER = [
    ("/srv/job/train.py", 233, "<module>"),
    ("/srv/job/train.py", 181, "fit"),
    (f"{SITE}/torch/utils/data/dataloader.py", 708, "__next__"),
    (f"{SITE}/torch/utils/data/dataloader.py", 1480, "_next_data"),
    (f"{SITE}/torch/utils/data/dataloader.py", 1441, "_get_data"),
    (f"{SITE}/torch/utils/data/dataloader.py", 1275, "_try_get_data"),
    ("/usr/lib/python3.11/multiprocessing/queues.py", 113, "get"),
    ("/usr/lib/python3.11/multiprocessing/connection.py", 257, "poll"),
    ("/usr/lib/python3.11/multiprocessing/connection.py", 440, "_poll"),
    ("/usr/lib/python3.11/multiprocessing/connection.py", 947, "wait"),
    ("/usr/lib/python3.11/selectors.py", 415, "select"),
]


def main_in(call: str, line: int) -> list[tuple[str, int, str]]:
    return [
        ("/srv/job/train.py", 233, "<module>"),
        ("/srv/job/train.py", 140, "train_step"),
        (f"{SITE}/torch/distributed/c10d_logger.py", 81, "wrapper"),
        (f"{SITE}/torch/distributed/distributed_c10d.py", line, call),
    ]


FEEDER = [
    ("/usr/lib/python3.11/threading.py", 1002, "_bootstrap"),
    ("/usr/lib/python3.11/threading.py", 982, "run"),
    ("/usr/lib/python3.11/multiprocessing/queues.py", 231, "_feed"),
    ("/usr/lib/python3.11/threading.py", 327, "wait"),
]


def test_dump_traceback_later_in_a_console_log() -> None:
    text = ("epoch 2 step 118 loss 0.71\n"
            "Timeout (0:15:00)!\n"
            + fh_thread("0x00007f11aa3ff6c0", FEEDER) + "\n"
            + fh_thread("0x00007f11c81e4b80", MAIN_IN_LOADER)
            + "epoch 2 step 119 loss 0.70\n")
    found = events(text, "stack_dump")
    assert len(found) == 2
    feeder, main = found
    assert feeder.get("main") is False and feeder.get("waits_on") is None
    assert main.get("main") is True and main.get("waits_on") == "dataloader"
    assert main.get("trigger") == "timeout"
    assert main.get("thread_id") == 0x00007F11C81E4B80 and main.ref.line == 9
    assert main.get("frames")[0] == "/srv/job/train.py:233 in <module>"
    assert main.get("frame_func") == "select" and main.rank is None  # no rank anywhere: never guessed


def test_registered_signal_dump_without_header_and_interleaved_ranks() -> None:
    r0 = fh_thread("0x00007f0000001740", main_in("all_reduce", 2501), current=True).splitlines()
    r2 = fh_thread("0x00007f0000002740", main_in("barrier", 4620), current=True).splitlines()
    lines = [f"[rank0]: {a}\n[rank2]: {b}\n" for a, b in zip(r0, r2, strict=True)]
    found = events("".join(lines), "stack_dump")
    by_rank = {e.rank: e for e in found}
    assert set(by_rank) == {0, 2}
    assert by_rank[0].get("collective") == "all_reduce" and by_rank[2].get("collective") == "barrier"
    assert by_rank[0].get("state") == "current" and by_rank[0].get("waits_on") == "collective"
    hangs = events("".join(lines), "hang_detected")
    assert has(hangs, {"detector": "stack_dump", "op": "ALLREDUCE", "collective": "all_reduce"})
    assert has(hangs, {"detector": "stack_dump", "op": "BARRIER"})


def test_fatal_error_names_the_trigger() -> None:
    text = ("Fatal Python error: Aborted\n\n"
            + fh_thread("0x00007f5500aa1740", main_in("broadcast", 2720), current=True)
            + "\nExtension modules: torch._C, numpy.core._multiarray_umath (total: 2)\n")
    (ev,) = events(text, "stack_dump")
    assert ev.get("trigger") == "Aborted" and ev.get("collective") == "broadcast"
    assert events(text, "hang_detected") == []  # the process died inside the collective; it did not hang


@pytest.mark.parametrize("prefix", ["[default3]:", "[rank5]:[default1]:",
                                    "2026-02-03T04:05:06.789Z stderr F "])
def test_known_prefixes_are_stripped_around_a_dump(prefix: str) -> None:
    dump = fh_thread("0x00007f22bb10c740", MAIN_IN_LOADER)
    text = "".join(f"{prefix}{ln}\n" for ln in dump.splitlines())
    (ev,) = events(text, "stack_dump")
    assert ev.get("waits_on") == "dataloader"


def test_pyspy_native_and_locals_variant_reads_the_collective() -> None:
    text = ("Process 60311: /srv/env/bin/python train.py\n"
            "Python v3.10.14 (/srv/env/bin/python3.10)\n"
            "\n"
            "Thread 0x7F9911C0B740 (idle): \"MainThread\"\n"
            "    __futex_abstimed_wait_common (libc.so.6)\n"
            "    c10d::ProcessGroupNCCL::WorkNCCL::synchronizeInternal (ProcessGroupNCCL.cpp:655)\n"
            "    all_gather_into_tensor (torch/distributed/distributed_c10d.py:3107)\n"
            "        Arguments:\n"
            "            output_tensor: <Tensor at 0x7f98f0a1c0e0>\n"
            "        Locals:\n"
            "            work: <Work at 0x7f98f0a1c2b0>\n"
            "    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:79)\n"
            "    gather_params (fsdp_utils.py:52)\n"
            "    <module> (train.py:17)\n"
            "    0x7f9912a29d90 (libc.so.6)\n")
    (ev,) = events(text, "stack_dump")
    assert ev.get("dumper") == "py-spy" and ev.get("main") is True
    assert ev.get("waits_on") == "collective" and ev.get("collective") == "all_gather_into_tensor"
    assert has(events(text, "hang_detected"), {"op": "_ALLGATHER_BASE", "pid": 60311})


def test_classifier_edges() -> None:
    loader = [(f, n, fn) for f, n, fn in MAIN_IN_LOADER]
    assert waits_on(loader) == ("dataloader", None)
    # user code (a collate_fn, a dataset) running below the DataLoader is not a wait on the queue
    assert waits_on([*loader[:6], ("/srv/job/data.py", 40, "__getitem__")]) == (None, None)
    # num_workers=0: the main thread fetches itself, through `_utils/fetch.py` into the dataset (section 7)
    single = [*loader[:3], (f"{SITE}/torch/utils/data/dataloader.py", 785, "_next_data"),
              (f"{SITE}/torch/utils/data/_utils/fetch.py", 54, "fetch"),
              (f"{SITE}/torch/utils/data/_utils/fetch.py", 54, "<listcomp>"),
              ("/srv/job/data.py", 40, "__getitem__")]
    assert waits_on(single) == ("dataloader", None)
    # ... but a `_next_data` frame with anything else below it (a sampler, a collate step) is not that fetch
    assert waits_on([*single[:4], (f"{SITE}/torch/utils/data/sampler.py", 9, "__iter__")]) == (None, None)
    private = ("torch/distributed/distributed_c10d.py", 9, "_store_based_barrier")
    assert waits_on([("a.py", 1, "<module>"), private]) == (None, None)
    assert is_main([("threading.py", 1, "<module>")], None) is False
    assert is_main([], None) is False and is_main([("x.py", 1, "f")], "MainThread") is True


@pytest.mark.parametrize("text", [
    "Thread 0x7f (most recent call first):\n" * 50,
    "Fatal Python error: \n\n\n\n\n\nThread 0xZZ (most recent call first):\n  File \"",
    "Timeout (0:00:01)!\nCurrent thread 0x1 (most recent call first):\n  File \"a\", line ??? in f\n  ...\n",
    "Stack (most recent call first):\n" + "  File \"x.py\", line 1 in f\n" * 500,
])
def test_bad_dumps_never_break(text: str) -> None:
    assert_never_breaks(FaulthandlerParser, text)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return root


def test_faulthandler_dumps_in_different_collectives_name_the_odd_rank(tmp_path: Path) -> None:
    files = {f"stacks/host-a/r{r}.dump": "".join(
        f"[rank{r}]: {ln}\n" for ln in fh_thread(f"0x00007f00000{r}1740", main_in(call, n)).splitlines())
        for r, (call, n) in enumerate([("all_reduce", 2501), ("all_reduce", 2501), ("barrier", 4620),
                                       ("all_reduce", 2501)])}
    doc = api.analyze([_write(tmp_path, files)]).to_dict()["verdict"]
    assert doc["category"] == "control_flow_divergence" and doc["culprit_ranks"] == [2]


def test_one_rank_in_the_loader_while_the_others_wait_in_all_reduce(tmp_path: Path) -> None:
    files = {f"worker{r}.out": f"[rank{r}]: step 51\n" + "".join(f"[rank{r}]: {ln}\n" for ln in fh_thread(
        f"0x00007f00000{r}1740", MAIN_IN_LOADER if r == 1 else main_in("all_reduce", 2501)).splitlines())
        for r in range(3)}
    doc = api.analyze([_write(tmp_path, files)]).to_dict()["verdict"]
    assert doc["category"] == "dataloader_stall" and doc["culprit_ranks"] == [1]


def test_iterator_waiting_on_its_queue_is_a_data_wait() -> None:
    """A prefetcher's `__next__`/`__iter__` blocked in `queue.get`: the main thread waits for a batch."""
    user = [("/job/fit.py", 140, "<module>"), ("/job/fit.py", 79, "fit"),
            ("/job/loader_utils.py", 63, "__next__")]
    queue_get = [("/usr/lib/python3.10/queue.py", 171, "get"),
                 ("/usr/lib/python3.10/threading.py", 320, "wait")]
    assert waits_on(user + queue_get) == ("dataloader", None)
    mp_get = [("/usr/lib/python3.10/multiprocessing/queues.py", 103, "get"),
              ("/usr/lib/python3.10/multiprocessing/synchronize.py", 95, "__enter__")]
    assert waits_on(user + mp_get) == ("dataloader", None)
    # A lock wait or a queue get outside an iterator says nothing about data.
    assert waits_on(user + queue_get[1:]) == (None, None)
    assert waits_on(user[:2] + queue_get) == (None, None)


def test_a_main_thread_in_a_functional_collective_waits_in_it() -> None:
    # torch/distributed/_functional_collectives.py: no distributed_c10d.py frame; the funcol function names
    # the op, and a bare `wait_tensor` (an AsyncCollectiveTensor's first use) waits on an earlier funcol op.
    funcol = f"{SITE}/torch/distributed/_functional_collectives.py"
    user = [("/srv/job/train.py", 233, "<module>"), ("/srv/job/train.py", 181, "fit")]
    gather = [(funcol, 320, "all_gather_tensor"), (funcol, 1404, "_maybe_wrap_tensor"),
              (funcol, 142, "wait_tensor")]
    assert waits_on([*user, *gather]) == ("collective", "all_gather_into_tensor")
    wait = [(funcol, 1115, "AsyncCollectiveTensor.trigger_wait"), (funcol, 142, "wait_tensor")]
    assert waits_on([*user, *wait]) == ("collective", "wait_tensor")
    assert waits_on([*user, (funcol, 1260, "_resolve_group")]) == (None, None)
