"""Read a log a shipper stored as one JSON object per line as the plain lines its records hold.

Log shippers and exports keep each line a process printed as a field of a JSON record: Docker's json-file
logging driver writes `{"log":"<line>\\n","stream":"stdout","time":"<RFC 3339>"}` per line (Docker docs,
"JSON File logging driver"), `journalctl -o json` puts the line in `MESSAGE`, a Google Cloud Logging export
in `textPayload` (or `jsonPayload.message`), Loki's `logcli query --output=jsonl` in `line`, an
Elasticsearch hit (an `elasticdump` or `_search` export) in `_source.message`, a Datadog Logs API v2 log in
`attributes.message`, structlog's `JSONRenderer` in `event`, and other exports in `message`/`msg`/`@message`.
An API response that is one JSON document holds its records in one array: CloudWatch Logs'
`filter-log-events`/`get-log-events` in `events` (each `timestamp` in milliseconds since the epoch),
Elasticsearch's `_search` in `hits.hits`, Datadog's `GET /api/v2/logs/events` in `data`; those records are
read as if they stood one per line. The records' line is the log line whose formats log-formats.md
describes; the record's time and stream are written back in front of it as the container runtime's own
prefix (`<RFC 3339> <stream> F `, log-formats.md section 9.3) or as an ISO timestamp, which
`prefix.strip_prefixes` reads like any other.

A script's own logger may write such records too, between the launcher's plain lines (python-json-logger's
`JsonFormatter`, structlog's `JSONRenderer`): each record holds one message, the writer's rank when the script
bound it (`rank`, `global_rank`), and the formatted traceback of `logger.exception` in a field of its own
(python-json-logger `exc_info` and `stack_info`, structlog's `format_exc_info` `exception`, the stdlib's
`exc_text`). A record becomes its message's lines and then its traceback's, each behind the record's time and
a `[rank<r>]: ` envelope (the one torch puts on a rank's lines, log-formats.md section 1.1), so a traceback
logged that way reads like one printed. A record held in a shipper record's line (a JSON log line exported
by Cloud Logging) is read the same way, once.
"""

from __future__ import annotations

import codecs
import csv
import json
import time
from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from hanglens import lazyre as re

if TYPE_CHECKING:
    from hanglens.ingest.sources import ReadableStream

# Where each known shipper keeps the line, most specific first.
MESSAGE_PATHS: tuple[tuple[str, ...], ...] = (
    ("log",), ("MESSAGE",), ("textPayload",), ("jsonPayload", "message"), ("jsonPayload", "event"),
    ("_source", "message"), ("attributes", "message"), ("message",), ("msg",), ("@message",), ("line",),
    ("event",),
)
# Where logging libraries keep a record's formatted traceback (python-json-logger `exc_info`/`stack_info`,
# structlog `format_exc_info` -> `exception`, logging's `exc_text`).
TRACE_KEYS = ("exc_info", "exception", "exc_text", "stack_info")
RANK_KEYS = ("rank", "global_rank")
# A record of a logging library names its level or time: what tells one from a JSON value a script printed.
LOG_KEYS = ("level", "levelname", "severity", "lvl", "time", "timestamp", "@timestamp", "asctime")
# (`date` last: Fluent Bit's `json_date_key`, an epoch number by default.)
TIME_KEYS = ("time", "timestamp", "@timestamp", "__REALTIME_TIMESTAMP", "date")
# Where a record keeps its time besides its top level: beside a nested message (`_source`, `attributes`).
TIME_HOLDERS: tuple[tuple[str, ...], ...] = ((), ("_source",), ("attributes",))
# An epoch number read as a time only inside these years (2000-01-01 to 2100-01-01 UTC), by its magnitude
# in seconds, milliseconds (CloudWatch), microseconds (journald's `__REALTIME_TIMESTAMP`) or nanoseconds.
EPOCH_MIN, EPOCH_MAX = 946_684_800, 4_102_444_800
# The container runtime's stamp (`prefix.CRI_RE`) and a plain ISO stamp (`prefix.ISO_RE`).
CRI_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$")
ISO_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?$")
SHARE = 0.9        # of the sample's non-empty lines that must be records of one shape
MIN_RECORDS = 2
MAX_RECORD = 1 << 20  # a longer line is read as it is (a record that long is not a log line's)
MAX_WORLDS = 1 << 16   # writers whose record `world_size` is kept (`plain_lines`)
MAX_REVERSED = 256 << 20  # bytes of a newest-first export held to be read oldest first
# A launcher's per-line prefixes in front of a record (`torchrun --tee 3`'s `[default0]:`, torch's
# excepthook `[rank0]:`, a re-teed `[rank0]:[default0]:`, `srun --label`'s `0: `, a `[0]:` tag): the
# ones `prefix.strip_prefixes` reads, kept in front of the record's lines so their ranks stay.
LAUNCH_PREFIX_RE = re.compile(
    r'^(?:\[[A-Za-z_][\w-]{0,63}?\d{1,6}\]: ?|\[\d{1,6}\]: ?|\d{1,5}: ){1,3}(?=\{")')


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def launch_prefix(line: str) -> str:
    """The launcher prefixes in front of a JSON record on `line` (empty when there are none)."""
    m = LAUNCH_PREFIX_RE.match(line) if line[:1] == "[" or line[:1].isdigit() else None
    return m[0] if m else ""


