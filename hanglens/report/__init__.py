"""Renderers of the analysis document: HTML, Markdown, terminal text and JSON, plus redaction."""

from __future__ import annotations

from hanglens.report.html import render_html
from hanglens.report.jsondoc import render_json
from hanglens.report.markdown import render_markdown
from hanglens.report.redact import redact
from hanglens.report.text import render_text, wants_color

__all__ = ["redact", "render_html", "render_json", "render_markdown", "render_text", "wants_color"]
