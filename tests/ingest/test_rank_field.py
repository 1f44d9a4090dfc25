"""A rank field that a script's own log format puts in every line's header (`w1/2`, `rank 3/8`,
`[3/8]`, `(3 of 8)`) is learned per file and read as the writer's rank; counters in the header or the message
are not."""

from __future__ import annotations

import io
import random

import pytest

from hanglens.ingest.prefix import detect_dialect, learn_rank_field, strip_prefixes
from hanglens.ingest.reader import Reader
from hanglens.model import Origin
from hanglens.parsers.base import Parser

MESSAGES = ["starting attempt=0", "process group ready", "wrapped with DDP", "epoch 0 begins",
            "step 0 loss 2.41", "step 1 loss 2.17", "step 2 loss 1.98", "step 3 loss 1.90"]


def console(field: str, world: int, ranks: list[int] | None = None, *, seed: int = 7) -> list[str]:
    """A shared console: each message of MESSAGES logged by every rank in a shuffled order per message."""
    rnd = random.Random(seed)
    out = []
    t = 0
    for msg in MESSAGES:
        order = list(ranks if ranks is not None else range(world))
        rnd.shuffle(order)
        for r in order:
            t += 137
            stamp = f"09:4{t // 60000 % 10}:{t // 1000 % 60:02d}.{t % 1000:03d}"
            level = "INFO   " if r % 2 else "WARNING"
            out.append(f"{stamp} | {level} | {field.format(r=r, w=world)} | trainer | {msg}")
    return out


@pytest.mark.parametrize("field", ["w{r}/{w}", "r{r}/{w}", "rank {r}/{w}", "[{r}/{w}]", "({r} of {w})",
                                   "proc {r}/{w}", "gpu{r}/{w}"])
def test_learned_field_names_each_lines_writer(field: str) -> None:
    lines = console(field, 5)
    d = detect_dialect(lines)
    assert d.rank_field is not None and d.rank_field[2] == 5
    line = "09:47:12.004 | ERROR   | " + field.format(r=3, w=5) + " | trainer | loss is nan, skipping sync"
    assert strip_prefixes(line, d).rank == 3
    # the text is kept whole for the parsers
    assert strip_prefixes(line, d).text == line


def test_column_aligned_header() -> None:
    lines = [f"2026-03-02 09:47:{i:02d}  {'INFO ' if i % 3 else 'ERROR'}  r{r}/4  step {i} done"
             for i, r in enumerate([0, 2, 1, 3, 3, 0, 1, 2, 2, 1, 0, 3])]
    d = detect_dialect(lines)
    assert d.rank_field == ("r", "0000-00-00 00:00:00 L ", 4)
    assert strip_prefixes("2026-03-02 09:48:00  ERROR  r2/4  boom", d).rank == 2


def test_single_writer_file_with_a_worded_field() -> None:
    lines = console("w{r}/{w}", 8, ranks=[5])
    d = detect_dialect(lines)
    assert d.rank_field == ("w", "00:00:00.000 | L | ", 8)
    assert strip_prefixes(lines[-1], d).rank == 5


def test_line_of_another_shape_or_world_keeps_no_rank() -> None:
    d = detect_dialect(console("w{r}/{w}", 4))
    assert strip_prefixes("w1/4 | trainer | a differently shaped line", d).rank is None
    assert strip_prefixes("09:47:12.004 | INFO    | w1/5 | trainer | another world", d).rank is None
    assert strip_prefixes("09:47:12.004 | INFO    | trainer | step 1/4 done", d).rank is None


# -- near misses: counters, not writers ----------------------------------------------------------------

def test_step_epoch_and_batch_counters_in_the_header_are_not_ranks() -> None:
    for word in ("step", "epoch", "batch", "iter"):
        lines = console(word + " {r}/{w}", 6)
        assert learn_rank_field(lines) is None, word


def test_counter_in_the_message_is_not_a_rank() -> None:
    # one writer counting batches `12/500` and steps `3/8` in its message
    lines = [f"09:47:{i:02d}.000 | INFO    | trainer | batch {i}/500 loss 0.{i}" for i in range(40)]
    lines += [f"09:48:{i:02d}.000 | INFO    | trainer | [{i}/8] loss 0.{i}" for i in range(8)]
    assert learn_rank_field(lines) is None
    d = detect_dialect(lines)
    assert d.rank_field is None
    assert strip_prefixes(lines[3], d).rank is None


