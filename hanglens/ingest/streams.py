"""Whose output one stream is: the single rank a file's (or a launcher-prefixed stream's) own lines state.

A stream is a whole file, or the lines one launcher prefix marks in it (`writer`: Open MPI's
`[1,3]<stderr>:`, a torchrun `--tee` `[default1]:`, a SLURM `3: `, a pdsh `host: `). Its unranked events
(a CUDA error, an NCCL error, a traceback without a `[rankN]:` prefix) belong to rank R when:

- the stream is one Open MPI process's output (`[<job>,<R>]<stream>:`, mpirun tags each process's
  stdout/stderr; reference log-formats.md section 9.3) and nothing in the file says mpirun started
  launchers instead of ranks (torchrun's agent lines, `--tee` prefixes, a rank other than R in the stream);
- or every line of the stream that states its writer's global rank states R (`[rankN]:`, `[rank N]`, the
  default process group's `[PG ... Rank R]` / work prefix `[Rank R]`, `Process Group destroyed on rank R`,
  a `RANK=R` echo, a torchrun command line with `--nproc-per-node 1` and `--node-rank R`), and nothing in it
  shows a second process: no other rank stated, no two local ranks, no two NCCL `host:pid`s, no two
  tracebacks or the same exception twice, no launcher that ran several workers into one console
  (`--nproc-per-node` > 1, or torchrun's OMP_NUM_THREADS banner, which it prints only then:
  torch/distributed/run.py; `torch.multiprocessing.spawn`'s parent terminating processes besides the
  failed one, torch/multiprocessing/spawn.py).

A stream with no rank statement, or with two, gives nothing: absence is never evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hanglens.model import AGENT_EVENT_KINDS, Event, InputFile, short_host

DUMP_PARSERS = frozenset({"pyspy"})   # their pids are the dumped processes', not the file writer's


def non_negative_int(value: object) -> int | None:
    """An integer field's value; ranks, pids and sizes are never negative, so a negative one is None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


_int = non_negative_int


def outer_stream(writer: str | None) -> str:
    """The outer launcher stream a writer came through (`task 1` of `srun -l`'s `task 1/tee default0`,
    `host gpu-07` of pdsh, `mpi 1,3` of Open MPI), "" for none or a bare torchrun `--tee` tag: in a console
    that merges several nodes' agents, the agent whose workers a `[defaultN]:` local rank counts
    (log-formats.md section 9.3)."""
    if not writer:
        return ""
    outer = writer.split("/", 1)[0]
    return "" if outer.startswith("tee ") else outer


def is_agent_event(e: Event) -> bool:
    """Lines the torchrun agent (not a worker) writes: they must not inherit a worker's rank."""
    if e.kind in AGENT_EVENT_KINDS or e.parser == "elastic":
        return True   # every line the elastic parser reads is the agent's or a launcher's
    if e.kind not in ("exception", "error_line"):
        return False
    # Exceptions of torch.distributed.elastic are raised in the agent, never in a worker: ChildFailedError,
    # the SignalException of its signal handler (elastic/multiprocessing/api.py `_terminate_process_handler`),
    # the rendezvous errors of its monitor loop (elastic/agent/server/api.py `_invoke_run`).
    exc_type = str(e.get("exc_type") or "")
    return ("ChildFailedError" in e.text or exc_type.startswith("torch.distributed.elastic.")
            or is_spawn_parent_exception(e))


# torch/multiprocessing/spawn.py `ProcessContext.join`: the parent of mp.spawn / mp.start_processes raises
# these after terminating its other processes; they report a child's failure (parsers/spawn.py reads which),
# like torchrun's ChildFailedError, and are nobody's own crash.
SPAWN_PARENT_EXCEPTIONS = ("ProcessRaisedException", "ProcessExitedException")


def is_spawn_parent_exception(e: Event) -> bool:
    """The mp.spawn parent's own traceback reporting a failed child process."""
    return e.kind == "exception" and str(e.get("exc_type") or "").endswith(SPAWN_PARENT_EXCEPTIONS)


def _claims(events: Iterable[Event]) -> set[int]:
    """Global ranks the stream's own lines state as their writer's."""
    out: set[int] = set()
    for e in events:
        if e.kind == "launch_config":
            nproc, node = _int(e.get("nproc_per_node")), _int(e.get("node_rank"))
            if nproc == 1 and node is not None:
                out.add(node)   # the node's only worker is rank node_rank * 1 + 0
            continue
        if is_agent_event(e):
            continue
        if e.rank is not None:
            out.add(e.rank)
        r = _int(e.get("stated_rank"))
        if r is not None:
            out.add(r)
    return out


