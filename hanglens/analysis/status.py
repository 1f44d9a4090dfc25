"""Per-rank status: who crashed, hung or only suffered; first failures on one timeline; versions; hosts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from hanglens import lazyre as re
from hanglens.analysis.about import rank_about
from hanglens.analysis.kinds import (
    CRASH_KINDS,
    FAILURE_KINDS,
    checkpoint_failed_ranks,
    exit_signal,
    host_of,
    is_failure_warning,
    is_victim_exception,
    survived_in_helper_thread,
)
from hanglens.analysis.pids import pid_ranks
from hanglens.ingest.streams import is_agent_event, is_spawn_parent_exception, non_negative_int
from hanglens.model import AGENT_EVENT_KINDS, ERROR_LEVELS, Event, InputFile, short_host
from hanglens.parsers.base import to_int
from hanglens.parsers.elastic import signal_name
from hanglens.parsers.traceback import HEADER_GAP_LINES

Row = dict[str, Any]
_TIME_MAX = float("inf")




def _exitcode(e: Event) -> int | None:
    code = e.get("exitcode")
    return code if isinstance(code, int) else None


_TORCHRUN_AGENT_KINDS = frozenset({"child_failed", "worker_failed", "closing_signal", "launch_config",
                                   "worker_group_restart"})


def single_node(events: Sequence[Event]) -> bool:
    """True when the logs name at most one host (then a torchrun local rank is the global rank).

    Two torchrun agents writing under different launcher prefixes (Slurm `srun -l` with one torchrun per
    task) are two nodes too: there the task id is the node index, not a rank (log-formats.md section 9.3).
    So is a rendezvous result of a node rank above 0 or a node count above 1, and a ChildFailedError row
    pairing a local rank with another global rank (`rank: 21 (local_rank: 5)`, section 3.6). So is an
    agent naming local ranks below every global rank its workers print (`[5]:`, `[rank5]:`): a node's
    ranks are node_rank * nproc_per_node + local_rank, so its workers' ranks start above 0 only on a node
    other than the first (section 3.5), and so is one worker line whose global rank differs from its
    torchrun local rank (`[default1]:[rank5]:`).
    """
    hosts = set()
    agents = set()
    printed: set[int] = set()
    named_local: set[int] = set()
    for e in events:
        if e.kind in ("worker_failed", "launcher_exit"):
            lr = e.get("local_rank")
            if isinstance(lr, int) and not isinstance(lr, bool):
                named_local.add(lr)
        elif (e.rank is not None and e.kind not in AGENT_EVENT_KINDS and e.parser != "elastic"
              and "ChildFailedError" not in str(e.get("exc_type") or "")):
            printed.add(e.rank)   # a worker's own line (the agent's lines name others' ranks)
        if e.writer and e.kind in _TORCHRUN_AGENT_KINDS:
            agents.add(e.writer)
            if len(agents) > 1:
                return False
        if e.kind == "world_info" and e.get("stated_by") is None:
            # an agent's rendezvous result (log-formats.md section 3.5: group_rank / group_world_size) of a
            # job of several nodes
            node, nnodes = e.get("node_rank"), e.get("nnodes")
            if (isinstance(node, int) and node > 0) or (isinstance(nnodes, int) and nnodes > 1):
                return False
        for h in (e.host, e.get("nccl_host"), e.get("failed_host"), _remote_peer_host(e)):
            if h:
                hosts.add(str(h))
        if len(hosts) > 1:  # a second host settles it (the rest of a big job need not be read)
            return False
        if (e.rank is not None and e.local_rank is not None and e.rank != e.local_rank
                and e.kind not in AGENT_EVENT_KINDS):
            return False   # `[default1]:[rank5]:`: rank = node_rank * nproc + local rank, node_rank > 0
        if e.kind == "child_failed":
            g, lr = e.get("failed_rank"), e.get("local_rank")
            if isinstance(g, int) and isinstance(lr, int) and lr >= 0 and g != lr:
                return False   # `rank: 21 (local_rank: 5)`: the reporting agent's node is not the first
    return not (printed and named_local and min(printed) > max(named_local))


_ADDRESS_RE = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.%\w]*)$")


def _remote_peer_host(e: Event) -> str | None:
    """The host at the other end of a connection NCCL says the remote peer closed, when it is named by host
    name and differs from the reporting process's own host.

    NCCL's socket WARN names the remote end (`socketProgress: Connection closed by remote peer
    <host><<port>>`, log-formats.md section 4.4); a peer on another host than the process that printed it
    means the job spans at least two nodes, so a torchrun local rank there is not the global rank (section
    3.5). An
    address (IPv4/IPv6) cannot be compared with a host name, and the proxy's `localRank <n>` peer is a
    process of the same node: neither is taken.
    """
    if e.kind != "peer_closed" or e.get("transport") != "socket":
        return None
    peer = e.get("peer")
    own = e.host or e.get("nccl_host")
    if not isinstance(peer, str) or not peer or not own or " " in peer or _ADDRESS_RE.match(peer):
        return None
    if peer.lower() in ("localhost", "localhost.localdomain"):
        return None
    return peer if short_host(peer) != short_host(str(own)) else None


# faulthandler's texts for the fatal signals a process raises on its own (Modules/faulthandler.c).
FATAL_SIGNAL_TEXTS = frozenset({"Segmentation fault", "Bus error", "Floating point exception",
                                "Illegal instruction"})
# faulthandler's fatal-signal handler dumps the stacks, restores the previous handler and raises the signal
# again (CPython Modules/faulthandler.c `faulthandler_fatal_error`): a `Fatal Python error: Aborted` dump
# is the process dying of SIGABRT, as the launcher's -6 says when its table is in the input.
DUMP_SIGABRT_TEXT = "Aborted"


def is_own_crash(e: Event) -> bool:
    """Did this event report a fault of the rank itself (not a consequence of a peer's failure)?

    Exit codes alone are judged in `crash_rows`/`rank_status_columns`: a positive exit code only says a
    Python exception ended the worker, which may itself be a victim's timeout.
    """
    if e.kind in ("exception", "error_file"):
        if ("ChildFailedError" in str(e.get("exc_type") or "") or "ChildFailedError" in e.text
                or is_spawn_parent_exception(e)):
            return False
        if not e.get("exc_type") and not e.get("message"):
            return False  # a traceback cut before its last line says nothing about what was raised
        if str(e.get("exc_type") or "").endswith("KeyboardInterrupt"):
            return False  # someone stopped the job, usually because it hung
        if e.get("unraisable"):
            return False  # printed under CPython's `Exception ignored in ...`, and the process went on
        if survived_in_helper_thread(e):
            return False  # printed by a multiprocessing helper thread that went on (the process lived)
        return not is_victim_exception(e)
    if e.kind == "nccl_error":
        etype = str(e.get("error_type") or "")
        reason = str(e.get("reason") or "")
        # `remote error detected from rank: <k>` (TORCH_NCCL_PROPAGATE_ERROR, 2.7+; ProcessGroupNCCL.cpp's
        # watchdog reads rank k's error from the store) reports a peer's failure: the rank printing it is a
        # victim (failure-signatures.md section 0.2 R4, section 17.6; log-formats.md section 1.5).
        return (etype not in ("ncclRemoteError", "ncclSystemError", "remote_error")
                and "remote process exited" not in reason)
    if e.kind == "watchdog_terminated":
        err = str(e.get("error") or "")
        return "CUDA error" in err or ("CUDA" in err and "timeout" not in err.lower())
    if e.kind in ("child_failed", "worker_failed", "launcher_exit"):
        sig = e.get("signal") or exit_signal(_exitcode(e))
        if sig in ("SIGTERM", "SIGINT", "SIGHUP"):
            return False
        return sig in ("SIGKILL", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL")
    if e.kind == "stack_dump":
        # faulthandler's fatal-error handler prints `Fatal Python error: <signal text>` and the stacks when
        # the process itself receives SIGSEGV, SIGFPE, SIGBUS or SIGILL (CPython Modules/faulthandler.c
        # `faulthandler_handlers`): the rank died of its own native fault there. SIGABRT (`Aborted`) is left
        # out: gloo's size check and a watchdog abort a rank that may be another's victim.
        return e.get("dumper") == "faulthandler" and e.get("trigger") in FATAL_SIGNAL_TEXTS
    if e.kind == "ddp_model_mismatch" and e.get("other_params") == 0:
        return False  # "inconsistent 0 params": the check's all-gather failed, not the model (LF section 2.3)
    if e.kind == "dataloader_worker_died" and e.get("signal") == "SIGTERM":
        return False  # its rank was being stopped (failure-signatures.md section 8, "Trap")
    return e.kind in CRASH_KINDS


# gloo's socket errors name the loss in their detail: `Read error [<ip>]:<port>: Connection reset by peer`
_PEER_GONE_DETAIL_RE = re.compile(r"Connection reset by peer|Connection closed by peer|Broken pipe")
_PEER_GONE_ERRORS = frozenset({"closed_by_peer", "connection_reset", "broken_pipe"})


def _peer_gone(e: Event) -> bool:
    """A rank's report that the remote end of one of its connections went away (`Connection closed by remote
    peer`, `Connection reset by peer`, `Broken pipe`)."""
    return e.kind == "peer_closed" or (e.kind == "network_error" and e.get("error") in _PEER_GONE_ERRORS)


def _gloo_peer_gone(e: Event) -> bool:
    """gloo's own report that the process at the other end of a pair's socket went away."""
    if e.get("transport") != "gloo":
        return False
    return _peer_gone(e) or (e.kind == "network_error"
                             and _PEER_GONE_DETAIL_RE.search(str(e.get("detail") or "")) is not None)


def _exit_only_crashes(events: Sequence[Event]) -> dict[int, Event]:
    """Ranks whose only sign of failure is a positive exit code (no exception or hang line of their own).

    A failed DCP save or load raises the same `CheckpointException` on every rank, naming the ranks whose
    own step failed (torch/distributed/checkpoint/utils.py `_DistWrapper.all_reduce` / `all_gather` /
    `reduce_scatter` end with `raise final_result` on every rank; api.py `CheckpointException.__str__`):
    once a rank's lines show one, a rank it does not name that exited with code 1 and left nothing else
    raised that report of a peer's failure, not a fault of its own.

    A rank whose collective timed out raises in its own thread (gloo's `Timed out waiting <ms>ms`, a blocking
    wait) and exits with the code of any uncaught exception (failure-signatures.md sections 0.1 and 17): when
    ranks whose timeouts are in the input exited with the same code, a rank that left only that code may be
    one more of them whose lines were cut from an excerpt, so its exit code alone names no fault. gloo has
    no watchdog that aborts the process: its `Timed out waiting <ms>ms for <send|recv> operation` is always
    raised in the caller (gloo/transport/tcp/unbound_buffer.cc, log-formats.md section 7), so a gloo timeout
    that exits does so with Python's uncaught-exception code 1, even when the rank whose timeout the input
    shows was stopped by SIGTERM before it could exit on its own.
    """
    sn = single_node(events)
    informed = {
        e.rank
        for e in events
        if e.rank is not None and e.kind in ("exception", "error_file", "hang_detected")
    }
    dcp_failed = {r for e in events if e.kind in ("exception", "error_file")
                  for r in (checkpoint_failed_ranks(e) or ())}
    exits = [e for e in events if e.kind in ("child_failed", "worker_failed") or (
        e.kind == "launcher_exit" and e.get("launcher") == "srun") or _spawn_exit(e)]
    timed_out = {e.rank for e in events if e.rank is not None and e.kind == "hang_detected"}
    # ... and so does a rank whose wrapper re-raised a peer's failure as an error of its own (`raise
    # RuntimeError("step failed") from e` over a lost connection): it exited with the code of that uncaught
    # exception too
    raised = [e for e in events if e.rank is not None and e.kind in ("exception", "error_file")
              and not str(e.get("exc_type") or "").endswith("KeyboardInterrupt")]
    own = {e.rank for e in raised if is_own_crash(e)}
    timed_out |= {r for e in raised if (r := e.rank) is not None and r not in own and e.get("chained")
                  and is_victim_exception(e)}
    timeout_codes = {_exitcode(e) for e in exits if rank_about(e, sn) in timed_out}
    if any(e.kind == "hang_detected" and e.get("detector") == "gloo" for e in events):
        timeout_codes.add(1)
    # ... and so is gloo's loss of a peer: `Connection closed by peer`, `Read error ...: Connection reset by
    # peer` are thrown in the caller's thread too (gloo/transport/tcp/pair.cc, log-formats.md section 7), so
    # a survivor of a crash under gloo that raised before the agent stopped it exits with code 1 like the
    # crashed rank (torch 1.x's failure table then lists several ranks, often every one, with exitcode 1):
    # when more than one rank exited 1, that code alone names no fault. A console of torch < 2.4 also holds
    # a store timeout or failed connect raised in init (TCPStore, socket.cpp; section 3.7) with nobody's
    # name on it (section 9.2), ending its rank with code 1 the same way. Only lines of nobody's: a rank
    # whose own lines are named is read by what it printed. One rank alone with code 1 beside ranks the
    # agent stopped (-15) exited of its own fault.
    ones = {r for e in exits if _exitcode(e) == 1 and (r := rank_about(e, sn)) is not None}
    if len(ones) >= 2 and any(e.rank is None and (_gloo_peer_gone(e) or (
            e.kind == "store_error" and e.get("errno") is None)) for e in events):
        timeout_codes.add(1)
    out: dict[int, Event] = {}
    for e in exits:
        rank, code = rank_about(e, sn), _exitcode(e)
        if dcp_failed and rank not in dcp_failed and code == 1:
            continue
        if code in timeout_codes and rank not in dcp_failed:
            continue
        if rank is not None and code is not None and code > 0 and rank not in informed:
            out.setdefault(rank, e)
    return out


