"""Where in the program a rank's blocking collective was called from: the training step, a phase boundary
or a side section.

failure-signatures.md section 1 ("Culprit vs victims": in a two-rank group there is no majority, use each
side's Python frames: different call sites mean divergence; "Confirms": the odd rank's frames point to
eval/checkpoint/logging code) and section 18 ("for 2-rank PGs use call-site frames"). A rank blocked in
the training step's own collective (the gradient all_reduce, DDP's reducer under `backward()`) is where
every rank is expected to be; a rank blocked in a side section (checkpoint, evaluation, logging, an
object collective, a main-process-only block) or at a phase boundary (a `barrier()` after its loop ended)
is the one that went elsewhere. Only the part of each stack below the frames all sides share is read:
a driver function every rank runs (`train_and_evaluate`) says nothing about either side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from hanglens import lazyre as re
from hanglens.parsers.stacks import C10D_WRAPPERS, FUNCOL_WAIT, collective_frame

STEP, BOUNDARY, SECTION = "step", "boundary", "section"
LEVEL = {STEP: 0, BOUNDARY: 1, SECTION: 2}

FRAME_RE = re.compile(r"^(?P<file>.*?):(?P<line>\d{1,9}) in (?P<func>.+)$")
# (matched at the end of any path, more loosely than parsers/stacks.py's C10D_FILE)
C10D_FILE = "distributed_c10d.py"
# torch.distributed's own helpers between the caller and the collective (c10d_logger's wrapper, ...).
TORCH_DISTRIBUTED_RE = re.compile(r"(?:^|/)torch/distributed/(?!checkpoint/|fsdp/)")
# DeepSpeed's pass-through layers, whose names say nothing about the program's phase: its communication
# layer (deepspeed/comm/comm.py wraps every collective in `timed_op`, whose inner function is `log_wrapper`,
# the comms logger's timing hook; deepspeed/comm/torch.py `TorchBackend` forwards each call to
# torch.distributed through its `wrapper`/`stage_on_cpu` decorators), like torch's c10d_logger, and the
# NVTX range decorator on the engine's and ZeRO's methods (deepspeed/utils/nvtx.py `instrument_w_nvtx`:
# `wrapped_fn` runs `ret_val = func(*args, **kwargs)`, whose `val` is no validation).
DEEPSPEED_PASS_RE = re.compile(r"(?:^|/)deepspeed/(?:comm/|utils/nvtx\.py$)")
# torchtitan's tracing spans (torchtitan/observability/structured_logger/structured_logging.py
# `log_trace_span`, used as a decorator: `sync_wrapper` runs `return func(*args, **kwargs)` inside a span that
# times the call) wrap the trainer's own methods (`forward_backward_step`): their file name says "logging",
# the program's phase is the decorated function's.
TORCHTITAN_PASS_RE = re.compile(r"(?:^|/)torchtitan/observability/")
# ZeRO-3 gathers each module's partitioned parameters before its forward (and backward) with an async
# all-gather and waits on the handle it returned (deepspeed/runtime/zero/partition_parameters.py
# `AllGatherHandle.wait` / `AllGatherCoalescedHandle.wait`, from partitioned_param_coordinator.py
# `fetch_sub_module`): `self.allgather_handle.wait()` is torch's `Work.wait()`, a C++ call with no
# distributed_c10d.py frame, so a rank stuck there shows that `wait` as its innermost Python frame.
ZERO3_GATHER_FILE_RE = re.compile(r"(?:^|/)deepspeed/runtime/zero/partition_parameters\.py$")
ZERO3_GATHER = "all_gather"
LIBRARY_RE = re.compile(r"(?:^|/)torch/|site-packages|dist-packages")
# The training step's own machinery: backward (DDP's reducer all-reduces gradients from autograd hooks),
# DDP's forward, the optimizer.
STEP_LIBRARY_RE = re.compile(r"(?:^|/)torch/(?:autograd/|optim/|nn/parallel/distributed\.py)")
# The autograd engine's backward entry points: `torch.autograd.backward` / `torch.autograd.grad`
# (torch/autograd/__init__.py, which `Tensor.backward` calls) and `_engine_run_backward`
# (torch/autograd/graph.py, 2.3+). Not torch/autograd/function.py: `Function.apply` runs a custom autograd
# Function's forward, and AOTAutograd runs every compiled forward through one
# (torch/_functorch/_aot_autograd/runtime_wrappers.py `CompiledFunction.apply`), so a collective inside a
# torch.compile'd forward is under `apply`, not in the backward.
AUTOGRAD_RE = re.compile(r"(?:^|/)torch/autograd/(?:__init__|graph)\.py$")
# torch's pass-through wrappers, whose names say nothing about the program's phase: TorchDynamo's frame
# evaluation hook (torch/_dynamo/eval_frame.py, PEP 523 "frame evaluation", not a model evaluation: its
# `_fn` wraps every function `torch._disable_dynamo` marks, FSDP2's forward hooks among them,
# torch/distributed/fsdp/_fully_shard/_fsdp_state.py), torch/_compile.py's `_disable_dynamo`, and the
# no_grad/inference_mode decorator (torch/utils/_contextlib.py `decorate_context`).
PASS_THROUGH_RE = re.compile(r"(?:^|/)torch/(?:_dynamo/|_compile\.py$|utils/_contextlib\.py$)")
# Collectives that move pickled Python objects (metadata, metrics, checkpoint state), never the step's
# tensors (distributed_c10d.py *_object_list / *_object).
OBJECT_COLLECTIVES = frozenset({"broadcast_object_list", "all_gather_object", "gather_object",
                                "scatter_object_list", "send_object_list", "recv_object_list"})
BARRIERS = frozenset({"barrier", "monitored_barrier"})
# The functions that broadcast module state with `dist._broadcast_coalesced` (a C++ binding, no frame in
# distributed_c10d.py): DDP's forward syncs the module's buffers from rank 0 before every forward when
# `broadcast_buffers=True`, the default (torch/nn/parallel/distributed.py `_pre_forward` -> `_sync_buffers`
# -> `_default_broadcast_coalesced` -> `_distributed_broadcast_coalesced`), and DDP's construction
# broadcasts rank 0's parameters and buffers (torch/distributed/utils.py `_sync_params_and_buffers`).
DDP_BROADCASTS = frozenset({"_distributed_broadcast_coalesced", "_sync_params_and_buffers"})
DDP_FILE = "nn/parallel/distributed.py"
# Lightning's SIGTERM handler (lightning/pytorch/trainer/connectors/signal_connector.py, Lightning 2.x
# `_sigterm_notifier_fn`, run through `_HandlersCompose.__call__`) broadcasts the stop to the other ranks
# (`dist.broadcast(sigterm_tensor, src=0)`) from inside the signal handler: a collective there is the rank
# being stopped (by torchrun's closing SIGTERM after a peer failed), and the frames under the handler are
# what the rank was doing when its peers waited.
SIGNAL_HANDLER_RE = re.compile(
    r"(?:^|/)(?:lightning/pytorch|pytorch_lightning)/trainer/connectors/signal_connector\.py$")
# The entry of the buffer broadcast DDP's forward makes: with the gradient all_reduce under `backward` it is
# one of the training step's own collectives (collectives.STEP_SYNC).
DDP_FORWARD = "DDP forward"
DDP_BROADCAST_FILE_RE = re.compile(r"(?:^|/)torch/(?:nn/parallel/distributed|distributed/utils)\.py$")
# torch.distributed.pipelining's schedules move activations and gradients between stages with batched
# point-to-point ops (`_batch_p2p` -> `dist.batch_isend_irecv`, torch 2.4+) and wait on the works in
# `_wait_batch_p2p` (`work.wait()`), past distributed_c10d.py: a stack there is blocked in a send or recv
# between stages. The line that calls `_wait_batch_p2p` names what it waits for (`send_work`,
# `_batch_p2p(fwd_recvs, desc="fwd_recv")`, `self.bwd_recv_ops.pop(...)`; torch/distributed/pipelining/
# schedules.py); a line naming both or neither (`_wait_batch_p2p(work)`) is a point-to-point wait of
# either direction.
PIPELINING_RE = re.compile(r"(?:^|/)torch/distributed/pipelining/")
PIPELINE_WAITS = frozenset({"_wait_batch_p2p"})
PIPELINE_P2P = "batch_isend_irecv"
# Point-to-point calls (distributed_c10d.py): a rank waiting in one waits for its one peer.
POINT_TO_POINT = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list",
                            "recv_object_list"})
SECTION_WORDS = frozenset({
    "save", "saving", "saver", "checkpoint", "checkpoints", "checkpointing", "checkpointer", "ckpt",
    "eval", "evaluate", "evaluation", "evaluator", "validate", "validation", "val", "metric", "metrics",
    "log", "logging", "logger", "report", "print", "summary", "summarize", "export", "dump", "consolidate",
    "consolidation", "generate", "generation", "predict", "prediction", "inference", "visualize",
    "upload", "rank0",
})
SECTION_PAIRS = frozenset({("main", "process"), ("is", "main"), ("rank", "zero"), ("state", "dict"),
                           ("only", "main"), ("global", "zero")})
STEP_WORDS = frozenset({"backward", "grad", "grads", "gradient", "gradients", "loss", "losses", "optimizer",
                        "forward", "step"})
_TOKEN_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@dataclass(frozen=True, slots=True)
class CallSite:
    """One rank's blocking collective and where it was called from."""

    call: str                 # the torch.distributed function the rank waits in (innermost), or "backward"
    entry: str                # the function the program called (outermost): broadcast_object_list
    user_frame: str | None    # the nearest frame outside torch that led to it ("file.py:12 in save")
    site: str | None          # step / boundary / section, None when the frames do not say
    reason: str | None        # the frame (and word) that decided `site`


