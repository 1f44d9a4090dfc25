"""Record every error-looking line (E/F/C level, "Error", "FAILED", "fatal", ...) with a masked template,
so a report can group the lines no specific rule explained.

Example: `[E socket.cpp:700] [c10d] Unexpected failure on host node-07` → template
`[c10d] Unexpected failure on host node-<num>` (levels come from the stripped envelope).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import cast

from hanglens import lazyre as re
from hanglens.model import ERROR_LEVELS, Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, quoted_in_prose

# Upper-case words count only as words: `TORCH_NCCL_ASYNC_ERROR_HANDLING: 3` in ProcessGroupNCCL's
# environments line is a setting, not an error (log-formats.md, ProcessGroupNCCL INFO lines).
ERROR_WORD_RE = re.compile(
    r"Error|Exception|Fatal|fatal|(?<![A-Z0-9_])(?:ERROR|FAILED|FATAL)(?![A-Z0-9_])"
)
# Parts of a traceback listing that merely mention an error type; the traceback parser reads them.
CODE_LINE_RE = re.compile(
    r"^\s*(?:File \"|raise\b|except\b|from\s+\S+\s+import\b|import\b|class\b|def\b|\^+\s*$)"
)

MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\""), "<str>"),
    (re.compile(r"\[?(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}\]?(?::\d+)?(?:<\d+>)?"), "<ip>"),
    (re.compile(r"\[[0-9a-fA-F]*:[0-9a-fA-F:]*:[0-9a-fA-F:]*\](?::\d+)?"), "<ip>"),
    (re.compile(r"(?:(?<![\w/.])(?:[A-Za-z]:)?/|(?<![\w/])\.{1,2}/|(?<![\w/])~/)[^\s:,;'\"()\[\]<>]+"),
     "<path>"),
    (re.compile(r"(?<![\w/])[\w.-]+(?:/[\w.-]+)+\.[A-Za-z]{1,4}\b"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"), "<num>"),
)
SPACE_RE = re.compile(r"\s+")
MAX_TEMPLATE = 200
MAX_INPUT = 1000
MAX_PER_TEMPLATE = 50
MAX_EVENTS = 5000


def template_of(text: str) -> str:
    """`text` with strings, IPs, paths, hex ids and numbers masked, whitespace collapsed, length capped."""
    t = text[:MAX_INPUT]
    for rx, mask in MASKS:
        t = rx.sub(mask, t)
    return SPACE_RE.sub(" ", t).strip()[:MAX_TEMPLATE]


class CatchallParser(Parser):
    """Error-looking lines → `error_line` (at most MAX_PER_TEMPLATE per template per file)."""

    name = "catchall"
    triggers = ("Error", "ERROR", "Exception", "FAILED", "Fatal", "fatal", "[E", "[F")
    emits = (
        EventSpec("error_line", ("template",),
                  "an error-looking line (E/F/C level, Error, FAILED, fatal) with numbers/ids/paths masked, "
                  "when no other parser read the line into an event"),
    )
    examples = (
        Example("[E socket.cpp:700] [c10d] Unexpected failure on host node-07 after 3 retries", "error_line",
                {"template": "[c10d] Unexpected failure on host node-<num> after <num> retries"},
                "torch 1.11-2.3 c10 envelope (level E)"),
        Example("[rank2]:[E1130 08:04:26.123456789 Foo.cpp:12] something odd at 0x7f3a2b in /usr/lib/libx.so",
                "error_line", {"template": "something odd at <hex> in <path>"}, "torch 2.4-2.9 c10 envelope"),
        Example("MyLibError: could not open '/data/shard-3.bin' from 10.0.0.7:29500", "error_line",
                {"template": "MyLibError: could not open <str> from <ip>"}, "any"),
        Example("[2024-05-28 14:04:27,950] [ERROR] [engine.py:101:step] skipped step 7", "error_line",
                {"template": "skipped step <num>"}, "DeepSpeed logger"),
        Example("E1130 08:04:26.123000 12345 torch/distributed/run.py:12] FAILED to start worker group",
                "error_line", {"template": "FAILED to start worker group"}, "torch 2.3-2.9 Python logging"),
    )
    near_misses = (
        "Since the fix the job no longer ends with `RuntimeError: NCCL communicator was aborted`, but is the "
        "warning below harmful?",
        "INFO: all good, 0 errors",
        "  File \"/opt/lib/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 346, in "
        "wrapper",
        "    raise ChildFailedError(",
        "[EXPERIMENT] starting run 4",
        "[PG ID 0 PG GUID 0(default_pg) Rank 3] ProcessGroupNCCL environments: NCCL version: 2.21.5, "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 1, "
        "TORCH_NCCL_RETHROW_CUDA_ERRORS: 1",
    )

    history = ("per_template", "total")
    # An error line another parser read (a watchdog timeout, an NCCL or CUDA error) is explained: only the
    # lines no parser knows become `error_line` (their counts and caps too).
    fallback = True

    def __init__(self) -> None:
        self.per_template: dict[str, int] = {}
        self.total = 0

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        """The caps count on from `earlier`'s counts: this part's events go on while both allow them (a
        line dropped here by a cap is dropped by the higher count too)."""
        if not self.same_as_fresh(earlier):
            return None
        before = cast(CatchallParser, earlier)
        per, total = dict(before.per_template), before.total
        out: dict[int, list[Event]] = {}
        for e in events:
            template = e.get("template")
            n = per.get(template, 0)
            if total >= MAX_EVENTS or n >= MAX_PER_TEMPLATE:
                out[id(e)] = []
                continue
            per[template] = n + 1
            total += 1
        self.per_template, self.total = per, total
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        if line.level not in ERROR_LEVELS and not any(
                not quoted_in_prose(text, m.start()) for m in islice(ERROR_WORD_RE.finditer(text), 4)):
            return ()   # (an error word only inside a sentence's backtick quote is prose, not an error line)
        if not text.strip() or CODE_LINE_RE.match(text) or self.total >= MAX_EVENTS:
            return ()
        template = template_of(text)
        n = self.per_template.get(template, 0)
        if n >= MAX_PER_TEMPLATE:
            return ()
        self.per_template[template] = n + 1
        self.total += 1
        return (self.event("error_line", line, template=template),)
