"""Recognise PyTorch Flight Recorder dumps (pickle or JSON) and read them, running no code, into events.

A dump (reference §8) is one file per process, named `<prefix><global rank>` (`nccl_trace_rank_3`,
`comm_lib_trace_rank_3`, `fr_trace_rank_3` or whatever prefix `TORCH_FR_DUMP_TEMP_FILE` /
`TORCH_NCCL_DEBUG_INFO_TEMP_FILE` named; `.json`, `.pkl`, `.pickle` may follow the rank), holding only
dicts, lists, tuples, strings, numbers, booleans and None:

- pickle: what the dump-on-timeout writer, `_dump_nccl_trace()` and gloo's `_dump_fr_trace()` return;
- JSON: what `_dump_nccl_trace_json()` / `_dump_fr_trace_json()` return (no stack frames; absent
  discovery times are 0; `pg_status` numbers are strings; keys sorted).

Both normalise to one shape, so the same run gives the same events either way (JSON lacks frames).

Pickle can name any importable callable and call it, so dumps are loaded with an unpickler that refuses
every global, and bounded four ways: bytes (`max_pickle_bytes`); objects built while loading
(`max_pickle_objects`: at most one per opcode, so only a dump with more bytes than the limit has its
opcodes counted first); the objects the document stands for once shared memo references are expanded
(computed once per distinct container, so a 500-byte bomb standing for 2**60 objects is refused in a
millisecond instead of hanging whoever walks or prints it); and the memory of the load itself (an
address-space cap while it runs, or where none can be set an opcode scan that refuses a memo index past
the opcodes read: the C unpickler would otherwise allocate and clear a memo table as large as any index a
pickle names). A dump over a limit is a skip naming the file and the limit.

Format versions (`version`, FlightRecorder.hpp `version_val`): "1.x" (2.2-2.3: `seq_id`, no
`process_group`), "2.2"-"2.10" (2.4+: `process_group`, `collective_seq_id`, `p2p_seq_id`; `pg_status`,
`timeout_ms`, `is_p2p` and dtypes from "2.5"; `thread_*`, `comm_lib_version` later). Fields are read by
presence, so every one of these loads; a major version above 2 loads the same way and is reported.

Events and their `path:line`: one `fr_dump` (version, format, process groups) and one `pg_status` per
process group at line 1, and one `fr_entry` per entry at line `<entry index> + 1` (newest `MAX_ENTRIES`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import threading
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from hanglens import lazyre as re
from hanglens.limits import DEFAULT_LIMITS, Limits
from hanglens.model import Event, Origin, Skipped, SourceRef
from hanglens.parsers.base import op_type as op_name

MAX_ENTRIES = 2000        # newest entries read per dump (the default ring-buffer size)
MAX_FRAMES = 64
MAX_TEXT = 2000
PICKLE_HEADERS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
KNOWN_PREFIX_RE = re.compile(r"(?:nccl|comm_lib|fr)_trace_rank_?(?P<rank>\d{1,6})(?:\.(?:pkl|pickle|json))?$")
TRAILING_DIGITS_RE = re.compile(r"(?<!\d)(?P<rank>\d{1,6})$")
JSON_NAME_RE = re.compile(r"(?<!\d)(?P<rank>\d{1,6})\.json$")
_JSON_KEYS = (b'"profiling_name"', b'"pg_config"', b'"pg_status"', b'"comm_lib_version"')
# `nccl:all_reduce`, `gloo:_allgather_base`, `nccl:send 0->1`: backend prefix, then the op name.
_P2P_RE = re.compile(r"^(?:[\w-]+:)?(?P<op>send|recv) (?P<a>\d{1,9})(?:->|<-)(?P<b>\d{1,9})$")
# Opcodes that name or call something: a dump needs none of them (find_class refuses them too).
_CODE_OPS = frozenset({"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "BUILD", "NEWOBJ", "NEWOBJ_EX",
                       "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"})


# Opcodes that store into the unpickler's memo at an index the pickle names. A dump written by pickle
# numbers its memo from 0, one slot per stored object, so an index is always below the opcode count.
_MEMO_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
UNPICKLE_BYTES = 256 << 20  # address space a load may take beyond MEMORY_PER_BYTE per pickle byte
MEMORY_PER_BYTE = 64        # objects built from one pickle byte take far less than this


class _Refused(pickle.UnpicklingError):
    pass


@contextlib.contextmanager
def _memory_cap(size: int) -> Iterator[bool]:
    """While loading a pickle of `size` bytes, cap this process's address space near what it uses now.

    The C unpickler grows its memo table to any index a pickle names and clears every new slot: a
    5 KB pickle naming index 800,000,000 takes 13 GB and minutes before any opcode count could stop it.
    Under the cap that is a MemoryError at once. Yields False (no cap; the caller scans the opcodes
    first instead) where the limit cannot be set safely: other threads (they would share the cap), no
    `resource` module, or no /proc/self/statm to tell the current size.
    """
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, IndexError):
        yield False
        return
    if threading.active_count() > 1:
        yield False
        return
    want = used + UNPICKLE_BYTES + MEMORY_PER_BYTE * size
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft <= want:
        yield True  # already capped as tightly (a scan worker near its job_memory_bytes)
        return
    try:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ValueError, OSError):
        yield False
        return
    try:
        yield True
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Builds plain containers and scalars only: any class or function a pickle names is refused."""

    def find_class(self, module: str, name: str, /) -> Any:
        raise _Refused(f"refused to load {module}.{name} (a dump holds plain data only)")


