"""A big plain file read in parts by several workers gives the one reader's events, wherever the cuts fall."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hanglens.ingest as ingest
from hanglens.ingest import read_inputs
from hanglens.ingest import reader as reader_module
from hanglens.ingest.origin import origin_of
from hanglens.ingest.reader import FileResult, Reader
from hanglens.ingest.sources import Unit
from hanglens.ingest.split import SPLIT_MAX_BYTES, PartOut, join, plan, read_part
from hanglens.parsers import PARSERS
from hanglens.parsers.progress import KEEP_RESTARTS
from tests.ingest.test_fast_reader import CHATTER, EXAMPLES, bar_lines

ROOT = Path(__file__).resolve().parents[2]
REPEATS_RE = re.compile(r"^\d+ lines repeat")


def _make_console() -> Any:
    spec = importlib.util.spec_from_file_location("make_corpus", ROOT / "benchmarks" / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_console


def read_whole(path: Path) -> FileResult:
    reader = Reader(path.name, origin_of(path.name).origin, PARSERS)
    with open(path, "rb") as f:
        return reader.read(f)


def read_in_parts(path: Path, parts: int) -> tuple[FileResult, list[PartOut]] | None:
    """`path` read as `parts` parts (each from a fresh reader, in this process) and joined."""
    unit = Unit(str(path), path.name, path.name, path.stat().st_size)
    specs = plan(unit, path.name, origin_of(path.name).origin, tuple(PARSERS), 1 << 20, parts, min_bytes=0)
    if specs is None:
        return None
    outs = [read_part(s) for s in specs]
    res, size = join(specs[0], outs)
    assert size == unit.size
    return res, outs


def summary(res: FileResult) -> list[Any]:
    return [(e.kind, e.ref, e.text, e.parser, e.rank, e.host, e.time, e.local_rank, e.attempt, e.level,
             e.writer, dict(e.fields)) for e in res.events] + [
        (res.lines, res.ranks, res.hosts, res.envelope_ranks, res.rank_pairs, res.dated, res.glued_bar_lines,
         [n for n in res.notes if not REPEATS_RE.match(n)])]
    # (Not `lines_with_events`: a part counts lines whose events the join drops. Nor the note on repeated
    # lines: a part's reader does not know the lines before it, so how many lines were repeats, and whether
    # any, may differ. A parser that gives a fact once per file (the NCCL version, a rank's world size) gives
    # nothing for the same line printed again in a whole read, which then skips a third copy as a repeat;
    # three parts of one copy each read all three, and the join drops the doubled events: the same events,
    # no repeat note. Hypothesis found such a file; the events are what must agree.)


@pytest.fixture()
def merges(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each part was taken in (True) or read again by the joined reader (False)."""
    got: list[bool] = []
    take_over = Reader.take_over

    def spy(self: Reader, later: Reader) -> bool:
        ok = take_over(self, later)
        got.append(ok)
        return ok

    monkeypatch.setattr(Reader, "take_over", spy)
    yield got


def _fixture_logs() -> list[Path]:
    return sorted(p for p in (ROOT / "fixtures").rglob("*")
                  if p.is_file() and p.suffix in (".log", ".txt", ".out", ".err") and p.stat().st_size > 200)


def test_fixture_logs_read_in_parts_give_the_same_events(merges: list[bool]) -> None:
    split = 0
    # Each file is cut two ways, the four part counts alternating over the files (all four run on half the
    # corpus each): every file was cut all four ways before, at twice the suite time for the same cuts' kinds.
    for i, path in enumerate(_fixture_logs()):
        want = summary(read_whole(path))
        for parts in ((2, 7), (3, 40))[i % 2]:
            got = read_in_parts(path, parts)
            if got is None:
                continue
            split += 1
            assert summary(got[0]) == want, (path, parts)
    assert split > 100
    assert merges.count(True) > 100 and merges.count(False) > 0  # (both ways were taken)