def _spawn_signalled(e: Event) -> bool:
    """mp.spawn's `process N terminated with signal SIGABRT` (parsers/spawn.py, exitcode -6): the process
    died of that signal, as torchrun's failure table reports a worker's `-6` (torch/multiprocessing/spawn.py
    `ProcessContext.join` raises ProcessExitedException with the signal's name for a negative exit code).
    A process the parent itself stopped (`Terminating process <pid> via signal SIGTERM`) has no such line."""
    return (e.kind == "launcher_exit" and e.get("launcher") == "mp.spawn" and not e.get("raised")
            and e.get("signal") is not None)


def _spawn_exit(e: Event) -> bool:
    """mp.spawn's `process N terminated with exit code K` (parsers/spawn.py): the process left without a
    Python exception (one raised in it is reported as ProcessRaisedException instead, torch/multiprocessing/
    spawn.py `_wrap`), so only the exit code speaks for it."""
    return e.kind == "launcher_exit" and e.get("launcher") == "mp.spawn" and not e.get("raised")


# How much later than the peers' back-dated wait a stuck watchdog may have begun and still come first: the
# peers enqueue the collective at the end of their step, the stuck rank blocks somewhere in that step.
STUCK_LEAD_SLACK_S = 60.0


def _started(e: Event) -> float | None:
    """When the waiting a hang line reports began (failure-signatures.md section 0.2 R3): its time minus
    how long it ran (`ran for`, else the timeout) for a collective, minus `stuck for` for a heartbeat."""
    if e.time is None:
        return None
    ms = e.get("elapsed_ms") if isinstance(e.get("elapsed_ms"), int) else e.get("timeout_ms")
    if e.get("detector") == "heartbeat_monitor":
        stuck = e.get("stuck_s")
        return e.time - stuck if isinstance(stuck, (int, float)) and not isinstance(stuck, bool) else None
    return e.time - ms / 1000.0 if isinstance(ms, int) and not isinstance(ms, bool) else None


# The heartbeat period of torch 2.2-2.4 when the monitor's line does not print it (log-formats.md section
# 1.7, "Defaults: heartbeat timeout 600 s in 2.2-2.4"; the 2.2 and 2.3-2.4 lines `monitoring thread detects
# no heartbeat` / `Heartbeat monitor timed out!` carry no seconds, and the 2.2-2.3 envelope no time).
HEARTBEAT_DEFAULT_S = 600


def _before_in_file(e: Event, others: list[Event]) -> bool:
    """An undated heartbeat report `e` printed above every other rank's undated collective timeout of its
    own file, each with a timeout no longer than the heartbeat period: it began first.

    A stream is written in time order, so a line above another was printed earlier; a report comes one
    period after its wait began (the heartbeat period for the monitor, `Timeout(ms)` for a collective), so
    when the monitor's period is at least the collective timeout, printed earlier means began earlier
    (failure-signatures.md section 0.2 R3). Timeouts in other files, undated too, cannot contradict it."""
    if e.time is not None or any(w.time is not None for w in others):
        return False
    stuck = e.get("stuck_s")
    period_ms = (int(stuck) if isinstance(stuck, (int, float)) and not isinstance(stuck, bool)
                 else HEARTBEAT_DEFAULT_S) * 1000
    same = [w for w in others if w.path == e.path]
    return bool(same) and all(
        w.line > e.line and isinstance(w.get("timeout_ms"), int) and 0 < w.get("timeout_ms") <= period_ms
        for w in same)


def hang_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """One row per hang line; `started` the back-dated start of the wait, and for a heartbeat monitor's
    "watchdog got stuck" `before_peers`: the rank timed out on no collective itself, and its watchdog was
    stuck before (or within STUCK_LEAD_SLACK_S of) the start of every other rank's collective timeout, all
    of them dated (R3: the earliest start is the cause, the later waits its consequence), or, all undated,
    its report printed above the other ranks' timeouts of its own file (`_before_in_file`)."""
    hangs = [e for e in events if e.kind == "hang_detected"]
    waits = [e for e in hangs if e.get("detector") in ("watchdog", "blocking_wait") and e.rank is not None]
    rows = []
    for e in hangs:
        start = _started(e)
        before = None
        if e.get("detector") == "heartbeat_monitor" and e.rank is not None:
            others = [w for w in waits if w.rank != e.rank]
            starts = [_started(w) for w in others]
            before = (start is not None and bool(others) and all(w.rank != e.rank for w in waits)
                      and all(t is not None and start <= t + STUCK_LEAD_SLACK_S for t in starts))
            if not before and bool(others) and all(w.rank != e.rank for w in waits):
                before = _before_in_file(e, others)
        rows.append({
            "rank": e.rank,
            "host": host_of(e, hosts),
            "detector": e.get("detector"),
            "pg": e.get("pg"),
            "seq": e.get("seq"),
            "op": e.get("op"),
            "timeout_ms": e.get("timeout_ms"),
            "time": e.time,
            "started": start,
            "before_peers": before,
            "path": e.path,
            "line": e.line,
        })
    return sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["path"], r["line"]))


def _crash_times(events: Sequence[Event]) -> dict[int, float]:
    """Earliest own-crash time per rank (inf when the crash has no timestamp)."""
    sn = single_node(events)
    out: dict[int, float] = {}
    for e in events:
        rank = rank_about(e, sn)
        if rank is not None and is_own_crash(e):
            t = e.time if e.time is not None else _TIME_MAX
            out[rank] = min(out.get(rank, _TIME_MAX), t)
    return out


def victim_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """Errors that are consequences of another rank's failure."""
    sn = single_node(events)
    crashes = _crash_times(events)
    rows: list[Row] = []

    def add(e: Event, rank: int | None, signal: str) -> None:
        rows.append(
            {
                "rank": rank,
                "host": host_of(e, hosts, rank),
                "signal": signal,
                "time": e.time,
                "text": e.text[:300],
                "path": e.path,
                "line": e.line,
            }
        )

    for e in events:
        rank = rank_about(e, sn)
        if e.kind == "peer_closed" or (
            e.kind == "network_error"
            and any(
                m in f"{e.get('error') or ''} {e.get('detail') or ''} {e.text}"
                for m in ("reset by peer", "closed by", "Broken pipe", "connection_reset", "broken_pipe")
            )
        ):
            add(e, rank, "peer_closed")
        elif e.kind == "nccl_error" and not is_own_crash(e):
            add(e, rank, "remote_error")
        elif e.kind in ("exception", "error_file") and is_victim_exception(e):
            add(e, rank, "collective_error")
        elif e.kind in ("child_failed", "worker_failed") and (
            e.get("signal") or exit_signal(_exitcode(e))
        ) in ("SIGTERM", "SIGINT", "SIGHUP"):
            add(e, rank, "sigterm")
        elif e.kind == "store_error" and e.get("op") == "check_dump_flag":
            add(e, rank, "store_teardown")
        elif e.kind == "dump_signal" and isinstance(e.get("from_rank"), int) and e.get("from_rank") != rank:
            add(e, rank, "dump_signal_from_peer")
        elif e.kind == "hang_detected" and rank is not None:
            others = [t for r, t in crashes.items() if r != rank]
            if (
                others
                and rank not in crashes
                and (e.time is None or min(others) == _TIME_MAX or min(others) <= e.time)
            ):
                add(e, rank, "timeout_after_crash")
    return sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["path"], r["line"], r["signal"]))


FIRST_WINDOW_S = 1.0
_TEARDOWN_SIGNALS = frozenset({"sigterm", "store_teardown", "dump_signal_from_peer"})


def _crash_site(e: Event) -> str | None:
    """Where a raised exception came from: its type and innermost frame (or its message); None otherwise."""
    if e.kind != "exception" or not e.get("exc_type"):
        return None
    if e.get("frame_file"):
        where = f"{e.get('frame_file')}:{e.get('frame_line')}"
    else:
        where = str(e.get("message") or "")
    return f"{e.get('exc_type')}|{where}"


# The functions of torch.distributed that set up a process group from the job's configuration (backend,
# init_method, world size and rank, the env:// variables): distributed_c10d.py `init_process_group`,
# `_new_process_group_helper`, `new_group`, rendezvous.py's `rendezvous` and its `_*_rendezvous_handler`s,
# device_mesh.py `init_device_mesh`.
_SETUP_FRAME_RE = re.compile(
    r"(?:^|/)torch/distributed/(?:distributed_c10d|rendezvous|device_mesh)\.py:\d+ in "
    r"(?:init_process_group|_new_process_group_helper|new_group|rendezvous|_\w*rendezvous_handler"
    r"|init_device_mesh)$")
# Errors of a setup that waited for ranks or endpoints (the store, the network, NCCL): their own rules read
# who was missing or unreachable (failure-signatures.md sections 10 and 12).
_WAITED_TYPES = ("DistStoreError", "DistNetworkError", "DistBackendError", "TimeoutError", "ConnectionError",
                 "RendezvousTimeoutError", "RendezvousConnectionError", "RendezvousClosedError")


def _setup_error(e: Event) -> bool:
    """An exception torch.distributed raised while setting up a process group from the job's configuration
    (an unknown backend, a backend this build lacks, an init_method or env:// variable missing or wrong),
    not one that waited for peers and timed out."""
    if e.kind != "exception":
        return False
    exc = str(e.get("exc_type") or "").rsplit(".", 1)[-1]
    if not exc or exc in _WAITED_TYPES:
        return False
    frames = e.get("frames")
    return isinstance(frames, list) and any(isinstance(f, str) and _SETUP_FRAME_RE.search(f) for f in frames)


def _srun_task_sigkills(events: Sequence[Event], sn: bool) -> dict[int, set[int]]:
    """srun task id -> the global ranks that task's own torchrun agent reported dead of SIGKILL.

    When srun starts one torchrun per node, a task is a node (its `-l` label marks the agent's lines): the
    agent logs `failed (exitcode: -9) local_rank: <l>` for the worker the memory cgroup killed (log-formats.md
    section 3.5) and its rendezvous result maps its local ranks to global ranks (section 3.5, `local_ranks` /
    `global_ranks`), so srun's `task <t>: Out Of Memory` (failure-signatures.md section 5.2) is that rank's.
    """
    layout: dict[str, dict[int, int]] = defaultdict(dict)
    for e in events:
        w = e.writer
        if e.kind == "world_info" and isinstance(w, str) and w.startswith("task "):
            lrs, grs = e.get("local_ranks"), e.get("global_ranks")
            if isinstance(lrs, list) and isinstance(grs, list) and len(lrs) == len(grs):
                for lr, g in zip(lrs, grs, strict=True):
                    if isinstance(lr, int) and isinstance(g, int):
                        layout[w][lr] = g
    out: dict[int, set[int]] = defaultdict(set)
    for e in events:
        w = e.writer
        if (e.kind != "worker_failed" or _exitcode(e) != -9 or not isinstance(w, str)
                or not w.startswith("task ")):
            continue
        rank = rank_about(e, sn)
        lr = e.get("local_rank")
        if rank is None and isinstance(lr, int):
            rank = layout.get(w, {}).get(lr)
        task = w[5:]
        if rank is not None and task.isdigit():
            out[int(task)].add(rank)
    return out


def _worker_pid_ranks(events: Sequence[Event], sn: bool) -> dict[Any, int]:
    """pid -> rank of the DataLoader workers a rank reported killed by SIGKILL (`DataLoader worker (pid P) is
    killed by signal: Killed.`, torch/csrc/DataLoader.cpp): the worker is a child of that rank's main process
    (failure-signatures.md section 8). A pid two ranks claim is nobody's."""
    seen: dict[Any, set[int]] = defaultdict(set)
    for e in events:
        if e.kind != "dataloader_worker_died" or e.get("signal") != "SIGKILL":
            continue
        rank = rank_about(e, sn)
        if rank is None:
            continue
        pids = e.get("pids")
        for pid in (pids if isinstance(pids, list) else [e.get("pid")]):
            if isinstance(pid, int):
                seen[pid].add(rank)
    return {pid: next(iter(r)) for pid, r in seen.items() if len(r) == 1}


def _kill_behind_exit(e: Event, cur: Event | None) -> bool:
    """Is `e` the kernel's OOM kill of the process whose exit the launcher reported as `cur`? The kill is
    that exit's cause (failure-signatures.md section 5.2: match the killed pid to the torchrun pid field),
    whatever the two lines' clocks say (dmesg's is often unreadable or the host's own)."""
    return (cur is not None and e.kind == "oom" and cur.kind in ("child_failed", "worker_failed")
            and e.get("pid") is not None and e.get("pid") == cur.get("pid"))


_SYSTEM_ERROR_RE = re.compile(r"NCCL error in: \S+, unhandled system error|ncclSystemError")