def dump_format(rel: str, head: bytes) -> str | None:
    """"pickle" or "json" when `rel`/`head` (the first bytes) look like a Flight Recorder dump, else None."""
    name = PurePosixPath(rel).name
    if head.startswith(PICKLE_HEADERS):
        if KNOWN_PREFIX_RE.search(name) or TRAILING_DIGITS_RE.search(name):
            return "pickle"
        return None
    text = head.lstrip()
    named = KNOWN_PREFIX_RE.search(name) or JSON_NAME_RE.search(name) or TRAILING_DIGITS_RE.search(name)
    if named and text.startswith(b'{"') and any(k in text for k in _JSON_KEYS):
        return "json"
    return None


def dump_rank(rel: str, head: bytes) -> int | None:
    """The global rank of a Flight Recorder dump named `rel` whose content starts with `head`, else None.

    The rank is the number the name ends in (before a `.json`/`.pkl`/`.pickle` extension): torch names
    each dump `<prefix><global rank>`.
    """
    if dump_format(rel, head) is None:
        return None
    name = PurePosixPath(rel).name
    m = KNOWN_PREFIX_RE.search(name) or JSON_NAME_RE.search(name) or TRAILING_DIGITS_RE.search(name)
    return int(m["rank"]) if m else None


def _scan_pickle(data: bytes, limits: Limits) -> str | None:
    """Why `data` must not be unpickled (an opcode that names code, too many opcodes), or None."""
    import pickletools  # only when a Flight Recorder pickle is read

    count = 0
    try:
        for op, arg, _pos in pickletools.genops(data):
            count += 1
            if op.name in _CODE_OPS:
                what = f" {arg}" if isinstance(arg, str) else ""
                return f"refused to load{what} ({op.name}: a dump holds plain data only)"
            if count > limits.max_pickle_objects:
                return f"more than max_pickle_objects ({limits.max_pickle_objects}) objects"
            if op.name in _MEMO_OPS and isinstance(arg, int) and arg >= count:
                return f"memo index {arg} past the {count} opcodes read (a corrupt or hostile pickle)"
    except Exception as exc:  # genops raises ValueError on garbage; the loader reports it below
        return f"unreadable pickle ({type(exc).__name__}: {exc})"
    return None


