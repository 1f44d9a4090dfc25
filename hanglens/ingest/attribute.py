"""Job-level attribution after every file was read: global ranks, hosts and calendar years for events.

Each step only fills what is still unknown, and only from a mapping the inputs state without
ambiguity (a mapping with two different answers is dropped): never guess.
"""

from __future__ import annotations

import bisect
import calendar
import datetime as dt
import itertools
import statistics
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from hanglens import lazyre as re
from hanglens.ingest.origin import slurm_task
from hanglens.ingest.sources import tar_base, zip_base
from hanglens.ingest.streams import DUMP_PARSERS, is_agent_event, outer_stream, several_processes
from hanglens.ingest.streams import non_negative_int as _int
from hanglens.model import AGENT_EVENT_KINDS, RAY_TASK_ERROR_RE, YEARLESS_YEAR, Event, Origin, short_host
from hanglens.parsers.elastic import LAYOUT_KINDS, layout_of, world_local_pairs
from hanglens.parsers.nccl import split_comm

YEAR2000 = float(calendar.timegm((YEARLESS_YEAR, 1, 1, 0, 0, 0)))  # yearless stamps are read into this year
YEAR2001 = float(calendar.timegm((YEARLESS_YEAR + 1, 1, 1, 0, 0, 0)))
HALF_YEAR = 183 * 86400.0
_LAST_NUMBER_RE = re.compile(r"^(?P<pre>.*?)(?P<n>\d{1,6})(?P<post>\D*)$")
# A Kubeflow PyTorchJob pod's log saved under the pod's name (`<job>-master-0.log`, `<job>-worker-2.txt`) or
# under its replica name alone (`master-0.log`, `worker-1.log`).
_KUBEFLOW_POD_RE = re.compile(
    r"^(?:(?P<job>[A-Za-z0-9][\w.-]{0,200}?)-)?(?P<role>master|worker)-(?P<i>\d{1,5})$")


@dataclass(slots=True)
class FileEvents:
    """One read input as attribution sees it: where it sits and the events it produced."""

    display: str
    origin: Origin
    events: list[Event]
    pid: int | None = None
    dated: tuple[float, float] | None = None     # earliest and latest dated (year-stating) stamp
    stated_ranks: frozenset[int] = frozenset()   # every `[rankN]:` rank the file's lines carry
    owned: bool = False   # nobody else holds these events: they are changed in place, not copied


_set = object.__setattr__   # (events are frozen dataclasses)


def _with(f: FileEvents, e: Event, name: str, value: Any) -> Event:
    """`e` with `name` set to `value`: the event itself, changed, when `f` owns its events (a big job's
    events are not all copied again), else a copy."""
    if f.owned:
        _set(e, name, value)
        return e
    return replace(e, **{name: value})


def _unique(pairs: Iterable[tuple[Hashable, int]]) -> dict[Hashable, int]:
    """key -> value for keys that only ever map to one value."""
    seen: dict[Hashable, set[int]] = {}
    for k, v in pairs:
        seen.setdefault(k, set()).add(v)
    return {k: next(iter(vs)) for k, vs in seen.items() if len(vs) == 1}


def _scope(e: Event | None) -> str:
    """The outer launcher stream a line came through (`streams.outer_stream`), "" for no line."""
    return outer_stream(e.writer if e is not None else None)


def _node_key(f: FileEvents, e: Event | None) -> tuple[str, ...]:
    """Whose local ranks an event's local rank counts: the torchrun run dir, else the file, host and outer
    launcher stream."""
    o = f.origin
    if o.node_dir is not None:
        return ("tree", o.host or "", o.node_dir, str(o.attempt))
    return ("file", f.display, (e.host if e is not None else None) or "", _scope(e))


def _apply(files: list[FileEvents], fn: Callable[[FileEvents, Event], Event]) -> None:
    for f in files:
        # (`fn` gives the event itself, changed by `_with`, when `f` owns its events; its result is taken
        # either way, so a step that copies still works)
        f.events = [fn(f, e) for e in f.events]


def _archive_names_as_hosts(files: list[FileEvents]) -> None:
    """Drop a host read from an archive's own name.

    An archive member's path, from which origin.py reads a machine out of folder names that look like one,
    starts with the archive's name without its suffix: `run-7.tar.gz!run-7/rank0.log` is read as
    `run-7/run-7/rank0.log`, so the archive's name, and the one folder a job was packed in under the same
    name (`tar czf run-7.tar.gz run-7`), would be the host of every member. That name is the job's, given
    to a file, not a machine's: it must not stand for a host the logs name otherwise (`localhost` in
    torchrun's failure table). Nor is the one folder every member of an archive lies in, whatever its name
    (`tar czf run-7.tar.gz trainer-03`), where the members' lines name a host of their own: it is the job's
    folder packed as it was (the same folder given as a path is read below its own name), and the host the
    logs state wins over a name given to a folder. A folder beside others inside the archive (`node07/`,
    `node08/`), or the one folder of an archive whose lines name no host, stays a host.
    """
    tops: dict[str, set[str]] = {}
    stated: dict[str, bool] = {}
    for f in files:
        if "!" in f.display:
            archive, _, member = f.display.rpartition("!")
            tops.setdefault(archive, set()).add(member.split("/", 1)[0] if "/" in member else "")
            own = f.origin.host
            stated[archive] = stated.get(archive, False) or any(
                h is not None and h != own
                for e in f.events for h in (e.host, e.get("failed_host"), e.get("hostname")))
    for f in files:
        host = f.origin.host
        if host is None or "!" not in f.display:
            continue
        outer = f.display.split("!")
        # (the archive's name as sources.py makes its members' paths from it, as a tar's or a zip's)
        stems = {base(p).rsplit("/", 1)[-1] for p in outer[:-1] for base in (tar_base, zip_base)}
        archive = f.display.rpartition("!")[0]
        packed = tops.get(archive, set())
        if len(packed) == 1 and stated.get(archive):
            stems |= packed - {""}
        if host not in stems:
            continue
        f.origin = replace(f.origin, host=None)
        # (a line whose own pdsh prefix names that host keeps it)
        f.events = [_with(f, e, "host", None) if e.host == host and e.writer != f"host {host}" else e
                    for e in f.events]


def attribute(files: list[FileEvents]) -> None:
    """Fill rank and host of every event where the job's inputs allow it (in place)."""
    _archive_names_as_hosts(files)
    _kubeflow_pods(files)
    _local_to_global(files)
    _numbered_series(files)
    _slurm_task_files(files)
    _nccl_pids(files)
    _failure_table_callstacks(files)
    _ray_workers(files)
    _tagged_writers(files)
    _stated_ranks(files)
    _oom_device_index(files)
    _oom_process_pid(files)
    _self_announced_rank(files)
    _only_exception_exit(files)
    _console_attempts(files)
    _hosts(files)
    rebase_years(files)


def _world_size(files: list[FileEvents]) -> int | None:
    """The job's world size when the logs state exactly one (torchrun's WORLD_SIZE echo, NCCL's nranks)."""
    sizes: set[int] = set()
    nranks: list[int] = []
    for f in files:
        for e in f.events:
            kind = e.kind
            if kind == "world_info":
                n = _int(e.get("world_size"))
                if n is not None:
                    sizes.add(n)
            elif kind == "nccl_comm_init":
                n = _int(e.get("nranks"))
                if n is not None:
                    nranks.append(n)
    if nranks:
        sizes.add(max(nranks))  # sub-communicators are smaller than the world
    return next(iter(sizes)) if len(sizes) == 1 else None


