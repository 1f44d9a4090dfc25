"""Which process is which rank: the pids the launcher and the ranks' own NCCL lines state.

Other lines name a process only by its pid: the kernel's OOM killer (`Killed process <pid>`, log-formats.md
section 5.2), the driver's Xid line (`pid=<pid>`, section 5.3). This module lists every statement that ties
a pid to a global rank, once, for the analyses that map those lines (status.crash_rows, gpu.gpu_fault_rows);
each decides how to settle two statements that disagree.

A pid names a process only on its host, and containers give every node's workers the same small pids: a
claim carries the host it was made for (None when the line does not say).

(A rank-less CUDA OOM whose message lists the GPU's processes is mapped earlier, while files are attributed
to ranks, from the same launcher lines: ingest/attribute.py `_oom_process_pid`.)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from hanglens.analysis.about import rank_about
from hanglens.model import Event, short_host

# The sources of a claim, strongest first.
FAILURE_TABLE = "failure_table"   # torchrun's ChildFailedError table: `rank : 11`, `exitcode : -6 (pid: P)`
AGENT_LINE = "agent_line"         # torchrun's agent: `failed (exitcode: <c>) local_rank: <l> (pid: <p>)`
SPAWNED = "spawned"               # DeepSpeed's launcher: `process <pid> spawned with command: [...]`
NCCL = "nccl"                     # the rank's own NCCL envelope `<host>:<pid>:<tid> [<dev>] NCCL ...`


class PidClaim(NamedTuple):
    """One line's statement that process `pid` on `host` is global rank `rank` (`rank` is None when the
    line names a process whose global rank the logs do not place: a local rank on an unknown node)."""
    source: str
    host: str | None
    pid: int
    rank: int | None


def _short(host: object) -> str | None:
    return short_host(host) if isinstance(host, str) and host else None


def pid_claims(events: Sequence[Event], one_node: bool) -> list[PidClaim]:
    """Every pid -> rank statement in the logs, in log order.

    The failure table states the global rank and host of the pid (log-formats.md section 3.6); the agent's
    `failed ... local_rank: L (pid: P)` line (section 3.5) and DeepSpeed's `spawned` line
    (deepspeed/launcher/launch.py `main`) a local rank, which is a global rank where the launcher's layout
    places it (`placed_rank`, ingest/attribute.py) or, with `one_node`, on a single node; an NCCL line's
    envelope the pid of the rank that wrote it (section 4.1; py-spy's stack headers reuse the shape but name
    the sampled process, not a writer, and are left out).
    """
    out: list[PidClaim] = []
    for e in events:
        pid = e.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            continue
        if e.kind == "child_failed":
            rank = rank_about(e, one_node)
            if rank is not None:
                out.append(PidClaim(FAILURE_TABLE, _short(e.get("failed_host")), pid, rank))
        elif e.kind == "worker_failed":
            rank = rank_about(e, one_node)
            if rank is not None:
                out.append(PidClaim(AGENT_LINE, _short(e.host), pid, rank))
        elif e.kind == "worker_spawned":
            out.append(PidClaim(SPAWNED, _short(e.host), pid, rank_about(e, one_node)))
        elif e.rank is not None and e.get("nccl_host") and e.parser != "pyspy":
            out.append(PidClaim(NCCL, _short(e.get("nccl_host")), pid, e.rank))
    return out


def pid_ranks(events: Sequence[Event], one_node: bool) -> dict[int, int]:
    """pid -> global rank, whatever the host: the failure table's rank (the last row for a pid), else the
    agent's failure line's, else the one rank DeepSpeed's launcher says it started as that pid, else the one
    rank whose own NCCL lines show it. A `spawned` or NCCL pid that two ranks (or a rank and an unplaced
    local rank) share is nobody's: containers give every node's workers the same small pids.
    """
    out: dict[int, int] = {}
    shared: dict[str, dict[int, set[int]]] = {SPAWNED: defaultdict(set), NCCL: defaultdict(set)}
    for c in pid_claims(events, one_node):
        if c.source == FAILURE_TABLE and c.rank is not None:
            out[c.pid] = c.rank
        elif c.source == AGENT_LINE and c.rank is not None:
            out.setdefault(c.pid, c.rank)
        elif c.source in shared:
            shared[c.source][c.pid].add(-1 if c.rank is None else c.rank)
    for source in (SPAWNED, NCCL):
        for pid, ranks in shared[source].items():
            if len(ranks) == 1 and pid not in out and (only := next(iter(ranks))) >= 0:
                out[pid] = only
    return out
