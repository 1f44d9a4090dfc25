"""sync_skipped: which `skip ...` lines name a communication the rank left out (lifecycle.SYNC_SKIPPED_RE).

Lines written here, in the shapes user code prints (failure-signatures.md section 1, "What it is").
"""
from __future__ import annotations

import pytest

from hanglens.parsers.lifecycle import SYNC_SKIPPED_RE


@pytest.mark.parametrize("text, phrase", [
    ("rank 2: eval counters unchanged, skipping reduce", "skipping reduce"),
    ("WARNING no samples on this rank, reduce skipped", "reduce skipped"),
    ("skipping all_reduce of the loss", "skipping all_reduce"),
    ("Stage 2: validation shard is empty, skipping eval", "skipping eval"),
    ("rank 1: no eval batches; evaluation skipped", "evaluation skipped"),
    ("shard unchanged since step 200 on this rank, not saving", "not saving"),
    ("rank 3: disk quota low, skipping checkpoint at step 400", "skipping checkpoint"),
    ("[rank5] checkpoint skipped (step 90 already on disk)", "checkpoint skipped"),
])
def test_skip_of_a_collective_matches(text: str, phrase: str) -> None:
    m = SYNC_SKIPPED_RE.search(text)
    assert m is not None and m.group(0) == phrase


@pytest.mark.parametrize("text", [
    "skipping reduce_lr_on_plateau: no validation metric",
    "skipping batch 7 (empty)",
    "Namespace(fault='skip-reduce', epochs=2)",
    "lr scheduler: reduced lr to 0.01, skipped step 3",
    "skipping eval dataset download: already cached",
    "skipping batch 3, no validation targets",
    "no checkpoint found, skipping checkpoint loading",
    "skipping checkpoint restore: --fresh-start given",
    "notsaving=True",
])
def test_skip_of_something_else_does_not_match(text: str) -> None:
    assert SYNC_SKIPPED_RE.search(text) is None


def test_torchvision_init_line_is_written_by_the_rank_it_names() -> None:
    # written here, torchvision references' init_distributed_mode shape; unprefixed console of one node
    from hanglens.parsers.lifecycle import LifecycleParser
    from tests.parsers.harness import events

    found = events([LifecycleParser], "| distributed init (rank 3): env://\n| distributed init (rank 2): env://\n",
                   "rank_init")
    assert sorted((e.rank, e.get("global_rank")) for e in found) == [(2, 2), (3, 3)]


def test_init_line_under_another_rank_prefix_is_not_moved() -> None:
    # written here: a `[rank1]:` envelope around a line naming rank 5 is no statement of rank 1 about itself
    from hanglens.parsers.lifecycle import LifecycleParser
    from tests.parsers.harness import events

    assert events([LifecycleParser], "[rank1]:| distributed init (rank 5): env://\n", "rank_init") == []


def test_torchvision_init_line_under_another_ranks_envelope_does_not_silence_it_later() -> None:
    """The init line under a foreign `[rankN]:` envelope gives nothing, however often: the same text without
    the envelope still gives its rank's `rank_init` (the text alone does not decide it; no quiet memo)."""
    from hanglens.parsers.lifecycle import LifecycleParser
    from tests.parsers.harness import events

    for _ in range(8):
        assert events([LifecycleParser], "[rank1]:| distributed init (rank 6): env://\n", "rank_init") == []
    found = events([LifecycleParser], "| distributed init (rank 6): env://\n", "rank_init")
    assert [(e.rank, e.get("global_rank")) for e in found] == [(6, 6)]
    # The same for a process's rank banner.
    for _ in range(8):
        assert events([LifecycleParser], "[rank1]:global rank 6 of 8: tp rank 0\n", "rank_init") == []
    found = events([LifecycleParser], "global rank 6 of 8: tp rank 0\n", "rank_init")
    assert [(e.rank, e.get("global_rank")) for e in found] == [(6, 6)]


@pytest.mark.parametrize("text, phrase", [
    ("2026-05-02 10:11:02,530 node3 train[4410] WARNING: non-finite pixels in batch, skipping it",
     "batch, skipping it"),
    ("[rank1] loss is NaN, skipping this micro-batch", "skipping this micro-batch"),
    ("non-finite gradient norm, skipping backward for this micro-batch",
     "skipping backward for this micro-batch"),
    ("epoch 0 step 3: blank image in batch, skipping", "in batch, skipping"),
    ("NaN found in this micro-batch; dropping.", "in this micro-batch; dropping."),
    ("WARNING:asr:rank 2: skipping batch at step 4, target longer than input", "skipping batch at step 4"),
    ("Skipped micro-batch due to non-finite loss", "Skipped micro-batch due to"),
])
def test_dropped_batch_matches_batch_skipped(text: str, phrase: str) -> None:
    from hanglens.parsers.lifecycle import BATCH_SKIPPED_RE

    m = BATCH_SKIPPED_RE.search(text)
    assert m is not None and m.group(0) == phrase


@pytest.mark.parametrize("text", [
    "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "resuming: skipping the first 1200 batches of epoch 3",
    "micro-batch empty after filtering, skipping forward send",
    "skipping batch 7 (empty)",
    "skipping batches at step 0 to reach the resumed sample offset",
    "batch size 32, skipping",
    "in batch, skipping the augmentation",
])
def test_other_skips_are_no_dropped_batch(text: str) -> None:
    from hanglens.parsers.lifecycle import BATCH_SKIPPED_RE

    assert BATCH_SKIPPED_RE.search(text) is None
