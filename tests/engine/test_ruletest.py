"""The embedded-test runner, driven by a toy pipeline (the real one is exercised by tests/test_rules.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hanglens.engine import Outcome, load_rules, run_rule_tests, summary
from hanglens.engine.ruletest import run_rule_test
from hanglens.engine.schema import RuleTest

from .conftest import EXAMPLE_RULES, fake_analyze


def test_example_rules_pass_their_tests() -> None:
    rules = load_rules([EXAMPLE_RULES], builtin=False)
    results = run_rule_tests(rules, fake_analyze, None)
    assert [(r.test_id, r.outcome) for r in results] == [
        ("rank-behind-in-steps::rank-2-far-behind", Outcome.PASSED),
        ("rank-behind-in-steps::rank-2-behind-but-crashed", Outcome.PASSED),
        ("rank-behind-in-steps::one-step-apart", Outcome.PASSED),
        ("rank-behind-in-steps::behind-detected-from-silence", Outcome.TODO),
        ("rank-crashed-alone::rank-1-crashes", Outcome.PASSED),
        ("rank-crashed-alone::nobody-crashes", Outcome.PASSED),
    ]
    assert summary(results) == "5 passed, 0 failed, 1 todo"


def _with_test(**test: Any) -> tuple[Any, RuleTest]:
    rule = next(r for r in load_rules([EXAMPLE_RULES], builtin=False) if r.id == "rank-crashed-alone")
    return rule, RuleTest.model_validate(test)


def test_wrong_culprits_fail() -> None:
    rule, test = _with_test(name="t", expect="match", culprits=[0],
                            logs={"rank0.log": "step 1\n", "rank1.log": "CRASH\n"})
    res = run_rule_test(rule, test, fake_analyze, None)
    assert res.outcome is Outcome.FAILED and res.message == "culprits [1], expected [0]"


def test_unexpected_match_and_missing_match_fail() -> None:
    crash = {"rank0.log": "step 1\n", "rank1.log": "CRASH\n"}
    rule, test = _with_test(name="t", expect="no-match", logs=crash)
    assert run_rule_test(rule, test, fake_analyze, None).message.startswith("matched but should not")
    rule, test = _with_test(name="t", expect="match", logs={"rank0.log": "step 1\n"})
    assert run_rule_test(rule, test, fake_analyze, None).message.startswith("did not match")


def test_todo_that_passes_says_so() -> None:
    rule, test = _with_test(name="t", expect="match", status="todo",
                            logs={"rank0.log": "step 1\n", "rank1.log": "CRASH\n"})
    res = run_rule_test(rule, test, fake_analyze, None)
    assert res.outcome is Outcome.TODO and "remove `status: todo`" in res.message


def test_fixture_folder_relative_to_repo_root(tmp_path: Path) -> None:
    (tmp_path / "fixtures" / "crash").mkdir(parents=True)
    (tmp_path / "fixtures" / "crash" / "rank0.log").write_text("step 3\n")
    (tmp_path / "fixtures" / "crash" / "rank1.log").write_text("CRASH\n")
    rule, test = _with_test(name="t", expect="match", culprits=[1], fixture="fixtures/crash")
    assert run_rule_test(rule, test, fake_analyze, tmp_path).outcome is Outcome.PASSED
    rule, test = _with_test(name="t", expect="match", fixture="fixtures/absent")
    assert "not found" in run_rule_test(rule, test, fake_analyze, tmp_path).message


def test_pipeline_errors_fail_the_test_not_the_run() -> None:
    def broken(paths: Any, *, rules_dirs: Any = ()) -> Any:
        raise RuntimeError("boom")

    rule, test = _with_test(name="t", expect="match", logs={"rank0.log": ""})
    res = run_rule_test(rule, test, broken, None)
    assert res.outcome is Outcome.FAILED and "RuntimeError: boom" in res.message


def test_logs_cannot_escape_the_temp_folder() -> None:
    rule, test = _with_test(name="t", expect="match", logs={"../escape.log": "CRASH\n"})
    res = run_rule_test(rule, test, fake_analyze, None)
    assert res.outcome is Outcome.FAILED and "escapes" in res.message



def test_an_explanation_with_an_empty_template_slot_fails(tmp_path: Path) -> None:
    """A value the facts do not have renders as nothing or `None`: the rule's test says where."""
    import yaml

    src = yaml.safe_load((EXAMPLE_RULES / "rank_crash" / "rank-crashed-alone.yaml").read_text())
    logs = {"rank0.log": "step 1\n", "rank1.log": "CRASH\n"}
    head = "Rank {{ crashed.rank | rank_list }} crashed"
    for n, (template, left) in enumerate((
            (head + " ({{ (crashed.signal | first) or '' }}).", "()"),
            (head + " of signal {{ crashed.signal | first }}.", "None"),
            (head + " ({{ crashed.first_error_kind | first }}).", None))):
        folder = tmp_path / str(n) / "rank_crash"
        folder.mkdir(parents=True)
        (folder / "rank-crashed-alone.yaml").write_text(yaml.safe_dump({**src, "explanation": template}))
        (rule,) = load_rules([folder.parent], builtin=False)
        test = RuleTest.model_validate(dict(name="t", expect="match", culprits=[1], logs=logs))
        res = run_rule_test(rule, test, fake_analyze, None)
        if left is None:
            assert res.outcome is Outcome.PASSED, res.message
        else:
            assert res.outcome is Outcome.FAILED, template
            assert res.message.startswith("the explanation has an empty template slot"), res.message
            assert left in res.message
