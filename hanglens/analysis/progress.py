"""Training progress per rank: the last step reported, gaps in the steps, ranks that stopped early, and
progress bars still running when their peers timed out waiting (failure-signatures.md section 15)."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hanglens import lazyre as re
from hanglens.analysis.record import Record, record_type
from hanglens.analysis.status import is_own_crash
from hanglens.ingest.streams import is_spawn_parent_exception
from hanglens.model import Event

# A bar of dataset preprocessing as Hugging Face `datasets` prints it (`Map (num_proc=8)`, `Filter`,
# `Running tokenizer on dataset`, ..., counted in `examples`): under `main_process_first()` (transformers,
# accelerate, axolotl, LLaMA-Factory) the main process runs it while the other ranks wait in a barrier
# (failure-signatures.md section 15: "very often global rank 0 or each node's local rank 0").
_DATASET_BAR_RE = re.compile(
    r"(?i)^(?:map|filter|tokeni[sz]|running tokenizer|grouping texts|packing|preprocess|pre-process)")


# A number in a tqdm description: `set_description` is where a loop shows its running metrics (tqdm's own
# example `t.set_description('GEN %i' % i)`; torchtune's recipes `pbar.set_description(f"{epoch}|{step}|Loss:
# {loss}")` after every step, recipes/full_finetune_distributed.py), so the numbers change on every redraw
# and differ between ranks while the bar is the same; `nan`/`inf` are what a diverged loss prints.
# A rank that waited for the ncclUniqueId of a group: `[<r>] is setting up NCCL communicator and retrieving
# ncclUniqueId from [0] via c10d key-value store by key '<k>', but store->get('<k>') got error: ...` (1.13
# spells it `retreiving`; log-formats.md section 1.6). The group's rank 0 publishes the id when it reaches the
# group's first collective (failure-signatures.md section 10.9).
_UNIQUE_ID_FROM_ROOT_RE = re.compile(r"re(?:trie|trei)ving ncclUniqueId(?:\(s\))? from \[0\]")
_DESC_NUMBER_RE = re.compile(
    r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|(?<![A-Za-z])(?:nan|inf)(?![A-Za-z])"
)


def bar_name(label: object) -> str | None:
    """A tqdm bar's identity: its description with every number masked (`Loss: 29.98` -> `Loss: #`)."""
    if not isinstance(label, str):
        return None
    return _DESC_NUMBER_RE.sub("#", label)


def progress_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Record]:
    """One row per rank that reported progress.

    `gap` is true when a rank skipped a step its own cadence says it should have printed (e.g. 0,1,2,4);
    `gap_after` is the step before the hole (the progress parser tracks each series' increments).
    `stopped_early` is true when the rank's last step is behind the furthest rank's (so its peers went on
    without it). `position` compares the rank's last step with `majority_step`, the last step a strict
    majority (two at least) of the ranks that reported progress stopped at: ahead, behind or same; None
    when no step has such a majority (two ranks, or ranks spread over several steps).
    """
    steps: dict[int, list[int]] = defaultdict(list)
    gaps: dict[int, int] = {}
    last_ev: dict[int, Event] = {}
    # A bar with its own label (tqdm's `desc`: "Rebuilding token cache", "Downloading") counts the items of
    # that loop, not training steps: its count is compared with other ranks' only where another rank prints
    # a bar of the same label (failure-signatures.md section 15: a straggler's own phase bar advances while
    # its peers wait; read as steps, it makes the peers look behind).
    label_ranks: dict[str, set[int]] = defaultdict(set)
    # Likewise a series only one rank prints (the usual rank-0-only tqdm bar, `disable=rank != 0`) next to a
    # series every rank prints (a logged `step=N`): tqdm's `n/total` counts the iterations completed, a
    # logged step is the loop's own index (`4/6` after the iteration a log line calls step 3), so the two
    # are not compared; that rank is placed by the series it shares with its peers (tqdm bars:
    # log-formats.md section 9.2; failure-signatures.md section 15).
    pattern_ranks: dict[str, set[int]] = defaultdict(set)
    for e in events:
        label = bar_name(e.get("label")) if e.kind == "progress" else None
        if isinstance(label, str) and e.rank is not None:
            label_ranks[label].add(e.rank)
        if e.kind == "progress" and e.rank is not None and isinstance(e.get("step"), int):
            pattern_ranks[str(e.get("pattern"))].add(e.rank)
    shared = {pat for pat, ranks in pattern_ranks.items() if len(ranks) >= 2}
    in_shared = set().union(*(pattern_ranks[pat] for pat in shared)) if shared else set()
    for e in events:
        step = e.get("step")
        if e.kind != "progress" or e.rank is None or not isinstance(step, int):
            continue
        label = bar_name(e.get("label"))
        if isinstance(label, str) and len(label_ranks[label]) < 2:
            continue
        if str(e.get("pattern")) not in shared and e.rank in in_shared:
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
    majority = _majority_step({rank: max(s) for rank, s in steps.items()})
    rows: list[Record] = []
    for rank in sorted(steps):
        last = max(steps[rank])
        gap_after = gaps.get(rank)
        ev = last_ev[rank]
        rows.append(
            _ProgressRow(
                rank=rank,
                host=hosts.get(rank),
                last_step=last,
                max_step=max_step,
                steps_behind=max_step - last,
                gap=gap_after is not None,
                gap_after=gap_after,
                stopped_early=len(steps) > 1 and last < max_step,
                majority_step=majority,
                position=None if majority is None else
                ("same" if last == majority else "ahead" if last > majority else "behind"),
                path=ev.path,
                line=ev.line,
            )
        )
    return rows


