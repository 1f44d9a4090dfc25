"""Folders that hold more than one run of a job: tell the runs apart and keep the latest one for the verdict.

Users point hanglens at the folder their job writes into, and that folder collects runs: torchrun's
`--log-dir` gets a new `<run_id>_<random>/` tree per invocation (log-formats.md section 3.1),
`>> train.log` appends run after run to one console, a scheduler writes one `slurm-<jobid>.out` per
submission, and a script's own per-rank files are rewritten by each rerun (a rerun with fewer ranks leaves
the bigger run's files beside it). Mixed into one job, an earlier run's errors invent culprits, its healthy
lines hide the latest failure and its stale rank files read as silent ranks.

A run starts where a launcher starts: torchrun prints its `OMP_NUM_THREADS` banner (or a shell echoes its
command line) once per invocation, before its rendezvous (torch/distributed/run.py; section 3.5), and a
restart of the worker group under `--max-restarts` prints none (those attempts stay one run, judged by the
restart logic of ingest/attribute.py and analysis/status.py). So:

- a console is cut at every launcher start that follows output of an earlier one (workers' lines or the
  agent's failure report): the agents of a multi-node job merged into one console all print their banner
  before any worker starts, since the rendezvous waits for every node;
- the pieces (console segments, `--log-dir` trees with all their attempts, other files) are ordered by their
  timestamps; a gap in time separates two runs only where something says the two sides cannot be one run: a
  console cut there, a launcher start on each side (two consoles), or one host's `--log-dir` trees with the
  same local ranks (one agent per invocation: the nodes of one job overlap in time). A file that merely stops
  early (a rank that died, a victim dated only at its timeout) never makes a run of its own;
- the latest run is judged. The others' files become skips and a cut console's earlier lines are left out,
  each with a note, and the verdict says how many runs the inputs hold and which one it judged.
"""

from __future__ import annotations

import calendar
import time as _time
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from hanglens.ingest.attribute import FileEvents
from hanglens.ingest.streams import is_agent_event, outer_stream
from hanglens.model import YEARLESS_YEAR, Event

# launchers whose start marks a new invocation (parsers/elastic.py `launch_config`)
_LAUNCHERS = ("torchrun", "torch.distributed.launch")
# what a run leaves behind that an earlier run's failure shows (the agent's report, a worker's traceback)
_FAILURE_KINDS = ("worker_failed", "child_failed", "exception", "launcher_exit")
# the last line of a console's last segment: it runs to the end of the file
_OPEN_END = (1 << 62) - 1


def _in_year(t: float) -> float:
    """A stamp moved into the year yearless stamps are read into (glog and c10 stamps state no year, Python
    logging's do): the runs of one folder are ordered by month, day and time."""
    s = _time.gmtime(t)
    if s.tm_year == YEARLESS_YEAR:
        return t
    day = min(s.tm_mday, calendar.monthrange(YEARLESS_YEAR, s.tm_mon)[1])
    return float(calendar.timegm((YEARLESS_YEAR, s.tm_mon, day, s.tm_hour, s.tm_min, s.tm_sec))) + t % 1


@dataclass(eq=False)
class _Unit:
    """A piece of the inputs that belongs to one run: a console segment, a `--log-dir` tree, a file."""

    files: list[int]
    lines: tuple[int, int] | None = None    # a console segment's first and last line (inclusive)
    first: float | None = None
    last: float | None = None
    start: bool = False                     # begins with a launcher start
    tree: tuple[str, str] | None = None     # (host, run dir) of a `--log-dir` tree
    local_ranks: set[int] = field(default_factory=set)
    ranks: set[int] = field(default_factory=set)   # global ranks its lines state (`[rankN]:` prefixes)
    failed: bool = False
    mtime: float | None = None              # a tree's newest file modification time

    def take(self, e: Event) -> None:
        if e.time is not None:
            t = _in_year(e.time)
            self.first = t if self.first is None else min(self.first, t)
            self.last = t if self.last is None else max(self.last, t)
        if e.local_rank is not None:
            self.local_ranks.add(e.local_rank)
        if e.rank is not None:
            self.ranks.add(e.rank)
        if e.kind in _FAILURE_KINDS:
            self.failed = True


