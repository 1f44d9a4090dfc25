"""Read `py-spy dump` output (a live process's stacks) into one `stack_dump` event per thread.

Example (py-spy 0.3-0.4): `Thread 15714 (idle): "MainThread"` followed by indented frames, innermost
first, such as `    barrier (torch/distributed/distributed_c10d.py:5356)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import INT64_MAX, EventSpec, Example, Parser, to_count
from hanglens.parsers.stacks import hang_fields, stack_fields

PROCESS_RE = re.compile(r"^\s*Process (?P<pid>\d+): (?P<cmd>.*?)\s*$")
PYTHON_RE = re.compile(r"^\s*Python v\d+\.\d+\S* \(.*\)\s*$")
# py-spy 0.4 prints the OS thread id in decimal, 0.3 (and 0.4 where no native id is known) the pthread id
# in hex; the state is active or idle, with `+gil` when the thread holds the GIL.
THREAD_RE = re.compile(
    r"^\s*Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>(?:active|idle)(?:\+gil)?|gil)\)"
    r"(?:: \"(?P<name>.*)\")?\s*$"
)
FRAME_RE = re.compile(r"^\s*(?P<func>\S.*?) \((?P<file>[^()\s][^()]*?):(?P<line>\d+)\)\s*$")
# `--native` frames without line information: `clock_nanosleep (libc.so.6)`, `0x7f78ad23b24a (libc.so.6)`.
NATIVE_RE = re.compile(r"^\s+\S.*\([^()\s]+\)\s*$")
NATIVE_FILE_RE = re.compile(r"\.(?:c|cc|cpp|cxx|cu|h|hh|hpp|rs|S|s)$")
# The dumped process's own command line: `torch.distributed.launch` (without `--use-env`) and DeepSpeed's
# launcher start every worker with `--local_rank=<l>` (1.x spelling; `--local-rank=<l>` from torch 2.0) in its
# argv (log-formats.md item 105 shows the DeepSpeed argv), so a dump of that process is local rank <l>'s.
LOCAL_RANK_ARG_RE = re.compile(r"(?:^|\s)--local[_-]rank[= ](?P<lr>\d{1,5})(?!\S)")
MAX_FRAMES = 60
MAX_THREAD_LINES = 4000   # frames plus `--locals` blocks of one thread
MAX_HEADER_LINES = 6      # lines between `Process N:` and the first `Thread` line


@dataclass
class _Thread:
    line: LogLine
    tid: str
    state: str
    name: str | None
    frames: list[tuple[str, int | None, str]] = field(default_factory=list)
    indent: int | None = None
    lines: int = 0


@dataclass
class _Dump:
    """One process's dump being read for one writer (rank)."""

    pid: int | None = None
    command: str | None = None
    header: int = 0                 # lines seen since the Process line while no thread is open
    thread: _Thread | None = None


