"""Line ranks up per process group: sequence numbers reached, who lags, who disagrees at one collective."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from hanglens.analysis import callsite
from hanglens.analysis.kinds import is_victim_exception
from hanglens.analysis.record import Record, record_type
from hanglens.model import Event

Row = dict[str, Any]
# WorkNCCL OpType names of point-to-point ops (c10d OpType: SEND, RECV, RECVANYSOURCE).
P2P_OPTYPES = frozenset({"SEND", "RECV", "RECVANYSOURCE"})
COLLECTIVE_COLUMNS = ("pg", "rank", "seq", "op", "numel_in", "numel_out", "state")
_COLL_AT = {c: i for i, c in enumerate(COLLECTIVE_COLUMNS)}
_STATE = _COLL_AT["state"]
_SEQ_DETECTORS = ("watchdog", "blocking_wait")


def _pg(e: Event) -> str | None:
    pg = e.get("pg")
    return None if pg is None else str(pg)


def _resolve_pgs(events: Sequence[Event]) -> dict[int, str]:
    """Per event index, the PG of events that do not name one (≤2.3 watchdog lines).

    A rank's watchdog line without a PG is matched to the PG of that rank's status line with the same
    failed sequence number; failing that, to the rank's only PG; failing that, the default PG "0". Events
    resolved to "0" are left out (the caller's default: most events of a big job name no PG).
    """
    by_rank_seq: dict[tuple[int | None, object], str] = {}
    by_rank: dict[int | None, set[str]] = defaultdict(set)
    for e in events:
        pg = _pg(e)
        if pg is None:
            continue
        by_rank[e.rank].add(pg)
        for key in ("failed_seq", "seq"):
            if e.get(key) is not None:
                by_rank_seq[(e.rank, e.get(key))] = pg
    out: dict[int, str] = {}
    for i, e in enumerate(events):
        if _pg(e) is not None:
            continue
        pg = by_rank_seq.get((e.rank, e.get("seq")))
        if pg is None and len(by_rank[e.rank]) == 1:
            pg = next(iter(by_rank[e.rank]))
        if pg and pg != "0":
            out[i] = pg
    return out


def _num(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def collective_state(events: Sequence[Event], hosts: dict[int, str]) -> tuple[list[Row], pd.DataFrame]:
    """Per (pg, rank) sequence status, and the per (pg, rank, seq) collectives table.

    Sources: watchdog/blocking-wait timeouts (seq, op, numel, timeout), PG status and dump-signal lines
    (last enqueued / started / completed), DETAIL fingerprints (seq, op) and fingerprint mismatches, and
    Flight Recorder entries at the frontier (see `flight_frontier`; a retired entry that did not finish
    counts as timed out).
    """
    pgs = _resolve_pgs(events)
    st: dict[tuple[str, int], Row] = {}
    # Per (pg, rank, seq): a list in COLLECTIVE_COLUMNS' order, not a dict (a big job has a few per rank)
    coll: dict[tuple[str, int, int], list[Any]] = {}

    def slot(pg: str, rank: int) -> Row:
        return st.setdefault((pg, rank), {"pg": pg, "rank": rank, "host": hosts.get(rank), "source": set()})

    def bump(row: Row, key: str, value: int | None) -> None:
        if value is not None and (row.get(key) is None or value > row[key]):
            row[key] = value

    def cell(pg: str, rank: int, seq: int, **kw: Any) -> None:
        row = coll.get((pg, rank, seq))
        if row is None:
            row = coll[(pg, rank, seq)] = [pg, rank, seq, None, None, None, "enqueued"]
        for k, v in kw.items():
            if v is not None and (k != "state" or row[_STATE] != "mismatch"):
                row[_COLL_AT[k]] = v

    p2p_failed = _p2p_timeouts(events)
    for i, e in enumerate(events):
        if e.rank is None:
            continue
        pg = _pg(e) or pgs.get(i, "0")
        if (e.kind == "pg_status" and e.get("failed_seq") is not None
                and (e.rank, _num(e.get("failed_seq"))) in p2p_failed):
            # The watchdog's status line of a point-to-point work: torch copies the failed work's own
            # `seq_` into the PG status when it enqueues it (ProcessGroupNCCL::workEnqueue,
            # `pgStatus_->lastEnqueuedSeq = work->seq_`), and a SEND/RECV work's seq_ is the rank's p2p
            # counter (`seqP2P_`, log-formats.md section 1.12): its numbers are no position among the group's
            # collectives, and pipeline stages issue different numbers of p2p ops by design.
            continue
        if e.kind == "hang_detected" and e.get("detector") in _SEQ_DETECTORS:
            seq = _num(e.get("seq"))
            if str(e.get("op") or "").upper() in P2P_OPTYPES:
                # A point-to-point op's SeqNum counts that rank's own sends and receives (`seqP2P_`), not the
                # group's collectives (`seqCollective_`; ProcessGroupNCCL.hpp "Counting for the sequential
                # number of NCCL P2P calls", ProcessGroupNCCL.cpp pointToPoint): it is no position among the
                # group's collectives, and pipeline stages issue different numbers of them by design.
                continue
            row = slot(pg, e.rank)
            row["source"].add("watchdog")
            if seq is not None and (row.get("timed_out_seq") is None or seq < row["timed_out_seq"]):
                row.update(
                    timed_out_seq=seq,
                    op=e.get("op"),
                    numel_in=e.get("numel_in"),
                    numel_out=e.get("numel_out"),
                    timeout_ms=e.get("timeout_ms"),
                    path=e.path,
                    line=e.line,
                )
            bump(row, "last_enqueued", seq)
            if seq is not None:
                cell(
                    pg,
                    e.rank,
                    seq,
                    op=e.get("op"),
                    numel_in=e.get("numel_in"),
                    numel_out=e.get("numel_out"),
                    state="timed_out",
                )
            elif "oldest_unnumbered" not in row and e.get("op") is not None:
                # torch 1.10 prints WorkNCCL(OpType=..., Timeout(ms)=...) without a SeqNum (log-formats.md
                # section 1.3); its watchdog walks the PG's works in enqueue order, so a rank's first such
                # line is its oldest unfinished collective, the one every member of the PG is blocked at.
                row["oldest_unnumbered"] = {
                    "op": e.get("op"), "numel_in": e.get("numel_in"), "numel_out": e.get("numel_out"),
                    "timeout_ms": e.get("timeout_ms"), "path": e.path, "line": e.line,
                }
        elif e.kind in ("pg_status", "dump_signal"):
            row = slot(pg, e.rank)
            row["source"].add(e.kind)
            bump(row, "last_enqueued", _num(e.get("last_enqueued")))
            bump(row, "last_started", _num(e.get("last_started")))
            bump(row, "last_completed", _num(e.get("last_completed")))
            failed = _num(e.get("failed_seq"))
            if failed is not None and row.get("timed_out_seq") is None:
                row["timed_out_seq"] = failed
            if row.get("path") is None:
                row.update(path=e.path, line=e.line)
            done = _num(e.get("last_completed"))
            if done is not None and done >= 0:
                cell(pg, e.rank, done, state="completed")
            enq = _num(e.get("last_enqueued"))
            if enq is not None and enq >= 0 and (done is None or enq > done):
                cell(pg, e.rank, enq, state="enqueued")
        elif e.kind == "collective_fingerprint":
            seq = _num(e.get("seq"))
            row = slot(pg, e.rank)
            row["source"].add("fingerprint")
            bump(row, "last_enqueued", seq)
            if seq is not None:
                cell(pg, e.rank, seq, op=e.get("op"))
    for (pg, rank, seq), (fe, done) in sorted(flight_frontier(events).items()):
        row = slot(pg, rank)
        row["source"].add("flight_recorder")
        bump(row, "last_enqueued", seq)
        # Retired without finishing = the watchdog gave up on it (timed out or failed).
        state = "completed" if done else ("timed_out" if fe.get("retired") else "enqueued")
        if state == "timed_out" and (row.get("timed_out_seq") is None or seq < row["timed_out_seq"]):
            row.update(timed_out_seq=seq, op=fe.get("op"), numel_in=fe.get("numel_in"),
                       numel_out=fe.get("numel_out"), timeout_ms=fe.get("timeout_ms"),
                       path=fe.path, line=fe.line)
        if row.get("path") is None:
            row.update(path=fe.path, line=fe.line)
        cell(pg, rank, seq, op=fe.get("op"), numel_in=fe.get("numel_in"), numel_out=fe.get("numel_out"),
             state=state)
    for row in st.values():
        row["source"] = ",".join(sorted(row["source"]))
        oldest = row.get("oldest_unnumbered")
        if oldest is not None and row.get("timed_out_seq") is None and row.get("last_enqueued") is None:
            row.update({k: v for k, v in oldest.items() if row.get(k) is None})
        else:
            row.pop("oldest_unnumbered", None)
    rows = sorted(st.values(), key=lambda r: (r["pg"], r["rank"]))
    coll_df = pd.DataFrame([coll[k] for k in sorted(coll)], columns=list(COLLECTIVE_COLUMNS))
    return rows, coll_df


def _p2p_timeouts(events: Sequence[Event]) -> set[tuple[int, int | None]]:
    """(rank, SeqNum) of every point-to-point work (`OpType=SEND`/`RECV`) a rank's watchdog timed out."""
    return {(e.rank, _num(e.get("seq"))) for e in events
            if e.kind == "hang_detected" and e.rank is not None and e.get("detector") in _SEQ_DETECTORS
            and str(e.get("op") or "").upper() in P2P_OPTYPES and _num(e.get("seq")) is not None}


def _fr_done(e: Event, newest: int) -> bool:
    """Whether a flight recorder entry finished: its state says so, or it retired before the rank's newest.

    gloo never marks entries completed and counts a failed work as completed in pg_status, so the newest
    entry of a rank only counts as finished when its own state says so.
    """
    seq = _num(e.get("seq"))
    return e.get("state") == "completed" or (bool(e.get("retired")) and seq is not None and seq < newest)


def flight_frontier(events: Sequence[Event]) -> dict[tuple[str, int, int], tuple[Event, bool]]:
    """Per (pg, rank, seq), the flight recorder collective entries at the frontier (and each rank's newest),
    with whether each finished.

    The frontier is every (pg, seq) that at least one rank has not finished; comparing only there keeps a
    long healthy history out of the tables. p2p entries are left out (their sequence is per peer pair).
    """
    entries: dict[tuple[str, int, int], Event] = {}
    newest: dict[tuple[str, int], int] = {}
    for e in events:
        if e.kind != "fr_entry" or e.rank is None:
            continue
        seq = _num(e.get("seq"))
        if seq is None or e.get("is_p2p"):
            continue
        pg = _pg(e) or "0"
        entries[(pg, e.rank, seq)] = e
        newest[(pg, e.rank)] = max(seq, newest.get((pg, e.rank), seq))
    open_seqs = {(pg, seq) for (pg, rank, seq), e in entries.items() if not _fr_done(e, newest[(pg, rank)])}
    return {
        key: (e, _fr_done(e, newest[(key[0], key[1])]))
        for key, e in entries.items()
        if (key[0], key[2]) in open_seqs or key[2] == newest[(key[0], key[1])]
    }


def enqueue_lag(events: Sequence[Event], state: Sequence[Mapping[str, Any]],
                hosts: dict[int, str]) -> list[Record]:
    """Ranks behind or ahead of their process group's majority position.

    A rank's position is the newest sequence number it enqueued (or timed out on). The majority
    position is the most common one among the ranks of that PG (ties: the higher). Desync reports name
    lagging ranks outright; they are added with basis "desync". `idle` is true when the rank's own status
    says it had completed everything it enqueued on that PG (`last completed work` >= `last enqueued
    work`, no timeout of its own there): it was not waiting in one of this group's collectives when its
    peers failed; false when it had work in flight; None when its status does not say.
    """
    out: list[Record] = []
    # (each state row with its position, not a copy of it: a big job has a row per rank)
    by_pg: dict[str, list[tuple[Mapping[str, Any], int]]] = defaultdict(list)
    for r in state:
        pos = r.get("last_enqueued")
        if pos is None:
            pos = r.get("timed_out_seq")
        if pos is not None:
            by_pg[r["pg"]].append((r, pos))
    for pg, rows in sorted(by_pg.items()):
        if len(rows) < 2:
            continue
        counts = Counter(pos for _, pos in rows)
        majority = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        top = max(counts)
        for r, pos in rows:
            out.append(
                _LagRow(
                    pg=pg,
                    rank=r["rank"],
                    host=r.get("host"),
                    last_enqueued=pos,
                    pg_max_enqueued=top,
                    lag=max(0, majority - pos),
                    ahead=max(0, pos - majority),
                    basis=r.get("source") or "status",
                    idle=_idle(r),
                    path=r.get("path"),
                    line=r.get("line"),
                )
            )
    seen = {(r["pg"], r["rank"]) for r in out}
    to_global = pg_rank_to_global(events)
    for e in events:
        if e.kind != "desync_report":
            continue
        pg = _pg(e) or "0"
        seq = _num(e.get("seq"))
        for key, lag in (("lagging_ranks", 1), ("not_joined_ranks", 1), ("not_finished_ranks", 0)):
            for pg_rank in e.get(key) or []:
                # The report names ranks of its PG (log-formats.md section 1.9); a rank in another group
                # than the default one is a global rank only through that group's layout.
                rank = to_global(pg, e.get("pg_desc"), pg_rank) if isinstance(pg_rank, int) else None
                if rank is None or (pg, rank) in seen or lag == 0:
                    continue
                seen.add((pg, rank))
                joined = _num(e.get("joined_seq"))
                out.append(
                    _LagRow(
                        pg=pg,
                        rank=rank,
                        host=hosts.get(rank),
                        last_enqueued=joined if joined is not None else (seq - 1 if seq else None),
                        pg_max_enqueued=seq,
                        lag=lag,
                        ahead=0,
                        basis="desync",
                        idle=None,
                        path=e.path,
                        line=e.line,
                    )
                )
    return sorted(out, key=lambda r: (r["pg"], r["rank"]))


_LagRow = record_type("pg_enqueue_lag")   # (slotted: one per rank of a big job)


def _idle(r: Mapping[str, Any]) -> bool | None:
    """See `enqueue_lag`: None unless the rank's own status gave both its enqueued and completed work."""
    done, enq = r.get("last_completed"), r.get("last_enqueued")
    if done is None or enq is None:
        return None
    return r.get("timed_out_seq") is None and done >= enq


def pg_rank_to_global(events: Sequence[Event]) -> Callable[[str, object, int], int | None]:
    """PG rank -> global rank, per process group, where the logs state it.

    The default PG's ranks are the global ranks. For another group, the lines that carry both the global
    `[rankN]:` envelope and the `[PG ... Rank r]` prefix pair the two (failure-signatures.md section 0.5);
    a PG rank no such line names is mapped only when two or more pairs lie on one arithmetic progression
    `global = base + stride * pg_rank`, the layout frameworks give their groups (Megatron-LM's
    `initialize_model_parallel`: contiguous tensor-parallel blocks, strided data-parallel groups; a
    DeviceMesh dimension of a row-major mesh). Anything else stays unmapped (None): a group rank is not a
    global rank.
    """
    pairs: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for e in events:
        pg, pg_rank = _pg(e), e.get("pg_rank")
        if pg is not None and e.rank is not None and type(pg_rank) is int:
            pairs[pg][pg_rank].add(e.rank)
    layouts: dict[str, tuple[dict[int, int], tuple[int, int] | None]] = {}
    for pg, seen in pairs.items():
        known = {r: next(iter(gs)) for r, gs in seen.items() if len(gs) == 1}
        if len(known) != len(seen):
            continue                                   # a PG rank seen with two global ranks: no layout
        line: tuple[int, int] | None = None
        if len(known) >= 2:
            (r0, g0), (r1, g1) = sorted(known.items())[:2]
            stride, rem = divmod(g1 - g0, r1 - r0)
            base = g0 - stride * r0
            fits = all(base + stride * r == g for r, g in known.items())
            if rem == 0 and stride > 0 and base >= 0 and fits:
                line = (base, stride)
        layouts[pg] = (known, line)

    def to_global(pg: str, desc: object, pg_rank: int) -> int | None:
        if pg == "0" or desc == "default_pg":
            return pg_rank
        known, line = layouts.get(pg, ({}, None))
        if pg_rank in known:
            return known[pg_rank]
        return None if line is None else line[0] + line[1] * pg_rank

    return to_global


def _signature(r: Row) -> tuple[object, ...]:
    return (r.get("op"), r.get("numel_in"), r.get("numel_out"), r.get("shape"), r.get("dtype"))


def _sides(e: Event) -> tuple[int | None, list[tuple[object, ...]]] | None:
    """A fingerprint report's sequence number and its two sides, each (group rank, op, shape, dtype): the
    writer's first (each writer lists itself first)."""
    ranks = e.get("ranks") or []
    if len(ranks) != 2 or not all(isinstance(r, int) for r in ranks):
        return None
    seqs = e.get("seqs") or []
    seq = _num(seqs[0]) if seqs else _num(e.get("seq"))

    def side(j: int) -> tuple[object, ...]:
        vals = [e.get(n) if isinstance(e.get(n), list) else [] for n in ("ops", "shapes", "dtypes")]
        return (ranks[j], *(str(v[j]) if len(v) > j and v[j] is not None else None for v in vals))

    return seq, [side(0), side(1)]


def mismatch_global_ranks(mismatches: Sequence[Event]) -> dict[int, list[int]]:
    """Per DETAIL mismatch report (by `id`), its [writer, peer] as global ranks, where they differ from print.

    ProcessGroupWrapper numbers the ranks of a `new_group` subgroup by their group rank (log-formats.md
    section 2.1; failure-signatures.md section 0.5), while `[rankN]:` carries the writer's global rank. A
    report's writer side (its group rank with the op, shape and dtype it ran at that sequence number) is the
    global rank of the line that carries it, when that differs from the printed one; any report that names
    the same side as its peer (the writer's report of the same comparison, or another member's comparison
    with it) then reads it as that global rank. When one side at a sequence number is seen on more than one
    global rank, several subgroups compared the same fingerprints there and who is whose peer is unknown:
    those reports are left as printed.
    """
    learned: dict[tuple[object, ...], set[int]] = defaultdict(set)
    for e in mismatches:
        got = _sides(e)
        if got is not None and e.rank is not None and e.rank != got[1][0][0]:
            learned[(got[0], got[1][0])].add(e.rank)
    shared = {key[0] for key, seen in learned.items() if len(seen) > 1}
    out: dict[int, list[int]] = {}
    for e in mismatches:
        got = _sides(e)
        if got is None or got[0] in shared:
            continue
        seq, (mine, theirs) = got
        w, p = e.get("ranks")

        def resolve(side: tuple[object, ...], printed: int, seq: object = seq) -> int:
            seen = learned.get((seq, side))
            return next(iter(seen)) if seen else printed

        # A line that carried no global rank of its own got the printed one: read it as a group rank too.
        writer = resolve(mine, w) if e.rank is None or e.rank == w else e.rank
        peer = resolve(theirs, p)
        if writer != peer and [writer, peer] != [w, p]:
            out[id(e)] = [writer, peer]
    return out


def _add_matched_before_peer(cells: dict[tuple[str, int], dict[int, Row]], mismatches: Sequence[Event],
                             global_ranks: Mapping[int, list[int]]) -> None:
    """The ranks a DETAIL mismatch report shows to agree with its writer, added to the report's cell.

    ProcessGroupWrapper compares the writer's fingerprint with every rank's in rank order and raises at the
    first that differs (torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp `verify_tensors`: `for rank in
    irange(size)`, `TORCH_CHECK(false, ...)` on the first `!rank_tensor.equal(reference_tensor)`). So a
    report from rank w naming rank p also says that every rank below p ran what w ran. Read only for the
    default group's reports printed with global ranks (a subgroup's reports number its own members), and a
    rank whose own report or stack is in the input keeps what it showed.
    """
    for e in mismatches:
        ranks = e.get("ranks") or []
        pg = _pg(e) or "0"
        if pg != "0" or id(e) in global_ranks or len(ranks) != 2 or not all(isinstance(r, int)
                                                                            for r in ranks):
            continue
        w, p = ranks
        if (e.rank is not None and e.rank != w) or not 0 <= p <= 65536:
            continue
        seqs = e.get("seqs") or []
        own_seq = _num(seqs[0]) if seqs else _num(e.get("seq"))
        cell = cells.get((pg, own_seq if own_seq is not None else -1))
        if cell is None or w not in cell:
            continue
        for r in range(p):
            if r != w:
                cell.setdefault(r, dict(cell[w]))


def _add_operation_shapes(cells: dict[tuple[str, int], dict[int, Row]], events: Sequence[Event]) -> None:
    """accelerate's debug-mode shape reports (parsers/accelerate.py): every process's input shape to one
    accelerate operation, which runs on the default group; each operation gets its own unnumbered key
    (below -1, the key of torch 1.10's unnumbered timeouts), every process's copy of a report the same."""
    keys: dict[str, int] = {}
    reports = [e for e in events if e.kind == "operation_shapes"]
    for own in (True, False):   # a rank's own copy of the report is its evidence, another's only without it
        for e in reports:
            op = str(e.get("operation"))
            key = ("0", keys.setdefault(op, -2 - len(keys)))
            for rank, shape in zip(e.get("ranks") or [], e.get("shapes") or [], strict=False):
                if isinstance(rank, int) and (e.rank == rank) == own:
                    cells[key].setdefault(rank, {"op": op, "numel_in": None, "numel_out": None,
                                                 "shape": shape, "dtype": None, "path": e.path,
                                                 "line": e.line})


def disagreement(events: Sequence[Event], state: Sequence[Mapping[str, Any]],
                 hosts: dict[int, str]) -> list[Row]:
    """Ranks that disagree at the same (pg, seq): op type, numel, shape or dtype.

    Three sources: timed-out works of several ranks at the same (pg, seq) with different op/numel, DETAIL
    fingerprint mismatches (each names two ranks and what each runs), and accelerate's debug-mode shape
    reports (every process's shape to one operation). `minority` marks the
    ranks whose signature differs from the most common one; with a tie nobody is the minority.
    """
    cells: dict[tuple[str, int], dict[int, Row]] = defaultdict(dict)
    for r in state:
        # Ranks whose timeouts carry no SeqNum (torch 1.10) are compared at their oldest unfinished work,
        # which is the same collective on every member of the PG (collective_state); key -1 = unnumbered.
        seq = r.get("timed_out_seq") if "oldest_unnumbered" not in r else -1
        if seq is not None and r.get("op") is not None:
            cells[(r["pg"], seq)][r["rank"]] = {
                "op": r.get("op"),
                "numel_in": r.get("numel_in"),
                "numel_out": r.get("numel_out"),
                "shape": None,
                "dtype": None,
                "path": r.get("path"),
                "line": r.get("line"),
            }
    frontier = flight_frontier(events)
    open_seqs = {(pg, seq) for (pg, _, seq), (_, done) in frontier.items() if not done}
    for (pg, rank, seq), (e, _) in sorted(frontier.items()):
        if (pg, seq) in open_seqs and e.get("op") is not None:
            cells[(pg, seq)].setdefault(
                rank,
                {
                    "op": e.get("op"),
                    "numel_in": e.get("numel_in"),
                    "numel_out": e.get("numel_out"),
                    "shape": None,
                    "dtype": None,
                    "path": e.path,
                    "line": e.line,
                },
            )
    votes: dict[tuple[str, int], Counter[int]] = defaultdict(Counter)
    mismatches = [e for e in events if e.kind == "collective_mismatch"]
    global_ranks = mismatch_global_ranks(mismatches)
    # A report's own fingerprint (the writer's, listed first) is reliable; the peer's copy can be garbled
    # when the wrapper's exchange is out of step (seen as SequenceNumber=0). The report still proves that
    # the peer's fingerprint differs from the writer's (ProcessGroupWrapper.cpp raises only on a
    # difference), so the peer is placed at the writer's sequence number with what the report says it ran;
    # writers come first, so a peer that wrote its own report keeps its own fingerprint.
    for side in (0, 1):
        for e in mismatches:
            pg = _pg(e) or "0"
            seqs = e.get("seqs") or []
            own_seq = _num(seqs[0]) if seqs else _num(e.get("seq"))
            key = (pg, own_seq if own_seq is not None else -1)
            ranks = global_ranks.get(id(e)) or e.get("ranks") or []
            if side >= len(ranks) or not isinstance(ranks[side], int):
                continue

            def pick(name: str, j: int = side, e: Event = e) -> object:
                vals = e.get(name) or []
                return vals[j] if j < len(vals) else None

            cells[key].setdefault(
                ranks[side],
                {
                    "op": pick("ops"),
                    "numel_in": None,
                    "numel_out": None,
                    "shape": pick("shapes"),
                    "dtype": pick("dtypes"),
                    "path": e.path,
                    "line": e.line,
                },
            )
            votes[key][ranks[side]] += 1
    _add_matched_before_peer(cells, mismatches, global_ranks)
    _add_operation_shapes(cells, events)
    out: list[Row] = []
    for (pg, seq), per_rank in sorted(cells.items()):
        sigs = {rank: _signature(c) for rank, c in per_rank.items()}
        if len(set(sigs.values())) < 2:
            continue
        differs = [
            name
            for i, name in enumerate(("op", "numel_in", "numel_out", "shape", "dtype"))
            if len({s[i] for s in sigs.values() if s[i] is not None}) > 1
        ]
        counts = Counter(sigs.values())
        ranked = counts.most_common()
        majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
        minority_ranks: set[int] = set()
        if majority is not None:
            minority_ranks = {r for r, s in sigs.items() if s != majority}
        elif votes.get((pg, seq)):
            # Mismatch messages: the rank named in the most reports is the odd one out.
            v = votes[(pg, seq)].most_common()
            if len(v) > 1 and v[0][1] > v[1][1]:
                minority_ranks = {v[0][0]}
        for rank, c in sorted(per_rank.items()):
            out.append(
                {
                    "pg": pg,
                    "seq": seq if seq >= 0 else None,
                    "rank": rank,
                    "host": hosts.get(rank),
                    "op": c["op"],
                    "numel_in": c["numel_in"],
                    "numel_out": c["numel_out"],
                    "shape": c["shape"],
                    "dtype": c["dtype"],
                    "differs": ",".join(differs),
                    "op_differs": "op" in differs,
                    "size_differs": any(d != "op" for d in differs),
                    "minority": rank in minority_ranks,
                    "path": c["path"],
                    "line": c["line"],
                }
            )
    return out


def _one_stack(events: Sequence[Event], hosts: dict[int, str], first: dict[int, Row],
               stacks: dict[int, tuple[list[str], list[str]]]) -> list[Row]:
    """One rank's stack against peers known only by their timeouts or fingerprints (an excerpt, or ranks
    that printed no traceback): rows only when that stack sits in a side section, which names it by
    itself (callsite.odd_sites); the peers' rows carry the op their own line names and no site."""
    (rank, row), = first.items()
    frames, sources = stacks[rank]
    site = callsite.call_site(frames, sources, nearest=True)
    peers: dict[int, Row] = {}
    named = mismatch_global_ranks([e for e in events if e.kind == "collective_mismatch"])
    for e in events:
        if e.rank is None:
            continue
        if e.kind == "hang_detected" and e.get("detector") in ("watchdog", "blocking_wait", "gloo"):
            found = [(e.rank, e.get("op"))]
        elif e.kind == "collective_mismatch":
            ranks, ops = named.get(id(e)) or e.get("ranks") or [], e.get("ops") or []
            found = [(r, ops[j] if j < len(ops) else None) for j, r in enumerate(ranks) if isinstance(r, int)]
        else:
            continue
        for r, op in found:
            if r != rank and r not in peers:
                peers[r] = {"rank": r, "host": hosts.get(r), "call": op, "entry": op, "user_frame": None,
                            "calls": 1, "places": 1, "site_differs": False, "minority": False,
                            "majority_went_on": False, "site_minority": False, "site": None,
                            "site_reason": None,
                            "odd_site": False, "subgroup": False, "path": e.path,
                            "line": e.line}
    if site is None or not peers or callsite.odd_sites({rank: site}, unseen=len(peers)) != {rank}:
        return []
    row.update(calls=1, places=1, site_differs=False, minority=False, majority_went_on=False,
               site_minority=False, site=site.site, site_reason=site.reason, odd_site=True)
    return [row, *(peers[r] for r in sorted(peers))]


_DISTRIBUTED_ERROR = ("Detected mismatch between collectives", "DistBackendError", "DistError")
# Python's own errors, which torch.distributed raises for a call it refused (a bad argument: `ValueError:
# Invalid src rank`, `TypeError`), or which the rank's code raised inside the call (pickling an object for
# `broadcast_object_list`): the rank crashed in that call, it was not waiting in it. A wait that failed
# raises RuntimeError or one of its subclasses (DistBackendError, DistNetworkError, DistStoreError;
# torch/distributed/distributed_c10d.py, torch/csrc/distributed/c10d/exception.h).
_RAISED_NOT_WAITING = frozenset((
    "TypeError", "ValueError", "KeyError", "IndexError", "AttributeError", "AssertionError", "NameError",
    "PicklingError", "UnpicklingError", "ZeroDivisionError", "NotImplementedError", "ImportError",
    "ModuleNotFoundError", "FileNotFoundError", "RecursionError", "UnicodeDecodeError", "UnicodeEncodeError",
))


def _waits_in_collective(e: Event, site: callsite.CallSite) -> bool:
    """A stack in a c10d function always counts; one in autograd's backward only when what it raised is a
    distributed error (DDP's reducer waits there; an OOM in backward is the rank's own fault) or the stop
    itself: a Ctrl-C / SIGINT's KeyboardInterrupt shows where the main thread was waiting when the user
    stopped it, like a stack dump (failure-signatures.md section 16 item 4). A Python error of the rank's
    own (`_RAISED_NOT_WAITING`) raised inside the call is a crash there, not a wait."""
    if e.kind == "stack_dump":
        return True
    if str(e.get("exc_type") or "").rsplit(".", 1)[-1] in _RAISED_NOT_WAITING:
        return False
    if site.call != "backward":
        return True
    text = f"{e.get('exc_type') or ''}: {e.get('message') or ''}"
    if str(e.get("exc_type") or "").endswith("KeyboardInterrupt"):
        return True
    return is_victim_exception(e) or any(m in text for m in _DISTRIBUTED_ERROR)


def call_rows(events: Sequence[Event], hosts: dict[int, str], aborted: int | None = None,
              last_step: Mapping[int, int] | None = None) -> list[Row]:
    """The collective each failing or hung rank was blocked in; the odd ones marked.

    Ranks that hang in different collectives (most in all_reduce, one in barrier) took different code
    paths. Per rank, the first traceback that names a collective (or ends in autograd's backward with a
    distributed error: DDP's gradient all_reduce) counts (its own, else the callstack of its error file
    that torchrun's agent printed); a rank without one is read from its first stack dump (py-spy) of the
    main thread. `minority` marks the ranks whose call differs from most ranks'; without a majority,
    `odd_site` marks the side whose call site is further from the training step than every other side's
    (hanglens/analysis/callsite.py). `aborted`: the only rank torchrun saw die of SIGABRT, which owns a crash
    dump printed without a rank (_crash_dump_owner). `last_step`: each rank's last logged step (the
    progress fact), which decides between a section and a barrier (callsite.odd_sites).
    """
    first, stacks = _first_calls(events, hosts, aborted)
    if len(first) == 1:
        return _one_stack(events, hosts, first, stacks)
    if len(first) < 2:
        return []
    return _mark_calls(first, stacks, last_step)


def stopped_outside_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """Per rank, its first traceback a stop interrupted outside any collective (callsite.stopped_outside):
    where its own work was when the stop came."""
    rows: dict[int, Row] = {}
    for e in events:
        if e.kind != "exception" or e.rank is None or e.rank in rows:
            continue
        frames = [str(f) for f in e.get("frames") or []]
        found = callsite.stopped_outside(frames, str(e.get("exc_type") or ""))
        if found is not None:
            rows[e.rank] = {"rank": e.rank, "host": hosts.get(e.rank), "user_frame": found[0],
                            "stopped_by": found[1], "path": e.path, "line": e.line}
    return [rows[r] for r in sorted(rows)]


def stack_calls(events: Sequence[Event], hosts: dict[int, str], aborted: int | None = None) -> list[Row]:
    """Each rank's own blocking collective as its stack shows it (call, entry, user_frame, path, line),
    unmarked and also for a single rank: what call_rows compares before it judges the sides."""
    first, _ = _first_calls(events, hosts, aborted)
    return [first[k] for k in sorted(first)]


def unranked_stack_calls(events: Sequence[Event]) -> list[Row]:
    """The blocking collective of each Python traceback no rank could be given to (call, entry, path, line;
    `rank` None), one row per traceback.

    torch 2.0-2.3 print no `[rank<N>]:` prefix before a worker's uncaught traceback (the prefix came with
    torch 2.4's excepthook, log-formats.md section 3.3), so on a console the workers share (torchrun without
    `--tee`, `torch.multiprocessing.spawn`) their tracebacks carry no rank. Each process prints its uncaught
    traceback once, so these rows still count the processes that waited in each call."""
    rows: list[Row] = []
    for e in events:
        if e.kind != "exception" or e.rank is not None:
            continue
        frames = [str(f) for f in e.get("frames") or []]
        sources = [str(x) for x in e.get("sources") or []]
        site = callsite.call_site(frames, sources)
        if site is None or not _waits_in_collective(e, site):
            continue
        rows.append({"rank": None, "host": None, "call": site.call, "entry": site.entry,
                     "user_frame": site.user_frame, "path": e.path, "line": e.line})
    return rows


def _crash_dump_owner(events: Sequence[Event], aborted: int | None) -> Event | None:
    """The one main-thread crash dump without a rank that `Fatal Python error: Aborted` opened, when exactly
    one rank died of SIGABRT: that rank's. torchrun's `@record` enables faulthandler in every worker
    (torch/distributed/elastic/multiprocessing/errors/error_handler.py `ErrorHandler.initialize`), so a
    worker killed by SIGABRT (gloo's uncaught gloo::EnforceNotMet, `terminate called after throwing`)
    prints its main thread's stack before it dies; on a shared console that stack carries no rank."""
    if aborted is None:
        return None
    dumps = [e for e in events if e.kind == "stack_dump" and e.rank is None and e.get("trigger") == "Aborted"
             and (e.get("main") or e.get("thread") == "MainThread")]
    return dumps[0] if len(dumps) == 1 else None


def _first_calls(
    events: Sequence[Event], hosts: dict[int, str], aborted: int | None = None
) -> tuple[dict[int, Row], dict[int, tuple[list[str], list[str]]]]:
    """Per rank, its first stack that waits in a collective (own traceback, else error file, else the main
    thread's stack dump; an unranked crash dump is `aborted`'s, see _crash_dump_owner): the call row and
    the stack's frames and source lines."""
    first: dict[int, Row] = {}
    stacks: dict[int, tuple[list[str], list[str]]] = {}
    dumped: set[int] = set()
    attempt_of: dict[int, int] = {}
    owned = _crash_dump_owner(events, aborted)
    for source in ("exception", "error_file", "stack_dump"):
        for e in events:
            if e is owned and aborted is not None:
                e = dataclasses.replace(e, rank=aborted, host=hosts.get(aborted))
            if e.kind != source or e.rank is None or e.rank in first:
                continue
            if source == "stack_dump":
                # `main` is set by the dump parsers (py-spy's "MainThread", faulthandler's module-body stack).
                if not (e.get("main") or e.get("thread") == "MainThread") or e.rank in dumped:
                    continue
                dumped.add(e.rank)
            frames = [str(f) for f in e.get("frames") or []]
            sources = [str(s) for s in e.get("sources") or []]
            site = callsite.call_site(frames, sources)
            if (site is None or not _waits_in_collective(e, site)) and e.get("context_frames"):
                # raised while handling an earlier exception: the stack where that one was raised (a Ctrl-C
                # that landed in a collective's error handling, parsers/traceback.py `_context_stack`)
                frames = [str(f) for f in e.get("context_frames") or []]
                sources = [str(s) for s in e.get("context_sources") or []]
                site = callsite.call_site(frames, sources)
            if site is None or not _waits_in_collective(e, site):
                continue
            stacks[e.rank] = (frames, sources)
            first[e.rank] = {
                "rank": e.rank,
                "host": hosts.get(e.rank),
                "call": site.call,
                "entry": site.entry,
                "user_frame": site.user_frame,
                "subgroup": callsite.subgroup_call(frames, sources),
                "source": callsite.call_source(frames, sources),
                "path": e.path,
                "line": e.line,
            }
            if e.attempt is not None:
                attempt_of[e.rank] = e.attempt
    return _one_attempt(first, stacks, attempt_of)


def _one_attempt(first: dict[int, Row], stacks: dict[int, tuple[list[str], list[str]]],
                 attempt_of: dict[int, int]) -> tuple[dict[int, Row], dict[int, tuple[list[str], list[str]]]]:
    """The rows of one restart attempt only. After a torchrun restart (`--max-restarts`, or a membership
    change) every worker is a new process of a new attempt (elastic/agent/server/api.py `_restart_workers`):
    a rank whose first collective stack is of another attempt than its peers' was not blocked beside them,
    so comparing its call with theirs says nothing about diverging code. The attempt with the most ranks'
    stacks is kept (the later one on a tie); a rank whose stack has no attempt is kept."""
    counts = Counter(attempt_of.values())
    if len(counts) < 2:
        return first, stacks
    keep = max(counts, key=lambda a: (counts[a], a))
    drop = {r for r, a in attempt_of.items() if a != keep}
    return ({r: v for r, v in first.items() if r not in drop},
            {r: v for r, v in stacks.items() if r not in drop})


# DDP's own collectives of one training step: the buffer broadcast its forward makes (`_sync_buffers`,
# rank 0 sends) and the gradient all_reduce under `backward`. A rank still in the first while its peers are
# in the second is at another point of the same step, not on another code path: the broadcast's root and
# the ranks that received it went on to backward (torch/nn/parallel/distributed.py `_pre_forward`).
STEP_SYNC = "DDP training step"
# The kind of a place most ranks share by user frame that callsite.call_site does not classify.
UNRECOGNISED = "unrecognised"


def _step_sync(row: Row) -> str:
    """The call a rank's row is compared by: DDP's step collectives are one."""
    if row["call"] == "backward" or row.get("entry") == callsite.DDP_FORWARD:
        return STEP_SYNC
    return str(row["call"])


def _all_later(frame: str | None, others: Sequence[str | None]) -> bool:
    """Is every one of `others` a later line of the same function and file as `frame`? Ranks blocked further
    down the function a rank is blocked in went on past its call: they completed that collective."""
    if frame is None or not others:
        return False
    mine = callsite.split_frame(frame)   # (a user frame as callsite.call_site writes it)
    if mine is None:
        return False
    for other in others:
        theirs = callsite.split_frame(other or "")
        if theirs is None or (theirs[0], theirs[2]) != (mine[0], mine[2]) or theirs[1] <= mine[1]:
            return False
    return True


def _mark_calls(first: dict[int, Row], stacks: dict[int, tuple[list[str], list[str]]],
                last_step: Mapping[int, int] | None = None) -> list[Row]:
    """The rows of two or more ranks' calls with minority, site_minority, site and odd_site set."""
    counts = Counter(_step_sync(r) for r in first.values())
    ranked = counts.most_common()
    majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    # Ranks waiting in send/recv are no majority to measure a collective against: in a pipeline each
    # stage waits in its own recv or send for a neighbour by design (failure-signatures.md section 2,
    # "Point-to-point in pipeline parallelism"), while a stage runs its own step's collectives (FSDP's
    # all-gather in its forward); the call sites decide then (a barrier after the loop is off the step).
    if majority in callsite.POINT_TO_POINT:
        majority = None
    places = Counter(r["user_frame"] for r in first.values()).most_common()
    usual = places[0][0] if len(places) == 1 or places[0][1] > places[1][1] else None
    majority_frames = [r["user_frame"] for r in first.values() if majority is not None
                       and _step_sync(r) == majority]
    for r in first.values():
        r["calls"] = len(counts)
        r["places"] = len(places)
        r["minority"] = majority is not None and _step_sync(r) != majority
        r["majority_went_on"] = r["minority"] and _all_later(r["user_frame"], majority_frames)
        # Called from another place than most ranks: blocked elsewhere, not still working (a straggler).
        r["site_minority"] = usual is not None and r["user_frame"] != usual
    shared = callsite.common_prefix([f for f, _ in stacks.values()])
    sites = {rank: callsite.call_site(f, s, shared) for rank, (f, s) in stacks.items()}
    known = {rank: s for rank, s in sites.items() if s is not None}
    # Without a minority by call, the call sites decide (two sides, or the same op from different places).
    odd = callsite.odd_sites(known, last_step=last_step) if not any(r["minority"] for r in first.values()) \
        else set()
    # A barrier side is odd against a section only by its steps (callsite.odd_sites): its reason says so.
    steps = last_step or {}
    behind = set()
    if any(s.site == callsite.SECTION for s in known.values()):
        behind = {rank for rank in odd if known[rank].site == callsite.BOUNDARY and rank in steps}
    ahead = max(steps.get(r, -1) for r in known) if behind else -1
    for rank, r in first.items():
        s = known.get(rank)
        r["site"] = s.site if s else None
        r["site_reason"] = s.reason if s else None
        if rank in behind and s is not None:
            r["site_reason"] = (f"{s.reason}; its loop ended at step {steps[rank]}, while its peers "
                                f"logged step {ahead} before their own call")
        r["odd_site"] = rank in odd
    # The kind of place (step, boundary, section, or none shown) most ranks called from, and who differs:
    # another line of the same step is not another phase of the program.
    # A place shown by a user frame but not recognised is a kind of its own when most ranks share that
    # frame (failure-signatures.md section 1: different call sites mean divergence); no frame shows none.
    sharing = sum(r["user_frame"] == usual for r in first.values())
    usual_frame = usual if usual is not None and 2 * sharing > len(first) else None

    def kind(r: Row) -> str | None:
        if r["site"] is not None or r["user_frame"] is None:
            return None if r["site"] is None else str(r["site"])
        return UNRECOGNISED if r["user_frame"] == usual_frame else None

    kinds = Counter(kind(r) for r in first.values()).most_common()
    usual_kind = kinds[0][0] if len(kinds) == 1 or kinds[0][1] > kinds[1][1] else None
    for r in first.values():
        r["site_differs"] = (len(kinds) > 1 and usual_kind is not None and kind(r) != usual_kind
                             and (usual_kind != UNRECOGNISED or kind(r) is not None))
    return [first[k] for k in sorted(first)]
