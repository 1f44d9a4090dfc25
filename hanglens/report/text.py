"""The terminal summary: the answer in ten seconds, styled with rich or as plain text."""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Mapping
from typing import Any, TextIO

from hanglens.report import _common as c

Segment = tuple[str, str]  # (rich style or "", text)

MAX_EVIDENCE = 3


def _lines(doc: Mapping[str, Any], width: int) -> list[list[Segment]]:
    verdict = doc.get("verdict") or {}
    category = str(verdict.get("category") or "unknown")
    conf = str(verdict.get("confidence") or "low")
    head_style = "bold green" if category == "none" else ("bold" if category == "unknown" else "bold red")
    out: list[list[Segment]] = []
    head: list[Segment] = [
        ("bold", "hanglens: "),
        (head_style, c.category_title(verdict)),
        ("dim", f"  [{conf} confidence]"),
    ]
    if verdict.get("rule_id"):
        head.append(("dim", f"  rule {c.one_line(verdict['rule_id'], 80)}"))
    out.append(head)

    culprits = verdict.get("culprit_ranks") or []
    victims = verdict.get("victim_ranks") or []
    who: list[Segment] = (
        [
            ("", "Culprit " + ("rank " if len(culprits) == 1 else "ranks ")),
            ("bold red", c.rank_list(culprits)),
        ]
        if culprits
        else [("", "No culprit named")]
    )
    suspects = verdict.get("suspect_ranks") or []
    if suspects:
        who += [("", "   Suspects "), ("bold", c.rank_list(suspects))]
    hosts = verdict.get("culprit_hosts") or []
    if hosts:
        who += [("", " on "), ("red", c.one_line(c.host_list(hosts, limit=3), 120))]
    if victims:
        who += [("", "   Victims "), ("yellow", c.rank_list(victims)), ("dim", f" ({len(victims)})")]
    silent = [
        r.get("rank")
        for r in doc.get("ranks") or []
        if isinstance(r, Mapping) and r.get("status") == "silent"
    ]
    inputs = doc.get("inputs")
    inputs = inputs if isinstance(inputs, Mapping) else {}
    # Without a stated world size the ranks between those seen are only assumed to exist, and an excerpt
    # leaves most of them out: naming them says nothing (the HTML rank map still shows each).
    if silent and inputs.get("world_size"):
        who += [("", "   No log from "), ("dim", c.rank_list(silent))]  # (absent, not shown quiet)
    out.append(who)

    observed = c.observed(doc) or {}
    summary = c.one_line(verdict.get("summary") or "", 2000)
    if observed.get("headline"):
        summary = c.one_line(observed["headline"], 400) + ". No rule explains it."
    if summary:
        out.append([])
        out += [[("", line)] for line in textwrap.wrap(summary, width)]

    out += _silent_lines(doc, width)

    heading, evidence = c.lines_to_cite(doc, MAX_EVIDENCE)
    if evidence:
        out += [[], [("bold", heading)]]
        for ev in evidence:
            r = c.as_rank(ev.get("rank"))
            meta: list[Segment] = [("", "  "), ("cyan", c.one_line(c.where(ev), max(40, width - 30)))]
            if r is not None:
                meta.append(("dim", f"  rank {r}"))
            if ev.get("host"):
                meta.append(("dim", f"  {c.one_line(ev['host'], 60)}"))
            if ev.get("time_text"):
                meta.append(("dim", f"  {c.one_line(ev['time_text'], 40)}"))
            out.append(meta)
            out += [[("", "    " + line)] for line in _wrap_log(ev.get("text"), max(30, width - 4))]

    first = (c.first_steps(doc, 1) or [""])[0]
    if first:
        out += [[]]
        out += _hanging(("bold green", "First fix: "), c.one_line(first, 2000), width)
        for command in c.shell_commands(first)[:3]:
            out.append([("", " " * 11), ("green", "$ " + c.one_line(command, 400))])
        # The rule's other steps (a fix often has two parts: the cause, then the setting that hides it).
        for step in [s for s in c.first_steps(doc, 1 + MAX_MORE_STEPS) if s != first]:
            out += _hanging(("bold green", "Then:      "), c.one_line(step, 1000), width)
    collect = c.collect_items(doc)[:3]
    for i, item in enumerate(collect):
        lead: Segment = ("bold", "Collect:   ") if i == 0 else ("", " " * 11)
        out += _hanging(lead, c.one_line(item, 600), width)
    skipped = (doc.get("inputs") or {}).get("skipped") or []
    if skipped:
        out.append(
            [("yellow", f"{c.plural(len(skipped), 'input')} skipped (see the report's Inputs section)")]
        )
    return out