def _kubeflow_pods(files: list[FileEvents]) -> None:
    """Pod logs of a Kubeflow PyTorchJob that has a master: `<job>-worker-<i>` is node i+1, not rank i.

    The operator gives the master replica RANK 0 and worker replica i RANK i+1 (node rank when each pod runs
    torchrun; log-formats.md section 9.3, Kubernetes pod logs), while a file name `worker-<i>` alone reads
    as rank i. So when the inputs hold the master's log beside the workers' (same folder and job name), the
    rank that name gave the unprefixed lines of a worker's log is replaced: by i+1 when the pod is one rank
    (the stated world size is the number of pods, or unknown, and no `[rankN]:` line in it names another
    rank), else by the one rank the file's `[rankN]:` lines state, else by none. The master's log gets rank
    0 only when the stated world size equals the number of pods (one process per pod).
    """
    groups: dict[tuple[str, str], list[tuple[str, int, FileEvents]]] = {}
    for f in files:
        head, _, name = f.display.replace("!", "/").rpartition("/")
        m = _KUBEFLOW_POD_RE.match(name.split(".")[0])
        if m is not None and f.origin.node_dir is None and f.origin.local_rank is None:
            groups.setdefault((head, m["job"] or ""), []).append((m["role"], int(m["i"]), f))
    world = _world_size(files)
    for pods in groups.values():
        if not any(role == "master" for role, _, _ in pods):
            continue
        one_each = world is None or world == len(pods)
        for role, i, f in pods:
            node = 0 if role == "master" else i + 1
            hinted = f.origin.rank if role == "worker" else None
            if hinted is not None and hinted in f.stated_ranks:
                continue   # the name's rank is also one a line states: leave the file as it is
            if f.stated_ranks <= {node} and (one_each if role == "worker" else world == len(pods)):
                rank: int | None = node
            elif len(f.stated_ranks) == 1:
                rank = next(iter(f.stated_ranks))
            else:
                rank = None
            if rank == hinted:
                continue
            f.origin = replace(f.origin, rank=rank if rank == node else None)

            def fix(f: FileEvents, e: Event, hinted: int | None = hinted, rank: int | None = rank,
                    node: int = node) -> Event:
                if e.rank != hinted:
                    return e
                if is_agent_event(e) and rank != node:
                    return _with(f, e, "rank", None)
                return _with(f, e, "rank", rank)

            f.events = [fix(f, e) for e in f.events]


def _numbered_series(files: list[FileEvents]) -> None:
    """Files a user named after their writer's rank without saying so (`stuck-0.txt` .. `stuck-3.txt`).

    Only a series of names identical but for one number, numbered exactly 0..W-1 where W is the world size
    the logs state, and with no line inside naming a different rank, is read as one file per rank. Where no
    line states the world size, the ranks the other files show (their `[rankN]:` lines, `rank<N>` file
    names) stand for it when they are exactly 0..W-1 too: a series numbered like the job's ranks, one file
    each, such as the faulthandler or py-spy dumps a user saves per rank under a name of their own
    (failure-signatures.md section 16 item 4). Where nothing states the size, the series itself is read as
    one file per rank when two or more of its files' writers state their file's number as their rank.
    """
    world = _world_size(files)
    groups: dict[tuple[str, str, str], list[tuple[int, FileEvents]]] = {}
    for f in files:
        o = f.origin
        if o.rank is not None or o.local_rank is not None or o.node_dir is not None:
            continue
        head, _, name = f.display.replace("!", "/").rpartition("/")
        m = _LAST_NUMBER_RE.match(name)
        if m is not None:
            groups.setdefault((head, m["pre"], m["post"]), []).append((int(m["n"]), f))
    if world is None:
        in_series = {id(f) for series in groups.values() for _, f in series}
        seen = {e.rank for f in files if id(f) not in in_series for e in f.events if e.rank is not None}
        if seen == set(range(len(seen))):
            world = len(seen)
    for series in groups.values():
        numbers = sorted(n for n, _ in series)
        if numbers != list(range(len(series))) or len(series) < 2:  # also refuses `01` beside `1`
            continue
        if any(e.rank is not None and e.rank != n for n, f in series for e in f.events):
            continue
        if world is None or world < 2:
            # No size stated anywhere: the series is the job's files one per rank when its own writers
            # say so, two or more of them each stating its file's number as its rank (per-process output
            # files of a launcher that adds no prefix, log-formats.md section 9.3); the others are the
            # ranks their numbers give.
            confirmed = sum(1 for n, f in series if any(e.rank == n for e in f.events))
            if confirmed < 2 or any(_launches_workers(f) for _, f in series):
                continue
        elif len(series) != world:
            continue
        for n, f in series:
            f.events = [e if e.rank is not None else _with(f, e, "rank", n) for e in f.events]


def _launches_workers(f: FileEvents) -> bool:
    """Does the file show a launcher that started several workers (torchrun's agent, `--tee` prefixes, a
    `--nproc-per-node` above 1), or the output of more than one process?"""
    if any(e.local_rank is not None or is_agent_event(e) or e.get("several_workers") for e in f.events):
        return True
    return several_processes(f.events)


def _slurm_task_files(files: list[FileEvents]) -> None:
    """Slurm per-task output files (`<job>.<task>.out`, `slurm-<job>_<task>.err`) whose writer is one rank.

    The task id is SLURM_PROCID, the global rank when srun starts one task per rank, and the node index
    when each task runs a launcher of several workers (log-formats.md section 9.3). So the files of one
    job with two or more task ids are read as each task's rank's own files only when none of them shows a
    launcher or a second process, no line in them states a rank other than the task id, and no stated
    world size is smaller than the tasks; otherwise they keep no rank (they still count as separate
    writers).
    """
    world = _world_size(files)
    series: dict[tuple[str, str, str], list[tuple[int, FileEvents]]] = {}
    for f in files:
        o = f.origin
        found = slurm_task(f.display)
        if found is None or o.rank is not None or o.local_rank is not None or o.node_dir is not None:
            continue
        series.setdefault(found[0], []).append((found[1], f))
    for members in series.values():
        tasks = [t for t, _ in members]       # a task may have two files (`%j.%t.out` and `%j.%t.err`)
        if len(set(tasks)) < 2:
            continue
        if world is not None and max(tasks) >= world:
            continue
        if any(_launches_workers(f) or (f.stated_ranks - {t}) for t, f in members):
            continue
        if any(e.rank is not None and e.rank != t for t, f in members for e in f.events):
            continue
        for t, f in members:
            f.origin = replace(f.origin, rank=t)
            f.events = [e if e.rank is not None else _with(f, e, "rank", t) for e in f.events]


# `<...>/<run_id>_<random>/attempt_<n>/<local_rank>/error.json` (log-formats.md section 3.1 layout)
ERROR_FILE_DIR_RE = re.compile(
    r"(?:^|/)(?P<run_dir>[^/\s]+)/attempt_(?P<attempt>\d{1,6})/(?P<local>\d{1,6})/error\.json$")


def _console_node_block(f: FileEvents) -> tuple[tuple[str, ...], int, int] | None:
    """(node key, 0, first global rank) of a torchrun console whose command line states the worker count but
    not the node's rank, from the ranks its own workers print.

    A torchrun started with a dynamic rendezvous (`--rdzv-backend=c10d`) is given its node's rank by the
    rendezvous, so its command line does not state it (log-formats.md section 3.5); its workers inherit the
    agent's terminal, and torchrun numbers them node_rank * nproc_per_node + local_rank. So in a file that
    holds one such command line (`--nproc-per-node <n>`) and no other launcher's, worker lines whose
    `[rankN]:` ranks all fall in one block of n ranks name the node: local rank 0 is that block's first rank.
    """
    configs = [e for e in f.events if e.kind == "launch_config"]
    if len(configs) != 1 or configs[0].get("launcher") != "torchrun" or f.origin.node_dir is not None:
        return None
    nproc = _int(configs[0].get("nproc_per_node"))
    if not nproc or nproc < 2 or _int(configs[0].get("node_rank")) is not None:
        return None
    if any(e.kind == "world_info" or e.writer for e in f.events):
        return None   # a rendezvous result or a launcher prefix states the layout better
    blocks = {e.rank // nproc for e in f.events
              if e.rank is not None and e.kind not in AGENT_EVENT_KINDS and e.local_rank is None}
    if len(blocks) != 1:
        return None
    return (_node_key(f, configs[0]), 0, next(iter(blocks)) * nproc)


# The 2.1+ allocator message lists the processes on the GPU from NVML (log-formats.md section 5.2).
_OOM_PROCESS_RE = re.compile(
    r"\bProcess (?P<pid>\d{1,10}) has \d{1,9}(?:\.\d{1,4})? (?:[KMGT]iB|bytes) memory in use")