def split_frame(frame: str) -> tuple[str, int, str] | None:
    """(file, line, function) of a frame written `<file>:<line> in <function>`, else None."""
    m = FRAME_RE.match(str(frame))
    if not m:
        return None
    return m["file"].replace("\\", "/"), int(m["line"]), m["func"].strip()


def tokens(text: str) -> list[str]:
    """Lower-case words of an identifier, path or source line (`saveCheckpoint`, `save_checkpoint`)."""
    return [t.lower() for t in _TOKEN_RE.findall(text[:400])]


def _words(text: str) -> tuple[set[str], set[tuple[str, str]]]:
    ts = tokens(text)
    return set(ts), set(pairwise(ts))


def _is_section(text: str) -> str | None:
    words, pairs = _words(text)
    hit = sorted(words & SECTION_WORDS) or [" ".join(p) for p in sorted(pairs & SECTION_PAIRS)]
    return hit[0] if hit else None


def _is_step(text: str) -> str | None:
    hit = sorted(_words(text)[0] & STEP_WORDS)
    return hit[0] if hit else None


def interrupted_frames(frames: Sequence[str]) -> Sequence[str]:
    """The frames a signal handler interrupted: the stack cut where Lightning's SIGTERM handler starts."""
    for i, fr in enumerate(frames):
        parts = split_frame(fr)
        if parts is not None and SIGNAL_HANDLER_RE.search(parts[0]):
            return frames[:i]
    return frames