def _hanging(lead: Segment, text: str, width: int) -> list[list[Segment]]:
    """`text` wrapped behind an 11-column label (`First fix: `), its further lines indented under it."""
    wrapped = textwrap.wrap(text, max(40, width - 11))
    return [[lead, ("", wrapped[0] if wrapped else "")], *([("", " " * 11 + line)] for line in wrapped[1:])]


MAX_SILENT_ROWS = 16
MAX_MORE_STEPS = 2   # remediation steps shown after the first fix


def _silent_lines(doc: Mapping[str, Any], width: int) -> list[list[Segment]]:
    """The per-rank last-point table of a silent hang (failure-signatures.md section 16)."""
    heading, rows, footer = c.silent_table(doc)
    if not rows:
        return []
    out: list[list[Segment]] = [[]]
    out += [[("bold", line)] for line in textwrap.wrap(heading, width)]
    table = [c.SILENT_COLUMNS, *rows[:MAX_SILENT_ROWS]]
    widths = [max(len(r[i]) for r in table) for i in range(len(c.SILENT_COLUMNS) - 1)]
    for n, row in enumerate(table):
        lead = "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  "
        note = textwrap.wrap(row[-1], max(20, width - len(lead))) or [""]
        out.append([("dim" if n == 0 else "", lead + note[0])])
        out += [[("", " " * len(lead) + more)] for more in note[1:]]
    if len(rows) > MAX_SILENT_ROWS:
        out.append([("dim", f"  … {len(rows) - MAX_SILENT_ROWS} more rows")])
    if footer:
        out += [[("", "  " + line)] for line in textwrap.wrap(footer, width - 2)]
    return out


def _fit(segs: list[Segment], width: int) -> list[list[Segment]]:
    """Break a line of segments that is wider than the terminal before the segment that overflows."""
    out: list[list[Segment]] = [[]]
    used = 0
    for style, text in segs:
        if used and used + len(text) > width and text.startswith(" "):
            text = "  " + text.lstrip()
            out.append([])
            used = 0
        out[-1].append((style, text))
        used += len(text)
    return out


MAX_LOG_LINES = 6


def _wrap_log(text: Any, width: int) -> list[str]:
    """A cited log line wrapped to the terminal; a very long one keeps its start and its end."""
    s = c.one_line(text, 8000)
    lines = textwrap.wrap(s, width, break_on_hyphens=False) or [""]
    if len(lines) <= MAX_LOG_LINES:
        return lines
    tail = s[-(width - 2) :]
    if " " in tail[: width // 2]:
        tail = tail[tail.index(" ") + 1 :]  # start the kept end at a word
    return [*lines[: MAX_LOG_LINES - 1], "… " + tail.lstrip()]


def render_text(doc: Mapping[str, Any], *, color: bool, width: int | None = None) -> str:
    """The terminal summary; `color=False` gives plain text for pipes, files and NO_COLOR.

    `width` is the terminal's width in columns (default: the terminal's, 100 when not a terminal).
    """
    if width is None:
        width = terminal_width()
    width = max(40, min(width, 400))
    lines = [fitted for segs in _lines(doc, width) for fitted in _fit(segs, width)]
    if not color:
        return "\n".join("".join(t for _, t in segs).rstrip() for segs in lines) + "\n"
    from rich.console import Console  # only for a terminal: pipes and files never pay for rich
    from rich.text import Text

    buf = io.StringIO()
    console = Console(
        file=buf,
        force_terminal=True,
        color_system="standard",
        width=max(width, 60),
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=True,
    )
    for segs in lines:
        text = Text()
        for style, t in segs:
            text.append(t, style=style if style.strip() else None)
        console.print(text)
    return buf.getvalue()


def terminal_width(stream: TextIO | None = None) -> int:
    """Columns to use: $COLUMNS, else the terminal's size, else 100 (a pipe or a file)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    stream = stream if stream is not None else sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return 100


def wants_color(stream: TextIO) -> bool:
    """Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
