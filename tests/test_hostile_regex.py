"""Every built-in pattern is linear in the line (issue 12, item 7), and integers beyond 64 bits are not fields
(item 9).

The regex battery feeds every parser, through the real reader, lines built from its own trigger words and
examples (see hostile_lines.py): 40 KB of digits after `step` took the old progress pattern minutes, and
`NCCL version` followed by digits was quadratic in the NCCL parser. The battery runs in a child process
under one generous wall-clock guard: a super-linear pattern needs hours for it, a linear one seconds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsers.harness import events, has

from hanglens import api
from hanglens.lazyre import LazyPattern
from hanglens.parsers import PARSERS
from hanglens.parsers.base import INT64_MAX, to_count, to_int

try:  # the regex parser's own modules (Python 3.11+ moved them under `re`)
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants
    import sre_parse

HANG_GUARD_S = 180  # the whole battery; today's patterns need about 25 s on a loaded 2-core machine
TESTS = Path(__file__).resolve().parent

BATTERY = """
import io, json, sys
sys.path.insert(0, sys.argv[1])
from hostile_lines import battery
from hanglens.ingest.reader import Reader
from hanglens.model import Origin
from hanglens.parsers import PARSERS
report = {}
for parser in PARSERS:
    lines = battery(parser)
    data = ("\\n".join(lines) + "\\n").encode()
    result = Reader("hostile.log", Origin(), [parser]).read(io.BytesIO(data))
    report[parser.name] = {"lines": len(lines), "failures": [n for n in result.notes if " failed" in n]}