def _oom_process_pid(files: list[FileEvents]) -> None:
    """A rank-less CUDA OOM whose process list names exactly one worker the launcher started is that rank's.

    From 2.1 the caching allocator's message lists every process on the GPU (`Process <pid> has <size> memory
    in use.`, log-formats.md section 5.2), the raising process among them. The launcher states its workers'
    pids with their local ranks (DeepSpeed's `process <pid> spawned with command: [... '--local_rank=<l>']`,
    torchrun's `failed (exitcode: <c>) local_rank: <l> (pid: <p>)`) and, where a layout places them, their
    global rank (`placed_rank`; DeepSpeed's `global_rank_mapping`, which lists every host of the job, when it
    names one host only); torchrun's failure table states rank and pid itself (section 3.6). One listed pid
    that is such a worker maps the message (failure-signatures.md section 5.1: the rank that raised it); two
    (ranks sharing one GPU) or none map nothing.
    """
    ooms = [e for f in files for e in f.events
            if e.kind in ("oom", "exception") and e.rank is None and "CUDA out of memory" in e.text]
    if not ooms:
        return
    mapping = [t for f in files for e in f.events if e.kind == "rank_layout" for t in layout_of(e)]
    one_host = ({lr: g for _, lr, g in mapping} if len({short_host(h) for h, _, _ in mapping}) == 1 else {})
    pairs: list[tuple[Hashable, int]] = []
    for f in files:
        for e in f.events:
            pid = _int(e.get("pid"))
            if pid is None or pid <= 0:
                continue
            g: int | None = None
            if e.kind == "child_failed":
                g = _int(e.get("failed_rank"))
            elif e.kind in ("worker_spawned", "worker_failed"):
                g = _int(e.get("placed_rank"))
                lr = _int(e.get("local_rank"))
                if g is None and lr is not None:
                    g = one_host.get(lr)
            if g is not None:
                pairs.append((pid, g))
    by_pid = _unique(pairs)
    if not by_pid:
        return
    targets: dict[int, int] = {}
    for e in ooms:
        ranks = {by_pid[p] for m in _OOM_PROCESS_RE.finditer(e.text)
                 if (p := int(m.group("pid"))) in by_pid}
        if len(ranks) == 1:
            targets[id(e)] = next(iter(ranks))
    if not targets:
        return

    def fill(f: FileEvents, e: Event) -> Event:
        r = targets.get(id(e))
        return e if r is None else _with(f, e, "rank", r)

    _apply(files, fill)


def _local_to_global(files: list[FileEvents]) -> None:
    """local rank -> global rank per agent: direct (L, R) pairs, else one consistent offset R - L.

    Pairs come from events carrying both, `world_info` echoes, the single `[rankN]:` rank of a local
    rank's own files, the ChildFailedError table of the agent's host, and a torchrun command line stating
    the node's rank and worker count (local rank 0 is node_rank * nproc_per_node).
    """
    # A set: every worker's events repeat its (node, local rank, rank), and a big job's would otherwise be a
    # tuple per event (tens of MiB at 16,384 ranks) held until the mappings are made (they only need each
    # triple once).
    triples: set[tuple[tuple[str, ...], int, int]] = set()
    key_hosts: dict[tuple[str, ...], set[str]] = {}
    failures: list[tuple[str, int, int]] = []
    # (run dir, attempt, local rank, global rank) from a failure row's error_file path
    error_dirs: list[tuple[str, str, int, int]] = []
    layout: set[tuple[str, int, int]] = set()   # (host, local rank, global rank) a launcher stated
    for f in files:
        if f.origin.local_rank is not None and len(f.stated_ranks) == 1:
            triples.add((_node_key(f, None), f.origin.local_rank, next(iter(f.stated_ranks))))
        block = _console_node_block(f)
        if block is not None:
            triples.add(block)
            # the agent's own exit lines name a local rank of this node (`failed (exitcode: ...) local_rank:
            # <l>`): the rank it is about is the block's first rank + l (their writer stays the agent)
            f.events = [_with(f, e, "fields", {**e.fields, "placed_rank": block[2] + lr})
                        if e.kind in ("worker_failed", "worker_spawned") and e.get("placed_rank") is None
                        and (lr := _int(e.get("local_rank"))) is not None else e for e in f.events]
        tree = _node_key(f, None) if f.origin.node_dir is not None else None   # (the same for its events)
        for e in f.events:
            key = tree or _node_key(f, e)
            for h in (e.host, e.get("nccl_host"), e.get("hostname") if e.kind == "world_info" else None):
                if isinstance(h, str) and h:
                    key_hosts.setdefault(key, set()).add(short_host(h))
            if e.kind == "world_info":
                g, lr = _int(e.get("global_rank")), _int(e.get("local_rank"))
                lr = lr if lr is not None else f.origin.local_rank
                if g is not None and lr is not None:
                    triples.add((key, lr, g))
            elif e.kind == "launch_config":
                # torchrun's static rendezvous: global rank = node_rank * nproc_per_node + local_rank.
                node, nproc = _int(e.get("node_rank")), _int(e.get("nproc_per_node"))
                if node is not None and nproc:
                    triples.add((key, 0, node * nproc))
            if e.kind in LAYOUT_KINDS:
                for host, lr, g in layout_of(e):
                    layout.add((short_host(host), lr, g))
                    if e.kind == "world_info":
                        triples.add((key, lr, g))   # the agent's own workers: the stream it printed in
                if e.kind == "world_info" and not e.host:
                    # No host to name, but the rendezvous result still lists the printing agent's own
                    # workers (log-formats.md section 3.5: the only place that maps (node, local_rank) ->
                    # global rank): their `[defaultN]:` lines come through the same stream. Two agents
                    # merged into one unprefixed stream state two ranks for one local rank, and
                    # `_unique` keeps neither.
                    for lr, g in world_local_pairs(e):
                        triples.add((key, lr, g))
            elif e.kind == "child_failed":
                g, lr, h = _int(e.get("failed_rank")), _int(e.get("local_rank")), e.get("failed_host")
                if g is not None and lr is not None and isinstance(h, str) and h:
                    failures.append((short_host(h), lr, g))
                m = ERROR_FILE_DIR_RE.search(str(e.get("error_file") or ""))
                if g is not None and m is not None and int(m["local"]) == lr:
                    error_dirs.append((m["run_dir"], m["attempt"], lr, g))
                if g is not None and lr is not None and key[0] == "file" and key[3]:
                    # The table lists its own agent's workers (log-formats.md section 3.6), and a launcher
                    # prefix (`srun -l` task, pdsh host) says which agent's stream the table and the
                    # workers' `[defaultN]:` lines came through.
                    triples.add((key, lr, g))
            # The agent's own lines name other processes' local ranks; they say nothing about their writer.
            if e.rank is not None and e.local_rank is not None and e.kind not in AGENT_EVENT_KINDS:
                triples.add((key, e.local_rank, e.rank))
    # host -> torchrun trees seen on it, so a failure table of N rows costs N lookups, not N x trees
    trees_on: dict[str, list[tuple[str, ...]]] = {}
    for k, hs in key_hosts.items():
        if k[0] == "tree":
            for h in hs:
                trees_on.setdefault(h, []).append(k)
    for host, lr, g in failures:
        keys = trees_on.get(host, [])
        if len(keys) == 1:
            triples.add((keys[0], lr, g))
    if error_dirs:
        # A failure row's error_file is `<log_dir>/<run_id>_<random>/attempt_<n>/<local_rank>/error.json`
        # (log-formats.md sections 3.1, 3.6): the random suffix is the agent's own, so the `--log-dir` tree
        # with that run dir and attempt is that agent's, and its local rank is the row's global rank, even
        # when no line of the tree names its host or rank.
        trees = {(k[2], k[3]): k for k in key_hosts if k[0] == "tree"}
        for f in files:
            if f.origin.node_dir is not None:
                k = _node_key(f, None)
                trees.setdefault((k[2], k[3]), k)
        for run_dir, attempt, lr, g in error_dirs:
            tree_key = trees.get((run_dir, attempt))
            if tree_key is not None:
                triples.add((tree_key, lr, g))
    if layout:
        # A launcher's layout names hosts: it numbers the local ranks of every stream that came from one
        # of them (its `--log-dir` tree, its pdsh / `srun -l` stream, a file of that host alone).
        on_host: dict[str, list[tuple[str, ...]]] = {}
        for k, hs in key_hosts.items():
            if len(hs) == 1:
                on_host.setdefault(next(iter(hs)), []).append(k)
        for host, lr, g in layout:
            for k in on_host.get(host, ()):
                triples.add((k, lr, g))
    if layout:
        _placed_ranks(files, layout)
    direct = _unique(((k, lr), g) for k, lr, g in triples)
    offsets = _unique((k, g - lr) for k, lr, g in triples)
    lone = _single_node(files)
    if lone is not None and any(_node_of(k) == lone for k, _, _ in triples):
        lone = None   # something states this node's mapping: use that

    def fill(f: FileEvents, e: Event) -> Event:
        if e.rank is not None or e.local_rank is None:
            return e
        key = _node_key(f, e)
        rank = direct.get((key, e.local_rank))
        if rank is None and key in offsets:
            rank = e.local_rank + offsets[key]
        if rank is None and lone is not None and (_node_of(key) == lone or e.parser in DUMP_PARSERS):
            rank = e.local_rank   # nothing states the mapping, and it is the job's only node
        return e if rank is None or rank < 0 else _with(f, e, "rank", rank)

    _apply(files, fill)


