"""Assemble the analysis document (docs/analysis-json.md) from tables, the engine's result and inputs."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from hanglens import __version__
from hanglens import lazyre as re
from hanglens.analysis import Tables
from hanglens.ingest.origin import is_mpirun_output
from hanglens.ingest.runs import RunInfo
from hanglens.ingest.streams import file_owners
from hanglens.model import (
    YEARLESS_YEAR,
    Category,
    Event,
    InputFile,
    Skipped,
    SourceRef,
    events_in_order,
    utf8_text,
)

SCHEMA_VERSION = 2
CATEGORY_TITLES = {
    Category.CONTROL_FLOW_DIVERGENCE: "Control-flow divergence",
    Category.COLLECTIVE_MISMATCH: "Collective mismatch",
    Category.ILLEGAL_MEMORY_ACCESS: "Illegal memory access",
    Category.CUDA_ERROR: "CUDA error",
    Category.OOM: "Out of memory",
    Category.RANK_CRASH: "Rank crashed",
    Category.DATALOADER_STALL: "DataLoader stall",
    Category.DATALOADER_CRASH: "DataLoader worker crash",
    Category.NETWORK_TRANSPORT: "Network / transport failure",
    Category.NCCL_INIT_FAILURE: "NCCL initialisation failure",
    Category.VERSION_MISMATCH: "Version mismatch",
    Category.RENDEZVOUS_FAILURE: "Rendezvous / store failure",
    Category.DDP_UNUSED_PARAMETERS: "DDP unused parameters",
    Category.WATCHDOG_STUCK: "Watchdog stuck",
    Category.STRAGGLER: "Straggler",
    Category.NONE: "No failure found",
    Category.UNKNOWN: "Failure not explained",
}
TIMELINE_LIMIT = 60
UNEXPLAINED_LIMIT = 40
Context = Callable[[Sequence[SourceRef]], dict[SourceRef, list[tuple[int, str]]]]


def clean(value: Any) -> Any:
    """JSON-safe, deterministic values: numpy scalars → Python, NaN → None, floats rounded.

    A plain dict or list that needs no change is returned as it is, not copied (a big job's document
    would otherwise be held twice while it is cleaned).
    """
    t = type(value)
    if value is None or t is int or t is bool:
        return value
    if t is str:
        return utf8_text(value)  # (ASCII as it is)
    if t is dict:
        # (values that are clean as they are, most of them, are not passed to clean() one by one)
        vals = [v if v is None or (tv := type(v)) is int or tv is bool or (tv is str and v.isascii())
                else clean(v) for v in value.values()]
        same = all(c is v for c, v in zip(vals, value.values(), strict=True))
        if same and all(type(k) is str for k in value):
            return value
        return {str(k): c for k, c in zip(value, vals, strict=True)}
    if t is list:
        items = [v if v is None or (tv := type(v)) is int or tv is bool or (tv is str and v.isascii())
                 else clean(v) for v in value]
        return value if all(c is v for c, v in zip(items, value, strict=True)) else items
    if t is float:
        return None if math.isnan(value) or math.isinf(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [clean(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, Mapping):  # (an event's `Fields`)
        return {str(k): clean(v) for k, v in value.items()}
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return round(value, 6)
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, (bool, int)):
        return value
    return utf8_text(str(value))


def time_text(t: float | None) -> str | None:
    """Human form of a timeline time. Year-less log clocks (placeholder year 2000) print without a year."""
    if t is None:
        return None
    try:
        d = dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    fmt = "%m-%d %H:%M:%S.%f" if d.year == YEARLESS_YEAR else "%Y-%m-%d %H:%M:%S.%f"
    return d.strftime(fmt)[:-3]


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [clean(r) for r in df.to_dict(orient="records")] if len(df) else []


_ROWS_AT_ONCE = 2048


def each_record(df: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """`records(df)` one by one, converted a slice at a time (a table with a row per rank of a big job is
    not held a second time as a list of dicts)."""
    for start in range(0, len(df), _ROWS_AT_ONCE):
        yield from records(df.iloc[start:start + _ROWS_AT_ONCE])


def _ranks_section(tables: Tables, culprits: set[int], victims: set[int]) -> list[dict[str, Any]]:
    status = tables.fact("rank_status")
    last_step = {r["rank"]: r.get("last_step") for r in each_record(tables.fact("progress"))}
    last_seq: dict[int, dict[str, int]] = defaultdict(dict)
    for r in each_record(tables.fact("collective_state")):
        pos = r.get("last_enqueued") if r.get("last_enqueued") is not None else r.get("timed_out_seq")
        if pos is not None:
            last_seq[r["rank"]][str(r["pg"])] = pos
    first_err: dict[int, str] = {}
    for r in each_record(tables.fact("first_failure")):
        if r["rank"] is not None and r["rank"] not in first_err:
            first_err[r["rank"]] = f"{r['kind']}: {r['text']}"[:200]
    out = []
    for r in each_record(status):
        rank = r["rank"]
        st = r["status"]
        if rank in culprits:
            st = "culprit"
        elif rank in victims:
            st = "victim"
        elif st in ("crashed", "hung"):
            st = "failed"
        elif st == "ok" and r.get("exitcode") not in (None, 0):
            st = "failed"  # the launcher saw it die (exit code or signal), whatever its own log says
        out.append(
            {
                "rank": rank,
                "host": r["host"],
                "last_step": last_step.get(rank),
                "status": st,
                "last_seq": dict(sorted(last_seq.get(rank, {}).items())),
                "first_error_time": r["first_error_time"],
                "first_error": first_err.get(rank),
                "exitcode": r.get("exitcode"),
                "signal": r.get("signal"),
            }
        )
    return out


def _disagreement(tables: Tables) -> dict[str, Any] | None:
    dis = records(tables.fact("collective_disagreement"))
    if dis:
        pg, seq = dis[0]["pg"], dis[0]["seq"]
        rows = [r for r in dis if r["pg"] == pg and r["seq"] == seq]
        return {
            "pg": pg,
            "seq": seq,
            "differs": [d for d in (rows[0]["differs"] or "").split(",") if d],
            "rows": [
                {
                    "rank": r["rank"],
                    "op": r["op"],
                    "numel_in": r["numel_in"],
                    "numel_out": r["numel_out"],
                    "shape": r["shape"],
                    "dtype": r["dtype"],
                    "state": "minority" if r["minority"] else "majority",
                }
                for r in rows
            ],
        }
    coll = tables.collectives
    timed = coll[coll["state"] == "timed_out"] if len(coll) else coll
    if not len(timed):
        return None
    key = Counter(zip(timed["pg"], timed["seq"], strict=True)).most_common(1)[0][0]
    pg, seq = key
    rows = []
    # each rank's first collective at (pg, seq), in the table's order (one pass, not a filter per rank)
    at_seq: dict[Any, dict[str, Any]] = {}
    for c in each_record(coll[(coll["pg"] == pg) & (coll["seq"] == seq)]):
        at_seq.setdefault(c["rank"], c)
    for s in each_record(tables.fact("collective_state")):
        if s["pg"] != pg:
            continue
        c = at_seq.get(s["rank"], {})
        pos = s.get("last_enqueued")
        state = c.get("state") or ("not_reached" if pos is not None and pos < seq else "unknown")
        rows.append(
            {
                "rank": s["rank"],
                "op": c.get("op"),
                "numel_in": c.get("numel_in"),
                "numel_out": c.get("numel_out"),
                "shape": None,
                "dtype": None,
                "state": state,
            }
        )
    return {"pg": pg, "seq": clean(seq), "differs": [], "rows": rows}


def _versions(tables: Tables) -> dict[str, Any]:
    by_host: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    distinct: dict[str, set[str]] = defaultdict(set)
    for r in each_record(tables.fact("versions")):
        host = r["host"] or "(unknown host)"
        by_host[host][r["component"]].add(r["version"])
        distinct[r["component"]].add(r["version"])
    return {
        "by_host": {
            h: {c: sorted(v) for c, v in sorted(comps.items())} for h, comps in sorted(by_host.items())
        },
        "distinct": {c: sorted(v) for c, v in sorted(distinct.items())},
    }


# torchrun's own summary of a failure (the ChildFailedError traceback and its "FAILED" banner) repeats
# what the workers' events already say; it is not an error line that no rule explained.
_LAUNCHER_LINE = re.compile(
    r"ChildFailedError|elastic\.multiprocessing\.errors|^\s*\S+ FAILED\s*$|^\s*(?:Root Cause|Failures):"
)


def _unexplained_errors(events: Sequence[Event], cited: set[SourceRef]) -> Iterator[Event]:
    """The `error_line` events of lines that gave no other event and that no finding cites.

    Events in the reader's order (`events_in_order`), as the analysis gives them, are read line by line, with
    no set of the error lines' refs beside them (a big job has one or two per rank); others through sets."""
    if events_in_order(events):
        for _, same_line in itertools.groupby(events, key=lambda e: (e.path, e.line)):
            line = list(same_line)
            if all(e.kind == "error_line" for e in line) and line[0].ref not in cited:
                yield from line
        return
    errors = {(e.path, e.line) for e in events if e.kind == "error_line"}
    explained = {(e.path, e.line) for e in events if e.kind != "error_line" and (e.path, e.line) in errors}
    explained.update((r.path, r.line) for r in cited)   # (in place: no third set)
    for e in events:
        if e.kind == "error_line" and (e.path, e.line) not in explained:
            yield e


