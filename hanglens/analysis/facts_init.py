"""Absences: NCCL communicators whose init started on some ranks and completed nowhere, gloo rendezvous keys
the waiting ranks timed out on (who never arrived), and a node whose whole output stopped mid-run while the
others lost the store it hosted (who went away)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens import lazyre as re
from hanglens.ingest.streams import outer_stream
from hanglens.model import Event

Row = dict[str, Any]


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def init_pending_rows(events: Sequence[Event]) -> list[Row]:
    """One row per communicator rank of a communicator (NCCL `commId`) that printed `Init START` on some
    ranks and `Init COMPLETE` on none: `started` tells whether that rank's START line is here.

    NCCL bootstrap has no timeout, so the ranks that started wait silently for the ones that never called
    the communicator's first collective (log-formats.md section 4.3, failure-signatures.md sections 10.9
    and 16 item 5). `rank` is the communicator rank when the communicator spans the largest `nranks` seen
    (the world communicator), where it equals the global rank; otherwise None.
    """
    started: dict[str, dict[int, Event]] = defaultdict(dict)
    completed: set[str] = set()
    nranks: dict[str, int] = {}
    for e in events:
        if e.kind != "nccl_comm_init":
            continue
        cid, crank, n = e.get("comm_id"), _int(e.get("comm_rank")), _int(e.get("nranks"))
        if not isinstance(cid, str) or crank is None or n is None or not 0 < n <= 65536:
            continue
        nranks[cid] = n
        if e.get("phase") == "init_start":
            started[cid].setdefault(crank, e)
        elif e.get("phase") == "init_complete":
            completed.add(cid)
    world = max(nranks.values(), default=0)
    rows: list[Row] = []
    for cid in sorted(started):
        n = nranks[cid]
        if cid in completed or not started[cid]:
            continue
        for crank in range(n):
            first = started[cid].get(crank)
            rows.append(
                {
                    "comm_id": cid,
                    "comm_rank": crank,
                    "nranks": n,
                    "rank": crank if n == world else None,
                    "started": first is not None,
                    "missing": n - len(started[cid]),
                    "path": first.path if first is not None else None,
                    "line": first.line if first is not None else None,
                }
            )
    return rows


# gloo's full-mesh rendezvous (gloo/transport/tcp/context.cc Context::createAndConnectAllPairs): every rank
# publishes its address under the key `<rank>` and reads its peers' keys; PyTorch's store prefixes the
# process group and the device (`/default_pg/0//cpu//0/2` in torch 2.13). Only the default group's keys
# name global ranks (a new_group's name their group ranks), and only gloo's CPU device keys end in a rank
# (NCCL's `/default_pg//cuda//0` counts communicators).
GLOO_RANK_KEY_RE = re.compile(r"(?:^|/)default_pg/[^,\s]{0,200}/cpu/[^,\s]{0,200}?/(?P<rank>\d{1,7})$")


def init_key_missing_rows(events: Sequence[Event], world: int | None) -> list[Row]:
    """One row per rank whose gloo rendezvous key its peers timed out waiting for in init_process_group.

    `waiting` counts the ranks (or unattributed errors) that named it. A key naming the waiting rank itself,
    or a rank outside a known world, is not read as anyone's absence.
    """
    found: dict[int, Row] = {}
    waiters: dict[int, set[Any]] = defaultdict(set)
    for e in events:
        if e.kind != "store_error":
            continue
        keys = str(e.get("keys") or "")
        for key in keys.replace(",", " ").split()[:64]:
            m = GLOO_RANK_KEY_RE.search(key)
            if m is None:
                continue
            rank = int(m["rank"])
            if rank == e.rank or (world is not None and rank >= world):
                continue
            waiters[rank].add(e.rank if e.rank is not None else (e.path, e.line))
            found.setdefault(rank, {"rank": rank, "key": key, "timeout_ms": _int(e.get("timeout_ms")),
                                    "path": e.path, "line": e.line})
    return [{**row, "waiting": len(waiters[r])} for r, row in sorted(found.items())]


# Reports that end a launcher stream's run: any of them after the last step means the stream did not just
# stop.
_STREAM_END_KINDS = frozenset({
    "exception", "error_line", "store_error", "rendezvous_error", "hang_detected", "closing_signal",
    "worker_failed", "child_failed", "run_finished", "agent_succeeded", "agent_signal", "process_teardown",
})
# The store client's words for a store server that went away (torch/csrc/distributed/c10d/Utils.hpp
# `recvBytes`: "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or
# crash?"; sendBytes' Broken pipe / Connection reset; log-formats.md section 3.7).
_STORE_GONE_RE = re.compile(r"got 0 bytes|Connection was likely closed|Broken pipe|Connection reset by peer")
# A worker's own words for a peer process that went away (gloo pair.cc `Connection closed by peer`,
# `Read error ... Connection reset by peer`; NCCL's socket `Connection closed by remote peer`):
# failure-signatures.md section 17 item 2, "the peer process exited first".
_PEER_GONE_KINDS = frozenset({"peer_closed", "network_error"})
_PEER_GONE_RE = re.compile(r"(?i)closed by (?:remote )?peer|reset by peer")
# The launcher's reports that its workers were still running, or failed, when something went away: the agent
# stopped them (`Sending process <pid> closing signal`), found one dead (`failed (exitcode ...)`), or raised
# its failure table. A store that vanishes after every local worker ended (the store host's agent leaving
# first at the end of a run, while this agent shuts its rendezvous down: launcher/api.py `launch_agent`'s
# `finally: spec.rdzv_handler.shutdown()`) brings none of them.
_WORKERS_STOPPED_KINDS = frozenset({"closing_signal", "worker_failed", "child_failed"})


def vanished_stream_rows(events: Sequence[Event]) -> list[Row]:
    """Ranks of a launcher stream (a node's console: its own file, `srun -l` task or pdsh host) whose output
    stopped mid-run without a word, while another node's stream, after the same training progress, reports
    the store going away (a TCPStore client's closed connection, a RendezvousConnectionError).

    torchrun's c10d rendezvous store lives in one agent (the endpoint host's: rendezvous/
    c10d_rendezvous_backend.py `_create_tcp_store`), and every other agent polls it from its monitor loop
    (elastic/agent/server/api.py `_invoke_run`, `num_nodes_waiting`): when that host vanishes (node lost,
    agent and workers killed), the others raise on the store while the lost node's console just ends, with no
    error, no exit report and no finish line (failure-signatures.md section 17.7: these lines mean that host
    went away; examine it for the primary failure). A node that is not the store's host, lost the same way,
    leaves the others' workers losing their connections to its processes (`Connection closed by peer`,
    section 17 item 2) instead: `lost` says which the others saw, `store` (every reporting node lost the
    store; the store's own host, still up, would report only its peers gone) or `peers`. A store error counts
    only while the reporting node's workers still ran (its agent stopped or lost them after it): at the end
    of a run the store host's agent leaves first and the others' rendezvous shutdown finds it gone. One row
    per rank of the silent streams; none when no stream reports the store or its peers gone, when every
    stream went silent, when a rank finished (a run that ended is not lost), or when the silent ranks had
    reached their last step.
    """
    streams: dict[tuple[str, str], dict[str, Any]] = {}
    finished = False
    for e in events:
        if e.kind in ("run_finished", "agent_succeeded"):
            finished = True
        st = streams.setdefault((e.path, outer_stream(e.writer)),
                                {"ranks": set(), "named": set(), "last": -1, "after": [], "steps": {},
                                 "total": None, "newest": {}, "progress": None, "host": None})
        if st["host"] is None and e.host:
            st["host"] = e.host
        if e.rank is not None and e.kind != "progress":
            st["named"].add(e.rank)
        if e.kind == "progress":
            # A node whose step lines carry no rank (a plain `print`) still shows its progress; its ranks are
            # those its other lines name (a `RANK=` echo, a `[rankN]:` prefix).
            st["last"] = max(st["last"], e.line)
            if st["progress"] is None or e.line > st["progress"].line:
                st["progress"] = e
        if e.kind == "progress" and e.rank is not None:
            st["ranks"].add(e.rank)
            newest = st["newest"].get(e.rank)
            if newest is None or e.line > newest.line:
                st["newest"][e.rank] = e   # the rank's last progress line in this stream
            step, total = _int(e.get("step")), _int(e.get("total"))
            if step is not None:
                st["steps"][e.rank] = max(step, st["steps"].get(e.rank, step))
            if total:
                st["total"] = total
        elif e.kind in _STREAM_END_KINDS or e.kind in _PEER_GONE_KINDS:
            st["after"].append(e)
    if finished:
        return []
    for st in streams.values():
        if not st["ranks"] and st["progress"] is not None:
            st["ranks"] = set(st["named"])
    trained = {k: st for k, st in streams.items() if st["ranks"]}
    silent, gone, store_seen = [], [], []
    for key, st in streams.items():
        # A node's agent console beside its workers' `--log-dir` files prints no step of its own: it still
        # reports for its node (the files' ranks are its workers when they share its host).
        after = [e for e in st["after"] if e.line > st["last"]]
        if not after:
            if key in trained:
                silent.append(key)
            continue
        running = any(e.kind in _WORKERS_STOPPED_KINDS for e in after)
        store = any((e.kind == "store_error" and running and _STORE_GONE_RE.search(e.text))
                    or (e.kind == "rendezvous_error" and e.get("error_class") == "RendezvousConnectionError")
                    for e in after)
        if store or any(e.kind in _PEER_GONE_KINDS and _PEER_GONE_RE.search(e.text) for e in after):
            gone.append(key)
            store_seen.append(store)
    # A worker's file whose node's agent reported the loss is that node's, not a node that went silent.
    reporting_hosts = {streams[k]["host"] for k in gone} - {None}
    silent = [k for k in silent if trained[k]["host"] not in reporting_hosts]
    if not silent or not gone or len(silent) == len(trained):
        return []
    # The store went with the silent node only when every reporting node lost it: the store host that
    # stayed reports only its peers gone, and a node that saw the store close after the host's agent shut
    # down at the end is not a node that lost it to the vanished one.
    store_gone = all(store_seen)
    seen_elsewhere = {r for k in gone for r in streams[k]["ranks"]}
    seen_elsewhere |= {r for st in trained.values() if st["host"] in reporting_hosts for r in st["ranks"]}
    rows: list[Row] = []
    for key in silent:
        st = trained[key]
        total = st["total"]
        for r in sorted(st["ranks"] - seen_elsewhere):
            step = st["steps"].get(r)
            if total is not None and step is not None and step + 1 >= total:
                return []   # it had reached its last step: a run that ended, not a node lost
            last = st["newest"].get(r) or st["progress"]
            rows.append({"rank": r, "last_step": step, "total": total, "stream": key[1] or key[0],
                         "reporters": len(gone), "lost": "store" if store_gone else "peers",
                         "path": last.path, "line": last.line})
    return rows