def crash_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """Each rank's earliest own fault; `first` marks the ranks that failed first."""
    sn = single_node(events)
    best: dict[int, Event] = {}
    for exit_rank, exit_event in _exit_only_crashes(events).items():
        best[exit_rank] = exit_event
    launched = pid_ranks(events, sn)
    worker_ranks = _worker_pid_ranks(events, sn)
    task_kills = _srun_task_sigkills(events, sn)
    killed_workers: set[int] = set()
    # Ranks whose own NCCL said the remote end of a connection went away (`Connection closed by remote
    # peer`, `Connection reset by peer`, `Broken pipe`): their `unhandled system error` is that loss.
    peer_gone = {r for e in events if _peer_gone(e) and (r := rank_about(e, sn)) is not None}
    for e in events:
        rank = rank_about(e, sn)
        if (rank in peer_gone and e.kind in ("exception", "error_file")
                and _SYSTEM_ERROR_RE.search(f"{e.get('message') or ''} {e.text}")):
            # torch raises a failed NCCL call as `NCCL error in: ..., unhandled system error`
            # (ncclSystemError, log-formats.md section 1.6), whose 1.12 detail itself says it "can be also
            # caused by unexpected exit of a remote peer"; with the rank's own WARN saying the peer closed
            # the connection, the peer exited first: this rank is a victim (failure-signatures.md sections 9,
            # 17.2).
            continue
        if rank is None and e.kind == "oom":
            rank = launched.get(e.get("pid"))  # the kernel's OOM killer names a pid, the launcher its rank
            if rank is None:
                rank = worker_ranks.get(e.get("pid"))   # ... or a rank's DataLoader worker
            tasks = e.get("tasks")
            if rank is None and e.get("launcher") == "srun" and isinstance(tasks, list) and len(tasks) == 1:
                # srun's cgroup kill of a task that is a node's torchrun: the one worker its agent saw die
                # of SIGKILL
                killed = task_kills.get(tasks[0], set())
                rank = next(iter(killed)) if len(killed) == 1 else None
            if rank is not None and e.host and hosts.get(rank) not in (None, e.host):
                rank = None   # the same pid on another host is another process
            elif rank is not None and worker_ranks.get(e.get("pid")) == rank:
                # The kernel killed this rank's DataLoader worker (`DataLoader worker (pid P) is killed by
                # signal: Killed.` with `Killed process P` in the kernel log): host memory ran out, and the
                # worker's death is only how the rank saw it (failure-signatures.md sections 8 and 5.2).
                best[rank] = e
                killed_workers.add(rank)
                continue
        if rank in killed_workers:
            continue
        if rank is None or not is_own_crash(e):
            continue
        cur = best.get(rank)
        if _kill_behind_exit(e, cur):
            best[rank] = e
            continue
        if cur is not None and _kill_behind_exit(cur, e):
            continue
        key = (e.time is None, e.time or 0.0, e.path, e.line)
        if cur is None or key < (cur.time is None, cur.time or 0.0, cur.path, cur.line):
            best[rank] = e
    relayed = {r: e for r, e in _relayed_checkpoint_failures(events).items() if r not in best}
    best.update(relayed)
    times = [e.time for e in best.values() if e.time is not None]
    earliest = min(times) if times else None
    firsts = {
        r: earliest is None or e.time is None or e.time - earliest <= FIRST_WINDOW_S for r, e in best.items()
    }
    first_sites = {_crash_site(e) for r, e in best.items() if firsts[r]}
    same_site = sum(firsts.values()) >= 2 and len(first_sites) == 1 and None not in first_sites
    before_links = _before_link_errors(events)
    before_peers = _before_peer_errors(events, sn)
    rows = []
    for rank, e in sorted(best.items()):
        first = firsts[rank]
        rows.append(
            {
                "rank": rank,
                "host": host_of(e, hosts, rank),
                "kind": e.kind,
                "first": first,
                "same_site": bool(first and same_site),
                "setup": _setup_error(e),
                "before_link_errors": before_links(e),
                "before_peer_errors": before_peers(e, rank),
                "time": e.time,
                "text": (_relayed_text(e, rank, rank_about(e, sn)) if rank in relayed
                         else _with_checkpoint_cause(e.text, e, rank))[:300],
                "path": e.path,
                "line": e.line,
            }
        )
    return rows


def _relayed_text(e: Event, rank: int, reporter: int | None) -> str:
    """A relayed DCP failure as its report cites it: which rank relayed it, and the failed rank's own
    exception message when the report names that rank alone (the message the parser kept is the last
    relayed one)."""
    by = f"rank {reporter}'s" if reporter is not None else "a"
    return _with_checkpoint_cause(f"rank {rank}'s failure relayed by {by} {e.text.strip()}", e, rank)


def _with_checkpoint_cause(text: str, e: Event, rank: int) -> str:
    """`text` followed by the rank's own exception message, when `e` is a DCP report naming that rank alone.

    Every rank raises the same `CheckpointException ranks:dict_keys([<r>])`; the failing rank's own error
    (a full disk's `unexpected pos`, a missing key) is only in the traceback the report carries (`(RANK
    <r>)`, api.py `CheckpointException.__str__`): quoted, the crash says what failed, not only that it did.
    """
    own = e.get("original_message") if checkpoint_failed_ranks(e) == [rank] else None
    return f"{text.strip()} (RANK {rank}: {own})" if own else text


def _relayed_checkpoint_failures(events: Sequence[Event]) -> dict[int, Event]:
    """Ranks a DCP `CheckpointException` names as failed, each with the earliest report naming it.

    torch.distributed.checkpoint runs each rank's step (planning, writing, reading) inside `try`, wraps what
    it raised with its traceback (`_wrap_exception`), gathers the wrapped failures to the coordinator and
    raises one `CheckpointException` that carries them (torch/distributed/checkpoint/utils.py
    `_DistWrapper.reduce_scatter` / `all_reduce` / `all_gather`, api.py `CheckpointException.__str__`:
    `CheckpointException ranks:dict_keys([<r>, ...])`, then each failing rank's own traceback, `(RANK
    <r>)`). So the report of the coordinator (or of any rank) is the failing ranks' own exception relayed:
    it names them as surely as their own lines would (failure-signatures.md section 0.2 R1), and it is often
    the only line kept, when a user pastes rank 0's output or the failing ranks' files are missing.
    """
    out: dict[int, Event] = {}
    for e in events:
        if e.kind not in ("exception", "error_file"):
            continue
        for r in checkpoint_failed_ranks(e) or ():
            cur = out.get(r)
            if cur is None or (e.time is not None and (cur.time is None or e.time < cur.time)):
                out[r] = e
    return out


def _before_link_errors(events: Sequence[Event]) -> Callable[[Event], bool]:
    """Does a fault come before every error a transport reported toward a peer (an IB completion error, a
    socket reset)? By the clock when both are timed, else by line order in the same file (a merged console
    prints in arrival order); False when the logs cannot order them or no peer error exists.

    A peer process that dies takes its queue pairs and sockets with it, so the survivors' completions toward
    it fail with retry-exceeded a few seconds later (failure-signatures.md section 9, culprit rule (1) and
    'Contradicts': preceded by the peer's traceback or exit -> victim; section 0.2 R1)."""
    links = [e for e in events if e.kind == "network_error" and e.get("peer")]
    first_time = min((e.time for e in links if e.time is not None), default=None)
    first_line: dict[str, int] = {}
    for e in links:
        first_line[e.path] = min(first_line.get(e.path, e.line), e.line)

    def before(e: Event) -> bool:
        if not links:
            return False
        if e.time is not None and first_time is not None:
            return e.time < first_time
        return e.path in first_line and e.line < first_line[e.path]

    return before


# What another rank prints once a collective or a peer failed: collective timeouts (back-dated to when the
# wait began), lost peers, transport and size-check aborts, desync and mismatch reports, and exceptions that
# only pass such a failure on (failure-signatures.md section 0.1 steps 2-4, section 17).
_PEER_ERROR_KINDS = frozenset({
    "hang_detected", "network_error", "peer_closed", "gloo_error", "process_teardown", "collective_mismatch",
    "monitored_barrier_failure", "desync_report", "nccl_error", "watchdog_terminated", "store_error"})


def _before_peer_errors(events: Sequence[Event], sn: bool) -> Callable[[Event, int], bool]:
    """Does rank r's own fault `e` come before every error another rank printed about a collective or a
    peer, and before at least one of them (failure-signatures.md section 0.2 R1 and R3, section 0.7 step 3)?

    Compared by the clock where both are dated (a collective timeout from when its wait began), else by line
    order in one file (a merged console prints in arrival order); an error that can be ordered neither way
    (undated, in another rank's file) is left out. False when no other rank's error can be ordered."""
    def passed_on(w: Event) -> bool:
        return (w.kind in ("exception", "error_file") and not is_own_crash(w) and not _agent_exception(w)
                and not str(w.get("exc_type") or "").endswith("KeyboardInterrupt"))

    # (each rank's dated progress lines: a wait began after its rank's last one)
    progress: dict[int, list[float]] = {}
    for p in events:
        if p.kind == "progress" and p.time is not None and (pr := rank_about(p, sn)) is not None:
            progress.setdefault(pr, []).append(p.time)

    def latest_progress(w: Event, wr: int) -> float | None:
        steps = [t for t in progress.get(wr, ()) if w.time is not None and t <= w.time]
        return max(steps) if steps else None

    # Each ranked peer error with, for a dated collective timeout, when its wait began and its rank's last
    # progress line before the report: read once here, not again for every rank's fault.
    peers: list[tuple[int, Event, float | None, float | None]] = []
    for w in events:
        if not (w.kind in _PEER_ERROR_KINDS or passed_on(w)) or (wr := rank_about(w, sn)) is None:
            continue
        if w.kind == "hang_detected" and w.time is not None:
            peers.append((wr, w, _started(w), latest_progress(w, wr)))
        else:
            peers.append((wr, w, None, None))

    def before(e: Event, r: int) -> bool:
        later = 0
        for wr, w, start, last in peers:
            if wr == r:
                continue
            if e.time is not None and w.time is not None:
                if w.time < e.time:
                    return False
                if w.kind != "hang_detected":
                    later += 1
                    continue
                # a wait reported after the fault: it began when it timed out minus its timeout (R3), and
                # not before its rank's last progress line; begun before the fault, the fault did not cause
                # it; when the rank printed progress after that back-dated start, the report came early (a
                # monitored barrier whose peer went away) and the wait may have begun on either side
                if start is None or start >= e.time or (last is not None and last >= e.time):
                    later += 1
                elif last is None or last <= start:
                    return False
            elif w.path == e.path:
                if w.line < e.line:
                    return False
                later += 1
        return later > 0

    return before


def _agent_exception(e: Event) -> bool:
    """The torchrun agent's own traceback (`SignalException` when the job is stopped, `ChildFailedError`):
    raised in torch.distributed.elastic or through the `torchrun` entry point, not a worker's."""
    if str(e.get("exc_type") or "").startswith("torch.distributed.elastic"):
        return True
    frames = e.get("frames")
    return isinstance(frames, list) and any(
        isinstance(f, str) and ("/bin/torchrun:" in f or "torch/distributed/elastic/" in f or
                                "torch/distributed/run.py" in f) for f in frames)


# The transformers example scripts' logging format (`logging.basicConfig(format="%(asctime)s - %(levelname)s -
# %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S")`), at INFO.
_HF_INFO_RE = re.compile(r"^\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2} - INFO - [\w.]{1,80} - ")


# A log record's level word in its header line, when no envelope stated the level.
_RECORD_LEVEL_RE = re.compile(r"\b(?:ERROR|CRITICAL|FATAL|WARNING|WARN|EXCEPTION)\b")


def date_logged_tracebacks(events: list[Event]) -> list[Event]:
    """An untimed traceback right under a timed error record of its writer takes that record's time.

    Python's logging prints the traceback of `logger.exception(...)` / `log.error(..., exc_info=True)` as
    part of the record, under its header line (Lib/logging/__init__.py `Formatter.format` appends
    `formatException`), so the header's time is when the exception was caught and logged. Without it the
    traceback has no time and cannot be ordered against the peers' errors (failure-signatures.md section 0.2
    R1 and R3: the earliest local fault is the culprit; section 0.7 step 2)."""
    last: dict[tuple[str, int | None, str | None], Event] = {}
    out: list[Event] | None = None
    for i, e in enumerate(events):
        key = (e.path, e.rank, e.writer)
        if e.kind == "exception" and e.time is None:
            head = last.get(key)
            if (head is not None and 0 < e.line - head.line <= HEADER_GAP_LINES
                    and (head.level in ("W", "E", "F", "C") or (head.level is None
                                                                and _RECORD_LEVEL_RE.search(head.text)))):
                if out is None:
                    out = list(events[:i])
                out.append(replace(e, time=head.time))
                continue
        elif e.time is not None and e.kind != "last_line":
            last[key] = e
        if out is not None:
            out.append(e)
    return events if out is None else out


def attribute_main_process_stream(events: list[Event]) -> list[Event]:
    """`events` with the main process's own lines of an unprefixed console given to rank 0, where the console
    shows that only the main process writes them.

    A transformers example script prints `Process rank: <local rank>, ... distributed training: True` at
    WARNING on every process and logs INFO only on the main process (replicas log at `log_level_replica`,
    warning by default: TrainingArguments.get_process_log_level, `should_log` = local process zero); the
    Trainer writes its `{'loss': ...}` records only on world process zero (ProgressCallback.on_log,
    `state.is_world_process_zero`). So in a file holding two or more such banners (distinct local ranks, none
    attributed to a rank), on one node, the unattributed phase and progress lines in that INFO format and the
    Trainer's records are the main process's: rank 0, the "main process only" section issue 8 allows to
    name a side (failure-signatures.md section 1, "Confirms": the odd rank is rank 0 in rank-0-only code).
    """
    banners: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.kind == "process_banner" and e.rank is None and e.get("distributed") is True:
            r = e.get("process_rank")
            if isinstance(r, int) and r >= 0:
                banners[e.path].add(r)
    paths = {p for p, rs in banners.items() if len(rs) >= 2 and 0 in rs}
    if not paths or not single_node(events):
        return events

    def main_only(e: Event) -> bool:
        if e.rank is not None or e.path not in paths or e.kind not in ("phase", "progress"):
            return False
        return e.get("pattern") == "hf_trainer" or bool(_HF_INFO_RE.match(e.text))

    if not any(main_only(e) for e in events):
        return events
    return [replace(e, rank=0) if main_only(e) else e for e in events]


# How many lines below its `Traceback` header an unattributed traceback's exception line may stand (deep
# stacks print two lines per frame; a longer block is cut by the reader anyway).
TRACEBACK_SPAN_LINES = 400


