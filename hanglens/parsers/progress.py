"""Read training-progress reports (step, iteration, epoch, progress bars) so the analysis knows how far
each rank got; a user regex with a named group `step` can be added for custom formats.

Example (torchtitan, envelope already stripped): `step:  10  loss:  7.8213  memory: 12.3GiB`
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, ClassVar, Protocol, cast

from hanglens import lazyre as re
from hanglens.errors import UsageError
from hanglens.model import Event, LogLine, SourceRef
from hanglens.parsers.base import EventSpec, Example, Parser, to_int

USER_TIMEOUT_S = 0.05
MAX_LABEL = 80
MAX_KEYS = 256

# Every pattern is linear in the line: numbers and runs of spaces are bounded (a number longer than
# NUM digits is not a step), nothing unbounded is followed by something that can fail, and the tqdm
# label is cut from the text before the match instead of being searched for (issue 12, item 7).
NUM = r"\d{1,20}(?!\d)"
SP = r"[ \t]{0,64}"
SP1 = r"[ \t]{1,64}"
BAR = r"\|[^|\r\n]{0,512}\|"
# A tqdm counter: a plain count, or with `unit_scale` tqdm's `format_sizeof` text (3 significant digits
# and an SI suffix: `14.2G/20.0G`, `512k/1.00M`, `0.00/20.0G`; tqdm/std.py `format_meter`), read by
# `scaled_int` as the count it stands for.
SCALED = r"\d{1,20}(?:\.\d{1,6})?[kMGTPEZY]?(?![\w.])"

# Named shapes, most specific first; each has a `step` group and may have `total`, `epoch`.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("megatron", re.compile(rf"\biteration{SP1}(?P<step>{NUM}){SP}/{SP}(?P<total>{NUM}){SP}\|")),
    ("torchtitan", re.compile(rf"(?<![\w])step:{SP}(?P<step>{NUM}){SP1}loss:")),
    # A serving engine's periodic throughput report: vLLM's stat logger (V0 `vllm/engine/metrics.py`
    # LoggingStatLogger, V1 `vllm/v1/metrics/loggers.py`: `Avg prompt throughput: <x> tokens/s, Avg
    # generation throughput: <y> tokens/s, Running: <n> reqs`) and sglang's scheduler (`Decode batch. ...
    # gen throughput (token/s): <y>`, python/sglang/srt/managers/scheduler.py). No step; a report with
    # tokens served is progress (an engine that logged an error and then served tokens kept running), an
    # all-zero one is not (an idle or stuck engine prints those too).
    ("throughput", re.compile(
        r"(?:Avg prompt throughput: (?P<tp_in>\d{1,12}(?:\.\d{1,6})?) tokens/s, Avg generation throughput: "
        r"|gen throughput \(token/s\): )(?P<tp_out>\d{1,12}(?:\.\d{1,6})?)")),
    ("lightning", re.compile(
        rf"(?<![\w])Epoch (?P<epoch>{NUM}):{SP}(?P<pct>\d{{1,3}})%{BAR}{SP}"
        rf"(?P<step>{NUM})/(?P<total>{NUM})")),
    ("tqdm", re.compile(
        rf"(?<!\d)(?P<pct>\d{{1,3}})%{BAR}{SP}(?P<step>{SCALED})/(?P<total>{SCALED})(?={SP}\[)")),
    ("tqdm", re.compile(
        rf"(?<![\w/.])(?P<step>{SCALED})/(?P<total>{SCALED}) \[\d{{1,9}}:\d\d(?::\d\d)?<"
        rf"(?:\d{{1,9}}:\d\d(?::\d\d)?|\?)")),
    ("tqdm", re.compile(rf"(?<![\w/.])(?P<step>{NUM})it \[\d{{1,9}}:\d\d(?::\d\d)?[,\]]")),
    # transformers' ProgressCallback.on_log writes the log dict with str(); 4.x kept the floats
    # (`'epoch': 0.5`), later releases format each float as f"{v:.4g}" first, so every value is quoted
    # (`'loss': '3.285', ..., 'epoch': '0.0625'`; transformers/trainer_callback.py).
    ("hf_trainer", re.compile(r"\{'loss': [^{}]{0,2048}?'epoch': '?(?P<epoch>\d{1,20}(?:\.\d{1,20})?)")),
    ("epoch_samples", re.compile(
        rf"(?<![\w])Epoch:? (?P<epoch>{NUM}) \[(?P<step>{NUM})/(?P<total>{NUM}) \(\d{{1,3}}%\)\]")),
    # torchvision's reference scripts' MetricLogger.log_every (references/classification/utils.py, also
    # detection, segmentation, video; copied by DETR, DeiT, MAE, DINO): header `Epoch: [<epoch>]`, then
    # `[<i>/<len>]` with i padded to len's width, joined by two spaces.
    ("metric_logger", re.compile(
        rf"(?<![\w])Epoch: \[(?P<epoch>{NUM})\]{SP}\[{SP}(?P<step>{NUM})/(?P<total>{NUM})\]")),
    # MMEngine's LogProcessor (mmengine/runner/log_processor.py `get_log_after_iter`): by epoch
    # `Epoch(train) [<epoch>][<iter>/<len>]` (the epoch right-aligned to the width of max_epochs, the
    # iteration to the width of the loader's length: `Epoch(train)  [9][ 10/270]`), by iteration
    # `Iter(train) [<iter>/<max_iters>]`. Only the training loop's counter: `Epoch(val)` / `Iter(test)` count
    # another loader's batches.
    ("mmengine", re.compile(
        rf"(?<![\w])(?:Epoch\(train\){SP}\[{SP}(?P<epoch>{NUM})\]|Iter\(train\){SP})"
        rf"\[{SP}(?P<step>{NUM})/(?P<total>{NUM})\]")),
    ("epoch_bracket", re.compile(
        rf"(?<![\w])Epoch \[(?P<epoch>{NUM})/(?P<epoch_total>{NUM})\](?:[^\r\n]{{0,256}}?(?<![\w])Step "
        rf"\[(?P<step>{NUM})/(?P<total>{NUM})\])?")),
    ("step", re.compile(
        rf"(?<![\w])(?:global_)?[Ss]tep(?! size){SP}(?:[:=#]{SP})?(?P<step>{NUM})(?!\.\d)"
        rf"(?:{SP}(?:/|of){SP}(?P<total>{NUM}))?")),
    # Not after a `/`: `episodes/iter=3`, `samples/it: 64` are a quantity per iteration (a rate or a
    # setting printed in a banner), not the loop's counter.
    ("iteration", re.compile(
        rf"(?<![\w/])(?:[Ii]ter(?:ation)?|it){SP}(?:[:=#]{SP})?(?P<step>{NUM})(?!\.\d)"
        rf"(?:{SP}/{SP}(?P<total>{NUM}))?")),
)
# A substring every match of PATTERNS[i] contains: a line without it skips that pattern.
PATTERN_LITERALS: tuple[str, ...] = (
    "iteration", "step:", "throughput", "%|", "%|", " [", "it [", "{'loss': ", "poch", "Epoch: [", "(train)",
    "Epoch [",
    "tep", "t",
)
EPOCH_RE = re.compile(
    rf"(?<![\w])[Ee]poch{SP}(?:[:=]{SP})?\[?(?P<epoch>\d{{1,20}}(?:\.\d{{1,20}})?)(?!\d)(?:{SP}/{SP}(?P<total>{NUM}))?"
)
# A line saying an epoch is over (`epoch 3 done`, `Epoch 3/10 finished`, `end of epoch 3`, `finished epoch
# 3`): the rank is past every step of that epoch (failure-signatures.md section 16 item 1, each rank's last
# progress marker; item 2, the end of an epoch as a boundary). Words only after the number, so `epoch 3 done
# in 12s, loss 0.4` counts and `epoch 3 step 10 done` (a step line, read by the `step` shape first) does not
# reach here.
EPOCH_END_RE = re.compile(
    rf"(?i)(?<![\w])epoch{SP}[:=]?{SP}\[?(?P<epoch>\d{{1,20}})\]?(?:{SP}/{SP}\d{{1,20}})?{SP}[:,]?{SP}"
    r"(?:is |has |has been )?(?:done|finished|complete|completed|ended|over)(?![\w-])"
    rf"|(?i:\b(?:end of|finished|completed|done with) epoch){SP}[:=]?{SP}\[?(?P<epoch2>\d{{1,20}})(?!\d)"
)
# The tqdm label is the text before the bar's percentage, after the last `|` or line break.
LABEL_CUT = ("|", "\r", "\n")
# tqdm's times after the counter: `[<elapsed><<remaining>` (`format_interval`: MM:SS, or H:MM:SS from an
# hour on; `?` while the rate is unknown), looked for in the few characters after the counter.
TIMES_RE = re.compile(r"\[(?P<elapsed>\d{1,9}:\d\d(?::\d\d)?)<(?P<remaining>\d{1,9}:\d\d(?::\d\d)?|\?)")
TIMES_LOOKAHEAD = 80

_user: dict[str, Any] = {"pattern": None}

# One plain tqdm redraw (what a bar prints between two `\r`): an optional label of letters, the
# percentage, the bar (tqdm's block characters, `#` or digits), `n/total`, `[elapsed<remaining` and the
# rate. The reader's bulk path (`ingest/reader.py`, `bar_fields`) reads such a redraw without
# `strip_prefixes` and `_builtin`: no prefix pattern matches a text of this shape (no digit, bracket,
# dot or colon before the label's end), and with no `poch`, `step` or `iteration` in the label the
# first shape of PATTERNS that matches it is the first `tqdm` one, at the percentage. Linear: bounded
# pieces, no nested quantifiers.
BAR_REDRAW_RE = re.compile(
    r"(?P<head>[ \t]{0,8}(?:[A-Za-z][A-Za-z _-]{0,62}:[ \t]{0,8})?)(?P<pct>\d{1,3})%"
    r"\|[ #=>0-9\u2588-\u258f-]{0,512}\|[ \t]{0,64}(?P<step>\d{1,18})/(?P<total>\d{1,18}) "
    r"\[(?P<elapsed>\d{1,9}:\d\d(?::\d\d)?)<(?P<remaining>\d{1,9}:\d\d(?::\d\d)?|\?)"
    r"(?:, {0,4}\d{1,12}(?:\.\d{1,6})?(?:it/s|s/it))?\]"
)
_BAR_LABEL_BANNED = ("poch", "tep", "teration", "ter")


def bar_label(head: str) -> tuple[bool, str | None]:
    """(usable, label) for the text before a `BAR_REDRAW_RE` match's percentage: `usable` is False when
    the label holds a word another shape reads (then `_builtin` must decide)."""
    if any(w in head for w in _BAR_LABEL_BANNED):
        return False, None
    return True, _label(head, len(head))


class Groups(Protocol):
    """A regex match's groups by name (an `re.Match`, or the reader's match read from a line's plan)."""

    def __getitem__(self, name: str, /) -> str | Any: ...


