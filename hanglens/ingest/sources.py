"""Find the inputs under the given paths and open them as byte streams, decompressing and unpacking in place.

Nothing is ever extracted to disk: compressed files are decompressed while read, archive members are
streamed out of their archive. Every input that cannot be read as a log becomes a `Skipped` with a
reason instead of an exception.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import io
import lzma
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Protocol

import zstandard

from hanglens.errors import InputError
from hanglens.ingest.flight import dump_format
from hanglens.limits import DEFAULT_LIMITS, Limits, human_bytes
from hanglens.model import Skipped

SNIFF = 8192                 # bytes looked at to decide compression, archive type and binary-ness
GLOB_CHARS = frozenset("*?[")

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gz"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zst"),
)
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"\x7fELF", "ELF executable"),
    (b"\x93NUMPY", "NumPy array"),
    (b"\x89HDF", "HDF5 file"),
    (b"RIFF", "RIFF media"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"Rar!", "RAR archive"),
)
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\x0c\x08\x1b") + b"\x7f"


class ReadableStream(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Unit:
    """One input on disk: `fs_path` to open, `display` shown to users, `rel` the path origins come from."""

    fs_path: str
    display: str
    rel: str
    size: int


@dataclass(frozen=True, slots=True)
class Locator:
    """How to reach one log again (for evidence context): the unit on disk and the member inside it."""

    fs_path: str
    member: str | None = None


class Sources(MutableMapping[str, Locator]):
    """Display path -> Locator of every file a job read (for evidence context).

    A plain file whose path on disk is a folder and its display path (every file of a folder given on the
    command line) keeps only that folder's number: 16,384 ranks' 32,768 files held a Locator and a second
    copy of their path each, 5.5 MiB of the job's memory until the end.
    """

    __slots__ = ("_at", "_folder_of", "_folders")

    def __init__(self, items: Mapping[str, Locator] | None = None) -> None:
        self._at: dict[str, Locator | int] = {}
        self._folders: list[str] = []
        self._folder_of: dict[str, int] = {}
        for k, v in (items or {}).items():
            self[k] = v

    def __setitem__(self, display: str, loc: Locator) -> None:
        path = loc.fs_path
        if loc.member is None and len(path) > len(display) and path.endswith(display) \
                and path[-len(display) - 1] in (os.sep, "/"):
            folder = path[: -len(display)]
            i = self._folder_of.setdefault(folder, len(self._folders))
            if i == len(self._folders):
                self._folders.append(folder)
            self._at[display] = i
        else:
            self._at[display] = loc

    def __getitem__(self, display: str) -> Locator:
        v = self._at[display]
        return Locator(self._folders[v] + display) if isinstance(v, int) else v

    def __delitem__(self, display: str) -> None:
        del self._at[display]

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __repr__(self) -> str:
        return f"Sources({dict(self)!r})"


class LimitReached(OSError):
    """A decompressed stream reached a named limit; `Head` ends the stream with this as its error."""


class ByteBudget:
    """Decompressed bytes one job may still read, all inputs together (`max_job_bytes`).

    `shared` (a `multiprocessing.Value('q')`) makes worker processes draw from one budget.
    """

    def __init__(self, total: int, shared: Any = None) -> None:
        self.total = total
        self._left = total
        self._shared = shared

    def take(self, n: int) -> bool:
        """Spend `n` bytes; False once the budget is exhausted."""
        if self._shared is not None:
            with self._shared.get_lock():
                self._shared.value -= n
                return bool(self._shared.value >= 0)
        self._left -= n
        return self._left >= 0


RATIO_FLOOR = 64 << 20  # the expansion ratio is judged only past this many decompressed bytes


class Counting:
    """A raw byte stream that counts what it hands out (the compressed bytes a decompressor consumed)."""

    def __init__(self, raw: ReadableStream) -> None:
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        out = self._raw.read(size)
        self.count += len(out)
        return out

    def readable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # seek/tell/peek of the wrapped file, for the codecs
        return getattr(self._raw, name)


class Capped:
    """Decompressed bytes of one input, stopped at `max_member_bytes`, `max_ratio` and the job's budget.

    `consumed` says how many compressed bytes produced them so far (for the ratio). Reaching a limit
    raises LimitReached, whose text names the limit and its flag; `Head` turns it into the input's
    `error`, so the lines before are kept and the rest of the input becomes a skip.
    """

    def __init__(self, inner: ReadableStream, consumed: Callable[[], int], limits: Limits,
                 budget: ByteBudget | None) -> None:
        self._inner = inner
        self._consumed = consumed
        self._limits = limits
        self._budget = budget
        self.count = 0
        self.member_cap = True  # off for a tar stream: its members are capped one by one
        self._stop: LimitReached | None = None  # raised by the next read, once the data before it is out

    def read(self, size: int = -1, /) -> bytes:
        if self._stop is not None:
            raise self._stop
        lim = self._limits
        if size < 0 or size > 1 << 20:
            size = 1 << 20  # never one unbounded read: the caps are checked between chunks
        out = self._inner.read(size)
        self.count += len(out)
        over = 0
        if self.member_cap and self.count > lim.max_member_bytes:
            over = self.count - lim.max_member_bytes
            self._stop = LimitReached(f"decompressed size passed {human_bytes(lim.max_member_bytes)} "
                                      f"(limit max_member_bytes, --limit max_member_bytes=BYTES)")
        elif self.count > RATIO_FLOOR:
            packed = max(1, self._consumed())
            if self.count > lim.max_ratio * packed:
                got, src = human_bytes(self.count), human_bytes(packed)
                self._stop = LimitReached(f"expands more than {lim.max_ratio}:1 ({got} from {src}; "
                                          "limit max_ratio, --limit max_ratio=N)")
        if self._budget is not None and not self._budget.take(len(out)) and self._stop is None:
            self._stop = LimitReached(f"the job's inputs passed {human_bytes(self._budget.total)} "
                                      "decompressed (limit max_job_bytes, --limit max_job_bytes=BYTES)")
        return out[: len(out) - over] if over else out


class Head:
    """A stream whose first bytes were already read for sniffing; `read` replays them first."""

    def __init__(self, head: bytes, rest: ReadableStream) -> None:
        self._head = head
        self._rest = rest
        self.error: str | None = None
        self.count = 0        # bytes handed out by `read` (the decompressed size of the input)

    def read(self, size: int = -1, /) -> bytes:
        out = self._read(size)
        self.count += len(out)
        return out

    def _read(self, size: int) -> bytes:
        if self._head:
            if size < 0 or size >= len(self._head):
                out, self._head = self._head, b""
                if size < 0:
                    return out + self._safe_read(-1)
                return out
            out, self._head = self._head[:size], self._head[size:]
            return out
        return self._safe_read(size)

    def _safe_read(self, size: int) -> bytes:
        """Read from the underlying stream; a corrupt or truncated stream ends it (and says why)."""
        if self.error is not None:
            return b""
        try:
            return self._rest.read(size)
        except LimitReached as exc:
            self.error = str(exc)
            return b""
        except (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError, tarfile.TarError,
                zipfile.BadZipFile, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return b""


def codec_of(head: bytes) -> str | None:
    """Compression format named by the magic bytes at the start of `head`, or None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def is_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