def _placed_ranks(files: list[FileEvents], layout: set[tuple[str, int, int]]) -> None:
    """A launcher's exit line for a local rank of a host whose ranks a launcher stated gets `placed_rank`.

    `failed (exitcode: ...) local_rank: <l>` (torchrun's agent) and `[... '--local_rank=<l>'] exits with
    return code = <c>` (DeepSpeed's launcher, deepspeed/launcher/launch.py `sigkill_handler`) name a local
    rank of their own host, as does DeepSpeed's `process <pid> spawned with command: [... '--local_rank=<l>']`
    (`worker_spawned`); a layout of that host (`layout_of`) says which global rank it is. The line
    stays the agent's own (no `rank`): only the rank it is about is added.
    """
    by_host = _unique(((h, lr), g) for h, lr, g in layout)

    def fill(f: FileEvents, e: Event) -> Event:
        if e.kind not in ("worker_failed", "launcher_exit", "worker_spawned") or not e.host:
            return e
        lr = _int(e.get("local_rank"))
        g = by_host.get((short_host(e.host), lr)) if lr is not None else None
        return e if g is None else _with(f, e, "fields", {**e.fields, "placed_rank": g})

    _apply(files, fill)


def _node_of(key: tuple[str, ...]) -> tuple[str, ...]:
    """The agent a node key belongs to: a `--log-dir` tree's restart attempts (`attempt_<n>`) are the same
    node's workers again, numbered by the same local ranks (log-formats.md section 3.1)."""
    return key[:3] if key[0] == "tree" else key


def _other_node_stated(e: Event) -> bool:
    """`e` says the job has a node other than the first: a rendezvous result or launch config of node rank
    above 0 or of more than one node (log-formats.md section 3.5), or a failure table pairing a local rank
    with another global rank."""
    if e.kind in ("launch_config", "world_info"):
        node, nnodes = _int(e.get("node_rank")), _int(e.get("nnodes"))
        return (node is not None and node > 0) or (nnodes is not None and nnodes > 1)
    if e.kind == "child_failed":
        g, lr = _int(e.get("failed_rank")), _int(e.get("local_rank"))
        return g is not None and lr is not None and g != lr
    return False


def _single_node(files: list[FileEvents]) -> tuple[str, ...] | None:
    """The one torchrun agent's node key whose local ranks are the global ranks, when the job shows one node.

    torchrun numbers a node's workers node_rank * nproc_per_node + local_rank (log-formats.md section 3.5,
    the rendezvous result), and `--nnodes` defaults to `1:1` (torch/distributed/run.py): on a single node
    the local rank is the global rank. Read so only when every local rank of the job comes from one agent
    (one `--tee` console or one `--log_dir` tree, whose restart attempts count as that agent's) and nothing
    names a second node: no node rank above 0 or
    node count above 1, no second host, no global rank or world size beyond that agent's local ranks, no
    failure table pairing a local rank with another global rank.
    """
    keys: set[tuple[str, ...]] = set()
    # A stack dump's local rank (py-spy's `--local_rank=<l>` argv) is its process's, not a stream of an
    # agent's: it neither adds an agent nor stands for one, unless nothing else names a local rank.
    dump_keys: set[tuple[str, ...]] = set()
    hosts: set[str] = set()
    top_local = -1
    beyond = 0   # the world the ranks and sizes stated need (a running maximum: a big job has many)
    for f in files:
        for e in f.events:
            if e.local_rank is not None and not is_agent_event(e):
                (dump_keys if e.parser in DUMP_PARSERS else keys).add(_node_of(_node_key(f, e)))
                top_local = max(top_local, e.local_rank)
            elif e.kind == "child_failed" and e.local_rank is None:
                # the agent's own failure table: `rank: <l> (local_rank: <l>)` says its node runs local
                # rank l (section 3.6), also of a worker that died before printing a line of its own
                # (a failure at init). A row pairing another global rank ends the search below.
                lr, g = _int(e.get("local_rank")), _int(e.get("failed_rank"))
                if lr is not None and g == lr:
                    top_local = max(top_local, lr)
            for h in (e.host, e.get("nccl_host"), e.get("failed_host") if e.kind == "child_failed" else None):
                if isinstance(h, str) and h:
                    hosts.add(short_host(h))
            if _other_node_stated(e):
                return None
            if e.kind in ("launch_config", "world_info"):
                beyond = max(beyond, _int(e.get("world_size")) or 0)
            for r in (e.rank, _int(e.get("stated_rank")), _int(e.get("global_rank")),
                      _int(e.get("failed_rank"))):
                if r is not None and r >= beyond:
                    beyond = r + 1     # a global rank needs a world at least this big
            beyond = max(beyond, _int(e.get("nranks")) or 0)
        if len(keys) > 1 or len(hosts) > 1:
            return None   # (known at once: a big multi-node job need not be read to its end)
    if not keys and len(dump_keys) == 1:
        keys = dump_keys
    if len(keys) != 1 or len(hosts) > 1 or top_local < 0:
        return None
    if beyond > top_local + 1:
        return None
    return next(iter(keys))


def _name_rank_only(f: FileEvents, e: Event) -> bool:
    """`e`'s rank is only the number in its file's name (`worker-0.log`): no `[rankN]:` line of the file
    states that rank, and no launcher tag gave it."""
    r = f.origin.rank
    return r is not None and e.rank == r and r not in f.stated_ranks and e.local_rank is None and not e.writer