# A stop's own exception: KeyboardInterrupt (SIGINT, a launcher's or the user's Ctrl-C) is raised where the
# main thread was, so its traceback is a stack of that moment (failure-signatures.md section 16 item 4).
STOP_EXCEPTIONS = frozenset({"KeyboardInterrupt"})
# Where a stopped process was that says nothing of where its work was: the DataLoader's fetch (a stall of
# its own, section 7) and the interpreter's exit path.
_NOT_WORK_RE = re.compile(r"(?:^|/)torch/utils/data/|\bin (?:_shutdown_workers|_exitfunc)$")


def stopped_outside(frames: Sequence[str], exc_type: str) -> tuple[str, str] | None:
    """(innermost program frame, what stopped it) of a stack a stop interrupted outside torch.distributed.

    A stop that reaches a rank through a signal handler (Lightning's SIGTERM handler, SIGNAL_HANDLER_RE,
    run when torchrun's agent sends its closing SIGTERM after a peer failed: failure-signatures.md section
    0.6) or as a KeyboardInterrupt prints the frames the rank was in at that moment. When none of them is a
    collective, a barrier, DDP's reducer or the DataLoader, the rank was busy in its own work, not waiting
    for its peers. None when the stack was not interrupted, waits in communication, or names no frame of
    the program's own.
    """
    cut = interrupted_frames(frames)
    if len(cut) < len(frames):
        how = "Lightning's SIGTERM handler"
    elif str(exc_type).rsplit(".", 1)[-1] in STOP_EXCEPTIONS:
        how = "KeyboardInterrupt"
    else:
        return None
    if not cut or blocking_call(cut) is not None:
        return None
    if any(TORCH_DISTRIBUTED_RE.search(str(f)) or _NOT_WORK_RE.search(str(f)) for f in cut):
        return None
    for fr in reversed(cut):
        parts = split_frame(fr)
        if parts is not None and not LIBRARY_RE.search(parts[0]):
            return f"{parts[0].rsplit('/', 1)[-1]}:{parts[1]} in {parts[2]}", how
    return None


