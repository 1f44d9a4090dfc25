"""The library facade: every CLI command is one call into this module."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hanglens.ingest import Ingested, OnProgress, read_inputs
from hanglens.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from hanglens.analysis import Tables

PathLike = str | os.PathLike[str]


def read(paths: Sequence[PathLike], *, jobs: int | None = None, limits: Limits = DEFAULT_LIMITS,
         progress: OnProgress | None = None) -> Ingested:
    """Discover and read every log under `paths` into rank-attributed events.

    `progress` is called with a `ReadProgress` (bytes and files read of their totals) as inputs finish.
    """
    return read_inputs(paths, jobs=jobs, limits=limits, progress=progress)


def load_rules(dirs: Sequence[PathLike] = (), *, builtin: bool = True,
               limits: Limits = DEFAULT_LIMITS) -> list[Any]:
    """The built-in rules plus those in `dirs` (a user rule replaces a built-in one with the same id)."""
    from hanglens.engine import load_rules as _load

    return list(_load([Path(d) for d in dirs], builtin=builtin, limits=limits))


@dataclass
class Analysis:
    """One job analysed: the inputs read, the fact tables, the engine's result and the document."""

    paths: list[str]
    ingested: Ingested
    tables: Tables
    result: Any
    command: str
    _doc: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def verdict(self) -> Any:
        return self.result.verdict

    def to_dict(self, *, consume: bool = False) -> dict[str, Any]:
        """The analysis document of docs/analysis-json.md (built once, then cached).

        `consume=True` when only the document is wanted from here on: the events are let go while it is
        built (a big job's document takes the memory they held), so `ingested.events` and `tables.events`
        are empty afterwards.
        """
        if self._doc is None:
            from hanglens.document import build_document

            ctx = getattr(self.ingested, "context", None)
            if consume:
                self.ingested.events = self.tables.events   # (the one list build_document empties)
            self._doc = build_document(
                tables=self.tables,
                result=self.result,
                files=self.ingested.files,
                skipped=self.ingested.skipped,
                command=self.command,
                context=ctx,
                consume=consume,
                runs=self.ingested.run_table,
            )
        return self._doc


def analyze(
    paths: Sequence[PathLike],
    *,
    rules_dirs: Sequence[PathLike] = (),
    rules: Sequence[Any] | None = None,
    jobs: int | None = None,
    command: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: OnProgress | None = None,
) -> Analysis:
    """Read the logs under `paths`, build the fact tables and run the rules: the verdict and its evidence.

    `limits` bound the work on hostile input (hanglens.limits); what passes one is skipped, with a reason.
    `progress` is called with a `ReadProgress` (bytes and files read of their totals) while reading.
    """
    # Read before importing the analysis (pandas): reader workers forked from a lean parent do not each
    # carry its pages, which would count again in the job's summed memory.
    ing = read_inputs(paths, jobs=jobs, limits=limits, progress=progress)
    return analyze_read(ing, paths, rules_dirs=rules_dirs, rules=rules, command=command, limits=limits)


def analyze_read(
    ingested: Ingested,
    paths: Sequence[PathLike],
    *,
    rules_dirs: Sequence[PathLike] = (),
    rules: Sequence[Any] | None = None,
    command: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    keep_events: bool = True,
) -> Analysis:
    """`analyze` of logs already read by `read(paths)`: the fact tables, the rules, the verdict.

    `keep_events=False` hands the events over to the tables (a big job's are not held twice): afterwards
    `ingested.events` is `tables.events`, whose times are shifted onto the reference host's clock.
    """
    from hanglens.analysis import build
    from hanglens.engine import evaluate

    if keep_events:
        tables = build(ingested.events, ingested.files)
    else:
        tables = build(ingested.events, ingested.files, consume=True)
        ingested.events = tables.events
    active = list(rules) if rules is not None else load_rules(rules_dirs, limits=limits)
    result = evaluate(active, tables, limits=limits)
    if ingested.runs:
        # the inputs hold several runs and only the latest was read into the tables (ingest/runs.py): say so
        told = replace(result.verdict, summary=result.verdict.summary + ingested.runs)
        result = replace(result, verdict=told)
    cmd = command or "hanglens analyze " + " ".join(shlex.quote(str(p)) for p in paths)
    return Analysis(paths=[str(p) for p in paths], ingested=ingested, tables=tables, result=result,
                    command=cmd)


def scan(
    paths: Sequence[PathLike],
    *,
    out: PathLike | None = None,
    jobs: int | None = None,
    engine: str = "local",
    **options: Any,
) -> Any:
    """Analyse every job (folder or archive) under `paths`; return the jobs table as a pandas DataFrame.

    With `out`, also writes jobs.parquet/jobs.csv, per-job reports and index.html there, and reuses its
    cache. Options: scheduler, job_glob, since, rules, force, progress (see `hanglens.scan.run.scan`).
    """
    from hanglens.scan import scan as _scan

    return _scan(paths, out=out, jobs=jobs, engine=engine, **options)
