"""Read the text report of PyTorch's Flight Recorder analyzer (`fr_trace` / `torchfrtrace`).

Users run the upstream analyzer over the per-rank dumps and paste its output instead of the dumps. For
the first collective that not every member rank recorded, it prints a block (log-formats.md section 8.4;
pytorch/pytorch tools/flight_recorder/components/utils.py, moved to torch/distributed/flight_recorder):

    Not all ranks joining collective, sequence number: 1882      (older: `... collective 5 at entry 4`)
    group info: 0:default_pg
    collective: nccl:all_reduce
    missing ranks: {37}
    input sizes: [[1]]
    output sizes: [[1]]
    expected ranks: 64
    collective state: scheduled
    collective stack trace:
     all_reduce at /…/distributed_c10d.py:2806

→ one `fr_report_missing` event (seq=1882, pg=0, pg_desc=default_pg, op=ALLREDUCE, missing_ranks=[37],
expected_ranks=64). `missing ranks` are the ranks the analyzer found without an entry for that collective:
the ranks the others waited for (failure-signatures.md section 0.2, R2). The ranks are the group's global
ranks as the dumps' `pg_config` lists them.

A report pasted without its title line is read from its `group info: <pg>:<desc>` line when the next line is
the analyzer's `collective: <backend>:<op>` and a `missing ranks:` line follows in the block: that pair of
detail lines is the analyzer's template and nothing else prints it; such a block has no sequence number.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, int_list, op_type, to_count

HEAD_RE = re.compile(
    r"Not all ranks joining collective(?:, sequence number: (?P<seq>\d{1,19})|"
    r" (?P<seq_old>\d{1,19}) at entry (?P<entry>\d{1,19}))"
)
GROUP_RE = re.compile(r"^\s*group info: (?P<pg>[^:\s]{1,128}):(?P<desc>\S{0,256})\s*$")
OP_RE = re.compile(r"^\s*collective: (?:nccl|gloo|xccl|[a-z]{1,16}):(?P<op>[\w .<>-]{1,128}?)\s*$")
MISSING_RE = re.compile(r"^\s*missing ranks: (?P<ranks>\{[\d, ]{0,100000}\}|set\(\))\s*$")
EXPECTED_RE = re.compile(r"^\s*expected ranks: (?P<n>\d{1,7})\s*$")
STATE_RE = re.compile(r"^\s*collective state: (?P<state>\w{1,32})\s*$")
BLOCK_LINES = 12  # the detail lines follow the head; a longer gap ends the block


class FrtraceParser(Parser):
    """The Flight Recorder analyzer's "Not all ranks joining collective" report.

    Example: `Not all ranks joining collective, sequence number: 1882` + `missing ranks: {37}`
    """

    name = "frtrace"
    # The detail lines are read while a block is open; their own words are triggers too, so a detail line
    # is fed (and ignored) outside a block as well.
    triggers = ("Not all ranks joining collective", "missing ranks: ", "group info: ", "expected ranks: ")
    emits = (
        EventSpec("fr_report_missing", ("seq", "entry", "pg", "pg_desc", "op", "missing_ranks",
                                        "expected_ranks", "state"),
                  "fr_trace's `Not all ranks joining collective` block: the ranks without an entry for that "
                  "collective (`missing_ranks`, global ranks) and the group's size (`expected_ranks`)"),
    )
    examples = (
        Example("Not all ranks joining collective, sequence number: 1882\ngroup info: 0:default_pg\n"
                "collective: nccl:all_reduce\nmissing ranks: {37}\ninput sizes: [[1]]\noutput sizes: [[1]]\n"
                "expected ranks: 64\ncollective state: scheduled", "fr_report_missing",
                {"seq": 1882, "pg": "0", "pg_desc": "default_pg", "op": "ALLREDUCE", "missing_ranks": [37],
                 "expected_ranks": 64, "state": "scheduled"}, "fr_trace, torch 2.6+ wording"),
        Example("Not all ranks joining collective 5 at entry 4\ngroup info: 3:mesh_tp\n"
                "collective: nccl:_all_gather_base\nmissing ranks: {1, 3}\nexpected ranks: 4",
                "fr_report_missing", {"seq": 5, "entry": 4, "pg": "3", "op": "_ALLGATHER_BASE",
                                      "missing_ranks": [1, 3], "expected_ranks": 4},
                "fr_trace, 2.5-era wording"),
        Example("group info: 0:default_pg\ncollective: nccl:broadcast\nmissing ranks: {5, 6}\n"
                "input sizes: [[2048]]\noutput sizes: [[2048]]\nexpected ranks: 8\n"
                "collective state: scheduled",
                "fr_report_missing", {"seq": None, "pg": "0", "op": "BROADCAST", "missing_ranks": [5, 6],
                                      "expected_ranks": 8},
                "fr_trace (constructed: the report pasted without its title line)"),
    )
    near_misses = (
        "missing ranks: {37}",
        "# the analyzer prints 'Not all ranks joining collective' when a rank is missing",
        "collective: nccl:all_reduce",
        "group info: 0:default_pg\nmissing ranks: {3}",
    )

    def __init__(self) -> None:
        self._block: tuple[LogLine, dict[str, Any]] | None = None
        self._left = 0
        self._headless = False   # the open block began at `group info:` (its title line was cut)

    idle_ignores = ("_left", "_headless")

    def wants_more(self) -> bool:
        return self._block is not None

    def close(self) -> Iterable[Event]:
        return self._flush()

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        text = line.text
        m = HEAD_RE.search(text)
        if m:
            out.extend(self._flush())
            seq = m["seq"] or m["seq_old"]
            self._block = (line, {"seq": to_count(seq), "entry": to_count(m["entry"]), "pg": None,
                                  "pg_desc": None, "op": None, "missing_ranks": None,
                                  "expected_ranks": None, "state": None})
            self._left = BLOCK_LINES
            return out
        if self._block is None:
            g = GROUP_RE.match(text)
            if g:   # the title was cut: the block may start here (kept only if `collective:` follows)
                self._block = (line, {"seq": None, "entry": None, "pg": g["pg"], "pg_desc": g["desc"] or None,
                                      "op": None, "missing_ranks": None, "expected_ranks": None,
                                      "state": None})
                self._left = BLOCK_LINES
                self._headless = True
            return out
        fields = self._block[1]
        if self._headless and fields["op"] is None and not OP_RE.match(text):
            self._block, self._headless = None, False   # `group info:` not followed by `collective:`
            return out
        self._left -= 1
        g = GROUP_RE.match(text)
        if g and fields["pg"] is None:
            fields["pg"], fields["pg_desc"] = g["pg"], g["desc"] or None
        o = OP_RE.match(text)
        if o and fields["op"] is None:
            fields["op"] = op_type(o["op"])
        mr = MISSING_RE.match(text)
        if mr and fields["missing_ranks"] is None:
            fields["missing_ranks"] = int_list(mr["ranks"])
        e = EXPECTED_RE.match(text)
        if e:
            fields["expected_ranks"] = to_count(e["n"])
        s = STATE_RE.match(text)
        if s:
            fields["state"] = s["state"]
        if s or self._left <= 0:
            out.extend(self._flush())
        return out

    def _flush(self) -> list[Event]:
        if self._block is None:
            return []
        line, fields = self._block
        self._block = None
        self._left = 0
        self._headless = False
        if not fields["missing_ranks"]:
            return []
        return [self.event("fr_report_missing", line, **fields)]
