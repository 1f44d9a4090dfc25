"""Time `hanglens analyze` against `grep -rE` over the same files, check its verdict, measure summed memory.

    python benchmarks/bench_ingest.py --corpus /tmp/hl-a            # a corpus from make_corpus.py
    python benchmarks/bench_ingest.py --corpus /tmp/hl-a --src /tmp/hanglens-main   # another checkout

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
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
                interval: float = 0.02) -> tuple[float, int, int, bytes, int]:
    """Run `cmd`; (wall s, peak summed RSS KiB, most processes at once, stdout, exit code)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out if stdout is None else stdout, stderr=subprocess.PIPE, env=env)
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
        done.set()
        th.join()
        out.seek(0)
        data = out.read()
    if code not in (0, 1):
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return wall, peak[0], peak[1], data, code


def triggers(src: Path | None) -> list[str]:
    code = "from hanglens.parsers import PARSERS; print('\\n'.join(sorted({t for p in PARSERS for t in p.triggers})))"
    env = dict(os.environ, PYTHONPATH=str(src or ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
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
    env = dict(os.environ, PYTHONPATH=str(src or ROOT))
    rows = []
    for _ in range(repeat):
        g = grep_time(corpus, lits)
        wall, rss, nproc, out, code = run_sampled(
            [sys.executable, "-m", "hanglens", "analyze", "--format", "json", *extra, str(corpus)], env=env)
        try:
            doc = json.loads(out)
            ok, said = verdict_ok(doc, expected) if expected else (True, "(no expected verdict)")
        except (ValueError, KeyError, TypeError) as exc:
            ok, said = False, f"no verdict (exit {code}: {exc})"
        rows.append(dict(grep_s=round(g, 3), analyze_s=round(wall, 2), ratio=round(wall / max(g, 1e-3), 1),
                         peak_mib=round(rss / 1024, 1), procs=nproc, verdict_ok=ok, verdict=said))
    return dict(corpus=str(corpus), mib=round(size / (1 << 20), 1), files=files, runs=rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, action="append", required=True, help="repeatable")
    ap.add_argument("--src", type=Path, default=None, help="run hanglens from this source tree (PYTHONPATH)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("extra", nargs="*", help="extra `hanglens analyze` arguments (after --)")
    args = ap.parse_args()
    results = [bench(c, args.src, args.repeat, args.extra) for c in args.corpus]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for res in results:
        print(f"{res['corpus']}: {res['mib']} MiB in {res['files']} files")
        for r in res["runs"]:  # type: ignore[attr-defined]
            print(f"  grep -rE {r['grep_s']:7.2f} s | analyze {r['analyze_s']:7.2f} s = {r['ratio']:6.1f}x grep"
                  f" | peak summed RSS {r['peak_mib']:7.1f} MiB ({r['procs']} processes at most)"
                  f" | verdict {'OK' if r['verdict_ok'] else 'WRONG'}: {r['verdict']}")


if __name__ == "__main__":
    main()