class PyspyParser(Parser):
    """`py-spy dump --pid N` text (with or without `--native`, `--locals`) → `stack_dump` per thread."""

    name = "pyspy"
    triggers = ("Process ", "Thread ")
    emits = (
        EventSpec("stack_dump", ("pid", "thread", "thread_id", "state", "frames", "command", "frame_file",
                                 "frame_line", "frame_func", "dumper", "main", "waits_on", "collective"),
                  "one thread of a `py-spy dump`: frames as \"file:line in func\", outermost first (like "
                  "`exception`), frame_* the innermost Python frame, state active/idle(+gil); dumper, main, "
                  "waits_on, collective as for faulthandler dumps"),
        EventSpec("hang_detected", ("detector", "op", "collective", "pid"),
                  "detector=stack_dump: a py-spy dump's main thread sits inside a c10d collective"),
    )
    examples = (
        Example("Process 15714: /usr/bin/python3 -u train.py --pg-timeout 60\n"
                "Python v3.11.7 (/usr/bin/python3.11)\n"
                "\n"
                "Thread 15714 (idle): \"MainThread\"\n"
                "    barrier (torch/distributed/distributed_c10d.py:5356)\n"
                "    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)\n"
                "    main (train.py:190)\n"
                "    <module> (train.py:196)\n",
                "stack_dump",
                {"pid": 15714, "thread": "MainThread", "thread_id": 15714, "state": "idle",
                 "command": "/usr/bin/python3 -u train.py --pg-timeout 60",
                 "frames": ["train.py:196 in <module>", "train.py:190 in main",
                            "torch/distributed/c10d_logger.py:83 in _exception_logger.<locals>.wrapper",
                            "torch/distributed/distributed_c10d.py:5356 in barrier"],
                 "frame_file": "torch/distributed/distributed_c10d.py", "frame_line": 5356,
                 "frame_func": "barrier"},
                "py-spy 0.3-0.4"),
        Example("Thread 0x7F3A2C1B8740 (active+gil): \"MainThread\"\n"
                "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
                "    train_step (train.py:88)\n",
                "stack_dump",
                {"thread_id": 0x7F3A2C1B8740, "state": "active+gil", "pid": None, "command": None,
                 "frame_func": "all_reduce", "frames": ["train.py:88 in train_step",
                                                        "torch/distributed/distributed_c10d.py:2050 in "
                                                        "all_reduce"]},
                "py-spy 0.3-0.4 (hex thread id, head of the dump cut off)"),
        Example("Process 901: python train.py\n"
                "Python v3.10.12 (/usr/bin/python3.10)\n"
                "\n"
                "Thread 901 (idle): \"MainThread\"\n"
                "    clock_nanosleep (libc.so.6)\n"
                "    time_sleep (libpython3.10.so.1.0)\n"
                "    wait (train.py:7)\n"
                "        Arguments:\n"
                "            x: 3\n"
                "        Locals:\n"
                "            y: 6\n"
                "    <module> (train.py:9)\n"
                "    0x7f78ad23b24a (libc.so.6)\n"
                "Thread 903 (idle): \"pt_elastic\"\n"
                "    wait (threading.py:324)\n",
                "stack_dump",
                {"thread": "MainThread", "frames": ["train.py:9 in <module>", "train.py:7 in wait"],
                 "frame_line": 7},
                "py-spy 0.3-0.4 (--native --locals)"),
        Example("Process 7310: /usr/bin/python3 train.py\n"
                "Python v3.11.7 (/usr/bin/python3.11)\n"
                "\n"
                "Thread 7310 (idle): \"MainThread\"\n"
                "    broadcast (torch/distributed/distributed_c10d.py:2712)\n"
                "    <module> (train.py:40)\n",
                "hang_detected", {"detector": "stack_dump", "op": "BROADCAST", "pid": 7310},
                "py-spy 0.3-0.4 (main thread inside a collective)"),
    )
    near_misses = (
        "Sending process 15714 closing signal SIGTERM",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 15709 got signal: 15",
        "[PG 0 Rank 1] Process group watchdog thread terminated with exception: NCCL error",
        "Thread 3 (idle) was joined",
        "Process 12: started",
    )

    def __init__(self) -> None:
        self.open: dict[int | None, _Dump] = {}

    def wants_more(self) -> bool:
        return bool(self.open)

    def close(self) -> Iterable[Event]:
        out = [ev for d in self.open.values() for ev in self._finish(d)]
        self.open = {}
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        key = line.rank
        dump = self.open.get(key)
        text = line.text
        m = PROCESS_RE.match(text)
        if m:
            out = self._flush(key)
            self.open[key] = _Dump(pid=to_count(m["pid"]), command=m["cmd"] or None)
            return out
        m = THREAD_RE.match(text)
        if m:
            out = self._flush(key, keep=True)
            dump = self.open.setdefault(key, _Dump())
            tid = m["tid"]
            dump.thread = _Thread(line=line, tid=tid, state=m["state"], name=m["name"])
            return out
        if dump is None:
            return ()
        if dump.thread is None:
            dump.header += 1
            if dump.header > MAX_HEADER_LINES or not (not text.strip() or PYTHON_RE.match(text)):
                del self.open[key]
            return ()
        if self._step(dump.thread, text):
            return ()
        return self._flush(key)

    def _step(self, th: _Thread, text: str) -> bool:
        """Take one line into the open thread; False when the line is not part of it (the thread ends)."""
        th.lines += 1
        if th.lines > MAX_THREAD_LINES or not text.strip():
            return False
        indent = len(text) - len(text.lstrip())
        if th.indent is not None and indent > th.indent:
            return True  # an `Arguments:`/`Locals:` block of `--locals`
        m = FRAME_RE.match(text)
        if m and not NATIVE_FILE_RE.search(m["file"]):
            if th.indent is None:
                th.indent = indent
            if len(th.frames) < MAX_FRAMES:
                th.frames.append((m["file"], to_count(m["line"]), m["func"].strip()))
            return True
        if m or NATIVE_RE.match(text):
            if th.indent is None:
                th.indent = indent
            return True
        return False

    def _flush(self, key: int | None, keep: bool = False) -> list[Event]:
        """Emit the open thread of `key`; keep the process context when another thread follows."""
        dump = self.open.get(key)
        if dump is None:
            return []
        out = self._finish(dump)
        if keep:
            dump.thread, dump.header = None, 0
        else:
            del self.open[key]
        return out

    def _finish(self, dump: _Dump) -> list[Event]:
        th = dump.thread
        if th is None:
            return []
        if th.tid.startswith("0x"):
            tid = int(th.tid, 16) if len(th.tid) <= 18 else None  # 16 hex digits at most: 64 bits
            tid = tid if tid is not None and tid <= INT64_MAX else None
        else:
            tid = to_count(th.tid)
        inner = th.frames[0] if th.frames else (None, None, None)
        outer_first = list(reversed(th.frames))
        facts = stack_fields(outer_first, th.name)
        ev = self.event(
            "stack_dump", th.line, pid=dump.pid, thread=th.name, thread_id=tid, state=th.state,
            frames=[f"{f}:{n} in {fn}" for f, n, fn in outer_first], command=dump.command,
            frame_file=inner[0], frame_line=inner[1], frame_func=inner[2], dumper="py-spy", **facts,
        )
        hang = hang_fields(facts)
        if hang is not None:
            hang["pid"] = dump.pid
        out = [ev] if hang is None else [ev, self.event("hang_detected", th.line, **hang)]
        lr = LOCAL_RANK_ARG_RE.search(dump.command or "")
        if lr is not None and th.line.rank is None and th.line.local_rank is None:
            # Nothing else says whose dump this is (no rank prefix, no rank in the file's name): the
            # process's argv names its local rank; attribution maps it to a global rank where it can.
            out = [replace(e, local_rank=int(lr["lr"])) for e in out]
        return out