def _pipeline_wait(frames: Sequence[str], sources: Sequence[str]) -> tuple[int, int, str, str] | None:
    """A stack blocked in a pipelining schedule's point-to-point wait (PIPELINE_WAITS): (index of the
    outermost pipelining frame, index of the wait, op, op), the op `send`, `recv` or PIPELINE_P2P."""
    first: int | None = None
    for i, fr in enumerate(frames):
        parts = split_frame(fr)
        if parts is None or not PIPELINING_RE.search(parts[0]):
            continue
        first = i if first is None else first
        if parts[2].rsplit(".", 1)[-1] in PIPELINE_WAITS:
            said = set(tokens(sources[i - 1])) if 0 < i <= len(sources) else set()
            sends, recvs = bool(said & {"send", "sends"}), bool(said & {"recv", "recvs"})
            op = "send" if sends and not recvs else ("recv" if recvs and not sends else PIPELINE_P2P)
            return first, i, op, op
    return None


def blocking_call(frames: Sequence[str], sources: Sequence[str] = ()) -> tuple[int, int, str, str] | None:
    """(index of the outermost, index of the innermost public c10d frame, entry, call) of a stack, or None.

    A public function of torch/distributed/_functional_collectives.py counts as the c10d op it launches
    (parsers/stacks.py FUNCOL_OPS: what DTensor's and torchtitan's helpers call); a wait under such an op's
    frame is that op's, a bare `wait_tensor` (an AsyncCollectiveTensor's first use) is a wait on an earlier
    funcol op, call `wait_tensor`.

    A stack without a c10d frame that waits on a ZeRO-3 parameter all-gather handle (`ZERO3_GATHER_FILE_RE`)
    is that all-gather. A stack without a c10d frame that ends in autograd's backward is DDP's gradient
    reduction: the reducer
    runs its all_reduce from autograd hooks, so the main thread waits in `backward`. One that ends in DDP's
    or torch.distributed's own buffer and parameter sync calls the C++ binding `dist._broadcast_coalesced`
    directly, past distributed_c10d.py: a broadcast from the authoritative rank (`DDP_BROADCASTS`), whose
    entry is `DDP_FORWARD` when DDP's forward made it. One in a pipelining schedule's wait is a send or
    recv between stages (`_pipeline_wait`; `sources` give its direction).
    """
    found: list[tuple[int, str]] = []
    autograd: int | None = None
    zero3: int | None = None
    ddp_broadcast: int | None = None
    in_forward = False
    frames = interrupted_frames(frames)
    for i, fr in enumerate(frames):
        parts = split_frame(fr)
        if parts is None:
            continue
        path, _, func = parts
        name = func.rsplit(".", 1)[-1]
        op = name if path.endswith(C10D_FILE) else collective_frame(path, name)
        if op is not None and op not in C10D_WRAPPERS and not op.startswith("_"):
            found.append((i, op))
        elif autograd is None and AUTOGRAD_RE.search(path):
            autograd = i
        elif name in DDP_BROADCASTS and DDP_BROADCAST_FILE_RE.search(path):
            ddp_broadcast = i if ddp_broadcast is None else ddp_broadcast
        elif name == "_pre_forward" and path.endswith(DDP_FILE):
            in_forward = True
        elif name == "wait" and zero3 is None and ZERO3_GATHER_FILE_RE.search(path):
            zero3 = i
    if found:
        # A funcol wait below a funcol op's frame is that op's wait (`all_gather_tensor` -> `.wait()`).
        ops = [name for _, name in found if name != FUNCOL_WAIT]
        call = ops[-1] if found[-1][1] == FUNCOL_WAIT and ops else found[-1][1]
        return found[0][0], found[-1][0], found[0][1], call
    if zero3 is not None:
        return zero3, zero3, ZERO3_GATHER, ZERO3_GATHER
    if autograd is not None:
        return autograd, autograd, "backward", "backward"
    if ddp_broadcast is not None:
        return ddp_broadcast, ddp_broadcast, DDP_FORWARD if in_forward else "broadcast", "broadcast"
    return _pipeline_wait(frames, sources)