def is_zip(head: bytes) -> bool:
    return head.startswith((b"PK\x03\x04", b"PK\x05\x06"))


def binary_reason(head: bytes) -> str | None:
    """Why `head` (first bytes of an uncompressed input) is not a text log, or None when it looks like text.

    NUL bytes alone do not make a file binary: logs of crashed processes often end in NUL padding.
    """
    for magic, name in _BINARY_MAGIC:
        if head.startswith(magic):
            return f"binary file ({name})"
    if head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05"):
        return "binary file (Python pickle)"
    if len(head) > 10 and head[8:10] == b'{"' and head[:8].count(b"\x00") >= 4:
        return "binary file (safetensors)"
    if not head:
        return None
    text = head.replace(b"\x00", b"")
    if not text:
        return "binary file (only NUL bytes)"
    controls = len(text) - len(text.translate(None, _CONTROL))
    if controls > 0.1 * len(text):
        return "binary file (control bytes)"
    if text.isascii():   # (most logs: nothing to decode)
        return None
    invalid = text.decode("utf-8", "replace").count("\ufffd") - text.decode("utf-8", "ignore").count("\ufffd")
    if invalid > 0.3 * len(text):
        return "binary file (not UTF-8 text)"
    return None


def decompress(codec: str, raw: BinaryIO) -> ReadableStream:
    """A streaming reader of `raw` decompressed with `codec` (gz, bz2, xz or zst)."""
    if codec == "gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if codec == "bz2":
        return bz2.BZ2File(raw, mode="rb")
    if codec == "xz":
        return lzma.LZMAFile(raw, mode="rb")
    # Small reads keep the compressed bytes consumed close to the output, for the expansion ratio.
    return zstandard.ZstdDecompressor().stream_reader(raw, read_size=16384, read_across_frames=True,
                                                      closefd=False)