def _unexplained(events: Sequence[Event], cited: set[SourceRef]) -> list[dict[str, Any]]:
    groups: dict[str, list[Event]] = defaultdict(list)
    for e in _unexplained_errors(events, cited):
        if not _LAUNCHER_LINE.search(e.text):
            groups[str(e.get("template") or e.text[:120])].append(e)
    out: list[dict[str, Any]] = []
    for template, evs in groups.items():
        first = min(evs, key=lambda e: (e.path, e.line))
        out.append(
            {
                "template": template,
                "count": len(evs),
                "example": first.text[:300],
                "path": first.path,
                "line": first.line,
                "ranks": sorted({e.rank for e in evs if e.rank is not None}),
            }
        )
    out.sort(key=lambda r: (-int(r["count"]), str(r["template"])))
    return out[:UNEXPLAINED_LIMIT]


# Verdicts that name a cause which is not a hang: after them, advice about catching a hang (stacks while
# it hangs, the flight recorder, collective fingerprints) would send the user after the wrong problem.
_NOT_A_HANG = frozenset(
    {
        Category.OOM,
        Category.CUDA_ERROR,
        Category.ILLEGAL_MEMORY_ACCESS,
        Category.RANK_CRASH,
        Category.DATALOADER_CRASH,
        Category.NCCL_INIT_FAILURE,
        Category.VERSION_MISMATCH,
        Category.RENDEZVOUS_FAILURE,
        Category.NETWORK_TRANSPORT,
        Category.DDP_UNUSED_PARAMETERS,
    }
)


