"""Time hanglens's ingest against `grep -rE` with the same trigger literals over the same files.

    python benchmarks/bench_ingest.py --ranks 64 --mb 8 --corpus /tmp/hanglens-bench

Each side runs in its own child process under `/usr/bin/time -f '%e %M'` (wall seconds, peak RSS of
the largest process in KiB), so the figures are comparable. Triggers are the union of every
registered parser's `triggers`; while the parsers declare none, a fixed list of literals typical of
the log families (reference §10) stands in, and the output says so. Then the whole pipeline
(`hanglens analyze`) is timed on the same corpus and on a small fixture job. `--no-grep` times the
pure-Python reader instead of the grep prefilter.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from hanglens.model import Event, LogLine
from hanglens.parsers import PARSERS
from hanglens.parsers.base import Parser

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corpus import make_corpus

STAND_IN_TRIGGERS = (
    "Watchdog caught", "watchdog thread terminated", "Timeout at NCCL work", "detected by watchdog",
    "PG status", "NCCL WARN", "NCCL error", "ncclSystemError", "ncclInternalError", "ncclRemoteError",
    "ncclUnhandledCudaError", "ncclInvalidUsage", "CUDA error", "out of memory", "OutOfMemoryError",
    "Traceback (most recent call last)", "Error:", "Exception", "exitcode", "ChildFailedError",
    "closing signal", "SIGTERM", "SIGABRT", "Init COMPLETE", "NCCL version", "heartbeat", "step:",
    "Rendezvous", "TCPStore", "socket", "DataLoader worker", "Xid", "CollectiveFingerPrint",
    "did not receive grad", "Expected to have finished reduction", "desync", "Flight Recorder",
)


class StandInParser(Parser):
    """Consumes trigger lines like a parser would and emits nothing (stand-in while parsers declare none)."""

    name = "stand_in"
    triggers = STAND_IN_TRIGGERS

    def feed(self, line: LogLine) -> Iterable[Event]:
        return ()


def trigger_set() -> tuple[tuple[str, ...], bool]:
    lits = tuple(sorted({t for p in PARSERS for t in p.triggers}))
    return (lits, False) if lits else (tuple(sorted(STAND_IN_TRIGGERS)), True)


SMALL_JOB = Path(__file__).resolve().parents[1] / "fixtures" / "divergence-skip-allreduce"


def _child(corpus: str, jobs: int | None, grep: bool) -> None:
    from hanglens.ingest import read_inputs

    _, stand_in = trigger_set()
    parsers = (*PARSERS, StandInParser) if stand_in else PARSERS
    ing = read_inputs([corpus], jobs=jobs, parsers=parsers, grep=grep)
    print(f"files={len(ing.files)} events={len(ing.events)} lines={sum(f.lines for f in ing.files)}",
          file=sys.stderr)


def _timed(cmd: list[str]) -> tuple[float, int, str]:
    # stdout goes to a real file: GNU grep stops at the first match when its output is /dev/null.
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf, tempfile.TemporaryFile() as sink:
        proc = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %M", *cmd],
                              stdout=sink, stderr=subprocess.PIPE, text=True, check=False)
        wall, rss = tf.read().split()[-2:]
    return float(wall), int(rss), proc.stderr.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--mb", type=float, default=8.0)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/hanglens-bench"))
    ap.add_argument("--jobs", type=int, default=None, help="hanglens worker processes (default: automatic)")
    ap.add_argument("--no-grep", action="store_true", help="time the pure-Python reader (no grep prefilter)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(str(args.corpus), args.jobs, not args.no_grep)
        return
    if not args.corpus.exists():
        make_corpus(args.corpus, args.ranks, args.mb)
    lits, stand_in = trigger_set()
    size = sum(p.stat().st_size for p in args.corpus.rglob("*") if p.is_file())
    pattern = "|".join(re.escape(t) for t in lits)
    os.environ["LC_ALL"] = "C"
    g_wall, g_rss, _ = _timed(["grep", "-rE", "-e", pattern, str(args.corpus)])
    cmd = [sys.executable, __file__, "--child", "--corpus", str(args.corpus)]
    if args.jobs is not None:
        cmd += ["--jobs", str(args.jobs)]
    if args.no_grep:
        cmd += ["--no-grep"]
    h_wall, h_rss, h_err = _timed(cmd)
    i_wall, _, _ = _timed([sys.executable, "-c", "import hanglens.ingest, hanglens.parsers"])
    cli = str(Path(sys.executable).with_name("hanglens"))
    a_wall, a_rss, _ = _timed([cli, "analyze", "--format", "json", str(args.corpus)])
    s_wall, s_rss, _ = _timed([cli, "analyze", "--format", "json", str(SMALL_JOB)])
    print(f"corpus   {args.corpus}  {size / (1 << 20):.0f} MiB  cores {os.cpu_count()}")
    note = " (stand-in list: the registered parsers declare none)" if stand_in else ""
    print(f"triggers {len(lits)} literals{note}")
    print(f"grep -rE   wall {g_wall:7.2f} s   peak RSS {g_rss / 1024:7.1f} MiB")
    said = h_err.splitlines()[-1] if h_err else ""
    print(f"hanglens   wall {h_wall:7.2f} s   peak RSS {h_rss / 1024:7.1f} MiB   ({said})")
    print(f"  of which `import hanglens.ingest` {i_wall:.2f} s")
    print(f"ratio      wall {h_wall / max(g_wall, 1e-3):7.2f} x   (target <= 2.0 x, peak RSS <= 200 MiB)")
    print(f"analyze    wall {a_wall:7.2f} s   peak RSS {a_rss / 1024:7.1f} MiB  (whole pipeline)")
    print(f"analyze    wall {s_wall:7.2f} s   peak RSS {s_rss / 1024:7.1f} MiB  (small job {SMALL_JOB.name})")


if __name__ == "__main__":
    main()