def _expanded_size(doc: object, budget: int) -> int | None:
    """How many objects `doc` stands for once every shared reference is expanded (a tree walk would
    visit that many), computed once per distinct container; None for a container that contains itself.

    Stops counting past `budget`: a few hundred bytes of memo references can stand for 2**60 objects,
    which is what makes a pickle bomb hang whoever walks or prints it.
    """
    size: dict[int, int] = {}
    keep: list[object] = []                      # ids stay valid while the objects live
    stack: list[tuple[object, bool]] = [(doc, False)]
    open_ids: set[int] = set()
    while stack:
        obj, done = stack.pop()
        if not isinstance(obj, (dict, list, tuple)):
            continue
        key = id(obj)
        if done:
            children = list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else list(obj)
            total = 1
            for c in children:
                total += size.get(id(c), 1) if isinstance(c, (dict, list, tuple)) else 1
                if total > budget:
                    total = budget + 1
                    break
            size[key] = total
            open_ids.discard(key)
            continue
        if key in size:
            continue
        if key in open_ids:
            return None
        open_ids.add(key)
        keep.append(obj)
        stack.append((obj, True))
        children = list(obj.values()) if isinstance(obj, dict) else list(obj)
        stack.extend((c, False) for c in children if isinstance(c, (dict, list, tuple)) and id(c) not in size)
    return size.get(id(doc), 1)


def load_dump(data: bytes, fmt: str = "pickle", limits: Limits = DEFAULT_LIMITS) -> dict[str, Any] | str:
    """The dump's top-level dict in one shape for both formats, or why `data` is not a readable dump.

    Never runs code from a pickle; a dump over a limit names the limit.
    """
    if len(data) > limits.max_pickle_bytes:
        return f"flight recorder dump larger than max_pickle_bytes ({limits.max_pickle_bytes} bytes)"
    doc: object
    if fmt == "json":
        try:
            doc = json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            return f"unreadable JSON dump ({type(exc).__name__}: {str(exc)[:200]})"
    else:
        # Every opcode builds at most one object, so a dump with fewer bytes than the object limit
        # cannot exceed it while loading; a bigger one is scanned first (slower, but never run).
        with _memory_cap(len(data)) as capped:
            if len(data) > limits.max_pickle_objects or not capped:
                why = _scan_pickle(data, limits)
                if why is not None and why.startswith("refused"):
                    return f"pickle is not a plain flight recorder dump ({why})"
                if why is not None:
                    return why
            try:
                doc = _NoGlobalsUnpickler(io.BytesIO(data)).load()
            except _Refused as exc:
                return f"pickle is not a plain flight recorder dump ({exc})"
            except MemoryError:
                return ("unpickling needs more memory than a dump of this size can (a memo index far past "
                        "the pickle's objects: corrupt or hostile); not read")
            except Exception as exc:  # a truncated or corrupt pickle raises almost anything
                return f"unreadable pickle ({type(exc).__name__}: {str(exc)[:200]})"
    expanded = _expanded_size(doc, limits.max_pickle_objects)
    if expanded is None:
        return "a container that contains itself (not a flight recorder dump)"
    if expanded > limits.max_pickle_objects:
        return (f"shared references expand to more than max_pickle_objects ({limits.max_pickle_objects}) "
                "objects (a pickle bomb; not read)")
    if not isinstance(doc, dict) or not isinstance(doc.get("entries", []), list) or not (
        "entries" in doc or "pg_status" in doc or "pg_config" in doc
    ):
        return "not a flight recorder dump (no entries, pg_status or pg_config)"
    return _normalise(doc)


def _normalise(doc: dict[str, Any]) -> dict[str, Any]:
    """JSON dumps in the pickle's shape: PG names as tuples, numbers as ints, 0 discovery times as None."""
    status = doc.get("pg_status")
    if isinstance(status, Mapping):
        doc["pg_status"] = {k: ({kk: _as_int(vv) for kk, vv in v.items()} if isinstance(v, Mapping) else v)
                            for k, v in status.items()}
    for entry in doc.get("entries") or []:
        if not isinstance(entry, dict):
            continue
        pg = entry.get("process_group")
        if isinstance(pg, list):
            entry["process_group"] = tuple(pg)
        for key in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            if entry.get(key) == 0:
                entry[key] = None
    return doc


def _as_int(v: object) -> object:
    if isinstance(v, str) and re.fullmatch(r"-?\d{1,19}", v):
        return int(v)
    return v


