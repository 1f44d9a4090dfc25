"""The self-contained HTML report: one file, no external request, every log string escaped."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import jinja2
from markupsafe import Markup

from hanglens.report import _common as c
from hanglens.report.rankmap import build_overview, render_table

MAX_TABLE_ROWS = 300  # a report must stay small enough to attach to a ticket
TIMELINE_LANES = 40
_DISAGREE_COLS = ("op", "numel_in", "numel_out", "shape", "dtype", "state")

_SCRIPT = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  function filterable(table) {
    var rows = table.tBodies.length > 1 ? table.tBodies : (table.tBodies.length ? table.tBodies[0].rows : []);
    if (rows.length < 12) { return; }
    var box = document.createElement("input");
    box.type = "search";
    box.className = "filter";
    box.placeholder = "Filter " + rows.length + " rows\\u2026";
    box.setAttribute("aria-label", "Filter table rows");
    box.addEventListener("input", function () {
      var q = box.value.toLowerCase();
      for (var i = 0; i < rows.length; i++) {
        rows[i].hidden = q !== "" && rows[i].textContent.toLowerCase().indexOf(q) < 0;
      }
    });
    table.parentNode.insertBefore(box, table);
  }
  var tables = document.querySelectorAll("table.filterable");
  for (var i = 0; i < tables.length; i++) { filterable(tables[i]); }
  var toggle = document.getElementById("toggle-all");
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var all = document.querySelectorAll("details");
      var open = toggle.getAttribute("aria-pressed") !== "true";
      for (var j = 0; j < all.length; j++) { all[j].open = open; }
      toggle.setAttribute("aria-pressed", open ? "true" : "false");
      toggle.textContent = open ? "Collapse all" : "Expand all";
    });
  }
  window.addEventListener("beforeprint", function () {
    var all = document.querySelectorAll("details");
    for (var k = 0; k < all.length; k++) { all[k].open = true; }
  });
  var pres = document.querySelectorAll("pre.snippet");
  for (var m = 0; m < pres.length; m++) {
    (function (pre) {
      if (!navigator.clipboard) { return; }
      var b = document.createElement("button");
      b.type = "button";
      b.className = "copy";
      b.textContent = "Copy";
      b.addEventListener("click", function () {
        navigator.clipboard.writeText(pre.textContent).then(function () { b.textContent = "Copied"; });
      });
      pre.parentNode.insertBefore(b, pre);
    })(pres[m]);
  }
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
CSP = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)

_envs: dict[bool, jinja2.Environment] = {}

# Templates with a precompiled module: jinja2's own compiled form of the template, written by
# tools/precompile_templates.py and loaded as bytecode like any module (compiling report.html.j2 from its
# text, lex, parse and Python code generation, took about 0.1 s of each run that writes an HTML report).
PRECOMPILED = {"report.html.j2": "hanglens.report._report_html"}
_STAMP = "fingerprint "


def template_fingerprint(environment: jinja2.Environment, name: str, source: str) -> str:
    """What jinja2's compiled code of `source` depends on: the text, jinja2's version, the syntax options."""
    env = environment
    autoescape = env.autoescape(name) if callable(env.autoescape) else env.autoescape
    options = (jinja2.__version__, name, env.block_start_string, env.block_end_string,
               env.variable_start_string, env.variable_end_string, env.comment_start_string,
               env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
               env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
               sorted(env.extensions), autoescape, env.finalize is not None, env.is_async)
    return hashlib.sha256(repr(options).encode() + b"\0" + source.encode("utf-8")).hexdigest()


def precompiled_source(environment: jinja2.Environment, name: str) -> str:
    """The text of the precompiled module of template `name` (what tools/precompile_templates.py writes)."""
    assert environment.loader is not None
    source = environment.loader.get_source(environment, name)[0]
    code = environment.compile(source, name, raw=True)
    # The docstring shares jinja2's first line, so the line numbers its debug_info names stay right.
    head = (f'"""{name} compiled by jinja2 {jinja2.__version__} (tools/precompile_templates.py; generated, '
            f'do not edit); {_STAMP}{template_fingerprint(environment, name, source)}"""; ')
    return head + code + ("" if code.endswith("\n") else "\n")


def _precompiled_code(environment: jinja2.Environment, name: str, source: str) -> Any:
    """The code object of template `name` from its precompiled module; None when there is none compiled
    from this text, with this jinja2 and these options."""
    module = PRECOMPILED.get(name)
    spec = importlib.util.find_spec(module) if module else None
    get_code = getattr(spec.loader, "get_code", None) if spec is not None else None
    if spec is None or spec.origin is None or get_code is None:
        return None
    try:
        with open(spec.origin, encoding="utf-8") as fh:
            head = fh.readline()
    except OSError:
        return None
    if head.partition(_STAMP)[2][:64] != template_fingerprint(environment, name, source):
        return None
    return get_code(module)


