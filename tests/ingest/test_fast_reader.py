"""The reader's shortcuts (repeated inert lines parsed once, the step-line fast path) change no event."""

from __future__ import annotations

import io
import json
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hanglens.cli import app
from hanglens.ingest import read_inputs
from hanglens.ingest import reader as reader_module
from hanglens.ingest.reader import Reader, repeat_key
from hanglens.limits import Limits
from hanglens.model import Event, LogLine, Origin
from hanglens.parsers import PARSERS
from hanglens.parsers import progress as progress_module
from hanglens.parsers.base import Parser
from hanglens.parsers.progress import KEEP_RESTARTS, ProgressParser

# Real-format lines: every parser's declared examples (one physical line each, or the whole block).
EXAMPLES = sorted({ex.text for p in PARSERS for ex in p.examples})
# Chatter written here from the format reference (NCCL 2.21 INFO envelope, torch 2.4-2.9 c10 envelope,
# torchtitan-style step lines): the lines the shortcuts are for.
STEP = "[rank{r}]:[titan] 2025-06-02 08:04:{s:02d},417 - root - INFO - step: {n:5d}  loss: 3.1{n:03d}"
CHATTER = (
    "[rank{r}]:[I1130 08:04:{s:02d}.123456789 ProcessGroupNCCL.cpp:925] [PG ID 1 PG GUID 1(tp) Rank 3] "
    "ProcessGroupNCCL created ncclComm_ 0x7f00a0 on CUDA device: 3",
    "node-5:51234:51234 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/CUMEM/read",
    STEP,
    STEP,
    "[rank{r}]:[I1130 08:04:{s:02d}.123456789 ProcessGroupNCCL.cpp:1021] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 3] ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_DUMP_ON_TIMEOUT: 1",
    "node-5:51234:51240 [3] NCCL INFO comm 0x55d1 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 4e000 commId "
    "0x1a2b3c4d5e6f7081 - Init COMPLETE",
    "[rank{r}]:  warnings.warn(",
    "[rank{r}]: eval:  40%|####      | {n}/50 [00:{s:02d}<00:03, 4.51it/s]",
    # tqdm redraws with `\r`, each behind its own `[rankN]:` (the glued envelope ends the segment before).
    "[rank{r}]:\r eval:  {n:3d}%|##        | {n}/50 [00:{s:02d}<00:08, 4.97it/s][rank{r}]:\r eval: 100%|#####"
    "#####| 50/50 [00:{s:02d}<00:00, 5.12it/s]",
    "[rank{r}]:[titan] 2025-06-02 08:04:{s:02d},417 - root - INFO - step: {n:5d}  loss: 3.1 \r iter {n}",
    "node-5:51234:51240 [3] NCCL INFO Channel {n:02d}/1 : 3[3] -> 4[4] [send] via NET/IB/1/GDRDMA",
    "[rank{r}]:node-5:51234:51240 [3] NCCL INFO Channel {n:02d}/1 : 2[2] -> 3[3] [receive] via NET/IB/1",
    "[default{r}]:[rank{n}]:[W1130 08:04:{s:02d}.123456789 ProcessGroupNCCL.cpp:1021] Rank {n} step {n}",
    "[1,{r}]<stderr>:[rank{n}]: eval:  10%|#         | {n}/90 [00:{s:02d}<00:09, 9.10it/s]",
    "2025-06-02T08:04:{s:02d}.123Z stderr F [rank{r}]: train step {n}/100",
    "\x1b[32m[rank{r}]:\x1b[0m epoch {n} step {n}",
    "[rank{r}]:Traceback (most recent call last):\n"
    "[rank{r}]:  File \"/home/user/t.py\", line {n}, in <module>\n"
    "[rank{r}]:RuntimeError: CUDA error: an illegal memory access was encountered",
    "[rank 1] step {n} loss 0.2[rank 2] step {n} loss 0.3",
    # Segments no parser wants, on a line one does: their rank, pairing and dated stamp still count.
    "[rank {n}] waiting at barrier\r[default{n}]:[rank{r}]:RuntimeError: boom",
    "[tp{n}]:x [rank{r}]: idle\r[rank{r}]:Error: x",
    "2025-06-03 08:04:{s:02d},123 - root - INFO - waiting\r[rank{r}]:Error: x",
    # Step lines the bulk extraction must read like the per-line path: no tag, no milliseconds, a wide
    # rank, an impossible date, a 19-digit step, a zero-padded rank, a second report on the line.
    "[rank1{r}]:2025-06-02 08:04:{s:02d} - train - INFO - step: {n}  loss: 1.5",
    "[rank{r}]:[titan] 2025-02-30 08:04:{s:02d},001 - root - INFO - step: {n}  loss: 1.5",
    "[rank{r}]:[titan] 2025-06-02 08:04:{s:02d},001 - root - WARNING - step: 1234567890123456789  loss: 1",
    "[rank0{r}]:[titan] 2025-06-02 08:04:{s:02d},001 - root - INFO - step: {n}  loss: 1.5",
    "[rank{r}]:[titan] 2025-06-02 08:04:{s:02d},001 - root - INFO - xstep: 9  loss: 1 step:\t{n} loss: 2",
    # Repeats decided on the bytes: control characters, a stamp past the first 48 characters, two stamps,
    # a non-ASCII character, a NUL.
    "[rank{r}]:\x0c[I1130 08:04:{s:02d}.12 ProcessGroupNCCL.cpp:925] x\x01y ProcessGroupNCCL created",
    "[rank{r}]:[I1130 ProcessGroupNCCL.cpp:925] [PG ID 1 PG GUID 1(tp)] at 08:04:{s:02d}.5 ProcessGroupNCCL",
    "[rank{r}]:08:04:{s:02d} ProcessGroupNCCL created ncclComm_ 0x7f00a0 at 09:1{n}:00.25",
    "[rank{r}]:[I1130 08:04:{s:02d}.123 ProcessGroupNCCL.cpp:925] caf\u00e9 ProcessGroupNCCL created",
    "[rank{r}]:[I1130 08:04:{s:02d}.123 ProcessGroupNCCL.cpp:925] \x00ProcessGroupNCCL created ncclComm_",
    # Step lines holding another parser's trigger (not fast; memoised by shape: digits apart, the same).
    "[rank{r}]:[titan] 2025-06-02 08:04:{s:02d},417 - root - INFO - step: {n:5d}  loss: 3.1 Error {n}",
    "[rank{r}]:[titan] 2025-06-02 08:04:{s:02d},417 - root - INFO - step: {n:5d}  NCCL version {n}.1",
)


