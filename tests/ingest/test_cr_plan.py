"""A line's `\r`-segment plan (`reader._cr_plan`), memoised per shape of line, says what the regexes say."""

from __future__ import annotations

import pytest

from hanglens.ingest import reader as reader_module
from hanglens.ingest.reader import _BAR_SEG_RE, _ENVELOPE_ONLY_RE, SegMatch, _cr_plan, _cr_plan_of

GROUPS = ("head", "pct", "step", "total", "elapsed", "remaining", "env")

LINES = (
    # torchrun --tee: every redraw glued to the next one's `[rankN]:` (as benchmarks/make_corpus.py writes)
    "[rank{r}]:\r eval:    0%|          | 0/50 [00:00<00:10, 4.8{d}it/s][rank{r}]:\r eval:   20%|\u2588\u2588"
    "        | 10/50 [00:02<00:08, 5.3{d}it/s][rank{r}]:\r eval:  100%|\u2588\u2588\u2588\u2588\u2588\u2588"
    "\u2588\u2588\u2588\u2588| 50/50 [00:10<00:00, 4.7{d}it/s]",
    "\r{d}%|#  | {d}/10 [00:0{d}<00:09,  2.00it/s]\rTraining: 5{d}%|##| {r}/9 [1:0{d}:00<?]\rdone {d}",
    "[rank{r}]:\r 1{d}%|   | 1{d}/100 [00:01<00:10] x\r[rank{r}]:",
    "no redraw here {d}\r[rank{r}]: \r%| {r}",
)


@pytest.mark.parametrize("line", LINES)
def test_plan_says_what_the_regexes_say_for_each_line_of_its_shape(line: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_module, "_CR_PLANS", {})
    for r, d in ((1, 2), (7, 9), (3, 0), (12, 5)):  # (one shape for the one-digit ranks, another for 12)
        text = line.format(r=r, d=d)
        plan = _cr_plan(text.encode(), text)
        assert plan == _cr_plan_of(text)
        segs = text.split("\r")
        assert len(plan) == len(segs)
        for (a, b, bar, env_only), seg in zip(plan, segs, strict=True):
            assert text[a:b] == seg
            assert env_only == (_ENVELOPE_ONLY_RE.fullmatch(seg) is not None)
            m = _BAR_SEG_RE.match(seg) if "%|" in seg else None
            assert (bar is None) == (m is None)
            if m is not None and bar is not None:
                got = SegMatch(text, bar.spans)
                assert [got[g] for g in GROUPS] == [m[g] for g in GROUPS]
                step = text[bar.step[0]:bar.step[1]]
                assert (bar.end - a, bar.head, step) == (m.end(), m["head"], m["step"])
                assert (bar.colons, bar.env) == (m[0].count(":"), m["env"] is not None)
    assert len(reader_module._CR_PLANS) == 2
