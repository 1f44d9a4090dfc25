"""accelerate's debug-mode shape check: the report of every process's tensor shape before a collective.

Source: huggingface/accelerate `src/accelerate/utils/operations.py` `verify_operation` (accelerate 0.2x to
1.16). With `ACCELERATE_DEBUG_MODE=1` (`accelerate launch --debug`), `gather`, `gather_for_metrics`,
`broadcast`, `reduce` and `pad_across_processes` first exchange each process's input shape (`gather_object`);
when they differ, every process raises the same

    accelerate.utils.operations.DistributedOperationException: Cannot apply desired operation due to shape
    mismatches. All shapes across devices must be valid.

    Operation: `accelerate.utils.operations.gather`
    Input shapes:
      - Process 0: [4]
      - Process 1: [5]

instead of entering the collective. `Process <i>` is accelerate's `process_index`, the global rank. Every
process prints the same list, so one copy is enough; the odd shapes are the minority (failure-signatures.md
section 2, "minority by numel/dtype").
"""

from __future__ import annotations

from collections.abc import Iterable

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser

HEAD = "Cannot apply desired operation due to shape mismatches"
OPERATION_RE = re.compile(r"^\s*Operation: `(?P<op>[\w.]{1,200})`\s*$")
SHAPES_RE = re.compile(r"^\s*Input shapes:\s*$")
PROCESS_RE = re.compile(r"^\s*- Process (?P<idx>\d{1,6}): (?P<shape>\[[\d, ]{0,200}\]|\S{1,200})\s*$")
MAX_GAP = 4   # lines between the exception and its list (a blank line, `Operation`, `Input shapes`)


class _Report:
    __slots__ = ("first", "gap", "op", "shapes")

    def __init__(self, first: LogLine) -> None:
        self.first = first
        self.gap = 0
        self.op: str | None = None
        self.shapes: dict[int, str] = {}


class AccelerateParser(Parser):
    """accelerate's `DistributedOperationException` shape report → operation_shapes.

    Example: `Cannot apply desired operation due to shape mismatches.` then `  - Process 2: [5]` lines
    """

    name = "accelerate"
    # the list's own words too: its lines come while a report is open anyway, and read alone they open nothing
    triggers = (HEAD, "Operation: `", "Input shapes:", "- Process ")
    emits = (
        EventSpec("operation_shapes", ("operation", "ranks", "shapes"),
                  "accelerate's debug-mode check found processes whose input shapes differ before a "
                  "collective (operation: the accelerate function; ranks: the process indexes, global ranks; "
                  "shapes: each one's shape as printed)"),
    )
    examples = (
        Example("accelerate.utils.operations.DistributedOperationException: Cannot apply desired operation "
                "due to shape mismatches. All shapes across devices must be valid.\n"
                "\n"
                "Operation: `accelerate.utils.operations.gather`\n"
                "Input shapes:\n"
                "  - Process 0: [4]\n"
                "  - Process 1: [4]\n"
                "  - Process 2: [5]\n",
                "operation_shapes",
                {"operation": "accelerate.utils.operations.gather", "ranks": [0, 1, 2],
                 "shapes": ["[4]", "[4]", "[5]"]},
                "accelerate 1.16.0 (observed here)"),
    )
    near_misses = (
        "Cannot apply desired operation",
        "  - Process 0 finished",
    )

    def __init__(self) -> None:
        self.open: dict[int | None, _Report] = {}

    def wants_more(self) -> bool:
        return bool(self.open)

    def close(self) -> Iterable[Event]:
        out = [ev for r in list(self.open) if (ev := self._end(r)) is not None]
        self.open = {}
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        rep = self.open.get(line.rank)
        if rep is not None:
            m = PROCESS_RE.match(text)
            if m and rep.op is not None:
                rep.shapes.setdefault(int(m["idx"]), m["shape"])
                return out
            if not rep.shapes and rep.gap < MAX_GAP:
                rep.gap += 1
                op = OPERATION_RE.match(text)
                if op:
                    rep.op = op["op"]
                    return out
                if SHAPES_RE.match(text) or not text.strip():
                    return out
            ev = self._end(line.rank)
            if ev is not None:
                out.append(ev)
        if HEAD in text:
            self.open[line.rank] = _Report(line)
        return out

    def _end(self, rank: int | None) -> Event | None:
        rep = self.open.pop(rank, None)
        if rep is None or rep.op is None or len(rep.shapes) < 2:
            return None
        ranks = sorted(rep.shapes)
        return self.event("operation_shapes", rep.first, operation=rep.op, ranks=ranks,
                          shapes=[rep.shapes[r] for r in ranks])
