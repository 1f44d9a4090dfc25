"""GPU faults the NVIDIA driver logged (Xid lines), mapped to the rank that used that GPU."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from hanglens.analysis.pids import AGENT_LINE, FAILURE_TABLE, pid_claims
from hanglens.analysis.status import single_node
from hanglens.model import AGENT_EVENT_KINDS, Event, short_host
from hanglens.parsers.nccl import split_comm

Row = dict[str, object]

# NVIDIA's Xid catalog as log-formats.md section 5.3 lists it: 13/31 are a kernel's bad access on the
# owning process (illegal memory access); 48, 61/62, 64, 74, 79, 94/95, 109, 119/120 are hardware or
# firmware faults of that GPU. The others there (43, 45, 63, 92, 154) follow another fault or only warn.
MEMORY_ACCESS_XIDS = frozenset({13, 31})
HARDWARE_XIDS = frozenset({48, 61, 62, 64, 74, 79, 94, 95, 109, 119, 120})


def _bus_number(text: object) -> int | None:
    """A PCI address as one number: `0000:3b:00` / `0000:3b:00.0` (driver) and NCCL's `busId 3b000` (the
    same digits, domain:bus:device.function, printed as one hex number, log-formats.md section 4.3)."""
    if not isinstance(text, str) or not text:
        return None
    s = text.strip().lower()
    if ":" in s and "." not in s:
        s += ".0"     # the driver's `PCI:<dddd:bb:dd>` leaves the function out; GPUs are function 0
    digits = s.replace(":", "").replace(".", "")
    if not digits or len(digits) > 16 or any(c not in "0123456789abcdef" for c in digits):
        return None
    return int(digits, 16)


def _short(host: object) -> str | None:
    return short_host(host) if isinstance(host, str) and host else None


def _names(name: str, host: str) -> bool:
    """Does a file name hold `host` as a whole token (`dmesg-gpu-d04.txt` names gpu-d04, not gpu-d0)?"""
    start = name.find(host)
    while start >= 0:
        end = start + len(host)
        if (start == 0 or not name[start - 1].isalnum()) and (end == len(name) or not name[end].isalnum()):
            return True
        start = name.find(host, start + 1)
    return False


def fault_class(xid: object) -> str:
    if isinstance(xid, int) and xid in MEMORY_ACCESS_XIDS:
        return "memory_access"
    if isinstance(xid, int) and xid in HARDWARE_XIDS:
        return "hardware"
    return "other"


def gpu_fault_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """One row per driver Xid line (`NVRM: Xid (PCI:<addr>): <n>, ...`, log-formats.md section 5.3), with
    the rank whose GPU it names when the logs say so without ambiguity.

    A rank's GPU is the `busId` of its own NCCL `comm ... rank <r> ... busId <hex>` line (section 4.3; in the
    communicator of the whole job, the one with the most ranks, `rank <r>` is the global rank), its process
    the pid of that line's `<host>:<pid>:<tid>` envelope (section 4.1). The Xid's PCI address is
    matched against the bus ids, its `pid=` (when the driver names one) against the pids, both on the Xid's
    host (the journal's host field, else the one NCCL host the file's name contains, else every host): a
    match that names one rank maps the line (`mapped_by` bus_id or pid; two that disagree map nothing, and
    so does a `pid=` that is not the pid of the rank on that bus). Without either, a `pid=` that is the pid
    torchrun's failure table gives one rank on that host (section 3.6), or its agent's `failed ...
    local_rank: <l> (pid: <p>)` line where the local rank is known to be a global one, maps it
    (`mapped_by` failure_table).
    `fault`: memory_access (Xid 13, 31), hardware (48, 61, 62, 64, 74, 79, 94, 95, 109, 119, 120) or other.
    """
    xids = [e for e in events if e.kind == "xid" and not e.get("nvswitch")]
    if not xids:
        return []
    inits = [e for e in events if e.kind == "nccl_comm_init"]
    # A communicator split from another (`ncclCommSplit ... parent <ptr> color <c> key <k>`, log-formats.md
    # section 4.3) is a subgroup's: its `rank <r>` is the rank inside the subgroup, however many ranks the
    # excerpt's largest communicator holds (a paste may show only tensor-parallel splits).
    world = max((n for e in inits if isinstance(n := e.get("nranks"), int) and not split_comm(e)),
                default=None)
    gpus: list[tuple[str | None, int, int | None, int]] = []   # (host, bus number, pid, rank)
    for e in inits:
        # In the job-wide communicator the comm rank is the global rank; the line states it itself.
        own = e.get("comm_rank")
        whose = (own if isinstance(own, int) and world is not None and e.get("nranks") == world
                 and not split_comm(e) else e.rank)
        bus = _bus_number(e.get("bus_id"))
        if bus is None or whose is None:
            continue
        pid = e.get("pid")
        gpus.append((_short(e.get("nccl_host") or e.host), bus, pid if isinstance(pid, int) else None, whose))
    # torchrun's failure table (log-formats.md section 3.6) states each failed worker's global rank, host and
    # pid (`rank : 11 (local_rank: 3)`, `exitcode : -6 (pid: 60813)`): the process a driver line's `pid=`
    # names, when no NCCL line gives that rank's pid.
    # The agent's own `failed (exitcode: <c>) local_rank: <l> (pid: <p>)` line (section 3.5) states the same
    # pid with a local rank: the global rank where the logs place that worker (the launcher's layout, or a
    # single node, where the local rank is the global rank).
    # No worker may print a global rank above every local rank an agent line names: a rank 14 beside an
    # agent's local rank 6 is a second node's (its ranks are node_rank * nproc_per_node + local_rank).
    printed = max((e.rank for e in events if e.rank is not None and e.kind not in AGENT_EVENT_KINDS),
                  default=-1)
    top_local = max((lr for e in events if e.kind == "worker_failed"
                     and isinstance(lr := e.get("local_rank"), int)), default=-1)
    one_node = printed <= top_local and single_node(events)
    procs = [(c.host, c.pid, c.rank) for c in pid_claims(events, one_node)
             if c.source in (FAILURE_TABLE, AGENT_LINE) and c.rank is not None]
    nccl_pid = {r for _, _, p, r in gpus if p is not None}   # ranks whose pid an NCCL line states
    placed: dict[str, int] = {}   # short host -> how many ranks the logs place there
    for h in hosts.values():
        sh = _short(h)
        if sh is not None:
            placed[sh] = placed.get(sh, 0) + 1
    known = sorted({h for h, _, _, _ in gpus if h})
    rows: list[Row] = []
    for e in xids:
        host = _short(e.host)
        if host is None:
            name = PurePosixPath(e.path.replace("!", "/")).name.lower()
            named = [h for h in known if _names(name, h.lower())]
            host = named[0] if len(named) == 1 else None
        here = [g for g in gpus if host is None or g[0] in (host, None)]
        bus = _bus_number(e.get("pci"))
        by_bus = {r for h, b, _, r in here if bus is not None and b == bus}
        pid = e.get("pid")
        by_pid = {r for h, _, p, r in here if isinstance(pid, int) and p == pid}
        # the failure table's pids, when no NCCL line states a pid for that rank
        by_exit = {r for h, p, r in procs if isinstance(pid, int) and p == pid
                   and (host is None or h in (host, None)) and r not in nccl_pid}
        # A driver line naming a process that is not the rank's own (NCCL pid known and different) is about
        # another process on that GPU (an earlier job's): it says nothing about this rank.
        other = isinstance(pid, int) and any(p is not None and p != pid for _, _, p, r in here if r in by_bus)
        rank: int | None = None
        how: str | None = None
        if len(by_bus) == 1 and (not by_pid or by_pid == by_bus) and not other:
            rank, how = next(iter(by_bus)), "bus_id"
        elif not by_bus and len(by_pid) == 1:
            rank, how = next(iter(by_pid)), "pid"
        elif not by_bus and not by_pid and len(by_exit) == 1:
            rank, how = next(iter(by_exit)), "failure_table"
        xid = e.get("xid")
        rows.append({
            "rank": rank,
            "host": hosts.get(rank, host) if rank is not None else host,
            "xid": xid,
            "fault": fault_class(xid),
            "pci": e.get("pci"),
            "mapped_by": how,
            "gpus_known": bool(here),
            "host_ranks": placed.get(host, 0) if host is not None else 0,
            "time": e.time,
            "path": e.path,
            "line": e.line,
        })
    return rows