def attribute_lone_exit(events: list[Event]) -> list[Event]:
    """`events` with an unattributed traceback of a process's own fault given to the only rank the launcher
    saw exit with a positive code, when the logs leave that one choice.

    A Python exception that ends a worker makes it exit with code 1 (failure-signatures.md section 6), and
    torchrun's agent logs that exit as `failed (exitcode: 1) local_rank: <l>` with the local rank (the global
    one on a single node; section 0.6, elastic/multiprocessing/api.py `_poll`); before torch 2.4 the
    worker's own traceback has no `[rankN]:` prefix (log-formats.md section 9.2). Section 17.5: the agent's
    failure line is evidence only "when its exitcode is 1 with a non-distributed traceback". So when exactly
    one rank exited with a positive code by the launcher's lines, that rank has no traceback of its own, and
    every unattributed traceback of a local fault (one, or copies of one: a `--tee` console repeats it)
    raised the same exception, the traceback and the fault events on its exception line (an OOM, a CUDA
    error read from the same line) are that rank's. A traceback of a distributed error (a victim's timeout)
    is never moved; with two positive exits, or with none, nothing is.
    """
    sn = single_node(events)
    exited = {r for e in events
              if (e.kind in ("child_failed", "worker_failed")
                  or (e.kind == "launcher_exit" and e.get("launcher") == "srun"))
              and (code := _exitcode(e)) is not None and code > 0 and (r := rank_about(e, sn)) is not None}
    if len(exited) != 1:
        return events
    rank = next(iter(exited))
    if any(e.kind in ("exception", "error_file") and e.rank == rank for e in events):
        return events
    unowned = [e for e in events
               if e.kind == "exception" and e.rank is None and is_own_crash(e) and e.get("exc_type")
               and not _agent_exception(e)]
    said = {(str(e.get("exc_type")), str(e.get("message") or "")) for e in unowned}
    if len(said) != 1:
        return events
    message = next(iter(said))[1]
    spans = {(e.path, e.line) for e in unowned}

    def in_traceback(e: Event) -> bool:
        if e.rank is not None or e.kind not in CRASH_KINDS or (message and message not in e.text):
            return False
        return any(p == e.path and line <= e.line <= line + TRACEBACK_SPAN_LINES for p, line in spans)

    moved = {id(e) for e in unowned} | {id(e) for e in events if in_traceback(e)}
    return [replace(e, rank=rank) if id(e) in moved else e for e in events]


# How long before its peers' wait began an unattributed crash may be and still be why they waited (the
# crashed rank dies in the step whose collective the others then enter).
UNOWNED_CRASH_SLACK_S = 300.0


def unowned_crash_rows(events: Sequence[Event], hosts: dict[int, str], world: int | None) -> list[Row]:
    """Python exceptions of a process's own (not a peer's failure) that no line attributes to a rank, and
    whether each came before every rank's hang report.

    Before torch 2.4 an uncaught traceback carries no `[rankN]:` prefix, so a console or an excerpt often
    holds a crash nobody's name is on beside the timeouts of the ranks that waited for it (failure-signatures
    section 6: the earliest non-distributed traceback is the cause; the later timeouts are its victims).
    `rank` is the writer only where the logs leave one choice: the world size is stated and every other rank
    of it reported a hang or a failure of its own (a rank that raised cannot also wait in the collective).
    `before_hangs`: earlier than the first hang report or lost-peer error by the clock (and no more than
    UNOWNED_CRASH_SLACK_S before the earliest wait began, its report time less its `ran for`), or by line
    order in the same file when either is untimed; untimed in different files counts as before (the timeouts
    fire a timeout later). A peer's `Connection closed by peer` is the other way its survivors learn of the
    crash: gloo's pair sees the dead process's socket close at once (failure-signatures.md sections 6, 17).
    """
    sn = single_node(events)
    hangs = [e for e in events if e.kind in ("hang_detected", "peer_closed")]
    first_time = min((e.time for e in hangs if e.time is not None), default=None)
    # The waits began a timeout before the reports: a crash long before that (the job trained on) is not why.
    starts = [e.time - ms / 1000.0 for e in hangs
              if e.time is not None and isinstance(ms := e.get("elapsed_ms"), (int, float)) and ms >= 0]
    wait_start = min(starts) if starts else None
    first_line: dict[str, int] = {}
    for e in hangs:
        first_line[e.path] = min(first_line.get(e.path, e.line), e.line)
    failed = {r for e in events if e.kind in FAILURE_KINDS and (r := rank_about(e, sn)) is not None}
    left = set(range(world)) - failed if world and world <= 65536 else set()
    rank = next(iter(left)) if len(left) == 1 else None   # the one rank of the world not heard failing
    rows: list[Row] = []
    for e in events:
        if e.kind != "exception" or rank_about(e, sn) is not None or not is_own_crash(e):
            continue
        if not e.get("exc_type") or _agent_exception(e):
            continue
        if e.time is not None and first_time is not None:
            before = first_time >= e.time >= (wait_start or e.time) - UNOWNED_CRASH_SLACK_S
        elif e.path in first_line:
            before = e.line < first_line[e.path]
        else:
            before = True
        rows.append({
            "rank": rank,
            "host": e.host or (host_of(e, hosts, rank) if rank is not None else None),
            "exc_type": e.get("exc_type"),
            "before_hangs": bool(hangs) and before,
            "time": e.time,
            "text": e.text[:300],
            "path": e.path,
            "line": e.line,
        })
    return rows


def first_failure_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """Failure events on the normalised timeline, earliest first; untimed ones after, in file order."""
    sn = single_node(events)
    fails = [e for e in events if e.kind in FAILURE_KINDS]
    fails.sort(key=lambda e: (e.time is None, e.time or 0.0, e.path, e.line, e.kind))
    rows = []
    for i, e in enumerate(fails, 1):
        rank = rank_about(e, sn)
        rows.append(
            {
                "order": i,
                "rank": rank,
                "host": host_of(e, hosts, rank),
                "time": e.time,
                "kind": e.kind,
                "text": e.text[:300],
                "path": e.path,
                "line": e.line,
            }
        )
    return rows


_COMPONENTS = {"torch", "cuda", "nccl", "driver", "python"}
_RELEASE_RE = re.compile(r"^(\d{1,4}(?:\.\d{1,6}){0,3})")


def normalise_version(component: str, version: str) -> str:
    """One spelling per release: `2.3`, `2.3.0` and `2.3.0+cu121` of torch are one version.

    failure-signatures.md section 0.4: the local label (`+cu121`) names a build variant of the same release;
    missing trailing components are zeros. Driver versions (`535.104.05`) are compared as printed.
    """
    m = _RELEASE_RE.match(version.strip())
    if m is None or component == "driver":
        return version.strip()
    parts = m.group(1).split(".")
    while len(parts) < 3:
        parts.append("0")
    return ".".join(str(int(p)) for p in parts)


# NCCL 2.23+ `initTransportsRank` (src/init.cc): each rank compares every peer's version with its own and
# stops at the first peer that differs, printing that peer first and itself second:
# `Mismatched NCCL version detected : rank <peer> version <code> rank <self> version <code>`.
_NCCL_MISMATCH_RE = re.compile(
    r"Mismatched NCCL version detected : rank (\d{1,7}) version (\d{4,6}) rank (\d{1,7}) version (\d{4,6})")


def decode_nccl_code(code: int) -> str:
    """NCCL_VERSION_CODE as `maj.min.patch` (failure-signatures.md section 0.4: encoding changed at 2.9)."""
    if code >= 20900:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _mismatch_statements(e: Event, hosts: dict[int, str]) -> list[tuple[str | None, int | None, str]]:
    """(host, rank, version) of both sides of NCCL's version-check WARN; the printing rank runs on the
    line's host, the peer on the host its own lines show (else the peer is counted by its rank)."""
    m = _NCCL_MISMATCH_RE.search(str(e.get("message") or e.text))
    if m is None:
        return []
    peer, peer_code, me, my_code = (int(g) for g in m.groups())
    my_host = e.host or e.get("nccl_host") or hosts.get(me)
    return [(my_host, me, decode_nccl_code(my_code)), (hosts.get(peer), peer, decode_nccl_code(peer_code))]


# ProcessGroupNCCL's PG-level log prefix names the torch release band that printed it (log-formats.md
# sections 0 and 1.2): `[PG <uid> Rank <r>]` / `[PG <uid> (<desc>) Rank <r>]` in 2.3-2.4, `[PG ID <id> PG GUID
# <guid>[(<desc>)] Rank <r>]` from 2.5 (createLogPrefix). Hosts whose lines carry the two shapes run two
# torch releases (failure-signatures.md section 11.1, "Mixed torch across nodes": different log-format
# fingerprints from different nodes). The two shapes never come from one release, so they are compared only
# with each other, as a component of their own, never with a stated version number.
LOG_FORMAT_COMPONENT = "torch (log format)"
_PG_PREFIX_25_RE = re.compile(r"\[PG ID \d{1,10} PG GUID ")
_PG_PREFIX_23_RE = re.compile(r"\[PG [^\s()\[\]]{1,128}(?: \([^()]{0,256}\))? Rank \d{1,10}\]")


def _log_format_release(text: str) -> str | None:
    """`2.5+` or `2.3-2.4` from a line's ProcessGroupNCCL prefix, None without one."""
    if "[PG " not in text:
        return None
    if _PG_PREFIX_25_RE.search(text):
        return "2.5+"
    if _PG_PREFIX_23_RE.search(text):
        return "2.3-2.4"
    return None


def version_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """Distinct (host, rank, component, version) statements, with how many versions each component has.

    Versions are normalised (`normalise_version`). A statement that names neither a host nor a rank (an
    environment dump such as `collect_env` or `pip list`, a README beside the logs) is context: it is
    listed, but only versions that ranks or hosts actually run are compared, so a mismatch needs two ranks
    or hosts that state different versions.
    """
    seen: set[tuple[str | None, int | None, str, str]] = set()
    for e in events:
        if e.kind == "version_info":
            comp, ver = e.get("component"), e.get("version")
        elif e.kind == "nccl_version":
            comp, ver = "nccl", e.get("version")
        elif e.kind == "nccl_error" and e.get("nccl_version"):
            comp, ver = "nccl", e.get("nccl_version")
        elif e.kind == "nccl_warn":
            for h, r, v in _mismatch_statements(e, hosts):
                seen.add((h, r, "nccl", normalise_version("nccl", v)))
            continue
        else:
            band = _log_format_release(e.text) if e.rank is not None else None
            if band is not None:
                seen.add((e.host or host_of(e, hosts), e.rank, LOG_FORMAT_COMPONENT, band))
            continue
        if comp not in _COMPONENTS or not ver:
            continue
        host = e.host or e.get("nccl_host") or host_of(e, hosts)
        seen.add((host, e.rank, str(comp), normalise_version(str(comp), str(ver))))
    # A statement naming only a rank is on the host another statement of that rank names.
    rank_host = {r: h for h, r, _, _ in seen if h is not None and r is not None}
    seen = {(rank_host.get(r) if h is None and r is not None else h, r, c, v) for h, r, c, v in seen}
    distinct: dict[str, set[str]] = defaultdict(set)
    holders: dict[tuple[str, str], set[object]] = defaultdict(set)
    # The ranks holding each version: a rank's own statement, or every rank the job placed on a stating
    # host. Sides are compared in one unit: by host where every statement names one; where some name only
    # a rank, by ranks (when every version has some), so a version stated by two hosts does not lose to
    # one stated by four ranks of a third host whose lines name no host (hosts compared with ranks).
    on_host: dict[str, set[int]] = defaultdict(set)
    for r, h in hosts.items():
        on_host[short_host(h)].add(r)
    rank_holders: dict[tuple[str, str], set[int]] = defaultdict(set)
    for h, r, c, v in seen:
        who = h if h is not None else r
        if who is not None:
            distinct[c].add(v)
            holders[(c, v)].add(who)
            if r is not None:
                rank_holders[(c, v)].add(r)
            elif h is not None:
                rank_holders[(c, v)] |= on_host.get(short_host(h), set())
    mixed = {c for h, r, c, v in seen if h is None and r is not None}
    host_holders: dict[tuple[str, str], set[str]] = defaultdict(set)
    for h, _, c, v in seen:
        if h is not None:
            host_holders[(c, v)].add(short_host(h))
    for c, vs in distinct.items():
        if c not in mixed:
            continue
        if all(host_holders[(c, v)] for v in vs):
            # Every version is run by a host that states it: compare hosts, the unit a version belongs to
            # (section 0.2 R5). A rank named only as the peer of NCCL's check has no host, and the check's
            # peers are skewed (each rank names the first differing peer, so the majority's ranks all name
            # the minority's lowest rank): it is one of the hosts' ranks, not one more side.
            for v in vs:
                holders[(c, v)] = set(host_holders[(c, v)])
        elif all(rank_holders[(c, v)] for v in vs):
            for v in vs:
                holders[(c, v)] = set(rank_holders[(c, v)])
    top = {c: max(len(holders[(c, v)]) for v in vs) for c, vs in distinct.items()}
    # A tie (two hosts, two versions) has no minority: no side is "the odd one".
    rows = [
        {
            "host": h,
            "rank": r,
            "component": c,
            "version": v,
            "distinct": len(distinct[c]) if (h is not None or r is not None) else 0,
            "minority": (h is not None or r is not None)
            and len(distinct[c]) > 1
            and len(holders[(c, v)]) < top[c],
        }
        for h, r, c, v in seen
    ]
    return sorted(rows, key=lambda r: (r["component"], r["version"], r["host"] or "", r["rank"] or -1))


def own_log_ranks(files: Sequence[InputFile]) -> set[int]:
    """Ranks with a file of their own (per-rank file names, torchrun --log-dir trees).

    Only there does a rank's silence say something: in a shared console or an excerpt, a rank that printed
    nothing may simply have been cut out.
    """
    return {f.origin.rank for f in files if f.origin.rank is not None}


