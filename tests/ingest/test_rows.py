"""The RE2 row picker (big blocks) and the progress fast path read what the `re` block search reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hanglens.ingest import Ingested, read_inputs
from hanglens.ingest import reader as reader_module
from hanglens.ingest.reader import MAX_LINE, Reader
from hanglens.ingest.rows import Rows
from hanglens.model import Origin
from hanglens.parsers import PARSERS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

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
    """Inputs that stress the line layer; every one must read the same with RE2 rows and with `re`."""
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


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(read with every block going to RE2 rows, read with every block searched by `re`)."""
    with monkeypatch.context() as m:
        m.setattr(reader_module, "ROWS_MIN_BYTES", 0)
        rows = _view(read_inputs([path], jobs=1))
    with monkeypatch.context() as m:
        m.setattr(reader_module, "ROWS_MIN_BYTES", 1 << 62)
        plain = _view(read_inputs([path], jobs=1))
    return rows, plain


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if (p / "truth.yaml").is_file()))
def test_fixture_reads_the_same_with_rows(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_rows, plain = _both(FIXTURES / name, monkeypatch)
    assert with_rows == plain


def test_tricky_inputs_read_the_same_with_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handled: list[bytes] = []  # step lines read the slow way (the fast path takes the others)
    real_handle = Reader._handle

    def spy(self: Reader, bline: bytes, num: int) -> None:
        if b"step:" in bline:
            handled.append(bline)
        real_handle(self, bline, num)

    monkeypatch.setattr(Reader, "_handle", spy)
    _tricky(tmp_path / "logs")
    steps = sum(p.read_bytes().count(b"step:") for p in (tmp_path / "logs").rglob("*.log"))
    with_rows, plain = _both(tmp_path / "logs", monkeypatch)
    assert with_rows[0] == plain[0]
    assert with_rows == plain
    assert 2 * steps - len(handled) > 80  # the fast path did the bulk of the step lines, both ways
    notes = with_rows[3]
    assert sum("longer than" in n for n in notes["long.log"]) == 3
    progress = [e for e in with_rows[0] if e[0] == "progress" and e[1].path == "steps.log"]
    assert any(e[10].get("gap_after") is not None for e in progress)


def test_each_tricky_file_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tricky(tmp_path / "logs")
    for path in sorted((tmp_path / "logs").rglob("*")):
        if path.is_file():
            with_rows, plain = _both(path, monkeypatch)
            assert with_rows == plain, path.name


def test_reader_results_match_field_by_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tricky(tmp_path / "logs")
    parsers = tuple(PARSERS)
    for path in sorted((tmp_path / "logs").rglob("*.log")):
        got = []
        for threshold in (0, 1 << 62):
            monkeypatch.setattr(reader_module, "ROWS_MIN_BYTES", threshold)
            with open(path, "rb") as fh:
                res = Reader(path.name, Origin(local_rank=3), parsers).read(fh)
            got.append((res.events, res.lines, res.ranks, res.hosts, res.notes, res.lines_with_events,
                        res.envelope_ranks, res.rank_pairs, res.dated))
        assert got[0] == got[1], path.name


def test_no_match_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_module, "ROWS_MIN_BYTES", 0)
    (tmp_path / "quiet.log").write_text(NOISE * 10)
    ing = read_inputs([tmp_path], jobs=1)
    assert not ing.notes and ing.files[0].lines == 10


def test_rows_split_lines_like_bytes_split() -> None:
    for block in (b"", b"a", b"a\n", b"\n\n", b"a\nbb\n\nccc", b"x" * 10 + b"\n"):
        rows = Rows(block)
        want = block.split(b"\n")
        if block.endswith(b"\n") or not block:
            want = want[:-1]
        assert [block[a:b] for a, b in zip(rows.starts, rows.ends, strict=True)] == want
        assert rows.count == len(want)


def test_escaped_triggers_match_only_themselves() -> None:
    lits = ("Error [CUDA]", "%|", "a.b*c+d?e(f)g{1}h|i^j$k\\l", "[E", "caf\u00e9 ", "tab\there")
    decoys = ("Error CUDA]", "%", "aXb*c+d?e(f)g{1}h|i^j$k\\l", "E", "abbbc", "cafe ", "tab here",
              "\xff\xfe not UTF-8")
    block = "\n".join(decoys + lits).encode("utf-8", "surrogateescape") + b"\n\xc3(\n"
    rows = Rows(block)
    assert rows.hits(lits).tolist() == list(range(len(decoys), len(decoys) + len(lits)))
    assert rows.hits(lits, rows.hits(lits)[1:3]).tolist() == [len(decoys) + 1, len(decoys) + 2]
    assert rows.hits(()).tolist() == []