def bar_fields(m: Groups, label: str | None) -> dict[str, Any]:
    """The fields `_builtin` gives for the redraw `m` (a `BAR_REDRAW_RE` match) whose label is `label`."""
    return {"step": int(m["step"]), "total": int(m["total"]), "epoch": None, "pattern": "tqdm",
            "label": label, "elapsed_s": _interval(m["elapsed"]), "remaining_s": _interval(m["remaining"])}



def _literal_of(pattern: str) -> str | None:
    """The longest plain-literal run (>= 3 chars) a match of `pattern` must contain, for the prefilter."""
    runs: list[str] = []
    cur = ""
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1:i + 2]
            if nxt and not nxt.isalnum():
                cur += nxt
            else:
                runs.append(cur)
                cur = ""
            i += 2
            continue
        if ch in "[(|)^$.":
            if ch == "|":
                return None  # an alternation: no single literal is required
            runs.append(cur)
            cur = ""
            if ch == "[":
                j = pattern.find("]", i + 2)
                i = n if j < 0 else j + 1
                continue
            if ch == "(" and pattern[i + 1:i + 2] == "?":
                j = pattern.find(">", i) if pattern[i + 2:i + 4] == "P<" else i + 2
                i = i + 2 if j < 0 else j + 1
                continue
            i += 1
            continue
        if ch in "*?+{":
            cur = cur[:-1]  # the quantified character is optional or repeated
            runs.append(cur)
            cur = ""
            if ch == "{":
                j = pattern.find("}", i)
                i = n if j < 0 else j + 1
                continue
            i += 1
            continue
        cur += ch
        i += 1
    runs.append(cur)
    best = max(runs, key=len)
    return best if len(best) >= 3 else None


