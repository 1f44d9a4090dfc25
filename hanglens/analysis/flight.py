"""Match Flight Recorder entries across ranks, the way torchfrtrace does, and say who broke the match.

Per process group, collectives are keyed by `collective_seq_id` and compared across the group's member
ranks: op type, input sizes, dtypes, and who never recorded the key. Point-to-point ops are paired per
(sender, receiver): the k-th send from a to b with the k-th recv on b from a. For each group the first
key that does not match is reported (torchfrtrace stops pairing a group after its first mismatch too),
and the oldest key not finished on every member (the frontier) is reported when everything matched.

Where torchfrtrace gives up, this goes on:

- dumps from only some ranks: the missing ranks are named (`fr_dumps`); a key at which every rank that
  has a dump agrees leaves the ranks without one as the only unexplained members;
- a rank absent from a key whose newest entry is an unfinished op elsewhere is blocked there (a victim);
  a rank absent whose newest entry finished was not blocked by a collective: it is the culprit;
- with one side of a disagreement in the minority, that side is the culprit; stack frames give the
  call site of each side (an extra call from a different line is a divergence, not a size bug).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens.model import Event

Row = dict[str, Any]
_TORCH_FRAME = ("/torch/distributed/", "/torch/nn/parallel/", "c10d_logger.py")


def _num(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _finished(e: Event, newest: Event | None = None) -> bool:
    """Done as far as the recorder knows: completed, or retired before the rank's newest op.

    gloo never marks entries completed and retires a failed work like a finished one, so a rank's newest
    entry counts as finished only when its state says so.
    """
    if e.get("state") == "completed":
        return True
    return bool(e.get("retired")) and newest is not None and e is not newest


def call_site(e: Event) -> str | None:
    """The innermost frame outside torch.distributed: the user's line that issued the op."""
    for fr in reversed(e.get("frames") or []):
        if not any(t in fr for t in _TORCH_FRAME):
            return str(fr)
    return None


def _signature(e: Event) -> tuple[Any, ...]:
    return (e.get("op"), str(e.get("input_sizes")), tuple(sorted(set(e.get("input_dtypes") or []))))


def _dumps(events: Sequence[Event]) -> dict[int, list[Event]]:
    out: dict[int, list[Event]] = defaultdict(list)
    for e in events:
        if e.kind == "fr_dump" and e.rank is not None:
            out[e.rank].append(e)
    return out


def _entries(events: Sequence[Event]) -> dict[int, list[Event]]:
    """Each rank's entries in record order; a dump read twice (pickle and JSON, plain and archived) once."""
    seen: set[tuple[int, Any, Any, Any]] = set()
    out: dict[int, list[Event]] = defaultdict(list)
    for e in sorted((e for e in events if e.kind == "fr_entry" and e.rank is not None),
                    key=lambda e: (not e.get("frames"), e.path, e.line)):
        assert e.rank is not None
        key = (e.rank, e.get("record_id"), e.get("pg"), e.get("seq") if e.get("record_id") is None else None)
        if e.get("record_id") is None:
            key = (e.rank, e.path, e.line, None)
        if key in seen:
            continue
        seen.add(key)
        out[e.rank].append(e)
    for rank in out:
        out[rank].sort(key=lambda e: (_num(e.get("record_id")) or 0, e.line))
    return out


def _world(events: Sequence[Event], dumps: dict[int, list[Event]], world: int | None) -> int:
    size = world or 0
    for evs in dumps.values():
        for d in evs:
            for _name, _desc, ranks in d.get("pg_config") or []:
                if ranks:
                    size = max(size, max(ranks) + 1)
    if dumps:
        size = max(size, max(dumps) + 1)
    return size


def _members(pg: str, desc: str | None, entries: dict[int, list[Event]], dumps: dict[int, list[Event]],
             world: int) -> list[int]:
    """The global ranks of a process group: its pg_config entry (NCCL), the whole world for the default
    group, else the ranks that recorded an op in it (gloo records pg_config under an empty name)."""
    for evs in dumps.values():
        for d in evs:
            for name, _desc, ranks in d.get("pg_config") or []:
                if name == pg and ranks:
                    return sorted(set(ranks))
    if desc == "default_pg" or pg == "0":
        return list(range(world))
    return sorted(r for r, evs in entries.items() if any(e.get("pg") == pg for e in evs))


