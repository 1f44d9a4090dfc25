"""The grep prefilter and the progress fast path read exactly what the pure-Python reader reads."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from hanglens.ingest import Ingested, prefilter, read_inputs
from hanglens.ingest import reader as reader_module
from hanglens.ingest.prefilter import FastProgress, scan_file
from hanglens.ingest.reader import MAX_LINE, Reader
from hanglens.model import Origin
from hanglens.parsers import PARSERS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
needs_grep = pytest.mark.skipif(prefilter.grep_path() is None, reason="GNU grep is not installed")


@pytest.fixture(autouse=True)
def _grep_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """These files are small; make the reader take the grep path for them anyway."""
    monkeypatch.setattr(reader_module, "GREP_MIN_BYTES", 0)

# torchtitan 0.x step line (torch 2.4-2.9 `[rankN]:` prefix), as benchmarks/make_corpus.py writes it.
STEP = ("[rank{r}]:[titan] 2025-03-01 12:{mm:02d}:{ss:02d},{ms:03d} - root - INFO - "
        "step: {step:5d}  loss: 2.{ms:04d}")
TRACEBACK = (
    "[rank1]:Traceback (most recent call last):\n"
    "[rank1]:  File \"/home/user/train.py\", line 88, in <module>\n"
    "[rank1]:    main()\n"
    "[rank1]:  File \"/home/user/train.py\", line 80, in main\n"
    "[rank1]:    loss.backward()\n"
    "[rank1]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
)
WATCHDOG = (
    "[rank{r}]:[E301 13:10:{ss:02d}.123456789 ProcessGroupNCCL.cpp:632] [Rank {r}] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, "
    "NumelOut=8, Timeout(ms)=600000) "
    "ran for 600042 milliseconds before timing out.\n"
)
NOISE = "gpu-node00:40000:40003 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"


def _steps(rank: int, steps: list[int], minute: int = 0) -> str:
    return "".join(STEP.format(r=rank, mm=minute, ss=i % 60, ms=(i * 37) % 1000, step=s) + "\n"
                   for i, s in enumerate(steps))


def _tricky(root: Path) -> None:
    """Inputs that stress the line layer; every one must read the same with and without grep."""
    root.mkdir()

    def w(name: str, data: str | bytes) -> None:
        (root / name).write_bytes(data if isinstance(data, bytes) else data.encode())

    w("cr-only.log", "Epoch 1:  10%|#   | 1/10\rEpoch 1:  20%|##  | 2/10 [00:01<00:08]\r"
                     "NCCL WARN Call to connect returned Connection refused\r")
    w("nul.log", b"\x00\x00[rank0]:NCCL WARN x\x00y\n" + b"\x00" * 50 + b"\nstep 3 loss 1\n")
    w("ansi.log", "\x1b[31m[rank2]:RuntimeError: CUDA error: out of memory\x1b[0m\n"
                  "\x1b[1mstep: 4  loss: 1\x1b[0m\n")
    w("tqdm.log", "".join(f"\r{p}%|###   | {p}/100 [00:{p:02d}<00:10,  2.00it/s]" for p in range(0, 100, 7))
                  + "\n[rank0]:step: 1  loss: 2\n")
    w("consecutive.log", NOISE + WATCHDOG.format(r=3, ss=1) + WATCHDOG.format(r=3, ss=2)
      + "Error: one\nError: two\n")
    w("traceback.log", NOISE * 3 + TRACEBACK + NOISE + TRACEBACK.replace("RuntimeError", "ValueError")
      + NOISE)
    long_hit = "x" * (MAX_LINE + 500) + " NCCL WARN late trigger\n"
    long_plain = "y" * (MAX_LINE * 2 + 7) + "\n"
    w("long.log", NOISE + long_plain + "NCCL WARN after\n" + long_hit + TRACEBACK + "z" * (MAX_LINE + 1))
    w("no-newline.log", NOISE + "[rank0]:NCCL WARN last line without newline")
    w("empty.log", b"")
    w("no-trigger.log", NOISE * 20)
    # Fast path: series with restarts, repeats, gaps, other ranks, an invalid date, epochs, iterations,
    # step lines that also hold a non-progress trigger, and a traceback in the middle.
    steps = _steps(0, [1, 2, 3, 4, 6, 7, 8, 8, 9]) + _steps(0, [1, 2, 3], minute=5)
    steps += _steps(1, [10, 20, 30, 50])
    # Step-shaped lines another parser also wants (catchall `ERROR`, store `socket`): never fast.
    steps += STEP.format(r=1, mm=6, ss=1, ms=1, step=60).replace("INFO", "ERROR") + "\n"
    steps += STEP.format(r=1, mm=6, ss=2, ms=2, step=70) + "  socket closed\n"
    steps += _steps(1, [80, 90])
    steps += STEP.format(r=0, mm=7, ss=1, ms=1, step=10).replace("loss", "Error loss") + "\n"
    steps += _steps(0, [11, 12]) + TRACEBACK + _steps(0, [13, 15, 17, 21])
    steps += STEP.format(r=0, mm=7, ss=2, ms=2, step=22).replace("2025-03-01", "2025-02-30") + "\n"
    steps += STEP.format(r=0, mm=7, ss=3, ms=3, step=23) + " epoch 2\n"
    steps += STEP.format(r=0, mm=7, ss=4, ms=4, step=24) + " iteration 24/100 |\n"
    steps += STEP.format(r=0, mm=7, ss=5, ms=5, step=25).replace(",005", "") + "\n"
    steps += "[rank0]:[rank0]:" + STEP.format(r=0, mm=7, ss=6, ms=6, step=26)[len("[rank0]:"):] + "\n"
    steps += STEP.format(r=0, mm=7, ss=7, ms=7, step=27).replace("INFO", "ERROR") + "\n"
    steps += STEP.format(r=0, mm=7, ss=8, ms=8, step=28) + " \u00e9t\u00e9\n"
    steps += STEP.format(r=0, mm=7, ss=9, ms=9, step=29) + "\t[rank5]:tab\n"
    steps += "".join(STEP.format(r=0, mm=0, ss=0, ms=999 - i, step=30 + i) + "\n" for i in range(3))
    w("steps.log", NOISE + steps + WATCHDOG.format(r=0, ss=9))
    tee = root / "attempt_0" / "3"
    tee.mkdir(parents=True)
    early = STEP.format(r=11, mm=0, ss=0, ms=5, step=40).replace(" 12:", " 11:") + "\n"
    late = STEP.format(r=11, mm=0, ss=0, ms=5, step=41).replace("2025-03-01", "2025-03-02") + "\n"
    (tee / "stderr.log").write_text(_steps(11, list(range(1, 40))) + early + late + _steps(11, [42, 43])
                                    + _steps(11, [5, 6, 7]) + WATCHDOG.format(r=11, ss=4))


def _view(ing: Ingested) -> tuple[Any, ...]:
    events = [(e.kind, e.ref, e.text, e.parser, e.rank, e.host, e.time, e.local_rank, e.attempt, e.level,
               dict(e.fields)) for e in ing.events]
    return events, ing.files, ing.skipped, ing.notes


def _both(path: Path) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    return _view(read_inputs([path], jobs=1, grep=True)), _view(read_inputs([path], jobs=1, grep=False))


@needs_grep
@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_fixture_reads_the_same_with_grep(name: str) -> None:
    with_grep, without = _both(FIXTURES / name)
    assert with_grep == without


@needs_grep
def test_tricky_inputs_read_the_same_with_grep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[int] = []
    real_take = FastProgress.take

    def spy(self: FastProgress, row: Any, num: int) -> int | None:
        got = real_take(self, row, num)
        if got is not None:
            taken.append(num)
        return got

    monkeypatch.setattr(FastProgress, "take", spy)
    _tricky(tmp_path / "logs")
    with_grep, without = _both(tmp_path / "logs")
    assert with_grep[0] == without[0]
    assert with_grep == without
    assert len(taken) > 40  # the fast path did the bulk of the step lines
    notes = with_grep[3]
    assert sum("longer than" in n for n in notes["long.log"]) == 3
    progress = [e for e in with_grep[0] if e[0] == "progress" and e[1].path == "steps.log"]
    assert any(e[10].get("gap_after") is not None for e in progress)


@needs_grep
def test_each_tricky_file_alone(tmp_path: Path) -> None:
    _tricky(tmp_path / "logs")
    for path in sorted((tmp_path / "logs").rglob("*")):
        if path.is_file():
            with_grep, without = _both(path)
            assert with_grep == without, path.name


@needs_grep
def test_reader_results_match_field_by_field(tmp_path: Path) -> None:
    _tricky(tmp_path / "logs")
    parsers = tuple(PARSERS)
    for path in sorted((tmp_path / "logs").rglob("*.log")):
        got = []
        for use_grep in (True, False):
            with open(path, "rb") as fh:
                reader = Reader(path.name, Origin(local_rank=3), parsers)
                res = reader.read_file(os.fspath(path), fh, use_grep)
            got.append((res.events, res.lines, res.ranks, res.hosts, res.notes, res.lines_with_events,
                        res.envelope_ranks, res.rank_pairs, res.dated))
        assert got[0] == got[1], path.name


@needs_grep
def test_grep_failure_falls_back_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "grep"
    fake.write_text("#!/bin/sh\necho 'grep: broken' >&2\nexit 2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text(NOISE + TRACEBACK + _steps(0, [1, 2, 3]))
    without = _view(read_inputs([logs], jobs=1, grep=False))
    monkeypatch.setattr("hanglens.ingest.reader.grep_path", lambda: os.fspath(fake))
    broken = _view(read_inputs([logs], jobs=1, grep=True))
    assert broken[0] == without[0] and broken[1] == without[1]
    assert any("grep prefilter failed (grep exit status 2)" in n for n in broken[3]["a.log"])


@needs_grep
def test_no_match_is_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "quiet.log").write_text(NOISE * 10)
    ing = read_inputs([tmp_path], jobs=1, grep=True)
    assert not ing.notes and ing.files[0].lines == 10


def test_scan_counts_lines_and_finds_long_ones() -> None:
    data = b"a\n" + b"x" * (MAX_LINE + 1) + b"\nshort\n" + b"y" * MAX_LINE + b"\n" + b"z" * (3 * MAX_LINE)
    got = scan_file(io.BytesIO(data), MAX_LINE)
    assert (got.size, got.lines, got.long_lines) == (len(data), 5, (2, 5))
    assert scan_file(io.BytesIO(b""), MAX_LINE).lines == 0
    assert scan_file(io.BytesIO(b"\n\n"), MAX_LINE).lines == 2


@needs_grep
def test_escaped_triggers_match_only_themselves(tmp_path: Path) -> None:
    lits = ("Error [CUDA]", "%|", "a.b*c+d?e(f)g{1}h|i^j$k\\l", "[E")
    decoys = ("Error CUDA]", "%", "aXb*c+d?e(f)g{1}h|i^j$k\\l", "E", "abbbc")
    log = tmp_path / "x.log"
    log.write_text("\n".join(decoys + lits) + "\n")
    exe = prefilter.grep_path()
    assert exe is not None
    g = prefilter.Grep(exe, lits, os.fspath(log), MAX_LINE)
    rows = list(g.hits())
    assert g.finish() == 0
    assert [(int(r[0]), r[2].decode()) for r in rows] == [(i + 6, lit) for i, lit in enumerate(lits)]
