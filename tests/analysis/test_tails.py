"""Each rank's last line compared across ranks (hanglens/analysis/tails.py)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hanglens.analysis.tails import _passed, _positions, _shape, last_line_rows, line_key
from hanglens.model import Event


def last(rank: int, *lines: str, path: str | None = None) -> Event:
    return Event("last_line", None, lines[-1], "tail", rank, fields={"before": list(lines[:-1])},
                 path=path or f"logs/attempt_0/{rank}/stdout.log", line=len(lines))


def rows(*events: Event) -> dict[int, dict[str, Any]]:
    return {r["rank"]: r for r in last_line_rows(list(events), {})}


VOCAB = ("building vocabulary ...", "vocabulary ready: 32000 tokens")


def test_the_rank_whose_last_line_its_peers_printed_and_went_past_is_behind() -> None:
    got = rows(last(0, *VOCAB), last(1, *VOCAB[:1]), last(2, *VOCAB))
    assert got[1]["position"] == "behind" and got[1]["passed_by"] == 2
    assert got[0]["position"] == got[2]["position"] == "same"
    assert got[0]["peer_line"] == "vocabulary ready: 32000 tokens"


def test_with_no_majority_every_peer_going_past_is_behind() -> None:
    # gloo's broadcast lets some peers through: they stop at two different points, both past rank 3's line
    ahead = (*VOCAB, "weights synchronised")
    got = rows(last(0, *VOCAB), last(1, *ahead), last(2, *ahead), last(3, *VOCAB[:1]), last(4, *VOCAB))
    assert got[3]["position"] == "behind"
    assert {got[r]["position"] for r in (0, 1, 2, 4)} == {"differs"}


def test_a_line_no_rank_printed_at_any_iteration_is_elsewhere() -> None:
    loop = ("shard 2: batch ready", "shard 3: batch ready")
    got = rows(last(0, *loop), last(1, *loop, "refreshing tokenizer cache"), last(2, *loop))
    assert got[1]["position"] == "elsewhere"
    # a summary rank 0 prints after every shard is no place of its own
    got = rows(last(0, "shard 2: batch ready", "summary after shard 2", "shard 3: batch ready",
                    "summary after shard 3"),
               last(1, *loop), last(2, *loop))
    assert got[0]["position"] == "differs"


def test_two_ranks_one_behind_on_the_common_path() -> None:
    mine = ("loading shard 2 of 5", "shard 2: batch ready", "loading shard 3 of 5")
    got = rows(last(0, *mine, "shard 3: batch ready"), last(1, *mine))
    assert got[1]["position"] == "behind" and got[0]["position"] == "differs"


def test_two_ranks_where_the_peer_went_into_lines_the_other_never_printed_name_nobody() -> None:
    got = rows(last(0, *VOCAB), last(1, VOCAB[0]))
    assert got[0]["position"] == got[1]["position"] == "differs"


def test_every_rank_on_one_line() -> None:
    got = rows(*(last(r, "shard 3: batch ready") for r in range(3)))
    assert all(g["all_same"] and g["position"] == "same" for g in got.values())


def test_the_channel_where_most_ranks_left_lines_is_compared() -> None:
    # stderr.log of one rank holds a warning only; every rank's stdout.log holds the script's prints
    got = rows(last(0, *VOCAB), last(1, VOCAB[0]), last(2, *VOCAB),
               last(1, "UserWarning: something", path="logs/attempt_0/1/stderr.log"))
    assert got[1]["channel"] == "stdout.log" and got[1]["position"] == "behind"


def test_line_key_keeps_the_iteration_and_drops_what_differs_between_ranks() -> None:
    assert line_key("[GPU3] shard 4 done, loss=0.3066", 3) == line_key("[GPU1] shard 4 done, loss=0.2981", 1)
    assert line_key("shard 4 done", 0) != line_key("shard 5 done", 0)
    assert line_key("[00:11:44] vocabulary ready", 0) == line_key("vocabulary ready", 1)
    assert line_key("worker up (pid 11312)", 0) == line_key("worker up (pid 11399)", 1)
    # a number that is not the writer's own rank stays
    assert line_key("shard 1: batch ready", 0) != line_key("batch ready", 0)


def test_line_key_drops_accelerates_own_rank_tag_after_the_logging_header() -> None:
    # accelerate/logging.py MultiProcessAdapter: `[RANK <process_index>] ` before the message
    head = "12/06/2026 06:08:37 - INFO - __main__ - "
    assert line_key(head + "[RANK 1] Distributed environment: MULTI_CPU", 1) == line_key(
        head + "[RANK 0] Distributed environment: MULTI_CPU", 0)
    # another rank's tag is what the line says
    assert line_key(head + "[RANK 3] joined", 1) != line_key(head + "joined", 1)


# -- the positions, against their definition written out peer by peer --------------------------------


def _naive_positions(tails: dict[int, list[str]]) -> dict[int, tuple[str, int]]:
    """The definition of `_positions`, one rank and one peer at a time (quadratic)."""
    last = {r: t[-1] for r, t in tails.items()}
    n = len(tails)
    top, count = Counter(last.values()).most_common(1)[0]
    majority = top if count * 2 > n and count >= 2 else None
    out: dict[int, tuple[str, int]] = {}
    shapes_of = {r: {_shape(k) for k in t} for r, t in tails.items()}
    for r, t in tails.items():
        peers = [s for s in tails if s != r]
        passed_by = [s for s in peers if last[s] != last[r] and _passed(last[r], tails[s]) is not None]
        went_past = [s for s in peers if last[s] != last[r] and _passed(last[s], t) is not None]
        if majority is not None:
            if last[r] == majority:
                out[r] = ("same", len(passed_by))
                continue
            group = [s for s in peers if last[s] == majority]
            if group and all(s in passed_by for s in group) and not any(s in went_past for s in group):
                out[r] = ("behind", len(passed_by))
                continue
            mine = _shape(last[r])
            earlier = {_shape(k) for k in t[:-1]}
            if not passed_by and mine not in earlier and not any(mine in shapes_of[s] for s in peers):
                out[r] = ("elsewhere", 0)
                continue
            out[r] = ("differs", len(passed_by))
            continue
        if n >= 3 and len(passed_by) == n - 1 and not went_past:
            out[r] = ("behind", len(passed_by))   # every peer printed its last line and went on
            continue
        if n == 2 and passed_by and not went_past:
            s = passed_by[0]
            at = _passed(last[r], tails[s])
            after = tails[s][(at or 0) + 1:]
            mine_before = {_shape(k) for k in t[:-1]}
            if after and all(_shape(k) in mine_before for k in after):
                out[r] = ("behind", 1)
                continue
        out[r] = ("same" if len(set(last.values())) == 1 else "differs", len(passed_by))
    return out


def test_positions_match_their_definition_peer_by_peer() -> None:
    # `_positions` answers from an index of who printed which line (linear in the ranks); the naive version
    # asks every peer. Lines with digits share a shape (`_shape`), the way one line at two iterations does.
    rng = random.Random(26)
    lines = ["a", "b", "c", "d #1", "d #2", "e 3", "e 4", "f"]
    for _ in range(3000):
        n = rng.choice([2, 2, 3, 4, 5, 7])
        tails = {r: [rng.choice(lines) for _ in range(rng.randint(1, 6))] for r in range(n)}
        assert _positions(tails) == _naive_positions(tails), tails
