"""Time hanglens's start-up: `--version` and `analyze` of the bundled demo job, against `python -c pass`.

    python benchmarks/bench_startup.py                      # this checkout, 15 runs of each
    python benchmarks/bench_startup.py --src /tmp/hl-main   # another checkout (PYTHONPATH)
    python benchmarks/bench_startup.py --src /tmp/hl-main --src .   # two checkouts, taking turns
    python benchmarks/bench_startup.py --runs 30 --json
    python benchmarks/bench_startup.py --phases --runs 5       # CPU of each step of `analyze <demo job>`
    python benchmarks/bench_startup.py --phases --src /tmp/hl-main --src .   # the same, trees taking turns

Each round runs every command once, in turn (`python -c pass` first), so a burst of load on this shared
machine hits all of them alike; the figures are the median wall time of N rounds, the median CPU time
(user + system of the child, less sensitive to other processes than wall time) and each median as a
ratio to `python -c pass` from the same rounds. One warm-up round is not counted.

The commands run as `python -m hanglens ...` with PYTHONPATH at the tree (the console script of an
installed hanglens only for this checkout, `--script`). PYTHONDONTWRITEBYTECODE is dropped from the
environment, so the tree's `__pycache__` is written by the warm-up and used after, as an installed wheel
(compiled by pip) would be; with it set, every run recompiles hanglens's sources.

The row "import floor" imports only the third-party packages `analyze` cannot do without (pandas with
numpy and pyarrow, pydantic, jinja2's sandbox, typer, regex) and starts and exits as the command line
does (OpenBLAS with one thread, its objects frozen: see hanglens/__main__.py): what `analyze` takes
above it is hanglens's own.

`--phases` times, in one fresh process per run, each step of `hanglens analyze <demo job>` in the order
and with the garbage-collector handling of the command line (hanglens/cli.py `analyze`), third-party
imports apart from hanglens's own, then the HTML report `demo` also writes; the figures are CPU seconds,
min and median of the runs (with several --src the trees take turns, run by run).

Goals of issue 9: `hanglens --version` under 0.3 s, `hanglens analyze` of the demo job under 1 s.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_once(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit code) of one run; stdout and stderr discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    code = subprocess.call(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def commands(src: Path, script: bool, out: str) -> dict[str, list[str]]:
    py = [sys.executable]
    tool = [*py, "-m", "hanglens"]
    if script:
        found = shutil.which("hanglens", path=str(Path(sys.executable).parent))
        if found is None:
            raise SystemExit("--script: no `hanglens` console script next to this python")
        tool = [found]
    job = str(src / "hanglens" / "_demo" / "job")
    floor = ("import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')\n"  # as the command line does
             "import pandas, pydantic.main, jinja2.sandbox, typer.main, regex, gc; gc.freeze()")
    return {
        "python -c pass": [*py, "-c", "pass"],
        "import floor": [*py, "-c", floor],
        "hanglens --version": [*tool, "--version"],
        "hanglens analyze <demo job>": [*tool, "analyze", job],
        "hanglens demo": [*tool, "demo", "--output", out],
    }


# Each step of `cli.analyze` (imports made with the collector paused and frozen, as the command line does),
# timed with process CPU; prints a list of (step, seconds).
PHASES = r"""
import gc, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as hanglens/__main__.py does
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
out, t = [], time.process_time()
def step(name):
    global t
    out.append((name, time.process_time() - t))
    t = time.process_time()
def frozen(*names):
    gc.disable()
    for name in names:
        __import__(name)
    gc.freeze()
    gc.enable()