# tqdm bars as `torchrun --tee` and per-rank stderr files hold them (tqdm 4.x `format_meter`: `{l_bar}{bar}|
# {n}/{total} [{elapsed}<{remaining}, {rate}]`, redrawn with `\r`, no newline until the bar closes). Labels
# include words other parsers read (phases, errors, levels, epochs) and none; times past an hour.
BAR_LABELS = ("eval", "Training", "Running eval", "validation", "Epoch 3", "train step", "Iter", "",
              "Saving checkpoint", "Error", "INFO", "node1", "data loading", "Processing")
BAR_TAILS = ("", "[rank{r}]:", "[rank{r}]: ", " done", "Traceback (most recent call last):",
             "[rank 2] step 3 loss 0.25",
             "[rank{r}]:[titan] 2025-06-02 08:05:01,417 - root - INFO - step:    {n}  loss: 2.5", "\x1b[0m")


def _redraw(label: str, n: int, total: int, secs: int, unknown: bool, ascii_bar: bool, postfix: bool) -> str:
    pct = min(100, n * 100 // max(total, 1))
    fill = pct // 10
    bar = ("#" * fill + " " * (10 - fill)) if ascii_bar else ("\u2588" * fill + " " * (10 - fill))
    elapsed = f"{secs // 60:02d}:{secs % 60:02d}" if secs < 3600 else \
        f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
    rest = "?" if unknown else f"{(total - n) // 5 // 60:02d}:{(total - n) // 5 % 60:02d}"
    rate = ", 4.97it/s, loss=2.1" if postfix else ", 4.97it/s"
    head = f"{label}: " if label else ""
    return f"{head}{pct:3d}%|{bar}| {n}/{total} [{elapsed}<{rest}{rate}]"


@st.composite
def bar_lines(draw: st.DrawFn) -> str:
    """One physical line of `\r` redraws: counters that go on, repeat or restart; a rank's `[rankN]:` glued
    after each redraw (or not); what the line ends with."""
    r = draw(st.integers(0, 3))
    label = draw(st.sampled_from(BAR_LABELS))
    total = draw(st.sampled_from((50, 8)))
    steps = draw(st.lists(st.integers(0, total), min_size=1, max_size=7))
    glue = draw(st.booleans())
    out = draw(st.sampled_from(("[rank{r}]:", "", " ")))
    for k, n in enumerate(steps):
        secs = draw(st.sampled_from((2, 59, 3727, 45296)))
        out += "\r" + _redraw(label, n, total, secs, draw(st.booleans()), draw(st.booleans()),
                              draw(st.integers(0, 9)) == 0)
        if glue and k + 1 < len(steps):
            out += "[rank{r}]:"
    return (out + draw(st.sampled_from(BAR_TAILS))).format(r=r, n=steps[-1])


def _events(data: bytes, reference: bool, origin: Origin | None = None) -> list[tuple[Any, ...]]:
    reader = Reader("x.log", origin or Origin(), PARSERS, reference=reference)
    res = reader.read(io.BytesIO(data))
    return [(e.kind, e.ref.line, e.text, e.parser, e.rank, e.time, e.local_rank, e.level, e.writer,
             dict(e.fields)) for e in res.events] + [
        ("file", res.lines, res.envelope_ranks, res.rank_pairs, res.dated, res.glued_bar_lines,
         res.lines_with_events, res.worker_tagged)]


@contextmanager
def _big_blocks() -> Iterator[None]:
    """Every block read as a big one (RE2 rows pick the lines), however small the input; a context manager
    rather than pytest's monkeypatch, which hypothesis's repeated examples cannot share."""
    rows_min, reader_module.ROWS_MIN_BYTES = reader_module.ROWS_MIN_BYTES, 0
    try:
        yield
    finally:
        reader_module.ROWS_MIN_BYTES = rows_min


ORIGINS = (Origin(), Origin(rank=2, local_rank=2, host="node-5", stream="stderr"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.tuples(st.sampled_from(EXAMPLES + list(CHATTER)), st.integers(0, 59),
                                    st.integers(0, 40), st.integers(0, 3)),
                          bar_lines()), min_size=1, max_size=80),
       st.sampled_from(ORIGINS))
