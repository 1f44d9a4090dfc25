"""The `hanglens` command line: parse options, call `hanglens.api`, render, exit with a named code."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperArgument, TyperGroup

try:  # typer >= 0.20 parses with its own copy of click; its exceptions are the ones raised
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer uses click itself
    import click  # type: ignore[no-redef]

from hanglens.errors import HanglensError, UsageError


def term_text(value: Any) -> str:
    """Text for the terminal with control characters escaped (imported on use: `--version` stays fast)."""
    from hanglens.report._common import term_text as escape

    return escape(value)


if TYPE_CHECKING:
    from hanglens import api
    from hanglens.ingest.progress import OnProgress, ReadProgress
else:

    class _LazyApi:
        """`hanglens.api` imported on first use: `--version` and `--help` do not pay for the reader."""

        def __getattr__(self, name: str) -> Any:
            from hanglens import api as module

            return getattr(module, name)

    api = _LazyApi()

# True when this module runs the `hanglens` process itself (set by hanglens.__main__), not a command invoked
# inside someone else's interpreter: only then may it tune process-wide state such as the garbage collector.
OWNS_PROCESS = False

EXIT_OK = 0  # verdict reached / command succeeded
EXIT_INCONCLUSIVE = 1  # analysed, but no rule explained the failure; scan: some jobs could not be analysed
EXIT_ERROR = 2  # usage, input or rule error (one line on stderr)
EXIT_INTERRUPTED = 130
EXIT_STDOUT_CLOSED = 141  # the reader of stdout went away (`| head`): 128 + SIGPIPE, as git reports it


class _StdoutClosed(Exception):
    """stdout is a pipe nobody reads any more; the command stops there, quietly."""


def _out(text: str) -> None:
    """Write `text` to stdout now (flushed, so a closed pipe is noticed here, not at exit)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise _StdoutClosed from None


def _stdout_closed(standalone_mode: bool) -> Any:
    """End quietly with EXIT_STDOUT_CLOSED: no message (the reader is gone, as with `git log | head`)."""
    if OWNS_PROCESS:
        # What is still buffered can never be written: point stdout at the null device, so the flush at
        # interpreter exit succeeds instead of printing a BrokenPipeError.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return _exit(EXIT_STDOUT_CLOSED, standalone_mode)


class _PlainArgument(TyperArgument):
    """A positional argument shown as `PATH...` in usage and help, without a `<list[Path]>` type."""

    def _usage_display_name(self) -> str:
        name = self.metavar or (self.name or "").upper()
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return name if self.required else f"[{name}]"

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return None


def _plain(cmd: click.Command | None) -> click.Command | None:
    for p in getattr(cmd, "params", []):
        if isinstance(p, TyperArgument) and not isinstance(p, _PlainArgument):
            p.__class__ = _PlainArgument
    return cmd


