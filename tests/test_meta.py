"""Conventions the machine enforces: registered, documented parsers; working examples; module docstrings."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

import hanglens.parsers as parsers_pkg
from hanglens.ingest.reader import Reader
from hanglens.model import Origin
from hanglens.parsers import PARSERS, catalog_markdown
from hanglens.parsers.base import Parser

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "hanglens"
NOT_PARSERS = {"__init__", "__main__", "base", "stacks"}


def test_every_parser_module_is_registered() -> None:
    modules = {p.stem for p in (PKG / "parsers").glob("*.py")} - NOT_PARSERS
    registered = {cls.__module__.rsplit(".", 1)[-1] for cls in PARSERS}
    assert modules == registered
    assert all(cls.name == cls.__module__.rsplit(".", 1)[-1] for cls in PARSERS)


def test_event_catalogue_is_current() -> None:
    """docs/events.md is generated; regenerate with `python -m hanglens.parsers > docs/events.md`."""
    assert (ROOT / "docs" / "events.md").read_text() == catalog_markdown()


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.name)
def test_parser_declares_and_demonstrates_every_kind(parser: type[Parser]) -> None:
    assert parser.triggers, "a parser without triggers is never fed"
    declared = {spec.kind: set(spec.fields) for spec in parser.emits}
    assert declared
    shown = {ex.kind for ex in parser.examples}
    assert set(declared) <= shown, f"kinds without an example: {set(declared) - shown}"
    for ex in parser.examples:
        assert set(ex.fields) <= declared[ex.kind], (ex.text, set(ex.fields) - declared[ex.kind])
        assert ex.era, f"example without the versions that print it: {ex.text[:60]}"


EXAMPLES = [(p, ex) for p in PARSERS for ex in p.examples]


@pytest.mark.parametrize(
    ("parser", "example"), EXAMPLES, ids=[f"{p.name}:{i}" for i, (p, _) in enumerate(EXAMPLES)]
)
def test_every_example_parses_through_the_reader(parser: type[Parser], example: object) -> None:
    text = example.text  # type: ignore[attr-defined]
    result = Reader("example.log", Origin(), [parser]).read(io.BytesIO(text.encode()))
    wanted = example.fields  # type: ignore[attr-defined]
    found = [e for e in result.events if e.kind == example.kind]  # type: ignore[attr-defined]
    absent = object()
    assert any(all(e.fields.get(k, absent) == v for k, v in wanted.items()) for e in found), (
        text[:120],
        [dict(e.fields) for e in found],
    )


NEAR_MISSES = [(p, line) for p in PARSERS for line in p.near_misses]


@pytest.mark.parametrize(("parser", "line"), NEAR_MISSES,
                         ids=[f"{p.name}:{i}" for i, (p, _) in enumerate(NEAR_MISSES)])
def test_near_miss_does_not_match(parser: type[Parser], line: str) -> None:
    kinds = {spec.kind for spec in parser.emits}
    result = Reader("near-miss.log", Origin(), [parser]).read(io.BytesIO(line.encode()))
    assert not [e for e in result.events if e.kind in kinds], line


def test_every_module_opens_with_a_docstring() -> None:
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if not ast.get_docstring(tree):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing


def test_readme_has_the_two_quick_start_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "<!-- test-command -->" in readme and "<!-- demo-command -->" in readme
    assert "hanglens demo" in readme


def test_parsers_package_exports_the_registry() -> None:
    assert parsers_pkg.PARSERS is PARSERS