frozen("hanglens.cli"); step("import typer and hanglens.cli")
frozen("pydantic", "pydantic.main", "typer._adapters"); step("import pydantic (option coercion, rule schema)")
frozen("hanglens.api"); step("import the reader and the parsers")
from hanglens import api
ing = api.read([sys.argv[1]]); step("read the demo job")
gc.disable()
import pandas; step("import pandas, numpy, pyarrow")
import jinja2.sandbox; step("import jinja2")
import hanglens.analysis, hanglens.document, hanglens.engine; step("import analysis, engine, document")
gc.freeze(); gc.enable()
from hanglens.analysis import build
from hanglens.engine import evaluate
from hanglens.report import render_text
tables = build(ing.events, ing.files)
result = evaluate(api.load_rules(), tables)
doc = api.Analysis(paths=[sys.argv[1]], ingested=ing, tables=tables, result=result, command="c").to_dict()
render_text(doc, color=False); step("tables, rules from the cache, evaluation, document, text")
from hanglens.report import render_html
render_html(doc); step("HTML report (demo, --html)")
print(repr(out))
"""


def phases(srcs: list[Path], runs: int) -> None:
    """Print the CPU of each step of `analyze <demo job>` (min and median of `runs` fresh processes per
    tree; several trees take turns, run by run, so load hits them alike)."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    seen: dict[Path, list[list[tuple[str, float]]]] = {src: [] for src in srcs}
    with tempfile.TemporaryDirectory(prefix="hanglens-startup-") as cwd:
        for i in range(runs + 1):
            for src in srcs:
                job = str(src / "hanglens" / "_demo" / "job")
                env = dict(base, PYTHONPATH=str(src))
                text = subprocess.run([sys.executable, "-c", PHASES, job], env=env, cwd=cwd, check=True,
                                      capture_output=True, text=True).stdout
                if i:  # the first run writes __pycache__ (and the rule cache)
                    seen[src].append(ast.literal_eval(text.strip().splitlines()[-1]))
    for src in srcs:
        print(f"{src}: CPU of each step of `hanglens analyze <demo job>` (and the HTML report of `demo`), "
              f"{runs} runs, load average {os.getloadavg()[0]:.1f}")
        total_min = total_med = 0.0
        for k, (name, _) in enumerate(seen[src][0]):
            values = [run[k][1] for run in seen[src]]
            total_min += min(values)
            total_med += statistics.median(values)
            print(f"  {name:60s} min {min(values):.3f} s  median {statistics.median(values):.3f} s")
        print(f"  {'sum (no interpreter start or exit, no option parsing)':60s} min {total_min:.3f} s  "
              f"median {total_med:.3f} s")


def _rows(walls: dict[str, list[float]], cpus: dict[str, list[float]], runs: int) -> list[dict[str, Any]]:
    base_w = statistics.median(walls["python -c pass"])
    base_c = statistics.median(cpus["python -c pass"])
    rows = []
    for name in walls:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        rows.append(dict(command=name, runs=runs, wall_median_s=round(w, 3),
                         wall_min_s=round(min(walls[name]), 3), wall_max_s=round(max(walls[name]), 3),
                         cpu_median_s=round(c, 3), cpu_min_s=round(min(cpus[name]), 3),
                         wall_ratio_to_pass=round(w / base_w, 1),
                         cpu_ratio_to_pass=round(c / max(base_c, 1e-3), 1)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, action="append",
                    help="source tree to run (default: this checkout); repeat it to compare trees: they take "
                         "turns at every command of every round, so load hits them alike")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--script", action="store_true",
                    help="run the installed `hanglens` console script instead of `python -m hanglens`")
    ap.add_argument("--json", action="store_true", help="print one JSON document (a list with several --src)")
    ap.add_argument("--phases", action="store_true", help="time each step of `analyze <demo job>` instead")
    args = ap.parse_args()
    srcs = [p.resolve() for p in (args.src or [ROOT])]
    if args.phases:
        phases(srcs, args.runs)
        return
    if args.script and len(srcs) > 1:
        raise SystemExit("--script runs this environment's console script: give at most one --src")
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "FORCE_COLOR")}
    envs = {src: dict(base_env, PYTHONPATH=str(src)) for src in srcs}
    with tempfile.TemporaryDirectory(prefix="hanglens-startup-") as out:
        plans = {src: commands(src, args.script, out) for src in srcs}
        names = list(plans[srcs[0]])
        walls = {src: {k: [] for k in names} for src in srcs}
        cpus = {src: {k: [] for k in names} for src in srcs}
        for i in range(args.runs + 1):
            for name in names:
                for src in srcs:
                    cmd = plans[src][name]
                    wall, cpu, code = run_once(cmd, envs[src], out)
                    if code not in (0, 1):
                        raise SystemExit(f"{name}: exit {code} ({' '.join(cmd)})")
                    if i:  # round 0 is the warm-up (and writes __pycache__)
                        walls[src][name].append(wall)
                        cpus[src][name].append(cpu)
    load = round(os.getloadavg()[0], 2)
    docs = [dict(src=str(src), load_average_1m=load, rows=_rows(walls[src], cpus[src], args.runs))
            for src in srcs]
    if args.json:
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
        return
    for doc in docs:
        print(f"{doc['src']}: {args.runs} rounds, load average {load:.1f} at the end")
        for r in doc["rows"]:
            print(f"  {r['command']:30s} wall median {r['wall_median_s']:6.3f} s "
                  f"(min {r['wall_min_s']:.3f}, max {r['wall_max_s']:.3f})"
                  f" = {r['wall_ratio_to_pass']:5.1f}x pass"
                  f" | CPU median {r['cpu_median_s']:6.3f} s (min {r['cpu_min_s']:.3f})"
                  f" = {r['cpu_ratio_to_pass']:5.1f}x pass")


if __name__ == "__main__":
    main()
