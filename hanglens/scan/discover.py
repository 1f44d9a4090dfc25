"""Find the jobs under scan roots: job folders and job archives, each fingerprinted by its files' stats.

Default rule (`--job-glob` replaces it):

- a file whose name ends in an archive suffix (`.tar.gz`, `.tgz`, `.tar`, `.zip`, `.tar.zst`, ...) is a
  job, unless it sits inside a job folder (then it is one of that job's inputs);
- a folder is a job when it directly contains log files (`*.log`, `*.out`, `*.err`, `*.txt`,
  `stdout`, `stderr`, rotated or compressed variants), or torchrun trees (`attempt_N` folders as
  children or grandchildren), or only per-rank/per-node subfolders (`rank3`, `node-1`, `0`, ...) that
  hold logs; and none of its ancestors under the root is already a job. A root itself may be a job.
- a folder that holds job folders side by side (two or more subfolders, named neither like a part of one
  job nor like a machine, whose log files share names: `runs/job-a/console.log`, `runs/job-b/console.log`)
  is no job itself even when it holds log files directly: each subfolder is looked at on its own, and each
  loose log file beside them (`runs/notes.txt`) is a job of its own.

Directory symlinks are followed once per real folder (a loop or a second path to the same folder is
reported as skipped); a job with thousands of files is still one job.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hanglens import lazyre as re

ARCHIVE_SUFFIXES = (
    ".tar.gz", ".tgz", ".tar", ".zip", ".tar.zst", ".tzst", ".tar.zstd", ".tar.bz2", ".tbz2", ".tbz",
    ".tar.xz", ".txz",
)
_COMPRESSED_RE = re.compile(r"\.(?:gz|bz2|xz|zst)$", re.IGNORECASE)
_LOG_NAME_RE = re.compile(
    r"(?:\.(?:log|out|err|txt|stdout|stderr)(?:\.\d+)?|^(?:stdout|stderr)(?:\.\d+)?|^error\.json)$",
    re.IGNORECASE,
)
_ATTEMPT_RE = re.compile(r"^attempt_\d+$")
# Names of folders that split one job by rank or node; they never start a job of their own.
_PART_RE = re.compile(r"^(?:(?:rank|node|host|worker|proc|local_rank|task|gpu)[_-]?)?\d+$", re.IGNORECASE)
_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_JOB_ID = 80


@dataclass(frozen=True, slots=True)
class Job:
    """One job to analyse: a folder or an archive, with the stats of what it holds.

    `files` holds `(relative path, size, mtime_ns)` sorted; for an archive it is the archive itself.
    `key` changes whenever any file is added, removed, resized or touched.
    """

    job_id: str
    path: str
    kind: str                       # "folder" | "archive" | "file"
    files: tuple[tuple[str, int, int], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def bytes(self) -> int:
        return sum(f[1] for f in self.files)

    @property
    def mtime_ns(self) -> int:
        return max((f[2] for f in self.files), default=0)

    @property
    def key(self) -> str:
        h = hashlib.sha256(f"{self.kind}\0{self.path}\0".encode("utf-8", "surrogateescape"))
        for rel, size, mtime in self.files:
            h.update(f"{rel}\0{size}\0{mtime}\n".encode("utf-8", "surrogateescape"))
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Skip:
    """A path under a root that was not scanned, and why."""

    path: str
    reason: str


@dataclass
class Discovery:
    """The jobs found (sorted by path) and the paths skipped (sorted by path)."""

    jobs: list[Job] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def is_log_name(name: str) -> bool:
    return bool(_LOG_NAME_RE.search(_COMPRESSED_RE.sub("", name)))


def job_id_for(path: str, root_label: str) -> str:
    """A filesystem-safe, stable, unique id: the path below its root, slugged, plus a short hash."""
    slug = _SLUG_RE.sub("_", root_label).strip("._-") or "job"
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{slug[-(MAX_JOB_ID - 9):].lstrip('._-')}-{digest}"


def _entries(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        return sorted(it, key=lambda e: e.name)


def _is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir(follow_symlinks=True)
    except OSError:
        return False


def _is_file(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_file(follow_symlinks=True)
    except OSError:
        return False


class _Walker:
    """Top-down walk of one root that remembers real folders already seen (symlink loops)."""

    def __init__(self, root: str, out: Discovery) -> None:
        self.root = root
        self.out = out
        self.seen: dict[tuple[int, int], str] = {}

    def _enter(self, path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError as exc:
            self.out.skipped.append(Skip(path, f"cannot read: {exc.strerror or exc}"))
            return False
        ident = (st.st_dev, st.st_ino)
        if ident in self.seen:
            first = self.seen[ident]
            parent = os.path.realpath(os.path.dirname(path))
            loop = parent == os.path.realpath(first) or parent.startswith(os.path.realpath(first) + os.sep)
            reason = "symlink loop" if loop else f"same folder as {first}"
            self.out.skipped.append(Skip(path, reason))
            return False
        self.seen[ident] = path
        return True

    def walk(self) -> None:
        stack = [self.root]
        while stack:
            path = stack.pop()
            if not self._enter(path):
                continue
            try:
                entries = _entries(path)
            except OSError as exc:
                self.out.skipped.append(Skip(path, f"cannot list: {exc.strerror or exc}"))
                continue
            container = _holds_jobs(entries)
            if not container and _folder_is_job(path, entries):
                self.out.jobs.append(_folder_job(path, self.root, self.out))
                continue
            subdirs = []
            for e in entries:
                if _is_dir(e):
                    subdirs.append(e.path)
                elif not _is_file(e):
                    self.out.skipped.append(Skip(e.path, "broken symlink, or not a regular file"))
                elif is_archive(e.name):
                    self.out.jobs.append(_file_job(e.path, self.root, "archive"))
                elif container and is_log_name(e.name):
                    # a loose file beside job folders: a job of its own, not the folders' common job
                    self.out.jobs.append(_file_job(e.path, self.root, "file"))
            stack.extend(reversed(subdirs))


def _has_attempts(path: str) -> bool:
    try:
        return any(_ATTEMPT_RE.match(e.name) and _is_dir(e) for e in _entries(path))
    except OSError:
        return False


def _holds_logs(path: str, depth: int = 2) -> bool:
    try:
        entries = _entries(path)
    except OSError:
        return False
    if any(_is_file(e) and is_log_name(e.name) for e in entries):
        return True
    return depth > 1 and any(_is_dir(e) and _holds_logs(e.path, depth - 1) for e in entries)


def _direct_logs(path: str) -> frozenset[str]:
    try:
        return frozenset(e.name for e in _entries(path) if _is_file(e) and is_log_name(e.name))
    except OSError:
        return frozenset()


def _holds_jobs(entries: Sequence[os.DirEntry[str]]) -> bool:
    """Whether a folder holds job folders side by side (`runs/job-a/`, `runs/job-b/`, maybe with loose files
    such as `runs/notes.txt`) rather than being one job split into parts.

    Two or more subfolders, not named like a part of one job (`rank3`, `node-1`, `attempt_0`) nor like a
    machine (`node07`, `gpu-a1`: origin.py reads those as one job's hosts), each hold log files of the same
    names as another such subfolder (`console.log` in both): each is a job of the same shape. Folders of one
    job's stack dumps or traces (`dumps/stuck-0.txt`, `pyspy/rank0.txt`) do not share their names.
    """
    from hanglens.ingest.origin import hostlike  # (scan sits above ingest; only this check reads it)

    names = [
        _direct_logs(d.path) for d in entries
        if _is_dir(d) and not _PART_RE.match(d.name) and not _ATTEMPT_RE.match(d.name)
        and not hostlike(d.name)
    ]
    # (a name two folders hold is counted once per folder: a folder shares a name when its count is 2 or
    # more; linear in the names, where comparing every pair of folders would be quadratic in them)
    counts = Counter(name for n in names for name in n)
    return sum(1 for n in names if any(counts[name] >= 2 for name in n)) >= 2


def _folder_is_job(path: str, entries: Sequence[os.DirEntry[str]]) -> bool:
    dirs = [e for e in entries if _is_dir(e)]
    if any(_is_file(e) and is_log_name(e.name) for e in entries):
        return True
    if any(_ATTEMPT_RE.match(d.name) for d in dirs) or any(_has_attempts(d.path) for d in dirs):
        return True
    parts = [d for d in dirs if _PART_RE.match(d.name)]
    return bool(parts) and len(parts) == len(dirs) and any(_holds_logs(d.path) for d in parts)


def _folder_files(path: str, out: Discovery) -> list[tuple[str, int, int]]:
    files: list[tuple[str, int, int]] = []
    seen: set[tuple[int, int]] = set()
    stack = [path]
    while stack:
        cur = stack.pop()
        try:
            st = os.stat(cur)
            if (st.st_dev, st.st_ino) in seen:
                out.skipped.append(Skip(cur, "symlink loop inside a job"))
                continue
            seen.add((st.st_dev, st.st_ino))
            entries = _entries(cur)
        except OSError as exc:
            out.skipped.append(Skip(cur, f"cannot list: {exc.strerror or exc}"))
            continue
        for e in entries:
            if _is_dir(e):
                stack.append(e.path)
            elif _is_file(e):
                try:
                    st = e.stat(follow_symlinks=True)
                except OSError as exc:
                    out.skipped.append(Skip(e.path, f"cannot stat: {exc.strerror or exc}"))
                    continue
                files.append((os.path.relpath(e.path, path), st.st_size, st.st_mtime_ns))
    return sorted(files)


def _label(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return os.path.basename(os.path.abspath(root)) if rel == "." else rel


def _folder_job(path: str, root: str, out: Discovery) -> Job:
    files = _folder_files(path, out)
    notes = () if files else ("empty folder",)
    return Job(job_id_for(path, _label(path, root)), path, "folder", tuple(files), notes)


def _file_job(path: str, root: str, kind: str) -> Job:
    try:
        st = os.stat(path)
        files: tuple[tuple[str, int, int], ...] = ((os.path.basename(path), st.st_size, st.st_mtime_ns),)
    except OSError:
        files = ()
    return Job(job_id_for(path, _label(path, root)), path, kind, files)


def _glob_jobs(root: str, pattern: str, out: Discovery) -> None:
    matches = sorted(str(p) for p in Path(root).glob(pattern))
    taken: list[str] = []
    for m in matches:
        outer = next((t for t in taken if m.startswith(t.rstrip(os.sep) + os.sep)), None)
        if outer is not None:
            out.skipped.append(Skip(m, f"inside job {outer}"))
            continue
        try:
            mode = os.stat(m).st_mode
        except OSError as exc:
            out.skipped.append(Skip(m, f"cannot read: {exc.strerror or exc}"))
            continue
        if stat.S_ISDIR(mode):
            out.jobs.append(_folder_job(m, root, out))
        elif stat.S_ISREG(mode):
            out.jobs.append(_file_job(m, root, "archive" if is_archive(m) else "file"))
        else:
            out.skipped.append(Skip(m, "not a folder or a regular file"))
            continue
        taken.append(m)


def discover(roots: Iterable[str | os.PathLike[str]], *, job_glob: str | None = None,
             since_ns: int | None = None) -> Discovery:
    """Find jobs under `roots` (folders, or archives/files given directly).

    `job_glob` (relative to each root, `**` allowed) names the jobs instead of the default rule.
    `since_ns` keeps only jobs whose newest file is at least that recent (POSIX ns).
    """
    out = Discovery()
    for r in roots:
        root = os.path.abspath(os.fspath(r))
        if not os.path.exists(root):
            out.skipped.append(Skip(root, "no such file or folder"))
        elif os.path.isfile(root):
            out.jobs.append(_file_job(root, os.path.dirname(root), "archive" if is_archive(root) else "file"))
        elif job_glob:
            _glob_jobs(root, job_glob, out)
        else:
            _Walker(root, out).walk()
    jobs: dict[str, Job] = {}
    for j in out.jobs:
        if j.path in jobs:
            continue
        if since_ns is not None and j.files and j.mtime_ns < since_ns:
            out.skipped.append(Skip(j.path, "older than --since"))
            continue
        jobs[j.path] = j
    out.jobs = sorted(jobs.values(), key=lambda j: (j.path, j.job_id))
    out.skipped = sorted(set(out.skipped), key=lambda s: (s.path, s.reason))
    return out