# (slotted rows: one per rank of a big job)
_ProgressRow = record_type("progress")
_SlowRow = record_type("slow_phase")


def _majority_step(last: dict[int, int]) -> int | None:
    """The last step held by a strict majority of the ranks, at least two of them (failure-signatures.md
    section 1, "Culprit vs victims": the majority are the victims); None when no step has one."""
    counts: dict[int, int] = defaultdict(int)
    for step in last.values():
        counts[step] += 1
    for step, n in sorted(counts.items()):
        if n >= 2 and 2 * n > len(last):
            return step
    return None


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
        if "ChildFailedError" in exc or exc.endswith("KeyboardInterrupt") or is_spawn_parent_exception(e):
            return None
        if not is_own_crash(e):
            return "traceback"
    return None


class _Tally:
    """The waits of a job summed up per writer rank (None: rank-less): counts by kind, the shortest printed
    timeout, the ranks seen waiting. `*_without(rank)` answer for every writer but `rank` (a None `rank`
    excludes nothing: a rank-less wait is always another process's)."""

    def __init__(self) -> None:
        self.total = 0
        self.count: dict[int | None, int] = defaultdict(int)
        self.timeouts: dict[int | None, int] = defaultdict(int)
        self.tracebacks: dict[int | None, int] = defaultdict(int)
        self.printed: dict[int | None, int] = {}   # writer -> shortest timeout it printed, in seconds
        self.ranks: set[int] = set()
        self.kinds: dict[str, int] = defaultdict(int)   # timeout / traceback -> waits of the job
        self._shortest: list[tuple[int | None, int]] | None = None

    def add(self, e: Event, kind: str) -> None:
        self.total += 1
        self.count[e.rank] += 1
        (self.timeouts if kind == "timeout" else self.tracebacks)[e.rank] += 1
        self.kinds[kind] += 1
        if e.rank is not None:
            self.ranks.add(e.rank)
        t = e.get("timeout_ms")
        if isinstance(t, int) and t > 0:
            secs = int(t) // 1000
            self.printed[e.rank] = min(secs, self.printed.get(e.rank, secs))

    def kind_without(self, rank: int | None) -> str | None:
        """`timeout` when another process reported its wait timing out, else `traceback` (a traceback with
        no fault of its own: a distributed error, or one cut before its last line), else None."""
        own = rank is not None
        if self.kinds["timeout"] - (self.timeouts.get(rank, 0) if own else 0):
            return "timeout"
        return "traceback" if self.kinds["traceback"] - (self.tracebacks.get(rank, 0) if own else 0) else None

    def printed_without(self, rank: int | None) -> int | None:
        """The shortest timeout another process printed (seconds), None when none did."""
        if self._shortest is None:
            self._shortest = heapq.nsmallest(2, self.printed.items(), key=lambda kv: kv[1])
        return next((secs for r, secs in self._shortest if rank is None or r != rank), None)


def _fault(e: Event) -> bool:
    """A fault of the writer's own (a real exception, a CUDA error, ...): it explains a failure better."""
    if e.kind == "exception" and not e.get("exc_type") and not e.get("message"):
        return False
    return e.kind not in ("child_failed", "worker_failed", "launcher_exit") and is_own_crash(e)


