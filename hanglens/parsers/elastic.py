"""Read the torchrun / torch.distributed.elastic agent and launcher lines: worker deaths, sibling shutdowns,
the ChildFailedError summary, worker-group restarts, rendezvous results and launcher exit codes.

Example (torch 2.3+, envelope already stripped):
`failed (exitcode: -6) local_rank: 0 (pid: 970611) of binary: /tmp/venv/bin/python3`
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, int_list, task_ids, to_count, to_int

# Linux numbering: torchrun reports a worker killed by signal N as exitcode -N.
SIGNAL_NAMES = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
    8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
    15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP",
    21: "SIGTTIN", 22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM",
    27: "SIGPROF", 28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
}

WORKER_FAILED_RE = re.compile(
    r"failed \(exitcode: (?P<code>-?\d+)\)(?: local_rank: (?P<local_rank>-?\d+))?(?: \(pid: (?P<pid>\d+)\))?"
    r"(?: of (?:binary: (?P<binary>\S+)|fn: (?P<fn>\S+)))?"
)
CLOSING_RE = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG[A-Z0-9]+)")
FORCE_KILL_RE = re.compile(
    r"Unable to shutdown process (?P<pid>\d+) via (?P<sig1>\S+), forcefully exit(?:t)?ing via "
    r"(?P<sig2>[\w.<>:]+)"
)
CLOSING_FN_RE = re.compile(r"Closing process (?P<pid>\d+) via signal (?P<sig>SIG[A-Z0-9]+)")
RESTART_RE = re.compile(
    r"(?:\[(?P<role>[\w-]+)\] )?Worker group (?P<state>[A-Z]+)\. (?P<left>\d+)/(?P<max>\d+) attempts left"
)
MEMBERSHIP_RE = re.compile(
    r"(?:\[(?P<role>[\w-]+)\] )?Detected (?P<n>\d+) new nodes? from group_rank=(?P<g>\d+); will restart "
    r"worker group"
)
# torch/distributed/elastic/agent/server/api.py `_invoke_run` / `_exit_barrier` (INFO, torch 1.9+): the
# worker group's every local worker exited 0 (log-formats.md section 3.5). The state is printed as
# `WorkerState.SUCCEEDED` from torch 2.x (a str enum's repr) and as `SUCCEEDED` before.
SUCCEEDED_RE = re.compile(
    r"(?:\[(?P<role>[\w-]+)\] )?worker group successfully finished\."
    r"|Local worker group finished \((?:WorkerState\.)?SUCCEEDED\)"
)
# SchedMD/slurm src/srun/launch.c `_task_finish` (failure-signatures.md section 6, SLURM row): srun reports
# each task that ended badly, `srun: error: <hosts>: task(s) <ids>: Exited with exit code <c>` or, for a
# signal, `srun: error: <hosts>: task(s) <ids>: <strsignal>[ (core dumped)]`; several tasks of a host share
# one line (`tasks 0-3,5`). The ids are SLURM_PROCIDs (global ranks only when srun started the ranks).
SRUN_TASK_EXIT_RE = re.compile(
    r"srun: error: (?P<host>[\w.\[\],-]{1,255}): tasks? (?P<tasks>\d{1,6}(?:[-,]\d{1,6}){0,64}): "
    r"(?:Exited with exit code (?P<code>\d{1,3})"
    r"|(?P<sig>[A-Z][a-z]+(?: [a-z]+){0,3})(?: \(core dumped\))?)\s*$"
)
# strsignal() texts srun prints for a task killed by a signal (glibc).
STRSIGNAL = {"Terminated": 15, "Killed": 9, "Aborted": 6, "Segmentation fault": 11, "Bus error": 7,
             "Floating point exception": 8, "Hangup": 1, "Interrupt": 2, "Illegal instruction": 4}
DEEPSPEED_EXIT_RE = re.compile(r"exits with return code = (?P<code>-?\d+)")
# deepspeed/launcher/launch.py `main`: the launcher logs each local process it starts, `process <pid> spawned
# with command: [<argv>]`, the argv holding `--local_rank=<l>` unless the script reads LOCAL_RANK itself
# (`--no_local_rank`); that pid is the local rank's.
DS_SPAWNED_RE = re.compile(r"\bprocess (?P<pid>\d+) spawned with command: \[")
LOCAL_RANK_ARG_RE = re.compile(r"--local[_-]rank=(?P<lr>\d+)")
CHILD_EXIT_RE = re.compile(
    r"[Pp]rocess\b[^.]{0,60}?\b(?:failed|exited|died|terminated)\b[^.]{0,30}?"
    r"\bexit ?code[ =:]+(?P<code>-?\d+)"
    r"(?:\W{1,3}pid[ =:]+(?P<pid>\d+))?"
)
# deepspeed/launcher/launch.py `main` (every DeepSpeed release with the multi-node runner): each node's
# launcher logs the job's whole layout, `global_rank_mapping=defaultdict(<class 'list'>, {'<host>': [<global
# ranks>], ...})`, built by numbering the hosts' slots in the order of its world_info: host h's local rank i
# is global rank mapping[h][i] (the launcher starts its local procs in that order).
DS_MAPPING_RE = re.compile(
    r"global_rank_mapping=(?:defaultdict\(<class 'list'>, )?\{(?P<body>[^{}]{0,200000})\}")
DS_MAPPING_ENTRY_RE = re.compile(r"'(?P<host>[^'\s]{1,255})': \[(?P<ranks>[\d, ]{0,100000})\]")
# deepspeed/launcher/launch.py `main`: after `WORLD INFO DICT: {<host>: [<gpu ids>], ...}` each node's
# launcher logs `nnodes=<hosts in that dict>, num_local_procs=<its gpu ids>, node_rank=<its place>`, and
# starts that many children, all with the same CUDA_VISIBLE_DEVICES (the node's list) and
# `--local_rank=<i>`.
DS_NODES_RE = re.compile(
    r"\bnnodes=(?P<nnodes>\d{1,6}), num_local_procs=(?P<procs>\d{1,6}), node_rank=(?P<node>\d{1,6})\b")
RDZV_DONE_RE = re.compile(r"(?:\[(?P<role>[\w-]+)\] )?Rendezvous complete for workers\. Result:")
RDZV_KV_RE = re.compile(r"^\s*(?P<key>[a-z_]+)=(?P<val>.*?)\s*$")

# ChildFailedError summary (reference §3.6); fields are searched, not anchored, so the one-line-per-rank
# flattening that some log shippers produce reads like the multi-line table.
CFE_HEADER_RE = re.compile(r"ChildFailedError:\s*$")
CFE_IDX_RE = re.compile(r"^\s*\[(?P<idx>\d+)\]:(?=\s|$)")
CFE_ROOT_RE = re.compile(r"Root Cause \(first observed fail")
CFE_FAILURES_RE = re.compile(r"^\s*Failures:\s*$")
CFE_RULE_RE = re.compile(r"^\s*(?:={10,}|-{10,})\s*$")
CFE_EQ_RULE_RE = re.compile(r"^\s*={10,}\s*$")
CFE_TITLE_RE = re.compile(r"^\S+ FAILED\s*$|^\s*<NO_OTHER_FAILURES>\s*$")
CFE_TIME_RE = re.compile(r"(?:^|\s)time\s*: (?P<time>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)")
CFE_HOST_RE = re.compile(r"(?:^|\s)host\s*: (?P<host>[^\s:]+)")
CFE_RANK_RE = re.compile(r"(?:^|\s)rank\s*: (?P<rank>-?\d+)(?: \(local_rank: (?P<local_rank>-?\d+)\))?")
CFE_EXIT_RE = re.compile(r"(?:^|\s)exitcode\s*: (?P<code>-?\d+)(?: \(pid: (?P<pid>-?\d+)\))?")
CFE_ERRFILE_RE = re.compile(r"(?:^|\s)error_file\s*: ?(?P<path>\S+)")
CFE_SIGNAL_RE = re.compile(r"Signal (?P<signum>\d+) \((?P<signame>SIG\w+)\) received by PID (?P<pid>\d+)")
CFE_FIELD_RE = re.compile(r"^\s+(?:time|host|rank|exitcode|error_file|traceback)\s*:")
CFE_FLAT_RE = re.compile(r"^\s*\[\d+\]:\s+time\s*:.*\brank\s*: -?\d+")
# An entry's `rank : <global> (local_rank: <local>)` field (errors/__init__.py _format_failure, reference
# §3.6): nothing else prints this pair, so a paste cut below the table's header (or inside an entry) is read
# from it on; its entry counts only when the `exitcode : <n> (pid: <p>)` field follows.
CFE_RANK_FIELD_RE = re.compile(r"^\s*rank\s*: -?\d+ \(local_rank: -?\d+\)\s*$")
CFE_TB_RE = re.compile(r"(?:^|\s)traceback\s*: Traceback \(most recent call last\):")
# Inside the table the worker's py_callstack is indented two more spaces (errors/__init__.py _format_failure):
# frames at four spaces, the exception line at two. One space less is accepted: a launcher tag stripped with
# its optional separator space (Open MPI 5 `[1,0]<stderr>: `; Open MPI 4 writes none) takes one from them.
CFE_TB_FRAME_RE = re.compile(
    r"^ {3,4}File \"(?P<file>[^\"]{1,4096})\", line (?P<line>\d{1,9})(?:, in (?P<func>[^\r\n]{1,512}))?$"
)
CFE_TB_SOURCE_RE = re.compile(r"^ {5}")
CFE_TB_EXC_RE = re.compile(
    r"^ {1,2}(?P<type>[A-Za-z_]\w{0,127}(?:\.[A-Za-z_]\w{0,127}){0,15})(?:: (?P<msg>.*))?$"
)
CFE_TB_CHAIN_RE = re.compile(
    r"^ {1,2}(?:Traceback \(most recent call last\):|During handling of the above exception|"
    r"The above exception was the direct cause)"
)
# error_handler.py dump_error_file: the agent names the root-cause worker's error.json before raising
# ChildFailedError; the file's folder is that worker's local rank (<log_dir>/<run>/attempt_<a>/<local_rank>/).
COPY_RE = re.compile(r"to copy child error file \((?P<path>[^()]{0,4096}?)\)")
ERROR_JSON_RE = re.compile(r"/attempt_(?P<attempt>\d{1,6})/(?P<lr>\d{1,6})/error\.json$")
# A torchrun / torch.distributed.run / torch.distributed.launch command line (echoed by a shell prompt or a
# job script) and its options (torch/distributed/run.py: `--nnodes`, `--node-rank`/`--node_rank`,
# `--nproc-per-node`/`--nproc_per_node`, `--standalone`, `--rdzv-backend`).
LAUNCH_CMD_RE = re.compile(r"(?:^|[\s/;&|(])(?:torchrun|-m\s+torch\.distributed\.(?:run|launch))(?=\s)")
OPT_NNODES_RE = re.compile(r"\s--nnodes[= ]\s*[\"']?(?P<v>\d{1,6})(?::(?P<max>\d{1,6}))?(?![\w:])")
OPT_NODE_RANK_RE = re.compile(r"\s--node[_-]rank[= ]\s*[\"']?(?P<v>\d{1,6})(?!\w)")
OPT_NPROC_RE = re.compile(r"\s--nproc[_-]per[_-]node[= ]\s*[\"']?(?P<v>\d{1,6})(?!\w)")
OPT_STANDALONE_RE = re.compile(r"\s--standalone(?![\w-])")
OPT_RDZV_RE = re.compile(r"\s--rdzv[_-]backend[= ]\s*[\"']?(?P<v>[\w-]{1,32})")
# torch/distributed/run.py prints this banner only when nproc_per_node > 1 (several workers per agent).
OMP_BANNER_RE = re.compile(r"Setting OMP_NUM_THREADS environment variable for each process to be")
MAX_BLOCK_LINES = 5000
MAX_FRAMES = 40
MAX_COPY_WAIT = 400   # lines between the agent naming the child error file and the callstack it prints


def signal_name(exitcode: int | None) -> str | None:
    """Name of the signal a negative exit code stands for (torchrun/Popen convention), else None."""
    if exitcode is None or exitcode >= 0:
        return None
    return SIGNAL_NAMES.get(-exitcode, f"SIG{-exitcode}")


def shell_signal_name(code: int | None) -> str | None:
    """Signal behind a launcher return code: negative (Popen) or 128+N (shell status)."""
    if code is None:
        return None
    if code < 0:
        return signal_name(code)
    if 128 < code <= 128 + 31:
        return SIGNAL_NAMES.get(code - 128)
    return None


def _signame(text: str) -> str:
    """`<Signals.SIGKILL: 9>` / `Signals.SIGKILL` / `SIGKILL` / `9` → `SIGKILL`.

    The agent formats the `signal.Signals` member with `%s` (elastic/multiprocessing/api.py `_close`); from
    Python 3.11 an IntEnum's str() is its number (`enum.IntEnum.__str__ = int.__str__`), so the same line
    names the signal by its Linux number.
    """
    m = re.search(r"SIG[A-Z0-9]+", text)
    if m:
        return m.group(0)
    return SIGNAL_NAMES.get(int(text), text) if text.isdigit() and len(text) <= 2 else text


@dataclass
class _Record:
    line: LogLine
    section: str  # "failures", "root" or "unknown" (flattened rows seen without the header)
    fields: dict[str, Any] = field(default_factory=dict)
    tb: _Callstack | None = None   # the worker's py_callstack printed in the `traceback :` field
    exit_line: LogLine | None = None   # the row's `exitcode : <n> (pid: <p>)` line: what the event cites


def untab(text: str) -> str:
    """`text` with its leading tabs as four spaces each: the launcher's table and its callstack are read by
    their indentation (log-formats.md section 3.6: two spaces for a field, two more for the callstack's
    frames), and a paste whose editor turned every four spaces into a tab keeps that structure."""
    body = text.lstrip("\t")
    return " " * (4 * (len(text) - len(body))) + body


@dataclass
class _Callstack:
    """A worker's traceback as the agent prints it (table field, or after naming the child's error.json)."""

    line: LogLine
    frames: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    exc_type: str | None = None
    message: str | None = None
    local_rank: int | None = None
    failed_rank: int | None = None
    end: int | None = None   # the physical line number of the callstack's last line read

    def feed(self, text: str) -> bool:
        """Take one table-indented line of the callstack; False when it is not one.

        A chained callstack (`The above exception was the direct cause ...`) ends with the exception that
        killed the worker: its frames and exception line replace the earlier ones.
        """
        m = CFE_TB_FRAME_RE.match(text)
        if m:
            if self.exc_type is not None:
                self.frames, self.exc_type, self.message = [], None, None
            self.frames.append((m["file"], to_count(m["line"]), m["func"]))
            if len(self.frames) > MAX_FRAMES:
                del self.frames[0]   # keep the innermost frames, where the worker failed
            return True
        if CFE_TB_SOURCE_RE.match(text) or not text.strip() or CFE_TB_CHAIN_RE.match(text):
            return True   # a frame's source or caret line, a blank line, the chain's joining lines
        if CFE_FIELD_RE.match(text):
            return False
        m = CFE_TB_EXC_RE.match(text)
        if m and (m["type"].endswith(("Error", "Exception", "Interrupt", "Exit")) or m["msg"] is not None):
            self.exc_type, self.message = m["type"], (m["msg"] or "").strip()[:2000] or None
            return True
        return False


@dataclass
class _Summary:
    """State of one ChildFailedError table being read."""

    section: str = "unknown"
    records: list[_Record] = field(default_factory=list)
    root_seen: bool = False
    done: bool = False
    lines: int = 0
    headed: bool = False          # began at the `ChildFailedError:` line (not a flattened excerpt)
    failures_seen: bool = False   # its `Failures:` section (records or <NO_OTHER_FAILURES>) was read
    cut: bool = False             # began at an entry's `rank :` field: the paste lost the header above it


class ElasticParser(Parser):
    """torchrun agent: worker_failed, closing_signal, child_failed, worker_group_restart, launcher_exit."""

    name = "elastic"
    triggers = (
        "exitcode",
        "ChildFailedError",
        "closing signal",
        "forcefully exit",
        "Closing process",
        "exit code",
        "orker group",
        "SUCCEEDED",
        "return code",
        "Rendezvous complete",
        "copy child error file",
        "torchrun",
        "torch.distributed.run",
        "torch.distributed.launch",
        "OMP_NUM_THREADS environment variable",
        "global_rank_mapping=",
        "num_local_procs=",
        "srun: error: ",
        "spawned with command",
        "(local_rank: ",
    )
    emits = (
        EventSpec("worker_failed", ("exitcode", "local_rank", "pid", "signal", "entrypoint", "placed_rank"),
                  "the agent saw a local worker exit non-zero; `placed_rank`: its global rank, where a "
                  "launcher's layout of the agent's host states it (set job-wide, after reading)"),
        EventSpec("closing_signal", ("pid", "signal"),
                  "the agent is signalling a surviving local worker to stop"),
        EventSpec("child_failed", ("failed_rank", "local_rank", "failed_host", "exitcode", "pid", "signal",
                                   "failure_time", "root_cause", "error_file", "table_local_ranks"),
                  "one block of the ChildFailedError summary table; `table_local_ranks`: every local rank "
                  "the whole table lists (only when the table was read from its header to its closing rule)"),
        EventSpec("worker_group_restart", ("restarts_left", "max_restarts", "state", "role"),
                  "the agent restarts the worker group"),
        EventSpec("agent_succeeded", ("role",),
                  "the torchrun agent reports its worker group finished with every worker exiting 0 "
                  "(`WorkerState.SUCCEEDED`)"),
        EventSpec("launcher_exit", ("exitcode", "pid", "launcher", "signal", "local_rank", "placed_rank",
                                    "tasks", "task_host"),
                  "a launcher (DeepSpeed, SLURM srun, a serving framework) reports a child's exit status; "
                  "`placed_rank` as for worker_failed; srun's line names `tasks` (SLURM_PROCIDs) on "
                  "`task_host`"),
        EventSpec("world_info", ("node_rank", "nnodes", "world_size", "master_addr", "local_ranks",
                                 "global_ranks"),
                  "rendezvous result: which global ranks this agent's local workers got"),
        EventSpec("rank_layout", ("node_host", "node_index", "global_ranks"),
                  "a launcher's statement of which global ranks run on a host (DeepSpeed's "
                  "`global_rank_mapping=`): `global_ranks` in local-rank order, `node_index` the host's "
                  "place in the mapping (its node rank); one event per host"),
        EventSpec("worker_spawned", ("pid", "local_rank", "launcher", "placed_rank"),
                  "a launcher started a local worker with this pid (DeepSpeed's `process <pid> spawned "
                  "with command: [... '--local_rank=<l>' ...]`); `placed_rank`: its global rank, where a "
                  "launcher's layout of the host states it (set job-wide, after reading)"),
        EventSpec("launch_config", ("launcher", "nnodes", "node_rank", "nproc_per_node", "several_workers"),
                  "a torchrun / torch.distributed.run / launch command line (node_rank only when the "
                  "static rendezvous uses it), DeepSpeed's `nnodes=<n>, num_local_procs=<k>, node_rank=<r>`, "
                  "or torchrun's OMP_NUM_THREADS banner, which it prints only "
                  "when it starts several workers (several_workers)"),
        EventSpec("error_file", ("exc_type", "message", "timestamp", "error_code", "frames", "frame_file",
                                 "frame_line", "frame_func", "last_line"),
                  "a worker's error.json callstack as the agent prints it: the `traceback :` field of a "
                  "ChildFailedError entry (rank = its global rank; `last_line`: the line number of the "
                  "entry's last callstack line), or the callstack printed after the agent named the child's "
                  "error file (local_rank = the file's folder)"),
    )
    examples = (
        Example("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
                "(pid: 30142) of binary: /opt/conda/bin/python",
                "worker_failed", {"exitcode": 1, "local_rank": 0, "pid": 30142, "signal": None},
                "torch 1.10-2.0 (stdlib logging)"),
        Example("[2024-05-28 14:04:27,950] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                "(exitcode: -6) local_rank: 2 (pid: 60554) of binary: /opt/venv/bin/python",
                "worker_failed", {"exitcode": -6, "local_rank": 2, "pid": 60554, "signal": "SIGABRT"},
                "torch 2.1-2.2"),
        Example("E0517 08:24:03.805000 140617718325696 torch/distributed/elastic/multiprocessing/api.py:826] "
                "failed (exitcode: -9) local_rank: 1 (pid: 880412) of binary: /tmp/venv/bin/python3",
                "worker_failed", {"exitcode": -9, "local_rank": 1, "pid": 880412, "signal": "SIGKILL"},
                "torch 2.3-2.4"),
        Example("E1130 08:04:26.123000 12345 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                "(exitcode: 1) local_rank: 0 (pid: 12346) of fn: main (start_method: spawn)",
                "worker_failed", {"exitcode": 1, "local_rank": 0, "pid": 12346, "entrypoint": "main"},
                "torch 2.5-2.9"),
        Example("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 30143 closing signal "
                "SIGTERM", "closing_signal", {"pid": 30143, "signal": "SIGTERM"}, "torch 1.10-2.0"),
        Example("[2024-05-28 14:04:27,954] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending "
                "process 60552 closing signal SIGTERM", "closing_signal", {"pid": 60552, "signal": "SIGTERM"},
                "torch 2.1-2.2"),
        Example("W1130 08:04:26.123000 12345 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                "process 12347 closing signal SIGTERM", "closing_signal", {"pid": 12347, "signal": "SIGTERM"},
                "torch 2.3-2.9"),
        Example("W1130 08:04:56.123000 12345 torch/distributed/elastic/multiprocessing/api.py:920] Unable to "
                "shutdown process 12347 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL",
                "closing_signal", {"pid": 12347, "signal": "SIGKILL"}, "torch 2.0-2.9"),
        Example("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                "============================================================\n"
                "train.py FAILED\n"
                "------------------------------------------------------------\n"
                "Failures:\n"
                "[1]:\n"
                "  time      : 2024-05-28_14:04:28\n"
                "  host      : node-01.example.com\n"
                "  rank      : 3 (local_rank: 3)\n"
                "  exitcode  : -6 (pid: 60555)\n"
                "  error_file: <N/A>\n"
                "  traceback : Signal 6 (SIGABRT) received by PID 60555\n"
                "------------------------------------------------------------\n"
                "Root Cause (first observed failure):\n"
                "[0]:\n"
                "  time      : 2024-05-28_14:04:27\n"
                "  host      : node-01.example.com\n"
                "  rank      : 2 (local_rank: 2)\n"
                "  exitcode  : 1 (pid: 60554)\n"
                "  error_file: /tmp/torchelastic_ab12cd/none_3xk9/attempt_0/2/error.json\n"
                "  traceback : Traceback (most recent call last):\n"
                "    File \"train.py\", line 10, in <module>\n"
                "      main()\n"
                "  RuntimeError: boom\n"
                "============================================================\n",
                "child_failed",
                {"failed_rank": 2, "local_rank": 2, "failed_host": "node-01.example.com", "exitcode": 1,
                 "pid": 60554, "signal": None, "failure_time": "2024-05-28_14:04:27", "root_cause": True,
                 "error_file": "/tmp/torchelastic_ab12cd/none_3xk9/attempt_0/2/error.json"},
                "torch 1.10-2.9 (reference §3.6 template)"),
        Example("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                "============================================================\n"
                "train.py FAILED\n"
                "------------------------------------------------------------\n"
                "Failures:\n"
                "[1]:\n"
                "  time      : 2024-05-28_14:04:28\n"
                "  host      : node-01.example.com\n"
                "  rank      : 3 (local_rank: 3)\n"
                "  exitcode  : -6 (pid: 60555)\n"
                "  error_file: <N/A>\n"
                "  traceback : Signal 6 (SIGABRT) received by PID 60555\n"
                "------------------------------------------------------------\n"
                "Root Cause (first observed failure):\n"
                "[0]:\n"
                "  time      : 2024-05-28_14:04:27\n",
                "child_failed",
                {"failed_rank": 3, "local_rank": 3, "exitcode": -6, "pid": 60555, "signal": "SIGABRT",
                 "root_cause": False, "error_file": None},
                "torch 1.10-2.9 (truncated table)"),
        Example("[4]: time : 2024-05-28_14:04:28 host : node-02 rank : 12 (local_rank: 4) exitcode : -6 "
                "(pid: 2201) error_file: <N/A> traceback : Signal 6 (SIGABRT) received by PID 2201\n"
                "------------------------------------------------------------\n"
                "Root Cause (first observed failure):\n"
                "[0]: time : 2024-05-28_14:04:27 host : node-02 rank : 8 (local_rank: 0) exitcode : -6 "
                "(pid: 2197) error_file: <N/A> traceback : Signal 6 (SIGABRT) received by PID 2197\n",
                "child_failed",
                {"failed_rank": 8, "local_rank": 0, "failed_host": "node-02", "exitcode": -6, "pid": 2197,
                 "signal": "SIGABRT", "root_cause": True},
                "torch 1.10-2.9 (table flattened one row per rank by a log shipper)"),
        Example("[3]:\n"
                "  time      : 2025-06-11_03:12:40\n"
                "  host      : trn-b04\n"
                "  rank      : 11 (local_rank: 3)\n"
                "  exitcode  : -9 (pid: 7702)\n"
                "  error_file: <N/A>\n"
                "  traceback : Signal 9 (SIGKILL) received by PID 7702\n"
                "============================================================\n",
                "child_failed",
                {"failed_rank": 11, "local_rank": 3, "exitcode": -9, "pid": 7702, "signal": "SIGKILL",
                 "root_cause": None},
                "torch 1.10-2.9 (constructed: a paste cut below the table's header and Root Cause line)"),
        Example("I0412 06:30:11.402000 5120 torch/distributed/elastic/agent/server/api.py:932] Local worker "
                "group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
                "agent_succeeded", {"role": None},
                "torch 2.x (written from agent/server/api.py `_exit_barrier`)"),
        Example("INFO:torch.distributed.elastic.agent.server.api:[trainer] worker group successfully "
                "finished. Waiting 300 seconds for other agents to finish.", "agent_succeeded",
                {"role": "trainer"},
                "torch 1.10-2.0 (written from agent/server/api.py `_invoke_run`)"),
        Example("INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts "
                "left; will restart worker group", "worker_group_restart",
                {"restarts_left": 3, "max_restarts": 3, "state": "FAILED", "role": "default"},
                "torch 1.10-2.0"),
        Example("I1130 08:04:27.123000 12345 torch/distributed/elastic/agent/server/api.py:890] [default] "
                "Worker group UNHEALTHY. 1/2 attempts left; will restart worker group",
                    "worker_group_restart",
                {"restarts_left": 1, "max_restarts": 2, "state": "UNHEALTHY"}, "torch 2.3-2.9"),
        Example("srun: error: gpu-b07: task 3: Exited with exit code 1", "launcher_exit",
                {"exitcode": 1, "launcher": "srun", "signal": None, "tasks": [3], "task_host": "gpu-b07"},
                "Slurm srun (src/srun/launch.c _task_finish), any version"),
        Example("srun: error: cn-0412: tasks 4-5,7: Terminated", "launcher_exit",
                {"exitcode": -15, "launcher": "srun", "signal": "SIGTERM", "tasks": [4, 5, 7]},
                "Slurm srun, a signal's strsignal() text"),
        Example("srun: error: cn-0413: task 9: Segmentation fault (core dumped)", "launcher_exit",
                {"exitcode": -11, "signal": "SIGSEGV", "tasks": [9]}, "Slurm srun, core dumped"),
        Example("[2024-10-01 01:17:14,772] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
                "'train.py', '--local_rank=1'] exits with return code = -9", "launcher_exit",
                {"exitcode": -9, "launcher": "deepspeed", "signal": "SIGKILL", "local_rank": 1},
                "DeepSpeed launcher (any torch)"),
        Example("Subprocess failed with exit code 137, pid: 5120",
                "launcher_exit", {"exitcode": 137, "pid": 5120, "launcher": "other", "signal": "SIGKILL"},
                "serving frameworks that supervise torch workers"),
        Example("I1130 08:03:00.123000 12345 torch/distributed/elastic/agent/server/api.py:580] [default] "
                "Rendezvous complete for workers. Result:\n"
                "  restart_count=0\n  master_addr=node-01\n  master_port=29500\n  group_rank=1\n"
                "  group_world_size=2\n  local_ranks=[0, 1]\n  role_ranks=[2, 3]\n  global_ranks=[2, 3]\n"
                "  role_world_sizes=[4, 4]\n  global_world_sizes=[4, 4]\n\n",
                "world_info",
                {"node_rank": 1, "nnodes": 2, "world_size": 4, "master_addr": "node-01",
                 "local_ranks": [0, 1], "global_ranks": [2, 3]},
                "torch 1.10-2.9 with LOGLEVEL=INFO"),
        Example("worker-2: [2025-02-11 08:30:02,114] [INFO] [launch.py:163:main] global_rank_mapping="
                "defaultdict(<class 'list'>, {'worker-0': [0, 1], 'worker-1': [2, 3], 'worker-2': [4, 5]})",
                "rank_layout", {"node_host": "worker-2", "node_index": 2, "global_ranks": [4, 5]},
                "DeepSpeed launcher (deepspeed/launcher/launch.py), under pdsh"),
        Example("[2025-02-11 08:30:02,114] [INFO] [launch.py:163:main] global_rank_mapping="
                "defaultdict(<class 'list'>, {'10.0.3.7': [0, 1, 2, 3], 'gpu-b2.cluster': [4, 5, 6, 7]})",
                "rank_layout", {"node_host": "10.0.3.7", "node_index": 0, "global_ranks": [0, 1, 2, 3]},
                "DeepSpeed launcher, hosts named by address"),
        Example("[2023-08-03 15:10:12,004] [INFO] [launch.py:151:main] nnodes=1, num_local_procs=8, "
                "node_rank=0", "launch_config",
                {"launcher": "deepspeed", "nnodes": 1, "node_rank": 0, "nproc_per_node": 8,
                 "several_workers": True},
                "DeepSpeed launcher (deepspeed/launcher/launch.py)"),
        Example("user@n2:~/job$ torchrun --nnodes=2 --node-rank=1 --nproc-per-node=4 --master-addr=10.2.0.5 "
                "--master-port=29411 train.py --lr 3e-4",
                "launch_config", {"launcher": "torchrun", "nnodes": 2, "node_rank": 1, "nproc_per_node": 4,
                                  "several_workers": True},
                "torchrun (torch 1.10-2.9), as a shell prompt echoes it"),
        Example("python -m torch.distributed.launch --nproc_per_node 1 --nnodes 3 --node_rank 2 "
                "--master_addr 10.2.0.5 --master_port 29411 train.py",
                "launch_config", {"launcher": "torch.distributed.launch", "nnodes": 3, "node_rank": 2,
                                  "nproc_per_node": 1, "several_workers": False},
                "torch.distributed.launch (torch 1.10-2.9)"),
        Example("torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=n1:29411 "
                "--node_rank=1 train.py",
                "launch_config", {"nnodes": 2, "node_rank": None, "nproc_per_node": 8},
                "torchrun with a dynamic rendezvous, which assigns node ranks itself"),
        Example("W1201 10:11:12.345000 4411 torch/distributed/run.py:792] Setting OMP_NUM_THREADS "
                "environment variable for each process to be 1 in default, to avoid your system being "
                "overloaded, please "
                "further tune the variable for optimal performance in your application as needed.",
                "launch_config", {"nproc_per_node": None, "several_workers": True},
                "torchrun (torch 2.5-2.9 logging envelope), printed when nproc_per_node > 1"),
        Example("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                "============================================================\n"
                "fit.py FAILED\n"
                "------------------------------------------------------------\n"
                "Failures:\n"
                "  <NO_OTHER_FAILURES>\n"
                "------------------------------------------------------------\n"
                "Root Cause (first observed failure):\n"
                "[0]:\n"
                "  time      : 2025-11-04_07:41:19\n"
                "  host      : gpu-b07\n"
                "  rank      : 5 (local_rank: 1)\n"
                "  exitcode  : 1 (pid: 88213)\n"
                "  error_file: /tmp/torchelastic_k3j9x0aa/none_p0q7w2ee/attempt_0/1/error.json\n"
                "  traceback : Traceback (most recent call last):\n"
                "    File \"/srv/job/fit.py\", line 140, in <module>\n"
                "      main()\n"
                "    File \"/srv/job/fit.py\", line 97, in main\n"
                "      batch = next(it)\n"
                "  KeyError: 'pixel_values'\n"
                "  \n"
                "============================================================\n",
                "error_file",
                {"exc_type": "KeyError", "message": "'pixel_values'", "frame_file": "/srv/job/fit.py",
                 "frame_line": 97, "frame_func": "main"},
                "torch 1.10-2.9 (the root cause's py_callstack, indented two spaces by _format_failure)"),
        Example("[2025-03-02 11:05:09,412] torch.distributed.elastic.multiprocessing.errors.error_handler: "
                "[ERROR] no error file defined for parent, to copy child error file "
                "(/tmp/torchelastic_q1w2e3r4/none_zx81k2lm/attempt_0/1/error.json)\n"
                "    File \"/srv/job/fit.py\", line 212, in step\n"
                "      dist.broadcast(flag, src=0)\n"
                "    File \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", "
                "line 2231, in broadcast\n"
                "      work = group.broadcast([tensor], opts)\n",
                "error_file", {"exc_type": None, "frame_func": "broadcast", "frame_line": 2231},
                "torch 2.1-2.2 (the table's head cut away: the callstack follows the named error file)"),
        Example("[2025-03-02 11:05:09,412] torch.distributed.elastic.multiprocessing.errors.error_handler: "
                "[ERROR] no error file defined for parent, to copy child error file "
                "(/tmp/torchelastic_q1w2e3r4/none_zx81k2lm/attempt_0/3/error.json)\n"
                "\tFile \"/srv/job/fit.py\", line 212, in step\n"
                "\t  dist.all_gather(parts, t)\n"
                "\tFile \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", "
                "line 2950, in all_gather\n"
                "\t  work = group.allgather([tensor_list], [tensor])\n",
                "error_file", {"exc_type": None, "frame_func": "all_gather", "frame_line": 2950},
                "the same pasted through an editor that turned each four-space indent into a tab"),
        Example("W0312 17:20:41.507000 48210 torch/distributed/elastic/multiprocessing/api.py:1047] "
                "Unable to shutdown process 48233 via 2, forcefully exiting via 9",
                "closing_signal", {"pid": 48233, "signal": "SIGKILL"},
                "torch 2.x on Python 3.11+ (signal number)"),
        Example("[2025-03-14 22:10:02,127] [INFO] [launch.py:253:main] process 51232 spawned with command: "
                "['/usr/bin/python3', '-u', 'finetune.py', '--local_rank=2', '--deepspeed', 'z3.json']",
                "worker_spawned", {"pid": 51232, "local_rank": 2, "launcher": "deepspeed"},
                "DeepSpeed launcher (deepspeed/launcher/launch.py `main`)"),
    )
    near_misses = (
        "    raise ChildFailedError(",
        "from torch.distributed.elastic.multiprocessing.errors import ChildFailedError",
        "Sending process group status to the monitor",
        "train step 10 failed (retrying)",
        "the return code of the job was fine",
        "Local worker group finished (FAILED). Waiting 300 seconds for other agents to finish",
        "  File \"/usr/local/bin/torchrun\", line 8, in <module>",
        "torchrun failed again, see above",
        "global_rank_mapping={}",
        "  rank      : 2 (local_rank: 2)",
    )

    def __init__(self) -> None:
        self.summary: _Summary | None = None
        self.rdzv: tuple[LogLine, dict[str, str]] | None = None
        self.rdzv_lines = 0
        self.copied: tuple[int, int] | None = None   # (local rank of the child error file, lines waited)
        self.callstack: _Callstack | None = None     # a table-indented callstack seen without its table

    idle_ignores = ("rdzv_lines",)

    def wants_more(self) -> bool:
        return (self.summary is not None or self.rdzv is not None or self.copied is not None
                or self.callstack is not None)

    def close(self) -> Iterable[Event]:
        out = self._flush_summary()
        out.extend(self._flush_rdzv())
        out.extend(self._flush_callstack())
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        if line.text[:1] == "\t":
            line = replace(line, text=untab(line.text))
        text = line.text
        if self.callstack is not None:
            if self.callstack.feed(text):
                self.callstack.end = line.ref.line
                return out
            out.extend(self._flush_callstack())
        if self.copied is not None and self.summary is None:
            lr, waited = self.copied
            if CFE_TB_FRAME_RE.match(text):
                # The table's head was cut: its root-cause callstack is the child error file's.
                self.copied = None
                self.callstack = _Callstack(line=line, local_rank=lr)
                self.callstack.feed(text)
                return out
            self.copied = (lr, waited + 1) if waited < MAX_COPY_WAIT else None
        if self.rdzv is not None:
            m = RDZV_KV_RE.match(text)
            if m and self.rdzv_lines < 20:
                self.rdzv[1][m["key"]] = m["val"]
                self.rdzv_lines += 1
                return out
            if not text.strip() and self.rdzv_lines == 0:
                return out
            out.extend(self._flush_rdzv())
        if self.summary is not None:
            if self._summary_line(line):
                return out
            out.extend(self._flush_summary())
        if CFE_HEADER_RE.search(text):
            self.summary = _Summary(headed=True)
            self.copied = None
            return out
        if CFE_FLAT_RE.search(text):
            self.summary = _Summary()
            self.copied = None
            self._summary_line(line)
            return out
        if CFE_RANK_FIELD_RE.match(text):
            self.summary = _Summary(cut=True)
            self.summary.records.append(_Record(line=line, section="unknown"))
            self.copied = None
            self._summary_line(line)
            return out
        out.extend(self._single(line))
        return out

    def _flush_callstack(self) -> list[Event]:
        cs, self.callstack = self.callstack, None
        if cs is None or not (cs.frames or cs.exc_type):
            return []
        return [self._error_file(cs)]

    def _error_file(self, cs: _Callstack) -> Event:
        inner = cs.frames[-1] if cs.frames else (None, None, None)
        ev = self.event(
            "error_file", cs.line, exc_type=cs.exc_type, message=cs.message, timestamp=None, error_code=None,
            frames=[f"{f}:{n} in {fn}" if fn else f"{f}:{n}" for f, n, fn in cs.frames],
            frame_file=inner[0], frame_line=inner[1], frame_func=inner[2], last_line=cs.end,
        )
        text = f"{cs.exc_type}: {cs.message}" if cs.exc_type and cs.message else (cs.exc_type or ev.text)
        return replace(ev, text=text, rank=cs.failed_rank, local_rank=cs.local_rank)

    # -- one-line messages ---------------------------------------------------------------------
    def _single(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        m = COPY_RE.search(text)
        if m:
            where = ERROR_JSON_RE.search(m["path"])
            if where:
                self.copied = (int(where["lr"]), 0)
            return out
        if LAUNCH_CMD_RE.search(text):
            launch = self._launch(line)
            return [launch] if any(launch.get(k) is not None for k in ("nnodes", "nproc_per_node")) else []
        if OMP_BANNER_RE.search(text):
            return [self.event("launch_config", line, launcher="torchrun", nnodes=None, node_rank=None,
                               nproc_per_node=None, several_workers=True)]
        m = WORKER_FAILED_RE.search(text)
        if m:
            code = to_int(m["code"])
            out.append(self.event("worker_failed", line, exitcode=code, local_rank=to_count(m["local_rank"]),
                                  pid=to_count(m["pid"]), signal=signal_name(code),
                                  entrypoint=m["binary"] or m["fn"]))
            return out
        m = CHILD_EXIT_RE.search(text)
        if m:
            code = to_int(m["code"])
            out.append(self.event("launcher_exit", line, exitcode=code, pid=to_count(m["pid"]),
                                  launcher="other", signal=shell_signal_name(code), local_rank=None))
            return out
        m = CLOSING_RE.search(text) or CLOSING_FN_RE.search(text)
        if m:
            out.append(self.event("closing_signal", line, pid=to_count(m["pid"]), signal=m["sig"]))
            return out
        m = FORCE_KILL_RE.search(text)
        if m:
            out.append(self.event("closing_signal", line, pid=to_count(m["pid"]), signal=_signame(m["sig2"])))
            return out
        m = RESTART_RE.search(text)
        if m:
            out.append(self.event("worker_group_restart", line, restarts_left=to_count(m["left"]),
                                  max_restarts=to_count(m["max"]), state=m["state"], role=m["role"]))
            return out
        m = SUCCEEDED_RE.search(text)
        if m:
            out.append(self.event("agent_succeeded", line, role=m["role"]))
            return out
        m = MEMBERSHIP_RE.search(text)
        if m:
            out.append(self.event("worker_group_restart", line, restarts_left=None, max_restarts=None,
                                  state="MEMBERSHIP_CHANGE", role=m["role"]))
            return out
        if text.startswith("srun: error: "):
            m = SRUN_TASK_EXIT_RE.match(text)
            if m:
                signum = STRSIGNAL.get(m["sig"] or "")
                if m["code"] is None and signum is None:
                    return out
                code = to_int(m["code"]) if m["code"] is not None else -signum   # type: ignore[operator]
                out.append(self.event("launcher_exit", line, exitcode=code, pid=None, launcher="srun",
                                      signal=signal_name(code), local_rank=None,
                                      tasks=task_ids(m["tasks"]), task_host=m["host"]))
                return out
        m = DS_SPAWNED_RE.search(text)
        if m:
            lr = LOCAL_RANK_ARG_RE.search(text)
            if lr:
                out.append(self.event("worker_spawned", line, pid=to_count(m["pid"]),
                                      local_rank=to_count(lr["lr"]), launcher="deepspeed"))
            return out
        m = DEEPSPEED_EXIT_RE.search(text)
        if m:
            code = to_int(m["code"])
            lr = LOCAL_RANK_ARG_RE.search(text)
            out.append(self.event("launcher_exit", line, exitcode=code, pid=None, launcher="deepspeed",
                                  signal=shell_signal_name(code),
                                      local_rank=to_count(lr["lr"]) if lr else None))
            return out
        m = DS_NODES_RE.search(text)
        if m:
            nnodes, procs = to_count(m["nnodes"]), to_count(m["procs"])
            # Its global ranks follow the hosts' slot counts (global_rank_mapping), not node_rank * procs,
            # so the node rank is kept only where it is certain: the one node of a one-node job.
            return [self.event("launch_config", line, launcher="deepspeed", nnodes=nnodes,
                               node_rank=0 if nnodes == 1 else None, nproc_per_node=procs,
                               several_workers=procs is not None and procs > 1)]
        m = DS_MAPPING_RE.search(text)
        if m:
            for i, entry in enumerate(DS_MAPPING_ENTRY_RE.finditer(m["body"])):
                out.append(self.event("rank_layout", line, node_host=entry["host"], node_index=i,
                                      global_ranks=int_list("[" + entry["ranks"] + "]")))
            return out
        if RDZV_DONE_RE.search(text):
            self.rdzv = (line, {})
            self.rdzv_lines = 0
        return out

    def _launch(self, line: LogLine) -> Event:
        """A launcher command line: what it states about this node (static rendezvous only for node_rank)."""
        text = " " + line.text
        launcher = "torch.distributed.launch" if "distributed.launch" in text else "torchrun"
        nn, nr, npn = OPT_NNODES_RE.search(text), OPT_NODE_RANK_RE.search(text), OPT_NPROC_RE.search(text)
        rdzv = OPT_RDZV_RE.search(text)
        nnodes = to_count(nn["v"]) if nn and (nn["max"] is None or nn["max"] == nn["v"]) else None
        if OPT_STANDALONE_RE.search(text):
            nnodes = 1
        node_rank: int | None = None
        if nnodes == 1:
            node_rank = 0
        elif nr and (rdzv is None or rdzv["v"] == "static"):
            node_rank = to_count(nr["v"])   # a dynamic rendezvous assigns the node's rank itself
        nproc = to_count(npn["v"]) if npn else None
        return self.event("launch_config", line, launcher=launcher, nnodes=nnodes, node_rank=node_rank,
                          nproc_per_node=nproc, several_workers=nproc is not None and nproc > 1)

    # -- rendezvous result block ---------------------------------------------------------------
    def _flush_rdzv(self) -> list[Event]:
        if self.rdzv is None:
            return []
        line, kv = self.rdzv
        self.rdzv = None
        if not kv:
            return []
        sizes = int_list(kv.get("global_world_sizes") or kv.get("role_world_sizes"))
        return [self.event(
            "world_info", line, node_rank=to_count(kv.get("group_rank")),
                nnodes=to_count(kv.get("group_world_size")),
            world_size=sizes[0] if sizes else None, master_addr=kv.get("master_addr") or None,
            local_ranks=int_list(kv.get("local_ranks")), global_ranks=int_list(kv.get("global_ranks")),
        )]

    # -- ChildFailedError table ----------------------------------------------------------------
    def _summary_line(self, line: LogLine) -> bool:
        """Consume one line of the table; False when the line does not belong to it (table ended)."""
        s = self.summary
        assert s is not None
        s.lines += 1
        text = line.text
        if s.done or s.lines > MAX_BLOCK_LINES:
            return False
        if not text.strip():
            return True
        if CFE_EQ_RULE_RE.match(text):
            # the closing rule comes after the root-cause section; the opening one right after the header
            if s.root_seen and s.records:
                s.done = True
            return True
        if CFE_RULE_RE.match(text) or CFE_TITLE_RE.search(text) or CFE_FAILURES_RE.match(text):
            if CFE_FAILURES_RE.match(text):
                s.section = "failures"
                s.failures_seen = True
            return True
        rest = text
        m = CFE_ROOT_RE.search(text)
        if m:
            s.root_seen = True
            s.section = "root"
            rest = text[m.end():].split(":", 1)[-1] if ":" in text[m.end():] else ""
        m = CFE_IDX_RE.search(rest)
        if m:
            s.records.append(_Record(line=line, section=s.section))
            rest = rest[m.end():]
        elif s.records and s.records[-1].tb is not None and s.records[-1].tb.feed(text):
            s.records[-1].tb.end = line.ref.line
            return True
        elif rest is text and not CFE_FIELD_RE.match(text) and not (s.records and text[:1].isspace()):
            return False
        if s.records:
            rec = s.records[-1]
            self._fields(rec, rest)
            if rec.exit_line is None and "exitcode" in rest and CFE_EXIT_RE.search(rest):
                rec.exit_line = line
            if rec.tb is None and CFE_TB_RE.search(rest):
                rec.tb = _Callstack(line=line)
        return True

    def _fields(self, rec: _Record, text: str) -> None:
        f = rec.fields
        for rx, handler in (
            (CFE_TIME_RE, lambda m: f.setdefault("failure_time", m["time"])),
            (CFE_HOST_RE, lambda m: f.setdefault("failed_host", m["host"])),
            (CFE_RANK_RE, lambda m: (f.setdefault("failed_rank", to_count(m["rank"])),
                                     f.setdefault("local_rank", to_count(m["local_rank"])))),
            (CFE_EXIT_RE, lambda m: (f.setdefault("exitcode", to_int(m["code"])),
                                     f.setdefault("pid", to_count(m["pid"])))),
            (CFE_ERRFILE_RE, lambda m: f.setdefault("error_file",
                                                    None if m["path"] == "<N/A>" else m["path"])),
            (CFE_SIGNAL_RE, lambda m: f.setdefault("signal", m["signame"])),
        ):
            m = rx.search(text)
            if m:
                handler(m)

    def _flush_summary(self) -> list[Event]:
        s = self.summary
        self.summary = None
        if s is None:
            return []
        out = []
        # A whole table (header, Failures, Root Cause, closing rule) lists every local worker of this agent
        # that exited non-zero (torch/distributed/elastic/multiprocessing/api.py: a worker's exit code
        # other than 0 becomes a ProcessFailure; survivors are stopped and listed with their signal): a local
        # rank of the agent missing from it had already exited 0. An excerpt of the table says nothing.
        locals_ = [rec.fields.get("local_rank") for rec in s.records]
        complete = s.headed and s.failures_seen and s.root_seen and s.done and bool(locals_) and all(
            isinstance(v, int) and isinstance(rec.fields.get("failed_rank"), int)
            for v, rec in zip(locals_, s.records, strict=True)
        )
        table_local_ranks = sorted({v for v in locals_ if isinstance(v, int)}) if complete else None
        for rec in s.records:
            f = dict(rec.fields)
            if s.cut and rec.exit_line is None:
                continue   # a lone `rank :` field (the cut also took the entry's exitcode): not read
            if rec.section == "root":
                root: bool | None = True
            elif rec.section == "failures" or s.root_seen:
                root = False
            else:
                root = None
            code = f.get("exitcode")
            out.append(self.event(
                "child_failed", rec.exit_line or rec.line, failed_rank=f.get("failed_rank"),
                local_rank=f.get("local_rank"),
                failed_host=f.get("failed_host"), exitcode=code, pid=f.get("pid"),
                signal=f.get("signal") or signal_name(code), failure_time=f.get("failure_time"),
                root_cause=root, error_file=f.get("error_file"), table_local_ranks=table_local_ranks,
            ))
            if rec.tb is not None and (rec.tb.frames or rec.tb.exc_type):
                rec.tb.failed_rank, rec.tb.local_rank = f.get("failed_rank"), f.get("local_rank")
                out.append(self._error_file(rec.tb))
        return out


LAYOUT_KINDS = frozenset({"rank_layout", "world_info", "launch_config"})   # events `layout_of` reads
MAX_LAYOUT_PROCS = 4096   # a node's worker count read from a command line (bounds the ranks it spans)


def world_local_pairs(e: Event) -> list[tuple[int, int]]:
    """(local rank, global rank) of the printing agent's workers from torchrun's rendezvous result
    (`local_ranks=[...]` / `global_ranks=[...]`, log-formats.md section 3.5); [] for other events."""
    if e.kind != "world_info":
        return []
    locals_, globals_ = e.get("local_ranks"), e.get("global_ranks")
    if not (isinstance(locals_, list) and isinstance(globals_, list) and locals_
            and len(locals_) == len(globals_)):
        return []
    return [(lr, g) for lr, g in zip(locals_, globals_, strict=True)
            if isinstance(lr, int) and isinstance(g, int)]


def layout_of(e: Event) -> list[tuple[str, int, int]]:
    """(host, local rank, global rank) a launcher's own line states for a host's workers; [] for other events.

    DeepSpeed's `global_rank_mapping=` (deepspeed/launcher/launch.py) lists each host's ranks; torchrun's
    rendezvous result (`local_ranks=[...]` / `global_ranks=[...]`, log-formats.md section 3.5) lists those of
    the agent that printed it; a torchrun command line with a static node rank and a worker count states
    its node's ranks, node_rank * nproc_per_node + local_rank (the same section). The host of the last two
    is the host the line came from (a pdsh or `srun -l` prefix, a file of that host); without one there is
    no host to map.
    """
    host: object
    if e.kind == "rank_layout":
        host, ranks = e.get("node_host"), e.get("global_ranks")
        if isinstance(host, str) and host and isinstance(ranks, list):
            return [(host, lr, g) for lr, g in enumerate(ranks) if isinstance(g, int)]
        return []
    host = e.host
    if not isinstance(host, str) or not host:
        return []
    if e.kind == "world_info":
        return [(host, lr, g) for lr, g in world_local_pairs(e)]
    elif e.kind == "launch_config":
        node, nproc = e.get("node_rank"), e.get("nproc_per_node")
        if isinstance(node, int) and isinstance(nproc, int) and 0 < nproc <= MAX_LAYOUT_PROCS:
            return [(host, lr, node * nproc + lr) for lr in range(nproc)]
    return []