print(json.dumps(report))
"""


def test_every_parser_reads_hostile_lines_in_linear_time() -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", BATTERY, str(TESTS)],
            capture_output=True, text=True, timeout=HANG_GUARD_S, check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the hostile-line battery ran past {HANG_GUARD_S} s: a built-in pattern is super-linear")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert set(report) == {p.name for p in PARSERS}
    assert all(r["lines"] > 20 for r in report.values())
    assert {name: r["failures"] for name, r in report.items() if r["failures"]} == {}


REDACT = """
import sys
from hanglens.report.redact import redact
words = ["a_", "token_", "x.", "a@b.", "1:", "f", "A", "/home/", "USER=", "ip-1-"]
lines = [w * (40_000 // len(w)) + "!" for w in words]
redact({"events": [{"text": line} for line in lines], "text": " ".join(lines)})
print("ok")
"""


def test_redaction_is_linear_in_hostile_text() -> None:
    try:
        done = subprocess.run([sys.executable, "-c", REDACT], capture_output=True, text=True, timeout=60,
                              check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("redacting 40 KB lines ran past 60 s: a redaction pattern is super-linear")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# -- static shape check: no unbounded repeat of something that holds an unbounded repeat, unless each ----
# round of the outer repeat needs a character the inner one cannot take (`(?:\.\w+)*`, `\d+(?:, ?\d+)*`)
UNBOUNDED = sre_constants.MAXREPEAT
REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)
SAMPLE = [chr(c) for c in range(1, 128)] + ["é", "²", "\u2028", "中"]
CATEGORY_RX = {
    sre_constants.CATEGORY_DIGIT: r"\d", sre_constants.CATEGORY_NOT_DIGIT: r"\D",
    sre_constants.CATEGORY_WORD: r"\w", sre_constants.CATEGORY_NOT_WORD: r"\W",
    sre_constants.CATEGORY_SPACE: r"\s", sre_constants.CATEGORY_NOT_SPACE: r"\S",
}


def _chars(op: Any, av: Any) -> set[str] | None:
    """The sample characters one single-character item matches (None: not a single-character item)."""
    if op == sre_constants.LITERAL:
        return {chr(av)}
    if op == sre_constants.NOT_LITERAL:
        return {c for c in SAMPLE if c != chr(av)}
    if op == sre_constants.ANY:
        return {c for c in SAMPLE if c != "\n"}
    if op == sre_constants.IN:
        negate = any(o == sre_constants.NEGATE for o, _ in av)
        hit: set[str] = set()
        for o, a in av:
            if o == sre_constants.LITERAL:
                hit.add(chr(a))
            elif o == sre_constants.RANGE:
                hit |= {c for c in SAMPLE if a[0] <= ord(c) <= a[1]}
            elif o == sre_constants.CATEGORY:
                hit |= {c for c in SAMPLE if re.fullmatch(CATEGORY_RX[a], c)}
        return set(SAMPLE) - hit if negate else hit
    return None


def _inner_unbounded(items: Any) -> list[set[str] | None]:
    """Character sets of the unbounded repeats inside `items` (None where the repeated part is complex)."""
    out: list[set[str] | None] = []
    for op, av in items:
        if op in REPEATS:
            _lo, hi, sub = av
            if hi == UNBOUNDED:
                out.append(_chars(*sub[0]) if len(sub) == 1 else None)
            out += _inner_unbounded(sub)
        elif op == sre_constants.SUBPATTERN:
            out += _inner_unbounded(av[-1])
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                out += _inner_unbounded(branch)
    return out


def _mandatory_chars(items: Any) -> list[set[str]]:
    """Character sets of single-character items every match of `items` must take."""
    out = []
    for op, av in items:
        chars = _chars(op, av)
        if chars is not None:
            out.append(chars)
        elif op in REPEATS and av[0] >= 1 and len(av[2]) == 1 and _chars(*av[2][0]) is not None:
            out.append(_chars(*av[2][0]) or set())
        elif op == sre_constants.SUBPATTERN:
            out += _mandatory_chars(av[-1])
    return out


def _nested_unbounded(items: Any) -> list[str]:
    """Unbounded repeats whose rounds can split the same text in many ways (`(a+)+`, `(?:x*y?)*`)."""
    found: list[str] = []
    for op, av in items:
        if op in REPEATS:
            _lo, hi, sub = av
            inner = _inner_unbounded(sub)
            if hi == UNBOUNDED and inner:
                guards = _mandatory_chars(sub)
                if not all(s is not None and any(not (g & s) for g in guards) for s in inner):
                    found.append(str(sub)[:80])
            found += _nested_unbounded(sub)
        elif op == sre_constants.SUBPATTERN:
            found += _nested_unbounded(av[-1])
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                found += _nested_unbounded(branch)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            found += _nested_unbounded(av[1])
    return found


def _builtin_patterns() -> list[tuple[str, re.Pattern[str]]]:
    mods = {sys.modules[p.__module__] for p in PARSERS}
    for name in ("hanglens.ingest.prefix", "hanglens.ingest.origin", "hanglens.ingest.flight",
                 "hanglens.report.redact"):
        __import__(name)
        mods.add(sys.modules[name])
    out = []
    for mod in sorted(mods, key=lambda m: m.__name__):
        for key, value in vars(mod).items():
            values = value if isinstance(value, tuple) else (value,)
            for item in values:
                for rx in item if isinstance(item, tuple) else (item,):
                    if isinstance(rx, LazyPattern):  # compiled on first use (hanglens/lazyre.py)
                        rx = rx.compiled()
                    if isinstance(rx, re.Pattern) and isinstance(rx.pattern, str):
                        out.append((f"{mod.__name__}.{key}", rx))
    return out


def test_no_builtin_pattern_nests_unbounded_quantifiers() -> None:
    patterns = _builtin_patterns()
    assert len(patterns) > 100
    bad = {name: found for name, rx in patterns if (found := _nested_unbounded(sre_parse.parse(rx.pattern)))}
    assert bad == {}


def test_the_shape_check_sees_nested_quantifiers() -> None:
    for bad in (r"(?:a+b?)+c", r"(\s*x?)*y", r"(?:a\w+)*!", r"(?:\d+\.?)+x"):
        assert _nested_unbounded(sre_parse.parse(bad)), bad
    for good in (r"(?:\[\d{1,6}\] ?)+x", r"\d+(?:, ?\d+)*", r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*", r"a+b+"):
        assert not _nested_unbounded(sre_parse.parse(good)), good


# -- numbers beyond 64 bits (issue 12, item 9) -------------------------------------------------------
def test_int_fields_stop_at_int64() -> None:
    assert to_int(str(INT64_MAX)) == INT64_MAX
    assert to_int(str(INT64_MAX + 1)) is None
    assert to_int("-" + str(INT64_MAX + 1)) == -(INT64_MAX + 1)
    assert to_int("7" * 400) is None
    assert to_count("-3") is None and to_count("3") == 3
    assert to_int("²") is None


OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
    "{cap} GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 77.81 GiB memory "
    "in use."
)


def test_oom_with_a_400_digit_capacity_is_still_an_oom() -> None:
    from hanglens.parsers.cuda import CudaParser

    found = events([CudaParser], OOM.format(cap="9" * 400), "oom")
    assert has(found, {"device": "cuda", "total": None, "requested": 2 << 30})


digits = st.text(alphabet="0123456789", min_size=1, max_size=120)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pid=digits, rank=digits, seq=digits, code=digits)
def test_no_event_field_holds_a_number_beyond_int64(pid: str, rank: str, seq: str, code: str) -> None:
    # Lines written from ../shared/reference/log-formats.md (§1.4, §3.5, §4.3) with random digit strings.
    text = "\n".join([
        f"[rank{rank[:6]}]:[E1109 02:51:12.307759128 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={seq}, "
        f"NumelOut={seq}, Timeout(ms)=600000) ran for {code} milliseconds before timing out.",
        f"E1109 02:51:13.118000 {pid} torch/distributed/elastic/multiprocessing/api.py:874] failed "
        f"(exitcode: -{code}) local_rank: {rank} (pid: {pid}) of binary: /usr/bin/python3",
        f"gpu-n4:{pid}:{pid} [0] NCCL INFO comm 0x55d1c3a0e2b0 rank {rank} nranks {rank} cudaDev 0 "
        f"nvmlDev 0 busId {code} commId 0x7a3c55e1f0b2d914 - Init COMPLETE",
    ])
    found = events(PARSERS, text)
    assert found
    for e in found:
        for key, value in e.fields.items():
            if isinstance(value, int) and not isinstance(value, bool):
                assert -(INT64_MAX + 1) <= value <= INT64_MAX, (e.kind, key)
                if "rank" in key or key in ("pid", "nranks"):
                    assert value >= 0, (e.kind, key)
        assert e.rank is None or 0 <= e.rank <= INT64_MAX


def test_a_rank_with_a_hundred_digits_does_not_break_analysis(tmp_path: Path) -> None:
    huge = "9" * 100
    (tmp_path / "rank0.log").write_text(
        "[rank0]:[E1109 02:51:12.307759128 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) "
        "ran for 600031 milliseconds before timing out.\n"
        "[2026-01-14 05:12:40,281] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
        f"(exitcode: 1) local_rank: {huge} (pid: {huge}) of binary: /usr/bin/python3\n"
        f"  rank      : -{huge[:3]} (local_rank: 5)\n"
        f"[rank{huge}]: RuntimeError: boom on rank {huge}\n"
    )
    doc = api.analyze([str(tmp_path)]).to_dict()
    ranks = doc["inputs"]["ranks_seen"]
    assert all(isinstance(r, int) and 0 <= r <= INT64_MAX for r in ranks)
    json.dumps(doc)
