"""The `hanglens` command line: parse options, call `hanglens.api`, render, exit with a named code."""

from __future__ import annotations

import csv
import io
import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from hanglens.errors import HanglensError

if TYPE_CHECKING:
    from hanglens import api
else:

    class _LazyApi:
        """`hanglens.api` imported on first use: `--version` and `--help` do not pay for the reader."""

        def __getattr__(self, name: str) -> Any:
            from hanglens import api as module

            return getattr(module, name)

    api = _LazyApi()

EXIT_OK = 0  # verdict reached / command succeeded
EXIT_INCONCLUSIVE = 1  # analysed, but no rule explained the failure (category unknown)
EXIT_ERROR = 2  # usage, input or rule error (one line on stderr)
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="hanglens",
    help="Find the root cause of a hung or failed distributed PyTorch job from the logs it left behind.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state: dict[str, bool] = {"debug": False}


class Fmt(str, Enum):
    text = "text"
    json = "json"
    csv = "csv"


def _fail(exc: BaseException) -> NoReturn:
    if _state["debug"]:
        raise exc
    if isinstance(exc, HanglensError):
        typer.echo(f"hanglens: {exc}", err=True)
        raise typer.Exit(exc.exit_code)
    typer.echo(f"hanglens: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True)
    raise typer.Exit(EXIT_ERROR)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def _version(value: bool) -> None:
    if value:
        from hanglens import __version__

        typer.echo(f"hanglens {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def main(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    _state["debug"] = debug


Paths = Annotated[
    list[Path], typer.Argument(help="Log files, folders, globs or archives.", show_default=False)
]


class AnalyzeFmt(str, Enum):
    text = "text"
    json = "json"


RulesDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules", help="Folder of extra rules (repeatable); a rule with a built-in id replaces it."
    ),
]


@app.command()
def analyze(
    paths: Paths,
    rules: RulesDirs = None,
    fmt: Annotated[
        AnalyzeFmt, typer.Option("--format", "-f", help="Output on stdout (or --output).")
    ] = AnalyzeFmt.text,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the --format output here.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report.")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Also write a Markdown summary.")
    ] = None,
    redact_: Annotated[
        bool,
        typer.Option(
            "--redact", help="Replace hosts, IPs, users, home paths, e-mails and tokens in every output."
        ),
    ] = False,
) -> None:
    """Name the root cause: category, culprit and victim ranks, evidence lines, and what to do.

    Exit codes: 0 a verdict was reached (including "none": no failure found), 1 analysed but no rule
    explained the failure (category "unknown"), 2 usage, input or rule error.
    """
    from hanglens.report import redact, render_html, render_json, render_markdown, render_text, wants_color

    argv = ["hanglens", "analyze", *(str(p) for p in paths)]
    for d in rules or []:
        argv += ["--rules", str(d)]
    try:
        analysis = api.analyze(
            [str(p) for p in paths], rules_dirs=[str(d) for d in rules or []], command=" ".join(argv)
        )
        doc = analysis.to_dict()
        if redact_:
            doc = redact(doc)
        if html is not None:
            html.write_text(render_html(doc), encoding="utf-8")
        if markdown is not None:
            markdown.write_text(render_markdown(doc), encoding="utf-8")
        if fmt is AnalyzeFmt.json:
            _write(render_json(doc), output)
        else:
            color = output is None and wants_color(sys.stdout)
            _write(render_text(doc, color=color), output)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    category = doc["verdict"]["category"]
    raise typer.Exit(EXIT_INCONCLUSIVE if category == "unknown" else EXIT_OK)


def _read(paths: list[Path]) -> Any:
    """Read the inputs for `events`/`inputs`; errors become one line and a named exit code."""
    try:
        return api.read([str(p) for p in paths])
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)


def _event_row(e: Any) -> dict[str, Any]:
    return {
        "rank": e.rank,
        "host": e.host,
        "time": e.time,
        "kind": e.kind,
        "parser": e.parser,
        "path": e.ref.path,
        "line": e.ref.line,
        "fields": dict(e.fields),
        "text": e.text,
    }


