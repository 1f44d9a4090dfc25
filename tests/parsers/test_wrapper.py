"""Behaviour tests of the wrapper parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.wrapper import WrapperParser

from .harness import events as read_events
from .harness import has

events = partial(read_events, [WrapperParser])


FP_A = (
    "CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, memory_format=(nullopt)))"
)
FP_B = (
    "CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, TensorShape=[4], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, memory_format=(nullopt)))"
)
MISMATCH = (
    f"RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: {FP_A}, "
    f"but Rank 1 is running collective: {FP_B}.Collectives differ in the following aspects:   Op type: "
    "ALLREDUCEvs BROADCAST"
)


def test_mismatch_repeated_in_a_traceback_is_one_event() -> None:
    assert len(events(MISMATCH + "\n" + MISMATCH, "collective_mismatch")) == 1


def test_ops_come_from_fingerprints_when_another_writer_runs_into_the_diff() -> None:
    found = events(MISMATCH + "RANK1 EXC RuntimeError: something else", "collective_mismatch")
    assert has(found, {"ops": ["ALLREDUCE", "BROADCAST"], "aspects": ["op_type"], "ranks": [0, 1]})


def test_truncated_mismatch_keeps_what_it_has() -> None:
    cut = MISMATCH[: MISMATCH.index("TensorDtypes")]
    found = events(cut, "collective_mismatch")
    assert has(found, {"ranks": [0, None], "ops": ["ALLREDUCE", None], "seq": 7, "shapes": ["[4]", None]})


def test_barrier_error_logged_then_raised_is_one_hang() -> None:
    text = "\n".join(
        [
            "[rank0]:[E1130 09:33:30.138331809 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 2 failed to pass "
            "monitoredBarrier in 6000 ms",
            "[rank0]:[E1130 09:33:30.138362646 ProcessGroupGloo.cpp:67] [Rank 0]: Ranks 2 failed to pass "
            "monitoredBarrier in 6000 ms",
            "[rank0]: RuntimeError: [Rank 0]: Ranks 2 failed to pass monitoredBarrier in 6000 ms",
        ]
    )
    found = events(text)
    assert len([e for e in found if e.kind == "hang_detected"]) == 1
    assert len([e for e in found if e.kind == "monitored_barrier_failure"]) == 1


def test_wrapper_barrier_error_and_gloo_error_merge_into_one_hang() -> None:
    text = (
        "[rank0]:[E1130 09:33:30.138331809 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed to pass "
        "monitoredBarrier in 6000 ms\n"
        "[rank0]: RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running collective: "
        f"{FP_A}. Error: \n[rank0]: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 6000 ms"
    )
    hangs = events(text, "hang_detected")
    assert [(e.get("seq"), e.get("op"), e.get("timeout_ms"), e.ref.line) for e in hangs] == [
        (7, "ALLREDUCE", 6000, 1)
    ]


def test_rank_pointing_to_rank0_is_not_a_hang_of_its_own() -> None:
    text = (
        "Rank 2 successfully reached monitoredBarrier, but received errors while waiting for send/recv from "
        "rank 0. Please check rank 0 logs for faulty rank."
    )
    assert [e.kind for e in events(text)] == ["monitored_barrier_failure"]
