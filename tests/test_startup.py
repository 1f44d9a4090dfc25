"""Start-up stays lean: what each entry point imports, checked in a fresh interpreter (never timed here).

The figures live in benchmarks/bench_startup.py; these tests only keep the heavy packages that a path does
not need from creeping back in through a module-level import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import hanglens

ROOT = Path(hanglens.__file__).resolve().parents[1]
DEMO_JOB = Path(hanglens.__file__).resolve().parent / "_demo" / "job"

# Top-level packages that are costly to import (each tens to hundreds of milliseconds).
HEAVY = ("numpy", "pandas", "pyarrow", "jinja2", "rich", "pydantic", "yaml", "dask", "distributed", "typer")


def _loaded_after(code: str, tmp_path: Path, *argv: str) -> set[str]:
    """Top-level packages in `sys.modules` after running `code` (which may exit) in a new interpreter."""
    out = tmp_path / "modules.json"
    script = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write("
        "json.dumps(sorted({m.split('.')[0] for m in sys.modules}))))\n" + code
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), HANGLENS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", script, *argv], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return set(json.loads(out.read_text()))


def _cli(*args: str) -> str:
    return ("import runpy, sys\n"
            f"sys.argv = ['hanglens', *{list(args)!r}]\n"
            "runpy.run_module('hanglens', run_name='__main__')\n")


def test_package_import_loads_nothing_heavy(tmp_path: Path) -> None:
    assert sorted(_loaded_after("import hanglens", tmp_path) & set(HEAVY)) == []


def test_library_facade_loads_no_analysis_stack(tmp_path: Path) -> None:
    # the reader alone (it uses numpy): pandas waits for the tables, pyarrow for a big block
    assert sorted(_loaded_after("import hanglens.api", tmp_path) & set(HEAVY) - {"numpy"}) == []


def test_version_loads_nothing_heavy(tmp_path: Path) -> None:
    assert sorted(_loaded_after(_cli("--version"), tmp_path) & set(HEAVY)) == []


def test_analyze_to_a_pipe_loads_only_what_it_uses(tmp_path: Path) -> None:
    """The demo job analysed to a pipe, rule cache warm: no rich (terminal only), no PyYAML (the cache
    holds the parsed rules), no dask (scan only), no pyarrow (the job's small files are read without it,
    and pandas is imported without it then: `cli._import_analysis`)."""
    code = _cli("analyze", str(DEMO_JOB))
    _loaded_after(code, tmp_path)  # fills the rule cache (a cold cache reads the YAML)
    loaded = _loaded_after(code, tmp_path)
    assert "pandas" in loaded  # the check below would prove nothing if analyze had not run
    assert sorted(loaded & {"rich", "yaml", "dask", "distributed", "pyarrow"}) == []


def test_command_line_process_gives_the_library_document(tmp_path: Path) -> None:
    """`hanglens analyze` in a process of its own (garbage collector tuned by the command line, inputs read
    before the analysis is imported) prints the document the library builds, byte for byte."""
    from hanglens import api
    from hanglens.report import render_json

    env = dict(os.environ, PYTHONPATH=str(ROOT), HANGLENS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "hanglens", "analyze", str(DEMO_JOB), "--format", "json"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == render_json(api.analyze([str(DEMO_JOB)]).to_dict())


def _facts_after(code: str, tmp_path: Path, probe: str) -> Any:
    """The JSON value of the expression `probe`, evaluated at exit of `code` run in a new interpreter."""
    out = tmp_path / "probe.json"
    script = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps({probe})))\n" + code
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), HANGLENS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(out.read_text())


# Loaded by the command line only for what the demo job does not hold: a worker pool (big inputs),
# Flight Recorder pickles, the terminal (rich), rule files on a cache miss (PyYAML), scan (dask).
NOT_FOR_THE_DEMO = ("rich", "yaml", "dask", "distributed", "multiprocessing", "pickletools")


def test_demo_loads_only_what_it_uses(tmp_path: Path) -> None:
    """`hanglens demo` to a pipe, rule cache warm: what it imports, and the HTML template it does not
    compile from its text (hanglens/report/_report_html.py holds it compiled)."""
    code = _cli("demo", "--output", str(tmp_path))
    probe = ("[sorted({m.split('.')[0] for m in sys.modules}), "
             "[t.filename for t in sys.modules['hanglens.report.html']._envs[False].cache.values()]]")
    _facts_after(code, tmp_path, probe)  # fills the rule cache
    loaded, templates = _facts_after(code, tmp_path, probe)
    assert {"pandas", "jinja2"} <= set(loaded)  # the demo ran its analysis and wrote its report
    assert sorted(set(loaded) & set(NOT_FOR_THE_DEMO)) == []
    assert len(templates) == 1 and templates[0].endswith("_report_html.py")


def test_reading_compiles_no_pattern_at_import(tmp_path: Path) -> None:
    """The parsers' and the reader's module-level patterns (hanglens.lazyre) compile on first use."""
    probe = ("(lambda lazy: [len(lazy), sum(hasattr(p, '_compiled') for p in lazy)])("
             "[v for n, m in list(sys.modules.items()) if n.startswith('hanglens.') "
             "for v in vars(m).values() if type(v).__name__ == 'LazyPattern'])")
    total, compiled = _facts_after("import hanglens.api", tmp_path, probe)
    assert total > 250 and compiled == 0
