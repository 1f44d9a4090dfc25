"""DataLoader failures: worker deaths, worker-side fatal signals, user timeouts, shm/pin-memory/fd errors."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import (
    INT64_MAX,
    EventSpec,
    Example,
    Parser,
    int_list,
    match_at_keyword,
    to_count,
    to_int,
)

KILLED_RE = re.compile(
    r"DataLoader worker \(pid (?P<pid>\d{1,10})\) is killed by signal: (?P<sig>[^.\n]{1,128}?)\."
)
EXIT_CODE_RE = re.compile(
    r"DataLoader worker \(pid (?P<pid>\d+)\) exited unexpectedly with exit code (?P<code>-?\d+)"
)
EXITED_RE = re.compile(r"DataLoader worker \(pid\(s\) (?P<pids>\d+(?:, ?\d+)*)\) exited unexpectedly")
HANDLER_RE = re.compile(
    r"ERROR: Unexpected (?P<kind>bus error|segmentation fault|floating-point exception) encountered in worker"
)
TIMEOUT_RE = re.compile(r"DataLoader timed out after (?P<sec>\d+(?:\.\d+)?) seconds")
PIN_EXIT_RE = re.compile(r"Pin memory thread exited unexpectedly")
CAUGHT_RE = re.compile(
    r"Caught (?P<exc>[\w.]+) in (?:DataLoader worker process (?P<worker>\d+)|pin memory thread for device "
    r"(?P<dev>-?\d+))"
)
FD_RE = re.compile(r"Too many open files\. Communication with the workers is no longer possible")
SHM_RE = re.compile(
    r"unable to (?:write to file|open shared memory object|mmap \d+ bytes from file|allocate shared memory)"
    r" ?<?(?P<path>/torch_[^>\s]{0,255}|[^>\s]{0,255})>?[^\r\n]{0,512}?: (?P<err>[^(:]{1,256}?) "
    r"\((?P<errno>\d{1,6})\)"
)

# strsignal() text -> the `cause` of the death. SIGBUS in a worker is nearly always /dev/shm exhaustion.
SIGNAL_CAUSES = {"Bus error": "bus_error", "Segmentation fault": "segfault",
                 "Floating point exception": "fpe"}
SIGNAL_NAMES = {"Killed": "SIGKILL", "Bus error": "SIGBUS", "Segmentation fault": "SIGSEGV",
                "Floating point exception": "SIGFPE", "Aborted": "SIGABRT", "Terminated": "SIGTERM",
                "Interrupt": "SIGINT", "Hangup": "SIGHUP", "Illegal instruction": "SIGILL"}
HANDLER_CAUSES = {"bus error": ("bus_error", "SIGBUS"), "segmentation fault": ("segfault", "SIGSEGV"),
                  "floating-point exception": ("fpe", "SIGFPE")}



def _one(value: int | None) -> list[int]:
    return [] if value is None else [value]


class DataloaderParser(Parser):
    """torch.utils.data.DataLoader errors, identical from torch 1.10 to 2.13.

    Example: `RuntimeError: DataLoader worker (pid 8012) is killed by signal: Killed.`
    """

    name = "dataloader"
    triggers = ("DataLoader ", "encountered in worker", "Pin memory thread", "in pin memory thread",
                "Too many open files", "unable to write to file", "shared memory object", "bytes from file")
    emits = (
        EventSpec("dataloader_worker_died", ("pid", "pids", "signal", "exit_code", "cause"),
                  "a worker died: cause bus_error/segfault/fpe, killed (any other signal), exited (an exit "
                  "code, or only `pid(s) N exited unexpectedly` with exit_code None)"),
        EventSpec("hang_detected", ("detector", "timeout_ms"), "`DataLoader timed out after N seconds`"),
        EventSpec("dataloader_error", ("error", "message", "exc_type", "worker_id", "errno"),
                  "shm, pin_memory, worker_exception, too_many_files"),
    )
    examples = (
        Example("RuntimeError: DataLoader worker (pid 8012) is killed by signal: Killed. ",
                "dataloader_worker_died",
                {"pid": 8012, "signal": "SIGKILL", "cause": "killed", "exit_code": None}, "torch 1.10+"),
        Example("RuntimeError: DataLoader worker (pid 10402) is killed by signal: Killed. ",
                "dataloader_worker_died", {"pid": 10402, "signal": "SIGKILL", "cause": "killed"},
                "torch 2.13 (observed here)"),
        Example("RuntimeError: DataLoader worker (pid 31337) is killed by signal: Bus error. It is possible "
                "that dataloader's workers are out of shared memory. Please try to raise your shared memory "
                "limit.",
                "dataloader_worker_died", {"pid": 31337, "signal": "SIGBUS", "cause": "bus_error"},
                "torch 1.10+ (also observed here with torch 2.13)"),
        Example("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault. ",
                "dataloader_worker_died", {"pid": 4242, "signal": "SIGSEGV", "cause": "segfault"},
                "torch 1.10+"),
        Example("RuntimeError: DataLoader worker (pid 11337) exited unexpectedly with exit code 3. Details "
                "are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.",
                "dataloader_worker_died", {"pid": 11337, "exit_code": 3, "cause": "exited", "signal": None},
                "torch 1.10+ (also observed here with torch 2.13)"),
        Example("[rank0]: RuntimeError: DataLoader worker (pid(s) 8012, 8013) exited unexpectedly",
                "dataloader_worker_died",
                {"pid": 8012, "pids": [8012, 8013], "cause": "exited", "exit_code": None}, "torch 2.4+"),
        Example("RuntimeError: DataLoader worker (pid(s) 10402) exited unexpectedly",
                "dataloader_worker_died",
                {"pid": 10402, "pids": [10402]}, "torch 2.13 (observed here)"),
        Example("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
                "shared memory "
                "(shm).", "dataloader_worker_died", {"cause": "bus_error", "signal": "SIGBUS", "pid": None},
                "torch 1.10+ (also observed here with torch 2.13)"),
        Example("ERROR: Unexpected segmentation fault encountered in worker.", "dataloader_worker_died",
                {"cause": "segfault", "signal": "SIGSEGV"},
                "torch 1.10+ (also observed here with torch 2.13)"),
        Example("ERROR: Unexpected floating-point exception encountered in worker.", "dataloader_worker_died",
                {"cause": "fpe", "signal": "SIGFPE"}, "torch 1.10+"),
        Example("RuntimeError: DataLoader timed out after 1 seconds", "hang_detected",
                {"detector": "dataloader", "timeout_ms": 1000},
                "torch 1.10+ (also observed here with torch 2.13)"),
        Example("[rank3]: RuntimeError: DataLoader timed out after 300 seconds", "hang_detected",
                {"detector": "dataloader", "timeout_ms": 300000}, "torch 2.4+"),
        Example("RuntimeError: Pin memory thread exited unexpectedly", "dataloader_error",
                {"error": "pin_memory"}, "torch 1.10+"),
        Example("RuntimeError: Caught RuntimeError in pin memory thread for device 0.", "dataloader_error",
                {"error": "pin_memory", "exc_type": "RuntimeError"}, "torch 1.10+"),
        Example("KeyError: Caught KeyError in DataLoader worker process 0.\nOriginal Traceback (most recent "
                "call "
                "l"
                "a"
                "s"
                "t"
                ")"
                ":", "dataloader_error",
                {"error": "worker_exception", "exc_type": "KeyError", "worker_id": 0},
                "torch 1.10+ (also observed here with torch 2.13)"),
        Example("RuntimeError: Too many open files. Communication with the workers is no longer possible. "
                "Please increase the limit using `ulimit -n` in the shell or change the sharing strategy by "
                "calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
                "your code",
                "dataloader_error", {"error": "too_many_files"}, "torch 1.10+"),
        Example("RuntimeError: unable to write to file </torch_8012_2937461726_0>: No space left on device "
                "(28)",
                "dataloader_error", {"error": "shm", "errno": 28}, "torch 1.10+"),
        Example("RuntimeError: unable to open shared memory object </torch_8012_1_2> in read-write mode: Too "
                "many open files (24)", "dataloader_error", {"error": "shm", "errno": 24}, "torch 1.10+"),
        Example("RuntimeError: unable to mmap 1048576 bytes from file </torch_8012_3_4>: Cannot allocate "
                "memory (12)",
                "dataloader_error", {"error": "shm", "errno": 12}, "torch 1.10+"),
    )
    near_misses = (
        "    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e",
        "    raise RuntimeError(f'DataLoader timed out after {self._timeout} seconds') from e",
        "Creating DataLoader with 8 workers",
        "unable to import apex, falling back to torch AMP",
        "UserWarning: This DataLoader will create 16 worker processes in total.",
        "ERROR: Unexpected token encountered in worker config file",
    )

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if "DataLoader " in text:
            out.extend(self._dataloader_line(line))
        if "encountered in worker" in text:
            m = HANDLER_RE.search(text)
            if m:
                cause, sig = HANDLER_CAUSES[m["kind"]]
                out.append(self.event("dataloader_worker_died", line, pid=None, signal=sig, exit_code=None,
                                      cause=cause))
        if "Pin memory thread" in text and PIN_EXIT_RE.search(text):
            out.append(self.event("dataloader_error", line, error="pin_memory", message=_tail(text, "Pin ")))
        if "Caught " in text:
            m = CAUGHT_RE.search(text)
            if m:
                error = "worker_exception" if m["worker"] is not None else "pin_memory"
                out.append(self.event("dataloader_error", line, error=error, message=text[m.start():].strip(),
                                      exc_type=m["exc"], worker_id=to_count(m["worker"])))
        if "Too many open files" in text and FD_RE.search(text):
            out.append(self.event("dataloader_error", line, error="too_many_files",
                                  message=_tail(text, "Too many")))
        if "unable to " in text:
            m = match_at_keyword(SHM_RE, text, "unable to ")
            if m:
                out.append(self.event("dataloader_error", line, error="shm", message=text[m.start():].strip(),
                                      errno=to_count(m["errno"])))
        return out

    def _dataloader_line(self, line: LogLine) -> list[Event]:
        text = line.text
        m = KILLED_RE.search(text)
        if m:
            sig = m["sig"].strip()
            pid = to_count(m["pid"])
            return [self.event("dataloader_worker_died", line, pid=pid, pids=_one(pid),
                               signal=SIGNAL_NAMES.get(sig, sig), exit_code=None,
                               cause=SIGNAL_CAUSES.get(sig, "killed"))]
        m = EXIT_CODE_RE.search(text)
        if m:
            pid = to_count(m["pid"])
            return [self.event("dataloader_worker_died", line, pid=pid, pids=_one(pid),
                               signal=None, exit_code=to_int(m["code"]), cause="exited")]
        m = EXITED_RE.search(text)
        if m:
            pids = int_list(m["pids"])
            return [self.event("dataloader_worker_died", line, pid=pids[0] if pids else None, pids=pids,
                               signal=None, exit_code=None, cause="exited")]
        m = TIMEOUT_RE.search(text)
        if m:
            try:
                sec = float(m["sec"])
            except ValueError:
                sec = -1.0
            ms = int(sec * 1000) if 0 <= sec * 1000 <= INT64_MAX else None
            return [self.event("hang_detected", line, detector="dataloader", timeout_ms=ms)]
        return []


def _tail(text: str, start: str) -> str:
    i = text.find(start)
    return text[i:].strip() if i >= 0 else text.strip()
