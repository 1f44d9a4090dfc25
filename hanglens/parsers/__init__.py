"""The parser registry: every parser module, in the order the reader feeds them."""

from __future__ import annotations

from hanglens.parsers.accelerate import AccelerateParser
from hanglens.parsers.base import EventSpec, Example, Parser
from hanglens.parsers.c10d import C10dParser
from hanglens.parsers.catchall import CatchallParser
from hanglens.parsers.cuda import CudaParser
from hanglens.parsers.dataloader import DataloaderParser
from hanglens.parsers.ddp import DdpParser
from hanglens.parsers.elastic import ElasticParser
from hanglens.parsers.environment import EnvironmentParser
from hanglens.parsers.faulthandler import FaulthandlerParser
from hanglens.parsers.frtrace import FrtraceParser
from hanglens.parsers.gloo import GlooParser
from hanglens.parsers.lifecycle import LifecycleParser
from hanglens.parsers.mesh import MeshParser
from hanglens.parsers.mpirun import MpirunParser
from hanglens.parsers.nccl import NcclParser
from hanglens.parsers.ncclras import NcclRasParser
from hanglens.parsers.progress import ProgressParser
from hanglens.parsers.pyspy import PyspyParser
from hanglens.parsers.spawn import SpawnParser
from hanglens.parsers.store import StoreParser
from hanglens.parsers.traceback import TracebackParser
from hanglens.parsers.wrapper import WrapperParser

PARSERS: tuple[type[Parser], ...] = (
    C10dParser,
    WrapperParser,
    AccelerateParser,
    FrtraceParser,
    NcclRasParser,
    DdpParser,
    NcclParser,
    CudaParser,
    GlooParser,
    DataloaderParser,
    ElasticParser,
    SpawnParser,
    MpirunParser,
    StoreParser,
    TracebackParser,
    PyspyParser,
    FaulthandlerParser,
    ProgressParser,
    LifecycleParser,
    MeshParser,
    EnvironmentParser,
    CatchallParser,
)

# Events the ingest layer makes from Flight Recorder dumps (hanglens/ingest/flight.py), not from lines.
FR_PG_STATUS_FIELDS = ("pg", "pg_desc", "last_enqueued", "last_started", "last_completed")
FR_PG_STATUS_DOC = "a Flight Recorder dump's `pg_status` of one PG (at `<dump>:1`)"
FR_ENTRY_FIELDS = (
    "pg", "pg_desc", "seq", "p2p_seq", "is_p2p", "op", "profiling_name", "record_id", "numel_in", "numel_out",
    "input_sizes", "output_sizes", "input_dtypes", "output_dtypes", "p2p_src", "p2p_dst", "state", "retired",
    "timeout_ms", "time_created_ns", "time_started_ns", "time_completed_ns", "duration_ms", "frames",
    "frame_file", "frame_line", "frame_func",
)
FR_DUMP_FIELDS = ("version", "format", "entries", "pg_config", "comm_lib_version")
FR_DUMP_DOC = (
    "one Flight Recorder dump (at `<dump>:1`): format pickle/json, the dump's format version, entry count, "
    "pg_config as [name, desc, [global ranks]] per group (gloo records an empty name)"
)
FR_ENTRY_DOC = (
    "one entry of a Flight Recorder dump (at `<dump>:<entry index + 1>`, newest 2000 per dump): "
    "pg = PG GUID, seq = collective_seq_id, op in OpType spelling (`nccl:all_reduce` → ALLREDUCE), "
    "numel_* summed over the tensors, state scheduled/started/completed, retired without completed = "
    "timed out or failed, "
    "frames as \"file:line in func\" outermost first, frame_* the innermost; time_* the recorder's "
    "time_created_ns / time_discovered_started_ns / time_discovered_completed_ns (the event's time is "
    "time_created_ns), p2p_src/p2p_dst the PG-local ranks of a send/recv"
)
# Events the ingest layer makes from the end of each file (hanglens/ingest/tail.py), not from a parser.
LAST_LINE_FIELDS = ("before",)
LAST_LINE_DOC = (
    "the last line a writer (a rank's file, or a tagged stream of a console) printed, of any kind, read "
    "from the file's end after the parsers, `before` its up to 5 lines before it (oldest first): not a "
    "traceback, a failure line or a stack dump, nor anything after a stack dump"
)


