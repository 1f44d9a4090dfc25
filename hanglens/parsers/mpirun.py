"""Open MPI's mpirun: the process it names as the first to fail, by exit code or by signal.

Source: Open MPI 4.x help texts `orte/tools/orterun/help-orterun.txt` (`[orterun:non-zero-exit]`,
`[orterun:proc-aborted-strsignal]`, `[orterun:proc-aborted]`), read in the 4.1.4 release's installed
`help-orterun.txt` and observed in real mpirun 4.1.4 runs; PRRTE (Open MPI 5) prints the same texts as
`prterun` with `[<nspace>@<job>,<rank>]` process names (failure-signatures.md section 6, Open MPI row).
mpirun's error manager keeps the first process that ended abnormally and reports it once the job is torn
down, after terminating every other process (failure-signatures.md section 0.6):

    mpirun detected that one or more processes exited with non-zero status, thus causing
    the job to be terminated. The first process to do so was:

      Process name: [[2887,1],0]
      Exit code:    1

    mpirun noticed that process rank 1 with PID 0 on node node01 exited on signal 9 (Killed).

The last number of the process name, and the `process rank`, are the MPI_COMM_WORLD rank: the global rank
when mpirun starts the training processes itself (the ingest layer decides that). The first non-zero exit is
often a victim (a peer's timeout ends it before the culprit fails): it is launcher evidence of order, not of
cause (section 0.8, "Supporting").
"""

from __future__ import annotations

from collections.abc import Iterable

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, to_count, to_int
from hanglens.parsers.elastic import SIGNAL_NAMES

TOOLS = r"(?:mpirun|mpiexec|orterun|oshrun|prterun|prte)"
NOTICED_RE = re.compile(
    TOOLS + r" noticed that process rank (?P<rank>\d{1,7}) with PID (?P<pid>\d{1,10}) on node "
    r"(?P<host>[\w.-]{1,255}) exited on signal (?P<signum>\d{1,3})(?: \((?P<name>[^)]{1,40})\))?\.?\s*$"
)
FIRST_RE = re.compile(r"[Tt]he first process to do so was:\s*$")
# ORTE `[[<jobfamily>,<local job>],<vpid>]`; PRRTE `[<nspace>@<job>,<vpid>]`.
NAME_RE = re.compile(
    r"^\s*Process name:\s*\[(?:\[\d{1,10},\d{1,10}\]|[\w.-]{1,255}@\d{1,10}),(?P<rank>\d{1,7})\]")
CODE_RE = re.compile(r"^\s*Exit code:\s*(?P<code>-?\d{1,6})\s*$")
BLOCK = 4   # lines between `The first process to do so was:` and its process name (a blank one in 4.x)


class MpirunParser(Parser):
    """Open MPI mpirun / PRRTE prterun: the first failed process → launcher_exit (launcher mpirun).

    Example: `mpirun noticed that process rank 3 with PID 41870 on node node02 exited on signal 9 (Killed).`
    """

    name = "mpirun"
    triggers = ("noticed that process rank", "first process to do so", "Process name:", "Exit code:")
    emits = (
        EventSpec("launcher_exit", ("exitcode", "pid", "launcher", "signal", "local_rank", "tasks",
                                    "task_host"),
                  "Open MPI's mpirun names the first process that failed (launcher mpirun, tasks = [its "
                  "MPI_COMM_WORLD rank]): `The first process to do so was: Process name: [[j,1],r] "
                  "Exit code: c`, or `noticed that process rank r with PID p on node h exited on signal n` "
                  "(exitcode -n, task_host h; pid None where mpirun printed 0)"),
    )
    examples = (
        Example("mpirun noticed that process rank 3 with PID 41870 on node node02 exited on signal 9 "
                "(Killed).",
                "launcher_exit",
                {"launcher": "mpirun", "tasks": [3], "exitcode": -9, "signal": "SIGKILL", "pid": 41870,
                 "task_host": "node02"},
                "Open MPI 1.8-4.1 (observed with 4.1.4)"),
        Example("mpirun noticed that process rank 0 with PID 0 on node trainer-a exited on signal 11 "
                "(Segmentation fault).", "launcher_exit",
                {"tasks": [0], "exitcode": -11, "signal": "SIGSEGV", "pid": None}, "Open MPI 4.1.4"),
        Example("mpirun detected that one or more processes exited with non-zero status, thus causing\n"
                "the job to be terminated. The first process to do so was:\n"
                "\n"
                "  Process name: [[5120,1],2]\n"
                "  Exit code:    1",
                "launcher_exit", {"launcher": "mpirun", "tasks": [2], "exitcode": 1, "signal": None},
                "Open MPI 1.8-4.1 (observed with 4.1.4)"),
        Example("prterun detected that one or more processes exited with non-zero status, thus causing\n"
                "the job to be terminated. The first process to do so was:\n"
                "\n"
                "   Process name: [prterun-gpu-a-31207@1,5]\n"
                "   Exit code:    3",
                "launcher_exit", {"launcher": "mpirun", "tasks": [5], "exitcode": 3}, "Open MPI 5 (PRRTE)"),
    )
    near_misses = (
        "mpirun noticed that the job aborted, but has no info as to the process",
        "  Process name: [[5120,1],2]",
        "rank 2: process name: worker",
    )

    def __init__(self) -> None:
        self.after_first: int | None = None   # the line number of `The first process to do so was:`
        self.rank: int | None = None          # the named process's rank, awaiting its exit code
        self.name_line: LogLine | None = None

    def wants_more(self) -> bool:
        return self.after_first is not None

    def close(self) -> Iterable[Event]:
        return self._flush()

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if self.after_first is not None:
            if self.rank is None:
                m = NAME_RE.match(text)
                if m and line.ref.line - self.after_first <= BLOCK:
                    self.rank, self.name_line = int(m["rank"]), line
                    return out
                if not text.strip() and line.ref.line - self.after_first < BLOCK:
                    return out
                self.after_first = None
            else:
                m = CODE_RE.match(text)
                if m:
                    code = to_int(m["code"])
                    out.append(self._exit(self.name_line or line, code))
                    self.after_first, self.rank, self.name_line = None, None, None
                    return out
                out.extend(self._flush())
        if "first process to do so" in text and FIRST_RE.search(text):
            self.after_first = line.ref.line
            return out
        if "noticed that process rank" in text:
            m = NOTICED_RE.search(text)
            if m:
                signum = int(m["signum"])
                out.append(self.event("launcher_exit", line, exitcode=-signum, pid=to_count(m["pid"]) or None,
                                      launcher="mpirun", signal=SIGNAL_NAMES.get(signum), local_rank=None,
                                      tasks=[int(m["rank"])], task_host=m["host"]))
        return out

    def _exit(self, line: LogLine, code: int | None) -> Event:
        """The named process's exit, at its `Process name:` line."""
        return self.event("launcher_exit", line, exitcode=code, pid=None, launcher="mpirun",
                          signal=None, local_rank=None, tasks=[self.rank], task_host=None)

    def _flush(self) -> list[Event]:
        out = []
        if self.rank is not None and self.name_line is not None:
            out.append(self._exit(self.name_line, None))
        self.after_first, self.rank, self.name_line = None, None, None
        return out
