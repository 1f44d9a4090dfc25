"""Read Python tracebacks (with their chained causes and DataLoader worker re-raises) and bare
`XxxError: message` lines into one `exception` event each.

Example (torch 2.4+, `[rankN]: ` already stripped):
`Traceback (most recent call last):` … `  File "train.py", line 10, in <module>` … `RuntimeError: boom`
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from hanglens import lazyre as re
from hanglens.model import RAY_TASK_ERROR_RE, Event, LogLine, ray_writer
from hanglens.parsers.base import EventSpec, Example, Parser, to_count

# How many lines below the line that announces it (CPython's `Exception ignored in ...`, a logging record's
# header for `logger.exception`) a traceback may start: another writer's lines may sit between them in a
# merged console. (analysis/status.py `date_logged_tracebacks` uses it for the record's header.)
HEADER_GAP_LINES = 3
TB_START_RE = re.compile(r"^(?P<pre>.*?)(?P<orig>Original )?Traceback \(most recent call last\):")
# torch.distributed.checkpoint's `CheckpointException` carries the traceback of every rank that failed,
# each opened by `Traceback (most recent call last): (RANK <r>)` (torch/distributed/checkpoint/api.py
# `CheckpointException.__str__`): those are the failing ranks' tracebacks relayed in the message of the
# exception every rank raises, not exceptions of the rank that prints them.
DCP_RANK_TB_RE = re.compile(r"Traceback \(most recent call last\): \(RANK \d+\)")
DCP_EXC = "CheckpointException"
# What may precede "Traceback" on its line: indentation, a ^C echo, the end of a progress bar.
TB_PRE_OK_RE = re.compile(r"^\s*(?:\^C)?\s*$|\]\s*$")
FRAME_RE = re.compile(r"^\s*File \"(?P<file>[^\"]+)\", line (?P<line>\d+)(?:, in (?P<func>.+?))?\s*$")
CHAIN_RE = re.compile(
    r"^\s*(?:During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause of the following exception):?\s*$"
)
# Inside a traceback: the exception line is at the traceback's indentation; its type is an identifier path.
TB_EXC_RE = re.compile(r"^(?P<type>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?::(?: (?P<msg>.*))?)?\s*$")
TB_SUFFIX_RE = re.compile(r"(?:Error|Exception|Interrupt|Exit|StopIteration|Warning|Failure|Timeout)$")
# Outside a traceback only unmistakable shapes count: `[pkg.]CamelError: message` at column 0 (or glued
# after a progress bar's `]`).
BARE_EXC_RE = re.compile(
    r"(?:^|(?<=\]))(?P<type>(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)):(?: (?P<msg>.*?))?\s*$"
)
# rich's traceback (`rich.traceback.install()`, `RichHandler(rich_tracebacks=True)`; rich/traceback.py
# `Traceback._render_stack`): the frames in a box titled `Traceback (most recent call last)`, each frame a
# `<file>:<line> in <function>` row (a long file name wrapped onto the row before) over its source lines, the
# failing one marked `❱ <n>`; after the box the `<type>: <message>` line, the message word-wrapped at the
# console's width onto the lines after it.
RICH_START_RE = re.compile(r"^(?P<pre>\s*)╭─+ Traceback \(most recent call last\) ─+╮\s*$")
RICH_FRAME_RE = re.compile(r"^\s*│ (?P<file>\S(?:[^│]*?\S)?):(?P<line>\d+) in (?P<func>\S+) *│\s*$")
RICH_PATH_RE = re.compile(r"^\s*│ (?P<part>[^\s│]{2,}) *│\s*$")
RICH_SOURCE_RE = re.compile(r"^\s*│ (?:│ )?❱ ?\d+ [│ ]*(?P<src>\S.*?) *│\s*$")
RICH_ROW_RE = re.compile(r"^\s*[│╰╭]")
RICH_END_RE = re.compile(r"^\s*╰─+╯\s*$")
DATALOADER_RE = re.compile(r"Caught (?P<exc>\w+) in DataLoader worker process (?P<worker>\d+)")
# A per-line prefix the reader does not know (`gpu-a8: `, `host17 | `, `[node3] `, `worker-2>`): learned from
# the `Traceback` line, confirmed by the next line of that writer, which must carry it before a `File` frame.
# A column-aligned prefix pads the writer's name with spaces before the separator (`docker compose logs`:
# `trainer-1  | `, the service name padded to the longest one).
LEARN_PRE_RE = re.compile(r"^(?!\s)[^\s\"']{1,60}(?: [^\s\"']{1,60}){0,3} {0,40}(?::|\||>|\]|\]:) ?$")
PRE_RANK_RE = re.compile(r"(?:^|[^A-Za-z0-9])rank[ _-]?(?P<rank>\d{1,6})(?![0-9])", re.IGNORECASE)
PRE_HOST_RE = re.compile(r"^[\[(]?(?P<host>(?:\d{1,3}\.){3}\d{1,3}|[A-Za-z][\w-]{0,62}\d[\w-]{0,62}"
                         r"(?:\.[A-Za-z][\w-]{0,62}){0,6})[\])]?\s*[:|>\]]")
# CPython's report of an exception it could not raise (`PyErr_WriteUnraisable`, Python/errors.c: in a
# `__del__`, a weakref or atexit callback, a thread's teardown): `Exception ignored in: <obj>` (3.13 also
# `Exception ignored while <doing what>`) on the line before the traceback. The exception was printed and
# dropped; the process went on.
UNRAISABLE_RE = re.compile(r"^\s*Exception ignored (?:in\b|on\b|while\b)")
# Frames kept per traceback (the innermost; the outermost are dropped past it). Framework stacks are deep:
# a Lightning 2.x training step that logs with `sync_dist=True` is 50-55 frames from `<module>` to the
# collective (trainer, loops, closure, optimizer, precision plugin, module hooks, metric update, `_sync_ddp`),
# and two ranks' stacks are compared from their outermost frame (analysis/callsite.py `common_prefix`): a
# stack cut at its top no longer lines up with an uncut one, and frames every rank runs read as a side's.
MAX_FRAMES = 80
MAX_TB_LINES = 3000
MAX_NOISE = 20        # unrelated lines tolerated inside one traceback (interleaved writers)
MAX_TAIL = 8          # message continuation lines tolerated after the exception line
MAX_MESSAGE = 2000
MAX_SOURCE = 200      # characters kept of a frame's source line
# A Ray task's relayed traceback (model.RAY_TASK_ERROR_RE): `[<module>.]RayTaskError(<cause>): ray::<proc>()
# (pid=...)` in place of the `Traceback (most recent call last):` header; the frames and the cause that
# follow are the remote process's, the worker Ray tags `(<Actor> pid=<pid>)` in the same console.
MODULE_PATH_RE = re.compile(r"(?:[a-z_]\w{0,100}\.){0,20}")
# Python 3.11+ marks the failing expression under a source line with carets (`~~~^^^`).
CARET_RE = re.compile(r"^\s*[~^]+\s*$")


@dataclass
class _Tb:
    """One traceback (or chain of tracebacks) being read for one rank."""

    first: LogLine
    indent: int
    phase: str = "frames"          # frames | tail (after the exception line) | chain (awaiting Traceback)
    exc_type: str | None = None
    message: str | None = None
    exc_line: LogLine | None = None
    chained: list[str] = field(default_factory=list)
    chained_messages: list[str] = field(default_factory=list)   # the earlier exceptions' messages
    unraisable: bool = False        # printed under CPython's `Exception ignored in ...` line
    frames: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the source line printed under each frame, or ""
    lines: int = 0
    noise: int = 0
    tail: int = 0
    original: bool = False          # inside a DataLoader worker's "Original Traceback"
    pre: str = ""                   # the writer's learned line prefix, stripped from its lines
    confirmed: bool = True          # False until a line after `Traceback` carried `pre` before a frame
    outer_type: str | None = None   # the re-raised type while reading the original one
    outer_message: str | None = None
    original_message: str | None = None
    worker: int | None = None
    rich: bool = False              # a rich box: frames as `file:line in func` rows, the message wrapped
    # (writer, ip) of the Ray worker whose traceback Ray relayed
    remote: tuple[str, str | None] | None = None
    path_part: str = ""             # a rich frame row's file name wrapped onto the row before
    # the frames of the raising rank's own traceback, kept while relayed tracebacks (DCP) are read
    outer_frames: list[tuple[str, int | None, str | None]] | None = None
    outer_sources: list[str] | None = None
    # the frames of the chain's earlier traceback, kept when the next one starts
    context_frames: list[tuple[str, int | None, str | None]] | None = None
    context_sources: list[str] | None = None


def _context_stack(tb: _Tb, frames: list[tuple[str, int | None, str | None]],
                   sources: list[str]) -> tuple[list[str] | None, list[str] | None]:
    """The whole stack where the chain's earlier exception was raised, when the last one was raised while
    handling it (`During handling of the above exception, another exception occurred`).

    Python prints each traceback of an implicit chain (`__context__`) from the frame that caught it down to
    where it was raised (Lib/traceback.py `TracebackException`): the earlier one starts at the handler's
    frame, which the last one, raised inside that handler, also holds. The last traceback's frames down to
    that frame, then the earlier one's below it, are the stack at the earlier exception: a process
    interrupted (KeyboardInterrupt) inside a collective's error handling was waiting in that collective.
    """
    ctx, ctx_src = tb.context_frames, tb.context_sources
    if not ctx or not frames or tb.original or tb.outer_frames is not None:
        return None, None
    top_file, _, top_func = ctx[0]
    at = next((i for i in range(len(frames) - 1, -1, -1)
               if frames[i][0] == top_file and frames[i][2] == top_func), None)
    if at is None:
        return None, None
    stack = [*frames[:at], *ctx]
    src = [*sources[:at], *(ctx_src or [""] * len(ctx))]
    return _frame_strings(stack), src


def _frame_strings(frames: list[tuple[str, int | None, str | None]]) -> list[str]:
    """The `frames` field: `file:line in function` per frame (`file:line` where no function is printed)."""
    return [f"{f}:{n} in {fn}" if fn else f"{f}:{n}" for f, n, fn in frames]


class TracebackParser(Parser):
    """Python tracebacks and bare exception lines → `exception`."""

    name = "traceback"
    triggers = ("Traceback (most recent call last)", "Error:", "Exception:", "Exception ignored ")
    emits = (
        EventSpec("exception", ("exc_type", "message", "frame_file", "frame_line", "frame_func", "chained",
                                "chained_messages", "unraisable", "frames", "sources", "dataloader_worker",
                                "original_message", "writer_tag", "context_frames", "context_sources"),
                  "one Python traceback (or a bare `XxxError: msg` line); chained lists earlier exception "
                  "types, chained_messages their messages (the first is the chain's root cause); "
                  "unraisable: the traceback came under CPython's `Exception ignored in ...` line (printed "
                  "and dropped, the process went on); sources holds the source line printed under each "
                  "frame (\"\" where none), aligned with frames; writer_tag: the per-line prefix the reader "
                  "did not know and learned from the traceback (its writer's lines carry it); "
                  "context_frames/context_sources: the whole stack where the chain's earlier exception was "
                  "raised, when the last one was raised while handling it (None otherwise)"),
    )
    examples = (
        Example("Traceback (most recent call last):\n"
                "  File \"train.py\", line 42, in <module>\n"
                "    main()\n"
                "  File \"train.py\", line 30, in main\n"
                "    loss.backward()\n"
                "RuntimeError: CUDA error: an illegal memory access was encountered\n"
                "CUDA kernel errors might be asynchronously reported at some other API call,so the "
                "stacktrace below might be incorrect.\n",
                "exception",
                {"exc_type": "RuntimeError",
                 "message": "CUDA error: an illegal memory access was encountered",
                 "frame_file": "train.py", "frame_line": 30, "frame_func": "main", "chained": [],
                 "sources": ["main()", "loss.backward()"]},
                "torch 1.10-2.3 (no rank prefix)"),
        Example("[rank1]: Traceback (most recent call last):\n"
                "[rank0]: Traceback (most recent call last):\n"
                "[rank1]:   File \"/home/u/train.py\", line 12, in <module>\n"
                "[rank0]:   File \"/home/u/train.py\", line 12, in <module>\n"
                "[rank1]:     dist.all_gather(out, t)\n"
                "[rank0]:     dist.all_gather(out, t)\n"
                "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
                "/pytorch/torch/csrc/distributed/c10d/"
                "NCCLUtils.hpp:291, remote process exited or there was a network error, NCCL version 2.20.5\n"
                "[rank1]: ncclRemoteError: A call failed possibly due to a network error or a remote process "
                "exiting prematurely.\n"
                "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
                "a total capacity of 39.39 GiB of which 1.02 GiB is free.\n",
                "exception",
                {"exc_type": "torch.distributed.DistBackendError", "frame_file": "/home/u/train.py",
                 "frame_line": 12, "frame_func": "<module>"},
                "torch 2.4-2.9 (excepthook rank prefix, two ranks interleaved)"),
        Example("job-5c1/worker-2 | Traceback (most recent call last):\n"
                "job-5c1/worker-2 |   File \"/app/train.py\", line 9, in <module>\n"
                "job-5c1/worker-2 |     import fused_kernels\n"
                "job-5c1/worker-2 | ImportError: libcudart.so.11.0: cannot open shared object file\n",
                "exception", {"exc_type": "ImportError", "writer_tag": "job-5c1/worker-2 | ",
                              "frame_file": "/app/train.py"},
                "any (written here: a job runner's per-line prefix the reader does not know)"),
        Example("trainer   | Traceback (most recent call last):\n"
                "evaluator | step 40 loss 0.3310\n"
                "trainer   |   File \"/app/train.py\", line 61, in main\n"
                "trainer   |     batch = collate(batch)\n"
                "trainer   | KeyError: 'labels'\n",
                "exception", {"exc_type": "KeyError", "writer_tag": "trainer   | ", "frame_line": 61},
                "any (written here: a column-aligned role prefix, as `docker compose logs` pads each name "
                "to the longest one; compose's own `<service>-<index>  | ` is a file dialect, "
                "ingest/prefix.py)"),
        Example("[rank0]: Traceback (most recent call last):\n"
                "[rank0]:   File \"/home/u/train.py\", line 12, in <module>\n"
                "[rank0]:     x = torch.empty(1 << 40, device=\"cuda\")\n"
                "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 TiB. GPU 0 has "
                "a total capacity of 39.39 GiB of which 38.00 GiB is free.\n",
                "exception", {"exc_type": "torch.OutOfMemoryError", "frame_line": 12},
                "torch 2.4-2.9"),
        Example("Traceback (most recent call last):\n"
                "  File \"/opt/lib/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py\", line "
                "155, in "
                "_create_tcp_store\n"
                "    store = TCPStore(\n"
                "RuntimeError: The client socket has timed out after 120s while trying to connect to "
                "(10.0.0.1, "
                "29500).\n"
                "\n"
                "The above exception was the direct cause of the following exception:\n"
                "\n"
                "Traceback (most recent call last):\n"
                "  File \"/opt/bin/torchrun\", line 8, in <module>\n"
                "    sys.exit(main())\n"
                "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the "
                "C10d "
                "store has failed. See inner exception for details.\n",
                "exception",
                {"exc_type": "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError",
                 "chained": ["RuntimeError"], "frame_file": "/opt/bin/torchrun", "frame_line": 8},
                "torch 1.11-2.1"),
        Example("Traceback (most recent call last):\n"
                "  File \"/home/user/train/denoise.py\", line 106, in train_step\n"
                "    loss.backward()\n"
                "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
                "[127.0.0.1]:41367: Connection reset by peer\n"
                "\n"
                "The above exception was the direct cause of the following exception:\n"
                "\n"
                "Traceback (most recent call last):\n"
                "  File \"/home/user/train/denoise.py\", line 158, in main\n"
                "    raise RuntimeError(f\"training step {step} failed\") from e\n"
                "RuntimeError: training step 3 failed\n",
                "exception",
                {"exc_type": "RuntimeError", "message": "training step 3 failed", "chained": ["RuntimeError"],
                 "chained_messages": ["[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
                                      "[127.0.0.1]:41367: Connection reset by peer"]},
                "torch 2.13 (a user's wrapper re-raising a peer's failure, probe53)"),
        Example("Exception ignored in: <function _Writer.__del__ at 0x7fa3d36b4360>\n"
                "Traceback (most recent call last):\n"
                "  File \"/home/user/train/denoise.py\", line 183, in __del__\n"
                "OSError: [Errno 9] Bad file descriptor\n",
                "exception", {"exc_type": "OSError", "unraisable": True},
                "CPython 3.8-3.13 PyErr_WriteUnraisable"),
        Example("Traceback (most recent call last):\n"
                "  File \"train.py\", line 5, in <module>\n"
                "    for batch in loader:\n"
                "  File \"/opt/lib/torch/utils/data/dataloader.py\", line 1344, in _process_data\n"
                "    data.reraise()\n"
                "ValueError: Caught ValueError in DataLoader worker process 3.\n"
                "Original Traceback (most recent call last):\n"
                "  File \"/opt/lib/torch/utils/data/_utils/worker.py\", line 308, in _worker_loop\n"
                "    data = fetcher.fetch(index)\n"
                "  File \"/home/u/dataset.py\", line 20, in __getitem__\n"
                "    raise ValueError(\"bad sample\")\n"
                "ValueError: bad sample\n",
                "exception",
                {"exc_type": "ValueError", "message": "Caught ValueError in DataLoader worker process 3.",
                 "dataloader_worker": 3, "original_message": "bad sample", "frame_file": "/home/u/dataset.py",
                 "frame_line": 20, "frame_func": "__getitem__"},
                "torch 1.10-2.9"),
        Example("╭──────────── Traceback (most recent call last) ────────────╮\n"
                "│ /home/u/proj/train.py:57 in <module>                       │\n"
                "│                                                            │\n"
                "│   56 if __name__ == \"__main__\":                             │\n"
                "│ ❱ 57 │   fit()                                             │\n"
                "│                                                            │\n"
                "│ /home/u/.venv/lib/python3.11/site-packages/torch/distribut │\n"
                "│ ed/c10d_logger.py:81 in wrapper                            │\n"
                "│                                                            │\n"
                "│ ❱ 81 │   │   │   return func(*args, **kwargs)              │\n"
                "╰────────────────────────────────────────────────────────────╯\n"
                "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] \n"
                "Connection closed by peer [10.1.0.4]:41122\n",
                "exception",
                {"exc_type": "RuntimeError",
                 "message": "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
                            "peer [10.1.0.4]:41122",
                 "frame_file": "/home/u/.venv/lib/python3.11/site-packages/torch/distributed/"
                               "c10d_logger.py",
                 "frame_line": 81, "frame_func": "wrapper",
                 "sources": ["fit()", "return func(*args, **kwargs)"]},
                "any (rich.traceback.install(): a boxed traceback, the message word-wrapped at the console's "
                "width; written here, 62 columns)"),
        Example("Traceback (most recent call last):\n"
                "  File \"/srv/serve.py\", line 88, in <module>\n"
                "    outputs = ray.get(refs)\n"
                "ray.exceptions.RayTaskError(IndexError): ray::ShardWorker.execute_model() (pid=7311, "
                "ip=10.4.0.12, actor_id=5be0c6a1d2e3f4a5b6c7d8e901000000, repr=<ShardWorker object at "
                "0x7f3a2c1d0e50>)\n"
                "  File \"/srv/worker.py\", line 140, in execute_model\n"
                "    block = self.block_table[seq_id]\n"
                "IndexError: list index out of range\n",
                "exception", {"exc_type": "IndexError", "message": "list index out of range",
                              "frame_file": "/srv/worker.py", "frame_line": 140},
                "ray 2.x (ray/exceptions.py RayTaskError.__str__; written here)"),
        Example("Traceback (most recent call last):\n"
                "  File \"train.py\", line 42, in <module>\n"
                "    main()\n",
                "exception", {"exc_type": None, "frame_file": "train.py", "frame_line": 42},
                "any (log cut inside a traceback)"),
        Example("[rank3]: torch.distributed.DistBackendError: [3] is setting up NCCL communicator and "
                "retrieving "
                "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
                "Socket Timeout",
                "exception", {"exc_type": "torch.distributed.DistBackendError", "frame_file": None},
                "torch 2.4-2.9 (bare line)"),
        Example("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
                "unhandled "
                "cuda error, NCCL version 21.0.3", "exception",
                {"exc_type": "RuntimeError", "message": "NCCL error in: ../torch/csrc/distributed/c10d/"
                 "ProcessGroupNCCL.cpp:1191, unhandled cuda error, NCCL version 21.0.3"},
                "torch 1.10-1.12 (bare line)"),
    )
    near_misses = (
        "    raise RuntimeError(\"boom\")",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
        "prematurely.",
        "  what():  [PG 0 Rank 1] Process group watchdog thread terminated with exception: CUDA error",
        "NCCL WARN Error: failed to extend /dev/shm/nccl-1 to 9637892 bytes",
        "  traceback : Traceback (most recent call last):",
        "Epoch 3 finished without Error: none",
    )

    def __init__(self) -> None:
        self.open: dict[tuple[int | None, str | None, str], _Tb] = {}  # (rank, host, learned prefix)
        # (rank, host) -> (path, line) of that writer's last `Exception ignored in ...` line
        self.ignored: dict[tuple[int | None, str | None], tuple[str, int]] = {}

    def wants_more(self) -> bool:
        return bool(self.open)

    def close(self) -> Iterable[Event]:
        out = [self._finish(tb) for tb in self.open.values()]
        self.open = {}
        return [e for e in out if e is not None]

    def _route(self, line: LogLine) -> tuple[tuple[int | None, str | None, str], LogLine]:
        """The open traceback a line belongs to (by rank and learned prefix) and the line without the prefix.

        A traceback opened behind a prefix is confirmed by its writer's next frame line: carrying the same
        prefix (a per-line prefix, stripped from then on), or none (text before `Traceback` on its line only).
        """
        for (rank, host, pre), tb in list(self.open.items()):
            if not pre or rank != line.rank or host != line.host:
                continue
            if line.text.startswith(pre) and (tb.confirmed or FRAME_RE.match(line.text[len(pre):])):
                tb.confirmed = True
                return (rank, host, pre), replace(line, text=line.text[len(pre):])
            if tb.confirmed:
                continue
            del self.open[(rank, host, pre)]
            if FRAME_RE.match(line.text) and (rank, host, "") not in self.open:
                tb.pre, tb.confirmed = "", True
                self.open[(rank, host, "")] = tb
            elif tb.noise < MAX_NOISE:
                tb.noise += 1  # another writer's line between the `Traceback` line and its first frame
                self.open[(rank, host, pre)] = tb
        return (line.rank, line.host, ""), line

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        key, line = self._route(line)
        tb = self.open.get(key)
        if tb is not None:
            consumed, done = self._step(tb, line)
            if done:
                del self.open[key]
                ev = self._finish(tb)
                if ev is not None:
                    out.append(ev)
            if consumed:
                return out
        text = line.text
        if UNRAISABLE_RE.match(text):
            self.ignored[(line.rank, line.host)] = (line.ref.path, line.ref.line)
            return out
        m = TB_START_RE.search(text)
        if m and not m["orig"] and not key[2] and LEARN_PRE_RE.match(m["pre"]):
            learned = (line.rank, line.host, m["pre"])
            if learned not in self.open:
                self.open[learned] = _Tb(first=line, indent=0, pre=m["pre"], confirmed=False)
                return out
        if m and not m["orig"] and TB_PRE_OK_RE.search(m["pre"]):
            pre = m["pre"]
            indent = len(pre) - len(pre.lstrip(" ")) if not pre.strip() else 0
            # the `Traceback` line right under its writer's `Exception ignored in ...` line (another writer's
            # line may sit between them in a merged console)
            seen = self.ignored.pop((line.rank, line.host), None)
            unraisable = (seen is not None and seen[0] == line.ref.path
                          and 0 < line.ref.line - seen[1] <= HEADER_GAP_LINES)
            self.open[key] = _Tb(first=line, indent=indent, unraisable=unraisable)
            return out
        m = RICH_START_RE.match(text) if "╭" in text else None
        if m:
            self.open[key] = _Tb(first=line, indent=len(m["pre"]), rich=True)
            return out
        m = BARE_EXC_RE.search(text)
        if m:
            out.append(self._bare(line, m))
        return out

    # -- state machine -------------------------------------------------------------------------
    def _step(self, tb: _Tb, line: LogLine) -> tuple[bool, bool]:
        """Advance `tb` by one line; returns (line consumed, traceback finished)."""
        tb.lines += 1
        if tb.lines > MAX_TB_LINES:
            return False, True
        text = line.text
        if tb.phase == "chain":
            if not text.strip() or CHAIN_RE.match(text):
                return True, False
            m = TB_START_RE.search(text)
            if (m and TB_PRE_OK_RE.search(m["pre"])) or (tb.rich and RICH_START_RE.match(text)):
                tb.context_frames, tb.context_sources = tb.frames, tb.sources
                tb.phase, tb.frames, tb.sources, tb.noise = "frames", [], [], 0
                return True, False
            return False, True
        if tb.phase == "tail":
            if CHAIN_RE.match(text):
                if tb.exc_type:
                    tb.chained.append(tb.exc_type)
                    tb.chained_messages.append((tb.message or "")[:MAX_MESSAGE])
                tb.phase = "chain"
                return True, False
            m = TB_START_RE.search(text)
            if m and m["orig"] and tb.worker is not None and not tb.original:
                tb.original, tb.phase, tb.frames, tb.sources, tb.noise = True, "frames", [], [], 0
                tb.outer_type, tb.outer_message = tb.exc_type, tb.message
                return True, False
            relays = (tb.outer_type if tb.original else tb.exc_type) or ""
            if m and relays.endswith(DCP_EXC) and DCP_RANK_TB_RE.search(text):
                if not tb.original:
                    tb.outer_type, tb.outer_message = tb.exc_type, tb.message
                    tb.outer_frames, tb.outer_sources = tb.frames, tb.sources
                tb.original, tb.phase, tb.frames, tb.sources, tb.noise = True, "frames", [], [], 0
                return True, False
            if m or BARE_EXC_RE.search(text) or FRAME_RE.match(text) or (
                    tb.rich and RICH_START_RE.match(text)):
                return False, True
            if text.strip():
                tb.tail += 1
                if tb.tail > MAX_TAIL:
                    return False, True
                if tb.rich and not tb.original:  # the message word-wrapped at the console's width
                    tb.message = f"{tb.message or ''} {text.strip()}".strip()[:MAX_MESSAGE]
            return True, False
        # frames phase
        if not text.strip():
            return True, False
        if tb.rich and RICH_ROW_RE.match(text):
            self._rich_row(tb, text)
            return True, False
        m = FRAME_RE.match(text)
        if m:
            tb.frames.append((m["file"], to_count(m["line"]), m["func"]))
            tb.sources.append("")
            if len(tb.frames) > MAX_FRAMES:
                del tb.frames[0]
                del tb.sources[0]
            tb.noise = 0
            return True, False
        indent = len(text) - len(text.lstrip(" "))
        if indent > tb.indent:
            # The first line under a frame is its source line; carets and continuations follow it.
            if tb.sources and not tb.sources[-1] and not CARET_RE.match(text):
                tb.sources[-1] = text.strip()[:MAX_SOURCE]
            return True, False  # source line, caret line, or a frame of a nested listing
        body = text[tb.indent:] if indent == tb.indent else text
        m = RAY_TASK_ERROR_RE.search(body) if tb.remote is None and "ray::" in body else None
        if m and MODULE_PATH_RE.fullmatch(body, 0, m.start()):
            # The caller's frames (down to `ray.get`) are not where it was raised: the remote frames follow.
            tb.frames, tb.sources, tb.noise = [], [], 0
            tb.remote = (ray_writer(m['proc'].split('.')[0], m['pid']), m["ip"])
            return True, False
        m = TB_EXC_RE.match(body)
        if m and (TB_SUFFIX_RE.search(m["type"]) or (m["msg"] is not None and "." in m["type"])):
            self._exception(tb, line, m["type"], m["msg"])
            return True, False
        if TB_START_RE.search(text):
            tb.noise += 1  # another writer's traceback interleaved with ours
            return True, tb.noise > MAX_NOISE
        tb.noise += 1
        return tb.noise <= MAX_NOISE, tb.noise > MAX_NOISE

    def _rich_row(self, tb: _Tb, text: str) -> None:
        """One row of a rich traceback box: a frame, a wrapped file name, a marked source line, or other."""
        m = RICH_FRAME_RE.match(text)
        if m:
            tb.frames.append((tb.path_part + m["file"], to_count(m["line"]), m["func"]))
            tb.sources.append("")
            tb.path_part = ""
            if len(tb.frames) > MAX_FRAMES:
                del tb.frames[0]
                del tb.sources[0]
            return
        m = RICH_SOURCE_RE.match(text)
        if m and tb.sources and not tb.sources[-1]:
            tb.sources[-1] = m["src"][:MAX_SOURCE]
        m = RICH_PATH_RE.match(text)
        tb.path_part = m["part"] if m and len(m["part"]) < 400 else ""

    def _exception(self, tb: _Tb, line: LogLine, exc_type: str, msg: str | None) -> None:
        message = (msg or "").strip()[:MAX_MESSAGE] or None
        if tb.original:
            tb.original_message = message
            tb.phase, tb.tail = "tail", 0
            return
        tb.exc_type, tb.message, tb.exc_line = exc_type, message, line
        m = DATALOADER_RE.search(message or "")
        tb.worker = to_count(m["worker"]) if m else None
        tb.phase, tb.tail = "tail", 0

    def _finish(self, tb: _Tb) -> Event | None:
        exc_type = tb.outer_type if tb.original else tb.exc_type
        message = tb.outer_message if tb.original else tb.message
        if exc_type is None and not tb.frames:
            return None
        frames = tb.frames if tb.outer_frames is None else tb.outer_frames
        sources = tb.sources if tb.outer_sources is None else tb.outer_sources
        inner = frames[-1] if frames else (None, None, None)
        ctx_frames, ctx_sources = _context_stack(tb, frames, sources)
        ev = self.event(
            "exception", tb.first, exc_type=exc_type, message=message, frame_file=inner[0],
                frame_line=inner[1],
            frame_func=inner[2], chained=list(tb.chained), chained_messages=list(tb.chained_messages),
            unraisable=tb.unraisable,
            frames=_frame_strings(frames),
            sources=list(sources),
            dataloader_worker=tb.worker, original_message=tb.original_message,
            context_frames=ctx_frames, context_sources=ctx_sources,
        )
        if tb.exc_line is not None:
            ev = replace(ev, text=tb.exc_line.text)
        if tb.pre:
            ev = _attribute(ev, tb.pre)
        if tb.remote is not None:
            ev = replace(ev, writer=tb.remote[0], host=ev.host or tb.remote[1])
        return ev

    def _bare(self, line: LogLine, m: re.Match[str]) -> Event:
        message = (m["msg"] or "").strip()[:MAX_MESSAGE] or None
        dl = DATALOADER_RE.search(message or "")
        return self.event("exception", line, exc_type=m["type"], message=message, frame_file=None,
                          frame_line=None, frame_func=None, chained=[], chained_messages=[], unraisable=False,
                          frames=[], sources=[],
                          dataloader_worker=to_count(dl["worker"]) if dl else None, original_message=None)


def _attribute(ev: Event, pre: str) -> Event:
    """Rank and host a learned prefix names (`[rank 3] `, `gpu-a8: `), where the envelope named none."""
    rank, host = ev.rank, ev.host
    m = PRE_RANK_RE.search(pre)
    if rank is None and m:
        rank = to_count(m["rank"])
    elif host is None and not m:
        h = PRE_HOST_RE.match(pre)
        host = h["host"] if h else None
    return replace(ev, rank=rank, host=host, fields={**ev.fields, "writer_tag": pre})