def set_user_pattern(regex_text: str | None, trigger: str | None = None) -> None:
    """Add a user regex with a named group `step` (optional `total`, `epoch`); None removes it.

    `trigger` is a literal every matching line contains (the reader only feeds lines holding a trigger);
    when omitted it is derived from the regex. Call before building readers.
    """
    base = tuple(t for t in ProgressParser.triggers if t not in ProgressParser.user_triggers)
    ProgressParser.user_triggers = ()
    _user["pattern"] = None
    if regex_text is None:
        ProgressParser.triggers = base
        return
    import regex  # only for a user pattern: the module costs a few tens of milliseconds to import

    try:
        compiled = regex.compile(regex_text)
    except regex.error as exc:
        raise UsageError(f"progress pattern does not compile: {exc}", hint="use Python regex syntax") from exc
    if "step" not in compiled.groupindex:
        raise UsageError("progress pattern needs a named group `step`", hint="e.g. r'it=(?P<step>\\d+)'")
    lit = trigger or _literal_of(regex_text)
    if not lit:
        raise UsageError("cannot derive a literal trigger from the progress pattern",
                         hint="pass a literal substring every matching line contains")
    _user["pattern"] = compiled
    ProgressParser.user_triggers = (lit,)
    ProgressParser.triggers = (*base, lit)


def _label(text: str, end: int) -> str | None:
    """The tqdm `desc` before a bar: the text before `end` back to the last `|` or line break."""
    head = text[max(0, end - 4 * MAX_LABEL):end]
    cut = max(head.rfind(c) for c in LABEL_CUT)
    label = head[cut + 1:].strip().rstrip(":").strip()[:MAX_LABEL]
    return label or None


def interval_s(text: str | None) -> int | None:
    """Seconds of a tqdm interval (`MM:SS` or `H:MM:SS`), None for `?` or anything else."""
    if not text or ":" not in text:
        return None
    parts = text.split(":")
    if len(parts) > 3 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    secs = 0
    for p in parts:
        secs = secs * 60 + int(p)
    return secs


# A bar's times repeat (every bar of an epoch counts the same seconds): `interval_s`, remembered.
_interval = lru_cache(maxsize=4096)(interval_s)


def _times(text: str, start: int, end: int) -> tuple[int | None, int | None]:
    """(elapsed, remaining) seconds of the tqdm bracket in or right after the counter at `start:end`."""
    m = TIMES_RE.search(text, start, end + TIMES_LOOKAHEAD)
    if m is None:
        return None, None
    return interval_s(m["elapsed"]), interval_s(m["remaining"])


_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "Z": 10**21, "Y": 10**24}


def scaled_int(value: str | None) -> int | None:
    """A tqdm counter as an integer: `450` -> 450, `14.2G` -> 14_200_000_000, `0.00` -> 0 (see `SCALED`;
    the factor is 1000 whatever `unit_divisor` was: the counter only has to order the reports)."""
    if value is None or not value:
        return None
    mult = _SI.get(value[-1])
    number = value[:-1] if mult else value
    if mult is None and "." not in number:
        return to_int(number)
    try:
        return to_int(str(int(float(number) * (mult or 1))))
    except ValueError:
        return None


def _num(value: str | None) -> int | float | None:
    if value is None:
        return None
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        return None


