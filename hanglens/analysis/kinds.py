"""Which event kinds count as failures, crashes and victim symptoms (shared by the fact functions)."""

from __future__ import annotations

from hanglens import lazyre as re
from hanglens.model import Event
from hanglens.parsers.elastic import shell_signal_name
from hanglens.parsers.nccl import IB_MANAGEMENT_EVENTS

# A rank that emits one of these failed on its own account (it may still be a victim of another rank).
CRASH_KINDS = frozenset(
    {
        "cuda_error",
        "device_assert",
        "oom",
        "xid",
        "dataloader_worker_died",
        "dataloader_error",
        "ddp_reduction_unfinished",
        "ddp_unused_parameters",
        "ddp_model_mismatch",
        "error_file",
        "exception",
        "watchdog_terminated",
        "nccl_error",
    }
)
HANG_KINDS = frozenset({"hang_detected"})
# Everything that says "something went wrong here" (error_line alone is too generic to count).
FAILURE_KINDS = (
    CRASH_KINDS
    | HANG_KINDS
    | frozenset(
        {
            "process_teardown",
            "network_error",
            "peer_closed",
            "gloo_error",
            "worker_failed",
            "child_failed",
            "launcher_exit",
            "rendezvous_error",
            "store_error",
            "collective_mismatch",
            "monitored_barrier_failure",
            "fr_report_missing",
            "desync_report",
            "dump_signal",
            "job_stopped",
        }
    )
)

# Exception types / messages that are consequences of someone else's failure.
VICTIM_EXCEPTION_MARKERS = (
    "Connection closed by peer",
    "Connection reset by peer",
    "timed out",
    "Timed out",
    "timeout",
    "NCCL communicator was aborted",
    "ncclRemoteError",
    "remote process exited",
    "Broken pipe",
    "failed to pass monitoredBarrier",
    "successfully reached monitoredBarrier",
    # TORCH_DISTRIBUTED_DEBUG=DETAIL's pre-collective barrier (ProcessGroupWrapper.cpp, log-formats.md section
    # 2.1): the first line of its exception; the monitoredBarrier report naming the missing ranks follows.
    "Monitored Barrier encountered error running collective",
    "Socket Timeout",
    "DistNetworkError",
    "DistStoreError",
    "Watchdog caught collective operation timeout",
    "ProcessGroupNCCL is aborted",
    "Terminating the process",
    "SIGTERM",
    "closing signal",
    # A DataLoader worker terminated with its rank in the launcher's teardown (failure-signatures.md
    # section 8, "Trap").
    "is killed by signal: Terminated",
    # DDP's model check over an all-gather that timed out or was aborted returns zeros (log-formats.md §2.3).
    "has inconsistent 0 params",
    # The launcher told to stop from outside (scheduler, user): torchrun's agent raises it from the signal
    # handler it installs (torch/distributed/elastic/multiprocessing/api.py `_terminate_process_handler`), a
    # knock-on type (failure-signatures.md section 6, "How to separate the first crash from knock-on
    # failures", item 1) under any signal number.
    "SignalException",
    # The agent lost the c10d rendezvous store: `_call_store` (torch/distributed/elastic/rendezvous/
    # c10d_rendezvous_backend.py) wraps whatever the store raised ("The connection to the C10d store has
    # failed"); a store that is gone is a knock-on of its host's end (failure-signatures.md section 6, same
    # item: DistNetworkError / DistStoreError, store gone). The rendezvous rules read it as a
    # `rendezvous_error` event, not as a crash.
    "RendezvousConnectionError",
)
# NCCL WARN lines that healthy jobs print too (failure-signatures.md section 10.4 and section 17 item 8):
# sysfs paths NCCL cannot resolve in VMs/containers, a missing libibverbs when NCCL then uses sockets.
BENIGN_NCCL_WARNINGS = ("Could not find real path", "Failed to open libibverbs")


def is_failure_warning(e: Event) -> bool:
    """An NCCL WARN line that is failure evidence (communicator init or transport trouble), not noise: not
    one of the benign texts, nor an IB management async event (`Got async event : GID table change`)."""
    text = str(e.get("message") or e.text)
    if "async event" in text and any(ev in text for ev in IB_MANAGEMENT_EVENTS):
        return False
    return e.kind == "nccl_warn" and not any(b in text for b in BENIGN_NCCL_WARNINGS)


def is_retried_connect_warning(e: Event) -> bool:
    """A store client's `[c10d] The client socket has failed to connect to [<host>]:<port> (errno: ...)`
    warning: socket.cpp retries the connect until the store timeout (log-formats.md section 3.7, "W,
    retried"), so alone it is no failure; the timeout or give-up line after it is."""
    return e.kind == "store_error" and e.get("op") == "connect" and e.get("errno") is not None


# A frame in a library's file, not the program's: torch itself, installed packages, the standard library.
_LIBRARY_PATHS = ("site-packages", "dist-packages", "/lib/python", "<frozen ")


def _library_frame(frame: object) -> bool:
    f = str(frame)
    return f.startswith("torch/") or "/torch/" in f or any(p in f for p in _LIBRARY_PATHS)