def test_an_interleaved_console_cut_anywhere_gives_the_same_events(tmp_path: Path,
                                                                   merges: list[bool]) -> None:
    # 16 ranks' lines interleaved, every line `[rankN]:`: NCCL init blocks, step lines, tqdm redraws, then
    # the failure (tracebacks of every rank interleaved, watchdog windows) at the end.
    path = tmp_path / "console.log"
    _make_console()(path, 16, 0.4, 9, 3)
    want = summary(read_whole(path))
    ran_on = 0
    for parts in (2, 5, 13, 64, 300):
        got = read_in_parts(path, parts)
        assert got is not None
        res, outs = got
        assert summary(res) == want, parts
        ran_on += sum(1 for o in outs if o.nominal_end is not None and o.end > o.nominal_end)
    assert ran_on > 0  # some cuts fell inside a multi-line block: their reader read on past them
    assert merges.count(True) > 50


def test_the_tail_of_a_failure_cut_line_by_line(tmp_path: Path, merges: list[bool]) -> None:
    # The end of a console (interleaved tracebacks, watchdog lines): a cut before nearly every line.
    path = tmp_path / "console.log"
    _make_console()(path, 8, 0.05, 5, 4)
    lines = path.read_bytes().splitlines(keepends=True)
    tail = tmp_path / "tail.log"
    tail.write_bytes(b"".join(lines[-400:]))
    want = summary(read_whole(tail))
    got = read_in_parts(tail, 400)
    assert got is not None
    assert summary(got[0]) == want


def _series(label: str, runs: list[int], rank: int = 0) -> list[str]:
    out = []
    for run, total in enumerate(runs):
        for n in range(0, total + 1, max(1, total // 4)):
            out.append(f"[rank{rank}]: {label}: {n * 100 // total:3d}%|#         | {n}/{total} "
                       f"[00:{run % 60:02d}<00:01, 4.97it/s]")
    return out


def test_progress_series_restarting_across_parts(tmp_path: Path, merges: list[bool]) -> None:
    # More restarts than KEEP_RESTARTS twice over (the first ones given out, the latest held, the extremes
    # of those dropped between), step lines that go forward, repeat and jump: every cut in between.
    lines = _series("eval", [20 + (k * 7) % 13 for k in range(3 * KEEP_RESTARTS + 3)])
    lines += [f"[rank1]:[titan] 2025-06-02 08:04:{k % 60:02d},417 - root - INFO - step: {s:5d}  loss: 3.1"
              for k, s in enumerate([1, 2, 3, 5, 5, 6, 10, 11, 12, 4, 5, 6, 20, 21, 22, 23, 30])]
    lines += _series("train", [8] * (KEEP_RESTARTS + 2), rank=1)
    path = tmp_path / "bars.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    want = summary(read_whole(path))
    for parts in (2, 3, 5, 9, len(lines)):
        got = read_in_parts(path, parts)
        assert got is not None
        assert summary(got[0]) == want, parts
    assert merges.count(True) > len(lines) // 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.tuples(st.sampled_from(EXAMPLES + list(CHATTER)), st.integers(0, 59),
                                    st.integers(0, 40), st.integers(0, 3)),
                          bar_lines()), min_size=2, max_size=60),
       st.integers(2, 40))
def test_random_mixes_read_in_parts_give_the_same_events(tmp_path: Path,
                                                         picks: list[tuple[str, int, int, int] | str],
                                                         parts: int) -> None:
    text = "".join((p if isinstance(p, str) else p[0].format(s=p[1], n=p[2], r=p[3]) if p[0] in CHATTER
                    else p[0]) + "\n" for p in picks)
    path = tmp_path / "mix.log"
    path.write_bytes(text.encode("utf-8"))
    want = summary(read_whole(path))
    got = read_in_parts(path, parts)
    if got is not None:  # (a sample that reads as a hard-wrapped paste is read whole)
        assert summary(got[0]) == want
    # Big blocks: RE2 rows pick the lines in every part.
    rows_min, reader_module.ROWS_MIN_BYTES = reader_module.ROWS_MIN_BYTES, 0
    try:
        got = read_in_parts(path, parts)
        if got is not None:
            assert summary(got[0]) == summary(read_whole(path))
    finally:
        reader_module.ROWS_MIN_BYTES = rows_min