def caller_source(frames: Sequence[str], sources: Sequence[str], outer: int) -> str | None:
    """The source line of the frame that called into torch.distributed (the nearest frame outside it above
    `outer`, the outermost public c10d frame of `blocking_call`): "" when the stack gives no source for it,
    None when every frame above is torch.distributed's own (its wrappers: `c10d_logger`)."""
    for i in range(outer - 1, -1, -1):
        if TORCH_DISTRIBUTED_RE.search(str(frames[i])):
            continue
        return sources[i] if i < len(sources) else ""
    return None


def call_source(frames: Sequence[str], sources: Sequence[str]) -> str | None:
    """The source line of the program's call into torch.distributed, when the stack prints it (a traceback
    does; faulthandler and py-spy dumps do not)."""
    found = blocking_call(frames, sources)
    if found is None or found[2] == "backward":
        return None
    return caller_source(frames, sources, found[0]) or None


# `group=<a process group>` in the source line of the call into torch.distributed (not None or WORLD). A
# wrapper that passes its own `group` parameter on (`group=group`) says nothing about the group its caller
# chose, and the common ones default it to the whole world: Lightning's `_sync_ddp`, behind every
# `self.log(..., sync_dist=True)`, sets `group = torch.distributed.group.WORLD if group is None else group`
# and calls `torch.distributed.barrier(group=group)` (lightning/fabric/utilities/distributed.py).
# torch.distributed's own layers above c10d, which `TORCH_DISTRIBUTED_RE` leaves to the program for their
# phase names (`fsdp/`, `checkpoint/`).
TORCH_OWN_CALLER_RE = re.compile(r"(?:^|/)torch/distributed/")
_SUBGROUP_ARG_RE = re.compile(r"\bgroup\s*=\s*(?!None\b|(?:[\w.]*\.)?WORLD\b|group\b)[A-Za-z_]")


def subgroup_call(frames: Sequence[str], sources: Sequence[str]) -> bool:
    """Does the program's call into torch.distributed pass a subgroup (`group=tp_group`)? Not when the caller
    is torch.distributed's own code above c10d (FSDP, distributed checkpointing): it passes the group it was
    built with (FSDP1's gloo all-gather `dist.all_gather(tensor_list, sharded_flat_param, group=pg)` in
    torch/distributed/fsdp/_flat_param.py `_all_gather_flat_param`, torch 2.3-2.13), the whole world unless
    the program gave it another, so the argument names no subgroup."""
    found = blocking_call(frames, sources)
    if found is None or found[2] == "backward":
        return False
    for i in range(found[0] - 1, -1, -1):
        if TORCH_DISTRIBUTED_RE.search(str(frames[i])):
            continue
        if TORCH_OWN_CALLER_RE.search(str(frames[i])):
            return False
        break
    src = caller_source(frames, sources, found[0])
    return src is not None and _SUBGROUP_ARG_RE.search(src) is not None


def common_prefix(stacks: Sequence[Sequence[str]]) -> int:
    """How many outermost frames every stack shares (same file, line and function)."""
    if not stacks:
        return 0
    n = min(len(s) for s in stacks)
    for i in range(n):
        if len({str(s[i]) for s in stacks}) > 1:
            return i
    return n


def _entry_script(frames: Sequence[str]) -> str | None:
    """The file the program was started from: that of the outermost frame when it is `<module>`."""
    parts = split_frame(frames[0]) if frames else None
    return parts[0] if parts is not None and parts[2] == "<module>" else None


