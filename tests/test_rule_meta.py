"""Conventions of every built-in rule: loads cleanly, id == stem, folder == category, both test kinds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hanglens.engine import builtin_rules_dir, collect_rules
from hanglens.engine.schema import Expect, Rule

ROOT = builtin_rules_dir()
FILES = sorted(p for p in ROOT.rglob("*.y*ml")) if ROOT is not None else []
RULES, PROBLEMS = collect_rules(builtin=True) if FILES else ([], [])
BUILTIN = [r for r in RULES if r.builtin]

needs_rules = pytest.mark.skipif(not FILES, reason="rules/ holds no rules yet")


@needs_rules
def test_builtin_rules_load_without_problems() -> None:
    assert [str(p) for p in PROBLEMS] == []


@needs_rules
def test_every_rule_file_became_a_rule() -> None:
    loaded = sorted(r.path.resolve() for r in BUILTIN if r.path is not None)
    assert loaded == [p.resolve() for p in FILES]


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_id_is_stem_and_folder_is_category(rule: Rule) -> None:
    assert rule.path is not None and ROOT is not None
    assert rule.path.stem == rule.id
    assert rule.path.parent.name == rule.category.value
    assert rule.path.parent.parent == ROOT


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_has_match_and_no_match_tests(rule: Rule) -> None:
    expects = {t.expect for t in rule.tests}
    assert expects == {Expect.MATCH, Expect.NO_MATCH}


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_fixtures_exist(rule: Rule) -> None:
    root = Path(__file__).resolve().parents[1]
    missing = [t.fixture for t in rule.tests if t.fixture is not None and not (root / t.fixture).is_dir()]
    assert missing == []


_SOURCES = ("failure-signatures.md", "log-formats.md", ".cpp", ".py", ".cc", ".h")


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_description_cites_its_source(rule: Rule) -> None:
    """A rule stands on a mechanism: its description names the reference section or upstream file."""
    assert any(s in rule.description for s in _SOURCES), rule.description


_RANKS_AS_PARENS = re.compile(r"[Rr]ank\(s\)\s+\{\{[^{}]*\|\s*rank_list\s*\}\}")


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_explanation_names_ranks_in_words(rule: Rule) -> None:
    """`rank 3` / `ranks 0-2` (filter `ranks_phrase`), never `rank(s) 3`: a user reads a sentence."""
    assert not _RANKS_AS_PARENS.search(rule.explanation), rule.explanation


_VERB_AFTER_RANKS = re.compile(
    r"ranks_phrase(?:\s*\|\s*capitalize)?\s*\}\}\s+(?:\{%[^%]*%\}\s*)?"
    r"(?:was|were|is|are|has|have|does|do|reports|report|runs|run|forms|form)\b")


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_verb_after_ranks_agrees(rule: Rule) -> None:
    """A verb after the ranks comes from `agree` (`rank 2 was` / `ranks 0-1 were`), never fixed text."""
    assert not _VERB_AFTER_RANKS.search(rule.explanation), rule.explanation


_PRONOUN_AFTER_RANKS = re.compile(
    r"ranks_phrase(?:\s*\|\s*capitalize)?\s*\}\}[^{}.;:]{0,40}?\b(?:their|they|them)\b")


@needs_rules
@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_pronoun_after_ranks_agrees(rule: Rule) -> None:
    """A pronoun for the ranks just named comes from `agree` too (`rank 1 saw its connection` / `ranks 0-2
    saw their connection`): `rank 1 saw their connection` reads as a slip to one deciding whom to blame."""
    assert not _PRONOUN_AFTER_RANKS.search(rule.explanation), rule.explanation
