"""Read who wrote a log from where it sits: torchrun `--log_dir` trees, rank/host hints, error.json files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, Origin, SourceRef

ATTEMPT_RE = re.compile(r"^attempt_(?P<n>\d{1,6})$")
LOCAL_DIR_RE = re.compile(r"^\d{1,4}$")
TORCHRUN_FILE_RE = re.compile(r"^(?:stdout|stderr)\.log$|^error\.json$")
# `rank3`, `rank_3`, `rank-3`, `worker-3`, `x-rank3.log`, `node0_rank3`; not `rank3x` or `ranking`.
RANK_HINT_RE = re.compile(
    r"(?:^|[^A-Za-z0-9])(?P<local>local[-_]?)?(?:rank|worker)[-_]?(?P<n>\d{1,6})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
NODE_HINT_RE = re.compile(r"(?:^|[^A-Za-z0-9])(?P<node>node[-_]?\d{1,5})(?![0-9A-Za-z])", re.IGNORECASE)
# NCCL_DEBUG_FILE=<dir>/<prefix>.%h.%p: host then pid as the last two dotted fields of the name.
NCCL_FILE_RE = re.compile(r"(?:^|[._-])(?P<host>[A-Za-z][\w-]*)\.(?P<pid>\d{2,8})(?:\.(?:log|txt|out))?$")
# Slurm per-task output files (`--output=%j.%t.out`, `slurm-%j_%t.out`, `<name>-%j-%t.log`; log-formats.md
# section 9.3): a job id, then the task id (SLURM_PROCID) as the name's last number.
SLURM_TASK_FILE_RE = re.compile(
    r"^(?P<pre>[A-Za-z][\w.-]{0,64}?[._-])?(?P<job>\d{2,12})[._-](?P<task>\d{1,5})"
    r"\.(?P<ext>out|err|log|txt|stdout|stderr)$"
)
# Open MPI's `mpirun --output-filename <dir>` (4.x, orte/mca/iof/base/iof_base_setup.c
# `orte_iof_base_setup_output_files`): each process writes `<dir>/<local jobid>/rank.<vpid>/stdout` and
# `stderr` (`<dir>/rank.<vpid>/...` with the `:nojobid` directive), the vpid (MPI_COMM_WORLD rank) left-filled
# with zeros to the width of the job's largest rank.
OMPI_RANK_DIR_RE = re.compile(r"^rank\.(?P<n>\d{1,7})$")
OMPI_FILE_RE = re.compile(r"^std(?:out|err)$")
IPV4_RE = re.compile(r"^(?:\d{1,3}\.){3}\d{1,3}$")
HOSTLIKE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*\d[A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*$")
STREAM_RE = re.compile(r"(?:^|[._-])(?P<s>stdout|stderr|out|err)(?:\.log|\.txt)?$", re.IGNORECASE)
# Folder names that carry digits but name runs or outputs, not machines.
GENERIC_DIRS = frozenset({
    "log", "logs", "out", "output", "outputs", "tmp", "run", "runs", "job", "jobs", "data", "result",
    "results", "torchelastic", "attempt", "exp", "experiment", "experiments", "ckpt", "checkpoint", "v",
    "version",
    "rank", "worker", "step", "epoch", "test", "tests", "case", "trial",
})


def hostlike(name: str) -> bool:
    """Whether a folder name looks like a machine (`node07`, `gpu-a100-3`, `10.0.0.7`), not like `logs2`."""
    if IPV4_RE.match(name):
        return True
    if not HOSTLIKE_RE.match(name) or ATTEMPT_RE.match(name):
        return False
    alpha = re.sub(r"[\d_.-]+", " ", name.split(".")[0]).split()
    return not (len(alpha) == 1 and alpha[0].lower() in GENERIC_DIRS)


def slurm_task(rel: str) -> tuple[tuple[str, str, str], int] | None:
    """((folder, name prefix, job id), task id) of a Slurm per-task output file's name, else None."""
    head, _, name = rel.replace("!", "/").rpartition("/")
    m = SLURM_TASK_FILE_RE.match(name)
    if m is None:
        return None
    return (head, m["pre"] or "", m["job"]), int(m["task"])


@dataclass(frozen=True, slots=True)
class PathHints:
    """What a path says beyond `Origin`: a process id from an NCCL_DEBUG_FILE name."""

    origin: Origin
    pid: int | None = None


def _mpirun_rank_dir(dirs: list[str], name: str) -> re.Match[str] | None:
    """The `rank.<N>` folder match when `dirs`/`name` is a file `mpirun --output-filename` wrote."""
    return OMPI_RANK_DIR_RE.match(dirs[-1]) if dirs and OMPI_FILE_RE.match(name) else None


def is_mpirun_output(rel: str) -> bool:
    """Whether a display-relative path is one of `mpirun --output-filename`'s per-rank files."""
    parts = [p for p in PurePosixPath(rel.replace("!", "/")).parts if p not in ("", ".", "/")]
    return bool(parts) and _mpirun_rank_dir(parts[:-1], parts[-1]) is not None