def json_record(line: str, max_len: int = MAX_RECORD) -> dict[str, Any] | None:
    """`line` as a JSON object when it is one (at most `max_len` characters, blanks around it and a
    launcher's prefixes aside)."""
    s = line.strip()
    if s[:1] != "{":
        s = s[len(launch_prefix(s)):]
    if not (s.startswith("{") and s.endswith("}")) or len(s) > max_len:
        return None
    try:
        obj = json.loads(s)
    except (ValueError, RecursionError):   # (nested deeper than the decoder recurses: not a log record)
        return None
    return obj if isinstance(obj, dict) else None


def message_path(sample: list[str]) -> tuple[str, ...] | None:
    """The field holding the log line when (nearly) every non-empty sample line is a JSON record that has it
    as a string, or when the records among plain lines are log records (a level or time field) that have
    it, else None."""
    lines = [s for s in sample if s.strip()]
    if len(lines) < MIN_RECORDS:
        return None
    records = [r for r in (json_record(s) for s in lines) if r is not None]
    if len(records) < MIN_RECORDS:
        return None
    whole = len(records) >= SHARE * len(lines)
    for path in MESSAGE_PATHS:
        holding = [r for r in records if isinstance(_at(r, path), str)]
        if whole and len(holding) >= SHARE * len(lines):
            return path
        if len(holding) >= max(MIN_RECORDS, SHARE * len(records)) and all(
                any(k in r for k in LOG_KEYS) for r in holding):
            return path
    # An export whose log records keep the line in one of two fields (Cloud Logging: `textPayload` for a
    # plain line, `jsonPayload` for a line the agent parsed as JSON): the commoner field, the other read
    # per record (`plain_lines`).
    counts = {p: sum(isinstance(_at(r, p), str) for r in records) for p in MESSAGE_PATHS}
    held = sum(any(isinstance(_at(r, p), str) for p in MESSAGE_PATHS) and any(k in r for k in LOG_KEYS)
               for r in records)
    best = max(MESSAGE_PATHS, key=lambda p: counts[p])
    if whole and counts[best] and held >= SHARE * len(lines):
        return best
    return None


def newest_first(sample: list[str]) -> bool:
    """True when the sample's records run backwards in time: an export listed newest first (Loki's `logcli
    query` reads `--direction backward` by default, `gcloud logging read` lists newest entries first, a
    Kibana table sorts `@timestamp` descending). Equal times say nothing; one step forward in ten is noise."""
    return _runs_backwards([t for t in map(_time_of, sample) if t is not None])


def _runs_backwards(times: list[str]) -> bool:
    """Do these comparable time strings, in line order, mostly step backwards? Equal times say nothing; one
    step forward in ten is noise."""
    back = sum(a > b for a, b in pairwise(times))
    ahead = sum(a < b for a, b in pairwise(times))
    return back >= MIN_RECORDS and ahead * 10 <= back