def printed_ranks(files: Sequence[InputFile]) -> set[int]:
    """Ranks with any line of their own in the input: a file of their own, or lines that carry their rank
    (`[rankN]:`), read into an event or not (a warning no parser knows is still the rank's output)."""
    return {r for f in files for r in f.ranks} | own_log_ranks(files)


# A rank's own error that it can live through: caught and logged (`logging.exception`), a retried upload,
# an OOM a batch-size finder catches. A hang, a launcher's failure line or a sticky CUDA error never is.
_SURVIVABLE_KINDS = frozenset({"exception", "error_line", "oom", "dataloader_error"})


def survived_failures(events: Sequence[Event], files: Sequence[InputFile]) -> set[int]:
    """Indexes of error events whose writer reported training progress after them.

    A process that printed a further step after an error went on training: the error did not end it (a
    traceback logged by a handler, a retry). Only the same writer counts: the same rank, the same launcher
    prefix stream (`[default1]:`), or a file one process writes; in a shared console an unattributed
    traceback is followed by other ranks' lines, which prove nothing. "After" is the line order only in a
    file of one stream (a torchrun `--log-dir` stdout.log/stderr.log): where stdout and stderr meet, buffered
    prints land late, so there the progress line's own time must be later than the error's (a logged
    traceback takes the time of the log record just above it). With worker-group restarts in a shared
    file, a later attempt's progress is not the same process either.

    Lines the `logging` module wrote keep their order in any file: `StreamHandler.emit` flushes after each
    record (CPython Lib/logging/__init__.py), so a progress record of the writer below its error record was
    written after it. `Logger.exception` writes the record and its traceback in one `write`
    (`Formatter.format` appends the formatted exception to the message), so an unprefixed traceback right
    under a writer's error record is that writer's logged exception, and the traceback's exception line is
    part of it.

    A finish line of the same writer after the error (`run_finished`: `Training completed`, `done in 41s`)
    counts by line order alone, in any file: buffering can move a print, but a process that an uncaught
    exception ended never reaches the end of its script to print it (an error after the finish, at teardown,
    stays below that line).

    Another rank's progress counts too, once it is well past the error (by more than PEER_PROGRESS_S, so
    that neither a step in flight nor two hosts' clocks explain it): ranks of one job block in their next
    collective when a peer is gone (failure-signatures.md section 0.1, step 2), so a peer that trained on
    for minutes proves the writer did as well.
    """
    one_stream = {f.path for f in files if f.origin.stream is not None}
    own = {f.path for f in files if f.origin.rank is not None or f.origin.local_rank is not None}
    restarted = {e.path for e in events if e.kind == "worker_group_restart"}

    def writer(e: Event) -> tuple[Any, ...] | None:
        if e.path in own:
            return (e.path,)
        if e.path in restarted:
            return None
        if e.rank is not None:
            return (e.path, "rank", e.rank)
        if e.writer:
            return (e.path, "writer", e.writer)
        return None

    last_line: dict[tuple[Any, ...], int] = {}
    last_record: dict[tuple[Any, ...], int] = {}   # the writer's latest progress line written by `logging`
    last_time: dict[tuple[Any, ...], float] = {}
    finished: dict[tuple[Any, ...], int] = {}
    headers: dict[tuple[str, int], float] = {}
    records: dict[tuple[str, int], tuple[Any, ...]] = {}   # an error record's line -> its writer
    for e in events:
        if e.kind == "run_finished":
            key = writer(e)
            if key is not None:
                finished[key] = max(finished.get(key, 0), e.line)
        elif e.kind == "progress":
            key = writer(e)
            if key is not None:
                last_line[key] = max(last_line.get(key, 0), e.line)
                if e.level is not None:
                    last_record[key] = max(last_record.get(key, 0), e.line)
                if e.time is not None:
                    last_time[key] = max(last_time.get(key, e.time), e.time)
        elif e.kind == "error_line" or (e.level or "") in ERROR_LEVELS:
            if e.time is not None:
                headers[(e.path, e.line)] = e.time
            key = writer(e)
            if key is not None and (e.level or "") in ERROR_LEVELS:
                records[(e.path, e.line)] = key
    out: set[int] = (_survived_by_success(events, files) | earlier_attempts(events, files)
                     | _store_gone_after_finish(events))
    if not last_line and not finished:
        return out | _survived_unattributed(events, files, writer)
    out |= _survived_by_peers(events, restarted)
    logged_tracebacks = _logged_tracebacks(events, records)
    for i, e in enumerate(events):
        logged = e.kind not in FAILURE_KINDS and (e.level or "") in ERROR_LEVELS
        if not (e.kind in _SURVIVABLE_KINDS or logged):
            continue
        key = writer(e)
        by_record = key is None and i in logged_tracebacks
        if by_record:
            key = logged_tracebacks[i]
        if key is not None and finished.get(key, 0) > e.line:
            out.add(i)
            continue
        if key is None or key not in last_line:
            continue
        if (logged or by_record) and last_record.get(key, 0) > e.line:
            out.add(i)
            continue
        if e.path in one_stream:
            if last_line[key] > e.line:
                out.add(i)
            continue
        t = e.time if e.time is not None else headers.get((e.path, e.line - 1))
        if t is not None and key in last_time and last_time[key] > t:
            out.add(i)
    return out | _survived_unattributed(events, files, writer)


def earlier_attempts(events: Sequence[Event], files: Sequence[InputFile]) -> set[int]:
    """Indexes of the failures of a torchrun console's earlier restart attempts (`--max-restarts`).

    ingest/attribute.py `_console_attempts` numbers a console's attempts where the agent restarted its
    workers (torch/distributed/elastic/agent/server/api.py `_invoke_run`): the job's end is its last
    attempt, so an earlier attempt's errors and the agent's reports of them are history, not the failure
    to explain (`restarts` words them for the report). A `--log-dir` tree's attempts are
    `_survived_by_success`'s.
    """
    tree = {f.path for f in files if f.origin.attempt is not None}
    last: dict[str, int] = {}
    for e in events:
        if e.attempt is not None and e.path not in tree and e.attempt > last.get(e.path, 0):
            last[e.path] = e.attempt
    # A last attempt that never trained (no step, no finish line: it failed while starting, e.g. at
    # `init_process_group`) has no failure of its own to judge: a restart is a follow-up of the previous
    # attempt's failure (failure-signatures.md section 12, last row), so every attempt is judged together.
    trained = {e.path for e in events
               if e.path in last and e.attempt == last[e.path] and e.kind in ("progress", "run_finished")}
    last = {p: a for p, a in last.items() if p in trained}
    out = {i for i, e in enumerate(events)
           if e.path in last and e.attempt is not None and e.attempt < last[e.path]
           and (_ended_badly(e) or e.kind in _AGENT_REPORT_KINDS)}
    return out | _left_before_recovery(events, last) | _earlier_tree_attempts(events, files)


def _left_before_recovery(events: Sequence[Event], last: dict[str, int]) -> set[int]:
    """Indexes of the failures in the files of a node that left an elastic job which then ran to its end
    without it.

    With `--nnodes MIN:MAX` the remaining agents re-form the worker group when a node leaves (preempted,
    cancelled, its agent stopped) and restart their workers (torch/distributed/elastic/agent/server/api.py
    `_invoke_run`; failure-signatures.md section 12, last row). When a console's last attempt trained to
    its end with no error (the job recovered), another file all of whose dated lines precede that attempt's
    first line is the console of a node that left before the restart: its stop and errors are the history
    of an earlier attempt, not how the job ended."""
    bad_in_last: set[str] = set()
    finished: set[str] = set()
    first_time: dict[str, float] = {}
    for e in events:   # one pass over the last attempts' events of every console
        if e.attempt is None or e.attempt != last.get(e.path):
            continue
        if _ended_badly(e):
            bad_in_last.add(e.path)
        if e.kind == "run_finished":
            finished.add(e.path)
        if e.time is not None:
            first_time[e.path] = min(first_time.get(e.path, e.time), e.time)
    starts = [t for p, t in first_time.items() if p in finished and p not in bad_in_last]
    if not starts:
        return set()
    start = min(starts)
    latest: dict[str, float] = {}
    for e in events:
        if e.path not in last and e.time is not None:
            latest[e.path] = max(latest.get(e.path, e.time), e.time)
    left = {p for p, t in latest.items() if t < start}
    return {i for i, e in enumerate(events)
            if e.path in left and (_ended_badly(e) or e.kind in _AGENT_REPORT_KINDS)}


def _earlier_tree_attempts(events: Sequence[Event], files: Sequence[InputFile]) -> set[int]:
    """Indexes of the failures of a `--log-dir` tree's earlier attempts when its newest attempt trained and
    failed too (one that ran to its end is `_survived_by_success`'s).

    torchrun writes each attempt's workers under `attempt_<n>/<local_rank>/` (log-formats.md section 3.2)
    and restarts the whole worker group after a failure (torch/distributed/elastic/agent/server/api.py
    `_invoke_run`): the job ended in the newest attempt, so the earlier attempts' errors are history
    (`restarts` words them). The agent's console outside the tree logs one `failed (exitcode: ...)`
    line per failed attempt (elastic/multiprocessing/api.py `SubprocessContext._poll`): with one tree and as
    many such lines as attempts, every one but the last, and the closing signals before it, are history too.
    A newest attempt that never trained (it failed while starting) is judged together with the earlier ones
    (failure-signatures.md section 12, last row).
    """
    trees: dict[tuple[Any, ...], dict[int, set[str]]] = {}
    for f in files:
        o = f.origin
        if o.attempt is not None and o.node_dir:
            trees.setdefault((o.host, o.node_dir), {}).setdefault(o.attempt, set()).add(f.path)
    out: set[int] = set()
    history: set[str] = set()
    newest_of: list[int] = []
    for attempts in trees.values():
        newest = max(attempts)
        paths = attempts[newest]
        if newest == 0 or not any(e.path in paths and e.kind in ("progress", "run_finished") for e in events):
            continue
        newest_of.append(newest)
        history |= {p for a, ps in attempts.items() if a < newest for p in ps}
    if not history:
        return out
    out = {i for i, e in enumerate(events) if e.path in history and _ended_badly(e)}
    if len(trees) == 1 and len(newest_of) == 1:
        tree = {f.path for f in files if f.origin.attempt is not None}
        agent = [(e.path, e.line, i) for i, e in enumerate(events)
                 if e.kind in _AGENT_REPORT_KINDS and e.path not in tree]
        failed = sorted((p, ln) for p, ln, i in agent if events[i].kind == "worker_failed")
        if len({p for p, _ in failed}) == 1 and len(failed) == newest_of[0] + 1:
            end = failed[-2]   # the earlier attempts' reports end at the one before the last
            out |= {i for p, ln, i in agent if (p, ln) <= end}
    return out


_AGENT_REPORT_KINDS = frozenset({"worker_failed", "closing_signal"})
_FOLLOW_KINDS = frozenset({"network_error", "peer_closed", "gloo_error", "hang_detected",
                           "collective_timeout", "store_error"})


def _attempt_failure(events: list[Event]) -> tuple[str, tuple[Any, ...]] | None:
    """How one restart attempt failed, in words, and a key that is equal for attempts that failed alike
    (the failed local rank, its exit code, the exception type); None when nothing in it failed.

    The agent's first `failed (exitcode: N) local_rank: L` line names the worker whose exit ended the
    attempt (elastic/multiprocessing/api.py); an exit code 1 is an uncaught exception, whose traceback that
    rank printed (the first one of the attempt names it where the rank is unknown)."""
    events = sorted(events, key=lambda e: (e.path, e.line))
    agent = next((e for e in events if e.kind == "worker_failed"), None)
    # A lost connection or a timeout is a peer's failure seen from the other side (failure-signatures.md
    # section 0.1): an attempt's own error is the first exception that is neither.
    # (the events other parsers read from a traceback's last line share that line's text)
    follow = {(e.path, e.text) for e in events if e.kind in _FOLLOW_KINDS}
    excs = sorted((e for e in events if e.kind == "exception" and e.get("exc_type") and e.rank is not None),
                  key=lambda e: ((e.path, e.text) in follow, e.time is None, e.time or 0.0, e.path, e.line))
    if agent is None and not excs and not any(_ended_badly(e) or e.kind == "child_failed" for e in events):
        return None
    lr = non_negative_int(agent.get("local_rank")) if agent is not None else None
    code = agent.get("exitcode") if agent is not None else None
    exc = next((e for e in excs if lr is not None and e.rank == lr), None) or (
        excs[0] if excs and (agent is None or str(code) == "1") else None)
    # The agent's line names the first worker it found dead, which may be a peer that lost the failing rank
    # (another node's agent, a victim that exited first): the attempt's own error is the first exception
    # that is no such consequence, when there is one.
    own = excs[0] if excs and (excs[0].path, excs[0].text) not in follow else None
    if own is not None and exc is not own and (exc is None or (exc.path, exc.text) in follow):
        own_type = str(own.get("exc_type")).rsplit(".", 1)[-1]
        return f"rank {own.rank} raised {_exc_words(own)}", (own.rank, "1", own_type)
    exc_type = str(exc.get("exc_type")).rsplit(".", 1)[-1] if exc is not None else None
    if agent is not None:
        who = f"local rank {lr}" if lr is not None else "a worker"
        n = to_int(str(code))
        if n is not None and n < 0:
            text = f"{who} was killed by {signal_name(n)} (exit code {n})"
        else:
            text = f"{who} exited with code {code}"
        if exc is not None and n == 1:
            text += f" after {_exc_words(exc)}"
    elif exc is not None:
        text = f"rank {exc.rank} raised {_exc_words(exc)}"
    else:
        text = "it reported errors"
    # where no agent line names the worker (a `--log-dir` tree's attempt folders), the raising rank does
    return text, (lr if lr is not None or exc is None else exc.rank, code, exc_type)