def p2p_peers(profiling_name: object) -> tuple[int, int] | None:
    """(src, dst) PG-local ranks of `nccl:send 0->1` / `nccl:recv 1<-0`, else None."""
    if not isinstance(profiling_name, str):
        return None
    m = _P2P_RE.match(profiling_name.strip())
    if not m:
        return None
    a, b = int(m["a"]), int(m["b"])
    return (a, b) if m["op"] == "send" else (b, a)


def _int(v: object) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63):
        return v
    return None


def _sizes(raw: object) -> list[list[int]] | None:
    if not isinstance(raw, (list, tuple)):
        return None
    out: list[list[int]] = []
    for shape in raw:
        if not isinstance(shape, (list, tuple)) or any(_int(d) is None for d in shape):
            return None
        out.append([int(d) for d in shape])
    return out


def _numel(sizes: list[list[int]] | None) -> int | None:
    if sizes is None:
        return None
    total = 0
    for shape in sizes:
        n = 1
        for d in shape:
            n *= d
        total += n
    return total if total < (1 << 63) else None


def _strs(raw: object) -> list[str] | None:
    return [str(d)[:64] for d in raw] if isinstance(raw, (list, tuple)) else None


def _frames(raw: object) -> list[str]:
    """`file:line in func`, outermost first (the recorder stores the innermost first)."""
    if not isinstance(raw, (list, tuple)):
        return []
    out = []
    for fr in list(raw)[:MAX_FRAMES]:
        if isinstance(fr, Mapping):
            out.append(f"{str(fr.get('filename', '?'))[:500]}:{_int(fr.get('line'))} in "
                       f"{str(fr.get('name', '?'))[:200]}")
    return out[::-1]


def _pg_of(entry: Mapping[str, Any]) -> tuple[str | None, str | None]:
    pg = entry.get("process_group")
    if isinstance(pg, (list, tuple)) and pg:
        desc = str(pg[1])[:200] if len(pg) > 1 and isinstance(pg[1], str) else None
        return str(pg[0])[:200], desc
    pg_id = _int(entry.get("pg_id"))
    return (str(pg_id) if pg_id is not None else None), None


def _pg_config(doc: Mapping[str, Any]) -> list[list[Any]]:
    """`[name, desc, [global ranks]]` per recorded process group (gloo records an empty name)."""
    raw = doc.get("pg_config")
    out: list[list[Any]] = []
    if not isinstance(raw, Mapping):
        return out
    for key in sorted(raw, key=str)[:10_000]:
        cfg = raw[key]
        if not isinstance(cfg, Mapping):
            continue
        ranks_text = cfg.get("ranks")
        ranks = ([int(r) for r in re.findall(r"\d{1,9}", ranks_text[:1_000_000])]
                 if isinstance(ranks_text, str) else [])
        out.append([str(cfg.get("name", key))[:200], str(cfg.get("desc", ""))[:200], ranks])
    return out


def dump_events(doc: Mapping[str, Any], display: str, rank: int, origin: Origin,
                fmt: str = "pickle") -> list[Event]:
    """The `fr_dump`, `pg_status` and `fr_entry` events of one loaded dump written by global rank `rank`."""
    raw_entries = doc.get("entries")
    entries = raw_entries if isinstance(raw_entries, list) else []
    first = max(0, len(entries) - MAX_ENTRIES)
    out: list[Event] = []
    # pg_status is keyed by the local PG id; entries say which GUID (the cross-rank key) that id has.
    guid_of: dict[str, tuple[str | None, str | None]] = {}
    for entry in entries:
        if isinstance(entry, Mapping) and _int(entry.get("pg_id")) is not None:
            guid_of.setdefault(str(entry["pg_id"]), _pg_of(entry))

    def event(kind: str, line: int, text: str, fields: dict[str, Any],
              time: float | None = None) -> Event:
        return Event(kind=kind, ref=SourceRef(display, line), text=text[:MAX_TEXT], parser="flight",
                     rank=rank, host=origin.host, local_rank=origin.local_rank, attempt=origin.attempt,
                     time=time, fields=fields)

    version = str(doc.get("version"))[:32] if doc.get("version") is not None else None
    groups = _pg_config(doc)
    out.append(event("fr_dump", 1, f"flight recorder dump ({fmt}, version {version}, {len(entries)} entries)",
                     {"version": version, "format": fmt, "entries": len(entries), "pg_config": groups,
                      "comm_lib_version": str(doc.get("comm_lib_version", doc.get("nccl_version", "")))[:64]
                      or None}))
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
        out.append(_entry_event(entry, index, event))
    return out