def _epoch_iso(v: object) -> str | None:
    """An epoch time (a number, or a string of digits) as an ISO 8601 UTC time, else None."""
    if isinstance(v, str) and v.isdigit() and len(v) <= 19:
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    for scale in (1, 1_000, 1_000_000, 1_000_000_000):
        secs = v / scale
        if EPOCH_MIN <= secs < EPOCH_MAX:
            whole = int(secs)
            micros = round((secs - whole) * 1_000_000)
            if micros == 1_000_000:
                whole, micros = whole + 1, 0
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros:06d}Z"
    return None


# A text export's line stamp: `kubectl logs --timestamps` / `docker logs -t` / logcli's default output / a
# journal's short-iso time, behind `kubectl --prefix`'s source at most (`text_newest_first`).
TEXT_TIME_RE = re.compile(
    r"^(?:\[[a-z]{2,32}/[^\]\s]{1,300}\] )?(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)")


def text_newest_first(sample: list[str]) -> bool:
    """True when the sample's stamped text lines run backwards in time (logcli's default output reads
    `--direction backward`; a console export listed newest first). Lines without a stamp say nothing."""
    return _runs_backwards([m["ts"].replace("T", " ").replace(",", ".")
                            for m in map(TEXT_TIME_RE.match, sample) if m])


def _record_time(r: dict[str, Any]) -> str | None:
    """A record's time: the first of TIME_KEYS at its top level or beside a nested message (TIME_HOLDERS)
    holding a string, as written, or an epoch number, as an ISO time."""
    for holder in TIME_HOLDERS:
        h = _at(r, holder) if holder else r
        if not isinstance(h, dict):
            continue
        for k in TIME_KEYS:
            v = h.get(k)
            if isinstance(v, str) and not v.isdigit():
                return v
            iso = _epoch_iso(v)
            if iso is not None:
                return iso
    return None


def _time_of(line: str) -> str | None:
    r = json_record(line) if line.strip() else None
    t = _record_time(r) if r is not None else None
    return t if t is not None and ISO_TIME_RE.match(t) else None


class _HeldStream:
    """A stream read whole, up to `cap` bytes, and handed on as `transform` makes it; a longer stream is read
    as it is written (the whole of it would be held)."""

    def __init__(self, stream: ReadableStream, cap: int = MAX_REVERSED) -> None:
        self.stream, self.cap = stream, cap
        self.out: list[bytes] | None = None

    def transform(self, blob: bytes) -> list[bytes]:
        raise NotImplementedError

    def read(self, size: int = -1, /) -> bytes:
        if self.out is None:
            chunks, held = [], 0
            while held <= self.cap:
                data = self.stream.read(1 << 20)
                if not data:
                    break
                chunks.append(data)
                held += len(data)
            blob = b"".join(chunks)
            self.out = self.transform(blob) if held <= self.cap else [blob]
        if self.out:
            return self.out.pop(0)
        return self.stream.read(size)


class ReversedLines(_HeldStream):
    """A stream's lines in reverse order (a newest-first export read oldest first), UTF-8 bytes. The whole
    stream is held, so only up to `cap` bytes are reversed; a longer stream is read as it is after them."""

    def transform(self, blob: bytes) -> list[bytes]:
        lines = blob.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        lines.reverse()
        return [b"\n".join(lines) + b"\n"] if lines else []


def _rank_of(r: dict[str, Any]) -> int | None:
    for key in RANK_KEYS:
        v = r.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1_000_000:
            return v
        if isinstance(v, str) and v.isdigit() and len(v) <= 6:
            return int(v)
    return None


def _inner_path(r: dict[str, Any]) -> tuple[str, ...] | None:
    """The message field of a log record held in another record's line (one with a level or time field)."""
    if not any(k in r for k in LOG_KEYS):
        return None
    return next((p for p in MESSAGE_PATHS if isinstance(_at(r, p), str)), None)


