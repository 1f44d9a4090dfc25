"""Put every rank's events on one timeline: per-host clock offsets from events that happen together."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from hanglens.analysis.kinds import host_of
from hanglens.model import Event

MIN_OFFSET_S = 1.0  # smaller estimated offsets are noise: leave the clock alone


def _sync_key(e: Event) -> tuple[object, ...] | None:
    """Events every rank emits at (nearly) the same moment, keyed so peers' copies match."""
    if (
        e.kind == "hang_detected"
        and e.get("detector") in ("watchdog", "blocking_wait")
        and e.get("seq") is not None
    ):
        return ("hang", e.get("pg"), e.get("seq"), e.get("timeout_ms"))
    if e.kind == "nccl_comm_init" and e.get("phase") == "Init COMPLETE" and e.get("nranks"):
        return ("init", e.get("nranks"), e.get("comm_id"))
    return None


def host_offsets(events: Sequence[Event], hosts: dict[int, str]) -> tuple[dict[str, float], str]:
    """Seconds to subtract from each host's clock to align it with the reference host.

    Watchdog timeouts of the same (pg, seq) and communicator init completions happen together on all
    ranks; the median difference of such pairs estimates a host's offset. Hosts without such pairs
    keep their own clock (offset 0), which the note says.
    """
    by_key: dict[tuple[object, ...], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        host = host_of(e, hosts)
        key = _sync_key(e)
        if key is None or host is None or e.time is None:
            continue
        by_key[key][host].append(e.time)
    host_names = sorted({h for per in by_key.values() for h in per})
    if len(host_names) < 2:
        return {}, "one clock (single host or no synchronised events)"
    ref = min(host_names, key=lambda h: (-sum(h in per for per in by_key.values()), h))
    offsets: dict[str, float] = {}
    for h in host_names:
        if h == ref:
            continue
        diffs = [
            statistics.median(per[h]) - statistics.median(per[ref])
            for per in by_key.values()
            if h in per and ref in per
        ]
        if diffs:
            off = statistics.median(diffs)
            if abs(off) >= MIN_OFFSET_S:
                offsets[h] = round(off, 3)
    if offsets:
        shown = ", ".join(f"{h} {o:+.1f}s" for h, o in sorted(offsets.items()))
        return offsets, f"clocks aligned to {ref} using events that happen together ({shown})"
    return {}, f"clocks agree with {ref} within {MIN_OFFSET_S:.0f}s"


def normalise(events: Sequence[Event], offsets: dict[str, float], hosts: dict[int, str],
              in_place: bool = False) -> list[Event]:
    """Events with their times shifted onto the reference host's clock.

    `in_place` (`events` a list, handed over with its events): each event is shifted itself, not copied (a
    big job's events are neither held twice nor made again), and `events` is returned.
    """
    inplace = in_place and isinstance(events, list)
    out = events if isinstance(events, list) and inplace else list(events)
    if not offsets:
        return out
    for i, e in enumerate(out):
        if e.time is not None:
            host = host_of(e, hosts)
            if host in offsets:
                if inplace:
                    object.__setattr__(e, "time", e.time - offsets[host])   # (a frozen dataclass)
                else:
                    out[i] = replace(e, time=e.time - offsets[host])
    return out
