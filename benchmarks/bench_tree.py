"""Where a run's summed memory peak is: each process of the tree at the peak, and the tree every 2 s.

    python benchmarks/bench_tree.py python -P -m hanglens analyze --format json /tmp/scale-curve/c16384

Runs the command given (stdout to /dev/null). Every 20 ms: VmRSS, RssAnon, RssFile and RssShmem
(MiB, rounded down) of the process and of each descendant, as `bench_ingest.py` samples them (a process
counts from its second sample on). Prints wall and CPU seconds, the summed peak with its parts, and the
tree every 2 s. Linux only.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

from bench_ingest import tree_pids


def _status(pid: int) -> dict[str, int] | None:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key = line.split(":")[0]
                if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(line.split()[1]) // 1024
    except OSError:
        return None
    return out


def main() -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
    peak: tuple[int, dict[int, dict[str, int]], float] = (0, {}, 0.0)
    timeline = []
    before: set[int] = set()
    shown = -10.0
    while proc.poll() is None:
        now = tree_pids(proc.pid)
        counted = [p for p in now if p == proc.pid or p in before]
        snap = {p: s for p in counted if (s := _status(p))}
        total = sum(s.get("VmRSS", 0) for s in snap.values())
        t = time.perf_counter() - t0
        if total > peak[0]:
            peak = (total, snap, t)
        if t - shown >= 2:
            timeline.append((round(t, 1), total, {p: s.get("VmRSS") for p, s in snap.items()}))
            shown = t
        before = set(now)
        time.sleep(0.02)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = used.ru_utime + used.ru_stime
    print(f"wall {time.perf_counter() - t0:.1f} s, CPU {cpu:.1f} s, rc {proc.returncode}")
    print(f"peak summed {peak[0]} MiB at {peak[2]:.1f} s: {peak[1]}")
    for row in timeline:
        print(row)


if __name__ == "__main__":
    main()
