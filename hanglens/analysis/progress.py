"""Training progress per rank: the last step reported, gaps in the steps, ranks that stopped early, and
progress bars still running when their peers timed out waiting (failure-signatures.md section 15)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens.analysis.status import is_own_crash
from hanglens.model import Event


def progress_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[dict[str, Any]]:
    """One row per rank that reported progress.

    `gap` is true when a rank skipped a step its own cadence says it should have printed (e.g. 0,1,2,4);
    `gap_after` is the step before the hole (the progress parser tracks each series' increments).
    `stopped_early` is true when the rank's last step is behind the furthest rank's (so its peers went on
    without it).
    """
    steps: dict[int, list[int]] = defaultdict(list)
    gaps: dict[int, int] = {}
    last_ev: dict[int, Event] = {}
    for e in events:
        step = e.get("step")
        if e.kind != "progress" or e.rank is None or not isinstance(step, int):
            continue
        steps[e.rank].append(step)
        gap = e.get("gap_after")
        if isinstance(gap, int):
            gaps[e.rank] = min(gap, gaps.get(e.rank, gap))
        if e.rank not in last_ev or step >= (last_ev[e.rank].get("step") or -1):
            last_ev[e.rank] = e
    if not steps:
        return []
    max_step = max(max(s) for s in steps.values())
    rows = []
    for rank in sorted(steps):
        last = max(steps[rank])
        gap_after = gaps.get(rank)
        ev = last_ev[rank]
        rows.append(
            {
                "rank": rank,
                "host": hosts.get(rank),
                "last_step": last,
                "max_step": max_step,
                "steps_behind": max_step - last,
                "gap": gap_after is not None,
                "gap_after": gap_after,
                "stopped_early": len(steps) > 1 and last < max_step,
                "path": ev.ref.path,
                "line": ev.ref.line,
            }
        )
    return rows


# failure-signatures.md section 0.3: the timeouts a waiting peer most likely had when none is printed,
# tried from the longest down. 30 min: gloo and every backend in torch <= 2.1, HF Trainer `ddp_timeout`,
# DeepSpeed, Lightning; 10 min: NCCL in torch >= 2.2, Megatron-LM.
DEFAULT_TIMEOUTS_S: tuple[tuple[int, str], ...] = (
    (1800, "the default of gloo, of torch <= 2.1, of the HF Trainer (ddp_timeout), DeepSpeed and Lightning"),
    (600, "the NCCL default of torch >= 2.2 and of Megatron-LM"),
)
# A bar is "close to" the timeout from this fraction of it on: the peers' wait may have started a little
# after the slow phase did or a little before (their head start), and the watchdog polls.
NEAR_TIMEOUT = 0.8
# ... and up to this multiple of it: a bar that had already run for several timeouts when its peers gave up
# started long before they began to wait, so its process kept meeting them in collectives meanwhile (a
# training loop's own bar), and its phase is not what they waited for.
LATE_TIMEOUT = 2.0
MAX_TEXT = 300  # characters of the bar's line kept for evidence
# Waits that end in a timeout on a peer: hang detectors that watch a peer (not a DataLoader, not the
# heartbeat monitor, which reports a stuck watchdog), and the store-based barriers before training.
_WAIT_DETECTORS = frozenset({"watchdog", "blocking_wait", "gloo", "store", "monitored_barrier"})
_WAIT_RENDEZVOUS = frozenset({"store_barrier_timeout", "wait_for_workers_timeout"})


def _wait(e: Event) -> str | None:
    """What kind of wait `e` reports ending (None: not a wait on a peer)."""
    if e.kind == "hang_detected" and e.get("detector") in _WAIT_DETECTORS:
        return "timeout"
    if e.kind == "rendezvous_error" and e.get("error_class") in _WAIT_RENDEZVOUS:
        return "timeout"
    if e.kind == "exception":
        exc = str(e.get("exc_type") or "")
        if "ChildFailedError" in exc or exc.endswith("KeyboardInterrupt"):
            return None
        if not is_own_crash(e):
            return "traceback"
    return None


def _wait_kind(waits: Sequence[Event]) -> str | None:
    """`timeout` when a waiting process reported its wait timing out, else `traceback` (a traceback with
    no fault of its own: a distributed error, or one cut before its last line), else None."""
    kinds = {_wait(w) for w in waits}
    return "timeout" if "timeout" in kinds else ("traceback" if "traceback" in kinds else None)


def _fault(e: Event) -> bool:
    """A fault of the writer's own (a real exception, a CUDA error, ...): it explains a failure better."""
    if e.kind == "exception" and not e.get("exc_type") and not e.get("message"):
        return False
    return e.kind not in ("child_failed", "worker_failed", "launcher_exit") and is_own_crash(e)


def slow_phase_rows(
    events: Sequence[Event], hosts: dict[int, str], world: int | None
) -> list[dict[str, Any]]:
    """One row per progress bar (the last report of each tqdm series with times), against the peers' wait.

    failure-signatures.md section 15 "Relating the progress bar to the timeout": a bar still running
    (`remaining` > 0, or fewer items than its total) whose `elapsed` is close to or past the timeout its
    peers waited for (`NEAR_TIMEOUT * timeout <= elapsed <= LATE_TIMEOUT * timeout`) and whose projected
    length (`elapsed + remaining`) reaches that timeout outlasted the peers: `outlasts_timeout`. A bar
    that finished, or whose projected length is below the timeout, is a red herring; so is one that had
    run for several timeouts (it was running long before the peers began to wait). The timeout is the
    shortest one the waiting processes printed; when none printed one it is assumed from the defaults of
    section 0.3 (`timeout_basis` says which). `rank` is the bar's own rank when the logs give it; else,
    when the world size is known and every other rank was seen waiting, the one rank that was not
    (`owner_basis`); else None. `waiting_ranks` are the ranks seen waiting (rank-less waits count as
    another process's) and `wait` how the wait showed (`timeout`, or only a `traceback`); `glued` marks a
    bar with another writer's line glued to it (printed at that moment); `fault_seen` marks jobs where
    another process had a fault of its own.
    """
    bars: dict[tuple[Any, ...], Event] = {}
    waits: list[Event] = []
    faults: list[Event] = []
    others_at: dict[tuple[str, int], set[int | None]] = {}  # (path, line) -> ranks of non-progress events
    for e in events:
        if e.kind != "progress":
            others_at.setdefault((e.ref.path, e.ref.line), set()).add(e.rank)
        if e.kind == "progress" and isinstance(e.get("elapsed_s"), int):
            bars[(e.rank, e.ref.path, e.get("label"), e.get("pattern"))] = e  # events are in line order
        elif _wait(e) is not None:
            waits.append(e)
        elif _fault(e):
            faults.append(e)
    if not bars:
        return []
    rows = []
    for (rank, path, label, _), bar in sorted(bars.items(), key=lambda kv: (kv[1].ref.path, kv[1].ref.line)):
        own_waits = [w for w in waits if rank is not None and w.rank == rank and _wait(w) == "timeout"]
        peer_waits = [w for w in waits if rank is None or w.rank != rank]
        waiting = sorted({w.rank for w in peer_waits if w.rank is not None})
        owner, basis = rank, ("own" if rank is not None else None)
        if owner is None and world and len(waiting) == world - 1 and all(0 <= r < world for r in waiting):
            owner = next(r for r in range(world) if r not in waiting)
            basis = f"the only rank of {world} not seen waiting"
        step, total = bar.get("step"), bar.get("total")
        elapsed, remaining = bar.get("elapsed_s"), bar.get("remaining_s")
        if not isinstance(elapsed, int):
            continue
        running = (isinstance(step, int) and isinstance(total, int) and step < total) or (
            not isinstance(total, int) and isinstance(remaining, int) and remaining > 0)
        projected = elapsed + remaining if isinstance(remaining, int) else None
        printed = [int(t) // 1000 for w in peer_waits if isinstance(t := w.get("timeout_ms"), int) and t > 0]
        timeout_s: int | None = None
        timeout_basis = None
        if printed:
            timeout_s, timeout_basis = min(printed), "printed by the waiting processes"
        elif peer_waits:
            for secs, why in DEFAULT_TIMEOUTS_S:
                if NEAR_TIMEOUT * secs <= elapsed <= LATE_TIMEOUT * secs:
                    timeout_s, timeout_basis = secs, f"none printed; assumed {why}"
                    break
        outlasts = bool(
            running and peer_waits and not own_waits and timeout_s
            and NEAR_TIMEOUT * timeout_s <= elapsed <= LATE_TIMEOUT * timeout_s
            and (projected is None or projected >= timeout_s)
        )
        glued = any(r is None or r != rank for r in others_at.get((path, bar.ref.line), ()))
        rows.append(
            {
                "rank": owner,
                "host": hosts.get(owner) if owner is not None else None,
                "label": label,
                "step": step,
                "total": total,
                "elapsed_s": elapsed,
                "remaining_s": remaining,
                "projected_s": projected,
                "running": bool(running),
                "timeout_s": timeout_s,
                "timeout_basis": timeout_basis,
                "outlasts_timeout": outlasts,
                "waiting_ranks": waiting,
                "wait": _wait_kind(peer_waits),
                "owner_basis": basis,
                "glued": glued,
                "fault_seen": any(f.rank is None or f.rank != rank for f in faults),
                "text": bar.text[:MAX_TEXT],
                "path": bar.ref.path,
                "line": bar.ref.line,
            }
        )
    return rows
