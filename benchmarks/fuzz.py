"""Long fuzz run: mutated real-format log lines and generated job folders through hanglens.

    python benchmarks/fuzz.py --lines 100000 --folders 2000 --work /tmp/hanglens-fuzz [--seed 1]

Seed lines are every line of the committed fixtures (fixtures/*/, written from the reference or
generated from real runs). Two phases:

1. lines: each mutated line is read on its own by the line reader (every parser) and the prefix
   stripper, in this process;
2. folders: each generated folder is a fixture scenario whose files had lines mutated (and sometimes
   were renamed, gzip-compressed, emptied or duplicated). Every folder goes through `analyze` (the
   library call behind `hanglens analyze --format json`) three times, each pass in its own process:
   twice with PYTHONHASHSEED=1 and once with PYTHONHASHSEED=2; the three JSON documents of a
   folder must be byte-identical.

Failures are counted, never raised: an uncaught exception (saved under WORK/crashes/ with its input),
a run over --slow seconds (default 10), and a JSON document that differs between passes. The closing
line gives the figures; the exit code is 1 when any of them is not 0. Reproduce a run with the same
--seed; shrink a crash by hand into a regression test in tests/test_hostile.py.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
HANG_S = 120  # a single run still going after this is stopped and counted as a hang


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


# -- phase 1: lines --------------------------------------------------------------------------------
def fuzz_lines(n: int, rng: random.Random, pool: list[bytes], work: Path, slow: float) -> dict[str, int]:
    from hanglens.ingest import strip_prefixes
    from hanglens.ingest.reader import Reader, compile_triggers
    from hanglens.model import Origin
    from hanglens.parsers import PARSERS

    triggers = compile_triggers(PARSERS)
    crashes = slow_runs = 0
    for i in range(n):
        line = mutate(rng, rng.choice(pool), pool)
        start = time.monotonic()
        try:
            with _alarm(max(1, int(3 * slow))):
                Reader("fuzz.log", Origin(), PARSERS, triggers).read(io.BytesIO(line + b"\n"))
                strip_prefixes(line.decode("utf-8", "replace"))
        except _Hang:
            pass  # counted as slow below
        except Exception:
            crashes += 1
            _save(work / "crashes" / f"line-{i:06d}.bin", line, traceback.format_exc())
        took = time.monotonic() - start
        if took > slow:
            slow_runs += 1
            _save(work / "slow" / f"line-{i:06d}.bin", line, f"{took:.1f} s")
        if (i + 1) % 10_000 == 0:
            print(f"lines: {i + 1}/{n}, {crashes} crashes, {slow_runs} slow", file=sys.stderr, flush=True)
    return {"lines": n, "line_crashes": crashes, "line_slow": slow_runs}


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


def replay(folders: list[Path], out: Path, slow: float) -> None:
    """Analyse each folder (this process), writing one JSON line per folder: digest, seconds, error."""
    from hanglens import api
    from hanglens.report import render_json

    rules = api.load_rules()
    with open(out, "w", encoding="utf-8") as fh:
        for folder in folders:
            start = time.monotonic()
            digest, error = "", ""
            try:
                with _alarm(HANG_S):
                    doc = api.analyze([folder], rules=rules, jobs=1,
                                      command=f"hanglens analyze {folder.name}").to_dict()
                    digest = hashlib.sha256(render_json(doc).encode()).hexdigest()
            except _Hang:
                error = f"hang: still running after {HANG_S} s"
            except Exception as exc:
                if type(exc).__name__ == "InputError":  # "no log files found": a clean refusal
                    digest = f"refused: {exc}"
                else:
                    error = traceback.format_exc()
            took = time.monotonic() - start
            fh.write(json.dumps({"folder": folder.name, "digest": digest, "s": round(took, 3),
                                 "error": error}) + "\n")
            fh.flush()


def fuzz_folders(folders: list[Path], work: Path, slow: float) -> dict[str, int]:
    listing = work / "folders.txt"
    listing.write_text("".join(f"{f}\n" for f in folders))
    passes = []
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        out = work / f"pass-{name}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        print(f"folders: pass {name} (PYTHONHASHSEED={seed}) over {len(folders)} folders", file=sys.stderr,
              flush=True)
        subprocess.run([sys.executable, __file__, "--replay", str(listing), "--out", str(out),
                        "--slow", str(slow)], env=env, check=True)
        passes.append({r["folder"]: r for r in map(json.loads, out.read_text().splitlines())})
    a, b, c = passes
    crashes = sorted(k for k, r in a.items() if r["error"])
    for k in crashes:
        _save(work / "crashes" / f"{k}.txt", b"", a[k]["error"])
    slow_runs = sum(1 for p in passes for r in p.values() if r["s"] > slow)
    rerun_diff = sorted(k for k in a if a[k]["digest"] != b.get(k, {}).get("digest"))
    seed_diff = sorted(k for k in a if a[k]["digest"] != c.get(k, {}).get("digest"))
    longest = max((r["s"] for p in passes for r in p.values()), default=0.0)
    refused = sum(1 for r in a.values() if r["digest"].startswith("refused"))
    return {"folders": len(folders), "folder_crashes": len(crashes), "folder_slow": slow_runs,
            "rerun_differs": len(rerun_diff), "hashseed_differs": len(seed_diff), "refused": refused,
            "longest_ms": int(longest * 1000)}


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
    ap.add_argument("--work", type=Path, default=Path("hanglens-fuzz"))
    ap.add_argument("--replay", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    if args.replay is not None:
        replay([Path(x) for x in args.replay.read_text().splitlines() if x], args.out, args.slow)
        return 0
    rng = random.Random(args.seed)
    pool = seed_lines()
    args.work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    figures: dict[str, Any] = {"seed": args.seed, "seed_lines": len(pool)}
    figures.update(fuzz_lines(args.lines, rng, pool, args.work, args.slow))
    folders = make_folders(args.folders, rng, pool, args.work, args.per_folder)
    figures.update(fuzz_folders(folders, args.work, args.slow))
    figures["wall_s"] = round(time.monotonic() - start, 1)
    print(json.dumps(figures, sort_keys=True))
    bad = ("line_crashes", "line_slow", "folder_crashes", "folder_slow", "rerun_differs", "hashseed_differs")
    return 1 if any(figures[k] for k in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
