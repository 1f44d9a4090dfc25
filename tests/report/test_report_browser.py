"""Reports opened in headless Chromium: nothing executes, nothing is fetched, the answer is on screen.

Skips when Chromium is not installed (CI installs the Debian `chromium` package). Screenshots are
kept under the pytest tmp dir for a person to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hanglens.report import render_html

from .cdp import CHROMIUM, screenshot, visit

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

_PROBE = {
    "title": "document.title",
    "js": "document.documentElement.className",
    "scripts": "document.scripts.length",
    "images": "document.images.length",
    "links": "Array.from(document.links).map(a => a.protocol).filter(p => p !== 'file:').join(',')",
    "verdict": "document.getElementById('verdict').innerText",
    "verdict_top": "Math.round(document.getElementById('verdict').getBoundingClientRect().top)",
}


def _open(tmp_path: Path, doc: dict[str, Any], name: str) -> Any:
    page = tmp_path / name
    page.write_text(render_html(doc), encoding="utf-8")
    return page, visit(page, _PROBE)


def test_hostile_log_text_does_not_execute_or_fetch(tmp_path: Path, evil_doc: dict[str, Any]) -> None:
    page, v = _open(tmp_path, evil_doc, "evil.html")
    assert v.requests == [page.resolve().as_uri()]
    assert v.errors == []
    assert "PWNED" not in str(v.values["title"])
    assert v.values["js"] == "js"  # our own script ran: the CSP hash matches it
    assert v.values["scripts"] == 1 and v.values["images"] == 0 and v.values["links"] == ""


def test_fixture_report_has_no_error_no_request_and_the_verdict_up_top(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    page, v = _open(tmp_path, doc, "report.html")
    assert v.requests == [page.resolve().as_uri()]
    assert v.errors == []
    assert "Control-flow divergence" in v.values["verdict"] and "0-1, 3-6" in v.values["verdict"]
    assert int(v.values["verdict_top"]) < 200
    png = tmp_path / "report.png"
    screenshot(page, png)
    assert png.stat().st_size > 10_000


def test_16384_rank_report_renders(tmp_path: Path, big_doc: dict[str, Any]) -> None:
    page, v = _open(tmp_path, big_doc, "big.html")
    assert page.stat().st_size < 2_000_000
    assert v.errors == [] and v.requests == [page.resolve().as_uri()]


def test_the_harness_can_see_a_violation(tmp_path: Path) -> None:
    # an unescaped page must be caught, or the tests above would pass for the wrong reason
    page = tmp_path / "bad.html"
    page.write_text(
        "<html><body><img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom'); document.title='PWNED'</script></body></html>"
    )
    v = visit(page, _PROBE)
    assert any(u.startswith("http://127.0.0.1:9/") for u in v.requests)
    assert v.values["title"] == "PWNED" and v.errors


_LAYOUT = {
    "overflow": "document.documentElement.scrollWidth - window.innerWidth",
    "rank_cells": "document.querySelectorAll('table.rankmap td').length",
    "rank_font": "Math.min(...Array.from(document.querySelectorAll('table.rankmap td'))"
    ".map(e => parseFloat(getComputedStyle(e).fontSize)))",
    "line_width": "Math.min(...Array.from(document.querySelectorAll('.timeline-table tr.line td'))"
    ".map(e => e.getBoundingClientRect().width))",
    "main_width": "document.querySelector('main').getBoundingClientRect().width",
    "not_evaluable_open": "document.querySelector('details.not-evaluable').open",
    "verdict_font": "parseFloat(getComputedStyle(document.querySelector('#verdict .summary')).fontSize)",
}


@pytest.mark.parametrize("width", [800, 1400])
def test_report_is_readable_from_800_px(tmp_path: Path, doc: dict[str, Any], width: int) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(doc), encoding="utf-8")
    v = visit(page, _LAYOUT, width=width)
    assert v.errors == []
    assert v.values["overflow"] <= 0  # nothing wider than the window
    assert v.values["rank_cells"] > 0 and v.values["rank_font"] >= 12  # the overview's text keeps its size
    assert v.values["line_width"] >= 0.6 * v.values["main_width"]  # a log line gets the row's width
    assert v.values["not_evaluable_open"] is False and v.values["verdict_font"] >= 15


def test_report_prints_with_every_section_open(tmp_path: Path, doc: dict[str, Any]) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(doc), encoding="utf-8")
    probe = {
        "hidden_bodies": "Array.from(document.querySelectorAll('details > .body'))"
        ".filter(e => e.getBoundingClientRect().height === 0).length",
        "buttons": "Array.from(document.querySelectorAll('button'))"
        ".filter(e => getComputedStyle(e).display !== 'none').length",
    }
    v = visit(page, probe, width=800, media="print")
    assert v.values["hidden_bodies"] == 0 and v.values["buttons"] == 0