def plain_lines(line: str, path: tuple[str, ...], nested: bool = True,
                worlds: set[tuple[int | None, int]] | None = None) -> list[str]:
    """The log lines one physical line holds: a record's message and traceback (one line per line they
    hold, each behind the record's time and stream, the launcher's prefixes it stood behind and its writer's
    `[rank<r>]: ` unless those name the rank), or the line itself when it is not such a record. A record's
    own `world_size` field (python-json-logger's static fields) is kept as a `world_size=<n>` line of its
    writer, once per writer and size in `worlds` (the sizes already kept)."""
    outer = launch_prefix(line) if line[:1] != "{" else ""
    r = json_record(line[len(outer):]) if line[:1] == "{" or outer or line.lstrip()[:1] == "{" else None
    msg = _at(r, path) if r is not None else None
    if not isinstance(msg, str) and r is not None and any(k in r for k in LOG_KEYS):
        # a log record of the same export keeping its line in another field (`message_path`)
        path = next((p for p in MESSAGE_PATHS if isinstance(_at(r, p), str)), path)
        msg = _at(r, path)
    if not isinstance(msg, str):
        return [line]
    if msg.endswith("\n"):
        msg = msg[:-1]
    msg = msg.removesuffix("\r")
    inner = json_record(msg) if nested and msg[:1] == "{" else None
    inner_path = _inner_path(inner) if inner is not None else None
    parts = plain_lines(msg, inner_path, nested=False) if inner_path is not None else msg.split("\n")
    for key in TRACE_KEYS:
        v = r.get(key) if r is not None else None
        if isinstance(v, str) and v.strip() and v not in msg:
            parts.extend(v.rstrip("\n").split("\n"))
    t = _record_time(r) if r is not None else None
    stream = r.get("stream") if r is not None else None
    if t is not None and stream in ("stdout", "stderr") and CRI_TIME_RE.match(t):
        lead = f"{t} {stream} F "
    elif t is not None and ISO_TIME_RE.match(t):
        lead = f"{t} "
    else:
        lead = ""
    lead += outer
    rank = _rank_of(r) if r is not None else None
    holder = _at(r, path[:-1]) if r is not None and len(path) > 1 else None
    if rank is None and isinstance(holder, dict):  # a parsed payload's own field (`jsonPayload.rank`)
        rank = _rank_of(holder)
    if rank is not None and "[rank" not in outer:
        lead += f"[rank{rank}]: "
    world = r.get("world_size") if r is not None and worlds is not None else None
    if isinstance(world, int) and not isinstance(world, bool) and 0 < world < 1_000_000 \
            and worlds is not None and (rank, world) not in worlds and len(worlds) < MAX_WORLDS \
            and "world_size" not in msg:
        worlds.add((rank, world))
        parts.append(f"world_size={world}")
    return [lead + part for part in parts]


class JsonLinesText:
    """A stream of JSON records (one per line) read as the plain log lines they hold, UTF-8 bytes."""

    def __init__(self, stream: ReadableStream, path: tuple[str, ...]) -> None:
        self.stream, self.path = stream, path
        self.carry = b""
        self.done = False
        self.worlds: set[tuple[int | None, int]] = set()

    def read(self, size: int = -1, /) -> bytes:
        while not self.done:
            data = self.stream.read(size)
            if not data:
                self.done = True
                rest, self.carry = self.carry, b""
                return self._convert(rest) if rest else b""
            buf = self.carry + data
            cut = buf.rfind(b"\n")
            if cut < 0:
                self.carry = buf
                continue
            self.carry = buf[cut + 1:]
            return self._convert(buf[:cut]) + b"\n"
        return b""

    def _convert(self, block: bytes) -> bytes:
        if b"{" not in block:
            return block  # no record here (a mixed console's plain stretch): as it is
        out: list[str] = []
        for b in block.split(b"\n"):
            out.extend(plain_lines(b.decode("utf-8", "replace"), self.path, worlds=self.worlds))
        return "\n".join(out).encode("utf-8", "replace")


# -- whole-document exports, read as one JSON record per line --------------------------------------------
# `gcloud logging read --format=json` prints a JSON array of LogEntry objects, indented; Kibana / Grafana
# table downloads are CSV with a header row naming a time and a message column.
ARRAY_HEAD_RE = re.compile(r"^\s*\[\s*\{")
# (Azure Monitor's ContainerLogV2 `LogMessage` and ContainerLog `LogEntry`, its time `TimeGenerated`, which
# the portal's CSV export heads `TimeGenerated [UTC]`.)
CSV_MESSAGE_COLUMNS = ("message", "line", "log", "textpayload", "_raw", "msg", "@message", "logmessage",
                       "logentry")
CSV_TIME_COLUMNS = ("timestamp", "time", "@timestamp", "_time", "date", "receivetimestamp",
                    "timegenerated [utc]", "timegenerated")