def _nccl_pids(files: list[FileEvents]) -> None:
    """NCCL `host:pid:tid` lines -> rank: the largest communicator's init lines, or the pid's ranked lines.

    The `Init START`/`Init COMPLETE` line of the world communicator is the process's own statement of its
    rank (`comm <ptr> rank <r> nranks <n>`, log-formats.md section 4.3; NVIDIA/nccl src/init.cc): it wins
    over a rank that only a file's name gave its lines. A pod's or node's console named `worker-0.log`
    holds the NCCL lines of all its local processes, each with its own pid; the pid whose init line says
    rank 3 is rank 3 there, not the name's rank 0.
    """
    events = [e for f in files for e in f.events]
    world = max((_int(e.get("nranks")) or 0 for e in events
                 if e.kind == "nccl_comm_init" and not split_comm(e)), default=0)
    init_pairs: set[tuple[Hashable, int]] = set()
    ranked: list[tuple[tuple[Hashable, int], bool]] = []
    for f in files:
        for e in f.events:
            host, pid = e.get("nccl_host"), _int(e.get("pid"))
            if not isinstance(host, str) or pid is None:
                continue
            if e.kind == "nccl_comm_init" and world and _int(e.get("nranks")) == world and not split_comm(e):
                r = _int(e.get("comm_rank"))
                if r is not None:
                    init_pairs.add(((short_host(host), pid), r))
            elif e.rank is not None and (f.origin.rank is not None or f.origin.local_rank is not None):
                ranked.append((((short_host(host), pid), e.rank), _name_rank_only(f, e)))
    by_init = _unique(init_pairs)
    pairs: set[tuple[Hashable, int]] = set(init_pairs)   # (each pair once: a big job repeats them per line)
    # A name-given rank does not contest what the pid's own init line states.
    pairs.update(p for p, by_name in ranked if not (by_name and p[0] in by_init))
    for e in events:
        if e.kind == "child_failed":
            g, pid, h = _int(e.get("failed_rank")), _int(e.get("pid")), e.get("failed_host")
            if g is not None and pid is not None and isinstance(h, str) and h:
                pairs.add(((short_host(h), pid), g))
    # PyTorch's NCCL error ends with `Last error:` and the text of the last NCCL WARN of its own process
    # (log-formats.md section 1.6): a ranked error whose last error only one host:pid warned is that pid's.
    warned: dict[str, set[tuple[str, int]]] = {}
    for e in events:
        msg, host, pid = e.get("message"), e.get("nccl_host"), _int(e.get("pid"))
        if e.kind == "nccl_warn" and isinstance(msg, str) and isinstance(host, str) and pid is not None:
            warned.setdefault(msg.strip(), set()).add((short_host(host), pid))
    if warned:
        for e in events:
            last = e.get("last_error")
            if e.kind == "nccl_error" and e.rank is not None and isinstance(last, str):
                procs = warned.get(last.strip(), set())
                if len(procs) == 1:
                    pairs.add((next(iter(procs)), e.rank))
    by_pid = _unique(pairs)
    # A process that states its own pid (`world_info` `worker_pid`: a rank's `pid=<n>` print, with the rank
    # of its line; Ray Train's worker list, with `worker_rank`) names the rank of that pid, host unknown.
    bare: set[tuple[int, int]] = {(k[1], r) for k, r in pairs if isinstance(k, tuple)}
    for e in events:
        if e.kind == "world_info" and (wp := _int(e.get("worker_pid"))) is not None:
            wr = _int(e.get("worker_rank"))
            r = wr if wr is not None else (None if is_agent_event(e) else e.rank)
            if r is not None:
                bare.add((wp, r))
    # A stack dump names its process (`Process <pid>: ...`) but rarely its host: a pid that maps to one
    # rank across every host of the job is enough, one that two hosts' ranks share is not.
    by_bare_pid = _unique(bare)

    def fill(f: FileEvents, e: Event) -> Event:
        if e.rank is not None:
            if not by_init or not _name_rank_only(f, e):
                return e
            host, pid = e.get("nccl_host"), _int(e.get("pid"))
            if not isinstance(host, str) or pid is None or e.parser in DUMP_PARSERS:
                return e
            rank = by_init.get((short_host(host), pid))
            return e if rank is None or rank == e.rank else _with(f, e, "rank", rank)
        host, pid = e.get("nccl_host"), _int(e.get("pid"))
        if pid is not None and e.parser in DUMP_PARSERS:
            host = host if isinstance(host, str) else e.host
            rank = by_pid.get((short_host(host), pid)) if host else None
            if rank is None:
                rank = by_bare_pid.get(pid)
            return e if rank is None else _with(f, e, "rank", rank)
        if not isinstance(host, str) or pid is None:
            return e
        rank = by_pid.get((short_host(host), pid))
        return e if rank is None else _with(f, e, "rank", rank)

    _apply(files, fill)


def _stated_ranks(files: list[FileEvents]) -> None:
    """Last resort: a message that names its writer's own rank (`stated_rank`, set by the parser).

    `[Rank <r>]` is a rank within the message's process group, and from torch 2.3 the work-level one is
    whichever work logged first (log-formats.md sections 1.2, 9.1; failure-signatures.md section 0.5): only
    the `[rank<G>]:` envelope is the global rank. When a process's watchdog message carries the envelope
    and the same stream then repeats `[Rank <r>]` without it (the `what():` of the exception the watchdog
    throws, section 1.5-1.6), that line is G's, not rank r's: an earlier line of the same stream whose
    `[rank<G>]:` writer stated the same `[Rank <r>]` with G != r names it, if only one G did.
    """
    for f in files:
        aliases: dict[tuple[Any, int], dict[int, int]] = {}   # (stream, stated) -> {writer G: first line}
        for e in f.events:
            r = _int(e.get("stated_rank"))
            if e.rank is not None and r is not None and e.rank != r and not is_agent_event(e):
                first = aliases.setdefault((e.writer or e.host, r), {})
                first.setdefault(e.rank, e.line)

        def fill(f: FileEvents, e: Event, aliases: dict[tuple[Any, int], dict[int, int]] = aliases) -> Event:
            r = _int(e.get("stated_rank"))
            if e.rank is not None or r is None:
                return e
            writers = [g for g, line in aliases.get((e.writer or e.host, r), {}).items() if line < e.line]
            return _with(f, e, "rank", writers[0] if len(writers) == 1 else r)

        _apply([f], fill)


def _tagged_writers(files: list[FileEvents]) -> None:
    """A traceback behind a per-line prefix the reader does not know belongs to the rank that the lines
    behind the same prefix state as their writer's own.

    The traceback parser learns such a prefix (`job-5c1/worker-2 | `, `host17 | `) from the traceback's own
    lines (`writer_tag`); a line that carries it is that writer's. When the lines of the same file behind
    that prefix state exactly one rank as their writer's (`stated_rank`: a launch environment's `RANK=<n>`,
    a `[<r>] is setting up NCCL communicator` failure, ...), the traceback is that rank's (failure-signatures
    section 6: the crashed rank is the one that printed the non-distributed traceback)."""
    for f in files:
        tags = {e.get("writer_tag") for e in f.events
                if e.kind == "exception" and e.rank is None and isinstance(e.get("writer_tag"), str)
                and e.get("writer_tag")}
        if not tags:
            continue
        stated: dict[str, set[int]] = {t: set() for t in tags}
        for e in f.events:
            r = _int(e.get("stated_rank"))
            if r is None or is_agent_event(e):
                continue
            for t in tags:
                if e.text.startswith(t):
                    stated[t].add(r)
        owner = {t: next(iter(rs)) for t, rs in stated.items() if len(rs) == 1}
        if not owner:
            continue

        _apply([f], _tag_filler(owner))


# Ray's prefix on a worker's lines (`(<Actor> pid=<pid>[, ip=<ip>]) `, log-formats.md section 9.2) is read by
# ingest/prefix.py into the writer `ray <Actor> <pid>` (model.ray_writer).
RAY_WRITER_RE = re.compile(r"^ray [\w.]+ (?P<pid>\d{1,10})$")


def _failure_table_callstacks(files: list[FileEvents]) -> None:
    """Events read from the lines of a worker's callstack in torchrun's failure table -> that worker's rank.

    The agent prints each failed worker's error.json callstack under its entry's `traceback :` field
    (log-formats.md section 3.6; torch/distributed/elastic/multiprocessing/errors
    `ChildFailedError.format_msg`);
    the entry names the worker's global rank, so what other parsers read from those lines (a DataLoader
    worker's death, an OOM, a CUDA error ending the callstack) is that worker's own output relayed. Without
    this, a console that shows only some ranks (`--local-ranks-filter`, `--redirects`) leaves the relayed
    fault of a hidden rank without an owner.
    """
    for f in files:
        spans = sorted((e.line, last, e.rank) for e in f.events
                       if e.kind == "error_file" and e.parser == "elastic" and e.rank is not None
                       and isinstance(last := e.get("last_line"), int) and last > e.line)
        if spans:
            _apply([f], _span_filler(spans))


def _span_rank(spans: list[tuple[int, int, int]], starts: list[int], line: int) -> int | None:
    """The rank of the (first, last line, rank) span of `spans` (sorted; `starts` their first lines) that
    holds `line`, else None."""
    k = bisect.bisect_right(starts, line) - 1
    return spans[k][2] if k >= 0 and spans[k][0] <= line <= spans[k][1] else None