def event_catalog() -> dict[str, set[str]]:
    """Every event kind any parser declares, with the union of its declared fields."""
    out: dict[str, set[str]] = {"error_file": {"exc_type", "message", "timestamp", "error_code"},
                                "fr_entry": set(FR_ENTRY_FIELDS),
                                "fr_dump": set(FR_DUMP_FIELDS),
                                "pg_status": set(FR_PG_STATUS_FIELDS),
                                "last_line": set(LAST_LINE_FIELDS)}
    for parser in PARSERS:
        for spec in parser.emits:
            out.setdefault(spec.kind, set()).update(spec.fields)
    return out


__all__ = ["PARSERS", "EventSpec", "Example", "Parser", "event_catalog"]


def catalog_markdown() -> str:
    """The event catalogue as Markdown, generated from every parser's declared outputs."""
    kinds: dict[str, dict[str, object]] = {}
    for parser in PARSERS:
        for spec in parser.emits:
            entry = kinds.setdefault(spec.kind, {"parsers": [], "fields": [], "docs": []})
            for key, value in (("parsers", parser.name), ("docs", spec.doc)):
                bucket = entry[key]
                assert isinstance(bucket, list)
                if value not in bucket:
                    bucket.append(value)
            fields = entry["fields"]
            assert isinstance(fields, list)
            fields.extend(f for f in spec.fields if f not in fields)
    kinds.setdefault("error_file", {"parsers": ["ingest"], "fields": ["exc_type", "message", "timestamp",
                                                                      "error_code"],
                                    "docs": ["torchrun's error.json of a worker, read by the ingest layer"]})
    for kind, fields_, doc, by in (("pg_status", FR_PG_STATUS_FIELDS, FR_PG_STATUS_DOC, "flight"),
                                   ("fr_entry", FR_ENTRY_FIELDS, FR_ENTRY_DOC, "flight"),
                                   ("fr_dump", FR_DUMP_FIELDS, FR_DUMP_DOC, "flight"),
                                   ("last_line", LAST_LINE_FIELDS, LAST_LINE_DOC, "tail")):
        entry = kinds.setdefault(kind, {"parsers": [], "fields": [], "docs": []})
        for key, value in (("parsers", by), ("docs", doc)):
            bucket = entry[key]
            assert isinstance(bucket, list)
            bucket.append(value)
        have = entry["fields"]
        assert isinstance(have, list)
        have.extend(f for f in fields_ if f not in have)
    lines = [
        "# Event kinds",
        "",
        "Generated by `python -m hanglens.parsers > docs/events.md` from every parser's declared outputs",
        "(`Parser.emits`); a test fails when this file is stale. Events also carry `rank`, `host`, `time`,",
        "`level`, `local_rank`, `attempt` and their source `path:line` outside `fields`. A field a parser",
        "cannot read is absent or null; `stated_rank` is a rank the message names as its writer's own.",
        "",
        "| kind | parsers | fields | meaning |",
        "|---|---|---|---|",
    ]
    for kind in sorted(kinds):
        e = kinds[kind]
        parsers = ", ".join(str(p) for p in e["parsers"])  # type: ignore[attr-defined]
        fields = ", ".join(f"`{f}`" for f in e["fields"])  # type: ignore[attr-defined]
        docs = " / ".join(str(d).replace("|", "\\|").replace("\n", " ") for d in e["docs"])  # type: ignore[attr-defined]
        lines.append(f"| `{kind}` | {parsers} | {fields} | {docs} |")
    return "\n".join(lines) + "\n"
