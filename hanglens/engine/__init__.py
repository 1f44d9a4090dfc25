"""YAML rules: schema, loading with positioned errors, evaluation over tables, verdict, embedded tests."""

from __future__ import annotations

from hanglens.engine.evaluate import (
    EngineResult,
    Evidence,
    Finding,
    NotEvaluable,
    RuledOut,
    TablesLike,
    Verdict,
    describe_condition,
    evaluate,
)
from hanglens.engine.loader import Problem, builtin_rules_dir, collect_rules, load_rules, repo_root
from hanglens.engine.ruletest import Outcome, RuleTestResult, run_rule_test, run_rule_tests, summary
from hanglens.engine.schema import Rule, RuleTest

__all__ = [
    "EngineResult",
    "Evidence",
    "Finding",
    "NotEvaluable",
    "Outcome",
    "Problem",
    "Rule",
    "RuleTest",
    "RuleTestResult",
    "RuledOut",
    "TablesLike",
    "Verdict",
    "builtin_rules_dir",
    "collect_rules",
    "describe_condition",
    "evaluate",
    "load_rules",
    "repo_root",
    "run_rule_test",
    "run_rule_tests",
    "summary",
]