def _exc_words(e: Event) -> str:
    exc_type = str(e.get("exc_type")).rsplit(".", 1)[-1]
    message = " ".join(str(e.get("message") or "").split())
    if len(message) > 80:
        message = message[:77] + "..."
    return f"{exc_type}: {message}" if message else exc_type


class Restarts(NamedTuple):
    """What the restart attempts of a torchrun job say (`restarts`): the words for the verdict and the
    follow-up attempt."""

    note: str
    # The last attempt when it failed before any training step after an earlier attempt failed (the note's
    # "a follow-up of that earlier failure"), else None. Its failure (a rendezvous or store error of the
    # restarted group, a peer that never came back) is the earlier failure's consequence: torchrun restarts
    # the whole group with the same code and data (elastic/agent/server/api.py `_invoke_run`), so what ended
    # the first failed attempt is what to fix (failure-signatures.md section 0.7: the first failure is the
    # root, later ones its consequences).
    followup: int | None = None


def restarts(events: Sequence[Event]) -> Restarts:
    """The earlier restart attempts of a torchrun job (`--max-restarts`), in words for the verdict, and its
    follow-up attempt (see `Restarts`).

    The verdict is about the job's end, its last attempt (`earlier_attempts`, `_survived_by_success`);
    what ended the attempts before it is context: a failure the restart survived, or the same failure in
    every attempt, which restarting cannot cure (torch/distributed/elastic/agent/server/api.py `_invoke_run`
    restarts the whole worker group with the same code and data). Attempts are numbered on the events by
    a `--log-dir` tree's `attempt_<n>` folders (ingest/origin.py) or a console's restart boundaries
    (ingest/attribute.py `_console_attempts`). An empty note for a job of one attempt."""
    by_attempt: dict[int, list[Event]] = {}
    for e in events:
        if e.attempt is not None:
            by_attempt.setdefault(e.attempt, []).append(e)
    if len(by_attempt) < 2:
        return Restarts("")
    last = max(by_attempt)
    failures = {a: _attempt_failure(evs) for a, evs in sorted(by_attempt.items())}
    earlier = [(a, f) for a, f in failures.items() if a < last and f is not None]
    if not earlier:
        return Restarts("")
    end = failures[last]
    keys = {f[1] for _, f in earlier}
    if end is not None and len(keys) == 1 and end[1] in keys and len(earlier) == last:
        return Restarts(
            f" Every one of the {last + 1} attempts of the worker group (torchrun `--max-restarts`)"
            f" failed the same way ({end[0]}): restarting cannot help, the cause must be fixed.")
    past = "; ".join(f"attempt {a}: {f[0]}" for a, f in earlier)
    trained = any(e.kind in ("progress", "run_finished") for e in by_attempt[last])
    if end is not None and not trained:
        return Restarts(
            f" The worker group was restarted (torchrun `--max-restarts`) after {past}; the last attempt"
            f" ({last}) failed before any training step ({end[0]}), a follow-up of that earlier failure:"
            f" every attempt is judged together.", last)
    if end is None:
        return Restarts(
            f" The worker group was restarted (torchrun `--max-restarts`) after an earlier attempt failed"
            f" ({past}); the last attempt ({last}) ran to the end, so that failure was survived.")
    return Restarts(
        f" This is the last attempt ({last}) of a restarted worker group (torchrun `--max-restarts`);"
        f" before it, {past}.")


def _ended_badly(e: Event) -> bool:
    return (e.kind in FAILURE_KINDS or e.kind in _SURVIVABLE_KINDS or e.kind == "nccl_error"
            or (e.level or "") in ERROR_LEVELS)


def _in_tree(origin: dict[str, Any], e: Event) -> bool:
    """Does the event's file sit in a torchrun `--log-dir` tree (`attempt_<n>/<local_rank>/`)?"""
    o = origin.get(e.path)
    return o is not None and o.attempt is not None


class _Nodes:
    """The nodes whose torchrun agent reported success, as far as their lines tell them apart.

    Each node runs its own agent, and an agent's `SUCCEEDED` says only that its own local workers exited 0
    (torch/distributed/elastic/agent/server/api.py `_invoke_run`): another node of the same job may have
    been lost meanwhile, and its workers' store errors are then that loss, not teardown. A node is told by
    the host a line names (a pdsh prefix, an NCCL envelope), else by its outer launcher stream in a merged
    console (`srun -l` task, log-formats.md section 9.3), else by the console of its own agent.
    """

    def __init__(self) -> None:
        self.hosts: set[str] = set()
        self.streams: set[tuple[str, str]] = set()
        self.files: set[str] = set()
        self.unplaced = False   # a success whose node no line tells (it may be any node's)

    def add(self, e: Event) -> None:
        host, stream = _node_of(e)
        if host is not None:
            self.hosts.add(host)
        elif stream is not None:
            self.streams.add((e.path, stream))
        else:
            self.files.add(e.path)
            self.unplaced = True

    def may_hold(self, e: Event, agent_console: bool) -> bool:
        """Could the node that wrote `e` be one of these? False only when its lines show it is another."""
        host, stream = _node_of(e)
        if host is not None and self.hosts:
            return host in self.hosts or bool(self.streams) or self.unplaced
        if stream is not None and self.streams:
            return (e.path, stream) in self.streams or bool(self.hosts) or self.unplaced
        if agent_console and host is None and stream is None:
            # the file is an agent's console (its own agent's lines are in it): that agent must be the one
            return e.path in self.files or bool(self.hosts) or bool(self.streams)
        return True


def _node_of(e: Event) -> tuple[str | None, str | None]:
    """(short host, outer launcher stream) of the node an event's line came from, None where unknown."""
    host = short_host(e.host) if e.host else e.host
    w = e.writer
    outer = w.split("/", 1)[0] if w else ""
    return (host or None), (outer if outer and not outer.startswith("tee ") else None)


def _survived_by_success(events: Sequence[Event], files: Sequence[InputFile]) -> set[int]:
    """Indexes of errors that a successful end of the worker group shows were survived.

    The torchrun agent logs `Local worker group finished (WorkerState.SUCCEEDED)` / `worker group
    successfully finished` only when every local worker exited 0 (torch/distributed/elastic/agent/server/
    api.py `_invoke_run`, `_exit_barrier`; log-formats.md section 3.5); with `--max-restarts` a failed
    attempt is followed by a restarted one (`Worker group FAILED. <k>/<m> attempts left`). So in the file
    holding the agent's success line, the error lines above it did not end the run: a failure of an earlier
    attempt, or store-gone warnings of the heartbeat monitor at teardown once the store host exited first
    (failure-signatures.md section 17.7). Store errors elsewhere in such a run are that teardown noise too,
    unless dated before training began (a rendezvous failure, section 18 table) or written on a node whose
    own agent did not report success (`_Nodes`: a node lost while another finished).

    A `--log-dir` tree (`<run_id>/attempt_<n>/<local_rank>/`) whose newest attempt holds no error and a
    finish line (`run_finished`) from every one of its local ranks ran to completion after a restart: the
    errors of its earlier attempts, and agent lines (`failed (exitcode: 1)`, closing signals) dated before
    the newest attempt, are the survived failure of an earlier attempt, not the job's.
    """
    out: set[int] = set()
    success: dict[str, int] = {}
    succeeded = _Nodes()
    agent_files: set[str] = set()
    for e in events:
        if e.kind == "agent_succeeded":
            success[e.path] = max(success.get(e.path, 0), e.line)
            succeeded.add(e)
        if e.kind in AGENT_EVENT_KINDS:
            agent_files.add(e.path)
    first_progress = min((e.time for e in events
                          if e.kind in ("progress", "run_finished") and e.time is not None), default=None)
    for i, e in enumerate(events):
        if e.path in success and e.line < success[e.path] and _ended_badly(e):
            out.add(i)
        elif (e.path in success and e.line < success[e.path] and is_failure_warning(e)
              and succeeded.may_hold(e, e.path in agent_files)):
            out.add(i)   # an NCCL WARN its own node's workers exited 0 after (a peer closing at shutdown)
        elif (success and e.kind == "store_error"
              and (e.time is None or first_progress is None or e.time > first_progress)
              and succeeded.may_hold(e, e.path in agent_files)):
            out.add(i)   # a store that went away after training began, on a node whose agent succeeded: §17.7
    origin = {f.path: f.origin for f in files}
    trees: dict[tuple[Any, ...], dict[int, set[str]]] = {}
    for f in files:
        o = f.origin
        if o.attempt is not None and o.local_rank is not None and o.node_dir:
            trees.setdefault((o.host, o.node_dir), {}).setdefault(o.attempt, set()).add(f.path)
    for attempts in trees.values():
        newest = max(attempts)
        if newest == 0 or not attempts.get(0):
            continue
        paths = attempts[newest]
        ranks = {origin[p].local_rank for p in paths}
        ranks0 = {origin[p].local_rank for p in attempts[0]}
        done = {origin[e.path].local_rank for e in events
                if e.kind == "run_finished" and e.path in paths}
        if ranks != ranks0 or done != ranks or any(_ended_badly(e) for e in events if e.path in paths):
            continue
        earlier = {p for a, ps in attempts.items() if a < newest for p in ps}
        # The agent's reports outside the tree (its console): torchrun raises ChildFailedError (the summary
        # table) only when the run ends failed (torch/distributed/launcher/api.py `launch_agent`), and the
        # agent logs its `failed (exitcode: ...)` line once per failed poll: with no table, and no more
        # such lines than the attempts the tree shows restarted, they are the earlier attempts' failures.
        agent = [i for i, e in enumerate(events)
                 if e.kind in ("worker_failed", "closing_signal") and not _in_tree(origin, e)]
        failed = sum(1 for i in agent if events[i].kind == "worker_failed")
        whole = (len(trees) == 1 and failed <= newest and not any(e.kind == "child_failed" for e in events))
        for i, e in enumerate(events):
            if e.path in earlier and _ended_badly(e):
                out.add(i)
        if whole:
            out.update(agent)
    return out


def _store_gone_after_finish(events: Sequence[Event]) -> set[int]:
    """Indexes of store errors written after rank 0 said its run is over.

    The TCPStore lives in rank 0's process (or node 0's agent, which exits when its workers have): its
    clients' `recvValue failed ... Connection reset by peer` and the heartbeat monitor's `Failed to check the
    "should dump" flag on TCPStore` mean that host went away (failure-signatures.md section 17 item 7). When
    rank 0 printed a finish line (`run_finished`: `Training complete`, `training finished`) before them, it
    went away because it reached the end of its script: the normal order of exit, not a failure. "Before" is
    the line order in the same file (a process ended by an error never prints its finish line, and the
    others' store errors come after the store host left) or, across files, both lines' own times.
    """
    finish_line: dict[str, int] = {}
    finish_time: float | None = None
    for e in events:
        if e.kind == "run_finished" and e.rank == 0:
            finish_line[e.path] = min(finish_line.get(e.path, e.line), e.line)
            if e.time is not None:
                finish_time = e.time if finish_time is None else min(finish_time, e.time)
    if not finish_line:
        return set()
    out: set[int] = set()
    for i, e in enumerate(events):
        if e.kind != "store_error":
            continue
        below = e.path in finish_line and e.line > finish_line[e.path]
        later = finish_time is not None and e.time is not None and e.time > finish_time
        if below or later:
            out.add(i)
    return out


def _logged_tracebacks(
    events: Sequence[Event], records: dict[tuple[str, int], tuple[Any, ...]]
) -> dict[int, tuple[Any, ...]]:
    """Indexes of unattributed traceback events right under a writer's error record -> that writer.

    The traceback's header is the line after the record (`Logger.exception`, see survived_failures); its
    exception line (an `error_line` of the same file within the traceback's extent: the header, up to three
    lines per frame, the exception line) goes with it.
    """
    out: dict[int, tuple[Any, ...]] = {}
    spans: list[tuple[str, int, int, tuple[Any, ...]]] = []
    for i, e in enumerate(events):
        if e.kind == "exception" and e.rank is None and not e.writer:
            key = records.get((e.path, e.line - 1))
            if key is not None:
                out[i] = key
                frames = e.get("frames")
                n = len(frames) if isinstance(frames, list) else 0
                spans.append((e.path, e.line, e.line + 3 * n + 2, key))
    if spans:
        for i, e in enumerate(events):
            if e.kind == "error_line" and e.rank is None and not e.writer:
                for path, first, last, key in spans:
                    if e.path == path and first <= e.line <= last:
                        out[i] = key
    return out


PEER_PROGRESS_S = 300.0


def _survived_by_peers(events: Sequence[Event], restarted: set[str]) -> set[int]:
    """Indexes of a rank's errors after which another rank's progress went on for over PEER_PROGRESS_S
    (see survived_failures); an untimed error takes the time of its rank's latest timed line above it in its
    file (never another writer's: that could be earlier than the error) only when that line is an error
    record, the record `Logger.exception` writes with its traceback in one write. Under an ordinary timed
    line (a start-up print) a bare traceback may come any time later: that line bounds the error from below
    only, so peers' later progress does not show they went on after it."""
    latest: dict[int, float] = {}
    for e in events:
        if e.kind == "progress" and e.rank is not None and e.time is not None:
            latest[e.rank] = max(latest.get(e.rank, e.time), e.time)
    if len(latest) == 0:
        return set()
    # The latest progress of any rank but one's own: the two latest ranks answer for every rank.
    top = sorted(latest.items(), key=lambda kv: (-kv[1], kv[0]))[:2]

    def others_latest(rank: int) -> float | None:
        for r, last in top:
            if r != rank:
                return last
        return None

    out: set[int] = set()
    above: dict[tuple[str, int], tuple[float, bool]] = {}   # -> (time, an error record)
    for i, e in _in_line_order(events):
        if e.rank is None:
            continue
        if e.time is not None:
            above[(e.path, e.rank)] = (e.time, e.kind == "error_line" or (e.level or "") in ERROR_LEVELS)
        if e.path in restarted or not _survivable(e):
            continue
        record = above.get((e.path, e.rank)) if e.time is None else None
        t = e.time if e.time is not None else (record[0] if record is not None and record[1] else None)
        last = others_latest(e.rank) if t is not None else None
        if t is not None and last is not None and t + PEER_PROGRESS_S < last:
            out.add(i)
    return out