CSV_HEADER_RE = re.compile(
    r'^\ufeff?(?:"[\w@. \[\]-]{1,64}"|[\w@. \[\]-]{1,64})'
    r'(?:,(?:"[\w@. \[\]-]{1,64}"|[\w@. \[\]-]{1,64})){1,63}$')
CHUNK = 1 << 16
# The record arrays of API responses that are one JSON document (CloudWatch Logs `events`, Elasticsearch
# `_search` `hits.hits`, Datadog Logs API v2 `data`), most specific first.
DOCUMENT_ARRAYS: tuple[tuple[str, ...], ...] = (("hits", "hits"), ("events",), ("data",))
DOCUMENT_HEAD_RE = re.compile(r"^\s*\{")
DOCUMENT_ARRAY_RE = re.compile(r'"(?P<key>hits|events|data)"\s*:\s*\[\s*(?=\{)')


class JsonArrayLines:
    """A JSON array of objects (however indented) read as one compact JSON object per line, UTF-8 bytes. An
    object longer than MAX_RECORD, or text that is not such an array, ends the conversion: the rest is read
    as it is."""

    def __init__(self, stream: ReadableStream) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.buf, self.pos = "", 0
        self.started = self.done = self.raw = False
        self.json = json.JSONDecoder()

    def _more(self) -> bool:
        data = self.stream.read(CHUNK)
        self.buf = self.buf[self.pos:] + self.decoder.decode(data, final=not data)
        self.pos = 0
        return bool(data)

    def read(self, size: int = -1, /) -> bytes:
        if self.raw:
            rest, self.buf, self.pos = self.buf[self.pos:], "", 0
            return rest.encode("utf-8") if rest else self.stream.read(size)
        out: list[str] = []
        held = 0   # characters in `out`
        while not self.done and held < CHUNK:
            s, i = self.buf, self.pos
            while i < len(s) and (s[i].isspace() or s[i] == "," or (s[i] == "[" and not self.started)):
                self.started |= s[i] == "["
                i += 1
            self.pos = i
            if i >= len(s):
                if not self._more():
                    self.done = True
                continue
            if s[i] == "]":
                self.done = True
                break
            try:
                obj, end = self.json.raw_decode(s, i)
            except ValueError:
                if len(s) - i > MAX_RECORD or not self._more():
                    self.raw = self.done = True
                continue
            out.append(json.dumps(obj, ensure_ascii=False) + "\n")
            held += len(out[-1])
            self.pos = end
        if out:
            return "".join(out).encode("utf-8")
        return self.read(size) if self.raw else b""


class CsvLines:
    """A CSV export with a header row read as one JSON record per row (`{"timestamp": ..., "message": ...}`),
    UTF-8 bytes; a quoted message may span lines."""

    def __init__(self, stream: ReadableStream, message: int, time: int | None) -> None:
        self.stream, self.message, self.time = stream, message, time
        self.rows = csv.reader(self._lines())
        next(self.rows, None)  # the header
        self.done = False

    def _lines(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        carry = ""
        while True:
            data = self.stream.read(CHUNK)
            text = carry + decoder.decode(data, final=not data)
            parts = text.split("\n")
            carry = parts.pop()
            for p in parts:
                yield p + "\n"
            if not data:
                if carry:
                    yield carry
                return

    def read(self, size: int = -1, /) -> bytes:
        out: list[str] = []
        held = 0   # characters in `out`
        while not self.done and held < CHUNK:
            try:
                row = next(self.rows, None)
            except csv.Error:  # a field past the csv module's limit: skipped
                continue
            if row is None:
                self.done = True
                break
            if len(row) <= self.message:
                continue
            rec = {"message": row[self.message]}
            if self.time is not None and self.time < len(row):
                rec["timestamp"] = export_time(row[self.time])
            out.append(json.dumps(rec, ensure_ascii=False) + "\n")
            held += len(out[-1])
        return "".join(out).encode("utf-8")


# Kibana's default `dateFormat` (`MMM D, YYYY @ HH:mm:ss.SSS`, Advanced Settings), as a Discover CSV report
# writes `@timestamp`: read as an ISO time without a zone (the browser's).
KIBANA_TIME_RE = re.compile(
    r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?P<day>\d{1,2}), (?P<year>\d{4}) @ "
    r"(?P<hms>\d\d:\d\d:\d\d(?:\.\d{1,9})?)$")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


