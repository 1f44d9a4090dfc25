"""Behaviour tests of the ddp parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.ddp import DdpParser

from .harness import events as read_events
from .harness import has

events = partial(read_events, [DdpParser])


UNFINISHED = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing loss."
)


def test_unused_lines_of_different_ranks_are_not_merged() -> None:
    text = (
        "Parameter indices which did not receive grad for rank 0: 1 2\n"
        "Parameters which did not receive grad for rank 1: a.weight"
    )
    found = events(text, "ddp_unused_parameters")
    assert sorted((e.get("for_rank"), e.get("param_indices"), e.get("param_names")) for e in found) == [
        (0, [1, 2], None),
        (1, None, ["a.weight"]),
    ]


def test_unused_lines_far_apart_are_emitted_alone() -> None:
    filler = "\n".join(f"step {i}" for i in range(12))
    text = (
        f"Parameter indices which did not receive grad for rank 0: 1 2\n{filler}\n"
        "Parameters which did not receive grad for rank 0: a.weight"
    )
    assert len(events(text, "ddp_unused_parameters")) == 2


def test_same_rank_error_in_log_and_traceback_is_one_event() -> None:
    assert len(events(UNFINISHED + "\n" + UNFINISHED, "ddp_reduction_unfinished")) == 1


def test_each_rank_keeps_its_own_unfinished_reduction() -> None:
    text = f"[rank0]: {UNFINISHED}\n[rank1]: {UNFINISHED}"
    assert sorted(e.rank for e in events(text, "ddp_reduction_unfinished") if e.rank is not None) == [0, 1]


def test_variant_sentence_on_a_later_line_is_attached() -> None:
    text = (
        UNFINISHED
        + "\nSince `find_unused_parameters=True` is enabled, this likely  means that not all outputs"
    )
    assert has(events(text, "ddp_reduction_unfinished"), {"find_unused": True})


def test_lightning_rewritten_reducer_error_is_an_unfinished_reduction() -> None:
    # Lightning's DDPStrategy.on_exception replaces the reducer's message with its own sentence
    # (lightning/pytorch/strategies/ddp.py); it only does so for "Expected to have finished reduction".
    text = (
        "[rank3]: RuntimeError: It looks like your LightningModule has parameters that were not used in "
        "producing the loss returned by training_step. If this is intentional, you must enable the detection "
        "of unused parameters in DDP, either by setting the string value "
        "`strategy='ddp_find_unused_parameters_true'` or by setting the flag in the strategy with "
        "`strategy=DDPStrategy(find_unused_parameters=True)`."
    )
    found = events(text, "ddp_reduction_unfinished")
    assert [(e.get("find_unused"), e.get("static_graph")) for e in found] == [(False, False)]


def test_lightning_find_unused_advice_alone_is_not_a_reducer_error() -> None:
    text = "hint: set strategy='ddp_find_unused_parameters_true' when some parameters are unused"
    assert not events(text, "ddp_reduction_unfinished")