def unsafe_member(name: str) -> str | None:
    """Why an archive member name must not be read (absolute, parent references), or None."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "archive member with an absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "archive member with '..' in its path"
    return None


def tar_member_kind(info: tarfile.TarInfo) -> str | None:
    """Why a tar member is not a regular file (links, devices, fifos), or None for a regular file."""
    if info.isreg():
        return None
    if info.issym() or info.islnk():
        return "link in archive (not followed)"
    if info.ischr() or info.isblk():
        return "device file in archive"
    if info.isfifo():
        return "fifo in archive"
    return "not a regular file in archive"


def zip_member_kind(info: zipfile.ZipInfo) -> str | None:
    mode = info.external_attr >> 16
    if mode and stat.S_ISLNK(mode):
        return "link in archive (not followed)"
    if info.flag_bits & 0x1:
        return "encrypted archive member"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        # zipfile inflates a bzip2 or lzma member a whole compressed read at a time, with no bound on the
        # output: one read of a bzip2 bomb is gigabytes before any limit can be checked.
        method = _ZIP_METHODS.get(info.compress_type, f"method {info.compress_type}")
        return f"zip member compressed with {method} (only stored and deflated members are read)"
    return None


_ZIP_METHODS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma", 9: "deflate64", 93: "zstd"}


def is_checkpoint_zip(names: list[str]) -> bool:
    """torch.save writes a zip whose members include `<name>/data.pkl`."""
    return any(n == "data.pkl" or n.endswith("/data.pkl") for n in names)


# -- discovery -----------------------------------------------------------------------------------
def _kind_reason(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "not a regular file (fifo)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (device)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (socket)"
    return "not a regular file"


def _expand(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.lexists(p) or not (GLOB_CHARS & set(p)):
            if not os.path.lexists(p):
                raise InputError("no such file or folder", path=p)
            out.append(p)
            continue
        matches = sorted(glob.glob(p, recursive=True))
        if not matches:
            raise InputError("no file matches this pattern", path=p)
        out.extend(matches)
    return out


def _display_base(roots: list[str]) -> str:
    """The folder display paths are relative to: the root itself for one folder, else the common parent."""
    absroots = [os.path.abspath(r) for r in roots]
    if len(absroots) == 1 and os.path.isdir(absroots[0]):
        return absroots[0]
    parents = [os.path.dirname(a) for a in absroots]
    try:
        return os.path.commonpath(parents)
    except ValueError:
        return "/"


def _rel(path: str, base: str) -> str:
    rel = os.path.relpath(path, base)
    return Path(rel).as_posix() if not rel.startswith("..") else Path(path).as_posix()


def discover(paths: list[str],
             found: Callable[[int], None] | None = None) -> tuple[list[Unit], list[Skipped]]:
    """Every regular file under `paths` (files, folders, globs), sorted by display path, and what was skipped.

    Symbolic links to files and folders are followed once (a folder reached twice is not walked again,
    which also ends symlink loops); fifos, devices and sockets are skipped without being opened.
    `found` is told each file's size as it is found (the reader starts its worker processes while few are
    known, `hanglens.ingest._Pool`).
    """
    roots = _expand([os.fspath(p) for p in paths])
    base = _display_base(roots)
    units: dict[str, Unit] = {}
    skipped: list[Skipped] = []
    seen_files: dict[tuple[int, int], str] = {}
    seen_dirs: set[tuple[int, int]] = set()

    def add_file(path: str, display: str | None = None) -> None:
        if display is None or display.startswith(".."):
            display = _rel(path, base)
        try:
            st = os.stat(path)
        except OSError as exc:
            reason = "symlink loop" if exc.errno == 40 else (
                "broken symlink" if os.path.islink(path) else f"cannot read: {exc.strerror or exc}")
            skipped.append(Skipped(display, reason))
            return
        if stat.S_ISDIR(st.st_mode):
            walk(path, display)
            return
        if not stat.S_ISREG(st.st_mode):
            skipped.append(Skipped(display, _kind_reason(st.st_mode)))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_files:
            skipped.append(Skipped(display, f"same file as {seen_files[key]}"))
            return
        seen_files[key] = display
        units[display] = Unit(fs_path=path, display=display, rel=display, size=st.st_size)
        if found is not None:
            found(st.st_size)

    def walk(top: str, shown: str) -> None:
        """`top` (shown as `shown`, its `_rel`): each entry's display path is `shown` and its name, as
        `_rel` would give it (a folder of thousands of files is not measured against `base` file by file)."""
        try:
            st = os.stat(top)
        except OSError as exc:
            skipped.append(Skipped(shown, f"cannot read: {exc.strerror or exc}"))
            return
        if (st.st_dev, st.st_ino) in seen_dirs:
            return
        seen_dirs.add((st.st_dev, st.st_ino))
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(shown, f"cannot list folder: {exc.strerror or exc}"))
            return
        lexical = not (shown.startswith("..") or os.path.isabs(shown))
        prefix = "" if shown == "." else shown + "/"
        for entry in entries:
            add_file(entry.path, prefix + entry.name if lexical else None)

    for root in roots:
        add_file(root)
    skipped.sort(key=lambda s: (s.path, s.reason))
    return [units[k] for k in sorted(units)], skipped


# -- opening ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Opened:
    """A log ready to read: its display path, the path origins are read from, and its byte stream."""

    display: str
    rel: str
    stream: Head
    locator: Locator


def open_unit(unit: Unit, member: str | None = None, *, limits: Limits = DEFAULT_LIMITS,
              budget: ByteBudget | None = None) -> Iterator[Opened | Skipped]:
    """Yield every log inside `unit` (the file itself, or each member of an archive) as an open stream.

    With `member`, only that archive member is yielded (used to re-read evidence context). Decompressed
    streams stop at the `limits` (and draw on the job's `budget`); the reader then records why.
    """
    try:
        raw = open(unit.fs_path, "rb")  # noqa: SIM115 - closed in the finally below, after the caller read it
    except OSError as exc:
        yield Skipped(unit.display, f"cannot read: {exc.strerror or exc}")
        return
    try:
        yield from _open_stream(unit, raw, member, limits, budget)
    finally:
        raw.close()


def _open_stream(unit: Unit, raw: BinaryIO, member: str | None, limits: Limits,
                 budget: ByteBudget | None) -> Iterator[Opened | Skipped]:
    try:
        first = raw.read(SNIFF)
    except OSError as exc:
        yield Skipped(unit.display, f"cannot read: {exc.strerror or exc}")
        return
    if is_zip(first):
        raw.seek(0)
        yield from _open_zip(unit, raw, member, limits, budget)
        return
    codec = codec_of(first)
    stream: ReadableStream = raw
    capped: Capped | None = None
    head, error = first, None   # (a plain file: the bytes sniffed are its head, not read again)
    if codec is not None:
        raw.seek(0)
        packed = Counting(raw)
        capped = Capped(decompress(codec, packed), lambda: packed.count, limits, budget)  # type: ignore[arg-type]
        stream = capped
        h = Head(b"", stream)
        head, error = h.read(SNIFF), h.error
        if error is not None and not head:
            yield Skipped(unit.display, f"corrupt {codec} stream ({error})")
            return
    body = Head(head, stream)
    body.error = error
    if is_tar(head):
        if capped is not None:
            capped.member_cap = False
        yield from _open_tar(unit, body, member, limits, budget)
        return
    if codec is not None and is_zip(head):
        yield Skipped(unit.display, "zip archive inside a compressed file is not read")
        return
    if codec is None and unit.size <= HEADED_MAX_BYTES and _headed(head):
        raw.seek(0)
        yield from _open_headed(unit, raw.read(HEADED_MAX_BYTES + 1), member)
        return
    if member is not None:
        return
    rel = _strip_codec_ext(unit.rel) if codec else unit.rel
    reason = binary_reason(head)
    if reason is not None and dump_format(rel, head) is None:   # a Flight Recorder pickle is read as one
        yield Skipped(unit.display, reason)
        return
    yield Opened(unit.display, rel, body, Locator(unit.fs_path))


# `tail`/`head` given several files (`tail -n 30 logs/*/attempt_0/*/stderr.log`) writes each file's lines
# under a `==> <file> <==` line (GNU coreutils tail.c / head.c `write_header`), and users paste that output
# as it is. Such a paste is several files, each read under its own name, so a torchrun --log-dir path or a
# per-rank file name says whose lines follow (log-formats.md section 3.1). Only a paste that opens with such a
# header and whose every header names a log file is split: a header naming a pod or a node in words is a
# label the reader does not know the meaning of, and the paste stays one file.
HEADER_START = b"==> "
HEADER_END = b" <=="
LOG_EXTS = (b".log", b".txt", b".out", b".err")
HEADED_MAX_BYTES = 16 * 1024 * 1024   # a paste; a bigger file is a log of its own, read as one


def header_name(line: bytes) -> str | None:
    """The file a `==> <file> <==` line names, when it names a log file (no blank in it), else None."""
    line = line.rstrip(b"\r")
    if not (line.startswith(HEADER_START) and line.endswith(HEADER_END)):
        return None
    name = line[len(HEADER_START):-len(HEADER_END)]
    if not 0 < len(name) <= 255 or any(c in name for c in b" \t<>") or not name.endswith(LOG_EXTS):
        return None
    return name.decode("utf-8", "replace")


def _headed(head: bytes) -> bool:
    """Whether a file's first non-blank line is a `tail`/`head` file header naming a log file."""
    return header_name(head.lstrip(b" \t\r\n").split(b"\n", 1)[0]) is not None


def _open_headed(unit: Unit, data: bytes, member: str | None) -> Iterator[Opened | Skipped]:
    """Each `==> <file> <==` section of a pasted `tail`/`head` output as a file of its own, read under
    `<paste>/<file>` (its folders and name are what origins are read from); the whole paste as one file when
    a header line names something else."""
    lines = data.split(b"\n")
    starts = [i for i, x in enumerate(lines) if x.startswith(HEADER_START)]
    names = [header_name(lines[i]) for i in starts]
    if len(data) > HEADED_MAX_BYTES or any(n is None for n in names):
        if member is None:
            yield Opened(unit.display, unit.rel, Head(data, io.BytesIO(b"")), Locator(unit.fs_path))
        return
    for k, (i, named) in enumerate(zip(starts, names, strict=True)):
        name = str(named).lstrip("./")
        if member is not None and name != member:
            continue
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        body = b"\n".join(lines[i + 1:end]).rstrip(b"\n") + b"\n"
        yield Opened(f"{unit.display}!{name}", f"{unit.rel}/{name}", Head(body, io.BytesIO(b"")),
                     Locator(unit.fs_path, name))


_CODEC_EXT = (".gz", ".bz2", ".xz", ".zst", ".zstd")


def _strip_codec_ext(name: str) -> str:
    for ext in _CODEC_EXT:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def _member_stream(display: str, rel: str, stream: ReadableStream, locator: Locator, limits: Limits,
                   budget: ByteBudget | None, consumed: Callable[[], int] | None = None) -> Opened | Skipped:
    """Open one archive member: decompress it if it is compressed, refuse nested archives and binaries.

    `consumed` counts the member's bytes as stored in the archive (for the expansion ratio of a
    zip member); a member that is itself compressed is measured against its own compressed bytes.
    """
    # A zip member is decompressed here (it draws on the job's budget); a tar member's bytes are the
    # tar stream's, already counted when that stream was decompressed.
    capped = Capped(stream, consumed or (lambda: capped.count), limits, budget if consumed else None)
    h = Head(b"", capped)
    first = h.read(SNIFF)
    codec = codec_of(first)
    if codec is not None:
        packed = Counting(Head(first, capped))
        inner: ReadableStream = Capped(decompress(codec, packed), lambda: packed.count,  # type: ignore[arg-type]
                                       limits, budget)
        h = Head(b"", inner)
        first = h.read(SNIFF)
        if h.error is not None and not first:
            return Skipped(display, f"corrupt {codec} stream ({h.error})")
        body = Head(first, inner)
        rel = _strip_codec_ext(rel)
    else:
        body = Head(first, capped)
    body.error = h.error
    if is_tar(first) or is_zip(first):
        return Skipped(display, "archive inside an archive is not read")
    reason = binary_reason(first)
    if reason is not None and dump_format(rel, first) is None:   # a Flight Recorder pickle is read as one
        return Skipped(display, reason)
    return Opened(display, rel, body, locator)


def _too_many(display: str, limits: Limits) -> Skipped:
    return Skipped(display, f"the archive's members past the first {limits.max_members} were not read "
                            "(limit max_members, --limit max_members=N)")


def tar_base(rel: str) -> str:
    """The path a tar archive's members are read under: the archive's, without its codec and `.tar`/`.tgz`."""
    base = _strip_codec_ext(rel)
    for suffix in (".tar", ".tgz"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return base


def zip_base(rel: str) -> str:
    """The path a zip archive's members are read under: the archive's, without `.zip`."""
    return rel[:-4] if rel.endswith(".zip") else rel


def _open_tar(unit: Unit, body: Head, member: str | None, limits: Limits,
              budget: ByteBudget | None) -> Iterator[Opened | Skipped]:
    rel_base = tar_base(unit.rel)
    try:
        tf = tarfile.open(fileobj=body, mode="r|")  # type: ignore[call-overload]  # noqa: SIM115 - closed below
    except tarfile.TarError as exc:
        yield Skipped(unit.display, f"corrupt tar archive ({exc})")
        return
    seen = 0
    try:
        while True:
            try:
                info = tf.next()
            except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
                cause = body.error if body.error is not None else type(exc).__name__
                yield Skipped(unit.display, f"tar archive truncated or corrupt here ({cause})")
                return
            if info is None:
                break
            tf.members = []  # streamed: keep no list of members (an archive may hold millions)
            seen += 1
            if seen > limits.max_members:
                yield _too_many(unit.display, limits)
                return
            if info.isdir():
                continue
            name = info.name
            if member is not None and name != member:
                continue
            display = f"{unit.display}!{name}"
            why = unsafe_member(name) or tar_member_kind(info)
            if why is not None:
                yield Skipped(display, why)
                continue
            fh = tf.extractfile(info)
            if fh is None:
                yield Skipped(display, "not a regular file in archive")
                continue
            yield _member_stream(display, f"{rel_base}/{name}", fh, Locator(unit.fs_path, name), limits,
                                 budget)
            if member is not None:
                return
        if body.error is not None:
            yield Skipped(unit.display, f"archive truncated or corrupt ({body.error}); earlier members read")
    finally:
        tf.close()


def _zip_entries(raw: BinaryIO) -> int | None:
    """Members a zip's end record declares (read before zipfile parses the whole central directory)."""
    try:
        rec = zipfile._EndRecData(raw)  # type: ignore[attr-defined]
    except (OSError, ValueError, struct.error):
        return None
    finally:
        raw.seek(0)
    return int(rec[zipfile._ECD_ENTRIES_TOTAL]) if rec else None  # type: ignore[attr-defined]


def _open_zip(unit: Unit, raw: BinaryIO, member: str | None, limits: Limits,
              budget: ByteBudget | None) -> Iterator[Opened | Skipped]:
    rel_base = zip_base(unit.rel)
    entries = _zip_entries(raw)
    if entries is not None and entries > limits.max_members:
        yield Skipped(unit.display, f"zip archive of {entries} members is not read (limit max_members = "
                                    f"{limits.max_members}, --limit max_members=N)")
        return
    try:
        zf = zipfile.ZipFile(raw)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        yield Skipped(unit.display, f"corrupt zip archive ({exc})")
        return
    with zf:
        infos = sorted((i for i in zf.infolist() if not i.is_dir()), key=lambda i: i.filename)
        if len(infos) > limits.max_members:  # a zip64 record can hide the count from the end record
            yield _too_many(unit.display, limits)
            infos = infos[: limits.max_members]
        if is_checkpoint_zip([i.filename for i in infos]):
            yield Skipped(unit.display, "binary file (PyTorch checkpoint)")
            return
        for info in infos:
            name = info.filename
            if member is not None and name != member:
                continue
            display = f"{unit.display}!{name}"
            why = unsafe_member(name) or zip_member_kind(info)
            if why is not None:
                yield Skipped(display, why)
                continue
            try:
                fh = zf.open(info)
            except (zipfile.BadZipFile, NotImplementedError, OSError, RuntimeError, ValueError) as exc:
                yield Skipped(display, f"cannot read archive member ({exc})")
                continue
            with fh:
                yield _member_stream(display, f"{rel_base}/{name}", fh, Locator(unit.fs_path, name), limits,
                                     budget, _zip_consumed(fh, info))


def _zip_consumed(fh: Any, info: zipfile.ZipInfo) -> Callable[[], int]:
    """Compressed bytes of `info` inflated so far (all of them when zipfile does not say).

    zipfile reads as many compressed bytes as output was asked for and keeps what it did not inflate
    yet as the decompressor's unconsumed tail: counting the tail as used would let a bomb pass the
    ratio for hundreds of MiB (judged against up to 1 MiB read ahead).
    """
    def consumed() -> int:
        left = getattr(fh, "_compress_left", None)
        if not isinstance(left, int):
            return info.compress_size
        tail = getattr(getattr(fh, "_decompressor", None), "unconsumed_tail", b"")
        return max(0, info.compress_size - left - (len(tail) if isinstance(tail, bytes) else 0))
    return consumed