@dataclass(frozen=True)
class RunInfo:
    """One run the inputs hold, oldest first: where it is (files, a `--log-dir` tree, a console's lines), and
    whether it is the one judged. `failed` says whether an earlier run ended in a failure (its agent's report
    or a traceback); it is None for the judged run, whose verdict is the analysis itself."""

    run: int
    where: tuple[str, ...]
    judged: bool
    failed: bool | None


@dataclass
class Runs:
    """What `plan_runs` decided: the runs, the files of earlier runs, the lines of a console kept."""

    table: list[RunInfo] = field(default_factory=list)   # every run, oldest first (empty for one run)
    drop: dict[str, str] = field(default_factory=dict)             # display path -> skip reason
    keep_lines: dict[str, tuple[int, int]] = field(default_factory=dict)   # display -> first, last line kept
    notes: dict[str, str] = field(default_factory=dict)            # display -> note on a cut console

    @property
    def count(self) -> int:
        return len(self.table) or 1


def _listed(where: Sequence[str]) -> str:
    return ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")


def runs_summary(table: Sequence[RunInfo]) -> str:
    """The words the verdict's summary gains when the inputs hold several runs ("" for one)."""
    if len(table) < 2:
        return ""
    earlier = "; ".join(f"run {r.run} ({_listed(r.where)}) "
                        + ("ended in a failure" if r.failed else "shows no failure") for r in table[:-1])
    latest = _listed(table[-1].where)
    return (f" The inputs hold {len(table)} runs of the job (told apart by their launcher starts, "
            f"`--log-dir` trees and timestamps); the latest ({latest}) is judged; set aside: {earlier}.")


def _is_start(e: Event) -> bool:
    return e.kind == "launch_config" and e.get("launcher") in _LAUNCHERS


def _is_output(e: Event) -> bool:
    """A line a run's workers wrote, or the agent's report of how they ended (not its start-up lines)."""
    return e.kind != "last_line" and (not is_agent_event(e) or e.kind in (
        "worker_failed", "child_failed", "closing_signal", "launcher_exit"))


def _cuts(f: FileEvents) -> tuple[list[int], int | None]:
    """The lines of `f` where a new launcher invocation starts: after output of an earlier one, or after an
    earlier start by the same writer (one agent starts once per invocation; the agents of several nodes
    merged into one console carry their node's prefix); and the line of its first launcher start, if any."""
    cuts: list[int] = []
    first_start: int | None = None
    seen_output = False
    starts: set[tuple[str, str]] = set()
    for e in f.events:   # (in line order)
        if _is_start(e):
            if first_start is None:
                first_start = e.line
            who = (outer_stream(e.writer), e.host or "")
            if seen_output or who in starts:
                cuts.append(e.line)
                seen_output = False
                starts = set()
            starts.add(who)
        elif _is_output(e):
            seen_output = True
    return cuts, first_start


