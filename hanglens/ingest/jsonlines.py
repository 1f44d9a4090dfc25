"""Read a log a shipper stored as one JSON object per line as the plain lines its records hold.

Log shippers and exports keep each line a process printed as a field of a JSON record: Docker's json-file
logging driver writes `{"log":"<line>\\n","stream":"stdout","time":"<RFC 3339>"}` per line (Docker docs,
"JSON File logging driver"), `journalctl -o json` puts the line in `MESSAGE`, a Google Cloud Logging export
in `textPayload` (or `jsonPayload.message`), and other exports in `message`/`msg`/`@message`. The records'
line is the log line whose formats log-formats.md describes; the record's time and stream are written back
in front of it as the container runtime's own prefix (`<RFC 3339> <stream> F `, log-formats.md section 9.3)
or as an ISO timestamp, which `prefix.strip_prefixes` reads like any other.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hanglens import lazyre as re

if TYPE_CHECKING:
    from hanglens.ingest.sources import ReadableStream

# Where each known shipper keeps the line, most specific first.
MESSAGE_PATHS: tuple[tuple[str, ...], ...] = (
    ("log",), ("MESSAGE",), ("textPayload",), ("jsonPayload", "message"), ("message",), ("msg",),
    ("@message",),
)
TIME_KEYS = ("time", "timestamp", "@timestamp")
# The container runtime's stamp (`prefix.CRI_RE`) and a plain ISO stamp (`prefix.ISO_RE`).
CRI_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$")
ISO_TIME_RE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?$")
SHARE = 0.9        # of the sample's non-empty lines that must be records of one shape
MIN_RECORDS = 2
MAX_RECORD = 1 << 20  # a longer line is read as it is (a record that long is not a log line's)


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def json_record(line: str, max_len: int = MAX_RECORD) -> dict[str, Any] | None:
    """`line` as a JSON object when it is one (at most `max_len` characters, blanks around it aside)."""
    s = line.strip()
    if not (s.startswith("{") and s.endswith("}")) or len(s) > max_len:
        return None
    try:
        obj = json.loads(s)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def message_path(sample: list[str]) -> tuple[str, ...] | None:
    """The field holding the log line when (nearly) every non-empty sample line is a JSON record that has it
    as a string, else None."""
    lines = [s for s in sample if s.strip()]
    if len(lines) < MIN_RECORDS:
        return None
    records = [r for r in (json_record(s) for s in lines) if r is not None]
    if len(records) < max(MIN_RECORDS, SHARE * len(lines)):
        return None
    for path in MESSAGE_PATHS:
        if sum(isinstance(_at(r, path), str) for r in records) >= SHARE * len(lines):
            return path
    return None


def plain_lines(line: str, path: tuple[str, ...]) -> list[str]:
    """The log lines one physical line holds: a record's message (one line per line it holds, each behind
    the record's time and stream), or the line itself when it is not such a record."""
    r = json_record(line)
    msg = _at(r, path) if r is not None else None
    if not isinstance(msg, str):
        return [line]
    if msg.endswith("\n"):
        msg = msg[:-1]
    msg = msg.removesuffix("\r")
    t = next((v for k in TIME_KEYS if isinstance(v := r.get(k), str)), None) if r is not None else None
    stream = r.get("stream") if r is not None else None
    if t is not None and stream in ("stdout", "stderr") and CRI_TIME_RE.match(t):
        lead = f"{t} {stream} F "
    elif t is not None and ISO_TIME_RE.match(t):
        lead = f"{t} "
    else:
        lead = ""
    return [lead + part for part in msg.split("\n")]


class JsonLinesText:
    """A stream of JSON records (one per line) read as the plain log lines they hold, UTF-8 bytes."""

    def __init__(self, stream: ReadableStream, path: tuple[str, ...]) -> None:
        self.stream, self.path = stream, path
        self.carry = b""
        self.done = False

    def read(self, size: int = -1, /) -> bytes:
        while not self.done:
            data = self.stream.read(size)
            if not data:
                self.done = True
                rest, self.carry = self.carry, b""
                return self._convert([rest]) if rest else b""
            buf = self.carry + data
            cut = buf.rfind(b"\n")
            if cut < 0:
                self.carry = buf
                continue
            self.carry = buf[cut + 1:]
            out = self._convert(buf[:cut].split(b"\n"))
            return out + b"\n"
        return b""

    def _convert(self, lines: list[bytes]) -> bytes:
        out: list[str] = []
        for b in lines:
            out.extend(plain_lines(b.decode("utf-8", "replace"), self.path))
        return "\n".join(out).encode("utf-8", "replace")