# A debugging knob named in a rule's `collect` advice, and the event kinds that only appear when it is on.
_ALREADY_ON: tuple[tuple[str, frozenset[str]], ...] = (
    ("TORCH_DISTRIBUTED_DEBUG=DETAIL", frozenset({"collective_fingerprint", "collective_mismatch"})),
    ("NCCL_DEBUG=INFO", frozenset({"nccl_comm_init"})),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", frozenset({"flight_recorder", "fr_dump"})),
    ("TORCH_FR_BUFFER_SIZE", frozenset({"flight_recorder", "fr_dump"})),
    # `@record` is on when a worker's error.json was read or the agent's failure table printed its traceback
    ("errors.record", frozenset({"error_file"})),
)

_SPAWN_ADVICE = (
    "This job was started with `torch.multiprocessing.spawn`, whose console names a failed process only by "
    "its index and prints nothing when the parent is stopped: launch it with torchrun instead (`torchrun "
    "--nproc-per-node N --log-dir DIR --redirects 3 --tee 3 train.py`) so every line carries its rank, each "
    "rank keeps its own log, and the launcher's failure table names the first failure."
)


_MPIRUN_ADVICE = (
    "This job was started with Open MPI's `mpirun`, which names only the first process that failed and keeps "
    "no file per rank by default: rerun with `mpirun --tag-output --timestamp-output --output-filename DIR` "
    "so every line carries its rank and time and each rank's stdout/stderr is kept under `DIR/1/rank.<N>/`."
)


def _launched_without_torchrun(events: Sequence[Any]) -> str | None:
    """The launcher that started the job's processes, `mp.spawn` (torch.multiprocessing.spawn's parent,
    parsers/spawn.py) or `mpirun` (Open MPI, parsers/mpirun.py), when no line of torchrun's agent
    (parsers/elastic.py) is in the logs; else None."""
    launchers = {e.get("launcher") for e in events if e.kind == "launcher_exit"} & {"mp.spawn", "mpirun"}
    if not launchers or any(e.parser == "elastic" for e in events):
        return None
    return "mp.spawn" if "mp.spawn" in launchers else "mpirun"


# What a piece of rerun advice is about (a knob to turn on, a tool to run): one piece of advice per key.
_ADVICE_KEYS = (*(knob for knob, _ in _ALREADY_ON), "py-spy dump")

# The flight recorder on gloo (torch 2.13): ProcessGroupGloo records every collective into the same
# FlightRecorder (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp, FlightRecorder<c10::Event>) when
# `TORCH_FR_BUFFER_SIZE` is set, but nothing dumps it on a timeout: `TORCH_NCCL_DUMP_ON_TIMEOUT` and the
# dump-on-timeout writer are ProcessGroupNCCL's (the CPU build of torch does not even hold the variable's
# name), and gloo's dumps name no group ranks (`pg_config` ranks `[]`), so `torchfrtrace` reports their
# groups with world size 0. The dump has to be asked for: `torch._C._distributed_c10d._dump_fr_trace()`
# (FlightRecorder.cpp `dump_fr_trace`) returns the pickle.
_GLOO_FR_ADVICE = (
    "On gloo the flight recorder records but dumps nothing on a timeout (`TORCH_NCCL_DUMP_ON_TIMEOUT` is "
    "NCCL's only): set `TORCH_FR_BUFFER_SIZE=2000` and, in the script's exception handler, write "
    "`torch._C._distributed_c10d._dump_fr_trace()` (bytes) to `fr_trace_rank_<RANK>` on every rank; give "
    "those files to hanglens with the logs (`torchfrtrace` cannot read gloo dumps' group ranks)."
)
# torch 2.13: DistributedDataParallel on gloo under `TORCH_DISTRIBUTED_DEBUG=DETAIL` (every collective
# wrapped in ProcessGroupWrapper) died of SIGSEGV on every rank of a healthy 2-rank run (probe44); plain
# collectives and FSDP2 ran under DETAIL, and `monitored_barrier` names missing ranks without it.
_GLOO_DETAIL_ADVICE = (
    "On gloo, `TORCH_DISTRIBUTED_DEBUG=DETAIL` crashed DistributedDataParallel with SIGSEGV on torch "
    "2.13: for a DDP job use `TORCH_DISTRIBUTED_DEBUG=INFO` and a "
    "`dist.monitored_barrier(wait_all_ranks=True)` after the suspect section (it names every rank that "
    "did not arrive) instead."
)


def _on_gloo(evs: Sequence[Any]) -> bool:
    """Whether the job's collectives ran on gloo: a line of gloo's own (parsers/gloo.py: its transport
    errors, timeouts and mesh lines; a ProcessGroupGloo line) and no line of NCCL's or ProcessGroupNCCL's."""
    gloo = False
    for e in evs:
        if e.parser in ("nccl", "ncclras") or e.kind.startswith("nccl_") or "NCCL work" in e.text:
            return False
        gloo = gloo or e.parser == "gloo" or "ProcessGroupGloo" in e.text or "gloo:" in str(
            e.get("profiling_name") or "")
    return gloo


def _filtered_tee(events: Sequence[Any]) -> bool:
    """The console carries torchrun's tee prefix (`[default0]:`) of some local ranks while the agent's own
    lines (`failed (exitcode: ...) local_rank: <l>`, its failure report) name a local rank that has none: the
    console was filtered with `--local-ranks-filter` (torch 2.3+, torch/distributed/run.py; the tee of
    elastic/multiprocessing/api.py skips the other local ranks, their files under `--log-dir` keep them)."""
    teed = {int(m[1]) for e in events if e.writer and (m := TEE_WRITER_RE.match(e.writer))}
    named = {int(lr) for e in events if e.kind in ("worker_failed", "child_failed")
             and isinstance(lr := e.fields.get("local_rank"), int) and lr >= 0}
    return bool(teed) and bool(named - teed)


def _per_worker_files(files: Sequence[InputFile]) -> bool:
    """Whether the inputs are already one file per worker: a path that names a rank or a torchrun
    `--log-dir` tree's local-rank folder (ingest/origin.py)."""
    return sum(1 for f in files if f.origin.rank is not None or f.origin.local_rank is not None) >= 2


