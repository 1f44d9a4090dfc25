"""`hanglens rules list|check|test|explain` on the example rules (built-in rules are switched off)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hanglens import cli
from hanglens.engine import loader

from .conftest import BAD_RULES, EXAMPLE_RULES, fake_analyze


@pytest.fixture(autouse=True)
def _no_builtin_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "builtin_rules_dir", lambda: None)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.app, list(args))
    return result.exit_code, result.output


def test_list_is_plain_tab_separated_when_piped() -> None:
    code, out = invoke("rules", "list", "--rules", str(EXAMPLE_RULES))
    assert code == 0
    assert out.splitlines() == [
        "rank-behind-in-steps\tstraggler\tlow\tSome ranks fell far behind their peers in training steps",
        "rank-crashed-alone\trank_crash\tmedium\t"
        "A minority of ranks crashed on their own and the others waited",
    ]


def test_check_ok_and_bad() -> None:
    assert invoke("rules", "check", str(EXAMPLE_RULES)) == (0, "2 rule(s) OK\n")
    code, out = invoke("rules", "check", str(BAD_RULES), str(EXAMPLE_RULES))
    assert code == 2
    assert out.count("bad-rule.yaml:") >= 15 and out.rstrip().endswith("rule problem(s)")


def test_list_with_bad_rules_exits_2() -> None:
    code, out = invoke("rules", "list", "--rules", str(BAD_RULES))
    assert code == 2 and "bad-rule.yaml:5:13: confidence:" in out


def test_test_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli.api, "analyze", fake_analyze)
    code, out = invoke("rules", "test", str(EXAMPLE_RULES))
    assert code == 0
    assert out.splitlines()[-1] == "5 passed, 0 failed, 1 todo"
    assert "TODO   rank-behind-in-steps::behind-detected-from-silence" in out
    source = (EXAMPLE_RULES / "rank_crash" / "rank-crashed-alone.yaml").read_text()
    (tmp_path / "rank_crash").mkdir()
    wrong = source.replace("culprits: [1]", "culprits: [0]")
    (tmp_path / "rank_crash" / "rank-crashed-alone.yaml").write_text(wrong)
    code, out = invoke("rules", "test", str(tmp_path))
    assert code == 1
    assert "FAILED rank-crashed-alone::rank-1-crashes: culprits [1], expected [0]" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed, 0 todo"


def test_explain() -> None:
    code, out = invoke("rules", "explain", "rank-behind-in-steps", "--rules", str(EXAMPLE_RULES))
    assert code == 0
    assert "fact progress where steps_behind >= 10, on at least 1 rank(s) and at most 50% of ranks" in out
    assert "event" not in out.split("and none of:")[0].split("matches when all of:")[1]
    assert "behind-detected-from-silence: expect match [todo] (inline logs)" in out
    code, out = invoke("rules", "explain", "rank-behind-in-step", "--rules", str(EXAMPLE_RULES))
    assert code == 2 and "did you mean 'rank-behind-in-steps'?" in out
