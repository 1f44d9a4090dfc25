"""Read what one thread's stack (py-spy or faulthandler, outermost frame first) says the thread waits on.

Per ../shared/reference/failure-signatures.md §7 and §16 item 4: a main thread whose innermost meaningful
frames are the DataLoader's `_try_get_data`/`_get_data` (`torch/utils/data/dataloader.py`, waiting on the
worker result queue) is stalled on data; one inside a public
`torch/distributed/distributed_c10d.py` function (`all_reduce`, `barrier`, ...) or a public function of
`torch/distributed/_functional_collectives.py` (FUNCOL_OPS) waits in that collective. Not a parser: the
stack-dump parsers share it.
"""

from __future__ import annotations

from collections.abc import Sequence

Frame = tuple[str, int | None, str]  # (file, line, function) as the dump printed them

DATALOADER_FILE = "torch/utils/data/dataloader.py"
C10D_FILE = "torch/distributed/distributed_c10d.py"
# `_MultiProcessingDataLoaderIter._get_data` / `_try_get_data`: the main process waits for a worker's batch.
DATALOADER_WAITS = frozenset({"_get_data", "_try_get_data"})
# `_SingleProcessDataLoaderIter._next_data` (num_workers=0) fetches in the main thread itself:
# `torch/utils/data/_utils/fetch.py` `fetch` calls the dataset's `__getitem__` (map-style) or `next()` on its
# iterator (iterable-style), so a main thread below that frame is inside the dataset's own code, waiting on
# its I/O (failure-signatures.md section 7: "With num_workers=0: fetch -> __getitem__ -> user I/O").
SINGLE_PROCESS_NEXT = "_next_data"
FETCH_FILE = "torch/utils/data/_utils/fetch.py"
# Frames a thread waiting on a queue, lock or pipe passes through below the DataLoader (stdlib only).
WAIT_LIBRARY = ("multiprocessing/", "queue.py", "threading.py", "selectors.py", "synchronize.py")
# A queue's blocking `get` (`queue.Queue.get`, `multiprocessing.queues.Queue.get`): the call a batch iterator
# makes to take the next item a producer thread or process puts there.
QUEUE_FILES = ("/queue.py", "multiprocessing/queues.py")
# The iterator protocol: a training loop's `for batch in loader` runs the loader's `__iter__` (a generator)
# or `__next__`.
ITERATOR_FUNCS = frozenset({"__iter__", "__next__"})
# Decorators torch wraps the c10d functions in (`_exception_logger.<locals>.wrapper`, ...).
C10D_WRAPPERS = frozenset({"wrapper", "inner", "_fn", "decorate_context"})
# torch.distributed._functional_collectives ("funcol", what DTensor and torchtitan's helpers call eagerly; a
# torch.compile'd graph calls `torch.ops._c10d_functional.*` itself, from a frame with no source line, so
# its stack names no op): each public function launches one c10d op (`torch.ops._c10d_functional.
# all_reduce`, ...) and returns an AsyncCollectiveTensor, whose first use waits in
# `wait_tensor` (`AsyncCollectiveTensor.__torch_dispatch__` -> `unwrap` -> `trigger_wait` ->
# `wait_tensor`; `.wait()`, `.numpy()` and `.tolist()` too), or waits at once under tracing
# (`_maybe_wrap_tensor`). Function -> the c10d op it is; a rank blocked in `wait_tensor` with no op frame
# above waits on an earlier funcol op.
FUNCOL_FILE = "torch/distributed/_functional_collectives.py"
FUNCOL_WAIT = "wait_tensor"
FUNCOL_OPS = {
    "all_reduce": "all_reduce", "all_reduce_coalesced": "all_reduce", "all_reduce_inplace": "all_reduce",
    "all_gather_tensor": "all_gather_into_tensor", "all_gather_tensor_autograd": "all_gather_into_tensor",
    "all_gather_single": "all_gather_into_tensor", "all_gather_single_autograd": "all_gather_into_tensor",
    "all_gather_single_coalesced": "all_gather_into_tensor",
    "all_gather_into_tensor_coalesced": "all_gather_into_tensor",
    "all_gather_tensor_inplace": "all_gather_into_tensor", "all_gather_inplace": "all_gather_into_tensor",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "reduce_scatter_tensor_autograd": "reduce_scatter_tensor",
    "reduce_scatter_single": "reduce_scatter_tensor",
    "reduce_scatter_single_autograd": "reduce_scatter_tensor",
    "reduce_scatter_single_coalesced": "reduce_scatter_tensor",
    "reduce_scatter_tensor_coalesced": "reduce_scatter_tensor",
    "reduce_scatter_tensor_inplace": "reduce_scatter_tensor",
    "all_to_all_single": "all_to_all_single", "all_to_all_single_autograd": "all_to_all_single",
    "all_to_all_inplace": "all_to_all_single", "permute_tensor": "all_to_all_single",
    "broadcast": "broadcast",
    "wait_tensor": FUNCOL_WAIT, "wait": FUNCOL_WAIT, "trigger_wait": FUNCOL_WAIT,
}


