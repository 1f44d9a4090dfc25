"""Long fuzz run: mutated real-format log lines and generated job folders through hanglens.

    python benchmarks/fuzz.py --lines 100000 --folders 2000 --work /tmp/hanglens-fuzz [--seed 1]

Seed lines are every line of the committed fixtures (fixtures/*/, written from the reference or
generated from real runs). Two phases (`--lines 0` or `--folders 0` runs one alone; the folders
depend on --seed only, so the phases may run apart and in parallel):

1. lines: each mutated line is read on its own by the line reader (every parser) and the prefix
   stripper;
2. folders: each generated folder is a fixture scenario whose files had lines mutated (and sometimes
   were renamed, gzip-compressed or emptied). Every folder goes through `analyze` (the library call
   behind `hanglens analyze --format json`) in three passes: twice with PYTHONHASHSEED=1 and once
   with PYTHONHASHSEED=2; the three JSON documents of a folder must be byte-identical.

Each phase and pass runs its inputs one after another in one worker process (`--worker`, imports
and rules loaded once), so a pass over thousands of folders costs about one analysis each. The driver
gives every input --hang seconds (default 60; the worker's own SIGALRM fires then, the driver kills
and restarts the worker 30 s later if it is stuck in C code).

Failures are counted, never raised: an uncaught exception (saved under WORK/crashes/ with its input),
a run over --slow seconds of wall clock (default 10; saved under WORK/slow/), a hang, and a JSON
document that differs between passes. The closing line gives the figures (with the longest wall and
CPU time, which tells a slow input from a loaded machine); the exit code is 1 when any failure count
is not 0. Reproduce a run with the same --seed; shrink a crash by hand into a regression test in
tests/test_hostile.py.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
HANG_S = 60.0  # a single run still going after this is stopped (its worker restarted), counted as a hang


def seed_lines() -> list[bytes]:
    """Every non-empty line of the fixtures' log files, in a stable order."""
    out: list[bytes] = []
    for f in sorted(FIXTURES.rglob("*")):
        if f.is_file() and f.name != "truth.yaml" and f.suffix in (".log", ".txt", ".out", ".err", ""):
            out.extend(line for line in f.read_bytes().splitlines() if line.strip())
    return out


_JUNK = [b"\x1b]0;title\x07", b"\x1b[2J", b"\x00", b"\r", b"\xff\xfe", b"\xc3\x28", b"\xe2\x80\xae", b"\t",
         b"\x7f", b"\\", b"[", b"]", b"(", b")", b":", b"=", b",", b"-", b".", b"%", b"'", b'"', b"{", b"}"]


def mutate(rng: random.Random, line: bytes, pool: list[bytes]) -> bytes:
    """One to three random edits of `line`: byte flips, huge or negative numbers, repeats, junk, splices."""
    b = bytearray(line)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(10)
        pos = rng.randint(0, len(b))
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1:  # a number beyond 64 bits, or a sign, where digits are
            digits = [i for i, c in enumerate(b) if 48 <= c <= 57]
            at = rng.choice(digits) if digits else pos
            b[at:at] = rng.choice([b"-", b"9" * rng.randint(19, 400), b"1" + b"0" * rng.randint(1, 60),
                                   b"-1"])
        elif op == 2 and b:  # repeat a slice (long lines, runs of the same token)
            i = rng.randrange(len(b))
            j = min(len(b), i + rng.randint(1, 40))
            b[i:j] = bytes(b[i:j]) * rng.randint(2, rng.choice([10, 200, 3000]))
        elif op == 3:
            b[pos:pos] = rng.choice(_JUNK)
        elif op == 4 and b:
            del b[rng.randint(0, len(b) - 1):]
        elif op == 5:  # splice in part of another line
            other = rng.choice(pool)
            k = rng.randint(0, len(other))
            b[pos:] = other[k:]
        elif op == 6:
            b[pos:pos] = b"0" * rng.randint(1, 4000)
        elif op == 7 and b:
            i = rng.randrange(len(b))
            del b[i:i + rng.randint(1, 20)]
        elif op == 8:
            b[pos:pos] = "ünïcødé ½ \u202e \U0001f600".encode() if rng.random() < 0.5 else b"\xed\xa0\x80"
        else:
            b[pos:pos] = rng.choice(pool)[: rng.randint(0, 80)]
    return bytes(b)


# -- the worker: one process that reads tasks on stdin and answers on stdout -------------------------
class Worker:
    """A `fuzz.py --worker` process analysing one task at a time, killed and restarted after a hang.

    The driver enforces the deadline from outside (a hang in C code, or one that eats SIGALRM, is still
    stopped); the worker also arms SIGALRM a little earlier, so a Python-level hang reports where it was.
    """

    def __init__(self, env: dict[str, str], hang_s: float) -> None:
        self.env, self.hang_s = env, hang_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, __file__, "--worker", "--hang", str(self.hang_s)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env)
        return self.proc

    def ask(self, task: dict[str, Any]) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(task).encode() + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], self.hang_s + 30)  # the worker's import, too
        line = proc.stdout.readline() if ready else b""
        if line:
            return dict(json.loads(line))
        self.stop()
        self.restarts += 1
        why = (f"hang: no answer after {self.hang_s + 30:g} s (worker killed)" if not ready
               else "the worker process died")
        return {"digest": "", "error": why, "hang": not ready, "s": self.hang_s + 30 if not ready else 0.0,
                "cpu_s": 0.0}

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None