MAX_DIFFS = 32
# Restarts kept per series: the first KEEP_RESTARTS as they come, then the latest KEEP_RESTARTS (given out
# at the end of the file) and the dropped ones that reached the highest and the lowest step. An eval bar that
# restarts every few hundred steps would otherwise keep two events per run, and the events of a long log
# would grow with its length (issue 9: memory bounded by a window, not by the input).
KEEP_RESTARTS = 8


# A tqdm redraw the reader read in bulk, before its LogLine is built: its text, line number and the file's
# (path, rank, host, local rank, attempt, stream), which `bar_line` makes the LogLine of.
BarStub = tuple[str, int, tuple[Any, ...]]


def bar_line(stub: BarStub) -> LogLine:
    """The LogLine of a redraw read without prefixes (see `BarStub`): the file's rank, host and stream."""
    text, num, (path, rank, host, local_rank, attempt, stream) = stub
    return LogLine(text=text, raw=text, ref=SourceRef(path, num), rank=rank, host=host, local_rank=local_rank,
                   attempt=attempt, stream=stream)


class _Pending:
    """A series' latest report: its line (from a `BarStub`, built when first needed) and its fields."""

    __slots__ = ("_line", "_stub", "fields")

    def __init__(self, line: LogLine | None, fields: dict[str, Any], stub: BarStub | None = None) -> None:
        self._line, self._stub, self.fields = line, stub, fields

    @property
    def line(self) -> LogLine:
        line = self._line
        if line is None:
            assert self._stub is not None
            line = self._line = bar_line(self._stub)
            self._stub = None
        return line

    @property
    def num(self) -> int:
        """The report's line number."""
        return self._line.ref.line if self._line is not None else cast(BarStub, self._stub)[1]


class _Held:
    """A restart held back (past the first KEEP_RESTARTS of its series): its reports, made events only when
    it is given out at the end (most held restarts are dropped before: an eval bar restarting thousands of
    times would otherwise build two events and their lines per restart)."""

    __slots__ = ("reports",)

    def __init__(self, reports: tuple[_Pending, ...]) -> None:
        self.reports = reports


Pair = list[Event] | _Held


def _count(seen: dict[int, list[int]], p_step: int, step: int) -> None:
    have = seen.get(step - p_step)
    if have is not None:
        have[0] += 1
    elif len(seen) < MAX_DIFFS:
        seen[step - p_step] = [1, p_step]


def _drop(ext: dict[str, tuple[int, Pair]], old: Pair) -> None:
    """A held restart dropped from the window: keep it when it reached the highest or the lowest step."""
    if isinstance(old, _Held):
        steps = [s for p in old.reports if isinstance(s := p.fields.get("step"), int)]
    else:
        steps = [s for e in old if isinstance(s := e.get("step"), int)]
    if steps:
        for which, value in (("max", max(steps)), ("min", min(steps))):
            have = ext.get(which)
            if have is None or (value > have[0] if which == "max" else value < have[0]):
                ext[which] = (value, old)


def _hold(held: deque[Pair], extremes: Any, key: Any, pair: Pair) -> None:
    """Hold `pair` among the latest KEEP_RESTARTS restarts; the one it pushes out may be an extreme
    (`extremes` is the series' own mapping when `key` is None, else the parser's, by key)."""
    held.append(pair)
    if len(held) > KEEP_RESTARTS:
        old = held.popleft()
        if key is None:
            _drop(extremes, old)
        else:
            ext = extremes.setdefault(key, {})
            _drop(ext, old)
            if not ext:
                del extremes[key]


def _gap_after(diffs: dict[int, list[int]]) -> int | None:
    """The step after which a series skipped a report: an increment that is a multiple of its cadence.

    The cadence is the most common increment (seen at least twice); a larger increment that is a whole
    multiple of it means reports are missing. Returns the step before the earliest such jump.
    """
    if not diffs:
        return None
    cadence, (count, _) = max(diffs.items(), key=lambda kv: (kv[1][0], -kv[0]))
    if count < 2:
        return None
    jumps = [first for d, (_, first) in diffs.items() if d > cadence and d % cadence == 0]
    return min(jumps) if jumps else None


# Bars drawn by tqdm (plain tqdm, and Lightning's TQDMProgressBar).
_TQDM_PATTERNS = frozenset({"tqdm", "lightning"})


def redraw_in_place(prev: dict[str, Any], cur: dict[str, Any]) -> bool:
    """Is `cur` a tqdm redraw of the bar `prev` left, at the same count: no report of its own?

    tqdm draws a bar on `update()` (and on `set_postfix`/`refresh`), and once more when the bar is closed:
    `tqdm.close()` redraws it with the count it had and the time elapsed since it started (tqdm/std.py
    `close`, `self.display(pos=0)`), and `__del__` calls `close()` when the bar is collected, which after
    an uncaught exception is at interpreter exit, after the traceback. That redraw comes after the rank's
    error with a longer `elapsed`, but the count did not move: the bar stopped where the earlier redraw
    left it. The series keeps the earlier report (the one that reached the count), so the error does not
    look survived and the bar does not look like a slow phase still running when the peers gave up.
    """
    step = cur["step"]
    return (cur["pattern"] in _TQDM_PATTERNS and step is not None and step == prev["step"]
            and cur["epoch"] == prev["epoch"] and prev["pattern"] == cur["pattern"])


