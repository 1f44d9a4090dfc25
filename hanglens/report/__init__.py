"""Renderers of the analysis document: HTML, Markdown, terminal text and JSON, plus redaction."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from hanglens.report.redact import redact  # eager: the submodule shares the function's name

if TYPE_CHECKING:
    from hanglens.report.html import render_html
    from hanglens.report.jsondoc import render_json, write_json
    from hanglens.report.markdown import render_markdown
    from hanglens.report.text import render_text, wants_color

__all__ = [
    "redact", "render_html", "render_json", "render_markdown", "render_text", "wants_color", "write_json",
]

# Lazy: the CLI imports hanglens.report._common for escaping at start-up; jinja2 and rich load only when a
# renderer is used, so `hanglens --version` stays fast.
_HOME = {
    "render_html": "html",
    "render_json": "jsondoc",
    "render_markdown": "markdown",
    "render_text": "text",
    "wants_color": "text",
    "write_json": "jsondoc",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(import_module(f"hanglens.report.{_HOME[name]}"), name)
    raise AttributeError(f"module 'hanglens.report' has no attribute {name!r}")