def test_tqdm_like_counter_repeated_over_epochs_is_not_a_rank() -> None:
    # `[i/8]` counted 0..7 in each of four epochs: the values come back, but nearly every change is +1
    lines = [f"[{i}/8] epoch {e} loss 0.{i}{e}" for e in range(4) for i in range(8)]
    assert learn_rank_field(lines) is None
    # the same counter printed by two interleaved writers (each step's line twice, sometimes out of order)
    seq = [0, 0, 1, 1, 2, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7] * 3
    lines = [f"12:00:{n % 60:02d}.000 | INFO | [{i}/8] | loss 0.{n}" for n, i in enumerate(seq)]
    assert learn_rank_field(lines) is None


def test_progress_bar_counts_taking_turns_are_not_a_rank() -> None:
    # tqdm bars restarted (or redrawn by several writers) whose `n/total` values come and go like ranks':
    # the `%|` bar before the count and tqdm's `[elapsed<remaining` after it say it is a bar
    counts = [5, 5, 5, 6, 5, 6, 5, 6, 6, 5]
    bars = [f"\r 1{n}%|█         | {n}/50 [00:{k:02d}<00:10, 4.97it/s]" for k, n in enumerate(counts)]
    assert learn_rank_field(bars) is None
    bare = [f"{n}/50 [00:{k:02d}<00:10, 4.97it/s]" for k, n in enumerate(counts)]
    assert learn_rank_field(bare) is None
    # the same counts in a header field of their own are a rank field (the control)
    fields = [f"12:00:{k:02d}.000 | INFO | w{n - 5}/2 | fit | loss 0.{k}" for k, n in enumerate(counts)]
    assert learn_rank_field(fields) is not None


def test_bare_constant_counter_is_not_a_rank() -> None:
    # a single value without a word (`[1/4]` all through epoch 1 of 4) is not taken as a writer's rank
    lines = [f"12:00:{n:02d}.000 | INFO | [1/4] | loss 0.{n}" for n in range(20)]
    assert learn_rank_field(lines) is None


def test_values_at_or_above_the_world_or_several_worlds_are_not_a_rank_field() -> None:
    lines = [*console("w{r}/{w}", 4), "09:59:00.000 | INFO    | w4/4 | trainer | done"]
    assert learn_rank_field(lines) is None
    lines = console("w{r}/{w}", 4) + console("w{r}/{w}", 5, ranks=[0, 1, 2, 3])
    assert learn_rank_field(lines) is None


def test_too_few_lines_are_not_enough() -> None:
    lines = console("w{r}/{w}", 2)[:4] + [f"plain line {i}" for i in range(40)]
    assert learn_rank_field(lines) is None


# -- through the reader ---------------------------------------------------------------------------------

def test_reader_attributes_the_field_lines(mark: tuple[type[Parser], ...]) -> None:
    lines = ["W1204 10:00:00.001000 4242 torch/distributed/run.py:874] *****", *console("w{r}/{w}", 3)]
    lines.insert(14, "09:47:30.111 | WARNING | w2/3 | trainer | MARK non-finite loss, skipping sync")
    lines.append("MARK an unprefixed line")
    res = Reader("console.log", Origin(), mark).read(io.BytesIO(("\n".join(lines) + "\n").encode()))
    assert [(e.rank, e.text.rsplit("| ", 1)[-1]) for e in res.events] == [
        (2, "MARK non-finite loss, skipping sync"), (None, "MARK an unprefixed line")]


# -- a `rank<r>` field without a world size --------------------------------------------------------------

def test_a_worded_rank_field_without_a_world_is_learned_among_tracebacks() -> None:
    # `%(asctime)s rank{r} %(levelname)s %(message)s` (and loguru's `{time} | {level} | rank{r} | ...`): the
    # word names the field; a traceback's many unheaded lines do not thin it out of the sample.
    lines = console("rank{r}", 3)[:14]
    frames = [f'  File "/home/user/t.py", line {n}, in f' for n in range(40)]
    tb = ["Traceback (most recent call last):", *frames, "RuntimeError: boom",
          "[rank2]: Traceback (most recent call last):"]
    d = detect_dialect(lines + tb)
    assert d.rank_field == ("rank", "00:00:00.000 | L | ", 0)
    line = "09:47:12.004 | ERROR   | rank2 | trainer | loss is nan, skipping sync"
    assert strip_prefixes(line, d).rank == 2
    assert strip_prefixes("09:47:12.004 | INFO    | trainer | rank 2 joined", d).rank is None