def series_owner(line: LogLine) -> Any:
    """Whose progress series `line` continues (the first field of the parser's series key): its rank, or
    for a line without one its launcher-prefixed stream (`[1,2]<stdout>:`), so that two processes' step
    counters are not read as one going back and forth."""
    return line.rank if line.rank is not None or line.writer is None else line.writer


class ProgressParser(Parser):
    """Training progress → `progress` (first and last report of each series, plus restarts)."""

    name = "progress"
    triggers: ClassVar[tuple[str, ...]] = ("step", "Step", "iter", "Iter", "poch", "%|", "it/s", "s/it",
                                           "throughput")
    user_triggers: ClassVar[tuple[str, ...]] = ()
    repeats_matter: ClassVar[bool] = True
    emits = (
        EventSpec("progress", ("step", "total", "epoch", "pattern", "label", "gap_after", "elapsed_s",
                               "remaining_s"),
                  "a training progress report; per series only the first, the last, and any report where "
                  "the counter went backwards or the epoch changed are kept (of a series restarting more "
                  f"than {2 * KEEP_RESTARTS} times: the first {KEEP_RESTARTS} and the last {KEEP_RESTARTS} "
                  "restarts, and those reaching its highest and lowest step); the last report of a series "
                  "carries `gap_after`, the step after which the series skipped a report its own cadence "
                  "says it should have printed (e.g. 1, 2, 4 → 2), or None; a tqdm bar also gives "
                  "`elapsed_s` and `remaining_s` (seconds, from `[<elapsed><<remaining>`; None for `?`)"),
    )
    examples = (
        Example("step 120 | loss 2.31", "progress", {"step": 120, "pattern": "step"},
                "generic training loops"),
        Example("Step 50/1000, loss=3.2", "progress", {"step": 50, "total": 1000, "pattern": "step"},
                "generic training loops"),
        Example("iteration 42: loss 0.71", "progress", {"step": 42, "pattern": "iteration"},
                "generic training loops"),
        Example("Iter 7 lr 0.001", "progress", {"step": 7, "pattern": "iteration"}, "generic training loops"),
        Example("  5%|▌         | 50/1000 [00:10<03:10,  5.00it/s]", "progress",
                {"step": 50, "total": 1000, "pattern": "tqdm"}, "tqdm 4.x"),
        Example("Training:  45%|████▌     | 450/1000 [01:30<01:50,  4.98it/s, loss=2.1]", "progress",
                {"step": 450, "total": 1000, "pattern": "tqdm", "label": "Training", "elapsed_s": 90,
                 "remaining_s": 110}, "tqdm 4.x with desc"),
        Example("Packing shards (num_proc=16):  61%|██████    | 7310/12000 [1:02:07<39:51,  1.96 examples/s]",
                "progress", {"step": 7310, "total": 12000, "pattern": "tqdm", "label":
                             "Packing shards (num_proc=16)", "elapsed_s": 3727, "remaining_s": 2391},
                "HF datasets `map` with tqdm 4.x, past an hour (H:MM:SS)"),
        Example("{'loss': 2.3041, 'grad_norm': 1.25, 'learning_rate': 4.9e-05, 'epoch': 0.5}", "progress",
                {"epoch": 0.5, "pattern": "hf_trainer", "step": None}, "HF Trainer 4.x"),
        Example("{'loss': '1.874', 'grad_norm': '0.6613', 'learning_rate': '3.2e-05', 'epoch': '2.125'}",
                "progress", {"epoch": 2.125, "pattern": "hf_trainer", "step": None},
                "HF Trainer 5.x (floats formatted with .4g, quoted)"),
        Example(" 25/100 [00:10<00:30,  2.50it/s]", "progress", {"step": 25, "total": 100, "pattern": "tqdm"},
                "HF Trainer / tqdm without bar"),
        Example("Downloading data:  31%|███       | 6.19G/20.0G [13:02<29:05, 7.91MB/s]", "progress",
                {"step": 6_190_000_000, "total": 20_000_000_000, "pattern": "tqdm",
                 "label": "Downloading data", "elapsed_s": 782, "remaining_s": 1745},
                "tqdm 4.x with unit_scale (HF datasets download)"),
        Example("model.safetensors:  51%|█████     | 512k/1.00M [00:01<00:01, 410kB/s]", "progress",
                {"step": 512_000, "total": 1_000_000, "pattern": "tqdm", "label": "model.safetensors"},
                "tqdm 4.x with unit_scale (HF hub download)"),
        Example("Epoch 3:  45%|████▌     | 450/1000 [01:30<01:50, 4.98it/s, v_num=0]", "progress",
                {"step": 450, "total": 1000, "epoch": 3, "pattern": "lightning"}, "Lightning 2.x"),
        Example("[rank0]:[titan] 2025-01-01 09:14:03,120 - root - INFO - step:  10  loss:  7.8213  memory: "
                "12.3GiB",
                "progress", {"step": 10, "pattern": "torchtitan"}, "torchtitan 0.x"),
        Example(" iteration       10/    1000 | consumed samples:          640 | elapsed time per iteration "
                "(ms): 812.3",
                "progress", {"step": 10, "total": 1000, "pattern": "megatron"}, "Megatron-LM"),
        Example("Epoch [2/10], Step [100/600], Loss: 0.2231", "progress",
                {"epoch": 2, "step": 100, "total": 600, "pattern": "epoch_bracket"},
                    "PyTorch tutorial loops"),
        Example("Epoch: [1]  [ 40/390]  eta: 0:01:02  lr: 0.1  img/s: 512.3  loss: 1.8731 (1.9022)  "
                "time: 0.1610", "progress",
                {"epoch": 1, "step": 40, "total": 390, "pattern": "metric_logger"},
                "torchvision references (MetricLogger.log_every)"),
        Example("Epoch 10/10: 240it [05:55,  1.48s/it]", "progress",
                {"step": 240, "epoch": 10, "pattern": "tqdm"},
                "tqdm without total"),
        Example("Train Epoch: 1 [25600/60000 (43%)]\tLoss: 0.290", "progress",
                {"epoch": 1, "step": 25600, "total": 60000, "pattern": "epoch_samples"},
                "pytorch/examples (samples seen in the epoch)"),
        Example("INFO 03-11 14:10:02 [loggers.py:80] Avg prompt throughput: 2210.7 tokens/s, Avg generation "
                "throughput: 402.3 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 7.1%",
                "progress", {"step": None, "pattern": "throughput"}, "vLLM 0.8 V1 stat logger"),
        Example("[2025-01-22 08:30:11 TP0] Decode batch. #running-req: 31, #token: 9120, token usage: 0.06, "
                "gen throughput (token/s): 1201.55, #queue-req: 0",
                "progress", {"step": None, "pattern": "throughput"}, "sglang scheduler"),
        Example("INFO:root:epoch: 4", "progress", {"epoch": 4, "step": None, "pattern": "epoch"},
                "generic training loops"),
        Example("[rank 3] epoch 7 finished, val acc 0.812", "progress",
                {"epoch": 7, "step": None, "pattern": "epoch_end"}, "generic training loops (written here)"),
        Example("INFO trainer: end of epoch 12 (3410 samples)", "progress",
                {"epoch": 12, "step": None, "pattern": "epoch_end"}, "generic training loops (written here)"),
    )
    near_misses = (
        "    optimizer.step()",
        "  File \"train.py\", line 88, in train_step",
        "***** Running training *****   Total optimization steps = 1000",
        "max_steps=1000 warmup_steps=100",
        "lr_scheduler: StepLR step size 30",
        "gradient_accumulation_steps: 4",
        "Number of iterations to run: 1000",
        "actor up: world=4 episodes/iter=3 iters=6",
        "GPU memory 61.2G/80.0G reserved",
        "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 48 reqs",
    )

    def __init__(self) -> None:
        self.last: dict[tuple[Any, ...], _Pending] = {}
        self.emitted: dict[tuple[Any, ...], dict[str, Any]] = {}
        # Per series: step increment -> [times seen, step before its first occurrence]; bounded.
        self.diffs: dict[tuple[Any, ...], dict[int, list[int]]] = {}
        # Per series: restarts seen, the held latest ones, the dropped ones reaching the max / min step.
        self.restarts: dict[tuple[Any, ...], int] = {}
        self.held: dict[tuple[Any, ...], deque[Pair]] = {}
        self.extremes: dict[tuple[Any, ...], dict[str, tuple[int, Pair]]] = {}
        # Per series: its first report's event and fields, and the restarts given out as they came (for
        # `take_history`: a part of a file read from a fresh start emitted them as if the series began there).
        self.first: dict[tuple[Any, ...], tuple[Event, dict[str, Any]]] = {}
        self.told: dict[tuple[Any, ...], list[list[Event]]] = {}

    def feed(self, line: LogLine) -> Iterable[Event]:
        fields = self._match(line.text)
        if fields is None:
            return ()
        return self.feed_fields(line, fields)

    def feed_fields(self, line: LogLine, fields: dict[str, Any]) -> list[Event]:
        """`feed` of a line whose report the caller read already (`fields` as `_match` gives them)."""
        key = (series_owner(line), line.local_rank, fields["pattern"], fields["label"])
        return self._report(key, _Pending(line, fields))

    def feed_bar(self, key: tuple[Any, ...], stub: BarStub, fields: dict[str, Any]) -> list[Event]:
        """`feed_fields` of a tqdm redraw the reader read in bulk (`bar_line(stub)` is its LogLine, `key` the
        series `feed_fields` would give it): the LogLine is built only when an event or a later report
        needs it (a restart held back past the first KEEP_RESTARTS needs none until the end)."""
        return self._report(key, _Pending(None, fields, stub))

    def _report(self, key: tuple[Any, ...], cur: _Pending) -> list[Event]:
        fields = cur.fields
        prev = self.last.get(key)
        if prev is not None and redraw_in_place(prev.fields, fields):
            return []
        self.last[key] = cur
        if prev is None:
            if len(self.emitted) >= MAX_KEYS:
                del self.last[key]
                return []
            self.emitted[key] = fields
            first = self.event("progress", cur.line, **fields)
            self.first[key] = (first, fields)
            return [first]
        out: list[Event] = []
        p_step, step = prev.fields["step"], fields["step"]
        backwards = p_step is not None and step is not None and step < p_step
        new_epoch = fields["epoch"] is not None and fields["epoch"] != prev.fields["epoch"]
        if p_step is not None and step is not None and step > p_step:
            self.count_step(key, p_step, step)
        if backwards or new_epoch:
            self.diffs.pop(key, None)
            reports = (cur,) if self.emitted.get(key) is prev.fields else (prev, cur)
            self.emitted[key] = fields
            return self._restart(key, reports)
        return out

    def _restart(self, key: tuple[Any, ...], reports: tuple[_Pending, ...]) -> list[Event]:
        """The events of a restart (its `reports`) to give out now: all of the first KEEP_RESTARTS of the
        series; later ones are held (the latest KEEP_RESTARTS, and the extremes of those dropped) until
        `close`, and become events only if given out then."""
        n = self.restarts.get(key, 0)
        self.restarts[key] = n + 1
        if n < KEEP_RESTARTS:
            pair = self._made(reports)
            self.told.setdefault(key, []).append(pair)
            return pair
        held = self.held.setdefault(key, deque())
        _hold(held, self.extremes, key, _Held(reports))
        return []

    def _made(self, reports: tuple[_Pending, ...]) -> list[Event]:
        """The progress events of a restart's reports."""
        return [self.event("progress", p.line, **p.fields) for p in reports]

    def _events(self, pair: Pair) -> list[Event]:
        """The events of a restart given out at the end."""
        return self._made(pair.reports) if isinstance(pair, _Held) else pair

    history = ("last", "emitted", "diffs", "restarts", "held", "extremes", "first", "told")

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        """Continue `earlier`'s series with this part's: a series met before gets this part's first report
        read against its latest one (no event when it moves forward; a restart when it goes back), the
        increments counted on, and the restarts numbered on (those past the first KEEP_RESTARTS held).
        None when a bound was reached (MAX_KEYS series, MAX_DIFFS increments): what it dropped is lost."""
        before = cast(ProgressParser, earlier)
        if not self.same_as_fresh(earlier) or len(self.emitted) >= MAX_KEYS:
            return None
        if len(before.emitted) + sum(1 for k in self.emitted if k not in before.emitted) > MAX_KEYS:
            return None
        if any(len(self.diffs.get(k, ())) >= MAX_DIFFS for k in self.last if k in before.last):
            return None
        last, emitted = {**before.last, **self.last}, {**before.emitted, **self.emitted}
        for key, (_, fields1) in self.first.items():
            # This part's series stayed at the count the earlier part left it: a redraw in place, no report.
            prior, latest = before.last.get(key), self.last.get(key)
            if prior is not None and latest is not None and latest.fields is fields1 \
                    and redraw_in_place(prior.fields, fields1):
                last[key] = prior
        diffs, restarts = {**before.diffs, **self.diffs}, {**before.restarts, **self.restarts}
        held, extremes = {**before.held, **self.held}, {**before.extremes, **self.extremes}
        out: dict[int, list[Event]] = {}
        for key, (e1, fields1) in self.first.items():
            p = before.last.get(key)
            if p is None:
                continue  # a series this part began: its state stands
            d = {inc: list(v) for inc, v in before.diffs.get(key, {}).items()}
            n = before.restarts.get(key, 0)
            hk: deque[Pair] = deque(before.held.get(key, ()))
            ext = dict(before.extremes.get(key, {}))
            told = before.emitted.get(key)
            p_step, step = p.fields["step"], fields1["step"]
            back = (p_step is not None and step is not None and step < p_step) or \
                (fields1["epoch"] is not None and fields1["epoch"] != p.fields["epoch"])
            if p_step is not None and step is not None and step > p_step:
                _count(d, p_step, step)
            if back:
                d = {}
                pair = ([] if told is p.fields else [self.event("progress", p.line, **p.fields)]) + [e1]
                told = fields1
                if n < KEEP_RESTARTS:
                    out[id(e1)] = pair
                else:
                    out[id(e1)] = []
                    _hold(hk, ext, None, pair)
                n += 1
            else:
                out[id(e1)] = []
            mine = self.restarts.get(key, 0)
            for i, pair in enumerate(self.told.get(key, ())):
                # This part's first restart right after its first report did not give that report again
                # (it was given as the first); the file had not given it.
                whole = [e1, *pair] if i == 0 and not back and len(pair) == 1 else pair
                if whole is not pair and redraw_in_place(p.fields, fields1):
                    # That first report redrew the earlier part's latest in place: the restart's report
                    # before it is the earlier part's (given already, or not), as a whole read has it.
                    lead = [] if told is p.fields else [self.event("progress", p.line, **p.fields)]
                    whole = [*lead, *pair] if lead else pair
                if n + i < KEEP_RESTARTS:
                    if whole is not pair:
                        out[id(pair[0])] = whole
                    continue
                for e in pair:
                    out[id(e)] = []
                _hold(hk, ext, None, whole)
            if key in self.extremes:  # this part dropped held restarts itself: all before them go too
                while hk:
                    _drop(ext, hk.popleft())
                for which, (value, kept) in self.extremes[key].items():
                    have = ext.get(which)
                    if have is None or (value > have[0] if which == "max" else value < have[0]):
                        ext[which] = (value, kept)
                hk = deque(self.held[key])
            else:
                for kept in self.held.get(key, ()):
                    _hold(hk, ext, None, kept)
            if mine:
                d = {inc: list(v) for inc, v in self.diffs.get(key, {}).items()}
                told = self.emitted[key]
            else:
                for inc, (times, at) in self.diffs.get(key, {}).items():
                    if inc in d:
                        d[inc][0] += times
                    elif len(d) < MAX_DIFFS:
                        d[inc] = [times, at]
            diffs[key], restarts[key] = d, n + mine
            if told is not None:
                emitted[key] = told
            held.pop(key, None)
            extremes.pop(key, None)
            if hk:
                held[key] = hk
            if ext:
                extremes[key] = ext
        self.last, self.emitted, self.diffs, self.restarts = last, emitted, diffs, restarts
        self.held, self.extremes = held, extremes
        return out

    # -- the interface the ingest fast path uses (it feeds step lines without the per-line machinery) --
    def last_step(self, key: tuple[Any, ...]) -> tuple[bool, int | None]:
        """(has the series started, the step of its latest report)."""
        prev = self.last.get(key)
        return (False, None) if prev is None else (True, prev.fields["step"])

    def count_step(self, key: tuple[Any, ...], p_step: int, step: int) -> None:
        """Count one forward increment of a series (bounded: at most MAX_DIFFS distinct increments)."""
        seen = self.diffs.get(key)
        if seen is None:
            seen = self.diffs[key] = {}
        _count(seen, p_step, step)

    def remember(self, key: tuple[Any, ...], line: LogLine, fields: dict[str, Any]) -> None:
        """Make `line` the series' latest report without emitting anything (it moved the series forward)."""
        self.last[key] = _Pending(line, fields)

    def remember_bar(self, key: tuple[Any, ...], stub: BarStub, fields: dict[str, Any]) -> None:
        """`remember` of a tqdm redraw read in bulk (see `feed_bar`)."""
        self.last[key] = _Pending(None, fields, stub)

    def close(self) -> Iterable[Event]:
        out: list[Event] = []
        for k in sorted(self.held, key=repr):
            kept = [pair for _, (_, pair) in sorted(self.extremes.get(k, {}).items())] + list(self.held[k])
            seen: set[int] = set()
            for pair in kept:
                if id(pair) not in seen:
                    seen.add(id(pair))
                    out.extend(self._events(pair))
        self.held, self.extremes, self.restarts = {}, {}, {}
        # Series whose last reports share a physical line (tqdm redraws joined by `\r`: Lightning's
        # sanity-check bar, then its epoch bar) come out in the order they began, which is the order they
        # were drawn there (a later bar starts after an earlier one closed), not in the order of their keys.
        order = {k: i for i, k in enumerate(self.last)}
        for k, p in sorted(self.last.items(), key=lambda kv: (kv[1].num, order[kv[0]])):
            gap = _gap_after(self.diffs.get(k, {}))
            if self.emitted.get(k) is not p.fields or gap is not None:
                out.append(self.event("progress", p.line, **{**p.fields, "gap_after": gap}))
        self.last = {}
        self.diffs = {}
        return out

    @staticmethod
    def reads(raw: str) -> bool:
        """False when no built-in shape matches anywhere in `raw`, a whole line before its prefixes are
        stripped: then `feed` reads nothing in it either (without a user pattern, see `set_user_pattern`).

        A line's text is a suffix of it behind a prefix that ends in `]`, `:`, `)`, `>` or a space, and
        every shape's look-behind treats those like the start of the text, so a shape matching the text
        matches the whole line too.
        """
        return ProgressParser._builtin(raw) is not None

    @staticmethod
    def _match(text: str) -> dict[str, Any] | None:
        user = _user["pattern"]
        if user is not None:
            try:
                m = user.search(text, timeout=USER_TIMEOUT_S)
            except TimeoutError:
                m = None
            if m:
                gd = m.groupdict()
                step = to_int(gd.get("step"))
                if step is not None:
                    return {"step": step, "total": to_int(gd.get("total")), "epoch": _num(gd.get("epoch")),
                            "pattern": "user", "label": None}
        return ProgressParser._builtin(text)

    @staticmethod
    def _builtin(text: str) -> dict[str, Any] | None:
        for (name, rx), literal in zip(PATTERNS, PATTERN_LITERALS, strict=True):
            if literal not in text:
                continue
            m2 = rx.search(text)
            if not m2:
                continue
            gd = m2.groupdict()
            if name == "throughput":
                if not any(float(v) for v in (gd.get("tp_in"), gd["tp_out"]) if v is not None):
                    return None     # nothing served since the last report
                return {"step": None, "total": None, "epoch": None, "pattern": name, "label": None}
            epoch = _num(gd.get("epoch"))
            if epoch is None:
                e = EPOCH_RE.search(text)
                epoch = _num(e["epoch"]) if e else None
            label = _label(text, m2.start()) if name == "tqdm" and gd.get("pct") else None
            if label is not None and EPOCH_RE.fullmatch(label):
                label = None
            conv = scaled_int if name == "tqdm" else to_int
            out: dict[str, Any] = {"step": conv(gd.get("step")), "total": conv(gd.get("total")),
                                   "epoch": epoch, "pattern": name, "label": label}
            if name in ("tqdm", "lightning"):
                out["elapsed_s"], out["remaining_s"] = _times(text, m2.start(), m2.end())
            return out
        end = EPOCH_END_RE.search(text)
        if end:
            return {"step": None, "total": None, "epoch": _num(end["epoch"] or end["epoch2"]),
                    "pattern": "epoch_end", "label": None}
        e = EPOCH_RE.search(text)
        if e:
            return {"step": None, "total": None, "epoch": _num(e["epoch"]), "pattern": "epoch", "label": None}
        return None