class _Group(TyperGroup):
    """Plain help (flags shown as flags) and one-line usage errors: `hanglens: problem (see ... --help)`."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return _plain(super().get_command(ctx, cmd_name))

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(
                args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra
            )
        except _StdoutClosed:
            return _stdout_closed(standalone_mode)
        except SystemExit as exc:
            # typer ends a command whose stdout is closed (help, usage) with exit 1 after wrapping stdout;
            # the same event gets the same documented code as a command's own output.
            if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
                return _stdout_closed(standalone_mode)
            raise
        except click.ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `hanglens` alone: the help, as click shows it
                exc.show()
                return _exit(exc.exit_code, standalone_mode)
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "hanglens"
            click.echo(f"hanglens: {term_text(exc.format_message())} (see `{where} --help`)", err=True)
            rv = exc.exit_code
        except typer.Abort:
            click.echo("hanglens: interrupted", err=True)
            rv = EXIT_INTERRUPTED
        return _exit(rv, standalone_mode)


def _exit(rv: Any, standalone_mode: bool) -> Any:
    if not standalone_mode:
        return rv
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


app = typer.Typer(
    cls=_Group,
    rich_markup_mode=None,
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
    if _state["debug"] or isinstance(exc, _StdoutClosed):
        raise exc
    if isinstance(exc, HanglensError):
        for line in str(exc).splitlines() or [""]:
            typer.echo(f"hanglens: {term_text(line)}", err=True)
        raise typer.Exit(exc.exit_code)
    if isinstance(exc, OSError) and exc.filename is not None:
        # an input or output the system refused: the path and the reason, not a crash
        typer.echo(f"hanglens: {term_text(exc.filename)}: {term_text(exc.strerror or exc)}", err=True)
        raise typer.Exit(EXIT_ERROR)
    typer.echo(
        f"hanglens: internal error: {type(exc).__name__}: {term_text(exc)} (rerun with --debug)", err=True
    )
    raise typer.Exit(EXIT_ERROR)


def _check_output(path: Path | None, flag: str) -> None:
    """Refuse an output path that cannot be written before any work is done (exit 2, one line)."""
    if path is None:
        return
    shown = term_text(path)
    if path.is_dir():
        raise UsageError(f"cannot write {shown}: it is a folder", hint=f"give {flag} a file name")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {shown}: no such folder {term_text(parent)}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {shown}: permission denied on {term_text(parent)}")


def _save(path: Path, text: str) -> None:
    """Write a report; the text is already UTF-8-safe, a stray surrogate is escaped rather than fatal."""
    with open(path, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
        fh.write(text)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        _out(text)
    else:
        _save(output, text)


def _write_json(doc: Any, output: Path | None) -> None:
    """The JSON document to stdout or `output`, written as it is encoded (a big job's text is never whole)."""
    from hanglens import report

    if output is None:
        try:  # (as `_out`: a closed pipe ends quietly with its own exit code)
            report.write_json(doc, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:
            raise _StdoutClosed from None
        return
    with open(output, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
        report.write_json(doc, fh)


def _version(value: bool) -> None:
    if value:
        from hanglens import __version__

        _out(f"hanglens {__version__}\n")
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
    list[Path],
    typer.Argument(metavar="PATH...", help="Log files, folders, globs or archives.", show_default=False),
]


class AnalyzeFmt(str, Enum):
    text = "text"
    json = "json"


LimitOpts = Annotated[
    list[str] | None,
    typer.Option(
        "--limit",
        metavar="NAME=VALUE",
        help="Change one limit on hostile input (repeatable), e.g. --limit max_member_bytes=16GiB; "
        "see README, Limits.",
    ),
]


def _limits(items: list[str] | None, **extra: Any) -> Any:
    """The Limits the options give; a bad --limit is a usage error (one line, exit 2)."""
    from hanglens.limits import parse_limits

    try:
        return parse_limits(items or []).with_overrides(**extra)
    except ValueError as exc:
        _fail(UsageError(str(exc)))


Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar on stderr.")]

PROGRESS_DELAY_S = 2.0  # reading that ends sooner never shows the bar


@contextmanager
def _progress_bar(show: bool) -> Iterator[OnProgress | None]:
    """A progress bar on stderr (bytes read of total, files done) while the inputs are read.

    Only when `show` and stderr is a terminal, and only once reading has taken PROGRESS_DELAY_S; it is
    erased when the command finishes. Yields the callback to hand to `api`, or None.
    """
    if not show or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[files]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True, highlight=False),
        transient=True,
    )
    task = bar.add_task("reading", total=None, files="")
    lock = threading.Lock()
    state = {"started": False, "over": False}

    def start() -> None:
        with lock:
            if not state["over"]:
                bar.start()
                state["started"] = True

    def update(p: ReadProgress) -> None:
        done = p.files_done >= p.files_total
        bar.update(task, completed=p.bytes_done, total=p.bytes_total or None,
                   description="analysing" if done else "reading",
                   files=f"{p.files_done:,}/{p.files_total:,} files")

    timer = threading.Timer(PROGRESS_DELAY_S, start)
    timer.daemon = True
    if PROGRESS_DELAY_S > 0:
        timer.start()
    else:
        start()
    try:
        yield update
    finally:
        timer.cancel()
        with lock:
            state["over"] = True
            if state["started"]:
                bar.stop()


# What `analyze` needs after reading: pandas, the tables, the document and the rule engine.
ANALYSIS_MODULES = ("hanglens.analysis", "hanglens.document", "hanglens.engine")


