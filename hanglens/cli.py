"""The `hanglens` command line: parse options, call `hanglens.api`, render, exit with a named code."""

from __future__ import annotations

import csv
import io
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from hanglens import api
from hanglens.errors import HanglensError

EXIT_OK = 0            # verdict reached / command succeeded
EXIT_INCONCLUSIVE = 1  # analysed, but no rule explained the failure (category unknown)
EXIT_ERROR = 2         # usage, input or rule error (one line on stderr)
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


@app.callback()
def main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")] = False,
         ) -> None:
    _state["debug"] = debug


Paths = Annotated[list[Path], typer.Argument(help="Log files, folders, globs or archives.", show_default=False)]


def _event_row(e: Any) -> dict[str, Any]:
    return {"rank": e.rank, "host": e.host, "time": e.time, "kind": e.kind, "parser": e.parser,
            "path": e.ref.path, "line": e.ref.line, "fields": dict(e.fields), "text": e.text}


@app.command()
def events(paths: Paths,
           fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.text,
           kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="Only these event kinds.")] = None,
           output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here, not stdout.")] = None,
           ) -> None:
    """Every event read from the logs: rank, host, time, kind, key fields, source path:line."""
    try:
        ing = api.read([str(p) for p in paths])
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
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
            w.writerow([r["rank"], r["host"], r["time"], r["kind"], r["path"], r["line"],
                        json.dumps(r["fields"], sort_keys=True, ensure_ascii=False), r["text"]])
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
def inputs(paths: Paths,
           fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format (text or json).")] = Fmt.text,
           ) -> None:
    """The files read (ranks, hosts, streams, lines, events) and the inputs skipped, with reasons."""
    try:
        ing = api.read([str(p) for p in paths])
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        _fail(exc)
    files = [{"path": f.path, "size": f.size, "lines": f.lines, "events": f.events,
              "ranks": list(f.ranks), "hosts": list(f.hosts), "stream": f.origin.stream,
              "local_rank": f.origin.local_rank, "attempt": f.origin.attempt} for f in ing.files]
    skipped = [{"path": s.path, "reason": s.reason} for s in ing.skipped]
    if fmt is Fmt.json:
        _write(json.dumps({"files": files, "skipped": skipped}, indent=1, sort_keys=True) + "\n", None)
        return
    lines = []
    for f in files:
        ranks = ",".join(map(str, f["ranks"])) or "-"
        hosts = ",".join(f["hosts"]) or "-"
        lines.append(f"{f['path']}\t{f['size']} B\t{f['lines']} lines\t{f['events']} events\t"
                     f"ranks {ranks}\thosts {hosts}\tstream {f['stream'] or '-'}")
    for s in skipped:
        lines.append(f"skipped\t{s['path']}\t{s['reason']}")
    _write("\n".join(lines) + ("\n" if lines else ""), None)
