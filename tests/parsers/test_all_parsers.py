"""The contract every registered parser keeps: declared outputs only, and no input breaks it.

tests/test_meta.py already checks, for every parser, that each example parses through the Reader,
that near-misses yield nothing, that example fields are declared and every kind is shown; this module
adds what is checked by running the parser: what it emits, random and mutated text, the real-log corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_dir import REAL_LOGS, or_missing, present

from hanglens.parsers import PARSERS
from hanglens.parsers.base import Example, Parser

from .harness import assert_never_breaks, events, has, mutate, real_log_files

EXAMPLES = [(p, ex) for p in PARSERS for ex in p.examples]
REAL_FILES = real_log_files()
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("parser", "example"), EXAMPLES, ids=[f"{p.name}-{ex.kind}-{ex.era}" for p, ex in EXAMPLES]
)
def test_example_emits_only_declared_fields_and_keeps_null_ones(
    parser: type[Parser], example: Example
) -> None:
    found = events([parser], example.text)
    assert not [(e.parser, e.kind) for e in found if e.parser != parser.name]
    declared = {spec.kind: set(spec.fields) for spec in parser.emits}
    for e in found:
        assert set(e.fields) <= declared[e.kind], (e.kind, set(e.fields) - declared[e.kind])
    # test_meta reads a missing field as None; here a None in an example means "present and null"
    of_kind = [e for e in found if e.kind == example.kind]
    assert has(of_kind, example.fields), [dict(e.fields) for e in of_kind]


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.name)
@settings(FUZZ, max_examples=80)
@given(text=st.text(max_size=400))
def test_random_text_never_breaks_the_parser(parser: type[Parser], text: str) -> None:
    assert_never_breaks(parser, text)


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.name)
@settings(FUZZ, max_examples=120)
@given(
    data=st.data(),
    cut=st.integers(0, 10_000),
    at=st.integers(0, 10_000),
    junk=st.text(max_size=20),
    dup=st.booleans(),
)
def test_mutated_examples_never_break_the_parser(
    parser: type[Parser], data: st.DataObject, cut: int, at: int, junk: str, dup: bool
) -> None:
    text = data.draw(st.sampled_from([ex.text for ex in parser.examples]), label="example")
    assert_never_breaks(parser, mutate(text, cut, at, junk, dup))


@pytest.mark.parametrize(
    ("parser", "path"),
    or_missing(
        [
            pytest.param(p, path, id=f"{p.name}-{path.parent.name}/{path.name}")
            for p in PARSERS
            for path in REAL_FILES
        ],
        width=2,
    ),
)
def test_real_logs_never_break_the_parser(parser: type[Parser] | None, path: Path | None) -> None:
    assert_never_breaks(present(parser, REAL_LOGS), present(path, REAL_LOGS).read_bytes())