def dumped_pid(e: Event) -> int | None:
    """The process a stack dump's event belongs to: py-spy's `Process <pid>:` header heads each dumped
    process's threads (failure-signatures.md section 16.4), so two pids in one file are two processes' stacks
    pasted together; None for any other event."""
    return _int(e.get("pid")) if e.kind == "stack_dump" else None


def several_processes(events: list[Event]) -> bool:
    """Does the stream show the output of more than one process (or a launcher of several)?"""
    local_ranks: set[int] = set()
    pids: set[tuple[str, int]] = set()
    exceptions: set[tuple[str, str]] = set()
    tracebacks = 0
    dumped: set[int] = set()
    for e in events:
        if (dpid := dumped_pid(e)) is not None:
            dumped.add(dpid)
        if e.kind == "launch_config":
            if e.get("several_workers"):
                return True
            continue
        if e.kind == "child_failed":
            continue    # judged by the caller against the stream's rank
        if (e.kind == "launcher_exit" and e.get("launcher") == "mp.spawn"
                and (_int(e.get("stopped")) or 0) >= 1):
            # torch.multiprocessing.spawn's parent terminated processes still alive besides the failed one
            # (`Terminating process <pid> via signal SIGTERM`, torch/multiprocessing/spawn.py
            # ProcessContext.join): it started several, and they all inherited its stdout and stderr.
            return True
        if is_agent_event(e):
            continue
        if e.local_rank is not None:
            local_ranks.add(e.local_rank)
        lr = _int(e.get("local_rank")) if e.kind == "world_info" else None
        if lr is not None:
            local_ranks.add(lr)
        host, pid = e.get("nccl_host"), _int(e.get("pid"))
        if isinstance(host, str) and pid is not None and e.parser not in DUMP_PARSERS:
            pids.add((host, pid))
        if e.kind == "exception" and e.get("exc_type") and e.get("message"):
            key = (str(e.get("exc_type")), str(e.get("message")))
            if key in exceptions:
                return True
            exceptions.add(key)
        if e.kind == "exception" and e.get("frames"):
            tracebacks += 1   # an uncaught exception ends its process: a second traceback is likely another's
    return len(local_ranks) > 1 or len(pids) > 1 or tracebacks > 1 or len(dumped) > 1


def is_mpirun_exit(e: Event) -> bool:
    """mpirun's own report of the first failed process (parsers/mpirun.py): mpirun's line, not a launcher
    that mpirun started."""
    return e.kind == "launcher_exit" and e.get("launcher") == "mpirun"


def mpirun_starts_ranks(events: list[Event]) -> bool:
    """Are the MPI ranks mpirun names in a file the job's global ranks? Yes unless the file shows a launcher
    that mpirun started in its place (torchrun's agent lines, `--tee` prefixes, local ranks: then an MPI rank
    is a node, as an `srun` task is, log-formats.md section 9.3)."""
    return not _launcher_in_file(events) and not any(e.local_rank is not None for e in events)


def _launcher_in_file(events: list[Event]) -> bool:
    """The file shows a launcher of its own between mpirun (or srun) and the training processes: torchrun's
    agent lines or its `--tee` prefixes (mpirun's own report is not one)."""
    return any((e.kind in AGENT_EVENT_KINDS and not is_mpirun_exit(e))
               or (e.writer is not None and "tee " in e.writer) for e in events)


def _mpi_is_rank(mpi: int, events: list[Event], launcher_in_file: bool) -> bool:
    """An Open MPI tag's rank is the writer's global rank unless the file shows mpirun started launchers."""
    if launcher_in_file:
        return False
    for e in events:
        if is_agent_event(e) or e.local_rank is not None:
            return False
    return _claims(events) <= {mpi}


def _tasks_are_ranks(groups: Mapping[str | None, list[Event]], task_ranks: Mapping[str, int]) -> bool:
    """Are a SLURM `srun -l` file's task ids its ranks? Yes when srun started the workers themselves: no
    task's stream shows a launcher of its own (torchrun's agent lines or `--tee` prefixes under the label:
    then the task id is the node index, log-formats.md section 9.3), none shows a second process, and every
    rank a task's lines state is its task id."""
    labelled = [(task_ranks[w], evs) for w, evs in groups.items() if w is not None and w in task_ranks]
    if not labelled or any(w is not None and w.startswith("task ") and w not in task_ranks for w in groups):
        return False    # (a task label with a launcher's prefix under it: `3: [default1]:`)
    for task, evs in labelled:
        if any(is_agent_event(e) or e.local_rank is not None for e in evs):
            return False
        if not _claims(evs) <= {task} or several_processes(evs):
            return False
    return True