def test_fast_reader_gives_the_reference_readers_events(picks: list[tuple[str, int, int, int] | str],
                                                        origin: Origin) -> None:
    text = "".join((p if isinstance(p, str) else p[0].format(s=p[1], n=p[2], r=p[3]) if p[0] in CHATTER
                    else p[0]) + "\n" for p in picks)
    data = text.encode("utf-8")
    want = _events(data, reference=True, origin=origin)
    assert _events(data, reference=False, origin=origin) == want
    # The same bytes as a big block: RE2 rows pick the lines (the reference always searches with `re`).
    with _big_blocks():
        assert _events(data, reference=False, origin=origin) == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(("eval", "", "Training")), st.booleans(),
       st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=5), min_size=KEEP_RESTARTS + 1,
                max_size=3 * KEEP_RESTARTS + 4),
       st.lists(st.sampled_from(EXAMPLES + [c.format(s=7, n=3, r=1) for c in CHATTER]), max_size=6),
       st.sampled_from(ORIGINS))
def test_bars_restarting_past_the_kept_ones_give_the_reference_events(
        label: str, glue: bool, runs: list[list[int]], others: list[str], origin: Origin) -> None:
    # One bar restarting more often than KEEP_RESTARTS: the restarts held back until the end (built as events
    # only if given out then) and the extremes of those dropped, among other lines now and then; against the
    # reference reader with a parser that builds every restart's events when it happens.
    lines = []
    for k, steps in enumerate(runs):
        env = "[rank1]:" if glue else ""
        lines.append(env + "".join("\r" + _redraw(label, n, 50, 2 + k, False, False, False)
                                   + (env if j + 1 < len(steps) else "") for j, n in enumerate(steps)))
        if others and k % 3 == 0:
            lines.append(others[k % len(others)])
    data = ("\n".join(lines) + "\n").encode("utf-8")
    lazy = ProgressParser._restart
    ProgressParser._restart = _eager_restart  # type: ignore[method-assign]
    try:
        want = _events(data, reference=True, origin=origin)
    finally:
        ProgressParser._restart = lazy  # type: ignore[method-assign]
    assert _events(data, reference=True, origin=origin) == want
    assert _events(data, reference=False, origin=origin) == want
    with _big_blocks():
        assert _events(data, reference=False, origin=origin) == want