def _import_frozen(*modules: str) -> None:
    """Import `modules` with the cyclic garbage collector paused, then freeze all there is.

    What they build (~10^5 objects for pandas and the engine) lives until exit; every collection while
    they import, and every full collection after, would walk it again (about 0.1 s of CPU a run), as it
    would the events already read. Process-wide: done only when the command line owns the process
    (OWNS_PROCESS); otherwise the modules load when first used.
    """
    if OWNS_PROCESS:
        from hanglens._frozen import import_frozen

        import_frozen(*modules)


def _import_analysis() -> None:
    """`_import_frozen(ANALYSIS_MODULES)`; pandas without pyarrow when reading did not load pyarrow.

    pandas 3 imports pyarrow whenever it is installed, for its default string dtype; hanglens's tables hold
    Python objects and use none of it. A job of small files is read without pyarrow (only big blocks use
    it): there pandas is imported with pyarrow hidden and keeps its strings in Python, the same dtype (`str`,
    missing values NaN) with the same results. The job's process holds about 35 MiB less (pyarrow's
    libraries) and builds the tables in less: shape (c) at 4,096 ranks ends at 142 MiB instead of 185.
    Process-wide, like `_import_frozen`: only when the command line owns the process, and only for pandas'
    import (pyarrow can be imported afterwards, e.g. to write Parquet).
    """
    hide = OWNS_PROCESS and "pandas" not in sys.modules and "pyarrow" not in sys.modules
    if hide:
        sys.modules["pyarrow"] = None  # type: ignore[assignment]  # (`import pyarrow` raises ImportError)
    try:
        _import_frozen(*ANALYSIS_MODULES)
    finally:
        if hide and sys.modules.get("pyarrow", False) is None:
            del sys.modules["pyarrow"]


def _read_and_analyze(inputs: list[str], command: str, limits: Any, rules_dirs: list[str] | None = None,
                      progress: OnProgress | None = None) -> Any:
    """`api.analyze` in two steps, importing the analysis (pandas) only after reading: reader worker
    processes fork from a parent without it, and what is imported is frozen (`_import_frozen`)."""
    _import_frozen("hanglens.api")
    ingested = api.read(inputs, limits=limits, progress=progress)
    if OWNS_PROCESS:
        # From here on, freed blocks of 128 KiB or more go back to the system, not into holes the process
        # keeps (`_malloc`); not while reading, whose big blocks would pay a fresh mapping each.
        from hanglens._malloc import fix_mmap_threshold

        fix_mmap_threshold()
    _import_analysis()
    return api.analyze_read(ingested, inputs, rules_dirs=rules_dirs or [], command=command, limits=limits,
                            keep_events=False)


RulesDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules",
        metavar="DIR",
        help="Folder of extra rules (repeatable); a rule with a built-in id replaces it.",
    ),
]


@app.command()
def analyze(
    paths: Paths,
    rules: RulesDirs = None,
    fmt: Annotated[
        AnalyzeFmt,
        typer.Option("--format", "-f", metavar="text|json", help="Output on stdout (or --output)."),
    ] = AnalyzeFmt.text,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the --format output here.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML report.")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", metavar="FILE", help="Also write a Markdown summary.")
    ] = None,
    redact_: Annotated[
        bool,
        typer.Option(
            "--redact", help="Replace hosts, IPs, users, home paths, e-mails and tokens in every output."
        ),
    ] = False,
    limit: LimitOpts = None,
    quiet: Quiet = False,
) -> None:
    """Name the root cause: category, culprit and victim ranks, evidence lines, and what to do.

    Exit codes: 0 a verdict was reached (including "none": no failure found), 1 analysed but no rule
    explained the failure (category "unknown"), 2 usage, input or rule error.
    """
    from hanglens import report  # each renderer is imported when used (report.html costs jinja2)

    limits = _limits(limit)
    argv = ["hanglens", "analyze", *(str(p) for p in paths)]
    for d in rules or []:
        argv += ["--rules", str(d)]
    try:
        for path, flag in ((output, "--output"), (html, "--html"), (markdown, "--markdown")):
            _check_output(path, flag)
        with _progress_bar(not quiet and not (fmt is AnalyzeFmt.json and output is None)) as progress:
            analysis = _read_and_analyze([str(p) for p in paths], " ".join(argv), limits,
                                         [str(d) for d in rules or []], progress)
        doc = analysis.to_dict(consume=True)   # (its events are let go while the document is made)
        del analysis  # the tables: only the document is written from here on
        if redact_:
            doc = report.redact(doc)
        if html is not None:
            _save(html, report.render_html(doc))
        if markdown is not None:
            _save(markdown, report.render_markdown(doc))
        if fmt is AnalyzeFmt.json:
            _write_json(doc, output)
        else:
            color = output is None and report.wants_color(sys.stdout)
            _write(report.render_text(doc, color=color), output)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    category = doc["verdict"]["category"]
    raise typer.Exit(EXIT_INCONCLUSIVE if category == "unknown" else EXIT_OK)