def _collect_next(
    tables: Tables,
    files: Sequence[InputFile],
    verdict_conf: str,
    engine_collect: Sequence[str],
    category: str = "unknown",
    fix: Sequence[str] = (),
) -> list[str]:
    """What to turn on for the rerun, tailored to what this job's logs lacked. `fix` is the primary finding's
    remediation, shown above this list: a knob or tool it already tells the user to use is not repeated."""
    evs = tables.events
    kinds = {e.kind for e in evs}
    # A rule's advice to turn on what this job's logs show was on already is dropped.
    out: list[str] = [s for s in engine_collect
                      if not any(knob in s and kinds & on for knob, on in _ALREADY_ON)]
    launcher = _launched_without_torchrun(evs)
    if launcher is not None:
        # `@record` writes the error file torchrun's agent names (TORCHELASTIC_ERROR_FILE): under
        # torch.multiprocessing.spawn or mpirun nobody reads it. What the launcher can keep is the advice
        # instead (for mpirun, unless its per-rank output files are what was read).
        out = [s for s in out if "errors.record" not in s]
        if launcher == "mp.spawn":
            out.insert(0, _SPAWN_ADVICE)
        elif not any(is_mpirun_output(f.path) for f in files):
            out.insert(0, _MPIRUN_ADVICE)
    explained = verdict_conf == "high" and category in {c.value for c in _NOT_A_HANG}
    if explained:
        kinds = kinds - {"hang_detected"}
    ranks_with_logs = {e.rank for e in evs if e.rank is not None}
    if tables.world_size and len(ranks_with_logs) < tables.world_size:
        out.append(
            f"Logs of only {len(ranks_with_logs)} of {tables.world_size} ranks were found: run torchrun with "
            "`--log-dir DIR --redirects 3 --tee 3` so every rank writes its own stdout/stderr files."
        )
    elif (len(ranks_with_logs) <= 1 and kinds & {"hang_detected", "exception"}
          and not _per_worker_files(files)):
        # (not when the inputs are already one file per worker, a torchrun `--log-dir` tree or files named
        # by rank: their lines that no parser read are the script's own, and no launcher flag adds a rank)
        whose = "Only one rank's output" if ranks_with_logs else "No line"
        if _filtered_tee(evs):
            out.append(
                f"{whose} could be attributed to a rank although the console is teed: torchrun's "
                "agent names local ranks whose `[<role><local rank>]:` lines are missing, as "
                "`--local-ranks-filter` (torch 2.3+) leaves them out of the console; drop it, or add "
                "`--log-dir DIR --redirects 3` so every rank keeps its own files."
            )
        else:
            out.append(
                f"{whose} could be attributed to a rank: collect every rank's log "
                "(`torchrun --log-dir DIR --redirects 3`) or prefix lines with the rank (`--tee 3`)."
            )
    if evs and all(e.time is None for e in evs):
        out.append(
            "No line had a timestamp: set `TORCH_CPP_LOG_LEVEL=INFO` (c10 lines carry times since 2.4) "
            "and log with a time format so the first failure can be ordered across ranks."
        )
    gloo = _on_gloo(evs)
    if "hang_detected" in kinds and not (
        kinds & {"pg_status", "desync_report", "collective_fingerprint", "flight_recorder", "fr_dump"}
    ):
        out.append(
            _GLOO_FR_ADVICE if gloo else
            "Turn on the flight recorder for the rerun: `TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
            "TORCH_NCCL_DUMP_ON_TIMEOUT=1` (dumps every rank's last collectives on a timeout; analyse with "
            "`torchfrtrace`)."
        )
    crashed = bool(kinds & {"exception", "cuda_error", "oom", "worker_failed", "child_failed"})
    if "hang_detected" in kinds or (verdict_conf == "low" and not explained and not crashed):
        out.append(
            "While it hangs, take stacks of every rank: `py-spy dump --pid <PID> > pyspy-rank<N>.txt` (add "
            "`--native` for C++ frames) and give the files to hanglens with the logs: a rank stuck in a "
            "different collective than its peers is then named."
        )
    # (not on gloo: NCCL_DEBUG changes nothing there, even when the job's environment echo names it)
    if not gloo and not (kinds & {"nccl_comm_init", "nccl_version", "nccl_warn"}) and any(
        "NCCL" in e.text for e in evs[:2000]
    ):
        out.append(
            "Set `NCCL_DEBUG=INFO` (and `NCCL_DEBUG_SUBSYS=INIT,NET`) to see communicator setup and "
            "transport errors per rank."
        )
    if (
        "collective_fingerprint" not in kinds
        and "collective_mismatch" not in kinds
        and "hang_detected" in kinds
    ):
        out.append(
            "Rerun with `TORCH_DISTRIBUTED_DEBUG=DETAIL` to check that every rank calls the same "
            "collective with the same shapes (it names the mismatching rank)."
        )
    notes: list[str] = []
    if gloo:
        # What a rule or the lines above advise for NCCL, said for the backend this job ran on (after the
        # one-piece-per-knob pass below: these correct advice given, they do not repeat it).
        said = [*fix, *out]
        if _GLOO_FR_ADVICE not in out and not kinds & {"fr_dump", "flight_recorder"} and any(
            "TORCH_NCCL_DUMP_ON_TIMEOUT" in s for s in said
        ):
            notes.append(_GLOO_FR_ADVICE)
        if not kinds & {"collective_fingerprint", "collective_mismatch"}:
            # said where DETAIL is advised: in this list's own line, else (the fix advised it) on its own
            detail = [i for i, s in enumerate(out) if "TORCH_DISTRIBUTED_DEBUG=DETAIL" in s]
            for i in detail:
                out[i] = f"{out[i]} {_GLOO_DETAIL_ADVICE}"
            if not detail and any("TORCH_DISTRIBUTED_DEBUG=DETAIL" in s for s in fix):
                notes.append(_GLOO_DETAIL_ADVICE)
    stacked = {e.rank for e in evs if e.kind == "stack_dump" and e.rank is not None}
    if len(stacked) >= 2 and ranks_with_logs <= stacked:
        # Every rank's stack is here already: asking for `py-spy dump --pid <PID>` of every rank again is
        # advice the user has followed (a worker's pid, `<worker pid>`, is another dump and stays).
        out = [s for s in out if "py-spy dump --pid <PID>" not in s]
    seen: set[str] = {knob for knob in _ADVICE_KEYS if any(knob in step for step in fix)}
    uniq = []
    for s in out:
        # One piece of advice per knob or tool: a rule's own wording first, the generic one only without it.
        knobs = {knob for knob in _ADVICE_KEYS if knob in s}
        if s not in seen and not knobs & seen:
            seen.add(s)
            seen.update(knobs)
            uniq.append(s)
    return uniq + [n for n in notes if n not in uniq]