def slow_phase_rows(
    events: Sequence[Event], hosts: dict[int, str], world: int | None
) -> list[Record]:
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
    (`owner_basis`); else None. `waiting_ranks` are the other ranks seen waiting, listed for a bar that
    outlasts the timeout only (rank-less waits count as another process's), and `wait` how the wait
    showed (`timeout`, or only a `traceback`); `glued` marks a bar with another writer's line glued to it
    (printed at that moment); `fault_seen` marks jobs where
    another process had a fault of its own.

    A phase that printed its duration once over (`phase_took`, pattern `took`) outlasts the timeout when
    the duration is at least the timeout the peers printed and its line comes after a peer's own timeout
    report in the same file (the peers' wait fell inside it). A rank-less one is the rank's whose own
    timeout report is the only one printed after it while others' came before (section 15: "the
    straggler's own error comes last").
    """
    bars: dict[tuple[Any, ...], Event] = {}
    # Every wait and fault is summed up once, per rank: a bar's peers are every rank but its own, so what
    # its peers did is the job's total minus the bar's rank's share (linear in events, whatever the ranks).
    waits = _Tally()
    faults: dict[int | None, int] = defaultdict(int)
    # Timeout waits by file, in line order: a phase that printed its duration after them outlasted them.
    timed_out: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
    # Collective timeouts (op, seq): all at the first broadcast of the default group means the peers waited in
    # the initial state sync, which broadcasts from rank 0 (see `from_root` below).
    timeout_ops: set[tuple[object, object, object]] = set()
    # Ranks that waited for rank 0 of a group to publish its ncclUniqueId (see `id_root` below), and whether
    # any wait was in a group other than the default one.
    id_waiters: set[int | None] = set()
    other_group = False
    for e in events:
        if e.kind == "hang_detected" and e.get("op") is not None:
            timeout_ops.add((e.get("op"), e.get("seq"), e.get("pg")))
        if e.kind == "hang_detected" and e.get("pg") not in (None, "0", 0):
            other_group = True
        if e.kind == "exception" and _UNIQUE_ID_FROM_ROOT_RE.search(str(e.get("message") or e.text)):
            id_waiters.add(e.rank)
        if e.kind == "progress" and isinstance(e.get("elapsed_s"), int):
            bars[(e.rank, e.path, bar_name(e.get("label")), e.get("pattern"))] = e  # events are in line order
        elif e.kind == "phase_took" and isinstance(e.get("duration_s"), int):
            bars[(e.rank, e.path, e.get("label"), "took")] = e
        elif (kind := _wait(e)) is not None:
            waits.add(e, kind)
            if kind == "timeout":
                timed_out[e.path].append((e.line, e.rank))
        elif _fault(e):
            faults[e.rank] += 1
    if not bars:
        return []
    # (path, line) of a bar -> ranks of the other events on that line (a second pass, over the bars' lines
    # only: one set per line of a big job would be most of this step's memory).
    at_bars = {(b.path, b.line) for b in bars.values()}
    bar_paths = {b.path for b in bars.values() if b.rank is None}
    others_at: dict[tuple[str, int], set[int | None]] = {}
    # The ranks with lines of their own in each file holding a rank-less bar (the console's writers).
    writers_in: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e.kind != "progress" and (key := (e.path, e.line)) in at_bars:
            others_at.setdefault(key, set()).add(e.rank)
        if e.rank is not None and e.path in bar_paths and e.kind != "progress":
            writers_in[e.path].add(e.rank)
    all_faults = sum(faults.values())
    # The one rank of a known world not seen waiting (a rank-less bar is its likeliest owner).
    lone = None
    if world and len(waits.ranks) == world - 1 and all(0 <= r < world for r in waits.ranks):
        lone = next(r for r in range(world) if r not in waits.ranks)
    # Rank 0 as the main process of a single-host job whose other ranks wait (see `_DATASET_BAR_RE`).
    main_first = bool(waits.ranks) and 0 not in waits.ranks and len(set(hosts.values())) <= 1
    # DDP and FSDP (`sync_module_states`) broadcast the model from rank 0 at construction
    # (torch/nn/parallel/distributed.py `_sync_module_states`, `src=0`): peers whose only timed-out
    # collective is the default group's first broadcast waited for rank 0 to reach it, e.g. while rank 0
    # alone loaded the checkpoint (failure-signatures.md section 15: "checkpoint loading from slow storage
    # by rank 0 before a broadcast"; waiting peers time out at a small SeqNum on BROADCAST).
    from_root = main_first and bool(timeout_ops) and all(
        op == "BROADCAST" and isinstance(seq, int) and seq <= 2 and pg in (None, "0", 0)
        for op, seq, pg in timeout_ops)
    # The waiting ranks' own failure names whom they waited for: rank 0 of the group, which publishes the
    # ncclUniqueId at the group's first collective (failure-signatures.md sections 10.9 and 15: "if the
    # straggler is the PG's rank 0 and has not created the communicator"). In the default group that is global
    # rank 0; a subgroup's rank 0 is not, so a wait seen in another group names nobody.
    id_root = bool(id_waiters) and None not in id_waiters and 0 not in waits.ranks and not other_group
    rows: list[Record] = []
    for (rank, path, label, pattern), bar in sorted(bars.items(),
                                                    key=lambda kv: (kv[1].path, kv[1].line)):
        took = pattern == "took"
        own_waits = rank is not None and waits.timeouts.get(rank, 0) > 0
        peer_waits = waits.total - (waits.count.get(rank, 0) if rank is not None else 0) > 0
        owner, basis = rank, ("own" if rank is not None else None)
        before = {r for ln, r in timed_out.get(path, ()) if ln < bar.line}
        after = {r for ln, r in timed_out.get(path, ()) if ln > bar.line}
        if took and owner is None and len(after) == 1 and None not in after and before - {None} \
                and not after & before:
            # A phase over after some ranks' timeouts, with one rank whose own timeout comes only after it:
            # that rank entered the collective when the phase ended (section 15: "the straggler's own
            # error comes last").
            owner = next(iter(after))
            basis = ("the only rank whose own timeout was printed after the phase ended; the other ranks' "
                     "timeouts came before it (the straggler's own error comes last)")
        idle_here = writers_in.get(path, set()) - waits.ranks if owner is None else set()
        if owner is None and lone is not None:
            owner, basis = lone, f"the only rank of {world} not seen waiting"
        elif (owner is None and len(idle_here) == 1 and writers_in[path] & waits.ranks
                and not took and not faults.get(next(iter(idle_here)))):
            # A rank-less bar in a console whose other writers were all seen waiting: a rank blocked in the
            # collective for the whole timeout cannot have been running it, so it is the one writer of
            # this console that was not waiting (failure-signatures.md section 15: each node's local rank 0
            # preprocesses under `local_main_process_first` while the others wait).
            owner = next(iter(idle_here))
            basis = "the only rank with lines of its own in this console not seen waiting"
        elif owner is None and main_first and (" examples/s" in bar.text or (
                isinstance(label, str) and _DATASET_BAR_RE.match(label))):
            owner, basis = 0, "the main process: dataset preprocessing runs on rank 0 first while the " \
                "other ranks wait (`main_process_first`), and rank 0 was not seen waiting"
        elif owner is None and id_root and not took:
            owner, basis = 0, "the rank the waiting ranks' ncclUniqueId store wait names (`retrieving " \
                "ncclUniqueId from [0]`: the default group's rank 0 publishes it at the first collective), " \
                "and rank 0 was not seen waiting"
        elif owner is None and from_root:
            owner, basis = 0, "the broadcast's root: the other ranks timed out in the first broadcast of " \
                "the default group (the initial model-state sync, sent from rank 0), and rank 0 was not " \
                "seen waiting"
        step, total = bar.get("step"), bar.get("total")
        elapsed, remaining = bar.get("elapsed_s"), bar.get("remaining_s")
        if took:
            elapsed, remaining = bar.get("duration_s"), 0
        if not isinstance(elapsed, int):
            continue
        running = (isinstance(step, int) and isinstance(total, int) and step < total) or (
            not isinstance(total, int) and isinstance(remaining, int) and remaining > 0)
        projected = elapsed + remaining if isinstance(remaining, int) else None
        printed = waits.printed_without(rank)
        timeout_s: int | None = None
        timeout_basis = None
        if printed is not None:
            timeout_s, timeout_basis = printed, "printed by the waiting processes"
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
        if took:
            # Over, but it took at least the timeout the peers printed, and it was printed after a peer's
            # own timeout report in the same file: the peers' whole wait fell inside it.
            outlasts = bool(printed is not None and timeout_s and not own_waits
                            and timeout_s <= elapsed <= LATE_TIMEOUT * timeout_s
                            and before - ({owner} if owner is not None else set()))
        glued = any(r is None or r != rank for r in others_at.get((path, bar.line), ()))
        rows.append(
            _SlowRow(
                rank=owner,
                host=hosts.get(owner) if owner is not None else None,
                label=label,
                step=step,
                total=total,
                elapsed_s=elapsed,
                remaining_s=remaining,
                projected_s=projected,
                running=bool(running),
                timeout_s=timeout_s,
                timeout_basis=timeout_basis,
                outlasts_timeout=outlasts,
                # Listed for a bar that outlasted the wait only (the rules' victims): one list of every
                # other waiting rank per bar would be quadratic in ranks.
                waiting_ranks=sorted(r for r in waits.ranks if r not in (rank, owner)) if outlasts else [],
                wait=waits.kind_without(rank),
                owner_basis=basis,
                # A rank seen timing out in the collective was inside it until the timeout: it was not the
                # one still running the bar's work (failure-signatures.md section 15, section 17 item 1).
                idle_owner=(owner if owner is not None and not waits.timeouts.get(owner, 0) else None),
                glued=glued,
                fault_seen=all_faults - (faults.get(rank, 0) if rank is not None else 0) > 0,
                text=bar.text[:MAX_TEXT],
                pattern="took" if took else bar.get("pattern"),
                path=bar.path,
                line=bar.line,
            )
        )
    return rows
