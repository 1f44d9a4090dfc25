"""Which rank a line is about: its writer's, or, for the launcher's lines, the worker they report on."""

from __future__ import annotations

from hanglens.ingest.streams import is_spawn_parent_exception
from hanglens.model import AGENT_EVENT_KINDS, Event


def rank_about(e: Event, single_node: bool = True) -> int | None:
    """The rank an event is about: launcher lines name the failed worker, everything else its writer.

    torchrun's agent writes into the same console as its workers, so its lines must not inherit a
    worker's rank: a ChildFailedError block names the global rank; "failed (exitcode ...) local_rank: L"
    names a local rank, which is the global rank only on a single node.
    """
    if e.kind == "child_failed":
        r = e.get("failed_rank")
        return r if isinstance(r, int) and r >= 0 else None
    if e.kind == "launcher_exit" and e.get("launcher") in ("srun", "mpirun"):
        # srun's task line, mpirun's failed process: set as the rank only where tasks are ranks (ingest)
        return e.rank
    if e.kind == "launcher_exit" and e.get("launcher") == "deepspeed":
        # `[<cmd>] exits with return code = <c>` prints the command of the last local rank the launcher
        # started (the loop variable of deepspeed/launcher/launch.py `main`), whichever child failed:
        # never the failed rank (failure-signatures.md section 6, DeepSpeed row)
        return None
    if e.kind in ("worker_failed", "launcher_exit", "worker_spawned"):
        placed = e.get("placed_rank")   # the launcher's layout of the host (ingest/attribute.py)
        if isinstance(placed, int) and placed >= 0:
            return placed
        lr = e.get("local_rank")
        return lr if single_node and isinstance(lr, int) and lr >= 0 else None
    if e.kind in AGENT_EVENT_KINDS:
        return None
    if e.kind == "exception" and ("ChildFailedError" in str(e.get("exc_type") or "")
                                  or is_spawn_parent_exception(e)):
        return None
    return e.rank
