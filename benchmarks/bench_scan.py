"""Scan benchmark: a generated archive root of 200 jobs (from the committed fixtures), 1 and 2 workers.

Usage: python benchmarks/bench_scan.py [--jobs-count 200] [--workers 1 2] [--keep DIR]
Prints jobs per second and MB per second for each worker count, in one run. The cache is bypassed
(`force=True`) so every run analyses every job.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from hanglens.scan import scan

REPO = Path(__file__).resolve().parents[1]


def build_root(root: Path, count: int) -> int:
    """`count` jobs cycling through the fixtures: folders, .tar.gz and .zip; returns total bytes."""
    fixtures = sorted(p.parent for p in (REPO / "fixtures").glob("*/truth.yaml"))
    if not fixtures:
        sys.exit("no fixtures with truth.yaml under fixtures/")
    total = 0
    for i in range(count):
        fx = fixtures[i % len(fixtures)]
        logs = sorted(f for f in fx.rglob("*") if f.is_file() and f.name != "truth.yaml")
        total += sum(f.stat().st_size for f in logs)
        name = f"job{i:04d}-{fx.name}"
        day = root / f"2024-05-{1 + i % 28:02d}"
        day.mkdir(parents=True, exist_ok=True)
        if i % 3 == 0:
            with tarfile.open(day / f"{name}.tar.gz", "w:gz") as tf:
                for f in logs:
                    tf.add(f, f.relative_to(fx).as_posix())
        elif i % 3 == 1:
            with zipfile.ZipFile(day / f"{name}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
                for f in logs:
                    zf.write(f, f.relative_to(fx).as_posix())
        else:
            for f in logs:
                dest = day / name / f.relative_to(fx)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs-count", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--keep", type=Path, help="build the root here and keep it (default: a temp folder)")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="hanglens-bench-scan-"))
    try:
        root = base / "root"
        total = build_root(root, args.jobs_count)
        print(f"{args.jobs_count} jobs, {total / 1e6:.2f} MB of logs under {root}")
        for w in args.workers:
            t0 = time.perf_counter()
            df = scan([root], out=base / f"out-{w}", jobs=w, force=True)
            dt = time.perf_counter() - t0
            errors = int(df["error"].notna().sum())
            print(f"workers={w}: {len(df)} jobs in {dt:.1f} s = {len(df) / dt:.2f} jobs/s, "
                  f"{total / 1e6 / dt:.3f} MB/s ({errors} error rows)")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
