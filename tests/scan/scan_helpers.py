"""Shared helpers for the scan tests: a fake analyzer, fixture-built job roots, tree snapshots."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import zstandard

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
FAKE = "scan_helpers:fake_analyze"


def fixture_dirs() -> list[Path]:
    """Committed fixture scenarios (folders with truth.yaml), sorted."""
    return sorted(p.parent for p in FIXTURES.glob("*/truth.yaml"))


def copy_logs(src: Path, dest: Path) -> Path:
    """Copy a fixture's log files (not its truth.yaml) to `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.rglob("*")):
        if f.is_file() and f.name != "truth.yaml":
            target = dest / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
    return dest


def pack(folder: Path, archive: Path) -> Path:
    """Pack `folder` (members named relative to it) as tar.gz, tgz, tar, zip or tar.zst by suffix."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    name = archive.name
    files = sorted(f for f in folder.rglob("*") if f.is_file())
    if name.endswith(".zip"):
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in files:
                zf.write(f, f.relative_to(folder).as_posix())
    elif name.endswith(".tar.zst"):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for f in files:
                tf.add(f, f.relative_to(folder).as_posix())
        archive.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    else:
        mode = "w:gz" if name.endswith((".tar.gz", ".tgz")) else "w"
        with tarfile.open(archive, mode) as tf:
            for f in files:
                tf.add(f, f.relative_to(folder).as_posix())
    return archive


def snapshot(top: Path) -> dict[str, tuple[int, int]]:
    """Every path under `top` with its size and mtime (to show a scan wrote nothing there)."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            out[os.path.relpath(p, top)] = (st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns)
    return out


def fake_analyze(paths: list[str], **_: Any) -> dict[str, Any]:
    """A stand-in analyzer driven by the job's name: `<anything>__<category>__r<ranks>[__host]`.

    `boom` in the name raises; `die` kills the worker process; `stop` raises KeyboardInterrupt;
    `hang` never returns; `hog` reserves 8 GiB of address space (never touched, so harmless when no cap
    stops it) and then answers as usual.
    """
    path = paths[0]
    name = os.path.basename(path).split(".")[0]
    if "boom" in name:
        raise ValueError("analysis blew up\nsecond line of the error")
    if "die" in name:
        os._exit(3)
    if "hang" in name:
        time.sleep(3600)
    if "hog" in name:
        import numpy as np

        hoard = [np.empty(1 << 30, dtype=np.uint8) for _ in range(8)]
        del hoard
    if "stop" in name:
        raise KeyboardInterrupt
    parts = name.split("__")
    category = parts[1] if len(parts) > 1 else "none"
    ranks = [int(r) for r in parts[2][1:].split("-") if r] if len(parts) > 2 and len(parts[2]) > 1 else []
    hosts = [parts[3]] if len(parts) > 3 else []
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) if os.path.isdir(path) else 1
    return {
        "hanglens_version": "0.1.0",
        "verdict": {"category": category, "rule_id": f"rule-{category}", "confidence": "high",
                    "culprit_ranks": ranks, "culprit_hosts": hosts},
        "timeline": [{"time": 1714560000.0 + len(name)}, {"time": 1714560000.0}],
        "ranks": [],
        "findings": [],
        "versions": {"distinct": {"torch": ["2.4.0"], "nccl": ["2.20.5", "2.18.1"]}},
        "inputs": {"files": 1, "bytes": size, "skipped": [], "world_size": 4, "hosts": ["node-b", "node-a"]},
    }
