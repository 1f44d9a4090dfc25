"""tools/screenshot_report.py renders the demo and an unexplained failure and screenshots both.

The PNGs are left in the pytest tmp dir for a person to look at. Skips without Chromium locally; CI
installs it (.ci/run), so there it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .cdp import CHROMIUM
from .joblogs import screenshot_tool


def test_screenshot_script_writes_pages_text_and_pngs(tmp_path: Path) -> None:
    tool = screenshot_tool()
    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    assert tool.main([str(tmp_path), "--widths", "800,1400"]) == 0
    for name in ("demo", "unexplained"):
        html = (tmp_path / f"{name}.html").read_text(encoding="utf-8")
        assert "<h1>" in html
        for width in (800, 1400):
            png = (tmp_path / f"{name}-{width}.png").read_bytes()
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
            assert int.from_bytes(png[16:20], "big") == width  # the PNG is as wide as the window
        for cols in (80, 200):
            text = (tmp_path / f"{name}-{cols}col.txt").read_text(encoding="utf-8")
            assert max(len(line) for line in text.splitlines()) <= cols
    assert "ALLREDUCE #3318" in (tmp_path / "unexplained-80col.txt").read_text(encoding="utf-8")