def _units(job: Sequence[FileEvents], mtimes: dict[str, float]) -> tuple[list[_Unit], dict[int, list[_Unit]]]:
    units: list[_Unit] = []
    segments: dict[int, list[_Unit]] = {}
    trees: dict[tuple[str, str], _Unit] = {}
    for i, f in enumerate(job):
        o = f.origin
        if o.node_dir is not None:
            key = (o.host or "", o.node_dir)
            u = trees.get(key)
            if u is None:
                u = trees[key] = _Unit(files=[], tree=key)
                units.append(u)
            u.files.append(i)
            m = mtimes.get(f.display)
            if m is not None:
                u.mtime = m if u.mtime is None else max(u.mtime, m)
            if o.local_rank is not None:
                u.local_ranks.add(o.local_rank)
            for e in f.events:
                u.take(e)
            continue
        cuts, first_start = _cuts(f)
        if not cuts:
            u = _Unit(files=[i], start=first_start is not None)
            for e in f.events:
                u.take(e)
            units.append(u)
            continue
        # the first segment begins with a launcher start when one comes before the first cut
        head_start = first_start is not None and first_start < cuts[0]
        segs = [_Unit(files=[i], lines=(a, b - 1), start=k > 0 or head_start)
                for k, (a, b) in enumerate(zip([1, *cuts], [*cuts, _OPEN_END + 1], strict=True))]
        for e in f.events:
            segs[bisect_right(cuts, e.line)].take(e)   # (the cuts are in line order)
        segments[i] = segs
        units.extend(segs)
    return units, segments


class _Before:
    """What the pieces of the runs so far hold, kept up to date as groups join (a job of thousands of
    per-rank files dated apart makes as many groups)."""

    def __init__(self) -> None:
        self.cut_files: set[int] = set()
        self.start = False
        self.tree_ranks: set[tuple[str, int]] = set()

    def add(self, group: list[_Unit]) -> None:
        for u in group:
            if u.lines is not None:
                self.cut_files.update(u.files)
            self.start = self.start or u.start
            if u.tree is not None:
                self.tree_ranks.update((u.tree[0], r) for r in u.local_ranks)

    def apart(self, after: list[_Unit]) -> bool:
        """Whether `after`, all later in time than the pieces so far, cannot be one run with them."""
        if any(u.lines is not None and u.files[0] in self.cut_files for u in after):
            return True   # one console cut at a launcher start between them
        if self.start and any(u.start and u.lines is None and u.tree is None for u in after):
            return True   # a console of its own with its own launcher start after the earlier one's
        return any(u.tree is not None and any((u.tree[0], r) in self.tree_ranks for r in u.local_ranks)
                   for u in after)


def _runs(units: list[_Unit], segments: dict[int, list[_Unit]]) -> list[list[_Unit]]:
    """The pieces grouped into runs, oldest first. Undated pieces go with the latest run, except a cut
    console's earlier segments, which its line order places."""
    dated = sorted((u for u in units if u.first is not None), key=lambda u: (u.first, u.last))
    groups: list[list[_Unit]] = []
    end = None
    for u in dated:
        if groups and end is not None and u.first is not None and u.first <= end:
            groups[-1].append(u)
        else:
            groups.append([u])
        end = u.last if end is None or (u.last is not None and u.last > end) else end
    runs: list[list[_Unit]] = []
    before = _Before()
    for g in groups:
        if not runs or before.apart(g):
            runs.append(g)
        else:
            runs[-1].extend(g)
        before.add(g)
    undated = [u for u in units if u.first is None]
    older = _older_trees([u for u in units if u.tree is not None])
    old_ids = {id(u) for u in older}
    if older:
        runs = [g for g in ([u for u in r if id(u) not in old_ids] for r in runs) if g]
    if not runs:
        runs = [[]]
    if older:
        runs.insert(len(runs) - 1 if len(runs) > 1 else 0, older)
    for u in undated:
        if id(u) in old_ids:
            continue
        if u.lines is not None:
            segs = segments[u.files[0]]
            k = segs.index(u)
            # an undated segment of a cut console: the run of the next dated segment before it, else the first
            placed = next((r for s in reversed(segs[:k]) if s.first is not None
                           for r in runs if s in r), None)
            if placed is None and k < len(segs) - 1:
                placed = runs[0]
            (placed if placed is not None else runs[-1]).append(u)
        else:
            runs[-1].append(u)
    # A cut console's segments are in line order, whatever their stamps: the last one is the latest run.
    return [r for r in runs if r]