def _in_line_order(events: Sequence[Event]) -> Iterable[tuple[int, Event]]:
    """`enumerate(events)` sorted by path and line (stable). A job's events come in that order already
    (`build` sorts them): then they are taken as they are, without a pair and a key per event (tens of
    MiB at 16,384 ranks)."""
    prev: tuple[str, int] | None = None
    for e in events:
        key = (e.path, e.line)
        if prev is not None and key < prev:
            return sorted(enumerate(events), key=lambda ie: (ie[1].path, ie[1].line))
        prev = key
    return enumerate(events)


def _survivable(e: Event) -> bool:
    return e.kind in _SURVIVABLE_KINDS or (e.kind not in FAILURE_KINDS and (e.level or "") in ERROR_LEVELS)


def _survived_unattributed(
    events: Sequence[Event], files: Sequence[InputFile], writer: Any
) -> set[int]:
    """Indexes of unattributed errors in a job that demonstrably ran on and finished on every rank.

    In a shared console without rank prefixes a logged traceback (`logging.exception` on a retryable
    error) names no writer, so no process can be shown to have gone on after it. The job as a whole can:
    the error is survived when every failure-looking event of the input is such an unattributed error and,
    after the error (by time: a traceback takes the time of the log record above it), either the
    launcher's own output is in the same file (torchrun prints a failure table for any worker that exits
    non-zero; none is here) and at least one "finished" line per rank was printed there (per rank of the
    stated world size, of the ranks seen, and at least two when the launcher started several workers), or
    every rank seen (two at least, and the stated world size) printed a "finished" line tagged with its
    own rank.
    """
    candidates: list[int] = []
    for i, e in enumerate(events):
        failing = e.kind in FAILURE_KINDS or (e.level or "") in ERROR_LEVELS
        if not failing:
            continue
        if not _survivable(e) or writer(e) is not None:
            return set()  # a failure that is no unattributed survivable error: the job did not end clean
        candidates.append(i)
    if not candidates:
        return set()
    paths = {events[i].path for i in candidates}
    if len(paths) != 1:
        return set()
    path = paths.pop()
    launch = [e for e in events if e.kind == "launch_config" and e.path == path]
    worlds = {e.get("world_size") for e in events if isinstance(e.get("world_size"), int)}
    ranks = {e.rank for e in events if e.rank is not None}
    for f in files:
        ranks.update(f.ranks)
    need = max([1, len(ranks), *(w for w in worlds if isinstance(w, int))])
    if any(e.get("several_workers") for e in launch):
        need = max(need, 2)
    # Each event's time, or the time of the latest timed line above it in its file.
    time_at: dict[int, float] = {}
    last: float | None = None
    for i, e in enumerate(events):
        if e.path != path:
            continue
        if e.time is not None:
            last = e.time if last is None else max(last, e.time)
        if last is not None:
            time_at[i] = e.time if e.time is not None else last
    if any(i not in time_at for i in candidates):
        return set()
    error_time = max(time_at[i] for i in candidates)
    after = [e for i, e in enumerate(events)
             if e.kind == "run_finished" and e.path == path and time_at.get(i, -1.0) >= error_time
             and e.line > max(events[c].line for c in candidates)]
    if launch:
        return set(candidates) if len(after) >= need else set()
    # Without the launcher's output in the file, its failure table cannot vouch for the end; the ranks can:
    # every rank the logs show (two at least) said it finished, in a line tagged with its own rank, after the
    # error. A rank that finishes has completed every collective with its peers, so none of them failed first.
    said = {e.rank for e in after if e.rank is not None}
    return set(candidates) if len(said) >= 2 and ranks <= said and len(said) >= need else set()


# The local rank at the end of a `--tee` writer name (`tee default3`: role `default`, local rank 3).
_TEE_LOCAL_RE = re.compile(r"(\d{1,4})$")


def clean_exit_ranks(events: Sequence[Event], files: Sequence[InputFile] = ()) -> set[int]:
    """Ranks that exited 0 while their agent's other workers failed, read off a whole ChildFailedError table.

    Since torch 2.10 (pytorch#160908) torchrun lists every local worker whose exit code was not 0: the
    failed ones and the survivors it stopped (with their signal); earlier releases left the stopped
    survivors out. So a local rank missing from a complete table had exited 0 only where the agent's own
    lines show it stopped nobody the table leaves out: its `failed (exitcode ...)` line is in the same file
    and every pid it sent a closing signal to is in the table. The agent's local ranks are those below the
    highest one the table lists, all below `--nproc-per-node` when the command line states it, and the
    local-rank folders of its `--log-dir` tree when the input holds one agent's tree and one agent's table,
    the ranks that said in the table's file that their run or loop ended, in a job of one node,
    and the local ranks of the `--tee` prefixes (`[<role><local_rank>]:`, log-formats.md section 3) in the
    table's own file when that file holds one agent's `failed (exitcode ...)` line: a worker that printed
    through the agent's tee was one of its workers.
    """
    nprocs = {e.get("nproc_per_node") for e in events if e.kind == "launch_config"} - {None}
    nproc = next(iter(nprocs)) if len(nprocs) == 1 else None
    tree_locals = {f.origin.local_rank for f in files if f.origin.local_rank is not None}
    tree_agents = {f.origin.node_dir for f in files if f.origin.local_rank is not None}
    table_files = {e.path for e in events if e.kind == "child_failed" and e.get("table_local_ranks")}
    if len(tree_agents) != 1 or len(table_files) != 1:
        tree_locals = set()
    # A job of one node and one agent's table: a rank that said in the table's own file that its run or its
    # loop ended is one of that agent's workers (its global rank is its local rank, `single_node`) that got
    # to its end, even the highest, which no table row below it implies.
    own_ranks: set[int] = set()
    if len(table_files) == 1 and single_node(events):
        own_ranks = {e.rank for e in events if e.rank is not None and 0 <= e.rank <= 4096
                     and e.path in table_files and e.kind in ("run_finished", "loop_finished")}
    by_path: dict[str, list[Event]] = defaultdict(list)
    tee_locals: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.kind in ("child_failed", "closing_signal", "worker_failed"):
            by_path[e.path].append(e)
        elif e.writer is not None and e.writer.startswith("tee ") and (m := _TEE_LOCAL_RE.search(e.writer)):
            tee_locals[e.path].add(int(m.group(1)))
    out: set[int] = set()
    for path, evs in by_path.items():
        listed_pids = {e.get("pid") for e in evs if e.kind == "child_failed"}
        stopped = {e.get("pid") for e in evs if e.kind == "closing_signal"}
        if not any(e.kind == "worker_failed" for e in evs) or not stopped <= listed_pids:
            continue
        for e in evs:
            locals_ = e.get("table_local_ranks") if e.kind == "child_failed" else None
            rank, local = e.get("failed_rank"), e.get("local_rank")
            if not isinstance(locals_, list) or not isinstance(rank, int) or not isinstance(local, int):
                continue
            listed = {v for v in locals_ if isinstance(v, int)}
            if not listed:
                continue
            span = set(range(max(listed)))
            if isinstance(nproc, int) and max(listed) < nproc <= 4096:
                span |= set(range(nproc))
            span |= {v for v in tree_locals if 0 <= v <= 4096}
            if rank == local and path in table_files:
                span |= own_ranks
            if sum(1 for x in evs if x.kind == "worker_failed") == 1:
                span |= {v for v in tee_locals.get(path, ()) if 0 <= v <= 4096}
            out |= {rank - local + v for v in span - listed}
    return out


# Signals a person or a scheduler sends to one process (kill, Ctrl-C, a closed terminal).
_OUTSIDE_SIGNALS = frozenset({-15, -2, -1})


def _signalled_outside(events: Sequence[Event], single: bool) -> set[int]:
    """Ranks the agent found dead of SIGTERM/SIGINT/SIGHUP although it signalled only other workers.

    torchrun's agent logs `failed (exitcode: <c>) local_rank: <l> (pid: <p>)` for the worker it found dead
    and sends `Sending process <pid> closing signal SIGTERM` to the workers still running
    (torch/distributed/elastic/multiprocessing/api.py `_poll`, `_close`; failure-signatures.md section
    0.6). A worker dead of SIGTERM whose pid is not among the agent's own closing signals (in the same file,
    which shows some) was signalled by someone else first: it was stopped from outside, not as a victim of
    the teardown (section 17.4). Not when the agent itself was told to stop (`Received 15 death signal`):
    then it signalled every worker.
    """
    if any(e.kind == "job_stopped" for e in events):
        return set()
    stopped: dict[str, set[object]] = defaultdict(set)
    for e in events:
        if e.kind == "closing_signal":
            stopped[e.path].add(e.get("pid"))
    out: set[int] = set()
    for e in events:
        if e.kind != "worker_failed" or _exitcode(e) not in _OUTSIDE_SIGNALS or not stopped.get(e.path):
            continue
        rank = rank_about(e, single)
        if rank is not None and e.get("pid") is not None and e.get("pid") not in stopped[e.path]:
            out.add(rank)
    return out


def _alive_at_stop(events: Sequence[Event]) -> set[int]:
    """Ranks whose process was still running when torchrun's agent was told to stop.

    On a stop signal the agent logs `Received <sig> death signal, shutting down workers` and closes its
    workers; `_close` signals only the ones still running (`if handler.proc.poll() is None`, torch/
    distributed/elastic/multiprocessing/api.py; failure-signatures.md section 17.4), each with `Sending
    process <pid> closing signal <SIG>`. A worker exited already gets no such line. The pid names the rank
    where the logs pair it with one: a rank's own line stating its pid (`world_info` `worker_pid`), or the
    agent's failure table (`child_failed`: pid and global rank). A pid two ranks claim is nobody's.
    """
    stops: dict[str, int] = {}
    for e in events:
        if e.kind == "job_stopped" and e.get("how") == "agent_signal":
            stops[e.path] = min(stops.get(e.path, e.line), e.line)
    if not stops:
        return set()
    closed = {pid for e in events
              if e.kind == "closing_signal" and e.path in stops and e.line > stops[e.path]
              and (pid := non_negative_int(e.get("pid"))) is not None}
    if not closed:
        return set()
    claims: dict[int, set[int]] = defaultdict(set)
    for e in events:
        if e.kind == "world_info" and e.rank is not None and not is_agent_event(e):
            pid = non_negative_int(e.get("worker_pid"))
        elif e.kind == "child_failed":
            pid = non_negative_int(e.get("pid"))
        else:
            continue
        r = non_negative_int(e.get("failed_rank")) if e.kind == "child_failed" else e.rank
        if pid in closed and r is not None:
            claims[pid].add(r)
    return {next(iter(rs)) for rs in claims.values() if len(rs) == 1}


def _stopped_by_agent(events: Sequence[Event]) -> set[int]:
    """Ranks of a node console whose own agent stopped every one of its workers: the agent's closing
    signals (`Sending process <pid> closing signal <SIG>`) went to as many processes as the console holds
    ranks of its own lines, after the console's last worker-group restart.

    torchrun's agent signals only the workers still running (`_close`: `if handler.proc.poll() is None`,
    torch/distributed/elastic/multiprocessing/api.py; failure-signatures.md section 0.6 and 17.4): when one
    of its workers had died first, it is not signalled, so the signals fall one short of the node's ranks.
    When they cover them all, the node's workers were all alive when their agent stopped the group (its
    store lost, another node's failure): a rank among them that printed nothing of its own was stopped, not
    killed before it could write."""
    restart_at: dict[str, int] = {}
    for e in events:
        if e.kind == "worker_group_restart":
            restart_at[e.path] = max(restart_at.get(e.path, -1), e.line)
    closed: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.kind == "closing_signal" and e.line > restart_at.get(e.path, -1):
            pid = non_negative_int(e.get("pid"))
            if pid is not None:
                closed[e.path].add(pid)
    if not closed:
        return set()
    own: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.path in closed and e.rank is not None and not is_agent_event(e):
            own[e.path].add(e.rank)
    out: set[int] = set()
    for path, pids in closed.items():
        ranks = own.get(path, set())
        if ranks and len(pids) >= len(ranks):
            out |= ranks
    return out


def _record_times(events: Sequence[Event]) -> dict[tuple[str, int], float]:
    """Each ranked event's time: its own, or for a line of a logged traceback the time of the error record
    it continues.

    `Logger.exception` / `logger.error(..., exc_info=True)` writes the record and its traceback in one write
    (logging.Formatter.format appends formatException), so a traceback whose header is the line right under
    a dated error record of the same rank was written at that record's time, its exception line included
    (the traceback's extent: the header, up to three lines per frame, the exception line). Other undated
    lines get no time: the last dated line above is only a lower bound (a progress line, a launcher's
    failure table printed later)."""
    out: dict[tuple[str, int], float] = {}
    headers: dict[tuple[str, int, int], float] = {}
    for e in events:
        if e.rank is None or e.time is None:
            continue
        out[(e.path, e.line)] = e.time
        if e.kind == "error_line" or (e.level or "") in ERROR_LEVELS:
            headers[(e.path, e.rank, e.line)] = e.time
    if not headers:
        return out
    spans: dict[tuple[str, int], list[tuple[int, int, float]]] = defaultdict(list)
    for e in events:
        if e.kind == "exception" and e.rank is not None:
            t = headers.get((e.path, e.rank, e.line - 1))
            if t is not None:
                frames = e.get("frames")
                n = len(frames) if isinstance(frames, list) else 0
                spans[(e.path, e.rank)].append((e.line, e.line + 3 * n + 2, t))
    for e in events:
        if e.rank is None or (e.path, e.line) in out:
            continue
        for first, last, t in spans.get((e.path, e.rank), ()):
            if first <= e.line <= last:
                out[(e.path, e.line)] = t
                break
    return out


