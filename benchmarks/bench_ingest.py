"""Time `hanglens analyze` against `grep -rE` over the same files, check its verdict, measure summed memory.

    python benchmarks/bench_ingest.py --corpus /tmp/hl-a            # a corpus from make_corpus.py
    python benchmarks/bench_ingest.py --corpus /tmp/hl-a --src /tmp/hanglens-main   # another checkout
    python benchmarks/bench_ingest.py --curve 64,1024,16384 --work /tmp/hl-c   # per-rank cost of shape (c)

Per corpus, in the same run: `grep -rE` with the union of every parser's trigger literals (output to a
real file: GNU grep stops at the first match when its output is /dev/null), then `hanglens analyze
--format json` (`python -m hanglens`, from this checkout or from `--src`), whose verdict is checked
against `<corpus>.expected.json` (written by make_corpus.py).

Memory is the **peak of the summed RSS of hanglens's whole process tree**: every 20 ms the sampler reads
`/proc/<pid>/status` (VmRSS) of the hanglens process and of every descendant (worker processes, grep
subprocesses), adds them up, and keeps the largest sum. That is what the machine had to hold at once;
`getrusage(RUSAGE_CHILDREN).ru_maxrss` would give only the largest single child. RSS counts pages that a
forked worker still shares with its parent twice, so the figure errs high. A process counts from its
second sample on: a child caught between fork and exec (grep started by the reader) shows its parent's
RSS for a moment and would otherwise count the parent twice. Spikes shorter than 20 ms can be missed.
Linux only (/proc).

`--curve N1,N2,...` measures how the cost per rank of shape (c) (`make_corpus.py --shape many`, 16 KB per
rank) moves with the rank count: each corpus `<work>/c<N>` is generated when missing and analysed once,
and the script prints CPU seconds per rank and the incremental CPU per added rank between successive
counts, `(CPU(N2) - CPU(N1)) / (N2 - N1)`, which leaves out the fixed start-up that would flatter the big
counts (CPU, not wall: the machine is shared). Flatness is the largest incremental cost over the
smallest (goal of issue 9: within 1.5x).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `python -m`/`-c` put the working folder first on sys.path: run from a checkout, they would import that
# checkout's hanglens whatever PYTHONPATH (`--src`) says. Children run in a folder without one.
NEUTRAL_CWD = tempfile.mkdtemp(prefix="hanglens-bench-cwd-")


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pids(root: int) -> list[int]:
    """`root` and all its descendants right now."""
    kids = _children()
    todo, out = [root], []
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def run_sampled(cmd: list[str], env: dict[str, str] | None = None, stdout: int | None = None,
                interval: float = 0.02) -> tuple[float, int, int, bytes, int, float]:
    """Run `cmd`; (wall s, peak summed RSS KiB, most processes at once, stdout, exit code, CPU s).

    CPU is user + system time of the process and every descendant it waited for (reader workers, grep),
    from getrusage(RUSAGE_CHILDREN): on a machine shared with other work it moves much less than wall time.
    """
    with tempfile.TemporaryFile() as out:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out if stdout is None else stdout, stderr=subprocess.PIPE, env=env,
                                cwd=NEUTRAL_CWD)
        peak = [0, 0]
        done = threading.Event()

        def sample() -> None:
            before: set[int] = set()
            while not done.is_set():
                now = tree_pids(proc.pid)
                # A child caught between fork and exec shows its parent's RSS for a moment; a process
                # counts from its second sample on (the root always).
                counted = [p for p in now if p == proc.pid or p in before]
                rss = sum(_rss_kib(p) for p in counted)
                peak[0], peak[1] = max(peak[0], rss), max(peak[1], len(counted))
                before = set(now)
                done.wait(interval)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        err = proc.stderr.read() if proc.stderr else b""
        code = proc.wait()
        wall = time.perf_counter() - t0
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
        done.set()
        th.join()
        out.seek(0)
        data = out.read()
    if code not in (0, 1):
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return wall, peak[0], peak[1], data, code, cpu


def triggers(src: Path | None) -> list[str]:
    code = "from hanglens.parsers import PARSERS; print('\\n'.join(sorted({t for p in PARSERS for t in p.triggers})))"
    env = dict(os.environ, PYTHONPATH=str(src or ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=NEUTRAL_CWD)
    return [t for t in out.stdout.split("\n") if t]


def grep_time(corpus: Path, lits: list[str]) -> float:
    pattern = "|".join(re.escape(t) for t in lits)
    env = dict(os.environ, LC_ALL="C")
    with tempfile.TemporaryFile() as sink:  # a real file, not /dev/null
        t0 = time.perf_counter()
        subprocess.run(["grep", "-rE", "-e", pattern, str(corpus)], stdout=sink, env=env, check=False)
        return time.perf_counter() - t0


def verdict_ok(doc: dict[str, object], expected: dict[str, object]) -> tuple[bool, str]:
    verdict = doc.get("verdict", {})
    assert isinstance(verdict, dict)
    cat = verdict.get("category")
    culprits = sorted(verdict.get("culprit_ranks") or [])
    ok = cat in expected["categories"] and culprits == sorted(expected["culprits"])  # type: ignore[operator]
    return ok, f"{cat} culprits={culprits}"


def bench(corpus: Path, src: Path | None, repeat: int, extra: list[str]) -> dict[str, object]:
    exp_path = corpus.parent / (corpus.name + ".expected.json")
    expected = json.loads(exp_path.read_text()) if exp_path.exists() else None
    size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file()) if corpus.is_dir() \
        else corpus.stat().st_size
    files = sum(1 for p in corpus.rglob("*") if p.is_file()) if corpus.is_dir() else 1
    lits = triggers(src)
    # Without PYTHONDONTWRITEBYTECODE, as an installed wheel runs: bytecode is compiled once, not per run.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src or ROOT)
    rows = []
    for _ in range(repeat):
        g = grep_time(corpus, lits)
        wall, rss, nproc, out, code, cpu = run_sampled(
            [sys.executable, "-m", "hanglens", "analyze", "--format", "json", *extra, str(corpus)], env=env)
        try:
            doc = json.loads(out)
            ok, said = verdict_ok(doc, expected) if expected else (True, "(no expected verdict)")
        except (ValueError, KeyError, TypeError) as exc:
            ok, said = False, f"no verdict (exit {code}: {exc})"
        rows.append(dict(grep_s=round(g, 3), analyze_s=round(wall, 2), cpu_s=round(cpu, 2),
                         ratio=round(wall / max(g, 1e-3), 1),
                         peak_mib=round(rss / 1024, 1), procs=nproc, verdict_ok=ok, verdict=said))
    return dict(corpus=str(corpus), mib=round(size / (1 << 20), 1), files=files, runs=rows)


def curve(counts: list[int], work: Path, src: Path | None, extra: list[str]) -> dict[str, object]:
    """Shape (c) at each rank count: analyze wall and CPU time, per rank, and the CPU per added rank."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_corpus import expected_path, make_corpus

    points: list[dict[str, object]] = []
    for n in sorted(counts):
        corpus = work / f"c{n}"
        if not expected_path(corpus).exists():
            make_corpus(corpus, "many", n, 0.016)
        res = bench(corpus, src, 1, extra)
        run: dict[str, object] = res["runs"][0]  # type: ignore[index]
        cpu = float(run["cpu_s"])  # type: ignore[arg-type]
        points.append(dict(ranks=n, mib=res["mib"], files=res["files"], analyze_s=run["analyze_s"], cpu_s=cpu,
                           grep_s=run["grep_s"], peak_mib=run["peak_mib"], verdict_ok=run["verdict_ok"],
                           verdict=run["verdict"], cpu_ms_per_rank=round(1000 * cpu / n, 2)))
    for lo, hi in itertools.pairwise(points):
        added = 1000 * (float(hi["cpu_s"]) - float(lo["cpu_s"])) / (int(hi["ranks"]) - int(lo["ranks"]))  # type: ignore[arg-type]
        hi["cpu_ms_per_added_rank"] = round(added, 2)
    inc = [float(p["cpu_ms_per_added_rank"]) for p in points[1:]]  # type: ignore[arg-type]
    flat = round(max(inc) / min(inc), 2) if inc and min(inc) > 0 else None
    return dict(curve=points, flatness=flat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, action="append", default=[], help="repeatable")
    ap.add_argument("--curve", default=None, metavar="N1,N2,...",
                    help="per-rank cost of shape (c) at these rank counts (corpora under --work)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/hl-c"), help="where --curve keeps its corpora")
    ap.add_argument("--src", type=Path, default=None, help="run hanglens from this source tree (PYTHONPATH)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("extra", nargs="*", help="extra `hanglens analyze` arguments (after --)")
    args = ap.parse_args()
    if not args.corpus and not args.curve:
        ap.error("give --corpus or --curve")
    if args.curve:
        got = curve([int(n) for n in args.curve.split(",")], args.work, args.src, args.extra)
        if args.json:
            print(json.dumps(got, indent=1))
        else:
            for p in got["curve"]:  # type: ignore[attr-defined]
                inc = p.get("cpu_ms_per_added_rank")
                print(f"  {p['ranks']:6d} ranks ({p['files']} files, {p['mib']} MiB): "
                      f"analyze {p['analyze_s']:8.2f} s wall, {p['cpu_s']:8.2f} s CPU = "
                      f"{p['cpu_ms_per_rank']:7.2f} ms CPU/rank"
                      + (f", {inc:7.2f} ms CPU per added rank" if inc is not None else "")
                      + f" | grep {p['grep_s']:.2f} s | peak summed RSS {p['peak_mib']:.1f} MiB"
                      f" | verdict {'OK' if p['verdict_ok'] else 'WRONG'}: {p['verdict']}")
            print(f"  flatness (largest / smallest CPU per added rank): {got['flatness']}")
    results = [bench(c, args.src, args.repeat, args.extra) for c in args.corpus]
    if not results:
        return
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for res in results:
        print(f"{res['corpus']}: {res['mib']} MiB in {res['files']} files")
        for r in res["runs"]:  # type: ignore[attr-defined]
            print(f"  grep -rE {r['grep_s']:7.2f} s | analyze {r['analyze_s']:7.2f} s"
                  f" ({r['cpu_s']:.2f} s CPU) = {r['ratio']:6.1f}x grep"
                  f" | peak summed RSS {r['peak_mib']:7.1f} MiB ({r['procs']} processes at most)"
                  f" | verdict {'OK' if r['verdict_ok'] else 'WRONG'}: {r['verdict']}")


if __name__ == "__main__":
    main()