def flight_rows(events: Sequence[Event], hosts: dict[int, str],
                world: int | None) -> tuple[list[Row], list[Row]]:
    """(`fr_dumps` rows, `fr_match` rows) of a job: see FACT_SPECS for their columns."""
    dumps = _dumps(events)
    if not dumps:
        return [], []
    entries = _entries(events)
    size = _world(events, dumps, world)
    dump_rows: list[Row] = []
    for rank in range(size):
        ds = sorted(dumps.get(rank, []), key=lambda d: d.path)
        first = ds[0] if ds else None
        dump_rows.append({
            "rank": rank, "host": hosts.get(rank), "has_dump": bool(ds), "dumps": len(ds),
            "entries": len(entries.get(rank, [])),
            "version": first.get("version") if first else None,
            "format": ",".join(sorted({str(d.get("format")) for d in ds})) or None,
            "path": first.path if first else None, "line": 1 if first else None,
        })
    newest = {r: evs[-1] for r, evs in entries.items() if evs}
    groups: dict[str, str | None] = {}
    for evs in entries.values():
        for e in evs:
            if e.get("pg") is not None:
                groups.setdefault(str(e.get("pg")), e.get("pg_desc"))
    problems: list[Row] = []
    for pg in sorted(groups):
        members = _members(pg, groups[pg], entries, dumps, size)
        problems.extend(_collective_problem(pg, groups[pg], members, entries, dumps, newest))
        problems.extend(_p2p_problem(pg, groups[pg], members, entries, dumps))
    _explain_blocked(problems, newest)
    for r in problems:
        r["host"] = hosts.get(r["rank"])
    problems.sort(key=lambda r: (r["pg"], r["kind"] != "collective", r["seq"] or 0, r["rank"]))
    return dump_rows, problems


def _row(pg: str, desc: str | None, kind: str, seq: int | None, rank: int, mismatch: str, e: Event | None,
         **kw: Any) -> Row:
    return {
        "pg": pg, "pg_desc": desc, "kind": kind, "seq": seq, "rank": rank, "mismatch": mismatch,
        "op": e.get("op") if e else None, "profiling_name": e.get("profiling_name") if e else None,
        "input_sizes": str(e.get("input_sizes")) if e else None,
        "dtypes": ",".join(e.get("input_dtypes") or []) if e else None,
        "state": e.get("state") if e else None, "retired": e.get("retired") if e else None,
        "call_site": call_site(e) if e else None,
        "time_created_ns": e.get("time_created_ns") if e else None,
        "path": e.path if e else None, "line": e.line if e else None,
        "culprit": False, "blocked_in": None, "has_dump": True, **kw,
    }


def _collective_problem(pg: str, desc: str | None, members: list[int], entries: dict[int, list[Event]],
                        dumps: dict[int, list[Event]], newest: dict[int, Event]) -> list[Row]:
    by_seq: dict[int, dict[int, Event]] = defaultdict(dict)
    low: dict[int, int] = {}
    for r in members:
        for e in entries.get(r, []):
            seq = _num(e.get("seq"))
            if e.get("pg") != pg or seq is None or e.get("is_p2p"):
                continue
            by_seq[seq][r] = e
            low[r] = min(low.get(r, seq), seq)
    if not by_seq:
        return []
    dumped = [r for r in members if r in dumps]
    undumped = [r for r in members if r not in dumps]
    start = max((low[r] for r in dumped if r in low), default=0)   # older keys fell out of some ring buffer
    for seq in sorted(s for s in by_seq if s >= start):
        here = by_seq[seq]
        absent = [r for r in dumped if r not in here]
        sigs = Counter(_signature(e) for e in here.values())
        ranked = sorted(sigs.items(), key=lambda kv: (-kv[1], str(kv[0])))
        majority = ranked[0][0]
        odd = [r for r, e in here.items() if _signature(e) != majority]
        later = any(s > seq for s in by_seq)     # someone went on: a retired entry here did finish
        unfinished = [r for r, e in here.items()
                      if not (_finished(e, newest.get(r)) or (later and e.get("retired")))]
        if not odd and not absent and not unfinished and not undumped:
            continue
        if not odd and not absent and not unfinished:
            continue        # every dumped member finished it: ranks without a dump took part too
        rows: list[Row] = []
        if odd:
            kind = _mismatch_kind(here[odd[0]], majority)
            two_sides = len(odd) * 2 == len(here)
            for r in sorted(here):
                rows.append(_row(pg, desc, "collective", seq, r, kind, here[r], minority=r in odd,
                                 culprit=r in odd and not two_sides, expected=_describe(majority)))
        elif absent:
            for r in sorted(here):
                rows.append(_row(pg, desc, "collective", seq, r, "missing", here[r], minority=False))
            for r in absent:
                # Evidence is the absent rank's newest op (where it was last seen); the op is not this key's.
                row = _row(pg, desc, "collective", seq, r, "missing", newest.get(r), minority=True,
                           culprit=True, absent=True)
                rows.append({**row, "op": None, "profiling_name": None, "input_sizes": None, "dtypes": None,
                             "state": None, "retired": None})
        else:
            for r in sorted(here):
                rows.append(_row(pg, desc, "collective", seq, r, "unfinished" if not undumped else "no_dump",
                                 here[r], minority=False))
        for r in undumped:
            rows.append(_row(pg, desc, "collective", seq, r, "no_dump", None, minority=True,
                             culprit=not odd and not absent, has_dump=False))
        return rows
    return []