def _read(paths: list[Path], limit: list[str] | None = None, bar: bool = False) -> Any:
    """Read the inputs for `events`/`inputs` (`bar`: a progress bar on a terminal); errors become one
    line and a named exit code."""
    limits = _limits(limit)
    try:
        with _progress_bar(bar) as progress:
            return api.read([str(p) for p in paths], limits=limits, progress=progress)
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)


def _event_row(e: Any, file_rank: dict[str, int]) -> dict[str, Any]:
    return {
        # a line without a rank of its own belongs to its file's rank, as in `inputs` and `analyze`
        "rank": e.rank if e.rank is not None else file_rank.get(e.path),
        "host": e.host,
        "local_rank": e.local_rank,
        "attempt": e.attempt,
        "writer": e.writer,
        "level": e.level,
        "time": e.time,
        "kind": e.kind,
        "parser": e.parser,
        "path": e.path,
        "line": e.line,
        "fields": dict(e.fields),
        "text": e.text,
    }


def _json(doc: Any) -> str:
    """Readable JSON; a file name that is not UTF-8 (a lone surrogate) falls back to `\\u` escapes."""
    text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(doc, indent=1, sort_keys=True)
    return text + "\n"


def _known_kinds() -> list[str]:
    from hanglens.parsers import event_catalog

    return sorted(set(event_catalog()))


def _time_text(t: Any) -> str:
    from hanglens.document import time_text

    return (time_text(t) or "-") if isinstance(t, (int, float)) else "-"


@app.command()
def events(
    paths: Paths,
    fmt: Annotated[
        Fmt, typer.Option("--format", "-f", metavar="text|json|csv", help="Output format.")
    ] = Fmt.text,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", "-k", metavar="KIND", help="Only these event kinds (repeatable)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write here, not stdout.")
    ] = None,
    limit: LimitOpts = None,
    quiet: Quiet = False,
) -> None:
    """Every event read from the logs: source path:line, rank, host, time, kind, key fields."""
    known = _known_kinds()
    unknown = sorted(set(kind or []) - set(known))
    if unknown:
        _fail(
            UsageError(
                f"unknown event kind {', '.join(term_text(k) for k in unknown)}",
                hint="known kinds: " + ", ".join(known),
            )
        )
    try:
        _check_output(output, "--output")
    except HanglensError as exc:
        _fail(exc)
    ing = _read(paths, limit, bar=not quiet and (fmt is Fmt.text or output is not None))
    evs = [e for e in ing.events if not kind or e.kind in kind]
    from hanglens.ingest.streams import file_owners

    file_rank, _ = file_owners(ing.files, ing.events, {})
    rows = [_event_row(e, file_rank) for e in evs]
    if fmt is Fmt.json:
        doc = {"events": rows, "skipped": [{"path": s.path, "reason": s.reason} for s in ing.skipped]}
        _write(_json(doc), output)
    elif fmt is Fmt.csv:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "host", "time", "kind", "path", "line", "fields", "text"])
        for r in rows:
            w.writerow(
                [
                    r["rank"],
                    term_text(r["host"] or ""),
                    r["time"],
                    r["kind"],
                    term_text(r["path"]),
                    r["line"],
                    term_text(json.dumps(r["fields"], sort_keys=True, ensure_ascii=False)),
                    term_text(r["text"]),
                ]
            )
        _write(buf.getvalue(), output)
    else:
        out = []
        for r in rows:
            fields = " ".join(
                f"{k}={term_text(v)}" for k, v in sorted(r["fields"].items()) if v not in (None, "", [])
            )
            rank = "-" if r["rank"] is None else str(r["rank"])
            out.append(
                f"{term_text(r['path'])}:{r['line']}\trank {rank}\t{term_text(r['host'] or '-')}\t"
                f"{_time_text(r['time'])}\t{r['kind']}\t{fields}"
            )
        for s in ing.skipped:
            out.append(f"skipped {term_text(s.path)}: {term_text(s.reason)}")
        _write("\n".join(out) + ("\n" if out else ""), output)


