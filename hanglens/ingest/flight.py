"""Recognise PyTorch Flight Recorder dumps and read them, running no code, into pg_status and fr_entry events.

A dump (reference §8) is one pickle per process, named `<prefix><global rank>` (`nccl_trace_rank_3`,
`comm_lib_trace_rank_3`, or whatever prefix the user chose), holding only dicts, lists, tuples, strings,
numbers, booleans and None. Pickle can name any importable callable and call it, so dumps are loaded
with an unpickler that refuses every global: a pickle that needs one is not a dump and is skipped.

Events and their `path:line`: one `pg_status` per process group of the dump's `pg_status` at line 1,
and one `fr_entry` per entry at line `<entry index> + 1` (only the newest `MAX_ENTRIES` entries are read).
"""

from __future__ import annotations

import io
import pickle
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from hanglens.model import Event, Origin, Skipped, SourceRef

MAX_DUMP = 64 << 20       # bytes; real dumps of a 2000-entry buffer with stacks are a few MiB
MAX_ENTRIES = 2000        # newest entries read per dump (the default ring-buffer size)
MAX_FRAMES = 64
PICKLE_HEADERS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
DUMP_NAME_RE = re.compile(r"(?:nccl|comm_lib|fr)_trace_rank_?(?P<rank>\d{1,6})$")
TRAILING_DIGITS_RE = re.compile(r"(?<!\d)(?P<rank>\d{1,6})$")
# `nccl:all_reduce`, `gloo:_allgather_base`, `nccl:send 0->1`: backend prefix, then the op name.
_PROFILING_RE = re.compile(r"^(?:[\w-]+:)?(?P<op>[A-Za-z_]\w*)")
_OP_WORDS = (("all_reduce", "allreduce"), ("all_gather", "allgather"), ("all_to_all", "alltoall"))


class _Refused(pickle.UnpicklingError):
    pass


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Builds plain containers and scalars only: any class or function a pickle names is refused."""

    def find_class(self, module: str, name: str, /) -> Any:
        raise _Refused(f"refused to load {module}.{name} (a dump holds plain data only)")


def dump_rank(rel: str, head: bytes) -> int | None:
    """The global rank of a Flight Recorder dump named `rel` whose content starts with `head`, else None.

    A dump is a pickle whose name ends in the rank: the known prefixes (`nccl_trace_rank_`,
    `comm_lib_trace_rank_`, `fr_trace_rank_`) or any custom prefix ending in digits.
    """
    if not head.startswith(PICKLE_HEADERS):
        return None
    name = PurePosixPath(rel).name
    m = DUMP_NAME_RE.search(name) or TRAILING_DIGITS_RE.search(name)
    return int(m["rank"]) if m else None


def load_dump(data: bytes) -> dict[str, Any] | str:
    """The dump's top-level dict, or why `data` is not a readable dump (never runs code from it)."""
    if len(data) > MAX_DUMP:
        return f"flight recorder dump larger than {MAX_DUMP >> 20} MiB (not read)"
    try:
        doc = _NoGlobalsUnpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        return f"pickle is not a plain flight recorder dump ({exc})"
    except Exception as exc:  # a truncated or corrupt pickle raises almost anything
        return f"unreadable pickle ({type(exc).__name__}: {exc})"
    if not isinstance(doc, dict) or not isinstance(doc.get("entries", []), list) or not (
        "entries" in doc or "pg_status" in doc
    ):
        return "pickle is not a flight recorder dump (no entries, no pg_status)"
    return doc


def op_name(profiling_name: object) -> str | None:
    """The watchdog's OpType spelling of a profiling name: `nccl:all_reduce` → ALLREDUCE."""
    if not isinstance(profiling_name, str):
        return None
    m = _PROFILING_RE.match(profiling_name.strip())
    if not m:
        return None
    op = m["op"].lower()
    for old, new in _OP_WORDS:
        op = op.replace(old, new)
    return op.upper()


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _numel(sizes: object) -> int | None:
    if not isinstance(sizes, (list, tuple)):
        return None
    total = 0
    for shape in sizes:
        if not isinstance(shape, (list, tuple)) or not all(_int(d) is not None for d in shape):
            return None
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def _frames(raw: object) -> list[str]:
    """`file:line in func`, outermost first (the recorder stores the innermost first)."""
    if not isinstance(raw, (list, tuple)):
        return []
    out = []
    for fr in list(raw)[:MAX_FRAMES]:
        if isinstance(fr, Mapping):
            out.append(f"{fr.get('filename', '?')}:{fr.get('line', '?')} in {fr.get('name', '?')}")
    return out[::-1]


