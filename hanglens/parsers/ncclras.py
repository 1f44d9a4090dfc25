"""Read the status report of NCCL's RAS subsystem (`ncclras`, NCCL 2.24+).

While a job runs, NCCL's RAS threads answer a client on `NCCL_RAS_ADDR` (default port 28028; NCCL logs
`RAS client listening socket at <addr>`, log-formats.md section 4.4). Users run the `ncclras` client during
a hang and paste its report. NVIDIA/nccl src/ras/client_support.cc prints a job summary, a table of
communicator groups and, for a communicator whose ranks disagree, a block under Errors or Warnings:

    Job summary
    ===========

      Nodes  Processes         GPUs  Processes     GPUs
    (total)   per node  per process    (total)  (total)
          1          8            1          8        8

    Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
        #  in group  per comm  per node  per comm  in group
        0         1         1         8         8         8   RUNNING  MISMATCH

    #0-0 (9c0e5ab1d2f37046) MISMATCH
      Communicator ranks have different collective operation counts
      7 ranks have launched up to operation 413
      Rank 5 has launched up to operation 412 -- GPU 5 managed by process 55107 on node 10.4.0.12

Each `<n> ranks have launched up to operation <k>` line is one group of ranks with the same count (most
frequent first); the ranks of a group that is an outlier are listed, one `Rank <r> -- GPU ...` line each,
or in one line `Rank <r> has launched up to operation <k> -- GPU ...` when the group is that rank alone.
→ one `ras_op_counts` event per block: `counts` [[operation, ranks], ...], `odd_ranks` the ranks listed
(communicator ranks), `ranks_per_comm` from the group table and `processes` from the job summary when the
report holds them. A communicator with as many ranks as the job has processes is the world's (PyTorch's
default group), whose communicator ranks are the global ranks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, to_count

SUMMARY_HEAD_RE = re.compile(r"^\s*\(total\)\s+per node\s+per process\s+\(total\)\s+\(total\)\s*$")
SUMMARY_ROW_RE = re.compile(r"^\s*(?P<nodes>\d{1,7})\s+(?P<ppn>\d{1,7})\s+(?P<gpp>\d{1,7})"
                            r"\s+(?P<procs>\d{1,7})\s+(?P<gpus>\d{1,7})\s*$")
GROUP_HEAD_RE = re.compile(r"^\s*#\s+in group\s+per comm\s+per node\s+per comm\s+in group\s*$")
GROUP_ROW_RE = re.compile(r"^\s*(?P<g>\d{1,7})\s+(?P<comms>\d{1,7})\s+(?P<nodes>\d{1,7})\s+(?P<rpn>\d{1,7})"
                          r"\s+(?P<rpc>\d{1,7})\s+(?P<rig>\d{1,9})\s+(?P<status>[A-Z]{2,20})\b")
BLOCK_RE = re.compile(
    r"^\s*#(?P<g>\d{1,7})-(?P<c>\d{1,7}) \((?P<hash>[0-9a-f]{1,32})\) (?P<what>[A-Z]{2,20})\b")
COUNT_RE = re.compile(r"^\s*(?P<n>\d{1,7}) ranks have (?:launched up to operation (?P<op>\d{1,19})|"
                      r"not launched any operations)\s*$")
ONE_RE = re.compile(r"^\s*Rank (?P<r>\d{1,7}) has (?:launched up to operation (?P<op>\d{1,19})|"
                    r"not launched any operations)(?: -- |\s*$)")
LISTED_RE = re.compile(r"^\s*Rank (?P<r>\d{1,7}) -- GPU ")
BLOCK_LINES = 64    # a block lists at most a few outlier groups (RAS_CLIENT_DETAIL_THRESHOLD ranks each)


class NcclRasParser(Parser):
    """NCCL RAS client report: the operation counts of a communicator whose ranks disagree.

    Example: `#0-0 (9c0e5ab1d2f37046) MISMATCH` + `7 ranks have launched up to operation 413` +
    `Rank 5 has launched up to operation 412 -- GPU 5 managed by process 55107 on node 10.4.0.12`
    """

    name = "ncclras"
    triggers = ("per node  per process", "per comm  per node", "ranks have ",
                "has launched up to operation", "has not launched any operations", ") MISMATCH", " -- GPU ")
    emits = (
        EventSpec("ras_op_counts", ("group", "comm_hash", "counts", "odd_ranks", "ranks_per_comm",
                                    "processes", "world_comm"),
                  "an NCCL RAS report's block for a communicator whose ranks launched different numbers of "
                  "operations: `counts` [[operation, ranks], ...] as printed, `odd_ranks` the ranks it lists "
                  "(the outlier groups', communicator ranks), `ranks_per_comm` (the group table) and "
                  "`processes` (the job summary) when the report holds them; `world_comm` when both are "
                  "known and equal: the communicator holds every process, so its ranks are the global ranks"),
    )
    examples = (
        Example("(total)   per node  per process    (total)  (total)\n"
                "      1          8            1          8        8\n\n"
                "    #  in group  per comm  per node  per comm  in group\n"
                "    0         1         1         8         8         8   RUNNING  MISMATCH\n\n"
                "#0-0 (9c0e5ab1d2f37046) MISMATCH\n"
                "  Communicator ranks have different collective operation counts\n"
                "  7 ranks have launched up to operation 413\n"
                "  Rank 5 has launched up to operation 412 -- GPU 5 managed by process 55107 on node "
                "10.4.0.12\n",
                "ras_op_counts",
                {"group": 0, "comm_hash": "9c0e5ab1d2f37046", "counts": [[413, 7], [412, 1]],
                 "odd_ranks": [5], "ranks_per_comm": 8, "processes": 8, "world_comm": True},
                "ncclras, NCCL 2.24+ (src/ras/client_support.cc)"),
        Example("#0-0 (27a0c3e1f4b95d10) MISMATCH\n"
                "  Communicator ranks have different AllReduce operation counts\n"
                "  30 ranks have launched up to operation 6650\n"
                "  2 ranks have launched up to operation 6649\n"
                "  Rank 9 -- GPU 1 managed by process 40231 on node 172.16.4.12\n"
                "  Rank 17 -- GPU 1 managed by process 40871 on node 172.16.4.13\n",
                "ras_op_counts",
                {"group": 0, "counts": [[6650, 30], [6649, 2]], "odd_ranks": [9, 17], "ranks_per_comm": None,
                 "world_comm": False},
                "ncclras, an outlier group of two ranks, no table pasted"),
    )
    near_misses = (
        "  7 ranks have launched up to operation 413",
        "Rank 5 -- GPU 5 managed by process 55107 on node 10.4.0.12",
        "# RAS prints 'ranks have launched up to operation' when counts differ",
    )

    def __init__(self) -> None:
        self._expect: str | None = None          # "summary" / "group": the next line is that table's row
        self._processes: int | None = None       # the job summary's process count
        self._per_comm: dict[int, int] = {}      # group -> ranks per communicator
        self._block: tuple[LogLine, dict[str, Any]] | None = None
        self._left = 0

    idle_ignores = ("_left",)

    def wants_more(self) -> bool:
        return self._block is not None or self._expect is not None

    def close(self) -> Iterable[Event]:
        return self._flush()

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if self._expect is not None:
            expect, self._expect = self._expect, None
            if expect == "summary" and (m := SUMMARY_ROW_RE.match(text)):
                self._processes = to_count(m["procs"])
                return out
            if expect == "group" and (m := GROUP_ROW_RE.match(text)):
                self._per_comm[int(m["g"])] = int(m["rpc"])
                self._expect = "group"    # one row per group follows
                return out
        if SUMMARY_HEAD_RE.match(text):
            self._expect = "summary"
            return out
        if GROUP_HEAD_RE.match(text):
            self._expect = "group"
            return out
        m = BLOCK_RE.match(text)
        if m:
            out.extend(self._flush())
            g = int(m["g"])
            self._block = (line, {"group": g, "comm_hash": m["hash"], "counts": [], "odd_ranks": [],
                                  "ranks_per_comm": self._per_comm.get(g), "processes": self._processes})
            self._left = BLOCK_LINES
            return out
        if self._block is None:
            return out
        fields = self._block[1]
        self._left -= 1
        c = COUNT_RE.match(text)
        one = ONE_RE.match(text) if c is None else None
        listed = LISTED_RE.match(text) if c is None and one is None else None
        if c:
            fields["counts"].append([to_count(c["op"]) or 0, int(c["n"])])
        elif one:
            fields["counts"].append([to_count(one["op"]) or 0, 1])
            fields["odd_ranks"].append(int(one["r"]))
        elif listed:
            fields["odd_ranks"].append(int(listed["r"]))
        elif not text.strip() or self._left <= 0 or (fields["counts"] and not text.startswith(" ")):
            out.extend(self._flush())
        return out

    def _flush(self) -> list[Event]:
        if self._block is None:
            return []
        line, fields = self._block
        self._block = None
        self._left = 0
        if len(fields["counts"]) < 2 or not fields["odd_ranks"]:
            return []
        rpc, procs = fields["ranks_per_comm"], fields["processes"]
        world = rpc is not None and procs is not None and rpc == procs
        return [self.event("ras_op_counts", line, **fields, world_comm=world)]