def collective_frame(path: str, func: str) -> str | None:
    """The collective a frame is the public function of (a c10d function, or the op a funcol function
    is), else None. `path` with forward slashes, `func` unqualified."""
    if path.endswith(C10D_FILE):
        return func if func not in C10D_WRAPPERS and not func.startswith("_") else None
    if path.endswith(FUNCOL_FILE):
        return FUNCOL_OPS.get(func)   # (its private helpers are none)
    return None


# c10d function name -> the OpType spelling watchdog lines use (`OpType=ALLREDUCE`), for `hang_detected.op`.
OP_TYPES = {
    "all_reduce": "ALLREDUCE", "all_reduce_coalesced": "ALLREDUCE_COALESCED", "barrier": "BARRIER",
    "monitored_barrier": "BARRIER", "broadcast": "BROADCAST", "broadcast_object_list": "BROADCAST",
    "reduce": "REDUCE", "all_gather": "ALLGATHER", "all_gather_object": "ALLGATHER",
    "all_gather_into_tensor": "_ALLGATHER_BASE", "reduce_scatter": "REDUCE_SCATTER",
    "reduce_scatter_tensor": "_REDUCE_SCATTER_BASE", "all_to_all": "ALLTOALL",
    "all_to_all_single": "ALLTOALL_BASE", "gather": "GATHER", "gather_object": "GATHER",
    "scatter": "SCATTER", "scatter_object_list": "SCATTER", "send": "SEND", "recv": "RECV",
    "isend": "SEND", "irecv": "RECV",
}


def _path(file: str) -> str:
    return file.replace("\\", "/")


def _func(name: str) -> str:
    """Last component of a qualified name: py-spy prints `_MultiProcessingDataLoaderIter._get_data`."""
    return name.strip().rsplit(".", 1)[-1]


def is_main(frames: Sequence[Frame], thread_name: str | None) -> bool:
    """Whether the stack is the main thread's: so named (py-spy), or its outermost frame is a module's body.

    faulthandler prints no names, but every other thread starts in `threading.py`'s `_bootstrap`.
    """
    if thread_name is not None:
        return thread_name == "MainThread"
    return bool(frames) and frames[0][2].strip() == "<module>" and not _path(frames[0][0]).endswith(
        "threading.py")


def waits_on(frames: Sequence[Frame]) -> tuple[str | None, str | None]:
    """("dataloader", None), ("collective", <c10d function>) or (None, None), read from the innermost side.

    "dataloader": waiting for a worker's batch (`_try_get_data`), or fetching one in the main thread itself
    (num_workers=0: `_next_data` -> `_utils/fetch.py`, inside the dataset).
    """
    for i in range(len(frames) - 1, -1, -1):
        file, _, name = frames[i]
        path, func = _path(file), _func(name)
        op = collective_frame(path, func)
        if op is not None:
            return "collective", _funcol_call(frames[:i], op)
        if path.endswith(DATALOADER_FILE):
            deeper = frames[i + 1:]
            waiting = all(any(w in _path(f) for w in WAIT_LIBRARY) for f, _, _ in deeper)
            if func in DATALOADER_WAITS and waiting:
                return "dataloader", None
            if func == SINGLE_PROCESS_NEXT and deeper and _path(deeper[0][0]).endswith(FETCH_FILE):
                return "dataloader", None
            return None, None
        if func in ITERATOR_FUNCS and _waits_on_queue(frames[i + 1:]):
            return "dataloader", None
    return None, None


def _funcol_call(outer: Sequence[Frame], op: str) -> str:
    """A funcol wait under a funcol op's own frame (`all_gather_tensor` waits before it concatenates) is
    that op; else `op`."""
    if op != FUNCOL_WAIT:
        return op
    for file, _, name in reversed(outer):
        found = collective_frame(_path(file), _func(name))
        if found is not None and found != FUNCOL_WAIT:
            return found
    return op


def _waits_on_queue(deeper: Sequence[Frame]) -> bool:
    """Whether the frames below an iterator's `__iter__`/`__next__` are a queue's `get` and the stdlib waits
    under it: the iterator waits for the batch a producer (a prefetch thread, a worker process) puts there,
    the shape of the DataLoader's own pin-memory path (`_try_get_data` -> `get (queue.py)` -> `wait
    (threading.py)`, failure-signatures.md §7) in a user-written or third-party prefetcher."""
    if not deeper or not all(any(w in _path(f) for w in WAIT_LIBRARY) for f, _, _ in deeper):
        return False
    file, _, name = deeper[0]
    return _func(name) == "get" and _path(file).endswith(QUEUE_FILES)


def stack_fields(frames: Sequence[Frame], thread_name: str | None) -> dict[str, object]:
    """The fields every `stack_dump` event carries about what its thread is doing."""
    main = is_main(frames, thread_name)
    what, call = waits_on(frames)
    return {"main": main, "waits_on": what, "collective": call}


def hang_fields(fields: dict[str, object]) -> dict[str, object] | None:
    """`hang_detected` fields when a dump shows the main thread inside a collective, else None.

    A stack is a snapshot taken because the job stopped moving: a main thread found inside a collective is
    a rank blocked in it, as a watchdog timeout would say (failure-signatures.md §16 item 4).
    """
    if not fields.get("main") or fields.get("waits_on") != "collective":
        return None
    call = fields.get("collective")
    return {"detector": "stack_dump", "op": OP_TYPES.get(call) if isinstance(call, str) else None,
            "collective": call}