def _pg_of(entry: Mapping[str, Any]) -> tuple[str | None, str | None]:
    pg = entry.get("process_group")
    if isinstance(pg, (list, tuple)) and pg:
        desc = pg[1] if len(pg) > 1 and isinstance(pg[1], str) else None
        return str(pg[0]), desc
    pg_id = _int(entry.get("pg_id"))
    return (str(pg_id) if pg_id is not None else None), None


def dump_events(doc: Mapping[str, Any], display: str, rank: int, origin: Origin) -> list[Event]:
    """The `pg_status` and `fr_entry` events of one loaded dump written by global rank `rank`."""
    raw_entries = doc.get("entries")
    entries = raw_entries if isinstance(raw_entries, list) else []
    first = max(0, len(entries) - MAX_ENTRIES)
    out: list[Event] = []
    # pg_status is keyed by the local PG id; entries say which GUID (the cross-rank key) that id has.
    guid_of: dict[str, tuple[str | None, str | None]] = {}
    for entry in entries:
        if isinstance(entry, Mapping) and _int(entry.get("pg_id")) is not None:
            guid_of.setdefault(str(entry["pg_id"]), _pg_of(entry))

    def event(kind: str, line: int, text: str, fields: dict[str, Any]) -> Event:
        return Event(kind=kind, ref=SourceRef(display, line), text=text, parser="flight", rank=rank,
                     host=origin.host, local_rank=origin.local_rank, attempt=origin.attempt, fields=fields)

    status = doc.get("pg_status")
    if isinstance(status, Mapping):
        for key in sorted(status, key=str):
            st = status[key]
            if not isinstance(st, Mapping):
                continue
            pg, desc = guid_of.get(str(key), (str(key), None))
            status_fields: dict[str, Any] = {
                "pg": pg,
                "pg_desc": desc,
                "last_enqueued": _int(st.get("last_enqueued_collective")),
                "last_started": _int(st.get("last_started_collective")),
                "last_completed": _int(st.get("last_completed_collective")),
            }
            text = (f"flight recorder pg_status pg={pg} last_enqueued={status_fields['last_enqueued']} "
                    f"last_started={status_fields['last_started']} "
                    f"last_completed={status_fields['last_completed']}")
            out.append(event("pg_status", 1, text, status_fields))
    for index in range(first, len(entries)):
        entry = entries[index]
        if not isinstance(entry, Mapping):
            continue
        pg, desc = _pg_of(entry)
        seq = _int(entry.get("collective_seq_id"))
        if seq is None:
            seq = _int(entry.get("seq_id"))       # 2.2-2.3 dumps: one counter per PG
        raw_frames = entry.get("frames")
        frames = _frames(raw_frames)
        inner = raw_frames[0] if isinstance(raw_frames, (list, tuple)) and raw_frames else None
        dtypes = entry.get("input_dtypes")
        fields: dict[str, Any] = {
            "pg": pg,
            "pg_desc": desc,
            "seq": seq,
            "p2p_seq": _int(entry.get("p2p_seq_id")),
            "is_p2p": bool(entry.get("is_p2p", False)),
            "op": op_name(entry.get("profiling_name")),
            "numel_in": _numel(entry.get("input_sizes")),
            "numel_out": _numel(entry.get("output_sizes")),
            "input_dtypes": [str(d) for d in dtypes] if isinstance(dtypes, (list, tuple)) else None,
            "state": str(entry["state"]) if entry.get("state") is not None else None,
            "retired": bool(entry["retired"]) if entry.get("retired") is not None else None,
            "timeout_ms": _int(entry.get("timeout_ms")),
            "frames": frames,
            "frame_file": str(inner.get("filename")) if isinstance(inner, Mapping) else None,
            "frame_line": _int(inner.get("line")) if isinstance(inner, Mapping) else None,
            "frame_func": str(inner.get("name")) if isinstance(inner, Mapping) else None,
        }
        text = (f"flight recorder entry {index}: pg={pg} seq={seq} {entry.get('profiling_name')} "
                f"input_sizes={entry.get('input_sizes')} state={fields['state']} retired={fields['retired']}")
        out.append(event("fr_entry", index + 1, text[:2000], fields))
    return out


def read_dump(data: bytes, display: str, rank: int, origin: Origin) -> list[Event] | Skipped:
    """Every event of one dump's bytes, or a `Skipped` saying why the dump cannot be read."""
    doc = load_dump(data)
    if isinstance(doc, str):
        return Skipped(display, doc)
    try:
        return dump_events(doc, display, rank, origin)
    except Exception as exc:  # logs never raise: an odd dump costs this file, not the run
        return Skipped(display, f"internal error while reading flight recorder dump ({type(exc).__name__})")
