"""The terminal summary: the answer in ten seconds, styled with rich or as plain text."""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Mapping
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

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
    who += [("", "   Victims "), ("yellow", c.rank_list(victims)), ("dim", f" ({len(victims)})")]
    silent = [
        r.get("rank")
        for r in doc.get("ranks") or []
        if isinstance(r, Mapping) and r.get("status") == "silent"
    ]
    if silent:
        who += [("", "   Silent "), ("dim", c.rank_list(silent))]
    out.append(who)

    summary = c.one_line(verdict.get("summary") or "", 2000)
    if summary:
        out.append([])
        out += [[("", line)] for line in textwrap.wrap(summary, width)]

    heading, evidence = c.lines_to_cite(doc, MAX_EVIDENCE)
    if evidence:
        out += [[], [("bold", heading)]]
        for ev in evidence:
            r = c.as_rank(ev.get("rank"))
            rank = "?" if r is None else str(r)
            out.append(
                [
                    ("", "  "),
                    ("cyan", c.one_line(c.where(ev), 160)),
                    ("dim", f"  rank {rank}"),
                    ("dim", f"  {c.one_line(ev.get('time_text') or '', 40)}"),
                ]
            )
            out.append([("", "    " + c.one_line(ev.get("text"), max(40, width - 4)))])

    steps = c.first_steps(doc, 1)
    if steps:
        out += [[]]
        wrapped = textwrap.wrap(c.one_line(steps[0], 2000), max(40, width - 11))
        out.append([("bold green", "First fix: "), ("", wrapped[0] if wrapped else "")])
        out += [[("", " " * 11 + line)] for line in wrapped[1:]]
        for snippet in [x for x in c.code_snippets(steps[0]) if c.is_command(x)][:3]:
            out.append([("", " " * 11), ("green", "$ " + c.one_line(snippet, width))])
    collect = c.collect_items(doc)[:3]
    if collect:
        out.append([("bold", "Collect:   "), ("", c.one_line(collect[0], 300))])
        out += [[("", " " * 11 + c.one_line(x, 300))] for x in collect[1:]]
    skipped = (doc.get("inputs") or {}).get("skipped") or []
    if skipped:
        out.append(
            [("yellow", f"{c.plural(len(skipped), 'input')} skipped (see the report's Inputs section)")]
        )
    return out


def render_text(doc: Mapping[str, Any], *, color: bool, width: int = 100) -> str:
    """The terminal summary; `color=False` gives plain text for pipes, files and NO_COLOR."""
    lines = _lines(doc, width)
    if not color:
        return "\n".join("".join(t for _, t in segs).rstrip() for segs in lines) + "\n"
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


def wants_color(stream: TextIO) -> bool:
    """Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
