"""The ticket-sized Markdown summary: short, valid GitHub Markdown, no raw HTML from logs."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

from hanglens.report import render_markdown
from hanglens.report.markdown import md_code, md_para

from .conftest import HOSTILE

_OURS = {"<details><summary>", "</summary>", "</details>"}


def _tokens(text: str) -> list[Any]:
    md = MarkdownIt("commonmark").enable("table")
    out = []
    for tok in md.parse(text):
        out.append(tok)
        out.extend(tok.children or [])
    return out


def _raw_html(text: str) -> list[str]:
    html = [t.content for t in _tokens(text) if t.type in ("html_inline", "html_block")]
    return [h for h in html if not any(piece in h for piece in _OURS)]


def test_short_and_structured(doc: dict[str, Any], big_doc: dict[str, Any], evil_doc: dict[str, Any]) -> None:
    for d in (doc, big_doc, evil_doc):
        text = render_markdown(d)
        assert len(text.splitlines()) <= 60
        types = {t.type for t in _tokens(text)}
        assert {"heading_open", "table_open", "html_block", "code_inline"} <= types


def test_answer_first(doc: dict[str, Any]) -> None:
    text = render_markdown(doc)
    first = text.splitlines()[:5]
    assert first[0] == "### hanglens: Control\\-flow divergence (high confidence)" or "Control" in first[0]
    assert "**Culprit rank:** 2" in first[2] and "`gpu-node-a.cluster.example.com`" in first[2]
    assert "`/home/jdoe/runs/llm-7b/logs/rank0.log:4120`" in text
    assert "1. Look for rank" in text
    assert "Rerun: `hanglens analyze /home/jdoe/runs/llm-7b/logs/`" in text


def test_no_raw_html_from_logs(evil_doc: dict[str, Any]) -> None:
    text = render_markdown(evil_doc)
    assert _raw_html(text) == []
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    for bad in HOSTILE:
        assert bad not in rendered
    assert "<script" not in rendered and "<img" not in rendered and 'href="javascript' not in rendered


def test_code_span_survives_backticks_and_pipes() -> None:
    span = md_code("a `b` | c")
    html = MarkdownIt("commonmark").enable("table").render("| x |\n|---|\n| " + span + " |\n")
    assert "<code>a `b` | c</code>" in html


def test_line_start_cannot_become_a_heading_or_list() -> None:
    for s in ("# not a heading", "- not a list", "1. not a list", "> not a quote"):
        types = {t.type for t in _tokens(md_para(s))}
        assert types <= {"paragraph_open", "inline", "text", "paragraph_close"}, s