@app.command()
def inputs(
    paths: Paths,
    fmt: Annotated[
        Fmt, typer.Option("--format", "-f", metavar="text|json", help="Output format.")
    ] = Fmt.text,
    limit: LimitOpts = None,
    quiet: Quiet = False,
) -> None:
    """The files read (ranks, hosts, streams, lines, events) and the inputs skipped, with reasons."""
    ing = _read(paths, limit, bar=not quiet and fmt is Fmt.text)
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
        _write(_json({"files": files, "skipped": skipped}), None)
        return
    lines = []
    for f in files:
        ranks = ",".join(map(str, f["ranks"])) or "-"
        hosts = term_text(",".join(f["hosts"])) or "-"
        lr = "-" if f["local_rank"] is None else f["local_rank"]
        attempt = "-" if f["attempt"] is None else f["attempt"]
        lines.append(
            f"{term_text(f['path'])}\t{f['size']} B\t{f['lines']} lines\t{f['events']} events\t"
            f"ranks {ranks}\thosts {hosts}\tlocal_rank {lr}\tattempt {attempt}\t"
            f"stream {f['stream'] or '-'}"
        )
        lines.extend(f"\tnote: {term_text(n)}" for n in f["notes"])
    for s in skipped:
        lines.append(f"skipped\t{term_text(s['path'])}\t{term_text(s['reason'])}")
    _write("\n".join(lines) + ("\n" if lines else ""), None)


class Engine(str, Enum):
    local = "local"
    dask = "dask"


