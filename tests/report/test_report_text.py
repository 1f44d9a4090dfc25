"""The terminal summary: the answer in ten seconds, colour only for terminals."""

from __future__ import annotations

import io
from typing import Any

import pytest

from hanglens.report import render_text, wants_color


def test_plain_summary_has_the_answer(doc: dict[str, Any]) -> None:
    out = render_text(doc, color=False)
    lines = out.splitlines()
    assert lines[0].startswith("hanglens: Control-flow divergence  [high confidence]")
    assert "Culprit rank 2 on gpu-node-a.cluster.example.com" in lines[1]
    assert "Victims 0-1, 3-6 (6)" in lines[1] and "No log from 7" in lines[1]
    assert "/home/jdoe/runs/llm-7b/logs/rank0.log:4120" in out
    assert "/home/jdoe/runs/llm-7b/logs/rank2.log:4087" in out
    assert out.count("rank0.log:4120") == 1  # a line cited twice is shown once
    assert "First fix: Look for rank-dependent control flow" in out
    assert "Collect:" in out and "\x1b" not in out
    assert len(lines) <= 30


def test_plain_summary_shows_the_rule_s_other_steps(doc: dict[str, Any]) -> None:
    """Every remediation step after the first fix, each on its own `Then:` (not only the first fix)."""
    steps = doc["findings"][0]["remediation"]
    assert len(steps) >= 2
    out = render_text(doc, color=False, width=400)
    then = [line for line in out.splitlines() if line.startswith("Then:")]
    assert [line.split(None, 1)[1] for line in then] == steps[1:3]


def test_color_summary_uses_ansi(doc: dict[str, Any]) -> None:
    out = render_text(doc, color=True)
    assert "\x1b[" in out and "Control-flow divergence" in out


def test_log_text_cannot_inject_terminal_escapes_or_markup(doc: dict[str, Any]) -> None:
    doc["findings"][0]["evidence"][0]["text"] = "\x1b]0;owned\x07 [bold red]x[/] \x1b[2J"
    for color in (False, True):
        out = render_text(doc, color=color)
        assert "\x1b]0;" not in out and "\x1b[2J" not in out
        assert "[bold red]x[/]" in out


def test_no_failure_and_empty_documents() -> None:
    assert render_text({}, color=False).startswith("hanglens: Failure not explained")
    out = render_text({"verdict": {"category": "none", "confidence": "high"}}, color=False)
    assert out.startswith("hanglens: No failure found") and "No culprit named" in out


def test_wants_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_color(Tty()) and not wants_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_color(Tty())


def test_no_log_from_only_when_the_world_size_is_stated(doc: dict[str, Any]) -> None:
    # Without a stated world size the ranks between those seen are assumed, and an excerpt leaves most out.
    doc.setdefault("inputs", {})["world_size"] = None
    assert "No log from" not in render_text(doc, color=False).splitlines()[1]
    doc["inputs"]["world_size"] = 8
    assert "No log from 7" in render_text(doc, color=False).splitlines()[1]


def test_an_unexplained_failure_s_observed_step_replaces_the_generic_one() -> None:
    """With no rule, the step for what was seen (a silent hang stopped from outside) comes first and the
    rule-less verdict's generic step is not repeated under it, in text, Markdown and HTML alike."""
    from hanglens.report import _common as c
    from hanglens.report import render_html, render_markdown

    generic = "GENERIC: take stacks of every rank."
    seen = "SEEN: dump every rank's stack before stopping it."
    doc: dict[str, Any] = {
        "schema_version": 1,
        "verdict": {"category": "unknown", "rule_id": None, "confidence": "low", "culprit_ranks": [],
                    "victim_ranks": [], "summary": "No rule explains it.", "first_step": generic},
        "observed": {"headline": "The job hung without an error line", "first_step": seen},
        "findings": [],
    }
    assert c.first_steps(doc) == [seen]
    for out in (render_text(doc, color=False, width=100), render_markdown(doc), render_html(doc)):
        assert "SEEN:" in out and "GENERIC:" not in out
    # a rule's verdict keeps its own first step after what was seen (never in this document shape, but the
    # order is the renderers' one rule)
    ruled = {**doc, "verdict": {**doc["verdict"], "rule_id": "some-rule"}}
    assert c.first_steps(ruled) == [seen, generic]