def _closed_after_peer_timeout(events: Sequence[Event], victims: Sequence[Row]) -> set[int]:
    """Ranks whose only loud errors are lost-peer errors (`Connection closed by peer`, `reset by peer`)
    written after another rank's timeout report, while reporting no timeout themselves.

    The rank that timed out raised and exited, closing its connections, so such an error is that exit seen
    from the far end (failure-signatures.md section 17), not a wait of this rank's own: the rank had not
    timed out when its peers did, and for who kept whom waiting it is quiet. Undated lines take the time of
    the record they continue (`_record_times`)."""
    hangs = [e for e in events if e.kind == "hang_detected" and e.rank is not None]
    if not hangs:
        return set()
    times = _record_times(events)
    first: dict[int, float] = {}
    for e in hangs:
        t = times.get((e.path, e.line))
        if t is not None and e.rank is not None:
            first[e.rank] = min(first.get(e.rank, t), t)
    hung = {e.rank for e in hangs}
    # per rank: (every dated error after the others' first timeout, some error dated); the same error's
    # undated copies in another file (a tee'd console) say nothing either way
    state: dict[int, tuple[bool, bool]] = {}
    for v in victims:
        r = v["rank"]
        if r is None or r in hung or v["signal"] in _TEARDOWN_SIGNALS:
            continue
        ok, dated = state.get(r, (True, False))
        t = times.get((v["path"], v["line"]))
        others = [x for q, x in first.items() if q != r]
        if v["signal"] not in ("peer_closed", "collective_error") or not others:
            ok = False
        elif t is not None:
            ok, dated = ok and min(others) < t, True
        state[r] = (ok, dated)
    return {r for r, (ok, dated) in state.items() if ok and dated}


def _gloo_waiters_by_exit(events: Sequence[Event]) -> set[int]:
    """The ranks whose own exit was a gloo timeout, where a console holds those timeouts with nobody's name.

    gloo has no watchdog: its `Timed out waiting <ms>ms for <recv|send> operation` is raised in the caller's
    thread (gloo/transport/tcp/unbound_buffer.cc, log-formats.md section 7), so a rank that timed out exits
    with Python's code 1, and before torch 2.4 its traceback carries no `[rankN]:` prefix (log-formats.md
    section 9.2). When every unattributed exception of the input is such a timeout, none is a fault of a
    process's own, and as many ranks exited with code 1 by the launcher's lines as there are timeouts (the
    others stopped by its SIGTERM or not listed), those ranks are the ones that timed out, though no line
    says which timeout is whose: they called the collective (failure-signatures.md section 0.2, R2)."""
    sn = single_node(events)
    timeouts = {(e.path, e.line) for e in events
                if e.kind == "hang_detected" and e.rank is None and e.get("detector") == "gloo"}
    if not timeouts or any(e.kind == "hang_detected" and e.rank is not None for e in events):
        return set()
    for e in events:
        if (e.kind == "exception" and rank_about(e, sn) is None and is_own_crash(e) and e.get("exc_type")
                and not _agent_exception(e)):
            return set()
    codes: dict[int, set[int]] = defaultdict(set)
    for e in events:
        if (e.kind in ("child_failed", "worker_failed") and (r := rank_about(e, sn)) is not None
                and (code := _exitcode(e)) is not None):
            codes[r].add(code)
    if any(c not in (1, -15) for cs in codes.values() for c in cs):
        return set()
    ones = {r for r, cs in codes.items() if cs == {1}}
    return ones if len(ones) == len(timeouts) else set()


RANK_STATUS_KEYS = ("rank", "host", "status", "crashed", "hung", "victim", "quiet", "own_log", "unheard",
                    "first_error_kind", "first_error_time", "exitcode", "signal", "exited_clean",
                    "signalled_outside", "alive_at_stop", "stopped_by_agent")


def rank_status_columns(
    events: Sequence[Event],
    ranks: Sequence[int],
    hosts: dict[int, str],
    victims: Sequence[Row],
    own_logs: set[int] | None = None,
    clean: set[int] | None = None,
    printed: set[int] | None = None,
    world: int | None = None,
) -> dict[str, list[Any]]:
    """One row per known rank, as one list per key (RANK_STATUS_KEYS, in order): crashed (own fault), hung,
    victim (consequence signals), ok or silent. Columns, not a dict per rank: a job of N ranks has N rows,
    and N dicts of 14 keys would cost about 650 bytes each beside the table made from them.

    "silent" is a rank with no line of its own in the input (`printed`, else no event of its own); a rank
    whose lines were read but matched no parser is "ok": it wrote, and nothing it wrote is a failure.

    "unheard" marks the silent ranks whose absence is evidence although they have no file of their own
    (`_unheard`): the world size is stated and every other rank of it reported its own hang."""
    sn = single_node(events)
    by_rank: dict[int, list[Event]] = defaultdict(list)
    for e in events:
        r = rank_about(e, sn)
        if r is not None:
            by_rank[r].append(e)
    victim_ranks = {v["rank"] for v in victims if v["rank"] is not None}
    # Being stopped or losing the store at teardown happens to every survivor; it is not a symptom.
    loud_ranks = {
        v["rank"] for v in victims if v["rank"] is not None and v["signal"] not in _TEARDOWN_SIGNALS
    } - _closed_after_peer_timeout(events, victims)
    exit_only = _exit_only_crashes(events)
    # Consoles that hold the launcher's start banner (torchrun's OMP_NUM_THREADS warning, its launch config).
    whole = {e.path for e in events if e.kind == "launch_config"}
    outside = _signalled_outside(events, sn)
    alive = _alive_at_stop(events)
    stopped = _stopped_by_agent(events)
    gloo_waiters = _gloo_waiters_by_exit(events)
    clean = clean or set()
    own_logs = own_logs or set()
    printed = printed or set()
    cols: dict[str, list[Any]] = {k: [] for k in RANK_STATUS_KEYS}
    (c_rank, c_host, c_status, c_crashed, c_hung, c_victim, c_quiet, c_own, c_unheard, c_kind, c_time, c_exit,
     c_signal, c_clean, c_outside, c_alive, c_stopped) = cols.values()
    no_events: list[Event] = []
    for rank in sorted(set(ranks) | set(by_rank)):
        evs = by_rank.get(rank, no_events)
        crashed = rank in exit_only or any(is_own_crash(e) for e in evs)
        hung = any(e.kind == "hang_detected" for e in evs) or rank in gloo_waiters
        # Its own watchdog stated a failed work (2.4+ status lines): it waited in a collective, not quiet.
        watched = any(e.kind == "pg_status" and e.get("failed_seq") is not None for e in evs)
        victim = rank in victim_ranks
        fails = sorted(
            (e for e in evs if e.kind in FAILURE_KINDS),
            key=lambda e: (e.time is None, e.time or 0.0, e.path, e.line),
        )
        exitcode = next(
            (
                _exitcode(e)
                for e in evs
                if (e.kind in ("child_failed", "worker_failed") or _spawn_signalled(e))
                and _exitcode(e) is not None
            ),
            None,
        )
        status = (
            "crashed" if crashed else "hung" if hung else "victim" if victim
            else "ok" if evs or rank in printed else "silent"
        )
        c_rank.append(rank)
        c_host.append(hosts.get(rank))
        c_status.append(status)
        c_crashed.append(crashed)
        c_hung.append(hung)
        c_victim.append(victim)
        c_quiet.append(not crashed and not hung and not watched and rank not in loud_ranks)
        # Its own output is here: a file of its own, or lines attributed to it ([rankN]:). The launcher's
        # lines about it (a failure-table entry, a closing signal) are the agent's output, not the rank's:
        # a rank an excerpt shows only there may have been cut out, unless that console holds the launcher's
        # start too (whole from start to end, every rank's output that reached it is in it).
        c_own.append(rank in own_logs or any(not is_agent_event(e) or e.path in whole for e in evs))
        c_unheard.append(False)
        c_kind.append(fails[0].kind if fails else None)
        c_time.append(fails[0].time if fails else None)
        c_exit.append(exitcode)
        aborted = any(e.kind == "stack_dump" and e.get("dumper") == "faulthandler"
                      and e.get("trigger") == DUMP_SIGABRT_TEXT for e in evs)
        c_signal.append(exit_signal(exitcode) or ("SIGABRT" if aborted and exitcode is None else None))
        c_clean.append(rank in clean and exitcode is None and not crashed and not hung)
        c_outside.append(rank in outside and not crashed and not hung)
        c_alive.append(rank in alive)
        c_stopped.append(rank in stopped and not crashed and not hung)
    unheard = _unheard(cols, world)
    cols["unheard"] = [r in unheard for r in c_rank]
    return cols


def _unheard(cols: dict[str, list[Any]], world: int | None) -> set[int]:
    """Silent ranks whose absence names them: the ranks of a stated world that wrote nothing at all, when
    every other rank of that world reported its own wait (a timeout, a watchdog status, a lost peer) and the
    silent ones are fewer than them.

    Absence beats presence (failure-signatures.md section 0.2 R2, section 1: the rank that never joined the
    collective prints no timeout of its own): a rank's absence is evidence once the world size is known and
    the other ranks' own output is present (README, "How a verdict is reached"). A shared console or an
    excerpt qualifies only when all the others are in it with their own hang report: a paste that shows two
    of eight ranks names nobody, and a rank that wrote anything at all is judged by what it wrote."""
    ranks = cols["rank"]
    if not world or world > 65536 or sorted(ranks) != list(range(world)):
        return set()
    silent = {r for r, s in zip(ranks, cols["status"], strict=True) if s == "silent"}
    others = [r for r in ranks if r not in silent]
    waited = {r for r, h, q in zip(ranks, cols["hung"], cols["quiet"], strict=True) if h or not q}
    if not silent or len(silent) >= len(others) or not all(r in waited for r in others):
        return set()
    if any(cols["crashed"]):
        return set()
    return silent


def host_failures(host_crashed: Iterable[tuple[str | None, bool]]) -> list[Row]:
    """Per host, how many of its ranks crashed, from each rank's (host, crashed)."""
    per: dict[str, list[bool]] = defaultdict(list)
    for host, crashed in host_crashed:
        if host:
            per[host].append(crashed)
    rows = []
    for host, rs in sorted(per.items()):
        failing = sum(1 for c in rs if c)
        rows.append(
            {
                "host": host,
                "failing_ranks": failing,
                "total_ranks": len(rs),
                "fraction": failing / len(rs) if rs else 0.0,
            }
        )
    return rows


def store_barrier_missing_rows(events: Sequence[Event]) -> list[Row]:
    """Ranks a store-based barrier's own count says never arrived (fact store_barrier_missing).

    `_store_based_barrier` (torch/distributed/distributed_c10d.py) has each rank add 1 to the barrier key and
    wait until the count is the world size; on timeout each waiting rank raises `Timed out initializing
    process group in store based barrier on rank <r>, for key: <key> (world_size=<n>, worker_count=<m>, ...)`
    (log-formats.md section 3.7). Every rank that reports arrived, and so did every rank that logged `Added
    key: <key> to store for rank: <r>` (INFO, failure-signatures.md section 12), so when the distinct
    arrived ranks of a key are exactly `m` (all below `n`, every report stating the same n and m), they are
    all the ranks that arrived and the others never did. Fewer (an excerpt) name nobody.
    """
    groups: dict[tuple[str, int, int], tuple[set[int], Event]] = {}
    spoiled: set[tuple[str, int, int]] = set()
    added: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.kind == "store_barrier_arrived":
            r = non_negative_int(e.get("stated_rank"))
            r = e.rank if r is None else r
            if r is not None and isinstance(e.get("key"), str):
                added[e.get("key")].add(r)
            continue
        if e.kind != "rendezvous_error" or e.get("error_class") != "store_barrier_timeout":
            continue
        n, m, key = non_negative_int(e.get("world_size")), non_negative_int(e.get("joined")), e.get("key")
        r = non_negative_int(e.get("stated_rank"))
        r = e.rank if r is None else r
        if n is None or m is None or not isinstance(key, str) or not 0 < m < n or n > 65536:
            continue
        k = (key, n, m)
        if r is None or r >= n or (e.rank is not None and e.rank != r):
            spoiled.add(k)
            continue
        ranks, first = groups.setdefault(k, (set(), e))
        ranks.add(r)
    if len({k[0] for k in groups}) != len(groups):
        return []   # one key with two counts: the reports do not describe one barrier
    rows: list[Row] = []
    for (key, n, m), (ranks, first) in groups.items():
        ranks = ranks | added.get(key, set())
        if (key, n, m) in spoiled or len(ranks) != m or max(ranks) >= n:
            continue
        rows.extend({"rank": r, "world_size": n, "joined": m, "key": key, "path": first.path,
                     "line": first.line} for r in range(n) if r not in ranks)
    return rows


def missing_rank_rows(events: Sequence[Event], files: Sequence[InputFile], world: int | None) -> list[Row]:
    """Ranks below the known world size that no log line was attributed to."""
    if not world or world > 65536:
        return []
    seen = {e.rank for e in events if e.rank is not None}
    for f in files:
        seen.update(f.ranks)
    # Absence is evidence only where ranks write files of their own and the others' files are present.
    own = own_log_ranks(files)
    if not seen or not own or not seen <= own:
        return []
    return [
        {"rank": r, "world_size": world, "basis": "world size stated; every other rank has its own file"}
        for r in range(world)
        if r not in seen
    ]
