"""RSS of the job's process after each phase of `hanglens analyze --format json`, as the command line runs it.

    python benchmarks/bench_phases.py /tmp/scale-curve/c16384
    PYTHONPATH=<another checkout> python -P benchmarks/bench_phases.py <corpus>

One process, the steps of `cli.analyze` in its order (read with the reader pool, import the analysis, build
the fact tables, evaluate the rules, build the document, write the JSON to /dev/null). After each: VmRSS, the
highest VmRSS within the phase (VmHWM, reset between phases through /proc/self/clear_refs), the CPU seconds
of the process and the wall-clock seconds of the phase; after reading, the CPU of the reader pool. The pool's memory is not counted here
(bench_ingest.py sums the whole process tree). Linux only (/proc).
"""

from __future__ import annotations

import os
import resource
import sys
import time


def _status(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # as hanglens.__main__
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    corpus = sys.argv[1]
    last = [time.process_time(), time.perf_counter()]

    def phase(name: str) -> None:
        now, wall = time.process_time(), time.perf_counter()
        print(f"{name:34s} RSS {_status('VmRSS'):7.1f} MiB, highest {_status('VmHWM'):7.1f}, "
              f"CPU {now - last[0]:6.2f} s, wall {wall - last[1]:6.2f} s", flush=True)
        last[0], last[1] = now, wall
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")   # resets VmHWM to the current RSS

    from hanglens._frozen import import_frozen

    import_frozen("hanglens.cli")
    from hanglens import cli

    cli.OWNS_PROCESS = True   # as hanglens.__main__: the process-wide tuning of the command line
    phase("start")
    cli._import_frozen("hanglens.api")
    from hanglens import api

    ingested = api.read([corpus], limits=cli._limits(None))
    pool = resource.getrusage(resource.RUSAGE_CHILDREN)
    phase(f"read (pool CPU {pool.ru_utime + pool.ru_stime:.1f} s)")
    try:
        from hanglens._malloc import fix_mmap_threshold  # as cli._read_and_analyze (absent from older trees)

        fix_mmap_threshold()
    except ImportError:
        pass
    cli._import_analysis()
    phase("imports of the analysis")
    from hanglens.analysis import build
    from hanglens.engine import evaluate

    tables = build(ingested.events, ingested.files, consume=True)
    ingested.events = tables.events
    phase("build the fact tables")
    result = evaluate(api.load_rules([]), tables)
    phase("evaluate the rules")
    analysis = api.Analysis(paths=[corpus], ingested=ingested, tables=tables, result=result,
                            command=f"hanglens analyze {corpus}")
    del tables, ingested
    doc = analysis.to_dict(consume=True)
    del analysis
    phase("the document")
    from hanglens import report

    with open(os.devnull, "w") as fh:
        report.write_json(doc, fh)
    phase("write the JSON")
    print(f"verdict: {doc['verdict']['category']} culprits={doc['verdict'].get('culprit_ranks')}")


if __name__ == "__main__":
    main()
