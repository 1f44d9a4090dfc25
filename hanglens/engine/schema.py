"""The rule schema as pydantic models: what a rule file may say, with closed sets as Enums."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from hanglens.model import Category, Confidence

__all__ = [
    "BASE_ATTRIBUTES",
    "OPERATORS",
    "RULE_CATEGORIES",
    "Category",
    "Condition",
    "Confidence",
    "CountSpec",
    "EvidenceSpec",
    "Expect",
    "Match",
    "Ops",
    "RanksSpec",
    "Requires",
    "Rule",
    "RuleTest",
    "SourceSpec",
    "TestStatus",
]

# Attributes every event carries outside `fields`, usable in `where` and present in event bindings.
BASE_ATTRIBUTES: tuple[str, ...] = ("rank", "host", "level", "text", "path", "line", "time", "kind")

# The categories a rule may claim: "none" and "unknown" are verdicts reached when no rule matched.
RULE_CATEGORIES: tuple[str, ...] = tuple(c.value for c in Category
                                         if c not in (Category.NONE, Category.UNKNOWN))


class Expect(str, enum.Enum):
    MATCH = "match"
    NO_MATCH = "no-match"


class TestStatus(str, enum.Enum):
    __test__ = False  # keeps pytest from collecting this Enum as a test class
    OK = "ok"
    TODO = "todo"


Scalar = str | int | float | bool | None


class _Strict(BaseModel):
    # defer_build: validators are built on first use, so loading the cached built-in rules builds only
    # Rule's (its nested models inline) instead of one per class at import.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Ops(_Strict):
    """Operators on one column or field; every operator given must hold (a bare scalar means `eq`)."""

    eq: Scalar = None
    ne: Scalar = None
    in_: list[Scalar] | None = Field(default=None, alias="in")
    not_in: list[Scalar] | None = None
    gt: int | float | None = None
    gte: int | float | None = None
    lt: int | float | None = None
    lte: int | float | None = None
    contains: Scalar = None
    regex: str | None = None
    exists: bool | None = None
    in_binding: str | None = None
    not_in_binding: str | None = None

    def given(self) -> list[tuple[str, Any]]:
        """The operators this mapping sets, as (yaml name, value), in declaration order."""
        out: list[tuple[str, Any]] = []
        for name, info in type(self).model_fields.items():
            if name in self.model_fields_set:
                out.append((info.alias or name, getattr(self, name)))
        return out


# YAML names of the operators, in documentation order.
OPERATORS: tuple[str, ...] = tuple(info.alias or name for name, info in Ops.model_fields.items())


class RanksSpec(_Strict):
    """Bounds on the distinct non-null ranks among matching rows (fractions of the world size)."""

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    min_fraction: float | None = Field(default=None, ge=0, le=1)
    max_fraction: float | None = Field(default=None, ge=0, le=1)
    # Exactly the world size less this many ranks (the known world size, or else every rank seen, as for
    # the fractions).
    all_but: int | None = Field(default=None, ge=0)


class CountSpec(_Strict):
    """Bounds on the number of matching rows."""

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)


class Condition(_Strict):
    """Rows of one fact table or events of one kind that satisfy `where`, with rank/count bounds."""

    fact: str | None = None
    event: str | None = None
    where: dict[str, Ops] = Field(default_factory=dict)
    ranks: RanksSpec | None = None
    count: CountSpec | None = None
    bind: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_scalars_mean_eq(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("where"), dict):
            where = {k: (v if isinstance(v, dict) else {"eq": v}) for k, v in data["where"].items()}
            data = {**data, "where": where}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> Condition:
        if (self.fact is None) == (self.event is None):
            raise ValueError("give exactly one of `fact:` or `event:`")
        return self

    @property
    def source(self) -> str:
        """`fact NAME` or `event KIND`, for messages."""
        return f"fact {self.fact}" if self.fact is not None else f"event {self.event}"


class Match(_Strict):
    all: list[Condition] = Field(default_factory=list)
    any: list[Condition] = Field(default_factory=list)
    none: list[Condition] = Field(default_factory=list)


class Requires(_Strict):
    events: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)


class SourceSpec(_Strict):
    """Where culprit or victim ranks come from: a binding and the column holding ranks."""

    from_: str = Field(alias="from")
    column: str = "rank"
    # The fault is the node's (its driver, its HCA port, its interfaces), so a bound row stands for every
    # rank on its host (the row's host, or its rank's): those a launcher placed there (DeepSpeed's
    # `global_rank_mapping=`, torchrun's rendezvous result or a command line with `--node-rank` and
    # `--nproc-per-node`) and those the logs show there.
    by_host: bool = False
    # More bindings whose rows name ranks the same way (`also: [own]`): one finding, several kinds of
    # evidence for the same ranks (a WARN that names a host, an error a rank raised itself).
    also: list[str] = Field(default_factory=list)


class EvidenceSpec(_Strict):
    """Lines to cite: rows of a binding, or events of a kind (optionally of a binding's ranks)."""

    from_: str | None = Field(default=None, alias="from")
    event: str | None = None
    ranks: str | None = None
    limit: int = Field(default=5, ge=1)

    @model_validator(mode="after")
    def _one_source(self) -> EvidenceSpec:
        if (self.from_ is None) == (self.event is None):
            raise ValueError("give exactly one of `from:` or `event:`")
        if self.ranks is not None and self.event is None:
            raise ValueError("`ranks:` only applies to `event:` evidence")
        return self


class RuleTest(_Strict):
    """One embedded test: logs (inline or a fixture folder) and whether the rule must match them."""

    __test__ = False
    name: str
    expect: Expect
    culprits: list[int] | None = None
    suspects: list[int] | None = None
    fixture: str | None = None
    logs: dict[str, str] | None = None
    status: TestStatus = TestStatus.OK

    @model_validator(mode="after")
    def _one_input(self) -> RuleTest:
        if (self.fixture is None) == (self.logs is None):
            raise ValueError("give exactly one of `fixture:` or `logs:`")
        if (self.culprits is not None or self.suspects is not None) and self.expect is not Expect.MATCH:
            raise ValueError("`culprits:` and `suspects:` only apply to `expect: match`")
        return self


class Rule(_Strict):
    """One rule file. `path` and `root` (the folder it was loaded from) are set by the loader."""

    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    title: str = Field(min_length=1)
    # Why the rule holds: the mechanism and its source (a reference section or an upstream file).
    description: str = ""
    category: Category
    confidence: Confidence
    priority: int = 50
    supersedes: list[str] = Field(default_factory=list)
    requires: Requires = Field(default_factory=Requires)
    match: Match
    culprits: SourceSpec | None = None
    # Ranks the logs put under suspicion without saying which of them is at fault (two sides, no majority).
    suspects: SourceSpec | None = None
    victims: SourceSpec | None = None
    evidence: list[EvidenceSpec] = Field(default_factory=list)
    explanation: str = Field(min_length=1)
    remediation: list[str] = Field(min_length=1)
    collect: list[str] = Field(default_factory=list)
    tests: list[RuleTest] = Field(default_factory=list)

    _path: Path | None = PrivateAttr(default=None)
    _root: Path | None = PrivateAttr(default=None)
    _builtin: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _plain_advice(self) -> Rule:
        """`remediation` and `collect` are shown as written (only `explanation` is a template): a `{{ }}`
        there would reach the user unrendered."""
        for name in ("remediation", "collect"):
            for text in getattr(self, name):
                if "{{" in text or "{%" in text:
                    raise ValueError(f"{name} is plain text, not a template (only explanation is rendered): "
                                     f"{text[:80]!r}")
        return self

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def root(self) -> Path | None:
        return self._root

    @property
    def builtin(self) -> bool:
        return self._builtin

    def conditions(self) -> list[tuple[str, int, Condition]]:
        """Every condition with its group and index, in evaluation order (all, any, none)."""
        out: list[tuple[str, int, Condition]] = []
        for group in ("all", "any", "none"):
            for i, cond in enumerate(getattr(self.match, group)):
                out.append((group, i, cond))
        return out