@app.command()
def scan(
    roots: Annotated[
        list[Path],
        typer.Argument(metavar="ROOT...", help="Folders (or archives) holding job logs.", show_default=False),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="DIR", help="Output folder (tables, reports, index.html, cache)."
        ),
    ],
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", metavar="N", help="Worker processes [default: cores].")
    ] = None,
    engine: Annotated[
        Engine,
        typer.Option("--engine", metavar="local|dask", help="local process pool, or dask.distributed."),
    ] = Engine.local,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDR",
            help="dask scheduler address (tcp://host:port); without it a LocalCluster on "
            "127.0.0.1. Workers must see the job paths under the same names (a shared filesystem).",
        ),
    ] = None,
    job_glob: Annotated[
        str | None,
        typer.Option(
            "--job-glob",
            metavar="PATTERN",
            help="Glob relative to each ROOT naming the job folders/archives "
            "(e.g. '*/job_*' or '**/*.tar.gz'), instead of the default rule.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DATE",
            help="Only jobs with a file modified since DATE (YYYY-MM-DD[THH:MM], local time).",
        ),
    ] = None,
    rules: Annotated[
        list[Path] | None, typer.Option("--rules", metavar="DIR", help="Extra rules folder (repeatable).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Ignore the cache: analyse every job again.")
    ] = False,
    job_timeout: Annotated[
        float | None,
        typer.Option(
            "--job-timeout",
            metavar="SECONDS",
            help="Wall-clock deadline of one job (either engine); a job past it is a row with status "
            "timeout. Same as --limit job_deadline_s=SECONDS [default: 600].",
        ),
    ] = None,
    limit: LimitOpts = None,
) -> None:
    """Analyse every job under ROOT (job folders and archives) and write a fleet table and index page.

    A job is an archive (.tar.gz, .tgz, .tar, .zip, .tar.zst, ...) or a folder that directly holds log
    files or torchrun attempt_N trees (restart attempts belong to their job); nested folders of a job
    are part of it. Writes OUT/jobs.parquet, OUT/jobs.csv, OUT/jobs/<job_id>/report.{json,html} and
    OUT/index.html (rewritten as jobs complete). Unchanged jobs are taken from OUT/.hanglens-cache. Each
    job runs under a deadline and a memory cap; one that fails, crashes, hangs or runs out of memory is a
    row with its status and reason. Exit 0 when every job was analysed, 1 when the scan finished but
    some jobs could not be analysed, 2 on a usage error or when no job was found, 130 when interrupted
    (the outputs then hold the jobs that completed).
    """
    from hanglens.scan import ScanSummary

    if job_timeout is not None and job_timeout <= 0:
        _fail(UsageError("--job-timeout must be more than 0 seconds"))
    limits = _limits(limit, job_deadline_s=job_timeout)

    done: list[ScanSummary] = []
    for root in roots:
        if not root.exists():
            _fail(UsageError(f"{term_text(root)}: no such file or folder", hint="nothing was written"))
    try:
        table = api.scan(
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
            limits=limits,
        )
    except KeyboardInterrupt:
        n = done[0].analysed + done[0].cached if done else 0
        typer.echo(f"hanglens: interrupted; {term_text(out)} holds the {n} jobs that completed", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    s = done[0]
    parquet = f" (jobs.parquet skipped: {s.parquet})" if s.parquet else ""
    typer.echo(
        f"scanned {s.jobs} jobs: {s.jobs - s.errors} analysed, {s.errors} could not be analysed "
        f"({s.analysed} run now, {s.cached} from cache), {len(s.skipped)} paths skipped "
        f"-> {term_text(out / 'index.html')}{parquet}",
        err=True,
    )
    for line in _category_summary(table):
        typer.echo(line, err=True)
    if s.jobs == 0:
        typer.echo(f"hanglens: no jobs found under {', '.join(term_text(r) for r in roots)}", err=True)
        raise typer.Exit(EXIT_ERROR)
    if s.errors:
        raise typer.Exit(EXIT_INCONCLUSIVE)


def _category_summary(table: Any) -> list[str]:
    """Jobs per category, most first, e.g. `  12  control_flow_divergence  Control-flow divergence`."""
    from hanglens.report._common import CATEGORY_TITLES

    if table is None or not len(table) or "category" not in table:
        return []
    counts = table["category"].fillna("(not analysed)").value_counts()
    rows = sorted(counts.items(), key=lambda kv: (-int(kv[1]), str(kv[0])))
    width = max(len(str(int(n))) for _, n in rows)
    return ["jobs per category:"] + [
        f"  {int(n):>{width}}  {term_text(cat)}  {CATEGORY_TITLES.get(str(cat), '')}".rstrip()
        for cat, n in rows
    ]


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
        typer.echo(term_text(problem), err=True)
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
            table.add_row(*(term_text(x) for x in row))
        Console(markup=False, emoji=False, highlight=False).print(table)
    else:
        _write("".join("\t".join(term_text(x) for x in row) + "\n" for row in rows), None)


@rules_app.command("check")
def rules_check(dirs: RuleDirArgs = None, limit: LimitOpts = None) -> None:
    """Validate the built-in rules and the rules in DIRS; print every problem (exit 2) or a count (exit 0)."""
    from hanglens.engine import collect_rules

    limits = _limits(limit)
    try:
        loaded, problems = collect_rules(dirs or [], limits=limits)
    except Exception as exc:
        _fail(exc)
    if problems:
        _rule_problems([str(p) for p in problems])
    _out(f"{len(loaded)} rule(s) OK\n")


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
            _out(term_text(f"{res.outcome.value.upper():6} {res.test_id}{note}") + "\n")
    _out(summary(results) + "\n")
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
                f"no rule '{term_text(rule_id)}'",
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
    _write("\n".join(term_text(line) for line in out) + "\n", None)


DEMO_REPORT = "hanglens-demo-report.html"


@app.command()
def demo(
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="Folder to write the report into.")
    ] = Path("."),
) -> None:
    """Analyse a bundled real job (rank 2 skips an all_reduce) and write hanglens-demo-report.html."""
    from importlib import resources

    from hanglens.report import render_html, render_text, wants_color

    try:
        with resources.as_file(resources.files("hanglens") / "_demo" / "job") as job:
            doc = _read_and_analyze([str(job)], "hanglens demo", _limits(None)).to_dict()
        output.mkdir(parents=True, exist_ok=True)
        target = output / DEMO_REPORT
        _save(target, render_html(doc))
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    _out(render_text(doc, color=wants_color(sys.stdout))
         + f"\nReport: {target.resolve()}  (open it in a browser; logs analysed: the bundled demo job)\n")
