"""Behaviour tests of the environment parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.environment import EnvironmentParser

from .harness import events as read_events

events = partial(read_events, [EnvironmentParser])


def test_rank_echo_fields_are_ints_and_unexpanded_values_are_ignored() -> None:
    (ev,) = events("RANK=2 WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=0", "world_info")
    assert dict(ev.fields) == {"global_rank": 2, "local_rank": 0, "stated_rank": 2}


def test_a_self_stated_pid_is_read_on_a_ranked_line_after_the_same_text_without_rank() -> None:
    """What `pid=<n>` gives depends on the line's rank and writer, so a rank-less sighting of the same text
    (which gives nothing) must not make the parser skip it later (the quiet-text memo keys on text alone)."""
    from hanglens.model import LogLine, SourceRef
    from hanglens.parsers.environment import EnvironmentParser

    text = "] pid=41877 device=cuda:6"
    bare = LogLine(text=text, raw=text, ref=SourceRef("x", 1))
    for _ in range(4):
        assert list(EnvironmentParser().feed(bare)) == []
    ranked = LogLine(text=text, raw="[rank 6" + text, ref=SourceRef("x", 2), rank=6)
    got = list(EnvironmentParser().feed(ranked))
    assert [e.get("worker_pid") for e in got] == [41877]


def test_an_upper_case_self_stated_pid_is_read_too() -> None:
    """`PID=<n>` (upper case, as a user's banner or a job script's `echo "RANK=$RANK PID=$$"` writes it) names
    the rank's process as `pid=<n>` does (`SELF_PID_RE` accepts both spellings)."""
    from hanglens.model import LogLine, SourceRef
    from hanglens.parsers.environment import EnvironmentParser

    for text in ("RANK=5 PID=52310", "worker ready PID: 52310"):
        ranked = LogLine(text=text, raw="[rank5]:" + text, ref=SourceRef("x", 1), rank=5)
        got = [e for e in EnvironmentParser().feed(ranked) if e.get("worker_pid") is not None]
        assert [e.get("worker_pid") for e in got] == [52310], text


def test_the_default_groups_init_options_state_the_world_size_and_a_sub_groups_do_not() -> None:
    """log-formats.md section 1.6: `ProcessGroupNCCL initialization options: size: <n>, global rank: <g>` is
    printed per process group; only the default group's (`default_pg`, or named `0`) size is the world's."""
    line = ("[rank3]:[I0521 11:40:09.771204318 ProcessGroupNCCL.cpp:905] [PG 0 (default_pg) Rank 3] "
            "ProcessGroupNCCL initialization options: size: 16, global rank: 3, TIMEOUT(ms): 1800000, "
            "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0")
    assert [e.get("world_size") for e in events(line, "world_info")] == [16]
    assert [e.get("stated_by") for e in events(line, "world_info")] == [None]
    sub = ("[rank3]:[I0521 11:40:10.003918220 ProcessGroupNCCL.cpp:905] [PG 1 (dp) Rank 1] ProcessGroupNCCL "
           "initialization options: size: 2, global rank: 3, TIMEOUT(ms): 1800000, "
           "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 1")
    assert [e.get("world_size") for e in events(sub, "world_info")] == []


def test_a_repeated_default_group_init_line_gives_the_world_size_once_per_rank() -> None:
    """A console repeats ProcessGroupNCCL's init lines for every communicator and restart: the world size is
    one fact per rank and file, not an event per line (a chatty console made tens of thousands of them)."""
    line = ("[rank{r}]:[I1204 09:12:{s:02d}.104233000 ProcessGroupNCCL.cpp:905] [PG 0 (default_pg) Rank {r}] "
            "ProcessGroupNCCL initialization options: size: 8, global rank: {r}, TIMEOUT(ms): 600000, "
            "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0\n")
    text = "".join(line.format(r=r, s=s) for s in range(3) for r in (3, 5))
    got = [(e.rank, e.get("world_size")) for e in events(text, "world_info")]
    assert sorted(got) == [(3, 8), (5, 8)]