def _entry_event(entry: Mapping[str, Any], index: int, event: Any) -> Event:
    pg, desc = _pg_of(entry)
    seq = _int(entry.get("collective_seq_id"))
    if seq is None:
        seq = _int(entry.get("seq_id"))       # format 1.x (torch 2.2-2.3): one counter per PG
    raw_frames = entry.get("frames")
    frames = _frames(raw_frames)
    inner = raw_frames[0] if isinstance(raw_frames, (list, tuple)) and raw_frames else None
    name = entry.get("profiling_name")
    sizes_in, sizes_out = _sizes(entry.get("input_sizes")), _sizes(entry.get("output_sizes"))
    peers = p2p_peers(name)
    created = _int(entry.get("time_created_ns"))
    duration = entry.get("duration_ms")
    fields: dict[str, Any] = {
        "pg": pg,
        "pg_desc": desc,
        "seq": seq,
        "p2p_seq": _int(entry.get("p2p_seq_id")),
        "is_p2p": bool(entry.get("is_p2p", peers is not None)),
        "op": op_name(name),
        "profiling_name": str(name)[:200] if name is not None else None,
        "record_id": _int(entry.get("record_id")),
        "numel_in": _numel(sizes_in),
        "numel_out": _numel(sizes_out),
        "input_sizes": sizes_in,
        "output_sizes": sizes_out,
        "input_dtypes": _strs(entry.get("input_dtypes")),
        "output_dtypes": _strs(entry.get("output_dtypes")),
        "p2p_src": peers[0] if peers else None,
        "p2p_dst": peers[1] if peers else None,
        "state": str(entry["state"])[:32] if entry.get("state") is not None else None,
        "retired": bool(entry["retired"]) if entry.get("retired") is not None else None,
        "timeout_ms": _int(entry.get("timeout_ms")),
        "time_created_ns": created,
        "time_started_ns": _int(entry.get("time_discovered_started_ns")),
        "time_completed_ns": _int(entry.get("time_discovered_completed_ns")),
        "duration_ms": (float(duration) if isinstance(duration, (int, float))
                        and not isinstance(duration, bool) else None),
        "frames": frames,
        "frame_file": str(inner.get("filename"))[:500] if isinstance(inner, Mapping) else None,
        "frame_line": _int(inner.get("line")) if isinstance(inner, Mapping) else None,
        "frame_func": str(inner.get("name"))[:200] if isinstance(inner, Mapping) else None,
    }
    stack = " <- ".join(frames[::-1][:8])        # innermost first: the stack of the call, as evidence
    text = (f"flight recorder entry {index}: pg={pg} seq={seq} {fields['profiling_name']} "
            f"input_sizes={sizes_in} dtypes={','.join(fields['input_dtypes'] or [])} state={fields['state']} "
            f"retired={fields['retired']}" + (f"; stack: {stack}" if stack else ""))
    time = created / 1e9 if created is not None and created > 0 else None
    ev: Event = event("fr_entry", index + 1, text, fields, time)
    return ev


def read_dump(data: bytes, display: str, rank: int, origin: Origin, fmt: str = "pickle",
              limits: Limits = DEFAULT_LIMITS) -> list[Event] | Skipped:
    """Every event of one dump's bytes, or a `Skipped` saying why the dump cannot be read."""
    doc = load_dump(data, fmt, limits)
    if isinstance(doc, str):
        return Skipped(display, doc)
    try:
        return dump_events(doc, display, rank, origin, fmt)
    except Exception as exc:  # logs never raise: an odd dump costs this file, not the run
        return Skipped(display, f"internal error while reading flight recorder dump ({type(exc).__name__})")