def _span_filler(spans: list[tuple[int, int, int]]) -> Callable[[FileEvents, Event], Event]:
    """Give a rank-less event, not the agent's own, the rank of the (first, last line) span it lies in."""
    starts = [a for a, _, _ in spans]

    def fill(f: FileEvents, e: Event) -> Event:
        if e.rank is not None or is_agent_event(e):
            return e
        r = _span_rank(spans, starts, e.line)
        return e if r is None else _with(f, e, "rank", r)
    return fill


def _ray_workers(files: list[FileEvents]) -> None:
    """Ray worker processes -> ranks, by pid.

    A Ray worker's lines carry its pid, not its rank (log-formats.md section 9.2). The rank comes from what a
    worker states about itself behind that prefix (Ray Train's `Setting up process group for: ... [rank=<r>,
    ...]`, a `[rank<r>]:` c10d envelope, a `RANK=` echo) or from Ray Train's worker list (`pid=<pid>)
    world_rank=<r>`); a pid that maps to one rank gives that rank to the rest of the worker's lines. A
    traceback the driver prints under `RayTaskError(...) ... (pid=<pid>, ...)` is that process's (the last
    such line of a chain names the process where the exception was raised): failure-signatures.md section 6,
    the crashed rank is the one whose process raised the non-distributed exception.
    """
    pairs: set[tuple[int, int]] = set()
    for f in files:
        for e in f.events:
            if e.kind == "world_info":
                wp, wr = _int(e.get("worker_pid")), _int(e.get("worker_rank"))
                if wp is not None and wr is not None:
                    pairs.add((wp, wr))
            if not (e.writer and e.writer.startswith("ray ")):
                continue
            m = RAY_WRITER_RE.match(e.writer)
            if m is None or is_agent_event(e):
                continue
            r = _int(e.get("stated_rank"))
            if r is None and e.rank is not None and not _name_rank_only(f, e):
                r = e.rank
            if r is not None:
                pairs.add((int(m["pid"]), r))
    by_pid = _unique(pairs)
    if not by_pid:
        return
    for f in files:
        task_errors = sorted((e.line, int(m["pid"])) for e in f.events
                             if "RayTaskError" in e.text and (m := RAY_TASK_ERROR_RE.search(e.text)))
        spans: list[tuple[int, int, int]] = []   # (first line, last line, rank) of a worker's traceback
        if task_errors:
            # A traceback's event sits at its first line; the events other parsers read from its last line
            # share that line's text.
            lines_of: dict[str, list[int]] = {}
            for e in f.events:
                lines_of.setdefault(e.text, []).append(e.line)
            for lines in lines_of.values():
                lines.sort()
            error_lines = [line for line, _ in task_errors]
            for exc in f.events:
                if exc.kind != "exception" or exc.rank is not None:
                    continue
                same = lines_of[exc.text]
                i = bisect.bisect_right(same, exc.line)
                end = same[i] if i < len(same) else exc.line
                j = bisect.bisect_right(error_lines, end)   # the last RayTaskError line up to `end`
                if j and error_lines[j - 1] >= exc.line:
                    rank = by_pid.get(task_errors[j - 1][1])
                    if rank is not None:
                        spans.append((exc.line, end, rank))
        _apply([f], _ray_filler(sorted(spans), by_pid))


def _ray_filler(spans: list[tuple[int, int, int]], by_pid: dict[Hashable, int]
                ) -> Callable[[FileEvents, Event], Event]:
    """Give a rank-less event the rank of the worker traceback span it lies in, else its Ray writer's."""
    starts = [a for a, _, _ in spans]

    def fill(f: FileEvents, e: Event) -> Event:
        if e.rank is not None or is_agent_event(e):
            return e
        r = _span_rank(spans, starts, e.line)
        if r is None and e.writer and e.writer.startswith("ray "):
            m = RAY_WRITER_RE.match(e.writer)
            r = by_pid.get(int(m["pid"])) if m else None
        return e if r is None else _with(f, e, "rank", r)
    return fill


def _tag_filler(owner: dict[str, int]) -> Callable[[FileEvents, Event], Event]:
    """Give a rank-less exception behind a learned prefix of `owner` that prefix's rank."""
    def fill(f: FileEvents, e: Event) -> Event:
        t = e.get("writer_tag") if e.kind == "exception" and e.rank is None else None
        return _with(f, e, "rank", owner[t]) if isinstance(t, str) and t in owner else e
    return fill


def _oom_device_index(files: list[FileEvents]) -> None:
    """A rank-less CUDA OOM naming `GPU <d>`, d > 0, in a one-node torchrun job belongs to rank d.

    The allocator's message names the device ordinal inside the process's visible set (log-formats.md
    section 5.2). torchrun gives every worker of a node the same `CUDA_VISIBLE_DEVICES` and the script
    picks `cuda:<LOCAL_RANK>`, so `d` is the local rank, and on node 0 (whose ranks are its local ranks,
    section 3.5) the global rank (failure-signatures.md section 5.1, "Attributing GPU <d> to a rank").
    DeepSpeed's launcher (deepspeed/launcher/launch.py `main`) does the same: every child of a node gets the
    node's GPU list as `CUDA_VISIBLE_DEVICES` and `--local_rank=<i>`.
    Read so only when a torchrun agent's or a DeepSpeed launcher's lines are there, nothing names a second
    node (no second host, no node rank above 0 or node count above 1, no failure table pairing a local rank
    with another global rank), and either the ranks the logs state include 0 and d (another node's console
    states neither) or the launcher states a one-node job of more than d workers (`--standalone`,
    `--nnodes=1`, DeepSpeed's `nnodes=1, num_local_procs=<k>`). `GPU 0`
    stays rank-less: it is also what every rank prints when each is given one device of its own (Slurm,
    Kubernetes) or when ranks share device 0 (section 5.1)."""
    ooms = [(f, e) for f in files for e in f.events
            if e.kind == "oom" and e.rank is None and e.get("device") == "cuda"
            and (_int(e.get("gpu")) or 0) > 0]
    if not ooms:
        return
    agent, hosts, ranks = False, set(), set()
    one_node = 0   # the workers a launcher says its one-node job runs (0: no such statement)
    for f in files:
        for e in f.events:
            if e.kind in ("worker_failed", "child_failed") or (is_agent_event(e) and e.parser == "elastic"):
                agent = True
            if e.get("launcher") == "deepspeed" and e.kind in ("worker_spawned", "launcher_exit",
                                                                 "launch_config"):
                agent = True
            if e.kind == "launch_config" and _int(e.get("nnodes")) == 1:
                one_node = max(one_node, _int(e.get("nproc_per_node")) or 0)
            for h in (e.host, e.get("nccl_host")):
                if isinstance(h, str) and h:
                    hosts.add(short_host(h))
            if _other_node_stated(e):
                return
            if e.rank is not None and not is_agent_event(e):
                ranks.add(e.rank)
    if not agent or len(hosts) > 1:
        return
    gpus = {_int(e.get("gpu")) for _, e in ooms}
    d = next(iter(gpus))
    if len(gpus) != 1 or d is None:
        return
    if not ({0, d} <= ranks or d < one_node):
        return
    targets = {id(e) for _, e in ooms}

    def fill(f: FileEvents, e: Event) -> Event:
        return _with(f, e, "rank", d) if id(e) in targets else e

    _apply(files, fill)


def _self_announced_rank(files: list[FileEvents]) -> None:
    """A file in which one process announced its own global rank (`rank_init`: torchvision's `| distributed
    init (rank <r>)`, a `global rank <r> of <world>` banner) is that process's file when nothing in it says
    otherwise: every event it holds with a rank has that rank, it announces no other, and it does not show
    several processes (a console that merges ranks, a launcher's). Its events without a rank are that rank's
    (log-formats.md section 9: a per-rank file a script writes under a name of its own choosing)."""
    for f in files:
        said = {_int(e.get("global_rank")) for e in f.events if e.kind == "rank_init"}
        r = next(iter(said)) if len(said) == 1 else None
        if r is None or f.stated_ranks - {r} or several_processes(f.events):
            continue
        if any(e.rank is not None and e.rank != r for e in f.events):
            continue
        _apply([f], _rank_filler(r))


def _rank_filler(r: int) -> Callable[[FileEvents, Event], Event]:
    """Give every rank-less event rank `r`."""
    def fill(f: FileEvents, e: Event) -> Event:
        return e if e.rank is not None else _with(f, e, "rank", r)
    return fill


