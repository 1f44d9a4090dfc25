"""torch.multiprocessing.spawn's parent: the exception it raises when one of its processes failed.

Source: torch/multiprocessing/spawn.py `ProcessContext.join` (torch 1.10 to 2.13 print the same texts). The
parent waits on all its processes; the first one seen exiting non-zero is the one reported, after the parent
has terminated the others (SIGTERM, then SIGKILL after a grace period). A process that raised had `_wrap`
pickle `traceback.format_exc()` to its error file and exit 1; the parent raises

    torch.multiprocessing.spawn.ProcessRaisedException:

    -- Process 2 terminated with the following error:
    Traceback (most recent call last):
      ...
    ValueError: ...

and a process that died of a signal, or exited non-zero without raising, gives
`torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV` /
`... process 1 terminated with exit code 3`. `N` is the process index, the script's local rank; its global
rank is `node offset + N` (the index itself when one launcher starts every rank).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, to_count, to_int
from hanglens.parsers.elastic import SIGNAL_NAMES

EXITED_RE = re.compile(
    r"ProcessExitedException: process (?P<idx>\d{1,6}) terminated with "
    r"(?:signal (?P<sig>SIG[A-Z0-9]{1,10}|<Unknown signal (?P<num>\d{1,3})>)|exit code (?P<code>-?\d{1,6}))"
)
RAISED_RE = re.compile(r"^-- Process (?P<idx>\d{1,6}) terminated with the following error:\s*$")
# Inside the child's traceback: the exception line at column 0, a chain's joining line, a new traceback.
EXC_LINE_RE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)\b(?::|$)")
CHAIN_RE = re.compile(
    r"^(?:During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause of the following exception):?\s*$"
)
TB_RE = re.compile(r"^(?:Original )?Traceback \(most recent call last\):")
# `log.warning("Terminating process %s via signal SIGTERM", process.pid)` for each process still alive.
TERMINATING_RE = re.compile(r"Terminating process (?P<pid>\d{1,10}) via signal SIGTERM")
MAX_BLOCK = 3000   # lines of one child's traceback

SIGNUMS = {name: num for num, name in SIGNAL_NAMES.items()}   # (Linux numbering, as torchrun reports it)


class SpawnParser(Parser):
    """mp.spawn / mp.start_processes parent: Process{Exited,Raised}Exception → launcher_exit.

    Example: `torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGKILL`
    """

    name = "spawn"
    triggers = ("ProcessExitedException", "-- Process ", "Terminating process ")
    emits = (
        EventSpec("launcher_exit", ("exitcode", "pid", "launcher", "signal", "local_rank", "placed_rank",
                                    "raised", "block_end", "stopped"),
                  "torch.multiprocessing.spawn's parent names the first failed process (launcher mp.spawn, "
                  "local_rank = the process index): ProcessExitedException (a signal, or an exit code), or "
                  "ProcessRaisedException (raised: its traceback follows, exitcode 1 as `_wrap` exits; "
                  "block_end: the traceback's last line, whose events are that process's); stopped: how many "
                  "`Terminating process <pid> via signal SIGTERM` warnings (processes still alive) came "
                  "before it"),
    )
    examples = (
        Example("torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal "
                "SIGKILL", "launcher_exit",
                {"launcher": "mp.spawn", "local_rank": 3, "signal": "SIGKILL", "exitcode": -9,
                 "raised": False},
                "torch 1.10-2.13 (observed here with torch 2.13)"),
        Example("W0119 03:24:51.664000 33290 torch/multiprocessing/spawn.py:160] Terminating process 4410 "
                "via signal SIGTERM\n"
                "W0119 03:24:51.665000 33290 torch/multiprocessing/spawn.py:160] Terminating process 4412 "
                "via signal SIGTERM\n"
                "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGBUS",
                "launcher_exit", {"local_rank": 1, "signal": "SIGBUS", "exitcode": -7, "stopped": 2},
                "torch 2.13 (observed here; a release that does not log the warning gives stopped 0)"),
        Example("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal "
                "SIGSEGV", "launcher_exit", {"local_rank": 0, "signal": "SIGSEGV", "exitcode": -11},
                "torch 1.10-2.13"),
        Example("torch.multiprocessing.spawn.ProcessExitedException: process 5 terminated with exit code "
                "7", "launcher_exit", {"local_rank": 5, "signal": None, "exitcode": 7}, "torch 1.10-2.13"),
        Example("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
                "<Unknown signal 40>", "launcher_exit", {"local_rank": 1, "signal": None, "exitcode": -40},
                "torch 1.10-2.13"),
        Example("-- Process 6 terminated with the following error:\n"
                "Traceback (most recent call last):\n"
                '  File "/home/user/venv/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", '
                "line 69, in _wrap\n"
                "    fn(i, *args)\n"
                '  File "/home/user/gnn/train.py", line 88, in run\n'
                "    loss = step(batch)\n"
                "KeyError: 'edge_index'\n"
                "\n",
                "launcher_exit",
                {"launcher": "mp.spawn", "local_rank": 6, "exitcode": 1, "raised": True, "block_end": 7},
                "torch 1.10-2.13"),
    )
    near_misses = (
        "-- Process 2 of 8 finished",
        "ProcessExitedException raised in worker",
        "    raise ProcessExitedException(",
    )

    # The parent's `Terminating process <pid>` warning printed again after a later failure (the same pids
    # when a restarted group reuses them) counts toward that failure's `stopped`: never skipped as a repeat.
    repeats_matter: ClassVar[bool] = True

    def __init__(self) -> None:
        self.pending: tuple[LogLine, int] | None = None   # the `-- Process N` line and N
        self.last = 0            # the block's last line so far
        self.lines = 0
        self.seen_exc = False    # an exception line at column 0 was read
        self.stopped: set[int] = set()   # pids the parent warned it terminates, since its last report

    def wants_more(self) -> bool:
        return self.pending is not None

    def close(self) -> Iterable[Event]:
        return self._end()

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if self.pending is not None:
            if self._inside(line):
                return out
            out.extend(self._end())
        if "Terminating process " in text:
            m = TERMINATING_RE.search(text)
            if m:
                self.stopped.add(int(m["pid"]))
        if "ProcessExitedException" in text:
            m = EXITED_RE.search(text)
            if m:
                sig = m["sig"] if m["num"] is None else None
                if m["code"] is not None:
                    code = to_int(m["code"])
                elif m["num"] is not None:
                    code = -int(m["num"])
                else:
                    code = -SIGNUMS[sig] if sig in SIGNUMS else None
                out.append(self.event("launcher_exit", line, exitcode=code, pid=None, launcher="mp.spawn",
                                      signal=sig, local_rank=to_count(m["idx"]), raised=False,
                                      stopped=len(self.stopped)))
                self.stopped = set()
        if "-- Process " in text:
            m = RAISED_RE.match(text)
            if m:
                self.pending = (line, int(m["idx"]))
                self.last, self.lines, self.seen_exc = line.ref.line, 0, False
        return out

    def _inside(self, line: LogLine) -> bool:
        """Whether `line` is still part of the failed process's traceback."""
        text = line.text
        self.lines += 1
        if self.lines > MAX_BLOCK:
            return False
        if not text.strip():
            return True
        if self.lines == 1 and not TB_RE.match(text):
            return False   # not a traceback after all
        if self.seen_exc:
            # After an exception line only a chain (`The above exception ...`, a new `Traceback`, a DataLoader
            # worker's `Original Traceback`) or its frames go on; any other line is another writer's (the
            # reader may not hand over the blank line that ends a traceback).
            if CHAIN_RE.match(text) or TB_RE.match(text):
                self.seen_exc = False
            elif not text.startswith((" ", "\t")):
                return False
        if EXC_LINE_RE.match(text):
            self.seen_exc = True
        self.last = line.ref.line
        return True

    def _end(self) -> list[Event]:
        if self.pending is None:
            return []
        first, idx = self.pending
        self.pending = None
        ev = self.event("launcher_exit", first, exitcode=1, pid=None, launcher="mp.spawn", signal=None,
                        local_rank=idx, raised=True, block_end=self.last, stopped=len(self.stopped))
        self.stopped = set()
        return [ev]
