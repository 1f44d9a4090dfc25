"""Read the versions (torch, CUDA, NCCL, driver, Python) and the topology (RANK=, WORLD_SIZE=, hostnames)
that a log states, so the analysis can compare ranks and map writers to ranks and hosts.

Example (collect_env output): `PyTorch version: 2.1.0+cu121`
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EntryGate, EventSpec, Example, Parser, QuietTexts, to_count

VERSION = r"v?(?P<v>\d+\.\d+(?:\.\d+)*(?:[a-z]+\d*)?(?:\+[\w.]+)?)"

# (component, source, regex) — `source` names the form the version was stated in, because "CUDA" in
# nvidia-smi is the driver's ceiling while collect_env's is the one torch was built with.
VERSION_RES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("torch", "collect_env", re.compile(r"(?<![\w])PyTorch version: " + VERSION)),
    ("torch", "torch.__version__", re.compile(r"torch\.__version__\s*[=:]+\s*['\"]?" + VERSION)),
    ("torch", "pip", re.compile(r"(?<![\w.-])torch(?:==| +|: ?)" + VERSION + r"(?![\w.])")),
    ("torch", "log", re.compile(r"(?<![\w])(?:[Tt]orch|PyTorch) version\s*[:=]?\s*" + VERSION)),
    ("cuda", "collect_env", re.compile(r"CUDA used to build PyTorch: " + VERSION)),
    ("cuda", "collect_env_runtime", re.compile(r"CUDA runtime version: " + VERSION)),
    ("cuda", "torch.version.cuda", re.compile(r"torch\.version\.cuda\s*[=:]+\s*['\"]?" + VERSION)),
    ("cuda", "nvidia-smi", re.compile(r"CUDA Version: " + VERSION)),
    ("driver", "nvidia-smi", re.compile(r"Driver Version: " + VERSION)),
    ("driver", "collect_env", re.compile(r"Nvidia driver version: " + VERSION)),
    ("nccl", "torch.cuda.nccl.version", re.compile(
        r"(?i:nccl)[\w.]*(?:\(\))?\s*(?:version)?(?:\(\))?\s*[:=]?\s*\(\s*(?P<a>\d+),\s*(?P<b>\d+),\s*(?P<c>\d+)\s*\)")),
    ("python", "collect_env", re.compile(r"(?<![\w])Python version: (?P<v>\d+\.\d+(?:\.\d+)?)")),
    ("python", "banner", re.compile(r"(?<![\w/])Python (?P<v>\d\.\d+(?:\.\d+)?)(?![\w.])")),
)
ENV_RE = re.compile(
    r"(?<![\w])['\"]?(?P<key>RANK|LOCAL_RANK|WORLD_SIZE|NODE_RANK|GROUP_RANK|MASTER_ADDR)['\"]?\s*[=:]\s*['\"]?"
    r"(?P<val>[\w.:-]+)"
)
HOST_RE = re.compile(
    r"(?<![\w])(?:[Hh]ostname\s*[:=]\s*|Running on (?:host|node)\s+)"
    r"['\"]?(?P<host>[A-Za-z0-9][\w.-]*[\w])(?![\w.(])"
)
# World sizes a program of the user's (or its framework) prints, not an environment echo: a `world_size`
# key with its value (`world_size=4`, `"world_size": 4`, `world size: 4`; not prose such as `rank 0 in world
# size 4`, whose number may be another group's, nor `group_world_size` / `local_world_size`,
# which count nodes or local workers), Lightning's `All distributed processes registered. Starting with 4
# processes` and `MEMBER: 1/4` (lightning/fabric/utilities/distributed.py `_init_dist_connection`),
# accelerate's `Num processes: 4` (accelerate/state.py `PartialState.__repr__`), and `<initialized|started|
# launched|running> with 4 processes`, and a process's banner `process rank 3 of 8`. Marked `stated_by:
# user`: analysis uses them only where every such line agrees (hanglens/analysis/build.py world_size_of).
USER_WORLD_RES = (
    re.compile(r"(?<![\w.])(?i:world)[_ ](?i:size)['\"]?\s*[=:]\s*['\"]?(?P<n>\d{1,7})(?![\w.])"),
    re.compile(r"(?<![\w])(?:Starting|[Ii]nitiali[sz]ed|[Ss]tarted|[Ll]aunched|[Rr]unning) with "
               r"(?P<n>\d{1,7}) (?:distributed )?processes\b"),
    re.compile(r"(?<![\w])MEMBER: \d{1,7}/(?P<n>\d{1,7})(?![\w.])"),
    re.compile(r"^\s*Num processes: (?P<n>\d{1,7})\s*$"),
    # a process's banner opening its message: `process rank 3 of 8, pid ...`, `global rank 3/8: ...`
    # (parsers/lifecycle.py RANK_BANNER_RE reads the rank of the same words)
    re.compile(r"(?:^|[:\]] )(?i:global|process) rank \d{1,7} ?(?:of|/) ?(?P<n>\d{1,7})"
               r"(?:[:,]| starting\b|$)"),
)
# ProcessGroupNCCL states the size of each process group it creates, at INFO (`TORCH_CPP_LOG_LEVEL=INFO`):
# `<pg_prefix>ProcessGroupNCCL initialization options: size: <n>, global rank: <g>, TIMEOUT(ms): ..., PG Name:
# <guid>` (log-formats.md section 1.6; failure-signatures.md section 0.5 maps PG ranks with it). Only the
# default group's size is the world size: its prefix names `default_pg` (2.4+) or its name is `0`, the first
# group of the global counter (section 1.2); a sub-group's line (`PG Name: 3`, a mesh dimension) is not read.
PG_INIT_TEXT = "initialization options: size: "
PG_INIT_SIZE_RE = re.compile(
    r"ProcessGroupNCCL initialization options: size: (?P<n>\d{1,7}), global rank: \d{1,7}(?![\d])")
PG_DEFAULT_RE = re.compile(r"\(default_pg\)|\bPG Name: 0(?![\w.])")
# Ray Train states each training worker's rank: the worker logs `Setting up process group for: <url>
# [rank=<r>, world_size=<n>]` behind its `(RayTrainWorker pid=<pid>, ...)` prefix (ray/train/torch/config.py
# `_setup_torch_process_group`), and the trainer lists its workers as `- (node_id=<id>, ip=<ip>, pid=<pid>)
# world_rank=<r>, local_rank=<l>, node_rank=<n>` (ray/train/_internal/backend_executor.py, after "Started
# distributed worker processes:"). The first is the writer's own rank; the second pairs another process's pid
# with its rank (`worker_pid`, `worker_rank`), as Ray's `(<Actor> pid=<pid>)` prefix (log-formats.md section
# 9.2) and a `RayTaskError ... (pid=<pid>, ...)` name the process by pid only.
RAY_SETUP_RE = re.compile(
    r"Setting up process group for: \S+ \[rank=(?P<r>\d{1,7}), world_size=(?P<n>\d{1,7})\]")
RAY_WORKER_LIST_RE = re.compile(
    r"^\s*- \((?:node_id=\w+, )?ip=[\w.:]+, pid=(?P<pid>\d{1,10})\) world_rank=(?P<r>\d{1,7}), "
    r"local_rank=(?P<l>\d{1,7})")
# A rank's own line that states its process id (`[rank 4] pid=29118 device=cuda:4`, `RANK=3 pid: 4410`): the
# pid names that rank's process where only a pid does (a py-spy or faulthandler dump's `Process <pid>:`
# header, failure-signatures.md section 16). `(pid: N)` in torchrun's agent lines and `worker (pid N)` in the
# DataLoader's messages name other processes and do not match.
SELF_PID_RE = re.compile(r"(?<![\w(])(?:pid|PID)\s?[=:]\s?(?P<pid>\d{2,10})(?![\w.])")


def _may_state_pid(text: str) -> bool:
    """The one test, cheaper than the search, for both reading a self-stated pid (`SELF_PID_RE`) and keeping
    such a text out of the quiet-text memo (`pid`, `PID`)."""
    return "id" in text or "ID" in text


def _pg_init_size(text: str) -> int | None:
    """The world size a default group's init-options line states (None for any other text)."""
    m = PG_INIT_SIZE_RE.search(text) if PG_INIT_TEXT in text else None
    return to_count(m["n"]) if m and PG_DEFAULT_RE.search(text) else None