def _duration(ms: Any) -> str:
    if not isinstance(ms, (int, float)) or ms <= 0:
        return ""
    sec = ms / 1000
    if sec >= 3600 and sec % 3600 == 0:
        return f"{sec / 3600:.0f} h"
    if sec >= 60:
        return f"{sec / 60:.0f} min" if sec % 60 == 0 else f"{sec / 60:.1f} min"
    return f"{sec:g} s"


def _ranks_text(ranks: Sequence[int]) -> str:
    from hanglens.report._common import rank_list

    return ("rank " if len(ranks) == 1 else "ranks ") + rank_list(ranks)


_STACKS = (
    "take stacks of every rank while it hangs (`py-spy dump --pid <PID> > pyspy-rank<N>.txt`) and rerun "
    "with `TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1` so each rank records its last "
    "collectives"
)


# The writer torchrun's tee prefix gives a line (hanglens/ingest/prefix.py: `tee <role><local rank>`).
TEE_WRITER_RE = re.compile(r"^tee [A-Za-z_][\w-]*?(\d+)$")
_NCCL_SAYS = re.compile(r"^.*?NCCL (?:WARN|INFO)\s*(?:NET/\w+\s*:\s*)?")


def _observed(tables: Tables, file_rank: dict[str, int]) -> dict[str, str] | None:
    """What kind of failure the facts show when no rule explains it: a headline and the advice that follows.

    Built from the events the analysis already has (timeouts with their collective, sequence number and
    timeout; the first own error; the launcher's exit codes), never from a rule.
    """
    # an event without a rank of its own belongs to its file's rank, as everywhere else in the report
    evs = [
        e if e.rank is not None or e.path not in file_rank else replace(e, rank=file_rank[e.path])
        for e in tables.events
    ]
    hangs = [e for e in evs if e.kind == "hang_detected" and e.rank is not None]
    all_ranks = sorted(tables.ranks)
    if hangs:
        coll = [e for e in hangs if e.get("op") and e.get("seq") is not None]
        if coll:
            key = Counter((str(e.get("pg") or "0"), e.get("seq"), str(e.get("op"))) for e in coll)
            (pg, seq, op), _ = key.most_common(1)[0]
            same = [
                e for e in coll if (str(e.get("pg") or "0"), e.get("seq"), str(e.get("op"))) == (pg, seq, op)
            ]
            ranks = sorted({e.rank for e in same if e.rank is not None})
            after = _duration(next((e.get("timeout_ms") for e in same if e.get("timeout_ms")), None))
            quiet = [r for r in all_ranks if r not in {e.rank for e in hangs}]
            headline = (
                f"{op} #{seq} (process group {pg}) timed out{' after ' + after if after else ''} on "
                f"{_ranks_text(ranks)}; culprit not determined"
            )
            step = f"Find the rank that never reached {op} #{seq}: " + (
                f"{_ranks_text(quiet)} reported no timeout, so read their last lines first."
                if quiet
                else f"{_STACKS}."
            )
            return {"headline": headline, "first_step": step}
        detector = Counter(str(e.get("detector") or "") for e in hangs).most_common(1)[0][0]
        ranks = sorted({e.rank for e in hangs if e.rank is not None})
        what = {
            "dataloader": "The DataLoader timed out waiting for a batch",
            "store": "A wait on the rendezvous store timed out",
            "heartbeat_monitor": "The NCCL watchdog stopped responding",
            "monitored_barrier": "A monitored barrier timed out",
        }.get(detector, "A collective timed out")
        return {
            "headline": f"{what} on {_ranks_text(ranks)}; culprit not determined",
            "first_step": f"Find what the other ranks did while {_ranks_text(ranks)} waited: {_STACKS}.",
        }
    status = tables.fact("rank_status")
    dead = (
        [r for r in records(status) if r.get("signal") or r.get("exitcode") not in (None, 0)]
        if len(status)
        else []
    )
    stops = records(tables.fact("job_stopped"))
    quiet_rows = records(tables.fact("silent_hang"))
    if stops and all(r.get("no_error") for r in quiet_rows):
        return _observed_silent(stops, quiet_rows)
    own = [
        e
        for e in evs
        if e.kind in ("exception", "cuda_error", "oom", "nccl_error", "nccl_warn")
        and not _LAUNCHER_LINE.search(e.text)
    ]
    own = [e for e in own if e.rank is not None] or own  # a rank's own error before an unattributed one
    if own:
        first = min(own, key=lambda e: (e.time is None, e.time or 0.0, e.path, e.line))
        what = str(
            first.get("exc_type")
            or {
                "exception": "A Python exception",
                "cuda_error": "A CUDA error",
                "oom": "Out of memory",
                "nccl_error": "An NCCL error",
                "nccl_warn": "An NCCL warning",
            }.get(first.kind, first.kind)
        )
        if first.kind in ("nccl_warn", "nccl_error"):
            said = _NCCL_SAYS.sub("", first.text).strip().split(". ")[0]
            what += f' ("{said[:90]}…")' if len(said) > 90 else f' ("{said}")' if said else ""
        ranks = sorted({e.rank for e in own if e.rank is not None and e.kind == first.kind})
        host = first.host or ""
        where = _ranks_text(ranks) if ranks else (f"host {host}" if host else first.path)
        whose = f"rank {first.rank}" if first.rank is not None else where
        return {
            "headline": f"{what} on {where}; culprit not determined",
            "first_step": (
                f"Read the first error of {whose} ({first.path}:{first.line}) and the lines before "
                "it: it is the earliest error in the logs; the other errors may only follow from it."
            ),
        }
    if dead:
        sig = [r for r in dead if r.get("signal")]
        rows = sig or dead
        how = (
            f"killed by {rows[0]['signal']}"
            if sig and all(r.get("signal") == rows[0]["signal"] for r in sig)
            else "exited with an error"
        )
        ranks = sorted(int(r["rank"]) for r in rows if r.get("rank") is not None)
        # faulthandler's stacks (`Fatal Python error: <signal>` as a process dies, or dumped on a timer or
        # signal; parsers/faulthandler.py): already printed, so say what they show instead of asking to turn
        # faulthandler on (interleaved on a shared console, only the first keeps its `Fatal` header).
        mains = [e for e in evs
                 if e.kind == "stack_dump" and e.get("dumper") == "faulthandler" and e.get("main")]
        waiting = Counter(str(e.get("collective")) for e in mains if e.get("waits_on") == "collective")
        outside = sum(1 for e in mains if e.get("waits_on") != "collective")
        if "SIGKILL" in how:
            step = ("Check the host's kernel log (`dmesg -T`) for the out-of-memory killer or an operator's "
                    "kill.")
        elif waiting and outside:
            call, n = waiting.most_common(1)[0]
            who = ("1 was outside any collective: that process is the one the others waited for"
                   if outside == 1 else
                   f"{outside} were outside any collective: those are the processes the others waited for")
            step = (
                f"Read the stacks faulthandler printed: {n} main {'thread' if n == 1 else 'threads'} waited "
                f"in `{call}` and {who}. The stacks name no rank here: run torchrun with `--log-dir DIR "
                "--redirects 3 --tee 3` (or `py-spy dump --pid <PID> > pyspy-rank<N>.txt` per rank) so each "
                "stack is kept with its rank."
            )
        elif mains:
            step = ("Read the stacks faulthandler printed as they died (the frames under your own code show "
                    "where each process was) and the last lines each of these ranks wrote before it died.")
        else:
            step = ("Read the last lines each of these ranks wrote before it died; enable "
                    "`PYTHONFAULTHANDLER=1` for the rerun so a crash prints its stack.")
        return {
            "headline": f"{_ranks_text(ranks).capitalize()} {how}; culprit not determined",
            "first_step": step,
        }
    return None