def call_site(frames: Sequence[str], sources: Sequence[str] = (), shared: int = 0,
              nearest: bool = False) -> CallSite | None:
    """Where the stack's blocking collective was called from, reading only frames below `shared`.

    Section evidence anywhere in the diverging callers wins over step evidence (a rank-0-only evaluation
    runs DDP's forward too); a barrier with neither is a phase boundary. With `nearest` (a stack with no
    other side's to compare, so the frames every rank runs cannot be set aside) the evidence nearest to
    the collective decides: a driver function's name far up the stack does not. The program's own script
    (the file of the outermost `<module>` frame) gives its functions and lines but not its file name: every
    rank runs the whole program in it, so `ckpt_train.py` or `eval_run.py` names the program, not a section.
    """
    found = blocking_call(frames, sources)
    if found is None:
        return None
    outer, _, entry, call = found
    script = _entry_script(frames)
    user = None
    section = step = None
    if nearest and entry in OBJECT_COLLECTIVES:
        section = f"{entry} (moves Python objects, not the step's tensors)"
    for i in range(outer - 1, -1, -1):
        decided = nearest and (section is not None or step is not None)
        if decided and user is not None:
            break
        parts = split_frame(frames[i])
        if parts is None:
            continue
        path, line, func = parts
        base = path.rsplit("/", 1)[-1]
        where = f"{base}:{line} in {func}"
        if user is None and not LIBRARY_RE.search(path):
            user = where
        if (decided or i < shared or TORCH_DISTRIBUTED_RE.search(path) or PASS_THROUGH_RE.search(path)
                or DEEPSPEED_PASS_RE.search(path) or TORCHTITAN_PASS_RE.search(path)):
            continue
        src = sources[i] if i < len(sources) else ""
        text = f"{func} {'' if path == script else base.removesuffix('.py')} {src}"
        if section is None:
            word = _is_section(text)
            if word:
                section = f"{where} ('{word}')"
        if step is None:
            word = _is_step(f"{func} {src}") or ("backward" if STEP_LIBRARY_RE.search(path) else None)
            if word:
                step = f"{where} ('{word}')"
    at = user or entry
    if entry in OBJECT_COLLECTIVES and section is None:
        section = f"{at} ({entry} moves Python objects, not the step's tensors)"
    if section is not None:
        return CallSite(call, entry, user, SECTION, section)
    if call == "backward":
        return CallSite(call, entry, user, STEP, step or f"{at} (backward: DDP's gradient all_reduce)")
    if step is not None:
        return CallSite(call, entry, user, STEP, step)
    if entry in BARRIERS:
        reason = f"{at} (a {entry}; nothing in its frames belongs to the step)"
        return CallSite(call, entry, user, BOUNDARY, reason)
    return CallSite(call, entry, user, None, None)


def odd_sites(sites: dict[int, CallSite], unseen: int = 0,
              last_step: Mapping[int, int] | None = None) -> set[int]:
    """Ranks whose call site is further from the training step than every other side's.

    Named only when every side's site is known, the sides were called from different places, and one
    level (section over boundary over step) is held by some ranks and exceeds everyone else's. `unseen`
    counts the other sides known only by their timeout or fingerprint (no stack): a single stack in a
    side section (a rank-conditional checkpoint, evaluation or logging call, issue 8's "its own stack in a
    rank-conditional call") still names its rank; a barrier or a step alone never does.

    `last_step` (each rank's last logged step) turns a section against a barrier around when every rank
    in the barrier logged a smaller last step than every rank in the section: the section's collective was
    called in an iteration the barrier's ranks never reached, so it is the loop's own work and the barrier
    side left the loop first (failure-signatures.md section 1, "uneven number of batches per rank"). A rank
    that went into a rank-conditional section instead leaves its peers to log further steps before their
    barrier, so their last step is not behind it.
    """
    if unseen:
        if len(sites) != 1:
            return set()
        (rank, only), = sites.items()
        return {rank} if only.site == SECTION else set()
    if len(sites) < 2 or any(s.site is None for s in sites.values()):
        return set()
    if len({(s.entry, s.user_frame) for s in sites.values()}) < 2:
        return set()
    levels = {r: LEVEL[s.site] for r, s in sites.items() if s.site is not None}
    top = max(levels.values())
    odd = {r for r, lv in levels.items() if lv == top}
    if top == 0 or len(odd) == len(levels):
        return set()
    if top == LEVEL[SECTION] and last_step is not None:
        rest = set(levels) - odd
        if (all(levels[r] == LEVEL[BOUNDARY] for r in rest) and all(r in last_step for r in levels)
                and max(last_step[r] for r in rest) < min(last_step[r] for r in odd)):
            return rest
    return odd
