"""torchrun's failure table for tests: one builder instead of the table spelled out in every test.

Written from log-formats.md section 3.6 (torch/distributed/elastic/multiprocessing/errors/__init__.py
`ChildFailedError.format_msg`, torch 2.x): the `Failures:` section lists the other failed workers as `[1]`,
`[2]`, ... (or `<NO_OTHER_FAILURES>`), then `Root Cause (first observed failure):` lists the first one as
`[0]`; each entry has the fields time, host, rank, exitcode, error_file and traceback, whose value is the
worker's error.json callstack, `Signal <n> (<NAME>) received by PID <pid>` for a worker killed by a signal,
or the docs hint when neither is known.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADER = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"
DOCS_HINT = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
SIGNALS = {-6: "SIGABRT", -9: "SIGKILL", -11: "SIGSEGV", -15: "SIGTERM"}


@dataclass(frozen=True)
class Failure:
    """One worker's entry of the table."""

    rank: int
    exitcode: int
    pid: int
    host: str = "node-4"
    time: str = "2026-05-19_10:02:11"
    local_rank: int | None = None       # the global rank when not given (one node)
    error_file: str = "<N/A>"
    traceback: str | None = None        # default: the signal line of a signal exit, else the docs hint
    signal_suffix: bool = False         # `exitcode  : -15 (pid: 5134)  (SIGTERM)`, as some versions print

    def lines(self, index: int) -> list[str]:
        sig = SIGNALS.get(self.exitcode)
        tb = self.traceback
        if tb is None:
            tb = f"Signal {-self.exitcode} ({sig}) received by PID {self.pid}" if sig else DOCS_HINT
        local = self.rank if self.local_rank is None else self.local_rank
        suffix = f"  ({sig})" if self.signal_suffix and sig else ""
        return [f"[{index}]:",
                f"  time      : {self.time}",
                f"  host      : {self.host}",
                f"  rank      : {self.rank} (local_rank: {local})",
                f"  exitcode  : {self.exitcode} (pid: {self.pid}){suffix}",
                f"  error_file: {self.error_file}",
                f"  traceback : {tb}"]


def failure_table(root: Failure, *others: Failure, script: str = "train.py", width: int = 60,
                  header: str = HEADER, failures_section: bool = True) -> str:
    """The table torchrun's agent prints when its workers failed: `root` under `Root Cause`, `others` under
    `Failures:` in the order given; `failures_section=False` leaves the `Failures:` section out, as the
    shortest pastes do. Lines end with a newline."""
    out = [header, "=" * width, f"{script} FAILED", "-" * width]
    if failures_section:
        out.append("Failures:")
        if others:
            for i, f in enumerate(others, start=1):
                out += f.lines(i)
        else:
            out.append("  <NO_OTHER_FAILURES>")
        out.append("-" * width)
    out += ["Root Cause (first observed failure):", *root.lines(0), "=" * width]
    return "".join(line + "\n" for line in out)