def test_a_bracketed_rank_word_field_after_a_bracketed_time_is_learned() -> None:
    # `[%(asctime)s][rank%(rank)d][%(levelname)s] %(message)s` (a logging.Filter setting record.rank; written
    # here, own values): ranks taking turns in one console, beside torch's own `[rank<r>]:` traceback envelope
    order = [2, 0, 3, 1, 0, 2, 1, 3, 3, 1, 0, 2, 1, 3, 2, 0, 0, 3, 2, 1, 2, 1, 0, 3]
    lines = [f"[2026-03-04 11:0{i // 12}:{i % 60:02d},{i:03d}][rank{r}][INFO] step {i // 4} loss 3.{i}"
             for i, r in enumerate(order)]
    tb = ["[rank1]: Traceback (most recent call last):",
          '[rank1]:   File "/home/user/t.py", line 9, in <module>', "[rank1]: RuntimeError: boom"]
    d = detect_dialect(lines + tb)
    assert d.rank_field is not None and d.rank_field[0] == "rank"
    line = "[2026-03-04 11:02:00,100][rank2][WARNING] shard unchanged, not saving"
    assert strip_prefixes(line, d).rank == 2


def test_ranks_named_in_order_in_the_message_are_no_rank_field() -> None:
    # one writer reporting on each peer in turn (`rank 0 ready`, `rank 1 ready`, ...) counts up, as a counter
    lines = [f"12:00:{i:02d}.000 INFO rank {i % 4} ready after {i} s" for i in range(24)]
    assert learn_rank_field(lines) is None
    # after a logger's name the words are a sentence of the message, not a header field (no world bounds it)
    lines = [f"2025-04-12 08:01:{i:02d},311 INFO run: rank {i % 2} epoch 1 step {i} loss 0.7"
             for i in range(20)]
    assert learn_rank_field(lines) is None
    # torch's own `[rank<r>]:` envelope is not such a field
    assert learn_rank_field([f"[rank{i % 3}]: step {i} loss 0.5" for i in range(30)]) is None


def test_rank_word_field_of_two_writers_in_a_short_excerpt() -> None:
    # an issue excerpt: rank 2 logs two records, then rank 0 goes on (`%(asctime)s | rank {rank} |
    # %(levelname)s | %(message)s`, written here); the word names the field, so the values need not come back
    lines = ["2026-07-02 10:11:40 | rank 2 | WARNING | caught an error at step 812, retrying",
             "2026-07-02 10:11:41 | rank 2 | INFO | micro_batch now 8"]
    lines += [f"2026-07-02 10:1{i}:52 | rank 0 | INFO | step {813 + i} | loss 2.5{i}" for i in range(4)]
    d = detect_dialect(lines)
    assert d.rank_field is not None and d.rank_field[0] == "rank"
    assert strip_prefixes(lines[0], d).rank == 2
    # a counter named rank that steps up by one (rank 0 printing one line per rank) is still no writer
    lines = [f"2026-07-02 10:1{i}:52 | rank {i // 3} | INFO | all-reduce bytes {i}" for i in range(6)]
    assert learn_rank_field(lines) is None


# -- a terse `r<r>` field, after the host (probe37, session 22) -------------------------------------------

def test_a_terse_r_field_after_the_host_is_learned_when_writers_take_turns() -> None:
    # `%(asctime)s | %(levelname)-5s | {hostname}:r{rank} | %(message)s`, a format of our own like the one
    # the probe37 training script used (its runs on torch 2.9.1 and 2.14.1 shared one console)
    lines = console("gpu-a17:r{r}", 3)
    d = detect_dialect(lines)
    assert d.rank_field == ("r", "00:00:00.000 | L | gpu-a00:", 0)
    line = "09:47:12.004 | ERROR   | gpu-a17:r1 | trainer | loss is nan, skipping sync"
    assert strip_prefixes(line, d).rank == 1


def test_a_terse_r_field_of_one_value_or_after_a_word_is_no_rank() -> None:
    # one writer's `r0` says nothing (a revision, a run id), and after a logger's words it is a sentence
    assert learn_rank_field(console("r{r}", 4, ranks=[0])) is None
    lines = [f"2025-04-12 08:01:{i:02d},311 INFO model loaded: r{i % 2} checkpoint {i}" for i in range(20)]
    assert learn_rank_field(lines) is None