def serve(hang_s: float) -> None:
    """The worker's loop: one JSON task per stdin line, one JSON answer per stdout line."""
    from hanglens import api
    from hanglens.ingest import strip_prefixes
    from hanglens.ingest.reader import Reader, compile_triggers
    from hanglens.model import Origin
    from hanglens.parsers import PARSERS
    from hanglens.report import render_json

    triggers = compile_triggers(PARSERS)
    rules = api.load_rules()
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    for raw in sys.stdin:
        task = json.loads(raw)
        start, cpu = time.monotonic(), time.process_time()
        answer: dict[str, Any] = {"digest": "", "error": "", "hang": False}
        try:
            with _alarm(max(1, int(hang_s))):
                if "line" in task:
                    line = bytes.fromhex(task["line"])
                    Reader("fuzz.log", Origin(), PARSERS, triggers).read(io.BytesIO(line + b"\n"))
                    strip_prefixes(line.decode("utf-8", "replace"))
                else:
                    folder = Path(task["folder"])
                    try:
                        doc = api.analyze([folder], rules=rules, jobs=1,
                                          command=f"hanglens analyze {folder.name}").to_dict()
                        answer["digest"] = hashlib.sha256(render_json(doc).encode()).hexdigest()
                    except Exception as exc:
                        if type(exc).__name__ != "InputError":  # "no log files found": a clean refusal
                            raise
                        answer["digest"] = f"refused: {exc}"
        except _Hang:
            answer.update(error=f"hang: still running after {hang_s:g} s\n{traceback.format_exc()}",
                          hang=True)
        except Exception:
            answer["error"] = traceback.format_exc()
        answer.update(s=round(time.monotonic() - start, 3), cpu_s=round(time.process_time() - cpu, 3))
        out.write(json.dumps(answer) + "\n")
        out.flush()


# -- phase 1: lines --------------------------------------------------------------------------------
def fuzz_lines(n: int, rng: random.Random, pool: list[bytes], work: Path, slow: float,
               hang_s: float) -> dict[str, Any]:
    worker = Worker({**os.environ, "PYTHONPATH": str(REPO)}, hang_s)
    crashes = slow_runs = hangs = slow_cpu = 0
    longest = 0.0
    try:
        for i in range(n):
            line = mutate(rng, rng.choice(pool), pool)
            got = worker.ask({"line": line.hex()})
            longest = max(longest, got["s"])
            if got["hang"]:
                hangs += 1
            if got["error"]:
                crashes += 0 if got["hang"] else 1
                _save(work / "crashes" / f"line-{i:06d}.bin", line, got["error"])
            slow_cpu += got["cpu_s"] > slow
            if got["s"] > slow or got["hang"]:
                slow_runs += 1
                _save(work / "slow" / f"line-{i:06d}.bin", line,
                      f"{got['s']:.1f} s wall, {got['cpu_s']:.1f} s cpu")
            if (i + 1) % 10_000 == 0:
                print(f"lines: {i + 1}/{n}, {crashes} crashes, {slow_runs} slow", file=sys.stderr, flush=True)
    finally:
        worker.stop()
    return {"lines": n, "line_crashes": crashes, "line_slow": slow_runs, "line_hangs": hangs,
            "line_slow_cpu": slow_cpu,
            "line_longest_ms": int(longest * 1000)}