@app.command()
def events(
    paths: Paths,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.text,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="Only these event kinds.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here, not stdout.")] = None,
) -> None:
    """Every event read from the logs: rank, host, time, kind, key fields, source path:line."""
    ing = _read(paths)
    evs = [e for e in ing.events if not kind or e.kind in kind]
    rows = [_event_row(e) for e in evs]
    if fmt is Fmt.json:
        doc = {"events": rows, "skipped": [{"path": s.path, "reason": s.reason} for s in ing.skipped]}
        _write(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n", output)
    elif fmt is Fmt.csv:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "host", "time", "kind", "path", "line", "fields", "text"])
        for r in rows:
            w.writerow(
                [
                    r["rank"],
                    r["host"],
                    r["time"],
                    r["kind"],
                    r["path"],
                    r["line"],
                    json.dumps(r["fields"], sort_keys=True, ensure_ascii=False),
                    r["text"],
                ]
            )
        _write(buf.getvalue(), output)
    else:
        out = []
        for r in rows:
            fields = " ".join(f"{k}={v}" for k, v in sorted(r["fields"].items()) if v not in (None, "", []))
            rank = "-" if r["rank"] is None else str(r["rank"])
            out.append(f"{r['path']}:{r['line']}\trank {rank}\t{r['kind']}\t{fields}")
        for s in ing.skipped:
            out.append(f"skipped {s.path}: {s.reason}")
        _write("\n".join(out) + ("\n" if out else ""), output)


@app.command()
def inputs(
    paths: Paths,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format (text or json).")] = Fmt.text,
) -> None:
    """The files read (ranks, hosts, streams, lines, events) and the inputs skipped, with reasons."""
    ing = _read(paths)
    files: list[dict[str, Any]] = [
        {
            "path": f.path,
            "size": f.size,
            "lines": f.lines,
            "events": f.events,
            "ranks": list(f.ranks),
            "hosts": list(f.hosts),
            "stream": f.origin.stream,
            "local_rank": f.origin.local_rank,
            "attempt": f.origin.attempt,
            "node_dir": f.origin.node_dir,
            "notes": ing.notes.get(f.path, []),
        }
        for f in ing.files
    ]
    skipped = [{"path": s.path, "reason": s.reason} for s in ing.skipped]
    if fmt is Fmt.json:
        _write(json.dumps({"files": files, "skipped": skipped}, indent=1, sort_keys=True) + "\n", None)
        return
    lines = []
    for f in files:
        ranks = ",".join(map(str, f["ranks"])) or "-"
        hosts = ",".join(f["hosts"]) or "-"
        lr = "-" if f["local_rank"] is None else f["local_rank"]
        attempt = "-" if f["attempt"] is None else f["attempt"]
        lines.append(
            f"{f['path']}\t{f['size']} B\t{f['lines']} lines\t{f['events']} events\t"
            f"ranks {ranks}\thosts {hosts}\tlocal_rank {lr}\tattempt {attempt}\t"
            f"stream {f['stream'] or '-'}"
        )
        lines.extend(f"\tnote: {n}" for n in f["notes"])
    for s in skipped:
        lines.append(f"skipped\t{s['path']}\t{s['reason']}")
    _write("\n".join(lines) + ("\n" if lines else ""), None)


class Engine(str, Enum):
    local = "local"
    dask = "dask"