def raised_by_own_code(e: Event) -> bool:
    """A traceback every frame of which is the program's own code (no torch, installed-package or standard
    library frame), whose innermost source line is a `raise`, chaining no earlier exception: the program
    raised it itself, so its message (a `ConnectionResetError` while fetching a shard, a `TimeoutError` of
    its own) is this rank's fault, not a collective's report of a peer's (which torch raises from
    distributed_c10d.py or the backend, below the program's frames)."""
    frames, sources = e.get("frames"), e.get("sources")
    if (e.kind != "exception" or not isinstance(frames, list) or not frames or e.get("chained")
            or not isinstance(sources, list) or len(sources) != len(frames)):
        return False
    # (the innermost frame's own source line is the `raise`: a paste that left out torch's frames below a
    # `loss.backward()` shows the program's frames only, but not a raise of its own)
    return str(sources[-1]).lstrip().startswith("raise ") and not any(_library_frame(f) for f in frames)


# torch.distributed.checkpoint (DCP) runs each rank's planning and writing, gathers every rank's exception
# to the coordinator and raises one `CheckpointException` on every rank whose text starts with the ranks
# that failed (`CheckpointException ranks:dict_keys([<r>, ...])`, torch/distributed/checkpoint/api.py
# `CheckpointException.__str__`; utils.py `_DistWrapper.reduce_scatter` / `all_gather` / `all_reduce`),
# followed by each failing rank's own traceback `(RANK <r>)`. On a rank it does not name, it is the report
# of a peer's failure.
_DCP_FAILED_RE = re.compile(r"CheckpointException ranks:\s*dict_keys\(\[(?P<ks>[\d,\s]*)\]\)")


def checkpoint_failed_ranks(e: Event) -> list[int] | None:
    """The ranks a DCP `CheckpointException` names as failed, or None when the event is not one."""
    m = _DCP_FAILED_RE.search(f"{e.get('message') or ''} {e.text}")
    if m is None:
        return None
    return [int(k) for k in m["ks"].replace(",", " ").split()]


# CPython's multiprocessing helper threads catch what they raise, print it and carry on: a queue's feeder
# thread (Lib/multiprocessing/queues.py `Queue._feed` -> `_on_queue_feeder_error`, which prints the
# traceback and drops the object) and the resource sharer's server thread (resource_sharer.py
# `_ResourceSharer._serve`, `sys.excepthook` and on to the next request). Their tracebacks start at that
# thread's loop.
_HELPER_THREAD_FRAME_RE = re.compile(
    r"multiprocessing[/\\](?:queues\.py:\d+ in _feed|resource_sharer\.py:\d+ in _serve)$")


def survived_in_helper_thread(e: Event) -> bool:
    """An exception a multiprocessing helper thread printed and survived: the process went on running.

    A DataLoader worker whose feeder thread cannot pickle a batch (a tensor's descriptor cannot be
    duplicated under a low `ulimit -n`, an object that does not pickle) prints the error and the batch is
    lost; the worker and its rank live on, the rank waiting for that batch.
    """
    frames = e.get("frames")
    return (e.kind == "exception" and isinstance(frames, list) and bool(frames)
            and isinstance(frames[0], str) and _HELPER_THREAD_FRAME_RE.search(frames[0]) is not None)


def is_victim_exception(e: Event) -> bool:
    """An exception that only reports that a collective/peer failed, not a fault of this rank's own."""
    if raised_by_own_code(e):
        return False
    failed = checkpoint_failed_ranks(e)
    if failed is not None and e.rank is not None:
        return bool(failed) and e.rank not in failed
    text = f"{e.get('exc_type') or ''}: {e.get('message') or ''} {e.text}"
    return any(m in text for m in VICTIM_EXCEPTION_MARKERS) or _chain_starts_with_victim(e)


def _chain_starts_with_victim(e: Event) -> bool:
    """Did the exception's chain begin with a report of a peer's failure? Python prints a chain from its first
    exception on (`The above exception was the direct cause ...`, `During handling of the above exception
    ...`), so the first one is where the failure entered this rank; a wrapper that logs it and raises its own
    `RuntimeError("step failed") from e`, or a handler whose own collective fails, only passes a peer's
    failure on (failure-signatures.md section 6, "How to separate the first crash from knock-on failures",
    item 1; section 0.1 step 4)."""
    types, messages = e.get("chained"), e.get("chained_messages")
    if not isinstance(types, list) or not isinstance(messages, list) or not types or not messages:
        return False
    first = f"{types[0]}: {messages[0]}"
    return any(m in first for m in VICTIM_EXCEPTION_MARKERS)


_OWN_RANK = -1


def host_of(e: Event, hosts: dict[int, str], rank: int | None = _OWN_RANK) -> str | None:
    """The host an event names, else the host of `rank` (by default the event's own rank; None: no host)."""
    if e.host:
        return e.host
    r = e.rank if rank == _OWN_RANK else rank
    return hosts.get(r) if r is not None else None


def exit_signal(exitcode: object) -> str | None:
    """Signal name of a torchrun negative exit code (or a shell 128+N status)."""
    return shell_signal_name(exitcode) if isinstance(exitcode, int) else None
