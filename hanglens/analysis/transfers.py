"""Size errors on one transfer: the receiver that detected them, the peer that sent, and whether the
transfer was point-to-point.

failure-signatures.md section 2: NCCL's socket transport prints `message truncated : receiving <n> bytes
instead of <m>` on the receiver, naming the sender's address (`<n>` is what the sender sent, `<m>` what the
receiver posted; NVIDIA/nccl src/transport/net_socket.cc); gloo's receiver throws `op.preamble.length <=
op.nbytes. <remote> vs <local>` (gloo/transport/tcp/pair.cc Pair::prepareRead). The address maps to a host
through each process's `Bootstrap : Using <if>:<ip>` line (log-formats.md section 4.4) and to the ranks
there. For a point-to-point transfer (send/recv, pipeline stages) the receiver's buffer is allocated
before the data arrives, from the shape the code expects; the sender's tensor is computed from the data
(a longer sequence, a ragged micro-batch): the size that changed is the sender's ("which side's shape
changed: dynamic sequence length, last micro-batch"). A collective's ring neighbour is no such culprit,
so the sender is named only when the transfer is shown to be point-to-point.

In a gloo collective the size check says only that the receiver got more bytes than it posted: either
the receiver's buffer is the odd, smaller one, or its sender's is the odd, larger one. Both ends are then
reported (role receiver, and role sender with `p2p` false), never one of them as the culprit: the sender
is the other rank of a 2-rank job, or the receiver's ring neighbour: rank + 1 in an all_reduce (gloo's
ring all_reduce receives from rank + 1 and sends to rank - 1: gloo/allreduce.cc ring, `recvRank`), and
rank minus 1 in an all_gather (gloo/allgather.cc). A
size check printed without a rank is the rank torchrun saw die of SIGABRT (the uncaught
gloo::EnforceNotMet terminates it, and the C++ runtime's `terminate called after throwing` and `what():` go
to the process's stderr unprefixed, torchrun's `[rankN]:` prefix being Python's only), when exactly one did;
when as many unranked checks, all reporting the same sizes, as ranks that died of SIGABRT, each of those
ranks printed one of them (one uncaught throw per process) and which line is whose does not matter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from typing import Any

from hanglens import lazyre as re
from hanglens.analysis.callsite import blocking_call, caller_source
from hanglens.model import Event, short_host

Row = dict[str, Any]
TRUNCATED_RE = re.compile(r"peer (?P<ip>[0-9A-Fa-f.:]{3,64})<\d{1,6}> message truncated : receiving "
                          r"(?P<remote>\d{1,15}) bytes instead of (?P<local>\d{1,15})")
GLOO_SIZE_RE = re.compile(r"op\.preamble\.length <= op\.nbytes\.(?: (?P<remote>\d{1,15}) vs "
                          r"(?P<local>\d{1,15}))?|Received data size doesn't match expected size")
P2P_CALLS = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list",
                       "recv_object_list"})
P2P_OPS = frozenset({"SEND", "RECV", "RECV_ANY_SOURCE"})
SENDS = frozenset({"send", "isend", "send_object_list"})
RECVS = frozenset({"recv", "irecv", "recv_object_list"})
STACK_KINDS = frozenset({"exception", "error_file", "stack_dump"})
# Whom a rank receives from in gloo's ring collectives: gloo/allreduce.cc ring (`recvRank = rank + 1`),
# gloo/allgather.cc (`recvRank = rank - 1`); both checked on torch 2.13 gloo runs (a larger buffer on
# rank k aborts rank k - 1 in an all_reduce, rank k + 1 in an all_gather).
RING_RECV_FROM = {"all_reduce": 1, "all_gather": -1}
# DDP's gradient sync: a rank whose stack ends in autograd's backward waits in the reducer's bucket
# all_reduce (callsite.py), the same ProcessGroupGloo allreduce, hence the same ring, as a direct all_reduce
# (torch/csrc/distributed/c10d/reducer.cpp runs the default comm hook, `process_group->allreduce`).
GRADIENT_SYNC = "backward"
RING_OF = {"all_reduce": "all_reduce", "all_gather": "all_gather", GRADIENT_SYNC: "all_reduce"}


def _p2p_ranks(events: Sequence[Event], calls: Sequence[Row]) -> dict[int, tuple[str, str, int]]:
    """Ranks seen in a point-to-point op: (the op, path, line) of their own stack or watchdog line."""
    out: dict[int, tuple[str, str, int]] = {}
    for c in calls:
        if c.get("call") in P2P_CALLS and isinstance(c.get("rank"), int):
            out.setdefault(c["rank"], (str(c["call"]), str(c.get("path")), int(c.get("line") or 0)))
    for e in events:
        if e.rank is not None and e.kind in ("hang_detected", "fr_entry") and str(e.get("op")) in P2P_OPS:
            out.setdefault(e.rank, (str(e.get("op")).lower(), e.path, e.line))
    return out


def _ring_sender(
    receiver: int, world: int | None, calls: Sequence[Row], known: Collection[int]
) -> tuple[int, str] | None:
    """The rank a gloo collective's receiver got its data from, with the basis, when the logs fix it.

    In an all_reduce that is rank + 1 (rank 0 for the last rank), in an all_gather rank - 1 (the last rank
    for rank 0): known when the world size is, or when that neighbour is seen in the logs (then the ring
    does not wrap).
    """
    if world == 2 and receiver in (0, 1):
        return 1 - receiver, "the only other rank of a 2-rank job"
    # Every other rank in a ring algorithm of one direction: only the neighbour on that side sends to it.
    ops = {RING_OF.get(str(c.get("call"))) for c in calls
           if isinstance(c.get("rank"), int) and c["rank"] != receiver}
    op = ops.pop() if len(ops) == 1 else None
    step = RING_RECV_FROM.get(str(op))
    if op is None or step is None:
        return None
    basis = f"its ring neighbour in gloo's {op} (it receives from rank {'+' if step > 0 else '-'} 1)"
    if world is not None and world > 2 and 0 <= receiver < world:
        return (receiver + step) % world, basis
    if world is None and receiver + step >= 0 and receiver + step in known:
        return receiver + step, basis
    return None


def posted_sizes(fr_rows: Sequence[Row]) -> dict[int, str]:
    """Each rank's recorded arguments (op, input sizes, dtypes) of the first unmatched collective of the
    default process group in its Flight Recorder dump, where it wrote one."""
    out: dict[int, str] = {}
    for r in fr_rows:
        if (r.get("kind") == "collective" and str(r.get("pg")) == "0" and r.get("has_dump")
                and isinstance(r.get("rank"), int) and r.get("input_sizes") is not None):
            out.setdefault(r["rank"], f"{r.get('op')} {r.get('input_sizes')} {r.get('dtypes')}")
    return out


def _odd_end(receiver: int, sender: int, sizes: dict[int, str], world: int) -> tuple[int, str] | None:
    """The end of a rejected transfer whose size differs from what a majority of ranks posted, if shown."""
    counts: dict[str, int] = {}
    for sig in sizes.values():
        counts[sig] = counts.get(sig, 0) + 1
    top = max(counts.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    if top is None or 2 * top[1] <= world:
        return None
    sig, n = top
    if sizes.get(sender) == sig and sizes.get(receiver) != sig:
        return receiver, f"its sender posted what {n} of {world} ranks posted ({sig})"
    if sizes.get(receiver) == sig and sizes.get(sender) != sig:
        return sender, f"its receiver posted what {n} of {world} ranks posted ({sig})"
    return None


def _addresses(
    events: Sequence[Event],
) -> tuple[dict[str, set[int]], dict[str, set[str]], dict[tuple[str, int], Event]]:
    """NCCL address -> the ranks and hosts behind it, from each process's `Bootstrap : Using <if>:<ip>`;
    and (address, rank) -> the first such line of that rank (the evidence that it is behind the address)."""
    ip_ranks: dict[str, set[int]] = {}
    ip_hosts: dict[str, set[str]] = {}
    said: dict[tuple[str, int], Event] = {}
    for e in events:
        if e.kind == "nccl_bootstrap" and isinstance(e.get("ip"), str):
            ip = str(e.get("ip"))
            if e.rank is not None:
                ip_ranks.setdefault(ip, set()).add(e.rank)
                said.setdefault((ip, e.rank), e)
            host = e.get("nccl_host") or e.host
            if isinstance(host, str):
                ip_hosts.setdefault(ip, set()).add(host)
    return ip_ranks, ip_hosts, said


# How many distinct failing peer addresses one host's IB errors must name, when some address is mapped to no
# host, before the reporting host's own NIC is blamed (see `ib_peer_rows`).
FANOUT_UNMAPPED_MIN = 3


# NCCL's socket errors that say the remote end went away (log-formats.md section 4.4: `Call to recv from
# <addr> failed : Connection reset by peer`, `Connection closed by remote peer <addr>`).
SOCKET_PEER_LOST = frozenset({"connection_reset", "closed_by_peer"})


def socket_peer_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """The peers NCCL's socket resets and closures name, one row per rank behind each peer address, with
    the columns of `ib_peer_rows` (whose convergence reading they share).

    `Call to recv from <ip><port> failed : Connection reset by peer` / `Connection closed by remote peer`
    say the remote process closed the socket or its host went away; the named peer is the one to examine,
    the reporters are victims (failure-signatures.md sections 9 and 17 item 2). Two or more reporters on two
    hosts or more all naming one peer converge on it (section 9, culprit rule 2).
    """
    return ib_peer_rows(events, hosts, transport="socket")


def ib_peer_rows(events: Sequence[Event], hosts: dict[int, str], transport: str = "ib") -> list[Row]:
    """The peers NCCL's InfiniBand completion errors name (`Got completion from peer <ip><port> with
    status=<n>`, log-formats.md section 4.4), one row per rank behind each peer address (one row with
    `rank` None when no `Bootstrap : Using` line maps the address).

    `reporters`: distinct processes (ranks, else NCCL hosts) whose errors name that peer; `peers_named`:
    distinct peer addresses over every IB completion error of the job; `converged`: two or more reporters,
    all naming this one peer, none of them behind it (failure-signatures.md section 9, culprit rule 2:
    many ranks reporting errors toward one host point at that host, not at themselves); or, when the
    peer's own ranks report errors too, every reporter outside that peer (on two hosts or more) names it
    and nothing else, and no other peer is singled out that way.
    """
    ip_ranks, ip_hosts, said = _addresses(events)
    reporters: dict[str, set[object]] = {}
    first: dict[str, Event] = {}
    for e in events:
        if e.kind != "network_error" or e.get("transport") != transport or e.get("error") == "async_event":
            continue
        if transport == "socket" and e.get("error") not in SOCKET_PEER_LOST:
            continue
        peer = e.get("peer")
        if not isinstance(peer, str) or not peer:
            continue
        who: object = e.rank if e.rank is not None else (e.get("nccl_host") or e.host)
        if who is None:
            continue
        reporters.setdefault(peer, set()).add(who)
        first.setdefault(peer, e)
    # `fanout`: every error comes from the processes of one host, and they name two or more peers on other
    # hosts (failure-signatures.md section 9, culprit rule 3: "one rank reports errors toward many peers ->
    # that rank's node/NIC").
    every: set[object] = set().union(*reporters.values()) if reporters else set()
    reporter_hosts = {short_host(hosts[w]) if isinstance(w, int) and w in hosts else
                      (short_host(w) if isinstance(w, str) else None) for w in every}
    # A peer address no `Bootstrap : Using` line maps is still another host's: NCCL sends between the GPUs
    # of one host over NVLink, PCIe P2P or shared memory, not through the IB NIC (failure-signatures.md
    # section 9; log-formats.md section 4.3 "Channel ... via P2P/IPC"). Two unmapped addresses may be two
    # rails of one peer host, so unmapped peers count only when three or more distinct addresses fail.
    peer_host_sets = [ip_hosts.get(p, set()) for p in reporters]
    unmapped = any(not ph for ph in peer_host_sets)
    fanout = (len(reporters) >= (FANOUT_UNMAPPED_MIN if unmapped else 2)
              and len(reporter_hosts) == 1 and None not in reporter_hosts
              and all(not ph or not ({short_host(h) for h in ph} & reporter_hosts) for ph in peer_host_sets))
    # The peers each reporter named, and who is behind each peer address (its `Bootstrap : Using` ranks and
    # every rank of its host).
    named_by: dict[object, set[str]] = defaultdict(set)
    for peer, who in reporters.items():
        for w in who:
            named_by[w].add(peer)
    behind_of: dict[str, set[object]] = {}
    for peer in reporters:
        peer_hosts = ip_hosts.get(peer, set())
        behind_of[peer] = (set(ip_ranks.get(peer, set())) | {r for r, h in hosts.items() if h in peer_hosts}
                           | set(peer_hosts))
    # A peer every reporter outside it names, and only it: two or more such reporters, on two hosts or more,
    # none of them behind it. Its own ranks may report errors toward their peers (the host whose link went
    # down sees every connection fail, section 9 rule 3), which does not make those peers suspects. Two hosts
    # that name each other both qualify: then neither is singled out.
    def outside_converge(peer: str) -> bool:
        who = reporters[peer]
        behind = behind_of[peer]
        outside = [w for w in named_by if w not in behind]
        where = {short_host(hosts[w]) if isinstance(w, int) and w in hosts else
                 (short_host(w) if isinstance(w, str) else None) for w in outside}
        return (len(who) >= 2 and not (who & behind) and all(named_by[w] == {peer} for w in outside)
                and len(where) >= 2 and None not in where)
    converging = [p for p in reporters if outside_converge(p)]
    rows: list[Row] = []
    for peer in sorted(reporters):
        who = reporters[peer]
        behind = set(ip_ranks.get(peer, set()))
        peer_hosts = ip_hosts.get(peer, set())
        behind |= {r for r, h in hosts.items() if h in peer_hosts}
        alone = len(reporters) == 1 and len(who) >= 2 and not (who & behind) and not (who & peer_hosts)
        converged = alone or converging == [peer]
        e = first[peer]
        base = {"peer": peer, "reporters": len(who), "peers_named": len(reporters), "converged": converged,
                "fanout": fanout, "path": e.path, "line": e.line}
        named = min(peer_hosts) if peer_hosts else None
        for r in sorted(behind):
            # (a mapped rank's row cites its own address line, the evidence that it is behind the peer)
            at = said.get((peer, r))
            where = {"path": at.path if at else None, "line": at.line if at else None}
            rows.append({**base, **where, "rank": r, "host": hosts.get(r) or named})
        if not behind:
            rows.append({**base, "rank": None, "host": named})
    return rows


def size_error_rows(
    events: Sequence[Event],
    hosts: dict[int, str],
    calls: Sequence[Row],
    world: int | None = None,
    aborted: Collection[int] = (),
    known: Collection[int] = (),
    sizes: dict[int, str] | None = None,
) -> list[Row]:
    """One row per end of each transfer whose sizes disagree: role receiver or sender.

    `p2p` says the transfer is shown to be point-to-point (either end in send/recv); `sender` is set on the
    receiver's row when exactly one rank can be the one that sent (the only rank behind the peer address
    with a point-to-point op, or the only rank blocked in a send; for a gloo collective the ring sender,
    see the module docstring). `aborted`: the ranks torchrun saw die of SIGABRT; a gloo size check
    printed without a rank is the only one of them, when there is exactly one. `known`: ranks the logs show.
    `sizes`: what each rank posted (posted_sizes); `odd` marks the end whose size differs from what a strict
    majority of the ranks posted, when the other end's is the majority's (both ends otherwise suspects).
    """
    ip_ranks, ip_hosts, _ = _addresses(events)
    p2p = _p2p_ranks(events, calls)
    call_of = {c["rank"]: c.get("call") for c in calls if isinstance(c.get("rank"), int)}
    rows: list[Row] = []
    seen: set[int] = set()
    unranked_of = _unranked_checks(events, aborted)
    for e in events:
        if e.kind not in ("nccl_warn", "process_teardown"):
            continue
        rank = e.rank if e.rank is not None or e.kind == "nccl_warn" else unranked_of.get(id(e))
        if rank is None or rank in seen:
            continue
        text = str(e.get("message") or e.get("error") or "")
        m = TRUNCATED_RE.search(text) if e.kind == "nccl_warn" else GLOO_SIZE_RE.search(text)
        if m is None:
            continue
        receiver = rank
        if e.kind == "nccl_warn":  # the match is TRUNCATED_RE's
            ip = m["ip"]
            behind = set(ip_ranks.get(ip, set()))
            behind |= {r for r, h in hosts.items() if h in ip_hosts.get(ip, set())}
            behind.discard(receiver)
            with_p2p = sorted(r for r in behind if r in p2p)
            candidates = with_p2p if with_p2p else sorted(behind)
            named = ", ".join(sorted(ip_hosts.get(ip, set())))
            basis = f"peer {ip} = {named}" if named else f"peer {ip}"
        else:
            candidates = sorted(r for r, c in call_of.items() if c in SENDS and r != receiver)
            basis = "the only rank blocked in a send" if len(candidates) == 1 else "ranks blocked in a send"
        sender = candidates[0] if len(candidates) == 1 else None
        if sender is None and e.kind == "process_teardown" and world == 2 and receiver in (0, 1) \
                and (receiver in p2p or 1 - receiver in p2p):
            # A point-to-point message in a 2-rank job can only have come from the other rank (its wait
            # may name no direction: a pipelining schedule waiting on a batch of sends and recvs).
            sender, basis = 1 - receiver, "the only other rank of a 2-rank job"
        is_p2p = receiver in p2p or (sender is not None and sender in p2p)
        if sender is None and e.kind == "process_teardown" and not is_p2p:
            ring = _ring_sender(receiver, world, calls, known)
            if ring is not None:
                sender, basis = ring
        seen.add(receiver)
        nbytes = {k: int(m[k]) if m[k] else None for k in ("remote", "local")}
        common = {"remote_bytes": nbytes["remote"], "local_bytes": nbytes["local"], "p2p": is_p2p,
                  "transport": "nccl" if e.kind == "nccl_warn" else "gloo", "path": e.path, "line": e.line}
        n = world if world is not None else len(known)
        odd = _odd_end(receiver, sender, sizes or {}, n) if sender is not None and n else None
        rows.append({"rank": receiver, "host": hosts.get(receiver), "role": "receiver", "peer": sender,
                     "basis": odd[1] if odd and odd[0] == receiver else basis,
                     "odd": odd is not None and odd[0] == receiver, "elsewhere": False, **common})
        if sender is not None:
            own = p2p.get(sender)
            said = f"{basis}; its own {own[0]}" if own else basis
            row = {"rank": sender, "host": hosts.get(sender), "role": "sender", "peer": receiver,
                   "basis": odd[1] if odd and odd[0] == sender else said,
                   "odd": odd is not None and odd[0] == sender, "elsewhere": False, **common}
            if own:
                row.update(path=own[1], line=own[2])
            rows.append(row)
    return _shared_nccl_sender(_common_sender(rows, events, hosts, world, aborted, known))


def _shared_nccl_sender(rows: list[Row]) -> list[Row]:
    """`rows` with the one sender every NCCL truncation report names marked odd, when there is one.

    NCCL's socket receiver reports `message truncated : receiving <n> bytes instead of <m>` naming the
    sender's address (`<n>` the sender's size, `<m>` what this receiver posted; failure-signatures.md section
    2). Two or more receivers that each posted the same `<m>` and each got the same `<n>` from the one rank
    behind that address: one rank sending an odd-sized buffer explains every report, any other reading
    needs every receiver odd the same way (the minority by size is the culprit, section 2 "Culprit vs
    victims"). Reports naming several senders (many pairs at once: a per-node NCCL_PROTO/NCCL_ALGO setting,
    section 2) or a sender that also reports one mark nothing.
    """
    recv = [r for r in rows if r["role"] == "receiver" and r.get("transport") == "nccl"]
    receivers = {r["rank"] for r in recv}
    senders = {r["peer"] for r in recv}
    if (len(receivers) < 2 or len(senders) != 1 or None in senders or any(r["p2p"] or r["odd"] for r in rows)
            or len({(r["remote_bytes"], r["local_bytes"]) for r in recv}) != 1):
        return rows
    sender = next(iter(senders))
    if sender in receivers:
        return rows
    first = recv[0]
    basis = (f"the one sender the truncation reports of ranks {', '.join(str(r) for r in sorted(receivers))} "
             f"name: each posted {first['local_bytes']} bytes and received {first['remote_bytes']} from it, "
             "and one rank sending a buffer of another size explains every report")
    return [{**r, "odd": True, "basis": basis} if r["role"] == "sender" and r["rank"] == sender else r
            for r in rows]


def _unranked_checks(events: Sequence[Event], aborted: Collection[int]) -> dict[int, int]:
    """The rank each gloo size check printed without a rank belongs to (keyed by the event's id).

    The uncaught gloo::EnforceNotMet terminates its process (SIGABRT), one throw per process, and the C++
    runtime prints it unprefixed (module docstring). One such check and one rank dead of SIGABRT: it is that
    rank's. As many checks as aborted ranks, all with the same byte counts: one each, in any order (the
    lines say the same thing of every one of them). Otherwise none is attributed.
    """
    checks: list[tuple[Event, str]] = []
    for e in events:
        if e.kind == "process_teardown" and e.rank is None:
            m = GLOO_SIZE_RE.search(str(e.get("message") or e.get("error") or ""))
            if m is not None:
                checks.append((e, m.group(0)))
    ranks = sorted(aborted)
    if len(ranks) == 1:
        return {id(e): ranks[0] for e, _ in checks}
    if len(ranks) < 2 or len(checks) != len(ranks) or len({said for _, said in checks}) != 1:
        return {}
    return {id(e): r for (e, _), r in zip(checks, ranks, strict=True)}


def _common_sender(
    rows: list[Row], events: Sequence[Event], hosts: dict[int, str], world: int | None,
    aborted: Collection[int], known: Collection[int],
) -> list[Row]:
    """`rows` with the one rank every rejected gloo transfer came from, when the logs single it out.

    gloo checks a message's size on the receiver only (gloo/transport/tcp/pair.cc Pair::prepareRead), so
    one rank whose tensor is the odd, larger one fails the check on each rank it sends to, and on no other:
    one receiver in a ring (the module docstring), every other rank in an all_to_all, where each rank
    sends its split to every peer (gloo/alltoallv.cc; torch 2.13 gloo runs: a rank announcing 3 fewer ids
    than it sends aborts all of its peers and is itself only reset). When two or more ranks of a world of
    three or more fail the check and exactly one rank, whose own output is present, neither failed it nor
    died of SIGABRT, that rank is the end they share: one odd rank explains every check (the minority,
    failure-signatures.md section 2, "Culprit vs victims"); any other reading needs every receiver odd.
    """
    receivers = {r["rank"] for r in rows if r["role"] == "receiver"}
    if (world is None or world < 3 or len(receivers) < 2 or any(r["p2p"] or r["odd"] for r in rows)
            or any(r["role"] == "sender" for r in rows)):
        return rows
    rest = set(range(world)) - receivers
    if len(rest) != 1:
        return rows
    sender = rest.pop()
    if sender in aborted or sender not in known or not any(e.rank == sender for e in events):
        return rows
    basis = (f"the only rank of {world} that did not fail gloo's size check, while ranks "
             f"{', '.join(str(r) for r in sorted(receivers))} did: each of them received more than it "
             "posted, and one rank sending a larger tensor to all of them explains every check")
    out: list[Row] = []
    for r in rows:
        if r["role"] != "receiver":
            out.append(r)
            continue
        out.append({**r, "peer": sender})
        out.append({**r, "rank": sender, "host": hosts.get(sender), "role": "sender", "peer": r["rank"],
                    "basis": basis, "odd": True})
    return out


# Calls whose ranks legitimately stand at different lines or post different sizes: point-to-point (a
# receiver waits for its sender by design) and all_to_all (per-pair splits differ by design).
_NOT_PLACED = P2P_CALLS | {"all_to_all", "all_to_all_single"}


# A name the tensor argument is built from: a variable (`grads`, `self.stats`), not a module (`torch.cat`)
# or a method applied to it (`grads.double()`).
_NAME_RE = re.compile(r"(?<![\w.])(?P<name>(?:self\.|args\.|cfg\.)?[A-Za-z_]\w*)")
_MODULES = frozenset({"torch", "dist", "F", "nn", "np", "numpy", "math"})


def _tensor_names(source: str | None) -> frozenset[str]:
    """The variables the tensor argument of the collective call in `source` is built from (its first
    positional argument, or `tensor=`); empty when the line shows no call."""
    m = _CALL_ARGS_RE.search(source or "")
    if m is None:
        return frozenset()
    tensor = ""
    for arg in _top_level_args(m["args"]):
        kw = _KEYWORD_RE.match(arg)
        if kw is None:
            tensor = arg
            break
        if kw["key"] == "tensor":
            tensor = arg[kw.end():]
            break
    return frozenset(n["name"] for n in _NAME_RE.finditer(tensor)) - _MODULES


def mark_places(size_rows: Sequence[Row], calls: Sequence[Row]) -> list[Row]:
    """`size_rows` with `elsewhere`, `place` and `others_place` set on the ends of a gloo collective's
    rejected transfer.

    Collectives on a process group pair up by order, not by the line that called them
    (failure-signatures.md section 1): ranks whose stacks stand at different lines of the program were at
    different calls. The ranks outside the transfer (each with its own stack, all at one line) show where
    the job was; an end of the transfer whose own stack is at another line, while the other end's stack is
    absent or at the others' line, is the end that went elsewhere (one odd rank explains the check; two
    would need both ends to differ, and then neither is marked). `calls`: each rank's own call
    (collectives.stack_calls), an aborted rank's unranked crash dump included.
    """
    where = {c["rank"]: c for c in calls if isinstance(c.get("rank"), int) and c.get("user_frame")}
    out = [dict(r) for r in size_rows]
    for rcv in out:
        if rcv.get("role") != "receiver" or rcv.get("p2p") or not isinstance(rcv.get("peer"), int):
            continue
        ends = (rcv["rank"], rcv["peer"])
        if any(str(where[e].get("call")) in _NOT_PLACED or where[e].get("subgroup")
               for e in ends if e in where):
            continue
        outside = [c for r, c in where.items() if r not in ends]
        places = {c["user_frame"] for c in outside}
        if not outside or len(places) != 1 or any(str(c.get("call")) in _NOT_PLACED or c.get("subgroup")
                                                   for c in outside):
            continue
        usual = next(iter(places))
        off = [e for e in ends if e in where and where[e]["user_frame"] != usual]
        if len(off) != 1:
            continue
        # Another line alone may be one logical call with an altered tensor (`all_reduce(grads.double())`
        # in a branch): two different calls pass tensors built from different variables, which only the
        # source lines of both places show.
        mine = _tensor_names(where[off[0]].get("source"))
        theirs = {n for c in outside for n in _tensor_names(c.get("source"))}
        if not mine or not theirs or mine & theirs:
            continue
        for row in out:
            if row.get("peer") in ends and row.get("rank") in ends and row.get("rank") == off[0]:
                row.update(elsewhere=True, place=where[off[0]]["user_frame"], others_place=usual)
    return out


# The user's recv call and its source argument, read from the traceback's source line (a keyword `src=` or
# the second positional argument): a literal rank, or the receiver's own rank plus or minus a constant.
# Arguments may hold calls two levels deep (`dist.send(out.detach().contiguous(), dst=rank + 1)`).
_ARGS = r"(?P<args>(?:[^()]|\((?:[^()]|\([^()]{0,200}\)){0,200}\)){0,300})"
_CALL_ARGS_RE = re.compile(r"\b(?:all_reduce|all_gather|all_gather_into_tensor|reduce_scatter|"
                           r"reduce_scatter_tensor|broadcast|reduce|gather|scatter|barrier)\("
                           + _ARGS + r"\)")
_KEYWORD_RE = re.compile(r"^\s*(?P<key>[A-Za-z_]\w*)\s*=(?!=)")
RECV_CALL_RE = re.compile(r"\b(?:recv|irecv|recv_object_list)\(" + _ARGS + r"\)")
SRC_KW_RE = re.compile(r"\bsrc\s*=\s*(?P<expr>[^,]{1,80})")
# The rank's own name in any case (`rank`, `RANK` read from the environment, `self.global_rank`, `my_rank`,
# `dist.get_rank()`); not `local_rank`, which differs from the global rank `src` means on every node but the
# first (torch/distributed/distributed_c10d.py `recv`: "src (int): Source rank on global process group").
SRC_EXPR_RE = re.compile(
    r"^\s*(?:(?P<lit>\d{1,7})|(?P<name>(?:(?:self|args|cfg|config)\.)?(?:global_|my_|this_|cur_)?rank"
    r"|(?:dist|torch\.distributed)\.get_rank\(\))"
    r"(?:\s*(?P<op>[-+])\s*(?P<k>\d{1,7}))?)\s*$",
    re.IGNORECASE,
)


SEND_CALL_RE = re.compile(r"\b(?:send|isend|send_object_list)\(" + _ARGS + r"\)")
DST_KW_RE = re.compile(r"\bdst\s*=\s*(?P<expr>[^,]{1,80})")
# A user frame as collectives.stack_calls writes it: "file.py:LINE in FUNCTION".
USER_FRAME_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d{1,7}) in (?P<func>\S+)$")


def _top_level_args(text: str) -> list[str]:
    """`text` split at the commas outside parentheses and brackets."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _peer_of_call(frames: Sequence[str], sources: Sequence[str], rank: int) -> tuple[str, int, str] | None:
    """The rank a stack's point-to-point call names (recv's `src`, send's `dst`), with the op and call text.

    torch/distributed/distributed_c10d.py: `recv(tensor, src=None, ...)` and `send(tensor, dst=None, ...)`,
    both global ranks, as keyword or second positional argument.
    """
    found = blocking_call(frames, sources)
    if found is None or (found[3] not in RECVS and found[3] not in SENDS):
        return None
    op = "recv" if found[3] in RECVS else "send"
    text = caller_source(frames, sources, found[0])
    call_re, kw_re = (RECV_CALL_RE, SRC_KW_RE) if op == "recv" else (SEND_CALL_RE, DST_KW_RE)
    call = call_re.search(text) if text is not None else None
    if text is None or call is None:
        return None
    kw = kw_re.search(call["args"])
    args = _top_level_args(call["args"])
    expr = kw["expr"] if kw else (args[1] if len(args) > 1 and "=" not in args[1] else "")
    m = SRC_EXPR_RE.match(expr)
    if m is None:
        return None
    if m["lit"]:
        return op, int(m["lit"]), text.strip()
    k = int(m["k"]) if m["k"] else 0
    return op, (rank - k if m["op"] == "-" else rank + k), text.strip()


def _user_site(call: Row | None) -> tuple[str, int, str] | None:
    m = USER_FRAME_RE.match(str(call.get("user_frame") or "")) if call else None
    return (m["file"], int(m["line"]), m["func"]) if m else None


def recv_wait_rows(events: Sequence[Event], hosts: dict[int, str], calls: Sequence[Row],
                   world: int | None) -> list[Row]:
    """One row per rank blocked in a point-to-point recv or send, and the rank it waits for when the logs say.

    A recv completes only when its source sends; a gloo send, only when its destination has posted the
    matching recv (the sender times out with `Timed out waiting <ms>ms for send operation to complete`,
    gloo/transport/tcp/unbound_buffer.cc `waitSend`). gloo's timeouts name no peer; the rank's own call
    does (`dist.recv(t, src=...)`, `dist.send(t, dst=...)` in its traceback: a literal or its rank plus or
    minus a constant), and in a 2-rank job a receiver's peer is the other rank. `src` is the rank waited
    for (recv's source, send's destination) and `op` the rank's own op; `src_waits` says that rank is itself
    blocked in a point-to-point op (a victim further down a pipeline); `src_call` is what it was blocked
    in, when known. `mutual`: the waited-for rank waits for this one in turn (two receives that can
    never complete). `ahead`: of such a pair, this rank's blocking call is at a later line of the same
    function in the same file than its peer's: within one pass of that code it has gone past the point
    where its peer still waits (hence past the send its peer expects).
    """
    call_of = {c["rank"]: str(c.get("call")) for c in calls if isinstance(c.get("rank"), int)}
    row_of = {c["rank"]: c for c in calls if isinstance(c.get("rank"), int)}
    receivers = {r for r, c in call_of.items() if c in RECVS}
    p2p = {r for r, c in call_of.items() if c in RECVS or c in SENDS}
    stacks: dict[int, Event] = {}
    for e in events:
        r = e.rank
        if r is not None and r in p2p and r not in stacks and e.kind in STACK_KINDS and e.get("frames"):
            stacks[r] = e
    rows: list[Row] = []
    for r in sorted(p2p):
        stack = stacks.get(r)
        named = None
        if stack is not None:
            named = _peer_of_call([str(f) for f in stack.get("frames") or []],
                                  [str(s) for s in stack.get("sources") or []], r)
        if named is not None:
            op, src, text = named
            basis = f"its own call `{text}`"
        elif r in receivers and world == 2 and r in (0, 1):
            op, src, basis = "recv", 1 - r, "the only other rank of a 2-rank job"
        else:
            continue
        if src == r or src < 0 or (world is not None and src >= world):
            continue
        path, line = (stack.path, stack.line) if stack is not None else (None, None)
        rows.append({"rank": r, "host": hosts.get(r), "op": op, "src": src, "src_call": call_of.get(src),
                     "src_waits": src in p2p, "basis": basis, "path": path, "line": line})
    # NCCL: the watchdog's timeout line names the op a rank was blocked in (`WorkNCCL(SeqNum=.., OpType=RECV,
    # ..)`, ProcessGroupNCCL.cpp; log-formats.md section 1) but never its peer, and no Python stack is printed
    # (the watchdog takes the process down): in a 2-rank job the peer is the other rank.
    nccl_op: dict[int, str] = {}
    nccl_ref: dict[int, Event] = {}
    for e in events:
        if e.kind == "hang_detected" and e.rank is not None and e.get("op") and e.rank not in nccl_op:
            nccl_op[e.rank] = str(e.get("op")).upper()
            nccl_ref[e.rank] = e
    listed = {row["rank"] for row in rows}
    for r, op_name in sorted(nccl_op.items()):
        if world != 2 or r not in (0, 1) or r in listed or op_name not in ("SEND", "RECV"):
            continue
        other = 1 - r
        other_op = call_of.get(other) or (nccl_op[other].lower() if other in nccl_op else None)
        rows.append({"rank": r, "host": hosts.get(r), "op": op_name.lower(), "src": other,
                     "src_call": other_op,
                     "src_waits": other_op in RECVS or other_op in SENDS,
                     "basis": f"its watchdog's OpType={op_name}; the only other rank of a 2-rank job",
                     "path": nccl_ref[r].path, "line": nccl_ref[r].line})
    waits_for = {row["rank"]: row["src"] for row in rows}
    for row in rows:
        r, src = row["rank"], row["src"]
        row["mutual"] = waits_for.get(src) == r
        mine, theirs = _user_site(row_of.get(r)), _user_site(row_of.get(src))
        row["ahead"] = bool(row["mutual"] and mine and theirs and mine[0] == theirs[0]
                            and mine[2] == theirs[2] and mine[1] > theirs[1])
        row["peer_site"] = row_of[src].get("user_frame") if src in row_of else None
        row["site"] = row_of[r].get("user_frame") if r in row_of else None
    return rows


def gradient_sync_rows(size_rows: Sequence[Row], calls: Sequence[Row], hosts: dict[int, str],
                       world: int | None = None, known: Collection[int] = (),
                       unranked: Sequence[Row] = ()) -> list[Row]:
    """Which ranks were in DDP's gradient all_reduce when gloo rejected a gradient bucket message.

    DDP checks at construction that every rank holds parameters of the same shapes
    (torch/nn/parallel/distributed.py `_verify_param_shape_across_processes`) and keeps one bucket layout on
    all ranks (rank 0's rebuilt buckets are broadcast, reducer.cpp `sync_bucket_indices`): a gradient
    bucket has the same size on every rank. A gloo receiver that rejected the message of a sender blocked
    in `backward` (a collective, not point-to-point) therefore posted a buffer of another size: it was not
    in the gradient all_reduce but in another collective (a metric all_reduce or a barrier after its data
    ran out, a sync the sender skipped). One row per rank whose side is known: the receiver (`in_sync`
    false), and every rank whose own stack shows its call (`in_sync` true for `backward`). `minority`
    marks the side held by fewer than half of these ranks while the other side has two at least
    (failure-signatures.md section 1, "Culprit vs victims"); with two ranks neither side is marked.
    `calls`: each rank's own call (collectives.stack_calls); the sender is the receiver's row's peer, else
    its ring neighbour by these calls.

    `unranked`: the stacks of tracebacks no rank was given to (collectives.unranked_stack_calls; torch 2.0-2.3
    consoles print none with a rank). When the receiver left no stack of its own (it aborted) and these
    stacks are exactly as many as the ranks of the world that have none, they are those ranks' stacks, one
    each, though which is whose is unknown: if every one of them ends in `backward`, the sender (one of
    them) was in the gradient all_reduce, and they count as that side (rows with `rank` None).
    """
    call_of = {c["rank"]: c for c in calls if isinstance(c.get("rank"), int)}
    for rcv in size_rows:
        if rcv.get("role") != "receiver" or rcv.get("p2p"):
            continue
        if _unranked_in_sync(rcv, call_of, world, unranked):
            return _sides_with_unranked(rcv, call_of, hosts, unranked)
        sender = rcv.get("peer")
        if not isinstance(sender, int):
            ring = _ring_sender(rcv["rank"], world, calls, {*known, *call_of})
            if ring is None:
                continue
            sender = ring[0]
        sent = call_of.get(sender)
        own = call_of.get(rcv["rank"])
        if sent is None or sent.get("call") != GRADIENT_SYNC or (own and own.get("call") == GRADIENT_SYNC):
            continue
        side = {rank: c.get("call") == GRADIENT_SYNC for rank, c in call_of.items()}
        side[rcv["rank"]] = False
        n_in = sum(side.values())
        n_out = len(side) - n_in
        rows: list[Row] = []
        for rank in sorted(side):
            mine, other = (n_in, n_out) if side[rank] else (n_out, n_in)
            c = call_of.get(rank)
            if rank == rcv["rank"]:
                elsewhere = f" but in {own.get('call')}" if own else ""
                basis = (f"rejected rank {sender}'s gradient bucket message: it was not in the gradient "
                         f"all_reduce{elsewhere}")
                where = (rcv.get("path"), rcv.get("line"))
            else:
                basis = "its stack ends in backward (DDP's gradient all_reduce)" if side[rank] else \
                    f"its stack is in {c.get('call') if c else None}, not in the gradient all_reduce"
                where = (c.get("path"), c.get("line")) if c else (None, None)
            rows.append({"rank": rank, "host": hosts.get(rank), "in_sync": side[rank],
                         "call": c.get("call") if c else None, "sender": sender,
                         "minority": 2 * mine < len(side) and other >= 2, "basis": basis,
                         "path": where[0], "line": where[1]})
        return rows
    return []


def _unranked_in_sync(rcv: Row, call_of: dict[int, Row], world: int | None, unranked: Sequence[Row]) -> bool:
    """Do the unranked stacks stand for every other rank of the world, all of them in the gradient sync, with
    the receiver's own stack absent?"""
    if not unranked or world is None or rcv["rank"] in call_of or not isinstance(rcv.get("rank"), int):
        return False
    if any(c.get("call") != GRADIENT_SYNC for c in [*call_of.values(), *unranked]):
        return False
    return 0 <= rcv["rank"] < world and len(call_of) + len(unranked) == world - 1


def _sides_with_unranked(rcv: Row, call_of: dict[int, Row], hosts: dict[int, str],
                         unranked: Sequence[Row]) -> list[Row]:
    """The receiver alone outside the gradient all_reduce, every other rank's stack (ranked or not) in it."""
    n_in = len(call_of) + len(unranked)
    rows: list[Row] = [{
        "rank": rcv["rank"], "host": hosts.get(rcv["rank"]), "in_sync": False, "call": None, "sender": None,
        "minority": n_in >= 2, "path": rcv.get("path"), "line": rcv.get("line"),
        "basis": (f"rejected a gradient bucket message: it was not in the gradient all_reduce, while the "
                  f"{n_in} other ranks' stacks all end in backward (DDP's gradient all_reduce)"),
    }]
    for c in [*(call_of[r] for r in sorted(call_of)), *unranked]:
        rows.append({"rank": c.get("rank"), "host": c.get("host"), "in_sync": True, "call": c.get("call"),
                     "sender": None, "minority": False, "path": c.get("path"), "line": c.get("line"),
                     "basis": "its stack ends in backward (DDP's gradient all_reduce)"
                              + ("" if isinstance(c.get("rank"), int) else
                                 "; its traceback carries no rank")})
    return rows


def _store_poll_timeout(e: Event) -> bool:
    """A store request that got no answer within its timeout: c10d's `waitForInput: socket ... timed out after
    <ms>` (torch/csrc/distributed/c10d/socket.cpp), read as a store_error with `error` "timed out". The store
    host neither answered nor closed the connection. (The launcher's line carries no rank, but a node with one
    worker lends its stream that worker's rank, so the rank is not asked for.)"""
    return (e.kind == "store_error" and e.host is not None
            and e.get("op") == "wait" and e.get("error") == "timed out")


def store_link_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """The nodes whose launcher lost its path to the rendezvous store (the torchrun agent's TCPStore client,
    which keeps the rendezvous alive from every node: torch/distributed/elastic/rendezvous/
    dynamic_rendezvous.py `_keep_alive`, c10d_rendezvous_backend.py), one row per rank of each implicated
    host.

    A peer that exits or is killed closes its sockets (the kernel sends FIN or RST), so its peers read
    `Connection reset` or `got 0 bytes`; a store request that simply gets no answer before its timeout means
    the packets stopped flowing between the two hosts: a link, a port, a firewall, or a host that froze
    (failure-signatures.md section 9: errors towards a host that never answer implicate the link or that
    host). The store host never times out on itself, so it sits among the hosts that kept their path;
    which end of the path failed is told as NCCL's IB errors tell it (section 9, culprit rules 2 and 3):

    - `converge`: every job host but one timed out, two or more of them: the one they all lost is the store
      host, whose link or node failed (rows: that host's ranks, `side` "store_host");
    - `fanout`: some hosts timed out while two or more others (the store host among them) kept their path:
      the hosts that timed out lost their own link (rows: their ranks, `side` "lost");
    - `pair`: one host timed out and only the store host is left: either end may have failed (rows: both
      hosts' ranks, `side` "either"; no culprit follows from them).
    """
    job_hosts: dict[str, list[int]] = defaultdict(list)
    for r, h in hosts.items():
        if isinstance(h, str):
            job_hosts[short_host(h)].append(r)
    if len(job_hosts) < 2:
        return []
    lost: dict[str, Event] = {}
    # A worker's `store.wait`/`get` on a key no peer has set times out the same way (the store answers only
    # once the key exists) and then raises `wait timeout after <ms>, keys: ...`: on such a host the request
    # went unanswered for want of the key, not of the path (real runs, probe 46: a node that never joined).
    # A node's console may name its host apart from its ranks' own files (a `--log-dir` tree's folder
    # against the console's file name): a line's host is its rank's, else the one host of the ranks seen
    # in its file.
    file_hosts: dict[str, set[str]] = defaultdict(set)
    for e in events:
        if e.rank is not None and isinstance(hosts.get(e.rank), str):
            file_hosts[e.path].add(short_host(hosts[e.rank]))

    def host_of(e: Event) -> str | None:
        h = short_host(e.host) if isinstance(e.host, str) else None
        if h in job_hosts:
            return h
        if e.rank is not None and isinstance(hosts.get(e.rank), str):
            return short_host(hosts[e.rank])
        seen = file_hosts.get(e.path, set())
        return next(iter(seen)) if len(seen) == 1 else None

    key_waits = {host_of(e) for e in events if e.kind == "store_error" and e.get("keys")}
    for e in events:
        node = host_of(e) if _store_poll_timeout(e) else None
        if node is not None and node not in key_waits:
            lost.setdefault(node, e)
    if not lost:
        return []
    kept = sorted(set(job_hosts) - set(lost))
    if not kept:
        return []
    first = min(lost.values(), key=lambda ev: (ev.path, ev.line))
    if len(kept) == 1 and len(lost) >= 2:
        basis, side, blamed = "converge", "store_host", {kept[0]: first}
    elif len(kept) >= 2:
        basis, side, blamed = "fanout", "lost", dict(lost)
    else:
        basis, side, blamed = "pair", "either", {**lost, kept[0]: first}
    rows: list[Row] = []
    for h in sorted(blamed):
        e = blamed[h]
        for r in sorted(job_hosts[h]):
            rows.append({"rank": r, "host": hosts.get(r), "side": side, "basis": basis,
                         "hosts_lost": len(lost), "hosts_kept": len(kept), "time": e.time,
                         "path": e.path, "line": e.line})
    return rows