SILENT_RULES = frozenset(
    {"silent-hang-rank-skipped-step", "silent-hang-at-phase-boundary", "silent-hang-rank-in-main-only-phase",
     "silent-hang-rank-stopped-on-a-line-peers-passed", "silent-hang-rank-last-line-no-peer-printed",
     "silent-hang-two-ranks-on-different-last-lines"}
)
SILENT_ROWS = 64
def _first_of_each(stops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first job_stopped row of each (how, signal), in file order."""
    seen: dict[tuple[Any, Any], dict[str, Any]] = {}
    for s in stops:
        seen.setdefault((s["how"], s["signal"]), s)
    return list(seen.values())


def _rank_note(r: dict[str, Any]) -> str:
    """What sets a rank apart in a silent hang, in words (empty when nothing does)."""
    notes = []
    if r.get("sequence") == "skipped":
        notes.append(f"no report for the step after {r['skipped_after']}, which its peers printed")
    elif r.get("sequence") == "extra":
        notes.append(f"printed a step after {r['skipped_after']} that most peers skipped")
    if r.get("position") in ("ahead", "behind"):
        notes.append("ahead of the others" if r["position"] == "ahead" else "behind the others")
    if r.get("first_silent"):
        notes.append(f"went quiet first ({r['silent_for_s']:.3g} s before the last report of any rank)")
    if r.get("unranked_note"):
        notes.append(str(r["unranked_note"]))
    return "; ".join(notes)


def _silent_hang(tables: Tables, verdict: dict[str, Any]) -> dict[str, Any] | None:
    """Where each rank stopped in a hang with no error line (failure-signatures.md section 16).

    Present when a silent-hang rule gave the verdict, or when nothing explained a job that was stopped from
    outside without any failure line of its own.
    """
    if verdict.get("rule_id") not in SILENT_RULES and verdict.get("category") != "unknown":
        return None   # (before the tables become dicts: a big job has a row per rank)
    rows = records(tables.fact("silent_hang"))
    stops = records(tables.fact("job_stopped"))
    quiet = bool(rows) and all(r.get("no_error") for r in rows)
    if verdict.get("rule_id") not in SILENT_RULES and not (
        verdict.get("category") == "unknown" and stops and (quiet or not rows)
        and not any(e.kind == "hang_detected" for e in tables.events)
    ):
        return None
    common = next((r["common_step"] for r in rows if r.get("common_step") is not None), None)
    common_epoch = next((r["common_epoch"] for r in rows if r.get("common_epoch") is not None), None)
    # Each rank's own last line (fact last_line): the place it stopped where it printed no step, or beside it.
    lasts = {r["rank"]: r for r in records(tables.fact("last_line")) if r.get("rank") is not None}
    if not rows and lasts:
        return _silent_from_last_lines(stops, list(lasts.values()))
    return {
        "stopped": _stopped_items(stops),
        "common_step": common,
        "common_epoch": common_epoch,
        "ranks": [
            {
                "rank": r["rank"],
                "host": r["host"],
                "last_step": r["last_step"],
                "last_epoch": r["last_epoch"],
                "total": r["total"],
                "last_time_text": time_text(r["last_time"]),
                "last_phase": r["last_phase"],
                "last_dist": r["last_dist"],
                "boundary": r["boundary"],
                "stalled_start": bool(r["stalled_start"]),
                "differs": bool(r["differs"]),
                "note": _rank_note(r),
                "last_line": lasts[r["rank"]]["text"] if r["rank"] in lasts else None,
                "path": r["path"],
                "line": r["line"],
            }
            for r in rows[:SILENT_ROWS]
        ],
        "more_ranks": max(0, len(rows) - SILENT_ROWS),
    }


def _stopped_items(stops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """How the job was stopped from outside (the first stop of each kind, at most three), for the section."""
    return [
        {"how": s["how"], "signal": s["signal"], "text": s["said"], "path": s["path"], "line": s["line"],
         "time_text": time_text(s["time"])}
        for s in _first_of_each(stops)[:3]
    ]


_LAST_LINE_NOTES = {
    "behind": "stopped on a line its peers printed before going on",
    "elsewhere": "stopped on a line no other rank printed",
}


def _silent_from_last_lines(stops: list[dict[str, Any]], lasts: list[dict[str, Any]]) -> dict[str, Any]:
    """The silent-hang section of a job whose ranks printed no step a parser knows: where each rank stopped
    is the last line it printed (fact last_line)."""
    return {
        "stopped": _stopped_items(stops),
        "common_step": None,
        "common_epoch": None,
        "ranks": [
            {
                "rank": r["rank"], "host": r["host"], "last_step": None, "last_epoch": None, "total": None,
                "last_time_text": time_text(r["time"]), "last_phase": None, "last_dist": None,
                "boundary": None,
                "stalled_start": False, "differs": r.get("position") in ("behind", "elsewhere", "differs"),
                "note": "; ".join(x for x in (f'last line: "{r["text"]}"',
                                              _LAST_LINE_NOTES.get(str(r.get("position")), "")) if x),
                "last_line": r["text"], "path": r["path"], "line": r["line"],
            }
            for r in lasts[:SILENT_ROWS]
        ],
        "more_ranks": max(0, len(lasts) - SILENT_ROWS),
    }


def _observed_silent(stops: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[str, str]:
    """The headline of a job stopped from outside with no failure line of its own (section 16)."""
    how = str(stops[0]["said"])
    common = next((r["common_step"] for r in rows if r.get("common_step") is not None), None)
    differ = sorted(int(r["rank"]) for r in rows if r.get("differs") and r.get("rank") is not None)
    ranked = [r for r in rows if r.get("rank") is not None]
    several = common is not None and len(ranked) > 1
    where = f"; the last step every rank reached is {common}" if several else ""
    who = f"; {_ranks_text(differ)} stopped at a different point" if differ else ""
    if any(str(s.get("reason") or "").upper() == "TIME LIMIT" for s in stops):
        # The scheduler's clock stopped it, not someone who saw it hang (failure-signatures.md 17.4): a
        # run still training at its time limit ends the same way.
        return {
            "headline": (f"The job was stopped from outside at its time limit, with no error line: "
                         f"{how}{where}{who}. The logs do not say whether it had hung or was still working "
                         "when the limit came"),
            "first_step": (
                "Compare the time of each rank's last line with the time limit: a run still making progress "
                "at the limit needs a longer limit or a resume from its last checkpoint; a run whose lines "
                "stopped well before it hung there. If it hangs, dump every rank's stack before the limit "
                "(`py-spy dump --pid <PID> > pyspy-rank<N>.txt`) and give the files to hanglens with the "
                "logs."
            ),
        }
    return {
        "headline": f"The job hung without an error line and was stopped from outside: {how}{where}{who}",
        "first_step": (
            "Next time it hangs, before stopping it, dump every rank's stack "
            "(`py-spy dump --pid <PID> > pyspy-rank<N>.txt`) and give the files to hanglens with the logs; "
            "rerun with `TORCH_DISTRIBUTED_DEBUG=DETAIL`, the flight recorder (`TORCH_FR_BUFFER_SIZE=2000`, "
            "`TORCH_NCCL_TRACE_BUFFER_SIZE` before torch 2.6, with `TORCH_NCCL_DUMP_ON_TIMEOUT=1`) and a "
            "shorter process-group timeout so the hang ends in a timeout that names the collective."
        ),
    }


def build_document(
    *,
    tables: Tables,
    result: Any,
    files: Sequence[InputFile],
    skipped: Sequence[Skipped],
    command: str,
    context: Context | None = None,
    consume: bool = False,
    runs: Sequence[RunInfo] = (),
) -> dict[str, Any]:
    """The analysis document; `result` is the engine's (verdict, findings, ruled_out, not_evaluable).

    `runs`: the runs the inputs hold, oldest first, where there are several (ingest/runs.py); the tables are
    the judged one's.

    `consume`: `tables.events` is emptied as soon as the parts read from the events are made, so that the
    per-rank sections of a big job are built in the memory its events held (the tables stay).
    """
    verdict = clean(result.verdict.to_dict())
    try:
        verdict["category_title"] = CATEGORY_TITLES[Category(verdict["category"])]
    except ValueError:
        verdict["category_title"] = verdict["category"]
    findings = [clean(f.to_dict()) for f in result.findings]
    refs = sorted({SourceRef(ev["path"], ev["line"]) for f in findings for ev in f.get("evidence", [])})
    ctx = context(refs) if context and refs else {}
    # A file whose lines name several hosts (a user's paste of every node's NCCL WARNs beside one rank's
    # traceback) holds several processes' lines: it is not that one rank's file (ingest.streams.file_owners).
    file_rank, file_host = file_owners(files, tables.events, tables.hosts)
    for f in findings:
        for ev in f.get("evidence", []):
            # one attribution everywhere: a line of a file that belongs to one rank is that rank's line
            if ev.get("rank") is None and ev.get("path") in file_rank:
                ev["rank"] = file_rank[ev["path"]]
            if not ev.get("host") and ev.get("path") in file_host:
                ev["host"] = file_host[ev["path"]]
            ev["time_text"] = time_text(ev.get("time"))
            around = ctx.get(SourceRef(ev["path"], ev["line"]), [])
            # `line` is the cited line as it stands in the file: a traceback's evidence `text` is its
            # exception line while `line` numbers its `Traceback` header, so the context shows the file.
            at = [t[:500] for n, t in around if n == ev["line"]]
            ev["context"] = {
                "before": [t[:500] for n, t in around if n < ev["line"]],
                "line": at[0] if at else None,
                "after": [t[:500] for n, t in around if n > ev["line"]],
            }
    culprits = set(verdict.get("culprit_ranks") or [])
    victims = set(verdict.get("victim_ranks") or [])
    timeline = []
    for r in records(tables.fact("first_failure").iloc[:TIMELINE_LIMIT]):
        if r["rank"] is None and r["path"] in file_rank:
            r["rank"] = file_rank[r["path"]]
        if not r["host"] and r["path"] in file_host:
            r["host"] = file_host[r["path"]]
        timeline.append(
            {
                "time": r["time"],
                "time_text": time_text(r["time"]),
                "rank": r["rank"],
                "host": r["host"],
                "kind": r["kind"],
                "text": r["text"],
                "path": r["path"],
                "line": r["line"],
            }
        )
    # The advice of the finding the verdict came from, the first (engine `_verdict`); the renderers show
    # `collect_next` alone, so what it drops of that finding's advice stays dropped.
    engine_collect: list[str] = list(findings[0].get("collect") or []) if findings else []
    engine_fix: list[str] = list(findings[0].get("remediation") or []) if findings else []
    hosts = sorted({h for h in tables.hosts.values() if h} | {h for f in files for h in f.hosts})
    # What is read from the events, first (see `consume`).
    unexplained = _unexplained(tables.events, set(refs))
    collect_next = (
        # Nothing failed: there is nothing to debug, so nothing to collect for a rerun.
        [] if verdict.get("category") == "none"
        else _collect_next(
            tables, files, verdict.get("confidence", "low"), engine_collect, str(verdict.get("category")),
            engine_fix,
        )
    )
    observed = _observed(tables, file_rank) if verdict.get("category") == "unknown" else None
    silent_hang = _silent_hang(tables, verdict)
    ranks_seen = sorted({e.rank for e in tables.events if e.rank is not None}
                        | {r for f in files for r in f.ranks})
    if consume:
        tables.events.clear()
    lists: dict[tuple[Any, ...], list[Any]] = {}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "hanglens_version": __version__,
        "command": command,
        "verdict": verdict,
        "findings": findings,
        "ruled_out": [clean(r.to_dict()) for r in result.ruled_out],
        "not_evaluable": [clean(r.to_dict()) for r in result.not_evaluable],
        "ranks": _ranks_section(tables, culprits, victims),
        # (a slice at a time: a big job has a few rows per rank, each cleaned into a new dict)
        "collectives": list(each_record(tables.collectives)),
        "disagreement": _disagreement(tables),
        "timeline": timeline,
        "clock": {"offsets": clean(dict(sorted(tables.offsets.items()))), "note": tables.clock_note},
        "versions": _versions(tables),
        "unexplained": unexplained,
        "collect_next": collect_next,
        "observed": observed,
        "silent_hang": silent_hang,
        "inputs": {
            "files": len(files),
            "bytes": sum(f.size for f in files),
            "skipped": [{"path": s.path, "reason": s.reason} for s in sorted(skipped, key=lambda s: s.path)],
            "runs": [{"run": r.run, "where": list(r.where), "judged": r.judged, "failed": r.failed}
                     for r in runs],
            "ranks_seen": ranks_seen,
            "world_size": tables.world_size,
            "hosts": hosts,
            "detail": [
                {
                    "path": f.path,
                    "size": f.size,
                    "lines": f.lines,
                    # (one list for the files that name the same ranks or hosts: a rank's files, a node's)
                    "ranks": lists.setdefault(f.ranks, list(f.ranks)),
                    "hosts": lists.setdefault(f.hosts, list(f.hosts)),
                    "events": f.events,
                }
                for f in sorted(files, key=lambda f: f.path)
            ],
        },
    }
    # Cleaned section by section, and the rows of the two per-rank sections (made here, for this document)
    # row by row in place: each old row is let go as its clean copy is made, not the whole document at the end
    # (16,384 ranks: 49,000 row dicts were held twice, 12.8 MiB).
    for key in ("ranks", "collectives"):
        rows = doc[key]
        for i, row in enumerate(rows):
            rows[i] = clean(row)
    for key, value in doc.items():
        doc[key] = clean(value)
    return doc
