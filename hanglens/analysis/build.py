"""Build every fact table of a job from its events (the only entry point of the analysis layer)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hanglens.analysis import (
    barriers,
    clock,
    collectives,
    facts_init,
    flight,
    gpu,
    mesh,
    progress,
    silence,
    status,
    tails,
    transfers,
)
from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.analysis.kinds import checkpoint_failed_ranks
from hanglens.model import Event, Fields, InputFile, event_order, events_in_order
from hanglens.parsers.elastic import LAYOUT_KINDS, layout_of


@dataclass
class Tables:
    """Everything the rule engine and the renderers need to know about one job.

    `tables` holds one DataFrame per FACT_SPECS name (always present, possibly empty, with exactly the
    spec's columns). `collectives` is the per (pg, rank, seq) table of the analysis document.
    """

    events: list[Event]
    tables: dict[str, pd.DataFrame]
    world_size: int | None
    ranks: list[int]
    hosts: dict[int, str]
    collectives: pd.DataFrame
    offsets: dict[str, float] = field(default_factory=dict)
    clock_note: str = ""
    files: list[InputFile] = field(default_factory=list)   # every input read (events or not)
    restart_note: str = ""   # the earlier attempts of a restarted worker group (status.restarts)
    followup_attempt: int | None = None   # a last attempt that failed as a follow-up (status.restarts)
    nproc_per_node: int | None = None   # workers per node every launcher line states alike (`node_size`)

    def fact(self, name: str) -> pd.DataFrame:
        return self.tables[name]


def frame(name: str, rows: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """A fact table with exactly its spec's columns, in order (missing values as None)."""
    cols = list(FACT_SPECS[name].columns)
    rows = rows if isinstance(rows, list) else list(rows)
    return object_frame(cols, ((r.get(c) for r in rows) for c in cols), len(rows))


def frame_columns(name: str, columns: dict[str, list[object]]) -> pd.DataFrame:
    """`frame` of rows given as one list per key (every list as long)."""
    cols = list(FACT_SPECS[name].columns)
    n = len(next(iter(columns.values()))) if columns else 0
    return object_frame(cols, [columns.get(c) or [None] * n for c in cols], n)


def _row_columns(rows: list[dict[str, object]]) -> dict[str, list[object]]:
    """Rows (dicts with the same keys) as one list per key, for `frame_columns`; the rows are let go."""
    return {k: [r[k] for r in rows] for k in rows[0]} if rows else {}


# From this many rows on, a column holding one object in every row is kept as that object once (a read-only
# view of it, repeated): a big job's per-rank tables say the same thing for most ranks in most columns.
SHARED_COLUMN_ROWS = 1024


def object_frame(cols: list[str], values: Iterable[Iterable[object]], n: int) -> pd.DataFrame:
    """A DataFrame of object columns, the values of column j from the j-th of `values`, written straight into
    the one 2-D block pandas keeps (columns x rows), not as a list and an array per column that pandas then
    copies into that block (a big job has one row per rank in several tables). Each column is read to its end
    before the next is taken (a generator of generators may bind its loop variable late).

    From SHARED_COLUMN_ROWS rows on, each column is its own array, and a column whose rows all hold the same
    object is that object once, repeated by a zero stride (16,384 ranks: 11 MiB of the tables' 16 MiB of
    pointers were such columns). Reading, selecting and grouping see the same values; the tables are never
    written in place (a shared column is read-only, and writing to it raises)."""
    if n >= SHARED_COLUMN_ROWS:
        arrays: dict[str, np.ndarray] = {}
        for name, col in zip(cols, values, strict=True):
            arr = np.fromiter(col, dtype=object, count=n)
            first = arr[0]
            for v in arr:
                if v is not first:
                    arrays[name] = arr
                    break
            else:
                one = np.empty(1, dtype=object)
                one[0] = first
                arrays[name] = np.broadcast_to(one, (n,))
            del arr
        return pd.DataFrame(arrays, columns=cols, dtype=object, copy=False)
    block = np.empty((len(cols), n), dtype=object)
    for j, col in enumerate(values):
        if n:
            # (fromiter: a value that is a list or a tuple is kept as one object, not read as a row of them)
            block[j] = np.fromiter(col, dtype=object, count=n)
    return pd.DataFrame(block.T, columns=cols, dtype=object, copy=False)


def rank_hosts(events: Sequence[Event]) -> dict[int, str]:
    """Each rank's host: the most common host named on its events, else the host a launcher placed it on
    (`layout_of`: DeepSpeed's `global_rank_mapping=`, torchrun's rendezvous result or command line), so a
    rank that left no line of its own still has the host a node-level fault names."""
    seen: dict[int, Counter[str]] = defaultdict(Counter)
    placed: dict[int, set[str]] = defaultdict(set)
    for e in events:
        if e.kind in LAYOUT_KINDS:
            for h, _, g in layout_of(e):
                placed[g].add(h)
        if e.rank is not None and e.host:
            seen[e.rank][e.host] += 1
        if e.kind == "child_failed":
            failed_rank, failed_host = e.get("failed_rank"), e.get("failed_host")
            if isinstance(failed_rank, int) and failed_host:
                seen[failed_rank][str(failed_host)] += 1
    out = {r: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for r, c in seen.items()}
    for r, hs in placed.items():
        if r not in out and len(hs) == 1:
            out[r] = next(iter(hs))
    return out


def node_size(events: Sequence[Event]) -> int | None:
    """How many workers each node runs, when every launcher line that states it (torchrun's and
    torch.distributed.launch's `--nproc_per_node`, an agent's rendezvous result listing its local ranks,
    section 3.5 of log-formats.md) states the same number.

    torchrun numbers a node's workers `group_rank * nproc_per_node + local_rank` (the rendezvous result,
    log-formats.md section 3.5), so with one worker count on every node a rank's node holds the block of
    `nproc_per_node` consecutive ranks it falls in, even where no line names that node's host."""
    sizes = {e.get("nproc_per_node") for e in events if e.kind == "launch_config"}
    for e in events:
        # an agent's rendezvous result lists its node's local ranks and their global ranks (`local_ranks=[0,
        # 1, 2, 3]`, `global_ranks=[4, 5, 6, 7]`, log-formats.md section 3.5): that node runs that many
        lrs, grs = (e.get("local_ranks"), e.get("global_ranks")) if e.kind == "world_info" else (None, None)
        if isinstance(lrs, list) and isinstance(grs, list) and lrs and len(lrs) == len(grs):
            sizes.add(len(lrs))
    sizes.discard(None)
    if len(sizes) != 1:
        return None
    n = next(iter(sizes))
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 4096 else None


def world_size_of(events: Sequence[Event]) -> int | None:
    """The job's world size when a log states it (communicator size, WORLD_SIZE, launcher tables, DeepSpeed's
    `global_rank_mapping=` when its hosts' ranks are exactly 0..N-1, or the
    members of the default process group in a Flight Recorder dump's `pg_config`: its `ranks` are global
    ranks and the default group holds every rank, log-formats.md section 8.3; a torchrun command line that
    states both `--nnodes` (or `--standalone`) and `--nproc-per-node`: the agents start nnodes x
    nproc_per_node workers, section 3.5); else the one size the program's own lines state (`world_size=4`,
    `Starting with 4 processes`), when they all agree; else the one group size gloo's mesh lines state
    (`[Gloo] Rank <r> is connected to <n> peer ranks. Expected number of connected peer ranks is : <m>`,
    m + 1), when every such line agrees and it is at least 2: each gloo group prints one per process, the
    default group first, so one size on every line is the default group's, the world's (parsers/gloo.py)."""
    sizes: list[int] = []
    meshes: set[int] = set()   # group sizes gloo's mesh lines state
    stated: set[int] = set()   # sizes only a program's own line states (`world_size=4`)
    # DeepSpeed's `global_rank_mapping=` lists every host of the job with its global ranks, one event per
    # host from the same line (deepspeed/launcher/launch.py `main`, log-formats.md section 9.2); each node's
    # launcher prints the same mapping. A mapping whose hosts' ranks are exactly 0..N-1 (no gap, no rank
    # twice) states N ranks; mappings that disagree (another run's, another attempt's) state nothing.
    mappings: dict[tuple[str, int], list[int]] = defaultdict(list)
    for e in events:
        if e.kind == "rank_layout":
            ranks = e.get("global_ranks")
            if isinstance(ranks, list):
                mappings[(e.path, e.line)].extend(r for r in ranks if isinstance(r, int))
    mapped = {len(rs) for rs in mappings.values() if sorted(rs) == list(range(len(rs)))}
    if len(mapped) == 1 and len(mappings) == sum(
            1 for rs in mappings.values() if sorted(rs) == list(range(len(rs)))):
        n = next(iter(mapped))
        if 0 < n <= 1_000_000:
            sizes.append(n)
    for e in events:
        if e.kind == "gloo_mesh":
            g = e.get("group_size")
            if isinstance(g, int) and 0 < g <= 1_000_000:
                meshes.add(g)
            continue
        for key in ("nranks", "world_size"):
            v = e.get(key)
            if isinstance(v, int) and 0 < v <= 1_000_000:
                (stated.add(v) if e.get("stated_by") == "user" else sizes.append(v))
        if e.kind == "launch_config":
            nnodes, nproc = e.get("nnodes"), e.get("nproc_per_node")
            if isinstance(nnodes, int) and isinstance(nproc, int) and 0 < nnodes * nproc <= 1_000_000:
                sizes.append(nnodes * nproc)
        if e.kind == "fr_dump":
            for group in e.get("pg_config") or []:
                if (isinstance(group, (list, tuple)) and len(group) == 3 and group[1] == "default_pg"
                        and isinstance(group[2], (list, tuple)) and 0 < len(group[2]) <= 1_000_000):
                    sizes.append(len(group[2]))
    if sizes:
        return max(sizes)
    # A user's line is evidence only when every such line agrees: two sizes may be a subgroup's, another
    # run's or another attempt's.
    if len(stated) == 1:
        return next(iter(stated))
    if len(meshes) == 1 and (m := next(iter(meshes))) >= 2:
        return m
    return _world_of_task_tables(events) or _world_of_spawn_parent(events)


def _world_of_spawn_parent(events: Sequence[Event]) -> int | None:
    """At least how many ranks an mp.spawn parent ran, when nothing states the world size.

    torch/multiprocessing/spawn.py `ProcessContext.join` warns `Terminating process <pid> via signal SIGTERM`
    for each process still alive after the first one failed, then raises the exception naming that one
    (parsers/spawn.py counts the warnings into `stopped`): the launcher ran at least `stopped + 1`
    processes, every one a rank of the job. A lower bound (another launcher's ranks are not counted), never
    below the highest rank a line names + 1; only when it says there were two ranks or more."""
    bound = 0
    for e in events:
        if e.kind == "launcher_exit" and e.get("launcher") == "mp.spawn":
            stopped = e.get("stopped")
            if isinstance(stopped, int) and stopped > 0:
                bound = max(bound, stopped + 1)
    if bound < 2:
        return None
    return max([bound] + [e.rank + 1 for e in events if e.rank is not None])


def _world_of_task_tables(events: Sequence[Event]) -> int | None:
    """The world size the torchrun failure tables of every srun task state together, else None.

    Under `srun -l` each task runs one torchrun agent, and its lines carry the task's label (the writer
    `task <t>`, log-formats.md section 9.3). When a worker fails, the agent stops the others and its
    ChildFailedError table lists every worker it ran, the stopped ones with exit code -15
    (torch/distributed/elastic/agent/server/api.py `_invoke_run`, multiprocessing/api.py `_close`;
    log-formats.md section 3.5); a row `rank: <r> (local_rank: <l>)` places the table's local ranks at
    global ranks r - l + local. When the tasks with a table are exactly 0..T-1, each with one placement, and
    their global ranks together are exactly 0..N-1 (no gap, no overlap), those are the job's ranks: N. Any
    doubt (a task that wrote lines but no table, as a node killed with its agent; a gap where a worker
    exited 0 unlisted; two placements; a rank of N or above on any line) gives None."""
    per_task: dict[int, set[frozenset[int]]] = defaultdict(set)
    tasks: set[str] = set()   # every task that wrote a line read as an event
    highest = -1              # the highest rank any event carries
    for e in events:
        if e.rank is not None and e.rank > highest:
            highest = e.rank
        if e.writer and e.writer.startswith("task "):
            tasks.add(e.writer[5:])
        if e.kind != "child_failed" or not e.writer or not e.writer.startswith("task "):
            continue
        task = e.writer[5:]
        rank, local, listed = e.get("failed_rank"), e.get("local_rank"), e.get("table_local_ranks")
        if not task.isdigit() or not isinstance(rank, int) or not isinstance(local, int) \
                or not isinstance(listed, list) or not listed:
            continue
        base = rank - local
        per_task[int(task)].add(frozenset(base + v for v in listed if isinstance(v, int)))
    if not per_task or sorted(per_task) != list(range(len(per_task))) or tasks != {str(t) for t in per_task}:
        return None
    ranks: list[int] = []
    for placements in per_task.values():
        if len(placements) != 1:
            return None
        ranks.extend(next(iter(placements)))
    n = len(ranks)
    return n if n >= 2 and sorted(ranks) == list(range(n)) and highest < n else None


_RANK_LIST_FIELDS = ("lagging_ranks", "not_joined_ranks", "not_finished_ranks", "missing_ranks", "ranks")


def named_ranks(events: Sequence[Event]) -> set[int]:
    """Global ranks that messages name (launcher tables, desync reports, mismatch reports, DDP, DCP)."""
    out: set[int] = set()
    for e in events:
        if e.kind in ("exception", "error_file"):
            # a DCP CheckpointException names the ranks whose own step failed (kinds.checkpoint_failed_ranks)
            out.update(r for r in checkpoint_failed_ranks(e) or () if 0 <= r < 1_000_000)
        if e.kind in ("child_failed", "ddp_unused_parameters", "ddp_model_mismatch"):
            for key in ("failed_rank", "for_rank"):
                v = e.get(key)
                if isinstance(v, int) and 0 <= v < 1_000_000:
                    out.add(v)
        if e.kind in ("desync_report", "collective_mismatch", "monitored_barrier_failure"):
            for key in _RANK_LIST_FIELDS:
                for v in e.get(key) or []:
                    if isinstance(v, int) and 0 <= v < 1_000_000:
                        out.add(v)
            for snap in e.get("snapshot") or []:
                _, _, ranks = str(snap).partition(":")
                out.update(int(x) for x in ranks.replace(" ", "").split(",") if x.isascii() and x.isdigit())
    return out




def build(events: Sequence[Event], files: Sequence[InputFile] = (), *, consume: bool = False) -> Tables:
    """Turn a job's events into fact tables. Pure: the same events always give the same tables.

    `consume`: `events` (a list) and its events are handed over: the list is emptied, and the clock shift
    changes the events themselves (a big job's events are not held twice); else they are left as they are.
    """
    evs = list(events) if events_in_order(events) else sorted(events, key=event_order)
    if consume and isinstance(events, list):
        events.clear()
    # Each writer's last lines (ingest/tail.py) say only where it stopped: they are read here, by the
    # `last_line` fact, and by nothing else (a line no parser read is no event of any other kind).
    last_lines = [e for e in evs if e.kind == tails.KIND]
    if last_lines:
        evs = [e for e in evs if e.kind != tails.KIND]
    # An unprefixed traceback whose writer only the launcher's one failed exit names (status.py).
    evs = status.attribute_lone_exit(evs)
    # A transformers script's INFO lines and Trainer records in an unprefixed console: the main process's.
    evs = status.attribute_main_process_stream(evs)
    # A traceback logged under a timed error record (`logger.exception`) took the record's time.
    evs = status.date_logged_tracebacks(evs)
    hosts = rank_hosts(evs)
    # The last lines become their table's columns now, and their events (each with the lines before it) go:
    # a big job has one per worker file, held through the whole build otherwise (16,384 files: 98,304
    # strings). Whether the job's logs hold a failure line is known only further down.
    last_cols = _row_columns(tails.last_line_rows(last_lines, hosts))
    del last_lines
    world = world_size_of(evs)
    # The device mesh the logs state, and the rank of each unprefixed line that states its own coordinates.
    known = {e.rank for e in evs if e.rank is not None}
    layout = mesh.mesh_layout(evs, world or (max(known) + 1 if known else None))
    evs = mesh.attribute(evs, layout, hosts)
    seen = {e.rank for e in evs if e.rank is not None}
    for f in files:
        seen.update(f.ranks)
        if f.origin.rank is not None:
            seen.add(f.origin.rank)
    seen |= named_ranks(evs)
    clean = status.clean_exit_ranks(evs, files)
    seen |= clean   # a launcher table's gaps are workers it started
    # Ranks are 0..N-1: a stated world size, or else the highest rank seen, bounds the ranks that exist.
    bound = world if world and world <= 65536 else (max(seen) + 1 if seen and max(seen) < 65536 else 0)
    ranks = sorted(seen | set(range(bound)))

    # A line that reports an error is no progress report: `ValueError: non-finite loss at step 5120` names
    # a step, but the rank did not get past it (and must not seem to have trained on after its traceback).
    # A tqdm bar redrawn with `\r` and another writer's line glued behind it share one physical line
    # (log-formats.md section 9.2); the reader splits them, so an error is the bar's own only when it is
    # on the bar's text, not on the line glued to it.
    errs = {(e.path, e.line, e.text) for e in evs if e.kind == "error_line"}
    if errs:
        evs = [e for e in evs if e.kind != "progress" or (e.path, e.line, e.text) not in errs]
    del errs
    # Errors their writer trained on after (caught, logged, retried) did not end the job: not failures.
    restarted = status.restarts(evs)
    survived = status.survived_failures(evs, files)
    if survived:
        evs = [e for i, e in enumerate(evs) if i not in survived]
    offsets, note = clock.host_offsets(evs, hosts)
    evs = clock.normalise(evs, offsets, hosts, in_place=consume)

    tables: dict[str, pd.DataFrame] = {}
    state_rows, coll = collectives.collective_state(evs, hosts)
    tables["collective_state"] = frame("collective_state", state_rows)
    # Read (never changed) by the two tables below: each row as a `Fields`, its values in a tuple and its keys
    # shared, not a dict of 14 keys per rank beside their rows (16,384 ranks: 11.5 MiB of dicts -> 3).
    state: list[Fields] = [Fields(r) for r in state_rows]
    del state_rows
    tables["pg_enqueue_lag"] = frame("pg_enqueue_lag", collectives.enqueue_lag(evs, state, hosts))
    tables["collective_disagreement"] = frame(
        "collective_disagreement", collectives.disagreement(evs, state, hosts)
    )
    # Row lists are dropped as soon as their tables exist: a big job has one row dict per rank in each, and
    # the tables built next reuse their memory.
    del state
    progress_rows = progress.progress_rows(evs, hosts)
    last_step = {int(r["rank"]): int(r["last_step"]) for r in progress_rows}
    tables["progress"] = frame("progress", progress_rows)
    del progress_rows
    stops = silence.stop_rows(evs, hosts)
    quiet = silence.silent_hang_rows(evs, hosts, {f.path: f.lines for f in files})
    mesh.peer_elsewhere(layout, quiet)
    # (the silent-hang rows already say whether the logs hold a failure line before the stop)
    no_error = bool(quiet[0]["no_error"]) if quiet else silence.no_error_before_stop(evs)
    if last_cols:
        last_cols["no_error"] = [no_error] * len(last_cols["rank"])
    # (whether the run said it was over before the stop reads where each rank's last line stands)
    placed = ([{"rank": r, "passed_by": n, "position": p} for r, n, p in zip(
        last_cols["rank"], last_cols["passed_by"], last_cols["position"], strict=True)]
        if stops and last_cols else [])
    finished = silence.finished_before_stop(evs, stops, quiet, placed)
    tables["job_stopped"] = frame("job_stopped", [{**r, "after_finish": finished} for r in stops])
    tables["silent_hang"] = frame("silent_hang", quiet)
    tables["last_line"] = frame_columns("last_line", last_cols)
    del last_cols, placed
    del stops, quiet   # (a row of 24 values per rank: the tables below would be built beside them)
    tables["slow_phase"] = frame("slow_phase", progress.slow_phase_rows(evs, hosts, world))
    tables["hang"] = frame("hang", status.hang_rows(evs, hosts))
    victims = silence.mark_after_stop(status.victim_rows(evs, hosts), evs, hosts)
    tables["victim_signals"] = frame("victim_signals", victims)
    tables["first_failure"] = frame("first_failure", status.first_failure_rows(evs, hosts))
    tables["versions"] = frame("versions", status.version_rows(evs, hosts))
    # One row per rank of the world: as columns, not a dict per rank (`rank_status_columns`).
    rank_cols = status.rank_status_columns(evs, ranks, hosts, victims, status.own_log_ranks(files), clean,
                                      status.printed_ranks(files), world)
    del victims
    tables["rank_status"] = frame_columns("rank_status", rank_cols)
    aborted = {r for r, s in zip(rank_cols["rank"], rank_cols["signal"], strict=True) if s == "SIGABRT"}
    quiet_ranks = [r for r, q in zip(rank_cols["rank"], rank_cols["quiet"], strict=True) if q]
    # A crash dump printed without a rank (faulthandler's `Fatal Python error: Aborted` stack) is the only
    # rank torchrun saw die of SIGABRT, when exactly one did.
    lone_abort = next(iter(aborted)) if len(aborted) == 1 else None
    calls = collectives.call_rows(evs, hosts, lone_abort, last_step)
    tables["collective_call"] = frame("collective_call", calls)
    tables["stopped_outside_collective"] = frame("stopped_outside_collective",
                                                 collectives.stopped_outside_rows(evs, hosts))
    tables["mesh_group"] = frame("mesh_group", mesh.group_rows(layout, hosts))
    tables["mesh_disagreement"] = frame("mesh_disagreement", mesh.disagreement_rows(evs, hosts))
    tables["mesh_group_split"] = frame("mesh_group_split", mesh.split_rows(layout, calls, hosts))
    tables["mesh_group_waiting"] = frame("mesh_group_waiting", mesh.waiting_rows(layout, calls, hosts))
    del layout
    tables["crash"] = frame("crash", status.crash_rows(evs, hosts))
    tables["unowned_crash"] = frame("unowned_crash", status.unowned_crash_rows(evs, hosts, world))
    tables["host_failures"] = frame(
        "host_failures", status.host_failures(zip(rank_cols["host"], rank_cols["crashed"], strict=True)))
    del rank_cols
    tables["missing_ranks"] = frame("missing_ranks", status.missing_rank_rows(evs, files, world))
    tables["store_barrier_missing"] = frame("store_barrier_missing", status.store_barrier_missing_rows(evs))
    tables["barrier_report"] = frame(
        "barrier_report", barriers.subgroup_barrier_rows(evs, world, quiet_ranks))
    tables["nccl_init_pending"] = frame("nccl_init_pending", facts_init.init_pending_rows(evs))
    tables["init_key_missing"] = frame(
        "init_key_missing",
        [{**r, "host": hosts.get(r["rank"])} for r in facts_init.init_key_missing_rows(evs, world)],
    )
    tables["vanished_stream"] = frame(
        "vanished_stream",
        [{**r, "host": hosts.get(r["rank"])} for r in facts_init.vanished_stream_rows(evs)],
    )
    fr_dumps, fr_match = flight.flight_rows(evs, hosts, world)
    tables["fr_dumps"] = frame("fr_dumps", fr_dumps)
    tables["fr_match"] = frame("fr_match", fr_match)
    posted = transfers.posted_sizes(fr_match)
    size_rows = transfers.size_error_rows(evs, hosts, calls, world, aborted, seen, posted)
    # Each rank's own call, also where only one rank left a stack (call_rows then judges no sides): read only
    # when a transfer was rejected.
    own_calls = collectives.stack_calls(evs, hosts, lone_abort) if size_rows else []
    if any(r.get("role") == "receiver" and (r.get("peer") is None or not r.get("p2p")) for r in size_rows):
        # The receiver that rejected a message is often the only other rank left with anything to show (it
        # aborted without a Python stack): the sender's own stack, blocked in its send when the receiver's
        # abort reset the connection, names it even when no second stack makes a side to compare
        # (failure-signatures.md section 2; gloo/transport/tcp/pair.cc Pair::prepareRead), and shows the
        # transfer point-to-point where a 2-rank job's ring reading would call it a collective's.
        have = {c.get("rank") for c in calls}
        extra = [c for c in own_calls if c.get("rank") not in have]
        if extra:
            size_rows = transfers.size_error_rows(evs, hosts, [*calls, *extra], world, aborted, seen, posted)
    size_rows = transfers.mark_places(size_rows, own_calls)
    tables["transfer_size_error"] = frame("transfer_size_error", size_rows)
    tables["gradient_sync_split"] = frame(
        "gradient_sync_split", transfers.gradient_sync_rows(
            size_rows, own_calls, hosts, world, seen,
            collectives.unranked_stack_calls(evs) if size_rows else ())
    )
    del own_calls
    del size_rows
    tables["ib_peer"] = frame("ib_peer", transfers.ib_peer_rows(evs, hosts))
    tables["socket_peer"] = frame("socket_peer", transfers.socket_peer_rows(evs, hosts))
    tables["store_link_lost"] = frame("store_link_lost", transfers.store_link_rows(evs, hosts))
    tables["gpu_fault"] = frame("gpu_fault", gpu.gpu_fault_rows(evs, hosts))
    tables["recv_wait"] = frame("recv_wait", transfers.recv_wait_rows(evs, hosts, calls, world))
    del calls
    return Tables(
        events=evs,
        tables=tables,
        world_size=world,
        ranks=ranks,
        hosts=hosts,
        collectives=coll,
        offsets=offsets,
        clock_note=note,
        files=list(files),
        restart_note=restarted.note,
        followup_attempt=restarted.followup,
        nproc_per_node=node_size(evs),
    )