def _older_trees(trees: list[_Unit]) -> list[_Unit]:
    """Of `--log-dir` trees, the ones a newer tree of the same host with the same local ranks follows (one
    agent invocation per tree), told by the files' modification times where one of the two states no time
    (dated trees are ordered by their stamps); none where those do not differ by a second (a copy that did
    not keep them). Two trees whose lines state different global ranks are two nodes of one job, not two
    runs."""
    older: list[_Unit] = []
    by_host: dict[str, list[_Unit]] = {}
    for u in trees:
        if u.tree is not None and u.mtime is not None:
            by_host.setdefault(u.tree[0], []).append(u)
    for same in by_host.values():
        if len(same) < 2 or all(u.first is not None for u in same):
            continue   # (one tree, or every tree dated: their stamps order them)
        for u in same:
            um = u.mtime or 0.0
            if any(v is not u and v.mtime is not None and (u.first is None or v.first is None)
                   and v.mtime > um + 1.0 and u.local_ranks & v.local_ranks
                   and not (u.ranks and v.ranks and not u.ranks & v.ranks) for v in same):
                older.append(u)
    return older


def _where(job: Sequence[FileEvents], u: _Unit) -> str:
    f = job[u.files[0]]
    if u.tree is not None:
        return f.display.split(u.tree[1], 1)[0] + u.tree[1] + "/"
    if u.lines is not None:
        if u.lines[1] >= _OPEN_END:
            return f"{f.display} from line {u.lines[0]}"
        return f"{f.display} lines {u.lines[0]}-{u.lines[1]}"
    return f.display


def plan_runs(job: Sequence[FileEvents], mtimes: dict[str, float] | None = None) -> Runs:
    """Which inputs (and which lines of a console) belong to the latest run, and what to say about the rest.
    `mtimes`: the modification times of the `--log-dir` trees' files, by display path."""
    units, segments = _units(job, mtimes or {})
    if len(units) < 2:
        return Runs()
    runs = _runs(units, segments)
    if len(runs) < 2:
        return Runs()
    latest = runs[-1]
    plan = Runs()
    kept_files = {i for u in latest for i in u.files}
    for n, r in enumerate(runs[:-1], start=1):
        where = sorted({_where(job, u) for u in r})
        plan.table.append(RunInfo(n, tuple(where), judged=False, failed=any(u.failed for u in r)))
        for u in r:
            for i in u.files:
                if i not in kept_files:
                    plan.drop[job[i].display] = (f"an earlier run (run {n} of {len(runs)}): set aside, the "
                                                 "latest run is judged")
    for u in latest:
        if u.lines is not None:
            d = job[u.files[0]].display
            plan.keep_lines[d] = u.lines
            plan.notes[d] = (f"lines before {u.lines[0]} belong to earlier runs (set aside): the latest run "
                             f"starts at line {u.lines[0]} with its launcher's start")
    plan.table.append(RunInfo(len(runs), tuple(sorted({_where(job, u) for u in latest})), judged=True,
                              failed=None))
    return plan


def apply_runs(job: list[FileEvents], plan: Runs) -> list[bool]:
    """Leave the earlier runs' lines out of the cut consoles; say which files of `job` stay (the rest are
    skips)."""
    keep = []
    for f in job:
        if f.display in plan.drop:
            keep.append(False)
            continue
        span = plan.keep_lines.get(f.display)
        if span is not None:
            f.events = [e for e in f.events if span[0] <= e.line <= span[1]]
            # what the reader noted of the whole file: the ranks its `[rankN]:` prefixes state and its dated
            # stamps, as far as the kept lines show them
            f.stated_ranks = frozenset(f.stated_ranks & {e.rank for e in f.events if e.rank is not None})
            if f.dated is not None:
                times = [e.time for e in f.events if e.time is not None and e.time >= f.dated[0]]
                f.dated = (min(times), max(times)) if times else None
        keep.append(True)
    return keep