_RESUMED_KINDS = frozenset({"run_finished", "agent_succeeded"})
_REPORT_KINDS = frozenset({"worker_failed", "closing_signal"})


def _console_attempts(files: list[FileEvents]) -> None:
    """Number the restart attempts of a torchrun console (`--max-restarts`), as a `--log-dir` tree's
    `attempt_<n>` folders number them (ingest/origin.py).

    When a worker fails, the agent's monitor loop (torch/distributed/elastic/agent/server/api.py
    `_invoke_run`) stops the others (`Sending process P closing signal SIGTERM`, elastic/multiprocessing/
    api.py `_close`), reports the failed one (`failed (exitcode: N) local_rank: L (pid: P)`) and, with
    restarts left, starts a new worker group (`Worker group FAILED. <k>/<m> attempts left; will restart
    worker group`, logged at INFO only, so absent from a console at the default level). An attempt
    therefore ends at a restart line, or at a report of the agent when a later report names only new
    worker pids (new processes: the workers were started again), or when after the last report the
    workers finish (a finish line, the agent's success line) and no failure table (ChildFailedError)
    closes the console. A restart for a membership change (a node joined or left) is a report of closing
    signals alone (`_restart_cuts`). Events of a stream with no such boundary keep no attempt.
    """
    for f in files:
        if f.origin.attempt is not None or not any(e.kind in ("worker_failed", "worker_group_restart")
                                                   for e in f.events):
            continue
        by_scope: dict[str, list[Event]] = {}
        for e in f.events:
            by_scope.setdefault(_scope(e), []).append(e)
        bounds: dict[str, list[int]] = {}
        for scope, events in by_scope.items():
            cuts = _restart_cuts(sorted(events, key=lambda e: e.line))
            if cuts:
                bounds[scope] = cuts
        if not bounds:
            continue
        f.events = [_with(f, e, "attempt", bisect.bisect_left(bounds[_scope(e)], e.line))
                    if e.attempt is None and _scope(e) in bounds else e
                    for e in f.events]


def _restart_cuts(events: list[Event]) -> list[int]:
    """The lines (ascending) after which an agent's stream starts a new restart attempt (see
    `_console_attempts`).

    One poll's report is the closing lines of the other workers and the failed worker's line (elastic/
    multiprocessing/api.py `SubprocessContext._poll`: `close()`, then `failed (exitcode: ...)`); a worker's
    buffered prints may land between them, so a report ends at its failed line, not at the first worker
    line. A later report whose worker pids are all new was written about new processes."""
    cuts: set[int] = set()
    groups: list[tuple[int, set[int]]] = []   # reports: (line of the failed line, worker pids named)
    pids: set[int] = set()
    failed: int | None = None
    # An agent that restarts its workers for a membership change (a node joined or left: `Detected <n> new
    # nodes ...; will restart worker group`, INFO) stops them with closing signals and no failed line
    # (agent/server/api.py `_restart_workers` -> `_stop_workers`). Such a report is told by workers writing
    # after its closing lines and no failed line following them before the agent closes workers again
    # (seconds later: one `_close` signals its workers in one loop) or the console ends.
    closed: Event | None = None
    written = False
    # (a writer's last line, ingest/tail.py, is no boundary's evidence: its stream's events say when it wrote)
    events = [e for e in events if e.kind != "last_line"]
    for e in events:
        if e.kind == "worker_group_restart":
            cuts.add(e.line)
        if e.kind in _REPORT_KINDS:
            if (e.kind == "closing_signal" and failed is None and closed is not None and written
                    and e.time is not None and closed.time is not None and e.time - closed.time > 1.0):
                groups.append((closed.line, pids))
                pids = set()
            pid = _int(e.get("pid"))
            if pid is not None:
                pids.add(pid)
            if e.kind == "worker_failed":
                failed = e.line
                closed = None
            else:
                closed, written = e, False
        elif not is_agent_event(e):
            written = True
            if failed is not None:
                groups.append((failed, pids))
                pids, failed, closed = set(), None, None
    if failed is not None:
        groups.append((failed, pids))
    elif closed is not None and written and groups:
        groups.append((closed.line, pids))
    # A merged console of several agents (kubectl logs of two pods one after the other) shows other agents'
    # reports with other pids too: new workers are also told by a rank already seen before the report
    # writing again after it (that rank's process had ended).
    # (`events` are in line order and the reports' spans follow each other: one pass over the ranked lines)
    ranked = [(e.line, e.rank) for e in events if e.rank is not None and not is_agent_event(e)]
    seen: set[int] = set()
    before: set[int] = set()
    at = 0
    for (line, named), (nxt, later) in itertools.pairwise(groups):
        seen |= named
        while at < len(ranked) and ranked[at][0] < line:
            before.add(ranked[at][1])
            at += 1
        again = False
        k = at
        while k < len(ranked) and ranked[k][0] < nxt:
            if ranked[k][0] > line and ranked[k][1] in before:
                again = True
                break
            k += 1
        if later and seen and not later & seen and again:
            cuts.add(line)
    if groups:
        # after the last report, the workers trained to their end and no failure table closed the run
        end = groups[-1][0]
        after = [e for e in events if e.line > end]
        if (any(e.kind in _RESUMED_KINDS for e in after)
                and not any(e.kind in ("child_failed", "launcher_exit") for e in after)):
            cuts.add(end)
    # a restart line right after the reports it follows is the same boundary
    out: list[int] = []
    lines = sorted(e.line for e in events if not is_agent_event(e))
    for c in sorted(cuts):
        if out and bisect.bisect_right(lines, c) == bisect.bisect_right(lines, out[-1]):
            out[-1] = c
        else:
            out.append(c)
    return out


def _only_exception_exit(files: list[FileEvents]) -> None:
    """An unprefixed Python traceback in an agent's console belongs to the agent's only worker that exited
    with code 1.

    A worker that dies of an uncaught Python exception exits with code 1 after printing its traceback;
    workers killed by a signal (the agent's SIGTERM, the watchdog's SIGABRT) print none (log-formats.md
    sections 3.5-3.6, J item 106; failure-signatures.md section 6). So when, in one file and launcher
    stream, the agent reports exactly one worker with exit code 1 (`failed (exitcode: 1)`, the failure
    table) and the table or a single-node job states its global rank, the exception lines of that stream
    that no prefix attributes and that precede the report are that rank's. Two workers with exit code 1,
    or no rank for the one, leave everything as it was. An agent that restarts its workers (`Worker group
    FAILED. <k>/<m> attempts left; will restart worker group`, section 3.5) starts new workers: each attempt
    of the stream is read on its own. DeepSpeed's launcher (deepspeed/launcher/launch.py `sigkill_handler`)
    logs the first of its workers to exit non-zero (`... '--local_rank=<l>'] exits with return code = 1`),
    kills the others and exits: one such line in a stream is that stream's only failed worker, and a
    launcher's layout of its host (`placed_rank`) states its global rank.
    """
    lone = _single_node(files)
    for f in files:
        scopes: dict[tuple[str, int], list[Event]] = {}
        # An attempt is the lines between two restart lines of its stream. By line number, not by event
        # order: a traceback's event is emitted when the traceback ends, after the agent lines that follow
        # it (the restart line among them).
        restarts: dict[str, list[int]] = {}
        for e in f.events:
            if e.kind == "worker_group_restart":
                restarts.setdefault(_scope(e), []).append(e.line)
        for lines in restarts.values():
            lines.sort()
        for e in f.events:
            scope = _scope(e)
            scopes.setdefault((scope, bisect.bisect_left(restarts.get(scope, []), e.line)), []).append(e)
        owner: dict[tuple[str, int], int] = {}
        for events in scopes.values():
            # The attempt's rendezvous result (section 3.5) maps this agent's local ranks to global ranks.
            agent_map = _unique(((lr,), g) for e in events for lr, g in world_local_pairs(e))
            pids: set[int] = set()
            ranks: set[int] = set()
            first_report: int | None = None
            deepspeed = 0   # DeepSpeed's exit lines: no pid, but one per launcher (it kills the rest)
            for e in events:
                ds = e.kind == "launcher_exit" and e.get("launcher") == "deepspeed"
                if _int(e.get("exitcode")) != 1 or (e.kind not in ("worker_failed", "child_failed")
                                                     and not ds):
                    continue
                deepspeed += ds
                pid = _int(e.get("pid"))
                if pid is not None:
                    pids.add(pid)
                g = _int(e.get("failed_rank")) if e.kind == "child_failed" else _int(e.get("placed_rank"))
                lr = _int(e.get("local_rank"))
                if g is None and lr is not None:
                    g = agent_map.get((lr,))
                if g is None and lr is not None and lone is not None and _node_of(_node_key(f, e)) == lone:
                    g = lr   # the job's only node: local rank = global rank (see _single_node)
                if g is not None:
                    ranks.add(g)
                line = e.line
                first_report = line if first_report is None else min(first_report, line)
            one_worker = len(pids) == 1 or (not pids and deepspeed == 1)
            if not one_worker or len(ranks) != 1 or first_report is None:
                continue
            rank = next(iter(ranks))
            free = [e for e in events if e.rank is None and e.local_rank is None and not is_agent_event(e)
                    and e.line < first_report]
            for exc in free:
                if exc.kind != "exception":
                    continue
                # The exception event sits at `Traceback (most recent call last):`; the events other
                # parsers read from its last line (`RuntimeError: CUDA error: ...`) share that line's text.
                end = min((e.line for e in free
                           if e is not exc and e.line >= exc.line and e.text == exc.text),
                          default=exc.line)
                for e in free:
                    if exc.line <= e.line <= end:
                        owner[(e.path, e.line)] = rank
        if owner:
            f.events = [_with(f, e, "rank", owner[(e.path, e.line)])
                        if e.rank is None and e.local_rank is None and not is_agent_event(e)
                        and (e.path, e.line) in owner else e
                        for e in f.events]