def origin_of(rel: str) -> PathHints:
    """Origin hints from a display-relative path (archive members included, `!` treated as a folder)."""
    parts = [p for p in PurePosixPath(rel.replace("!", "/")).parts if p not in ("", ".", "/")]
    if not parts:
        return PathHints(Origin())
    name = parts[-1]
    dirs = parts[:-1]
    # torchrun tree: <host?>/[logs/]<run_id>_<suffix>/attempt_<N>/<local_rank>/<file>
    if len(dirs) >= 3 and TORCHRUN_FILE_RE.match(name) and LOCAL_DIR_RE.match(dirs[-1]):
        m = ATTEMPT_RE.match(dirs[-2])
        if m:
            run_dir = dirs[-3]
            host = dirs[-4] if len(dirs) >= 4 and hostlike(dirs[-4]) else None
            # `<host>/logs/<run_id>_<suffix>/...`: a node's `--log-dir logs` collected under the node's name
            if (host is None and len(dirs) >= 5 and dirs[-4].lower() in GENERIC_DIRS
                    and hostlike(dirs[-5])):
                host = dirs[-5]
            stream = name[:-4] if name.endswith(".log") else None
            return PathHints(Origin(local_rank=int(dirs[-1]), attempt=int(m["n"]), stream=stream, host=host,
                                   node_dir=run_dir))
    if (mo := _mpirun_rank_dir(dirs, name)) is not None:
        return PathHints(Origin(rank=int(mo["n"]), stream=name))
    rank: int | None = None
    local_rank: int | None = None
    pid: int | None = None
    host = None
    stem = name
    m = RANK_HINT_RE.search(stem)
    # `rank0_rank14.txt`, `rank3-rank7.log`: a file a user merged from several processes' output names each
    # of them; it is no one rank's file, so its lines keep the ranks their own prefixes give.
    several = m is not None and len({h["n"].lstrip("0") for h in RANK_HINT_RE.finditer(stem)}) > 1
    if m is not None and not several:
        if m["local"]:
            local_rank = int(m["n"])
        else:
            rank = int(m["n"])
    elif m is None:
        for d in reversed(dirs):
            md = RANK_HINT_RE.search(d)
            if md and LOCAL_DIR_RE.match(md["n"]) and RANK_HINT_RE.fullmatch(d) is not None:
                rank = int(md["n"]) if not md["local"] else None
                local_rank = int(md["n"]) if md["local"] else None
                break
    mn = NODE_HINT_RE.search(stem)
    if mn and len({h["node"].lower() for h in NODE_HINT_RE.finditer(stem)}) == 1:
        host = mn["node"]
    if rank is None and local_rank is None:
        mp = NCCL_FILE_RE.search(stem)
        if mp and hostlike(mp["host"]):
            host, pid = mp["host"], int(mp["pid"])
    if host is None:
        for d in reversed(dirs):
            if hostlike(d) and not RANK_HINT_RE.fullmatch(d):
                host = d
                break
    ms = STREAM_RE.search(stem)
    stream = None
    if ms:
        stream = "stderr" if ms["s"].lower() in ("stderr", "err") else "stdout"
    return PathHints(Origin(rank=rank, local_rank=local_rank, host=host, stream=stream), pid)


# -- error.json ------------------------------------------------------------------------------------
EXC_TYPE_RE = re.compile(r"^(?P<t>(?:[A-Za-z_]\w*\.)*[A-Z]\w*):(?:\s|$)")
MAX_ERROR_JSON = 16 << 20


def _as_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return None


def error_file_event(data: bytes, display: str, origin: Origin) -> Event | None:
    """The `error_file` event of a torchrun error.json (old nested and new flat formats), or None.

    Old: `{"message": {"message": "T: m", "extraInfo": {"py_callstack", "timestamp": "s"}, "errorCode": n}}`;
    new: `{"message": "T: m", "timestamp": s, "errorCode": n}` (torch 1.10-2.9, reference §3.2).
    """
    try:
        doc = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or "message" not in doc:
        return None
    msg = doc["message"]
    if isinstance(msg, dict):
        text = msg.get("message")
        extra = msg.get("extraInfo") if isinstance(msg.get("extraInfo"), dict) else {}
        ts = extra.get("timestamp") if extra else None
        code = msg.get("errorCode", doc.get("errorCode"))
    else:
        text, ts, code = msg, doc.get("timestamp"), doc.get("errorCode")
    text = "" if text is None else str(text)
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = EXC_TYPE_RE.match(first)
    exc_type = m["t"] if m else None
    message = first[m.end():].strip() if m else first
    return Event(
        kind="error_file", ref=SourceRef(display, 1), text=first[:2000], parser="ingest",
        rank=origin.rank, host=origin.host, time=_as_float(ts), local_rank=origin.local_rank,
        attempt=origin.attempt, level="E",
        fields={"exc_type": exc_type, "message": message[:2000], "timestamp": _as_float(ts),
                "error_code": _as_int(code)},
    )