def test_read_inputs_splits_a_big_file_across_workers(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "console.log"
    _make_console()(path, 8, 0.3, 5, 7)
    (tmp_path / "small.log").write_text("[rank3]:RuntimeError: boom\n", encoding="utf-8")
    one = read_inputs([tmp_path], jobs=1)
    monkeypatch.setattr(ingest, "SPLIT_MIN_BYTES", 1 << 16)
    planned: list[int] = []
    split_plans = ingest._split_plans

    def spy(*args: Any) -> Any:
        got = split_plans(*args)
        planned.extend(len(v) for v in got.values())
        return got

    monkeypatch.setattr(ingest, "_split_plans", spy)
    two = read_inputs([tmp_path], jobs=2)
    assert planned == [2]
    assert [(e.kind, e.ref, e.rank, e.text, dict(e.fields)) for e in two.events] == \
        [(e.kind, e.ref, e.rank, e.text, dict(e.fields)) for e in one.events]
    assert two.files == one.files and two.skipped == one.skipped
    assert {k: [REPEATS_RE.sub("N lines repeat", n) for n in v] for k, v in two.notes.items()} == \
        {k: [REPEATS_RE.sub("N lines repeat", n) for n in v] for k, v in one.notes.items()}


def test_what_is_not_split(tmp_path: Path) -> None:
    import gzip

    text = "".join(f"[rank{k % 4}]:line {k} of a console\n" for k in range(400)).encode()
    cases = {"c.log.gz": gzip.compress(text), "u16.log": b"\xff\xfe" + text.decode().encode("utf-16-le"),
             "cr.log": text.replace(b"\n", b"\r"), "plain.log": text}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    got = {name: plan(Unit(str(tmp_path / name), name, name, len(data)), name, origin_of(name).origin,
                      tuple(PARSERS), 1 << 20, 2, min_bytes=0) is not None for name, data in cases.items()}
    assert got == {"c.log.gz": False, "u16.log": False, "cr.log": False, "plain.log": True}
    unit = Unit(str(tmp_path / "plain.log"), "plain.log", "plain.log", len(text))
    origin = origin_of("plain.log").origin
    assert plan(unit, "plain.log", origin, tuple(PARSERS), 1 << 20, 2) is None  # small
    huge = Unit(unit.fs_path, unit.display, unit.rel, SPLIT_MAX_BYTES + 1)
    assert plan(huge, "plain.log", origin, tuple(PARSERS), 1 << 20, 2, min_bytes=0) is None  # memory
    assert plan(unit, "plain.log", origin, tuple(PARSERS), 1 << 20, 1, min_bytes=0) is None  # one worker


def test_world_sizes_from_repeated_group_init_lines_merge_across_parts(tmp_path: Path,
                                                                       merges: list[bool]) -> None:
    """The default group's init line gives a rank's world size once per file: a part that meets it again is
    taken in with that event dropped, not read again (the environment parser's `take_history`)."""
    line = ("[rank{r}]:[I1204 09:12:{s:02d}.104233000 ProcessGroupNCCL.cpp:905] [PG 0 (default_pg) Rank {r}] "
            "ProcessGroupNCCL initialization options: size: 4, global rank: {r}, TIMEOUT(ms): 600000, "
            "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0\n")
    step = "[rank{r}]:step {s} loss 0.{s:04d}\n"
    path = tmp_path / "console.log"
    path.write_text("".join(line.format(r=r, s=s) + step.format(r=r, s=s)
                            for s in range(60) for r in range(4)))
    want = summary(read_whole(path))
    assert [e.get("world_size") for e in read_whole(path).events if e.kind == "world_info"] == [4, 4, 4, 4]
    for parts in (2, 5, 17):
        got = read_in_parts(path, parts)
        assert got is not None
        assert summary(got[0]) == want, parts
    assert merges and all(merges)


def test_a_spawn_parents_repeated_terminating_warnings_count_in_every_part(tmp_path: Path) -> None:
    """The parent's `Terminating process <pid>` warnings printed again, the same pids, before a second
    failure: whole or in parts, that failure's `stopped` counts them (a repeat is not skipped for this
    parser)."""
    warn = ("node-3:7101:7101 [0] init.cc:700 NCCL WARN Duplicate GPU detected : rank 3 and rank 1 both on "
            "CUDA device 4e000")
    stops = "".join(f"W1202 10:11:12.{k}00000 9000 torch/multiprocessing/spawn.py:160] Terminating process "
                    f"{pid} via signal SIGTERM\n" for k, pid in enumerate((7102, 7104)))
    exited = "torch.multiprocessing.spawn.ProcessExitedException: process 2 terminated with signal SIGSEGV\n"
    path = tmp_path / "console.log"
    path.write_text(("\n" + warn + "\n" + stops + exited) * 2)
    whole = read_whole(path)
    assert [e.fields["stopped"] for e in whole.events if e.kind == "launcher_exit"] == [2, 2]
    got = read_in_parts(path, 2)
    assert got is not None and summary(got[0]) == summary(whole)


@pytest.mark.parametrize("fact", [
    "[I ProcessGroupNCCL.cpp:688] [Rank 3] ProcessGroupNCCL initialization options: size: 10, global "
    "rank: 3, TIMEOUT(ms): 1800000, USE_HIGH_PRIORITY_STREAM: 0, PG Name: 0",
    "[I ProcessGroupNCCL.cpp:911] [Rank 3] ProcessGroupNCCL environments: NCCL version: 2.21.5, "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING: 3",
])
def test_a_once_per_file_fact_printed_once_per_part_gives_the_same_events(tmp_path: Path, fact: str) -> None:
    """A line whose fact a parser gives once per file, printed three times, one copy per part: the parts read
    every copy and the join drops the doubled events, so the events equal a whole read's (which skips the
    third copy as a repeat; the note on repeats may differ, see `summary`)."""
    warn = ("\ngpu-c:5120:5120 [0] init.cc:706 NCCL WARN Duplicate GPU detected : rank 11 and rank 6 both on "
            "CUDA device 3d000\n")
    path = tmp_path / "mix.log"
    path.write_text(warn + (fact + "\n") * 3)
    got = read_in_parts(path, 3)
    assert got is not None and summary(got[0]) == summary(read_whole(path))


def _colour(line: bytes) -> bytes:
    """A line as a coloured handler prints it: codes around the rank tag and inside trigger phrases."""
    line = line.replace(b"Traceback (most recent", b"Traceback \x1b[0m\x1b[1;31m(most recent")
    line = line.replace(b"Error: ", b"\x1b[1;31mError\x1b[0m: ")
    line = line.replace(b"INFO", b"\x1b[32mINFO\x1b[0m")
    return re.sub(rb"^\[rank(\d+)\]:", b"\x1b[2m[rank\\1]:\x1b[0m", line)


def test_a_coloured_console_read_in_parts_is_read_without_its_codes(tmp_path: Path,
                                                                    merges: list[bool]) -> None:
    # The whole-file reader reads a coloured file without its colour codes (`AnsiFree`): a code inside
    # `Traceback (most recent call last)` would hide the trigger from the prefilter. Each part is read so too.
    plain = tmp_path / "plain.log"
    _make_console()(plain, 8, 0.2, 5, 3)
    path = tmp_path / "coloured.log"
    path.write_bytes(b"".join(_colour(x) for x in plain.read_bytes().splitlines(keepends=True)))
    assert path.read_bytes().count(b"\x1b[1;31m(most recent") >= 1
    whole = read_whole(path)
    want = summary(whole)
    assert [e.kind for e in whole.events] == [e.kind for e in read_whole(plain).events]
    for parts in (2, 5, 17):
        got = read_in_parts(path, parts)
        assert got is not None
        assert summary(got[0]) == want, parts
    assert merges.count(True) > 5