def _line_dependent(text: str) -> bool:
    """A text whose answer depends on more than the text: a self-stated pid counts only on a line with a rank
    and no Ray/vLLM writer, a default group's size once per file and rank (`_read`)."""
    return _may_state_pid(text) or _pg_init_size(text) is not None


# Texts that gave nothing (see `feed`), but for the `_line_dependent` ones, which are never remembered.
_QUIET = QuietTexts(line_dependent=_line_dependent)
# Every pattern here reads a line on its own: a text none of them may match gives nothing.
_ENTRY = EntryGate(__name__)
ENV_FIELD = {"RANK": "global_rank", "LOCAL_RANK": "local_rank", "WORLD_SIZE": "world_size",
             "NODE_RANK": "node_rank", "GROUP_RANK": "node_rank", "MASTER_ADDR": "master_addr"}


class EnvironmentParser(Parser):
    """Versions → `version_info`; rank/world echoes and hostnames → `world_info`."""

    name = "environment"
    triggers = ("ersion", "torch==", "torch ", "RANK", "WORLD_SIZE", "MASTER_ADDR", "ostname", "Running on ",
                "CUDA used", "orld_size", "orld size:", "orld size =", "orld size=", "MEMBER: ",
                "Num processes", "tarting with ", "nitialized with ", "nitialised with ", "tarted with ",
                "aunched with ", "unning with ", "Setting up process group for: ", "world_rank=",
                "rocess rank ", "lobal rank ",
                # (`pid=` is in every Ray and vLLM worker prefix too: the parser skips those writers' lines)
                "] pid=", "] pid: ", "] PID=", "] PID: ", ", pid=", ", pid: ", " pid=",
                PG_INIT_TEXT)
    emits = (
        EventSpec("version_info", ("component", "version", "source"),
                  "a version the log states (component: torch, cuda, nccl, driver, python)"),
        EventSpec("world_info", ("world_size", "global_rank", "local_rank", "node_rank", "master_addr",
                                 "hostname", "stated_rank", "stated_by", "worker_pid", "worker_rank"),
                  "RANK=/WORLD_SIZE=/... echoes and hostname lines; a worker echoing its RANK states its own "
                  "rank (`stated_rank`); a world size only a program's own line states (`world_size=4`, "
                  "`Starting with 4 processes`) has `stated_by` user; Ray Train's worker list pairs a "
                  "worker's pid with its rank (`worker_pid`, `worker_rank`)"),
    )
    examples = (
        Example("PyTorch version: 2.1.0+cu121", "version_info",
                {"component": "torch", "version": "2.1.0+cu121", "source": "collect_env"},
                "collect_env, torch 1.10-2.9"),
        Example("torch 2.1.2", "version_info", {"component": "torch", "version": "2.1.2"}, "pip list"),
        Example("[pip3] torch==2.4.1", "version_info", {"component": "torch", "version": "2.4.1"},
                "collect_env / pip freeze"),
        Example("torch.__version__ = 1.13.1+cu117", "version_info",
                {"component": "torch", "version": "1.13.1+cu117"}, "user prints"),
        Example("CUDA used to build PyTorch: 12.1", "version_info",
                {"component": "cuda", "version": "12.1", "source": "collect_env"}, "collect_env"),
        Example("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |",
                "version_info", {"component": "driver", "version": "535.104.05", "source": "nvidia-smi"},
                "nvidia-smi 535"),
        Example("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |",
                "version_info", {"component": "cuda", "version": "12.2", "source": "nvidia-smi"},
                    "nvidia-smi 535"),
        Example("Nvidia driver version: 550.54.15", "version_info",
                {"component": "driver", "version": "550.54.15"}, "collect_env"),
        Example("torch.cuda.nccl.version() = (2, 18, 5)", "version_info",
                {"component": "nccl", "version": "2.18.5"}, "user prints, torch 1.10-2.9"),
        Example("NCCL version: (2, 21, 5)", "version_info", {"component": "nccl", "version": "2.21.5"},
                "user prints"),
        Example("Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)",
                "version_info", {"component": "python", "version": "3.10.12"}, "collect_env"),
        Example("RANK=3 LOCAL_RANK=3 WORLD_SIZE=8 MASTER_ADDR=node-01", "world_info",
                {"global_rank": 3, "local_rank": 3, "world_size": 8, "master_addr": "node-01"}, "env echoes"),
        Example("NODE_RANK: 1", "world_info", {"node_rank": 1}, "env echoes"),
        Example("epoch 0 starting, world_size=4, batch_size=32", "world_info",
                {"world_size": 4, "stated_by": "user"}, "user prints"),
        Example("All distributed processes registered. Starting with 8 processes", "world_info",
                {"world_size": 8, "stated_by": "user"}, "Lightning 2.x"),
        Example("Num processes: 2", "world_info", {"world_size": 2, "stated_by": "user"}, "accelerate"),
        Example("INFO:asr.trainer:process rank 1 of 4, pid 16293, device cpu", "world_info",
                {"world_size": 4, "stated_by": "user"}, "user prints"),
        Example("Setting up process group for: env:// [rank=3, world_size=8]", "world_info",
                {"global_rank": 3, "world_size": 8, "stated_rank": 3}, "Ray Train worker"),
        Example("- (node_id=5f0c2e, ip=10.1.0.7, pid=7731) world_rank=5, local_rank=1, node_rank=2",
                "world_info", {"worker_pid": 7731, "worker_rank": 5}, "Ray Train worker list"),
        Example("[rank0]:[I1017 08:00:12.004512877 ProcessGroupNCCL.cpp:905] [PG 0 (default_pg) Rank 0] "
                "ProcessGroupNCCL initialization options: size: 8, global rank: 0, TIMEOUT(ms): 600000, "
                "USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 0", "world_info",
                {"world_size": 8}, "torch 2.4 INFO, the default group"),
        Example("[I ProcessGroupNCCL.cpp:688] [Rank 5] ProcessGroupNCCL initialization options: size: 12, "
                "global rank: 5, TIMEOUT(ms): 1800000, USE_HIGH_PRIORITY_STREAM: 0, PG Name: 0", "world_info",
                {"world_size": 12}, "torch 2.2 INFO, the default group by its name"),
        Example("hostname: gpu-node-17", "world_info", {"hostname": "gpu-node-17"}, "job scripts"),
        Example("[rank 4] pid=29118 device=cuda:4", "world_info", {"worker_pid": 29118},
                "user prints: a rank's own pid (the `[rank 4]` tag gives the line's rank)"),
        Example("Running on host gpu-node-03.cluster", "world_info", {"hostname": "gpu-node-03.cluster"},
                "job scripts"),
    )
    near_misses = (
        "  File \"/venv/lib/python3.9/site-packages/torch/optim/adamw.py\", line 180, in "
        "_call_impl",
        "[E ProcessGroupNCCL.cpp:828] [Rank 2] Watchdog caught collective operation timeout",
        "RANK=$RANK python train.py",
        "Unable to resolve hostname to a (local) address. Using the loopback address as fallback.",
        "hostname = socket.gethostname()",
        "OMPI_COMM_WORLD_RANK=3",
        "Running on 8 GPUs",
        "group_world_size=2",
        "local_world_size=8",
        "worker pool started with 4 worker processes",
        "rank 0 in world size 4 is assigned as DP rank 0",
        "[rank1]:RuntimeError: DataLoader worker (pid 28871) is killed by signal: Killed. ",
        "[default0]:failed (exitcode: 1) local_rank: 0 (pid: 30142) of binary: /opt/conda/bin/python",
        "[rank6]:[I1017 08:00:13.118044520 ProcessGroupNCCL.cpp:905] [PG 2 (tp) Rank 2] ProcessGroupNCCL "
        "initialization options: size: 4, global rank: 6, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, "
        "SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: 2",
    )

    def __init__(self) -> None:
        self.pg_sizes: set[tuple[int | None, int]] = set()   # (rank, size) given from PG init options

    history = ("pg_sizes",)

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        """A later part's first sighting of a (rank, size) `earlier` gave already would not have been given:
        its world size is dropped (the event too when that was all it said)."""
        if not isinstance(earlier, EnvironmentParser) or not self.same_as_fresh(earlier):
            return None
        subs: dict[int, list[Event]] = {}
        for e in events:
            n = e.get("world_size")
            if e.kind != "world_info" or (e.rank, n) not in earlier.pg_sizes or not _pg_init_size(e.text):
                continue
            rest = {k: v for k, v in e.fields.items() if k != "world_size"}
            subs[id(e)] = [replace(e, fields=rest)] if rest else []
        self.pg_sizes |= earlier.pg_sizes
        return subs

    def feed(self, line: LogLine) -> Iterable[Event]:
        if not _ENTRY.may_match(line.text):
            return ()
        return _QUIET.read(line, self._read)   # (no state: the text decides, but for `line_dependent` texts)

    def _read(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        seen: set[str] = set()
        for component, source, rx in VERSION_RES:
            if component in seen:
                continue
            m = rx.search(text)
            if not m:
                continue
            version = m["v"] if "v" in rx.groupindex else f"{m['a']}.{m['b']}.{m['c']}"
            seen.add(component)
            out.append(self.event("version_info", line, component=component, version=version, source=source))
        fields: dict[str, int | str] = {}
        if "world_rank=" in text:
            m4 = RAY_WORKER_LIST_RE.search(text)
            if m4:
                out.append(self.event("world_info", line, worker_pid=int(m4["pid"]),
                                      worker_rank=int(m4["r"])))
                return out
        if "Setting up process group for: " in text:
            m5 = RAY_SETUP_RE.search(text)
            if m5:
                r = int(m5["r"])
                out.append(self.event("world_info", line, global_rank=r, world_size=int(m5["n"]),
                                      stated_rank=r))
                return out
        m6 = SELF_PID_RE.search(text) if line.rank is not None and _may_state_pid(text) else None
        if m6 and not (line.writer or "").startswith(("ray ", "vllm ")):
            fields["worker_pid"] = int(m6["pid"])
        for m in ENV_RE.finditer(text):
            name = ENV_FIELD[m["key"]]
            if name == "master_addr":
                if not m["val"].startswith("$"):
                    fields.setdefault(name, m["val"])
                continue
            n = to_count(m["val"])
            if n is not None:
                fields.setdefault(name, n)
        if "world_size" not in fields:
            n7 = _pg_init_size(text)
            # Once per rank and size in a file: the default group is created once per process, but a console
            # repeats its init lines for every communicator and restart (a fact, not one event per line).
            if n7 and (line.rank, n7) not in self.pg_sizes:
                self.pg_sizes.add((line.rank, n7))
                fields["world_size"] = n7
        if "world_size" not in fields:
            for rx in USER_WORLD_RES:
                m3 = rx.search(text)
                n = to_count(m3["n"]) if m3 else None
                if n:
                    fields["world_size"] = n
                    fields["stated_by"] = "user"
                    break
        m2 = HOST_RE.search(text)
        if m2:
            fields["hostname"] = m2["host"]
        if fields:
            if isinstance(fields.get("global_rank"), int):
                fields["stated_rank"] = fields["global_rank"]
            out.append(self.event("world_info", line, **fields))
        return out