def _eager_restart(self: ProgressParser, key: tuple[Any, ...], reports: tuple[Any, ...]) -> list[Event]:
    """`ProgressParser._restart` building every restart's events when it happens (the held ones too)."""
    n = self.restarts.get(key, 0)
    self.restarts[key] = n + 1
    pair = self._made(reports)
    if n < KEEP_RESTARTS:
        self.told.setdefault(key, []).append(pair)
        return pair
    progress_module._hold(self.held.setdefault(key, deque()), self.extremes, key, pair)
    return []


def test_bulk_paths_read_the_bars_and_step_lines() -> None:
    # The property test above compares; this one checks that the bulk paths are the ones reading: a
    # console of tqdm redraws and step lines takes the parser's slow path only for restarts and firsts.
    lines = []
    for k in range(40):
        for r in range(4):
            lines.append(STEP.format(r=r, s=k % 60, n=k if k != 30 else 3))
        redraws = "".join("\r" + _redraw("eval", n, 50, 2 * n // 10, False, False, False) + "[rank1]:"
                          for n in range(0, 51, 10))
        lines.append("[rank1]:" + redraws)
    data = ("\n".join(lines) + "\n").encode()
    fed: list[str] = []
    feed = ProgressParser.feed

    def spy(self: ProgressParser, line: LogLine) -> Any:
        fed.append(line.text)
        return feed(self, line)

    ProgressParser.feed = spy  # type: ignore[method-assign]
    try:
        with _big_blocks():
            got = _events(data, reference=False)
    finally:
        ProgressParser.feed = feed  # type: ignore[method-assign]
    assert got == _events(data, reference=True)
    # Per rank the first step line and the restart at k=30 (4 ranks), and the bar's first redraw per text
    # before its counter (`eval:   0%`, `eval:  20%`, `eval: 100%`: tqdm pads the percentage), which sets up
    # the bulk path; no other line reaches `feed`.
    assert len([t for t in fed if "step:" in t]) == 8
    assert len([t for t in fed if "%|" in t]) == 3
    restarts = [e for e in got if e[0] == "progress" and e[9].get("label") == "eval"]
    assert [e[9]["step"] for e in restarts][:3] == [0, 50, 0]


# Pieces of lines around clock times (`_STAMP_AT_RE`: `hh:mm:ss` with an optional fraction).
STAMP_BITS = ("08:04:26", "8:04:26", "08:04", ".123456789", ",417", ".", ":", "1", "23", "[I1130 ",
              "[rank3]:", " ab ", "x")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(STAMP_BITS), max_size=14),
       st.lists(st.lists(st.sampled_from(STAMP_BITS), max_size=10), min_size=1, max_size=6))