# -- phase 2: folders ------------------------------------------------------------------------------
def make_folders(n: int, rng: random.Random, pool: list[bytes], work: Path, per_folder: int) -> list[Path]:
    scenarios = sorted(p.parent for p in FIXTURES.glob("*/truth.yaml"))
    root = work / "folders"
    shutil.rmtree(root, ignore_errors=True)
    made: list[Path] = []
    for i in range(n):
        src = rng.choice(scenarios)
        dest = root / f"f{i:05d}"
        files = [f for f in sorted(src.rglob("*")) if f.is_file() and f.name != "truth.yaml"]
        for f in files:
            target = dest / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = f.read_bytes()
            lines = data.split(b"\n")
            for _ in range(max(1, per_folder // max(1, len(files)))):
                k = rng.randrange(len(lines))
                lines[k] = mutate(rng, lines[k] or rng.choice(pool), pool)
            data = b"\n".join(lines)
            roll = rng.random()
            if roll < 0.05:
                target = target.with_name(target.name.replace("0", "9" * rng.randint(20, 120), 1))
            elif roll < 0.10:
                target = target.with_name(target.name + ".gz")
                data = gzip.compress(data, mtime=0)
            elif roll < 0.12:
                data = b""
            target.write_bytes(data)
        made.append(dest)
    return made


def run_pass(folders: list[Path], out: Path, seed: str, hang_s: float) -> None:
    """One pass: every folder through `analyze` in one worker process (PYTHONHASHSEED=seed)."""
    worker = Worker({**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}, hang_s)
    try:
        with open(out, "w", encoding="utf-8") as fh:
            for k, folder in enumerate(folders):
                got = worker.ask({"folder": str(folder)})
                fh.write(json.dumps({"folder": folder.name, **got}) + "\n")
                fh.flush()
                if (k + 1) % 200 == 0:
                    print(f"  {out.stem}: {k + 1}/{len(folders)}", file=sys.stderr, flush=True)
    finally:
        worker.stop()


def fuzz_folders(folders: list[Path], work: Path, slow: float, hang_s: float,
                 at_once: int = 1) -> dict[str, Any]:
    plan = (("a", "1"), ("b", "1"), ("c", "2"))
    for name, seed in plan:
        print(f"folders: pass {name} (PYTHONHASHSEED={seed}) over {len(folders)} folders", file=sys.stderr,
              flush=True)
    with ThreadPoolExecutor(max_workers=at_once) as pool:  # each thread drives its own worker process
        list(pool.map(lambda p: run_pass(folders, work / f"pass-{p[0]}.jsonl", p[1], hang_s), plan))
    passes = [{r["folder"]: r for r in map(json.loads, (work / f"pass-{n}.jsonl").read_text().splitlines())}
              for n, _ in plan]
    a, b, c = passes
    crashed = sorted({k for p in passes for k, r in p.items() if r["error"] and not r["hang"]})
    for k in crashed:
        first = next(p[k]["error"] for p in passes if p[k]["error"])
        _save(work / "crashes" / f"{k}.txt", b"", first)
    runs = [r for p in passes for r in p.values()]
    slow_runs = sorted((r["folder"], r["s"]) for r in runs if r["s"] > slow or r["hang"])
    for k, took in slow_runs:
        _save(work / "slow" / f"{k}.txt", b"", f"{took:.1f} s")
    rerun_diff = sorted(k for k in a if a[k]["digest"] != b.get(k, {}).get("digest"))
    seed_diff = sorted(k for k in a if a[k]["digest"] != c.get(k, {}).get("digest"))
    return {"folders": len(folders), "folder_crashes": len(crashed), "folder_slow": len(slow_runs),
            "folder_hangs": sum(1 for r in runs if r["hang"]),
            "folder_slow_cpu": sum(1 for r in runs if r["cpu_s"] > slow),  # slow on an idle machine too
            "rerun_differs": len(rerun_diff), "hashseed_differs": len(seed_diff),
            "refused": sum(1 for r in a.values() if r["digest"].startswith("refused")),
            "longest_ms": int(max((r["s"] for r in runs), default=0.0) * 1000),
            "longest_cpu_ms": int(max((r["cpu_s"] for r in runs), default=0.0) * 1000),
            "median_ms": int(sorted(r["s"] for r in runs)[len(runs) // 2] * 1000) if runs else 0}


# -- helpers -----------------------------------------------------------------------------------------
class _Hang(BaseException):  # not an Exception: hanglens's own `except Exception` must not eat it
    pass


class _alarm:  # a context manager, named like one
    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        def fire(signum: int, frame: Any) -> None:
            raise _Hang(f"still running after {self.seconds} s")
        signal.signal(signal.SIGALRM, fire)
        signal.alarm(self.seconds)

    def __exit__(self, *exc: object) -> None:
        signal.alarm(0)


def _save(path: Path, data: bytes, why: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.with_suffix(".why").write_text(why)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--folders", type=int, default=200)
    ap.add_argument("--per-folder", type=int, default=50, help="mutated lines per folder")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slow", type=float, default=10.0, help="seconds over which a run counts as slow")
    ap.add_argument("--hang", type=float, default=HANG_S,
                    help="seconds after which a run is stopped (its worker restarted) and counted as a hang")
    ap.add_argument("--passes-at-once", type=int, default=1, choices=(1, 2, 3),
                    help="folder passes run side by side (each in its own worker process)")
    ap.add_argument("--work", type=Path, default=Path("hanglens-fuzz"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    if args.worker:
        serve(args.hang)
        return 0
    rng = random.Random(args.seed)
    pool = seed_lines()
    args.work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    figures: dict[str, Any] = {"seed": args.seed, "seed_lines": len(pool)}
    if args.lines:
        figures.update(fuzz_lines(args.lines, rng, pool, args.work, args.slow, args.hang))
    if args.folders:
        # The folders depend on --seed only (not on --lines): the two phases can run apart.
        frng = random.Random(f"folders-{args.seed}")
        folders = make_folders(args.folders, frng, pool, args.work, args.per_folder)
        figures.update(fuzz_folders(folders, args.work, args.slow, args.hang, args.passes_at_once))
    figures["wall_s"] = round(time.monotonic() - start, 1)
    print(json.dumps(figures, sort_keys=True))
    bad = ("line_crashes", "line_slow", "folder_crashes", "folder_slow", "rerun_differs", "hashseed_differs")
    return 1 if any(figures.get(k) for k in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