class _Loader(jinja2.PackageLoader):
    """The package's templates, each from its precompiled module while that one is current."""

    def load(self, environment: jinja2.Environment, name: str,
             globals: Any = None) -> jinja2.Template:
        source, filename, uptodate = self.get_source(environment, name)
        code = _precompiled_code(environment, name, source)
        if code is None:  # an edited template, another jinja2: compile the text, as jinja2 does
            code = environment.compile(source, name, filename)
        return environment.template_class.from_code(environment, code, {} if globals is None else globals,
                                                    uptodate)


def _environment(strict: bool) -> jinja2.Environment:
    # A document from an older or newer hanglens may lack a key: render it empty rather than fail;
    # tests render with strict=True so a typo in the template still fails loudly.
    if strict not in _envs:
        env = jinja2.Environment(
            loader=_Loader("hanglens.report", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined if strict else jinja2.ChainableUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        env.filters["prose"] = _prose
        env.filters["ranks"] = c.rank_list
        env.filters["line1"] = c.one_line
        env.filters["where"] = c.where
        env.filters["bytes"] = c.human_bytes
        env.filters["rk"] = _rank_text
        env.filters["capfirst"] = lambda s: str(s)[:1].upper() + str(s)[1:]
        _envs[strict] = env
    return _envs[strict]


def _rank_text(value: Any) -> str:
    r = c.as_rank(value)
    return "?" if r is None else str(r)


def _prose(text: Any) -> Markup:
    """Escape a rule's prose and render its backtick spans as `<code>`."""
    out = []
    for is_code, piece in c.split_code(str(text or "")):
        out.append(f"<code>{escape(piece)}</code>" if is_code else escape(piece))
    return Markup("".join(out))


def render_html(doc: Mapping[str, Any], *, strict: bool = False) -> str:
    """Render the analysis document as one self-contained HTML page."""
    template = _environment(strict).get_template("report.html.j2")
    return template.render(**_context(doc))


def _context(doc: Mapping[str, Any]) -> dict[str, Any]:
    verdict = dict(doc.get("verdict") or {})
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    overview = build_overview(ranks)
    timeline = [t for t in doc.get("timeline") or [] if isinstance(t, Mapping)]
    times = [t["time"] for t in timeline if isinstance(t.get("time"), (int, float))]
    t0 = min(times) if times else None
    findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    primary = c.primary_finding(doc)
    texts = c.first_steps(doc)
    steps = [{"text": t, "snippets": c.shell_commands(t)} for t in texts]
    category = str(verdict.get("category") or "unknown")
    observed = c.observed(doc)
    first_step = texts[0] if texts else ""
    facts = c.fold_timeline(timeline)
    rows = [_fact_row(f, t0) for f in facts[:MAX_TABLE_ROWS]]
    inputs = _inputs(doc.get("inputs") or {})
    if inputs["world_size"] is None and ranks:
        inputs["world_size_note"] = f"not stated in the logs; {c.plural(len(ranks), 'rank')} seen"
    return {
        "csp": Markup(CSP),
        "script": Markup(_SCRIPT),
        "doc": doc,
        "verdict": verdict,
        "category": category,
        "category_title": c.category_title(verdict),
        "confidence": str(verdict.get("confidence") or "low"),
        "culprits": c.rank_list(verdict.get("culprit_ranks") or []),
        "culprit_hosts": c.host_list(verdict.get("culprit_hosts") or []),
        "victims": c.rank_list(verdict.get("victim_ranks") or []),
        "n_culprits": len(verdict.get("culprit_ranks") or []),
        "n_victims": len(verdict.get("victim_ranks") or []),
        "suspects": c.rank_list(verdict.get("suspect_ranks") or []),
        "n_suspects": len(verdict.get("suspect_ranks") or []),
        "observed": observed,
        "silent": _silent(doc),
        "first_step": first_step,
        "first_snippets": c.shell_commands(first_step),
        "findings": [_finding(f, f is primary) for f in findings],
        "overview": overview,
        "overview_table": Markup(render_table(overview)) if overview.rows else None,
        "timeline": rows,
        "timeline_timed": any(r["time_text"] for r in rows),
        "timeline_more": max(0, len(facts) - MAX_TABLE_ROWS),
        "timeline_svg": Markup(_timeline_svg(timeline, t0)) if len(times) > 1 else None,
        "clock": doc.get("clock") or {},
        "disagreement": _disagreement(doc.get("disagreement")),
        "collectives": _collectives(doc.get("collectives") or []),
        "versions": _versions(doc.get("versions") or {}),
        "ruled_out": [
            {**r, "why": c.why_not(str(r.get("reason") or ""), verdict.get("rule_id"))}
            for r in doc.get("ruled_out") or []
            if isinstance(r, Mapping)
        ],
        "not_evaluable": [r for r in doc.get("not_evaluable") or [] if isinstance(r, Mapping)],
        "unexplained": sorted(
            (u for u in doc.get("unexplained") or [] if isinstance(u, Mapping)),
            key=lambda u: (-(c.as_rank(u.get("count")) or 0), str(u.get("template"))),
        )[:MAX_TABLE_ROWS],
        "inputs": inputs,
        "steps": steps,
        "collect": c.collect_items(doc),
        "command": str(doc.get("command") or "hanglens analyze <logs>"),
        "version": str(doc.get("hanglens_version") or "?"),
        "schema_version": doc.get("schema_version"),
    }


def _fact_row(fact: c.Fact, t0: float | None) -> dict[str, Any]:
    row = fact.row
    also = [
        {"kind": a.get("kind"), "rank": c.as_rank(a.get("rank")), "where": c.where(a), "text": c.fact_text(a)}
        for a in fact.also
    ]
    return {
        "rel": c.rel_time(row.get("time"), t0),
        "time_text": row.get("time_text") or "",
        "host": row.get("host") or "",
        "rank": c.as_rank(row.get("rank")),
        "kind": row.get("kind"),
        "text": fact.text,
        "where": c.where(row),
        "also": also,
    }


def _finding(f: Mapping[str, Any], primary: bool) -> dict[str, Any]:
    evidence = []
    for ev in f.get("evidence") or []:
        if not isinstance(ev, Mapping):
            continue
        ctx = ev.get("context") or {}
        before = [str(x) for x in ctx.get("before") or []]
        after = [str(x) for x in ctx.get("after") or []]
        line = ev.get("line")
        n = line if isinstance(line, int) else None
        rows = [((n - len(before) + i) if n is not None else None, t, False) for i, t in enumerate(before)]
        rows.append((n, str(ctx.get("line") or ev.get("text") or ""), True))
        rows += [((n + 1 + i) if n is not None else None, t, False) for i, t in enumerate(after)]
        evidence.append({**ev, "rows": rows})
    return {**f, "primary": primary, "evidence_rows": evidence}


def _majority(values: Sequence[Any]) -> Any:
    counts = Counter(repr(v) for v in values)
    if not counts:
        return None
    best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    for v in values:
        if repr(v) == best:
            return v
    return None


def _silent(doc: Mapping[str, Any]) -> dict[str, Any]:
    heading, rows, footer = c.silent_table(doc)
    return {"heading": heading, "rows": rows[:MAX_TABLE_ROWS], "footer": footer,
            "columns": c.SILENT_COLUMNS}


def _disagreement(d: Any) -> dict[str, Any] | None:
    if not isinstance(d, Mapping):
        return None
    rows = [r for r in d.get("rows") or [] if isinstance(r, Mapping)]
    differs = [str(x) for x in d.get("differs") or []]
    cols = [col for col in _DISAGREE_COLS if col in differs or any(r.get(col) is not None for r in rows)]
    majority = {col: _majority([r.get(col) for r in rows]) for col in cols}
    runs = c.fold_runs(rows, lambda r: tuple(repr(r.get(col)) for col in cols))
    out = []
    for run in runs[:MAX_TABLE_ROWS]:
        first = run.items[0]
        cells = [
            {"value": first.get(col), "odd": col in differs and repr(first.get(col)) != repr(majority[col])}
            for col in cols
        ]
        out.append(
            {"label": run.label, "count": run.count, "cells": cells, "odd": any(x["odd"] for x in cells)}
        )
    return {
        "pg": d.get("pg"),
        "seq": d.get("seq"),
        "cols": cols,
        "differs": differs,
        "rows": out,
        "more": max(0, len(runs) - MAX_TABLE_ROWS),
    }


def _collectives(rows: Sequence[Any]) -> dict[str, Any]:
    good = [r for r in rows if isinstance(r, Mapping)]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in good:
        groups.setdefault(str(r.get("pg")), []).append(r)
    out = []
    for pg in sorted(groups):
        runs = c.fold_runs(
            groups[pg],
            lambda r: (r.get("seq"), r.get("op"), r.get("numel_in"), r.get("numel_out"), r.get("state")),
        )
        for run in runs:
            out.append({"pg": pg, "label": run.label, "count": run.count, **run.items[0]})
    return {"rows": out[:MAX_TABLE_ROWS], "more": max(0, len(out) - MAX_TABLE_ROWS), "total": len(good)}


def _versions(v: Mapping[str, Any]) -> dict[str, Any]:
    by_host = v.get("by_host") or {}
    distinct = v.get("distinct") or {}
    comps = ["torch", "nccl", "cuda", "driver"]
    comps += sorted({k for h in by_host.values() if isinstance(h, Mapping) for k in h} - set(comps))
    groups: dict[tuple[str, ...], list[str]] = {}
    for host in sorted(by_host):
        info = by_host[host] if isinstance(by_host[host], Mapping) else {}
        key = tuple(", ".join(str(x) for x in info.get(comp) or []) for comp in comps)
        groups.setdefault(key, []).append(str(host))
    rows = [
        {"hosts": c.host_list(hosts, limit=4), "count": len(hosts), "values": list(key)}
        for key, hosts in sorted(groups.items(), key=lambda kv: kv[1][0])
    ]
    mixed = {comp for comp in comps if len(distinct.get(comp) or []) > 1}
    return {
        "comps": comps,
        "rows": rows[:MAX_TABLE_ROWS],
        "mixed": mixed,
        "distinct": {k: [str(x) for x in distinct.get(k) or []] for k in comps},
    }


def _inputs(i: Mapping[str, Any]) -> dict[str, Any]:
    detail = [d for d in i.get("detail") or [] if isinstance(d, Mapping)]
    detail = sorted(detail, key=lambda d: str(d.get("path")))
    return {
        "files": i.get("files"),
        "bytes": i.get("bytes"),
        "world_size": i.get("world_size"),
        "ranks_seen": c.rank_list(i.get("ranks_seen") or [], limit=20),
        "n_ranks_seen": len(i.get("ranks_seen") or []),
        "hosts": c.host_list(i.get("hosts") or [], limit=12),
        "n_hosts": len(i.get("hosts") or []),
        "skipped": [s for s in i.get("skipped") or [] if isinstance(s, Mapping)],
        "detail": detail[:MAX_TABLE_ROWS],
        "detail_more": max(0, len(detail) - MAX_TABLE_ROWS),
    }


def _timeline_svg(timeline: Sequence[Mapping[str, Any]], t0: float | None) -> str:
    """Dots on one lane per host, x = seconds after the first failure."""
    pts = [t for t in timeline if isinstance(t.get("time"), (int, float))]
    if t0 is None or not pts:
        return ""
    lanes = sorted({str(t.get("host") or "?") for t in pts})[:TIMELINE_LANES]
    span = max(float(t["time"]) - t0 for t in pts) or 1.0
    left, width, lane_h = 230, 560, 16
    height = lane_h * len(lanes) + 28
    out = [
        f'<svg class="timeline" role="img" xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
        f'height="{height}" viewBox="0 0 {left + width + 20} {height}" aria-label="First failures per host">'
    ]
    for i, host in enumerate(lanes):
        y = i * lane_h + 12
        out.append(
            f'<text class="host" x="4" y="{y + 4}">{escape(c.one_line(host, 34))}</text>'
            f'<line class="lane" x1="{left}" y1="{y}" x2="{left + width}" y2="{y}"/>'
        )
    lane_of = {h: i for i, h in enumerate(lanes)}
    for t in pts:
        lane = lane_of.get(str(t.get("host") or "?"))
        if lane is None:
            continue
        x = left + width * (float(t["time"]) - t0) / span
        y = lane * lane_h + 12
        rank = t.get("rank")
        label = (
            f"{c.rel_time(t['time'], t0)} rank {rank if rank is not None else '?'} {t.get('kind')}: "
            f"{c.one_line(t.get('text'), 160)}"
        )
        out.append(
            f'<circle class="dot k-{escape(_css_token(t.get("kind")))}" cx="{x:.1f}" cy="{y}" r="4">'
            f"<title>{escape(label)}</title></circle>"
        )
    axis_y = len(lanes) * lane_h + 20
    out.append(
        f'<text class="axis" x="{left}" y="{axis_y}">+0 s</text>'
        f'<text class="axis" x="{left + width}" y="{axis_y}" text-anchor="end">+{span:.3f} s</text></svg>'
    )
    return "".join(out)


def _css_token(s: Any) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in str(s or "none"))[:40]