@app.command()
def scan(
    roots: Annotated[
        list[Path], typer.Argument(help="Folders (or archives) holding job logs.", show_default=False)
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Output folder (tables, reports, index.html, cache).")
    ],
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="Worker processes [default: cores].")
    ] = None,
    engine: Annotated[
        Engine, typer.Option("--engine", help="local process pool, or dask.distributed.")
    ] = Engine.local,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="dask scheduler address (tcp://host:port); without it a LocalCluster on "
            "127.0.0.1. Workers must see the job paths under the same names (a shared filesystem).",
        ),
    ] = None,
    job_glob: Annotated[
        str | None,
        typer.Option(
            "--job-glob",
            help="Glob relative to each ROOT naming the job folders/archives "
            "(e.g. '*/job_*' or '**/*.tar.gz'), instead of the default rule.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only jobs with a file modified since DATE (YYYY-MM-DD[THH:MM], local time)."
        ),
    ] = None,
    rules: Annotated[
        list[Path] | None, typer.Option("--rules", help="Extra rules folder (repeatable).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Ignore the cache: analyse every job again.")
    ] = False,
) -> None:
    """Analyse every job under ROOT (job folders and archives) and write a fleet table and index page.

    A job is an archive (.tar.gz, .tgz, .tar, .zip, .tar.zst, ...) or a folder that directly holds log
    files or torchrun attempt_N trees (restart attempts belong to their job); nested folders of a job
    are part of it. Writes OUT/jobs.parquet, OUT/jobs.csv, OUT/jobs/<job_id>/report.{json,html} and
    OUT/index.html. Unchanged jobs are taken from OUT/.hanglens-cache. Exit 0 when the scan finished
    (jobs that could not be analysed are rows with an error), 2 on a usage error or when no job was
    found, 130 when interrupted (the outputs then hold the jobs that completed).
    """
    from hanglens.scan import ScanSummary

    done: list[ScanSummary] = []
    try:
        api.scan(
            [str(r) for r in roots],
            out=str(out),
            jobs=jobs,
            engine=engine.value,
            scheduler=scheduler,
            job_glob=job_glob,
            since=since,
            rules=[str(r) for r in rules or []],
            force=force,
            progress=True,
            on_summary=done.append,
        )
    except KeyboardInterrupt:
        n = done[0].analysed + done[0].cached if done else 0
        typer.echo(f"hanglens: interrupted; {out} holds the {n} jobs that completed", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    s = done[0]
    parquet = f" (jobs.parquet skipped: {s.parquet})" if s.parquet else ""
    typer.echo(
        f"scanned {s.jobs} jobs: {s.analysed} analysed, {s.cached} from cache, {s.errors} could not "
        f"be analysed, {len(s.skipped)} paths skipped -> {out / 'index.html'}{parquet}",
        err=True,
    )
    if s.jobs == 0:
        typer.echo(f"hanglens: no jobs found under {', '.join(map(str, roots))}", err=True)
        raise typer.Exit(EXIT_ERROR)


# -- hanglens rules: list, check, test, explain --------------------------------------------------------

rules_app = typer.Typer(help="List, validate, test and explain the YAML rules.", no_args_is_help=True)
app.add_typer(rules_app, name="rules")

RuleDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules", help="Extra rule folder (repeatable); a rule with a built-in id replaces the built-in one."
    ),
]
RuleDirArgs = Annotated[
    list[Path] | None, typer.Argument(help="Rule folders (default: the built-in rules).", show_default=False)
]


def _rules_or_fail(dirs: list[Path] | None) -> list[Any]:
    from hanglens.engine import load_rules
    from hanglens.errors import RuleError

    try:
        return load_rules(dirs or [])
    except RuleError as exc:
        _rule_problems(exc.problems)
    except Exception as exc:
        _fail(exc)


def _rule_problems(problems: list[str]) -> NoReturn:
    for problem in problems:
        typer.echo(problem, err=True)
    typer.echo(f"hanglens: {len(problems)} rule problem(s)", err=True)
    raise typer.Exit(EXIT_ERROR)


@rules_app.command("list")
def rules_list(rules: RuleDirs = None) -> None:
    """Every rule: id, category, confidence, title."""
    loaded = _rules_or_fail(rules)
    rows = [(r.id, r.category.value, r.confidence.value, r.title) for r in loaded]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table("id", "category", "confidence", "title")
        for row in rows:
            table.add_row(*row)
        Console().print(table)
    else:
        _write("".join("\t".join(row) + "\n" for row in rows), None)


@rules_app.command("check")
def rules_check(dirs: RuleDirArgs = None) -> None:
    """Validate the built-in rules and the rules in DIRS; print every problem (exit 2) or a count (exit 0)."""
    from hanglens.engine import collect_rules

    try:
        loaded, problems = collect_rules(dirs or [])
    except Exception as exc:
        _fail(exc)
    if problems:
        _rule_problems([str(p) for p in problems])
    typer.echo(f"{len(loaded)} rule(s) OK")


