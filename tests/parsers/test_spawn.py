"""Behaviour tests of the mp.spawn parent parser beyond its examples (its contract: test_all_parsers.py), and
of the reader's placing of the failed process's traceback (ingest/reader.py `spawn_ranks`).

Texts written here from torch/multiprocessing/spawn.py (`ProcessContext.join`, `_wrap`) with our own values.
"""

from __future__ import annotations

from functools import partial

from hanglens.parsers import PARSERS
from hanglens.parsers.spawn import SpawnParser

from .harness import events as read_events

events = partial(read_events, [SpawnParser])

PARENT = (
    "torch.multiprocessing.spawn.ProcessRaisedException: \n"
    "\n"
    "-- Process {idx} terminated with the following error:\n"
)


def test_a_chained_child_traceback_is_one_block_to_its_last_exception() -> None:
    text = PARENT.format(idx=3) + (
        "Traceback (most recent call last):\n"
        '  File "/home/user/seg/train.py", line 71, in run\n'
        "    mask = masks[k]\n"
        "KeyError: 17\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/seg/train.py", line 74, in run\n'
        "    raise RuntimeError(f'bad sample {k}') from err\n"
        "RuntimeError: bad sample 17\n"
        "\n"
        "[rank 0] this line is someone else's\n"
    )
    found = events(text, "launcher_exit")
    assert [(e.get("local_rank"), e.get("raised"), e.line, e.get("block_end")) for e in found] == [
        (3, True, 3, 14)]


def test_a_dataloader_reraise_block_runs_through_its_original_traceback() -> None:
    text = PARENT.format(idx=1) + (
        "Traceback (most recent call last):\n"
        '  File "/home/user/seg/train.py", line 90, in run\n'
        "    for x, y in loader:\n"
        "ValueError: Caught ValueError in DataLoader worker process 2.\n"
        "Original Traceback (most recent call last):\n"
        '  File "/home/user/seg/data.py", line 12, in __getitem__\n'
        "    raise ValueError('empty mask')\n"
        "ValueError: empty mask\n"
        "\n"
        "W0101 00:00:00.000000 1 x.py:1] later line\n"
    )
    found = events(text, "launcher_exit")
    assert [(e.get("local_rank"), e.get("block_end")) for e in found] == [(1, 11)]


def test_a_marker_without_a_traceback_has_an_empty_block() -> None:
    found = events(PARENT.format(idx=2) + "something else entirely\n", "launcher_exit")
    assert [(e.get("local_rank"), e.get("block_end")) for e in found] == [(2, 3)]


def test_the_child_traceback_takes_the_process_rank_plus_the_consoles_rank_block() -> None:
    # Ranks 6 and 7 print their own lines: this launcher runs the block 6-7 (node_rank * 2), so process 1 is
    # rank 7; the parent's own traceback stays nobody's.
    text = ("[rank 6] step 10 loss 2.31\n[rank 7] step 10 loss 2.29\n"
            "Traceback (most recent call last):\n"
            '  File "/home/user/launch.py", line 9, in <module>\n'
            "    mp.spawn(run, nprocs=2)\n" + PARENT.format(idx=1) +
            "Traceback (most recent call last):\n"
            '  File "/home/user/run.py", line 30, in run\n'
            "    x = table[key]\n"
            "KeyError: 'w'\n")
    found = read_events(PARSERS, text)
    by_type = {e.get("exc_type"): e.rank for e in found if e.kind == "exception"}
    assert by_type == {"torch.multiprocessing.spawn.ProcessRaisedException": None, "KeyError": 7}
    assert [e.get("placed_rank") for e in found if e.kind == "launcher_exit"] == [7]


def test_ranks_not_starting_a_block_leave_the_index_as_the_rank() -> None:
    # Ranks 1 and 2 print (rank 0 prints nothing of its own): 1 is no multiple of the block's size, so the
    # console is not read as a node's block and process 2 stays rank 2.
    text = ("[rank 1] step 10 loss 2.31\n[rank 2] step 10 loss 2.29\n" + PARENT.format(idx=2) +
            "Traceback (most recent call last):\n"
            '  File "/home/user/run.py", line 30, in run\n'
            "    x = table[key]\n"
            "KeyError: 'w'\n")
    found = read_events(PARSERS, text)
    assert [e.rank for e in found if e.kind == "exception" and e.get("exc_type") == "KeyError"] == [2]


def _one_node_of_two(idx: int) -> str:
    # One launcher per node: its two processes state a world of four and print no rank; the parent stopped
    # the other one after process `idx` failed.
    return ("2026-01-05 10:00:01,200 SpawnProcess-1 INFO train: joined, world_size=4, pid=5101\n"
            "2026-01-05 10:00:01,210 SpawnProcess-2 INFO train: joined, world_size=4, pid=5102\n"
            "W0105 10:00:41.000000 5100 torch/multiprocessing/spawn.py:165] Terminating process 5102 via "
            "signal SIGTERM\n" + PARENT.format(idx=idx) +
            "Traceback (most recent call last):\n"
            '  File "/home/user/run.py", line 30, in run\n'
            "    x = table[key]\n"
            "KeyError: 'w'\n")


def test_a_launcher_of_fewer_processes_than_the_world_gives_no_global_rank_without_an_offset() -> None:
    found = read_events(PARSERS, _one_node_of_two(1))
    assert [e.rank for e in found if e.kind == "exception" and e.get("exc_type") == "KeyError"] == [None]
    assert [e.get("placed_rank") for e in found if e.kind == "launcher_exit"] == [None]
    # the same console stating a world of two: its index is the rank
    whole = read_events(PARSERS, _one_node_of_two(1).replace("world_size=4", "world_size=2"))
    assert [e.rank for e in whole if e.kind == "exception" and e.get("exc_type") == "KeyError"] == [1]