def _mismatch_kind(e: Event, majority: tuple[Any, ...]) -> str:
    op, sizes, dtypes = _signature(e)
    if op != majority[0]:
        return "op"
    if sizes != majority[1]:
        return "size"
    return "dtype" if dtypes != majority[2] else "op"


def _describe(sig: tuple[Any, ...]) -> str:
    return f"{sig[0]} {sig[1]} {','.join(sig[2])}"


def _p2p_problem(pg: str, desc: str | None, members: list[int], entries: dict[int, list[Event]],
                 dumps: dict[int, list[Event]]) -> list[Row]:
    """The first send without its recv (or recv without its send) between two ranks that both dumped."""
    order = sorted(members)
    ops: dict[tuple[str, int, int], dict[int, list[Event]]] = defaultdict(lambda: defaultdict(list))
    for r in members:
        for e in entries.get(r, []):
            src, dst = _num(e.get("p2p_src")), _num(e.get("p2p_dst"))
            if e.get("pg") != pg or src is None or dst is None or src >= len(order) or dst >= len(order):
                continue
            ops[(str(e.get("op")), order[src], order[dst])][r].append(e)
    rows: list[Row] = []
    for (op, a, b), per_rank in sorted(ops.items()):
        if op != "SEND" or a not in dumps or b not in dumps:
            continue
        sends = per_rank.get(a, [])
        recvs = ops.get(("RECV", a, b), {}).get(b, [])
        for k, s in enumerate(sends):
            if k < len(recvs):
                continue
            rows.append(_row(pg, desc, "p2p", _num(s.get("p2p_seq")), a, "unmatched_send", s, minority=True,
                             culprit=True, peer=b))
            break
    for (op, a, b), per_rank in sorted(ops.items()):
        if op != "RECV" or a not in dumps or b not in dumps:
            continue
        recvs = per_rank.get(b, [])
        sends = ops.get(("SEND", a, b), {}).get(a, [])
        for k, rv in enumerate(recvs):
            if k < len(sends):
                continue
            rows.append(_row(pg, desc, "p2p", _num(rv.get("p2p_seq")), b, "unmatched_recv", rv, minority=True,
                             culprit=True, peer=a))
            break
    return rows


def _explain_blocked(problems: list[Row], newest: dict[int, Event]) -> None:
    """A rank absent from a collective while its own newest op is itself stuck in another problem (a
    mismatch, an unpaired p2p op, a collective others never joined) is blocked there: it is a victim of
    that op, not a culprit, unless it is that problem's culprit."""
    present = {(r["pg"], r["kind"], r["seq"], r["rank"]): r for r in problems if not r.get("absent")}
    for r in problems:
        if not r.get("absent"):
            continue
        last = newest.get(r["rank"])
        if last is None:
            continue
        p2p = bool(last.get("is_p2p"))
        seq = last.get("p2p_seq") if p2p else last.get("seq")
        there = present.get((str(last.get("pg")), "p2p" if p2p else "collective", seq, r["rank"]))
        if there is None:
            continue
        r["blocked_in"] = f"{'p2p ' if p2p else ''}{last.get('op')} #{seq} of PG {last.get('pg')}"
        r["culprit"] = bool(there["culprit"])
    for r in problems:
        r.setdefault("minority", False)
        r.setdefault("expected", None)
        r.setdefault("peer", None)
        r.setdefault("absent", False)
