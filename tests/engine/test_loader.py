"""Rule loading: every problem of every file at once, each at its line:col, and user overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hanglens.cli import app
from hanglens.engine import collect_rules, load_rules
from hanglens.engine import loader as loader_mod
from hanglens.errors import RuleError

from .conftest import BAD_RULES, CATALOG, EXAMPLE_RULES

# (line, col, key path, words the message must contain) for tests/engine/bad_rules/oom/bad-rule.yaml
EXPECTED = [
    (2, 5, "id", "differs from the file name 'bad-rule.yaml'"),
    (4, 11, "category", "differs from the folder 'oom'"),
    (5, 13, "confidence", "'urgent' is not one of low, medium, high"),
    (7, 1, "", "duplicate key 'priority'"),
    (8, 14, "supersedes[0]", "unknown rule id 'no-such-rule'"),
    (10, 12, "requires.events[0]", "no parser emits event kind 'no_such_event'"),
    (11, 11, "requires.facts[0]", "unknown fact 'pg_enqueue_lagg' (did you mean 'pg_enqueue_lag'?"),
    (15, 15, "match.all[0].where", "unknown column 'lagg' for fact 'pg_enqueue_lag' (did you mean 'lag'?"),
    (15, 37, "match.all[0].where.lag", "unknown key 'gtee' (did you mean 'gte'?"),
    (19, 26, "match.all[1].where.message.regex", "invalid regex"),
    (20, 28, "match.all[1].where.rank.in_binding", "binding 'later' is used before it is bound"),
    (23, 13, "match.none[0].bind", "a `none` condition cannot bind"),
    (24, 18, "culprits.from", "binding 'laggardz' is used before it is bound (did you mean 'laggards'?)"),
    (26, 47, "explanation", "template variable 'who' is neither a binding nor a global"),
    (26, 69, "explanation", "binding 'laggards' has no column 'lagz'"),
    (29, 1, "", "unknown key 'colect' (did you mean 'collect'?"),
    (31, 3, "tests", "no test with `expect: no-match`"),
]


def test_bad_rule_reports_every_problem_with_position() -> None:
    rules, problems = collect_rules([BAD_RULES], builtin=False, catalog=CATALOG)
    assert rules == []
    got = [(p.line, p.col, p.key, p.message + (f" ({p.hint})" if p.hint else "")) for p in problems]
    assert len(got) == len(EXPECTED), "\n".join(map(str, problems))
    for (line, col, key, words), (gline, gcol, gkey, gmsg) in zip(EXPECTED, got, strict=True):
        assert (gline, gcol, gkey) == (line, col, key), gmsg
        assert words in gmsg
    assert all(str(p).startswith("tests/engine/bad_rules/oom/bad-rule.yaml:") or "bad-rule.yaml:" in str(p)
               for p in problems)


def test_load_rules_raises_rule_error_with_all_problems() -> None:
    with pytest.raises(RuleError) as info:
        load_rules([BAD_RULES], builtin=False, catalog=CATALOG)
    assert len(info.value.problems) == len(EXPECTED)
    assert info.value.exit_code == 2


def test_cli_check_prints_every_problem_and_exits_2() -> None:
    result = CliRunner().invoke(app, ["rules", "check", str(BAD_RULES)])
    assert result.exit_code == 2
    for line, col, _, _ in EXPECTED:
        assert f"bad-rule.yaml:{line}:{col}:" in result.output
    assert "rule problem(s)" in result.output


def test_example_rules_load_cleanly_against_the_real_catalog() -> None:
    rules = load_rules([EXAMPLE_RULES], builtin=False)
    assert [r.id for r in rules] == ["rank-behind-in-steps", "rank-crashed-alone"]
    assert all(r.path is not None and r.path.stem == r.id and r.root == EXAMPLE_RULES for r in rules)


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_yaml_syntax_error_is_positioned(tmp_path: Path) -> None:
    _write(tmp_path, "oom/broken.yaml", "id: broken\ntitle: [unclosed\n")
    _, problems = collect_rules([tmp_path], builtin=False, catalog=CATALOG)
    assert len(problems) == 1
    assert problems[0].message.startswith("invalid YAML")
    assert problems[0].line >= 2


def test_missing_keys_and_bad_test_cases(tmp_path: Path) -> None:
    _write(tmp_path, "oom/thin.yaml", "id: thin\ncategory: oom\nconfidence: low\nmatch: {}\n"
                                      "tests:\n  - {name: a, expect: maybe, logs: {}}\n"
                                      "  - {name: b, expect: no-match, culprits: [1], logs: {}}\n")
    _, problems = collect_rules([tmp_path], builtin=False, catalog=CATALOG)
    text = "\n".join(map(str, problems))
    for words in ("missing required key 'title'", "missing required key 'explanation'",
                  "missing required key 'remediation'", "'maybe' is not one of match, no-match",
                  "`culprits:` and `suspects:` only apply to `expect: match`",
                  "no test with `expect: match`"):
        assert words in text


def test_user_rule_overrides_builtin_by_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_mod, "builtin_rules_dir", lambda: EXAMPLE_RULES)
    source = (EXAMPLE_RULES / "straggler" / "rank-behind-in-steps.yaml").read_text()
    _write(tmp_path, "rank-behind-in-steps.yaml", source.replace("confidence: low", "confidence: high"))
    rules = {r.id: r for r in load_rules([tmp_path])}
    assert rules["rank-behind-in-steps"].confidence.value == "high"
    assert not rules["rank-behind-in-steps"].builtin
    assert rules["rank-crashed-alone"].builtin


def test_duplicate_ids_among_user_rules_are_reported(tmp_path: Path) -> None:
    source = (EXAMPLE_RULES / "straggler" / "rank-behind-in-steps.yaml").read_text()
    _write(tmp_path / "a", "straggler/rank-behind-in-steps.yaml", source)
    _write(tmp_path / "b", "straggler/rank-behind-in-steps.yaml", source)
    _, problems = collect_rules([tmp_path / "a", tmp_path / "b"], builtin=False, catalog=CATALOG)
    assert [p.message for p in problems] == [
        "rule id 'rank-behind-in-steps' is also defined in "
        f"{tmp_path / 'a' / 'straggler' / 'rank-behind-in-steps.yaml'}"]


def test_template_syntax_error_points_into_the_block(tmp_path: Path) -> None:
    source = (EXAMPLE_RULES / "straggler" / "rank-behind-in-steps.yaml").read_text()
    bad = source.replace("while the others\n", "while the {{ others\n")
    _write(tmp_path, "straggler/rank-behind-in-steps.yaml", bad)
    _, problems = collect_rules([tmp_path], builtin=False, catalog=CATALOG)
    assert len(problems) == 1 and problems[0].message.startswith("template error")
    lines = bad.splitlines()
    assert "{{ others" in lines[problems[0].line - 1] or "{{ others" in lines[problems[0].line - 2]


def test_remediation_with_template_syntax_is_a_rule_problem(tmp_path: Path) -> None:
    # Only `explanation` is rendered: a `{{ }}` in a remediation would reach the user as written.
    source = (EXAMPLE_RULES / "straggler" / "rank-behind-in-steps.yaml").read_text()
    bad = source.replace("GPU health of ranks that fall behind.",
                         "GPU health of rank {{ behind.rank | first }}.")
    assert bad != source
    _write(tmp_path, "straggler/rank-behind-in-steps.yaml", bad)
    _, problems = collect_rules([tmp_path], builtin=False, catalog=CATALOG)
    assert len(problems) == 1 and "remediation is plain text, not a template" in str(problems[0])


def test_culprits_also_names_bindings_that_must_exist(tmp_path: Path) -> None:
    _write(tmp_path, "oom/also.yaml",
           "id: also\ntitle: t\ncategory: oom\nconfidence: low\nexplanation: x\nremediation: [r]\n"
           "match:\n  all:\n    - {event: oom, bind: raised}\n"
           "culprits: {from: raised, also: [raisd]}\n"
           "tests:\n  - {name: a, expect: match, logs: {}}\n  - {name: b, expect: no-match, logs: {}}\n")
    _, problems = collect_rules([tmp_path], builtin=False, catalog=CATALOG)
    assert [(p.key, p.message) for p in problems if p.key.startswith("culprits")] == [
        ("culprits.also[0]", "binding 'raisd' is used before it is bound")]