def test_the_repeat_key_of_bytes_memoised_per_shape_is_the_plain_one(head: list[str], tails: list[list[str]]
                                                                     ) -> None:
    # Lines of one shape (digits apart) share the memo entry, lines with one head differ after it: each must
    # still get its own key.
    lines = ["".join(head + t) for t in tails]
    for text in lines + [t.translate(str.maketrans("0123456789", "9876543210")) for t in lines]:
        raw = text.encode()
        plain = reader_module._without_stamp(raw, reader_module._STAMP_AT_B_RE)
        assert reader_module._bytes_key(raw) == plain


def test_repeated_inert_lines_are_parsed_once_and_counted() -> None:
    line = CHATTER[0]
    data = "".join(line.format(s=s, r=3) + "\n" for s in range(30)).encode()
    reader = Reader("x.log", Origin(), PARSERS)
    res = reader.read(io.BytesIO(data))
    assert reader.repeats == 29
    assert any("29 lines repeat" in n for n in res.notes)
    assert repeat_key(line.format(s=1, r=3)) == repeat_key(line.format(s=2, r=3))
    assert repeat_key("Watchdog at 12:00:01 then") != repeat_key("Watchdog at 12:00:01 then more")


def test_utf16_logs_with_a_bom_read_like_utf8(tmp_path: Path) -> None:
    text = ("[rank1]:[E1130 08:04:26.123456789 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
            "Timeout(ms)=600000) ran for 600410 milliseconds before timing out.\r\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\r\n")
    for name, data in (("le.log", text.encode("utf-16")), ("be.log", b"\xfe\xff" + text.encode("utf-16-be")),
                       ("u8.log", text.encode("utf-8"))):
        (tmp_path / name).write_bytes(data)
    ing = read_inputs([tmp_path], jobs=1)
    kinds = {p: sorted(e.kind for e in ing.events if e.ref.path == p) for p in ("le.log", "be.log", "u8.log")}
    assert "hang_detected" in kinds["u8.log"]
    assert kinds["le.log"] == kinds["be.log"] == kinds["u8.log"]
    assert "UTF-16 text (byte-order mark); decoded" in ing.notes["le.log"]
    ctx = ing.context([e.ref for e in ing.events if e.ref.path == "le.log"][:1], before=0, after=0)
    assert any("Watchdog caught" in t for lines in ctx.values() for _, t in lines)


class _Broken(Parser):
    name = "broken"
    triggers: ClassVar[tuple[str, ...]] = ("boom",)

    def feed(self, line: LogLine) -> Iterable[Event]:
        raise ValueError("no")


def test_a_parser_exception_is_a_note_with_path_and_line(tmp_path: Path) -> None:
    (tmp_path / "r.log").write_text("fine\nboom here\n", encoding="utf-8")
    ing = read_inputs([tmp_path], jobs=1, parsers=(*PARSERS, _Broken))
    assert ing.notes["r.log"] == ["broken failed on line 2: ValueError: no"]


