"""Run the tests embedded in rules through the full pipeline, which the caller passes in as a callable."""

from __future__ import annotations

import enum
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hanglens.engine.schema import Expect, Rule, RuleTest, TestStatus

__all__ = ["AnalyzeFn", "Outcome", "RuleTestResult", "run_rule_test", "run_rule_tests", "summary"]

# `hanglens.api.analyze`: (paths, *, rules_dirs) -> an Analysis (with `to_dict()`) or its document.
AnalyzeFn = Callable[..., Any]


class Outcome(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    TODO = "todo"


@dataclass(frozen=True, slots=True)
class RuleTestResult:
    """The outcome of one embedded test; `message` says what went wrong (or that a todo now passes)."""

    rule_id: str
    name: str
    outcome: Outcome
    message: str = ""

    @property
    def test_id(self) -> str:
        return f"{self.rule_id}::{self.name}"


def _findings(result: Any) -> list[Mapping[str, Any]]:
    # Prefer the engine's own result over the whole document: cheaper, and independent of the renderers.
    engine = getattr(result, "result", None)
    if engine is not None and hasattr(engine, "findings") and hasattr(engine, "to_dict"):
        result = engine
    doc = result.to_dict() if hasattr(result, "to_dict") else result
    found = doc.get("findings", []) if isinstance(doc, Mapping) else []
    return [f if isinstance(f, Mapping) else f.to_dict() for f in found]


def _write_logs(root: Path, logs: Mapping[str, str]) -> None:
    for name, text in sorted(logs.items()):
        target = (root / name).resolve()
        if root.resolve() not in target.parents:
            raise ValueError(f"log name {name!r} escapes the test folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _judge(rule: Rule, test: RuleTest, analyze_fn: AnalyzeFn, repo_root: Path | None) -> str:
    """An empty string when the test holds, else what went wrong."""
    dirs: tuple[Path, ...] = () if rule.builtin or rule.root is None else (rule.root,)
    with tempfile.TemporaryDirectory(prefix="hanglens-ruletest-") as tmp:
        if test.logs is not None:
            _write_logs(Path(tmp), test.logs)
            inputs = Path(tmp)
        else:
            base = repo_root if repo_root is not None else Path.cwd()
            inputs = base / (test.fixture or "")
            if not inputs.exists():
                return f"fixture {test.fixture} not found under {base}"
        findings = _findings(analyze_fn([inputs], rules_dirs=dirs))
    mine = [f for f in findings if f.get("rule_id") == rule.id]
    if test.expect is Expect.NO_MATCH:
        return f"matched but should not: {mine[0].get('explanation', '')!s}" if mine else ""
    if not mine:
        others = ", ".join(sorted(str(f.get("rule_id")) for f in findings)) or "nothing"
        return f"did not match (matched instead: {others})"
    culprits = sorted(int(r) for r in mine[0].get("culprit_ranks", []))
    if test.culprits is not None and culprits != sorted(test.culprits):
        return f"culprits {culprits}, expected {sorted(test.culprits)}"
    suspects = sorted(int(r) for r in mine[0].get("suspect_ranks", []))
    if test.suspects is not None and suspects != sorted(test.suspects):
        return f"suspects {suspects}, expected {sorted(test.suspects)}"
    text = str(mine[0].get("explanation", ""))
    slot = _EMPTY_SLOT.search(text)
    if slot is not None:
        near = text[max(0, slot.start() - 40):slot.end() + 20]
        return f"the explanation has an empty template slot: ...{near}..."
    return ""


# What a missing template value leaves in a rendered explanation: `None`, empty parentheses (not a call such
# as `abort()`), a list separator before a closing parenthesis, an unrendered `{{`.
_EMPTY_SLOT = re.compile(r"\bNone\b|(?<![\w`])\(\s*\)|\s[,;]\s*\)|\{\{|\}\}")


def run_rule_test(rule: Rule, test: RuleTest, analyze_fn: AnalyzeFn,
                  repo_root: Path | None) -> RuleTestResult:
    """Run one test; a `status: todo` test never fails (a known gap), and says so if it now passes."""
    try:
        problem = _judge(rule, test, analyze_fn, repo_root)
    except Exception as exc:  # one broken test must not stop the others from running
        problem = f"the pipeline raised {type(exc).__name__}: {exc}"
    if test.status is TestStatus.TODO:
        return RuleTestResult(rule.id, test.name, Outcome.TODO,
                              problem or "passes now: remove `status: todo`")
    return RuleTestResult(rule.id, test.name, Outcome.FAILED if problem else Outcome.PASSED, problem)


def run_rule_tests(rules: Sequence[Rule], analyze_fn: AnalyzeFn,
                   repo_root: Path | None) -> list[RuleTestResult]:
    """Every embedded test of `rules`, in rule id then test order."""
    return [run_rule_test(rule, test, analyze_fn, repo_root)
            for rule in sorted(rules, key=lambda r: r.id) for test in rule.tests]


def summary(results: Sequence[RuleTestResult]) -> str:
    """`N passed, N failed, N todo`."""
    counts = {o: sum(1 for r in results if r.outcome is o) for o in Outcome}
    return ", ".join(f"{counts[o]} {o.value}" for o in Outcome)