# The Azure portal's CSV export of a Log Analytics query writes a `datetime` column in the portal's en-US
# display form, `M/D/YYYY, h:mm:ss.fff AM|PM`, in UTC (the column's header says `[UTC]`).
AZURE_TIME_RE = re.compile(
    r"^(?P<mon>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4}), (?P<h>\d{1,2}):(?P<ms>\d\d:\d\d(?:\.\d{1,9})?) "
    r"(?P<half>AM|PM)$")


def export_time(value: str) -> str:
    """`value` as an ISO time when it is in Kibana's default date format or the Azure portal's export form,
    else as it is."""
    m = KIBANA_TIME_RE.match(value) if value[:1].isalpha() else None
    if m is not None:
        return f"{m['year']}-{MONTHS.index(m['mon']) + 1:02d}-{int(m['day']):02d}T{m['hms']}"
    m = AZURE_TIME_RE.match(value) if value[:1].isdigit() and "/" in value[:3] else None
    if m is not None:
        hour = int(m["h"]) % 12 + (12 if m["half"] == "PM" else 0)
        return f"{m['year']}-{int(m['mon']):02d}-{int(m['day']):02d}T{hour:02d}:{m['ms']}Z"
    return value


def csv_columns(first_line: str) -> tuple[int, int | None] | None:
    """The message and time columns named by a CSV header row, else None."""
    if not CSV_HEADER_RE.match(first_line):
        return None
    names = [n.strip().strip('"').lower() for n in next(csv.reader([first_line.lstrip("\ufeff")]))]
    msg = next((names.index(c) for c in CSV_MESSAGE_COLUMNS if c in names), None)
    if msg is None:
        return None
    return msg, next((names.index(c) for c in CSV_TIME_COLUMNS if c in names), None)


def document_array(head: str) -> tuple[str, ...] | None:
    """The path of the record array (DOCUMENT_ARRAYS) of a JSON document that starts `head`, when its first
    record holds a log line (MESSAGE_PATHS), else None. A file of one record per line is not a document."""
    if not DOCUMENT_HEAD_RE.match(head):
        return None
    lines = [s for s in head.split("\n", 3)[:3] if s.strip()]
    if len(lines) >= 2 and json_record(lines[0]) is not None:
        return None
    decoder = json.JSONDecoder()
    for path in DOCUMENT_ARRAYS:
        for m in DOCUMENT_ARRAY_RE.finditer(head[:CHUNK]):
            if m["key"] != path[-1]:
                continue
            try:
                first, _ = decoder.raw_decode(head, m.end())
            except ValueError:
                continue
            if isinstance(first, dict) and any(isinstance(_at(first, p), str) for p in MESSAGE_PATHS):
                return path
    return None


class JsonDocumentLines(_HeldStream):
    """The records of a JSON document's record array (`document_array`) as one compact JSON object per line,
    UTF-8 bytes. The whole document is held, so only up to MAX_REVERSED bytes; a longer document, or one that
    does not parse, is read as it is."""

    def __init__(self, stream: ReadableStream, path: tuple[str, ...]) -> None:
        super().__init__(stream)
        self.path = path

    def transform(self, blob: bytes) -> list[bytes]:
        try:
            records = _at(json.loads(blob.decode("utf-8", "replace")), self.path)
        except (ValueError, RecursionError):
            records = None
        if isinstance(records, list):
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records if isinstance(r, dict))
            return [text.encode("utf-8")] if text else []
        return [blob] if blob else []


def export_kind(head: bytes) -> str | tuple[str, ...] | tuple[int, int | None] | None:
    """"array" when the file's first bytes open a JSON array of objects, ("document", <path>...) when they
    open a JSON document with a record array (`document_array`), a CSV header's (message, time) columns, else
    None."""
    text = head[:4096].decode("utf-8", "replace")
    if ARRAY_HEAD_RE.match(text):
        return "array"
    if text.lstrip()[:1] == "{":
        doc = document_array(head[:CHUNK].decode("utf-8", "replace"))
        return ("document", *doc) if doc is not None else None
    return csv_columns(text.split("\n", 1)[0].removesuffix("\r"))