def test_inputs_json_shows_reader_notes(tmp_path: Path) -> None:
    (tmp_path / "w.log").write_bytes("RuntimeError: CUDA error: out of memory\n".encode("utf-16"))
    out = CliRunner().invoke(app, ["inputs", "--format", "json", str(tmp_path)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["files"][0]["notes"] == ["UTF-16 text (byte-order mark); decoded"]
    assert doc["files"][0]["events"] > 0


def test_files_over_max_files_are_one_skip_naming_the_limit(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"r{i:02d}.log").write_text(f"RuntimeError: CUDA error: out of memory {i}\n", "utf-8")
    ing = read_inputs([tmp_path], jobs=1, limits=Limits(max_files=5))
    assert [f.path for f in ing.files] == [f"r{i:02d}.log" for i in range(5)]
    assert [s.path for s in ing.skipped] == ["r05.log"]
    assert "more than 5 files" in ing.skipped[0].reason and "max_files" in ing.skipped[0].reason


def test_a_restart_after_fast_step_lines_sees_the_latest_report() -> None:
    # Ranks 0 and 1 step forward (fast path), then rank 1 restarts at step 2 (slow path): the progress
    # parser must compare the restart with rank 1's latest report, held back by the fast path.
    lines = [STEP.format(r=r, s=n, n=n) for n in range(1, 8) for r in (0, 1)]
    lines += [CHATTER[0].format(s=9, r=0), STEP.format(r=1, s=10, n=2), STEP.format(r=0, s=11, n=8)]
    data = ("\n".join(lines) + "\n").encode()
    fast = _events(data, reference=False)
    assert fast == _events(data, reference=True)
    assert [e[9]["step"] for e in fast if e[0] == "progress" and e[4] == 1] == [1, 7, 2]


def test_segments_no_parser_reads_still_count_for_ranks_and_dates() -> None:
    # The fast reader builds no LogLine for a segment no parser wants (or that the progress parser would
    # read nothing in) when that says nothing new: a user rank tag, a launcher tag away from `[rankN]:`,
    # an Open MPI tag and a dated stamp are things it says.
    lines = ["[rank 17] waiting at barrier\r[default1]:[rank3]:RuntimeError: boom",
             "[tp5]:x [rank2]: idle\r[rank2]:Error: x",
             "2025-06-03 08:04:05,123 - root - INFO - waiting\r[rank3]:Error: x",
             "[1,6]<stderr>:[rank6]: eval:  10%|#         | 9/90 [00:01<00:09, 9.10it/s]\r[rank6]:Error: y",
             "[rank4]:\r eval:  20%|##        | 10/50 [00:02<00:08, 4.97it/s][rank4]:\r eval: 100%|#####"
             "#####| 50/50 [00:10<00:00, 5.12it/s]"]
    for line in lines:
        data = (line + "\n").encode()
        assert _events(data, reference=False) == _events(data, reference=True), line
    got = _events("".join(line + "\n" for line in lines).encode(), reference=False)
    assert got == _events("".join(line + "\n" for line in lines).encode(), reference=True)
    _, lines_read, ranks, pairs, dated, _, _, _ = got[-1]
    assert lines_read == 5 and {17, 2, 3, 4, 6} <= ranks and (5, 2) in pairs and dated is not None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["x", "1", "12", ":", ".", ",", "\n", " ", "08:04:05", "23:59:59.123456789",
                                 "é", "[rank3]:"]), max_size=40).map("".join))
def test_repeat_key_drops_the_first_stamp_within_48_characters(raw: str) -> None:
    m = reader_module._STAMP_RE.match(raw)  # (the definition: a stamp at most 48 characters in, no newline)
    assert repeat_key(raw) == (raw if m is None else raw[:m.end(1)] + raw[m.end():])


_OTHERS = reader_module._other_triggers(tuple(PARSERS))
_WORDS = sorted({t for p in PARSERS if p is not ProgressParser for t in p.triggers if t})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_WORDS), st.sampled_from(["0", "12", "7", " ", "step: ", "x"])),
                max_size=12).map("".join))
def test_the_shape_memo_answers_as_the_trigger_search(text: str) -> None:
    """`holds_trigger` memoises by the line with its digits zeroed: the same answer as the search."""
    line = text.encode()
    assert reader_module.holds_trigger(_OTHERS, line) == (_OTHERS.search(line) is not None)
    assert reader_module.holds_trigger(_OTHERS, line) == (_OTHERS.search(line) is not None)  # (memoised)
    digits = reader_module.compile_triggers([type("P", (Parser,), {"triggers": ("e1", "Error")})])
    assert reader_module.holds_trigger(digits, line) == (digits.search(line) is not None)


