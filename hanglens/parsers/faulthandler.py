"""Read Python `faulthandler` dumps (a crash, `dump_traceback_later`, a `register`ed signal) into one
`stack_dump` event per thread, wherever they are: a file of any name, a console log, behind a rank prefix.

Example (CPython 3.x, `Lib/faulthandler` via `Python/traceback.c`): `Thread 0x00007f51c2a3b740 (most
recent call first):` followed by `  File "train.py", line 40 in main` frames, innermost first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import INT64_MAX, EventSpec, Example, Parser, to_count
from hanglens.parsers.stacks import hang_fields, stack_fields

# `Current thread` marks the thread that ran the handler; `Stack` is the one-thread form (all_threads=False).
# Python 3.14 may print the thread's name in brackets after its id.
THREAD_RE = re.compile(
    r"^\s*(?:(?P<current>Current thread|Thread) (?P<tid>0x[0-9A-Fa-f]{1,16})(?: \[(?P<name>[^\]]{0,200})\])?"
    r"|(?P<stack>Stack)) \(most recent call first\):\s*$"
)
FRAME_RE = re.compile(
    r"^\s*File \"(?P<file>[^\"]*)\", line (?P<line>\d{1,9}|\?\?\?) in (?P<func>\S.{0,300}?)\s*$"
)
OTHER_FRAME_RE = re.compile(r"^\s*(?:<no Python frame>|\.\.\.|<timeout>)\s*$")
FATAL_RE = re.compile(r"^\s*Fatal Python error: (?P<reason>.{1,300}?)\s*$")
TIMEOUT_RE = re.compile(r"^\s*Timeout \(\d{1,6}:\d\d:\d\d\)!\s*$")
MAX_FRAMES = 60
MAX_THREAD_LINES = 400   # faulthandler prints at most 100 frames per thread
MAX_GAP = 4              # lines between a `Fatal Python error`/`Timeout` header and the first thread


@dataclass
class _Thread:
    line: LogLine
    tid: int | None
    current: bool
    name: str | None
    frames: list[tuple[str, int | None, str]] = field(default_factory=list)  # innermost first, as printed
    lines: int = 0


@dataclass
class _Dump:
    """One dump being read for one writer (rank): the reason it was taken and its open thread."""

    trigger: str | None = None
    gap: int = 0
    thread: _Thread | None = None


class FaulthandlerParser(Parser):
    """`faulthandler` dumps → `stack_dump` per thread (+ `hang_detected` for a main thread in a c10d call)."""

    name = "faulthandler"
    triggers = ("(most recent call first):", "Fatal Python error:", "Timeout (")
    emits = (
        EventSpec("stack_dump", ("thread", "thread_id", "state", "frames", "frame_file", "frame_line",
                                 "frame_func", "dumper", "trigger", "main", "waits_on", "collective"),
                  "one thread of a dump: frames as \"file:line in func\", outermost first, frame_* the "
                  "innermost; dumper py-spy/faulthandler; trigger = why faulthandler dumped (its "
                  "`Fatal Python error` reason, or `timeout` for dump_traceback_later); main = the main "
                  "thread (py-spy's \"MainThread\", else a stack starting in a module body); waits_on = "
                  "dataloader (main thread waits on the DataLoader's worker queue) or collective (inside the "
                  "c10d function named by `collective`)"),
        EventSpec("hang_detected", ("detector", "op", "collective"),
                  "detector=stack_dump: a dump's main thread sits inside a c10d collective (op in OpType "
                  "spelling, e.g. ALLREDUCE)"),
    )
    examples = (
        Example("Timeout (0:05:00)!\n"
                "Thread 0x00007f51c2a3b740 (most recent call first):\n"
                "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
                "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 947 in wait\n"
                "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 440 in _poll\n"
                "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 257 in poll\n"
                "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 113 in get\n"
                "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1133 "
                "in _try_get_data\n"
                "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1294 "
                "in _get_data\n"
                "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1332 "
                "in _next_data\n"
                "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 631 "
                "in __next__\n"
                "  File \"/home/user/train.py\", line 71 in train\n"
                "  File \"/home/user/train.py\", line 102 in <module>\n",
                "stack_dump",
                {"dumper": "faulthandler", "trigger": "timeout", "main": True, "waits_on": "dataloader",
                 "thread_id": 0x00007F51C2A3B740, "frame_func": "select", "frame_line": 415,
                 "collective": None},
                "written here from CPython 3.11's faulthandler format (dump_traceback_later)"),
        Example("[rank3]: Fatal Python error: Segmentation fault\n"
                "[rank3]: \n"
                "[rank3]: Thread 0x00007fa0b4fff640 (most recent call first):\n"
                "[rank3]:   File \"/usr/lib/python3.10/threading.py\", line 320 in wait\n"
                "[rank3]:   File \"/usr/lib/python3.10/threading.py\", line 973 in _bootstrap\n"
                "[rank3]: \n"
                "[rank3]: Current thread 0x00007fa0c81d2740 (most recent call first):\n"
                "[rank3]:   File \"/opt/venv/lib/python3.10/site-packages/torch/distributed/"
                "distributed_c10d.py\", line 2288 in all_reduce\n"
                "[rank3]:   File \"/opt/venv/lib/python3.10/site-packages/torch/distributed/"
                "c10d_logger.py\", line 75 in wrapper\n"
                "[rank3]:   File \"/home/user/train.py\", line 58 in step\n"
                "[rank3]:   File \"/home/user/train.py\", line 90 in <module>\n"
                "[rank3]: \n"
                "[rank3]: Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n",
                "stack_dump",
                {"dumper": "faulthandler", "trigger": "Segmentation fault", "main": True, "state": "current",
                 "waits_on": "collective", "collective": "all_reduce", "frame_func": "all_reduce",
                 "frames": ["/home/user/train.py:90 in <module>", "/home/user/train.py:58 in step",
                            "/opt/venv/lib/python3.10/site-packages/torch/distributed/c10d_logger.py:75 in "
                            "wrapper",
                            "/opt/venv/lib/python3.10/site-packages/torch/distributed/"
                            "distributed_c10d.py:2288 in all_reduce"]},
                "written here from CPython 3.10's faulthandler format (crash, all threads, torch 2.4+ "
                "prefix)"),
        Example("Stack (most recent call first):\n"
                "  File \"/home/user/train.py\", line 12 in load\n"
                "  File \"/home/user/train.py\", line 30 in <module>\n",
                "stack_dump",
                {"dumper": "faulthandler", "main": True, "waits_on": None, "thread_id": None,
                 "frame_line": 12},
                "written here from CPython 3.x's faulthandler format (dump_traceback(all_threads=False))"),
        Example("Current thread 0x00007f0c9a2ee740 (most recent call first):\n"
                "  File \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", "
                "line 4622 in barrier\n"
                "  File \"/home/user/train.py\", line 77 in <module>\n",
                "hang_detected", {"detector": "stack_dump", "op": "BARRIER", "collective": "barrier"},
                "written here from CPython 3.x's faulthandler format (faulthandler.register(SIGUSR1))"),
    )
    near_misses = (
        "Exception raised from checkTimeout at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
        "612 (most recent call first):",
        "Traceback (most recent call last):",
        "Thread 0x7f3a (idle): \"MainThread\"",
        "Timeout (ms)=600000",
    )

    def __init__(self) -> None:
        self.open: dict[int | None, _Dump] = {}

    def wants_more(self) -> bool:
        return bool(self.open)

    def close(self) -> Iterable[Event]:
        out: list[Event] = []
        for dump in self.open.values():
            out.extend(self._finish(dump))
        self.open = {}
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        key = line.rank
        dump = self.open.get(key)
        text = line.text
        m = THREAD_RE.match(text)
        if m:
            out = self._finish(dump) if dump is not None else []
            dump = self.open.setdefault(key, _Dump())
            tid = int(m["tid"], 16) if m["tid"] else None
            tid = tid if tid is not None and tid <= INT64_MAX else None  # JSON consumers read int64
            dump.thread = _Thread(line=line, tid=tid, current=bool(m["current"] and m["current"][0] == "C"),
                                  name=m["name"])
            return out
        if dump is not None and dump.thread is not None:
            th = dump.thread
            th.lines += 1
            fm = FRAME_RE.match(text)
            if fm and th.lines <= MAX_THREAD_LINES:
                if len(th.frames) < MAX_FRAMES:
                    th.frames.append((fm["file"], to_count(fm["line"]), fm["func"]))
                return ()
            if OTHER_FRAME_RE.match(text) and th.lines <= MAX_THREAD_LINES:
                return ()
            out = self._finish(dump)
            if not text.strip():
                dump.gap = 0  # a blank line separates threads of one dump
                return out
            del self.open[key]
            return out + list(self._header(line))
        if dump is not None:
            dump.gap += 1
            if dump.gap > MAX_GAP:
                del self.open[key]
            elif text.strip():
                return self._header(line)
            return ()
        return self._header(line)

    def _header(self, line: LogLine) -> Iterable[Event]:
        """Open a dump on a `Fatal Python error` / `Timeout (...)!` line (the threads follow)."""
        m = FATAL_RE.match(line.text)
        if m:
            self.open[line.rank] = _Dump(trigger=m["reason"])
        elif TIMEOUT_RE.match(line.text):
            self.open[line.rank] = _Dump(trigger="timeout")
        return ()

    def _finish(self, dump: _Dump) -> list[Event]:
        th = dump.thread
        dump.thread = None
        if th is None:
            return []
        outer_first = list(reversed(th.frames))
        facts = stack_fields(outer_first, th.name)
        inner = th.frames[0] if th.frames else (None, None, None)
        ev = self.event(
            "stack_dump", th.line, thread=th.name, thread_id=th.tid, state="current" if th.current else None,
            frames=[f"{f}:{n} in {fn}" for f, n, fn in outer_first], frame_file=inner[0], frame_line=inner[1],
            frame_func=inner[2], dumper="faulthandler", trigger=dump.trigger, **facts,
        )
        # A crash dump (`Fatal Python error: Aborted`, as torchrun's workers print on SIGABRT) shows where the
        # process died, not where it hung.
        hang = hang_fields(facts) if dump.trigger in (None, "timeout") else None
        return [ev] if hang is None else [ev, self.event("hang_detected", th.line, **hang)]