@rules_app.command("test")
def rules_test(
    dirs: RuleDirArgs = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list passing tests.")] = False,
) -> None:
    """Run the tests embedded in the rules (of DIRS, or the built-in ones); exit 1 if any failed."""
    from hanglens.engine import Outcome, repo_root, run_rule_tests, summary

    loaded = _rules_or_fail(dirs)
    if dirs:
        roots = {p.resolve() for p in dirs}
        loaded = [r for r in loaded if r.root is not None and r.root.resolve() in roots]
    else:
        loaded = [r for r in loaded if r.builtin]
    try:
        results = run_rule_tests(loaded, api.analyze, repo_root())
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    for res in results:
        if res.outcome is not Outcome.PASSED or verbose:
            note = f": {res.message}" if res.message else ""
            typer.echo(f"{res.outcome.value.upper():6} {res.test_id}{note}")
    typer.echo(summary(results))
    if any(r.outcome is Outcome.FAILED for r in results):
        raise typer.Exit(EXIT_INCONCLUSIVE)


@rules_app.command("explain")
def rules_explain(
    rule_id: Annotated[str, typer.Argument(help="A rule id (see `hanglens rules list`).")],
    rules: RuleDirs = None,
) -> None:
    """What a rule looks for, in words, what to do when it matches, and its tests."""
    from hanglens.engine import describe_condition
    from hanglens.errors import UsageError

    loaded = {r.id: r for r in _rules_or_fail(rules)}
    rule = loaded.get(rule_id)
    if rule is None:
        import difflib

        close = difflib.get_close_matches(rule_id, sorted(loaded), n=1)
        _fail(
            UsageError(
                f"no rule '{rule_id}'",
                hint=f"did you mean '{close[0]}'?" if close else "see `hanglens rules list`",
            )
        )
    out = [
        f"{rule.id}: {rule.title}",
        f"category: {rule.category.value}   confidence: {rule.confidence.value}   priority: {rule.priority}",
        f"file: {rule.path}",
        "",
    ]
    if rule.requires.events or rule.requires.facts:
        needs = [f"event {k}" for k in rule.requires.events] + [f"fact {f}" for f in rule.requires.facts]
        out.append("requires: " + ", ".join(needs))
    for group, words in (
        ("all", "matches when all of"),
        ("any", "and at least one of"),
        ("none", "and none of"),
    ):
        conds = getattr(rule.match, group)
        if conds:
            out.append(words + ":")
            out.extend(f"  - {describe_condition(c)}" for c in conds)
    if rule.culprits is not None:
        out.append(f"culprits: the {rule.culprits.column} column of '{rule.culprits.from_}'")
    if rule.supersedes:
        out.append("supersedes: " + ", ".join(rule.supersedes))
    out += ["", "remediation:", *(f"  {i}. {step}" for i, step in enumerate(rule.remediation, 1))]
    if rule.collect:
        out += ["collect on the rerun:", *(f"  - {c}" for c in rule.collect)]
    out += ["", "tests:"]
    for t in rule.tests:
        culprits = f" culprits {t.culprits}" if t.culprits is not None else ""
        todo = " [todo]" if t.status.value == "todo" else ""
        out.append(f"  - {t.name}: expect {t.expect.value}{culprits}{todo} ({t.fixture or 'inline logs'})")
    _write("\n".join(out) + "\n", None)


DEMO_REPORT = "hanglens-demo-report.html"


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write the report into.")] = Path(
        "."
    ),
) -> None:
    """Analyse a bundled real job (rank 2 skips an all_reduce) and write hanglens-demo-report.html."""
    from importlib import resources

    from hanglens.report import render_html, render_text, wants_color

    try:
        with resources.as_file(resources.files("hanglens") / "_demo" / "job") as job:
            doc = api.analyze([job], command="hanglens demo").to_dict()
        output.mkdir(parents=True, exist_ok=True)
        target = output / DEMO_REPORT
        target.write_text(render_html(doc), encoding="utf-8")
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    sys.stdout.write(render_text(doc, color=wants_color(sys.stdout)))
    typer.echo(f"\nReport: {target.resolve()}  (open it in a browser; logs analysed: the bundled demo job)")