def tasks_are_ranks(events: list[Event], task_ranks: Mapping[str, int]) -> bool:
    """`_tasks_are_ranks` over a file's events grouped by writer: are its `srun -l` task ids its ranks?"""
    groups: dict[str | None, list[Event]] = {}
    for e in events:
        groups.setdefault(e.writer, []).append(e)
    return bool(task_ranks) and _tasks_are_ranks(groups, task_ranks)


def stream_ranks(events: list[Event], mpi_ranks: Mapping[str, int], envelope_ranks: set[int],
                 task_ranks: Mapping[str, int] | None = None) -> dict[str | None, int]:
    """writer -> the rank its stream states unambiguously (None: the file's unprefixed lines).

    `mpi_ranks` maps each Open MPI writer to its tag's rank; `envelope_ranks` are every `[rankN]:` rank
    the file holds, including lines no parser read (a file with two of them is not one writer's);
    `task_ranks` maps each SLURM `srun -l` writer to its task id, its rank when `_tasks_are_ranks`.
    """
    groups: dict[str | None, list[Event]] = {}
    for e in events:
        groups.setdefault(e.writer, []).append(e)
    launcher_in_file = _launcher_in_file(events)
    out: dict[str | None, int] = {}
    if task_ranks and _tasks_are_ranks(groups, task_ranks):
        out.update({w: task_ranks[w] for w in groups if w is not None and w in task_ranks})
    for writer, evs in groups.items():
        if writer in out:
            continue
        if writer is None and len(groups) > 1:
            continue    # unprefixed lines beside prefixed ones: the launcher's own, or nobody's
        if writer is not None and "tee " in writer:
            continue    # torchrun's `[defaultN]:` streams are local ranks, mapped job-wide
        mpi = mpi_ranks.get(writer) if writer is not None else None
        if mpi is not None:
            if _mpi_is_rank(mpi, evs, launcher_in_file):
                out[writer] = mpi
            continue
        claims = _claims(evs)
        if writer is None:
            claims |= envelope_ranks
        if len(claims) != 1 or several_processes(evs):
            continue
        rank = next(iter(claims))
        if any(e.kind == "child_failed" and _int(e.get("failed_rank")) not in (None, rank) for e in evs):
            continue    # the launcher's table names another rank that wrote here too
        out[writer] = rank
    return out


def file_owners(files: Iterable[InputFile], events: Iterable[Event], hosts: Mapping[int, str]
                ) -> tuple[dict[str, int], dict[str, str]]:
    """(the rank, the host) a file's lines belong to when the file is that one rank's or that one node's:
    a line without a rank or host of its own is then its file's.

    A file is one rank's when its lines state that rank only, name at most one host, and hold no launcher's
    line (torchrun's agent, its failure table: `is_agent_event`): a console where only rank 0 tagged its lines
    holds every worker's output when the agent wrote there too, and its untagged `terminate called after
    throwing ...` may be rank 1's; nor does any line of it report on another rank (`failed_rank`). A file is
    one node's when it names one host and every rank it states is known on that host (`hosts`, the job's
    rank-to-host map), or it states at most one rank: a paste of two nodes' sections whose NCCL lines name
    only the first node does not put the second node's ranks on it."""
    about: dict[str, set[int]] = {}
    launcher: set[str] = set()   # files holding a launcher's own lines: consoles of every worker it started
    dumped: dict[str, set[int]] = {}   # py-spy dumps' process ids per file: two are two processes' stacks
    for e in events:
        if is_agent_event(e):
            launcher.add(e.path)
        if (dpid := dumped_pid(e)) is not None:
            dumped.setdefault(e.path, set()).add(dpid)
        r = e.get("failed_rank")
        if isinstance(r, int) and not isinstance(r, bool):
            about.setdefault(e.path, set()).add(r)
    file_rank: dict[str, int] = {}
    file_host: dict[str, str] = {}
    for f in files:
        if (len(f.ranks) == 1 and len(f.hosts) <= 1 and f.path not in launcher
                and about.get(f.path, set()) <= {f.ranks[0]} and len(dumped.get(f.path, ())) <= 1):
            file_rank[f.path] = f.ranks[0]
        if len(f.hosts) == 1:
            h = short_host(f.hosts[0])
            if len(f.ranks) <= 1 or all(short_host(hosts.get(r) or "") == h for r in f.ranks):
                file_host[f.path] = f.hosts[0]
    return file_rank, file_host
