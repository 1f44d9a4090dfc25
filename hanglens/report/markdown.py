"""A short GitHub-flavoured Markdown summary (about 60 lines) to paste into a bug ticket."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hanglens import lazyre as re
from hanglens.report import _common as c

MAX_EVIDENCE = 3
MAX_STEPS = 3
MAX_RANK_ROWS = 8
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|~&])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"^(\s*)([#=+>-]|\d+[.)])")
_BACKTICKS = re.compile(r"`+")


def _esc(s: str) -> str:
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), s)


def md_text(s: Any) -> str:
    """Inline prose with every Markdown/HTML-significant character escaped (no raw HTML can get through)."""
    return _esc(c.one_line(s, 600))


def md_para(s: Any) -> str:
    """Prose that starts a line: also neutralise what would make it a heading, list or quote."""

    def fix(m: re.Match[str]) -> str:
        mark = m.group(2)
        return m.group(1) + (mark[:-1] + "\\" + mark[-1] if mark[0].isdigit() else "\\" + mark)

    return _LINE_START.sub(fix, md_prose(s), count=1)


def md_code(s: Any, width: int = 200) -> str:
    """An inline code span that survives backticks and table pipes in `s`."""
    text = c.one_line(s, width).replace("|", "\\|")
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text or ' '}{pad}{fence}"


def md_prose(s: Any) -> str:
    """Rule prose: backtick spans stay code, everything else is escaped."""
    out = []
    for is_code, piece in c.split_code(c.one_line(s, 800)):
        out.append(md_code(piece) if is_code else _esc(piece))
    return "".join(out)


def _fence(lines: list[str], lang: str = "text") -> list[str]:
    body = [c.one_line(x, 300) for x in lines]
    longest = max((len(m.group(0)) for x in body for m in _BACKTICKS.finditer(x)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{lang}", *body, fence]


MAX_SILENT_ROWS = 8


def render_markdown(doc: Mapping[str, Any]) -> str:
    """Render the analysis document as a ticket-sized Markdown summary."""
    verdict = doc.get("verdict") or {}
    title = c.category_title(verdict)
    conf = str(verdict.get("confidence") or "low")
    culprits = verdict.get("culprit_ranks") or []
    victims = verdict.get("victim_ranks") or []
    out: list[str] = [f"### hanglens: {md_text(title)} ({md_text(conf)} confidence)", ""]
    who = [
        f"**Culprit {'rank' if len(culprits) == 1 else 'ranks'}:** {md_text(c.rank_list(culprits))}"
        if culprits
        else "**No culprit named**"
    ]
    hosts = verdict.get("culprit_hosts") or []
    if hosts:
        who[0] += f" on {', '.join(md_code(h, 80) for h in sorted(hosts)[:4])}"
        if len(hosts) > 4:
            who[0] += f" and {len(hosts) - 4} more hosts"
    suspects = verdict.get("suspect_ranks") or []
    if suspects:
        who.append(f"**Suspects (no side decided):** {md_text(c.rank_list(suspects))}")
    who.append(f"**Victims:** {md_text(c.rank_list(victims))} ({len(victims)})")
    if verdict.get("rule_id"):
        who.append(f"**Rule:** {md_code(verdict['rule_id'], 80)}")
    out += [" · ".join(who), ""]
    observed = c.observed(doc)
    if observed:
        out += [f"**Seen:** {md_text(observed['headline'])}. No rule explains it.", ""]
    elif verdict.get("summary"):
        out += [md_para(verdict["summary"]), ""]

    silent_heading, silent_rows, silent_footer = c.silent_table(doc)
    if silent_rows:
        out += [f"**{md_text(silent_heading)}**", "", "| " + " | ".join(c.SILENT_COLUMNS) + " |",
                "|" + "---|" * len(c.SILENT_COLUMNS)]
        out += ["| " + " | ".join(md_text(cell) for cell in row) + " |"
                for row in silent_rows[:MAX_SILENT_ROWS]]
        out += ["", *([md_text(silent_footer), ""] if silent_footer else [])]

    heading, evidence = c.lines_to_cite(doc, MAX_EVIDENCE)
    if evidence:
        out += [f"**{heading}**", "", "| where | rank | time | line |", "|---|---|---|---|"]
        for ev in evidence:
            r = c.as_rank(ev.get("rank"))
            rank = "" if r is None else str(r)
            out.append(
                f"| {md_code(c.where(ev), 120)} | {md_text(rank)} | {md_text(ev.get('time_text') or '')} "
                f"| {md_code(ev.get('text'), 180)} |"
            )
        out.append("")
        first = evidence[0]
        ctx = first.get("context") or {}
        before, after = (ctx.get("before") or [])[-3:], (ctx.get("after") or [])[:3]
        if before or after:
            block = [*before, str(ctx.get("line") or first.get("text") or ""), *after]
            out += [
                "<details><summary>Context of the first cited line</summary>",
                "",
                *_fence(block),
                "",
                "</details>",
                "",
            ]

    steps = c.first_steps(doc, MAX_STEPS)
    if steps:
        out += ["**First steps**", ""]
        out += [f"{i}. {md_prose(s)}" for i, s in enumerate(steps, 1)]
        commands = [x for s in steps for x in c.shell_commands(s)]
        if commands:
            out += ["", *_fence(list(dict.fromkeys(commands)), "sh")]
        out.append("")
    collect = c.collect_items(doc)[:3]
    if collect:
        out += ["**Collect on the rerun:**", "", *(f"- {md_prose(x)}" for x in collect), ""]

    out += _details(doc)
    command = str(doc.get("command") or "hanglens analyze <logs>")
    out += [
        f"Rerun: {md_code(command, 300)} (hanglens {md_text(doc.get('hanglens_version') or '?')}; "
        f"add `--html report.html` for the full report)"
    ]
    return "\n".join(out) + "\n"


def _details(doc: Mapping[str, Any]) -> list[str]:
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    runs = c.fold_runs(ranks, lambda r: (r.get("status"), r.get("last_step"), c.how_it_ended(r)))
    ruled_out = [r for r in doc.get("ruled_out") or [] if isinstance(r, Mapping)]
    distinct = (doc.get("versions") or {}).get("distinct") or {}
    if not runs and not ruled_out and not distinct:
        return []
    out = ["<details><summary>Ranks, versions, hypotheses ruled out</summary>", ""]
    if runs:
        out += ["| ranks | status | how it ended | last step |", "|---|---|---|---|"]
        def status(run: c.Run) -> str:
            return str(run.items[0].get("status") or "?")

        # culprits and failures first when the list must be cut, then back into rank order
        shown = sorted(
            runs, key=lambda r: (c.STATUSES.index(status(r)) if status(r) in c.STATUSES else 9, r.first)
        )[:MAX_RANK_ROWS]
        for run in sorted(shown, key=lambda r: r.first):
            step = run.items[0].get("last_step")
            ended = c.how_it_ended(run.items[0])
            out.append(
                f"| {md_text(run.label)} | {md_text(status(run))} | {md_text(ended)} "
                f"| {md_text('' if step is None else step)} |"
            )
        if len(runs) > MAX_RANK_ROWS:
            out.append(f"| … | {len(runs) - MAX_RANK_ROWS} more runs | | |")
        out.append("")
    if distinct:
        parts = [
            f"{md_text(k)} {md_text(', '.join(map(str, v)) or '?')}" for k, v in sorted(distinct.items()) if v
        ]
        out += ["Versions: " + "; ".join(parts), ""]
    winner = (doc.get("verdict") or {}).get("rule_id")
    for r in ruled_out[:4]:
        why = c.why_not(str(r.get("reason") or ""), winner)
        out.append(f"- Ruled out {md_code(r.get('rule_id'), 80)}: {md_prose(why)}")
    if ruled_out:
        out.append("")
    out += ["</details>", ""]
    return out