VLLM_CONSOLE = (
    "INFO 11-30 09:12:01 [api_server.py:1100] vLLM API server version 0.8.4\n"
    "(VllmWorker rank=0 pid=41200) INFO 11-30 09:12:20 [parallel_state.py:948] rank 0 is TP rank 0\n"
    "(VllmWorker rank=1 pid=41201) INFO 11-30 09:12:20 [parallel_state.py:948] rank 1 is TP rank 1\n"
    "(VllmWorker rank=2 pid=41202) INFO 11-30 09:12:20 [gpu_model_runner.py:1176] Model loaded\n"
    "[rank0]:[W1130 09:12:25.000000000 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() "
    "was not called before program exit, which can leak resources.\n"
    "ERROR 11-30 09:20:31 [serving_chat.py:200] Error in preprocessing prompt inputs\n"
    "ValueError: This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.\n"
    "INFO 11-30 09:20:42 [loggers.py:80] Avg prompt throughput: 1500.0 tokens/s, Running: 3 reqs\n"
)


@pytest.mark.parametrize("reference", [False, True])
def test_worker_tags_name_their_ranks_and_leave_the_rest_to_the_driver(reference: bool) -> None:
    """vLLM tags each worker's lines with its rank (`(VllmWorker rank=<r> pid=<p>) `): those ranks are the
    file's whether or not a parser reads the tagged lines (the fast reader had kept only `[rank0]:`, so the
    untagged API-server lines were given to rank 0), and the untagged lines are one writer, the driver."""
    with _big_blocks():
        reader = Reader("x.log", Origin(), PARSERS, reference=reference)
        res = reader.read(io.BytesIO(VLLM_CONSOLE.encode()))
    assert res.envelope_ranks == {0, 1, 2} and res.worker_tagged
    err = next(e for e in res.events if e.text.startswith("ValueError"))
    assert (err.rank, err.writer) == (None, "driver")
    assert _events(VLLM_CONSOLE.encode(), False) == _events(VLLM_CONSOLE.encode(), True)


def test_a_ranks_own_line_stating_its_pid_after_a_word_is_read() -> None:
    """`[rank 2] start pid=9865` states rank 2's pid (`world_info` `worker_pid`), as `[rank 2] pid=9865`
    does: torchrun's agent later names the process only by that pid (`Sending process 9865 closing
    signal`)."""
    data = b"2026-11-30 10:00:01,433 [rank 2] start pid=9865 attempt=0 local_rank=2\n"
    for reference in (False, True):
        got = Reader("x.log", Origin(), PARSERS, reference=reference).read(io.BytesIO(data))
        assert [(e.kind, e.rank, e.get("worker_pid")) for e in got.events if e.kind == "world_info"] == [
            ("world_info", 2, 9865)]


SGLANG_CONSOLE = (
    "[2026-11-28 09:13:52 TP0] Init torch distributed ends. mem usage=0.00 GB\n"
    "[2026-11-28 09:13:52 TP1] Init torch distributed ends. mem usage=0.00 GB\n"
    "[2026-11-28 09:13:54 TP1] Load weight end. type=TinyLM, avail mem=11.60 GB\n"
    "[2026-11-28 09:13:56 DP1 TP0] Prefill batch. #new-seq: 1, #new-token: 9\n"
    "[2026-11-28 09:13:57 TP0] Waiting queue empty; scheduler idle\n"
    "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
    "30000ms for recv operation to complete\n"
)


@pytest.mark.parametrize("reference", [False, True])
def test_sglang_tp_prefix_names_the_ranks_of_lines_no_parser_reads(reference: bool) -> None:
    """SGLang's `[<time> TP<n>]` prefix names its writer's rank on every line, read or not by a parser (a
    `DP<d>` field leaves the global rank unstated), on the block path as on the reference one."""
    with _big_blocks():
        reader = Reader("x.log", Origin(), PARSERS, reference=reference)
        res = reader.read(io.BytesIO(SGLANG_CONSOLE.encode()))
    assert res.envelope_ranks == {0, 1}
    assert _events(SGLANG_CONSOLE.encode(), False) == _events(SGLANG_CONSOLE.encode(), True)