def _hosts(files: list[FileEvents]) -> None:
    """Hosts from NCCL envelopes, then rank -> host from every event that states both (a launcher's report of
    one task that is a rank names its node: srun's `srun: error: <node>: task <n>`, mpirun's `process rank
    <n> ... on node <node>`)."""
    def own(f: FileEvents, e: Event) -> Event:
        h = e.get("nccl_host")
        return _with(f, e, "host", h) if e.host is None and isinstance(h, str) and h else e

    _apply(files, own)
    _named_host_files(files)
    _host_aliases(files)
    seen: dict[int, set[str]] = {}
    for f in files:
        for e in f.events:
            pairs: list[tuple[int | None, object]] = [(e.rank, e.host)]
            if e.kind == "child_failed":
                pairs.append((_int(e.get("failed_rank")), e.get("failed_host")))
            elif e.kind == "world_info":
                pairs.append((_int(e.get("global_rank")), e.get("hostname")))
            elif e.rank is not None and e.get("tasks") == [e.rank]:
                # a launcher's exit line of one task that is this rank (srun, mpirun) names the task's node
                pairs.append((e.rank, e.get("task_host")))
            if e.kind in LAYOUT_KINDS:
                pairs.extend((g, h) for h, _, g in layout_of(e))
            for r, h in pairs:
                if r is not None and isinstance(h, str) and h:
                    seen.setdefault(r, set()).add(h)
    rank_host: dict[int, str] = {}
    for r, hs in seen.items():
        if len({short_host(h) for h in hs}) == 1:
            rank_host[r] = min(hs, key=lambda h: (len(h), h))

    def fill(f: FileEvents, e: Event) -> Event:
        if e.host is None and e.rank is not None and e.rank in rank_host:
            return _with(f, e, "host", rank_host[e.rank])
        return e

    _apply(files, fill)


def _host_aliases(files: list[FileEvents]) -> None:
    """One node under two names: a file named `gpu-node2.log` gives its lines the host `node2` (the name's
    `node<N>` word, ingest/origin.py) while a pdsh prefix, a `--log-dir` folder or NCCL's envelope names the
    node `gpu-node2`. A host name that is the last dash- or underscore-separated part of exactly one other
    host name of the job is that host (cluster names add a prefix to a node's number, never two nodes the
    same number); its events take the fuller name, so the node's ranks are one host's."""
    hosts = {e.host for f in files for e in f.events if e.host}
    if len(hosts) < 2:
        return
    ends: dict[str, set[str]] = {}   # a name's part after each dash or underscore -> the names ending so
    for h in hosts:
        for i, c in enumerate(h):
            if c in "-_" and i + 1 < len(h):
                ends.setdefault(h[i + 1:], set()).add(h)
    alias = {short: next(iter(ends[short])) for short in hosts if len(ends.get(short, ())) == 1}
    if not alias:
        return

    def fill(f: FileEvents, e: Event) -> Event:
        full = alias.get(e.host) if e.host else None
        return _with(f, e, "host", full) if full is not None else e

    _apply(files, fill)


def _named_host_files(files: list[FileEvents]) -> None:
    """A file named after the one host its lines name is that host's output: its ranked lines without a
    host are on it.

    NCCL prints the host of every process in its envelope (`<host>:<pid>:<tid>`, log-formats.md section
    4.1); a node's collected output (`node-b.out`, `nccl.node-c.7731`, `<host>.log`) holds the lines of the
    processes that node ran, NCCL's and the ranks' own `[rankN]:` lines alike. When every host-bearing line
    of the file names one host and the file's name carries that host as a word of its own, the ranks whose
    lines the file holds ran there (the node-level facts, e.g. an interface missing on that node,
    failure-signatures.md section 0.2 R5, then reach its ranks)."""
    for f in files:
        base = f.display.replace("\\", "/").rsplit("/", 1)[-1]
        hosts = {short_host(e.host) for e in f.events if e.host}
        if len(hosts) != 1:
            continue
        host = next(iter(hosts))
        if len(host) < 2 or not re.search(r"(?:^|[^\w-])" + re.escape(host) + r"(?![\w-])", base):
            continue
        if not any(e.rank is not None and e.host is None for e in f.events):
            continue

        def fill(f: FileEvents, e: Event, host: str = host) -> Event:
            return _with(f, e, "host", host) if e.rank is not None and e.host is None else e

        _apply([f], fill)


def _yearless(t: float | None) -> bool:
    return t is not None and YEAR2000 <= t < YEAR2001


def _with_year(t: float, year: int) -> float | None:
    d = dt.datetime.fromtimestamp(t, dt.timezone.utc)
    try:
        return d.replace(year=year).timestamp()
    except ValueError:   # Feb 29 in a common year
        return None


def rebase_years(files: list[FileEvents]) -> None:
    """Date yearless (c10/glog/journal) stamps job-wide, across the Dec -> Jan boundary; never from mtimes.

    With a dated stamp anywhere in the job, each yearless stamp takes the year that puts it closest to
    the median dated stamp. Without one, the stamps stay in year 2000, except that when they split
    into two groups more than half a year apart, the later-in-year group is moved to 1999 (it was
    December before a January).
    """
    dated = sorted(x for f in files if f.dated for x in f.dated)
    stamps = sorted({e.time for f in files for e in f.events if e.time is not None and _yearless(e.time)})
    if not stamps:
        return
    shift: dict[float, float] = {}
    if dated:
        ref = statistics.median_low(dated)
        year = dt.datetime.fromtimestamp(ref, dt.timezone.utc).year
        for t in stamps:
            options = [x for y in (year - 1, year, year + 1) if (x := _with_year(t, y)) is not None]
            if options:
                shift[t] = min(options, key=lambda x: (abs(x - ref), x))
    else:
        gaps = [(b - a, i) for i, (a, b) in enumerate(itertools.pairwise(stamps))]
        big = max(gaps, default=(0.0, -1))
        wraps = big[0] > HALF_YEAR and stamps[-1] - stamps[0] - big[0] < HALF_YEAR
        if wraps:
            for t in stamps[big[1] + 1:]:
                moved = _with_year(t, 1999)
                if moved is not None:
                    shift[t] = moved
    if not shift:
        return

    def fill(f: FileEvents, e: Event) -> Event:
        if e.time is not None and e.time in shift:
            return _with(f, e, "time", shift[e.time])
        return e

    _apply(files, fill)
