"""Hand-built tables and a toy pipeline, so engine tests need neither parsers nor the analysis layer."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.engine import evaluate, load_rules
from hanglens.engine.schema import Rule
from hanglens.model import Event, SourceRef

HERE = Path(__file__).parent
EXAMPLE_RULES = HERE / "rules"
BAD_RULES = HERE / "bad_rules"

# A small fixed catalogue so tests do not depend on which parsers exist yet.
CATALOG: dict[str, set[str]] = {
    "error_file": {"exc_type", "message", "timestamp", "error_code"},
    "hang_detected": {"detector", "pg", "seq", "op", "timeout_ms"},
    "cuda_error": {"error", "message", "status"},
    "exception": {"exc_type", "message", "frames"},
}


@dataclass
class FakeTables:
    events: list[Event] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    world_size: int | None = None
    ranks: list[int] = field(default_factory=list)
    hosts: dict[int, str] = field(default_factory=dict)
    nproc_per_node: int | None = None


def fact(name: str, rows: Iterable[Mapping[str, Any]] = ()) -> pd.DataFrame:
    cols = list(FACT_SPECS[name].columns)
    return pd.DataFrame([{c: r.get(c) for c in cols} for r in rows], columns=cols, dtype=object)


def event(kind: str, rank: int | None, line: int = 1, *, path: str | None = None, text: str = "",
          time: float | None = None, host: str | None = None, level: str | None = None,
          **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef(path or f"rank{rank}.log", line), text=text or f"{kind} on {rank}",
                 parser="test", rank=rank, host=host, time=time, level=level, fields=fields)


def tables(events: Sequence[Event] = (), facts: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
           world_size: int | None = None, ranks: Sequence[int] = (), hosts: Mapping[int, str] | None = None,
           ) -> FakeTables:
    all_facts = {name: fact(name, (facts or {}).get(name, ())) for name in FACT_SPECS}
    return FakeTables(list(events), all_facts, world_size, list(ranks), dict(hosts or {}))


def rule(**overrides: Any) -> Rule:
    """A valid rule; `overrides` replace top-level keys."""
    base: dict[str, Any] = {
        "id": "test-rule", "title": "A test rule", "category": "rank_crash", "confidence": "medium",
        "match": {"all": [{"fact": "rank_status", "where": {"crashed": True}, "bind": "crashed"}]},
        "culprits": {"from": "crashed"}, "explanation": "ranks {{ crashed.rank | rank_list }}",
        "remediation": ["look at the crashed rank"],
    }
    base.update(overrides)
    return Rule.model_validate(base)


_STEP = re.compile(r"^step (\d+)$")
_RANK = re.compile(r"rank(\d+)")


def fake_analyze(paths: Sequence[Path], *, rules_dirs: Sequence[Path] = ()) -> Any:
    """Toy pipeline: `rankN.log` files; `step N` lines are progress, a `CRASH` line crashes the rank."""
    last: dict[int, int] = {}
    crashed: set[int] = set()
    ranks: set[int] = set()
    for root in paths:
        for f in sorted(Path(root).rglob("*.log")):
            m = _RANK.search(f.name)
            if m is None:
                continue
            rank = int(m.group(1))
            ranks.add(rank)
            for line in f.read_text().splitlines():
                step = _STEP.match(line)
                if step:
                    last[rank] = int(step.group(1))
                elif line == "CRASH":
                    crashed.add(rank)
    top = max(last.values(), default=0)
    progress = [{"rank": r, "last_step": s, "max_step": top, "steps_behind": top - s, "path": f"rank{r}.log",
                 "line": 1} for r, s in sorted(last.items())]
    status = [{"rank": r, "crashed": r in crashed, "hung": False,
               "victim": r not in crashed and bool(crashed),
               "first_error_kind": "crash" if r in crashed else None}
              for r in sorted(ranks)]
    rules = load_rules(rules_dirs, builtin=False)
    return evaluate(rules, tables(facts={"progress": progress, "rank_status": status}, ranks=sorted(ranks)),
                    catalog=CATALOG)


@pytest.fixture()
def catalog() -> dict[str, set[str]]:
    return CATALOG
