"""Evaluate rules over events and fact tables: conditions, bindings, supersedes, ranking and the verdict."""

from __future__ import annotations

import heapq
import itertools
import math
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from hanglens import lazyre as re
from hanglens.analysis.build import object_frame
from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.analysis.kinds import FAILURE_KINDS, is_failure_warning, is_retried_connect_warning
from hanglens.analysis.status import printed_ranks
from hanglens.engine import template
from hanglens.engine.schema import BASE_ATTRIBUTES, Condition, Rule, SourceSpec
from hanglens.limits import DEFAULT_LIMITS, Limits
from hanglens.model import ERROR_LEVELS, Category, Confidence, Event, events_in_order, short_host

__all__ = ["REGEX_TIMEOUT_S", "EngineResult", "Evidence", "Finding", "NotEvaluable", "RuledOut", "TablesLike",
           "Verdict", "describe_condition", "evaluate"]

REGEX_TIMEOUT_S = 0.5
_SPACE = re.compile(r"\s+")
_FINISHED_FIRST_STEP = ("Nothing to fix. If the job did not exit by itself after training, take `py-spy dump "
                        "--pid <PID>` of every process before stopping it: a process waiting in "
                        "`destroy_process_group` or a barrier at exit is a teardown hang.")
_UNKNOWN_FIRST_STEP = ("While it hangs, take `py-spy dump --pid <PID>` of every rank; rerun with "
                       "NCCL_DEBUG=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL and "
                       "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 (flight recorder), "
                       "and keep the logs of every rank and of the launcher.")


def _path_line(e: Event) -> tuple[str, int]:
    return (e.path, e.line)


class TablesLike(Protocol):
    """What evaluation reads from `hanglens.analysis.Tables` (a Protocol keeps the engine testable)."""

    @property
    def events(self) -> Sequence[Event]: ...

    @property
    def tables(self) -> Mapping[str, pd.DataFrame]: ...

    @property
    def world_size(self) -> int | None: ...

    @property
    def ranks(self) -> Sequence[int]: ...

    @property
    def hosts(self) -> Mapping[int, str]: ...

    @property
    def nproc_per_node(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Evidence:
    """A log line a finding cites."""

    path: str
    line: int
    rank: int | None
    host: str | None
    time: float | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "rank": self.rank, "host": self.host, "time": self.time,
                "text": self.text}


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule that matched, with its rendered explanation, culprits, victims and cited lines."""

    rule_id: str
    category: Category
    confidence: Confidence
    title: str
    explanation: str
    culprit_ranks: tuple[int, ...]
    culprit_hosts: tuple[str, ...]
    victim_ranks: tuple[int, ...]
    remediation: tuple[str, ...]
    collect: tuple[str, ...]
    superseded_by: str | None
    evidence: tuple[Evidence, ...]
    priority: int = 50
    suspect_ranks: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "category": self.category.value, "confidence": self.confidence.value,
                "title": self.title, "explanation": self.explanation,
                "culprit_ranks": list(self.culprit_ranks),
                "culprit_hosts": list(self.culprit_hosts), "suspect_ranks": list(self.suspect_ranks),
                "victim_ranks": list(self.victim_ranks),
                "remediation": list(self.remediation), "collect": list(self.collect),
                "superseded_by": self.superseded_by, "evidence": [e.to_dict() for e in self.evidence]}


@dataclass(frozen=True, slots=True)
class RuledOut:
    """A rule whose required data was present but which did not match, and the condition that failed."""

    rule_id: str
    category: Category
    title: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "category": self.category.value, "title": self.title,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class NotEvaluable:
    """A rule whose required events or facts were absent from the input."""

    rule_id: str
    title: str
    missing: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "title": self.title, "missing": list(self.missing)}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer: the best finding, or `none` / `unknown` when no rule matched."""

    category: Category
    rule_id: str | None
    confidence: Confidence
    culprit_ranks: tuple[int, ...]
    culprit_hosts: tuple[str, ...]
    victim_ranks: tuple[int, ...]
    summary: str
    first_step: str
    suspect_ranks: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category.value, "rule_id": self.rule_id, "confidence": self.confidence.value,
                "culprit_ranks": list(self.culprit_ranks), "culprit_hosts": list(self.culprit_hosts),
                "suspect_ranks": list(self.suspect_ranks),
                "victim_ranks": list(self.victim_ranks), "summary": self.summary,
                "first_step": self.first_step}


@dataclass(frozen=True, slots=True)
class EngineResult:
    """Everything the rules concluded; lists are in their final, deterministic order."""

    findings: tuple[Finding, ...]
    ruled_out: tuple[RuledOut, ...]
    not_evaluable: tuple[NotEvaluable, ...]
    verdict: Verdict
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"findings": [f.to_dict() for f in self.findings],
                "ruled_out": [r.to_dict() for r in self.ruled_out],
                "not_evaluable": [n.to_dict() for n in self.not_evaluable],
                "verdict": self.verdict.to_dict(), "warnings": list(self.warnings)}


# -- values --------------------------------------------------------------------------------------------


def _is_null(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or _is_null(value):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if hasattr(value, "item"):
        return _number(value.item())
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _same(x: Any, v: Any) -> bool:
    """Loose equality: numbers compare numerically (also as text, e.g. pg "0" == 0), bools only to bools."""
    if isinstance(x, bool) or isinstance(v, bool):
        return isinstance(x, bool) and isinstance(v, bool) and x == v
    nx, nv = _number(x), _number(v)
    if nx is not None and nv is not None:
        return nx == nv
    if isinstance(x, (list, tuple)):
        return False
    return str(x) == str(v)


def _as_rank(value: Any) -> int | None:
    n = _number(value)
    return int(n) if n is not None and n.is_integer() else None


def _ranks_of(frame: pd.DataFrame, column: str = "rank") -> set[int]:
    if column not in frame.columns:
        return set()
    out: set[int] = set()
    for v in frame[column]:
        # A column may hold one rank or a list of ranks (e.g. monitored_barrier's missing_ranks).
        for item in (v if isinstance(v, (list, tuple)) else (v,)):
            r = _as_rank(item)
            if r is not None:
                out.add(r)
    return out


class _RegexTimeout(Exception):
    pass


class _RegexBudget(Exception):
    """The rule's total regex time over this job (`rule_regex_budget_s`) ran out."""


@dataclass
class _Clock:
    """Regex seconds one rule may still spend on this job."""

    left: float


_PATTERNS: dict[str, Any] = {}


def _pattern(source: str) -> Any:
    compiled = _PATTERNS.get(source)
    if compiled is None:
        import regex  # only rules with a `regex` condition reached by the facts need it

        compiled = _PATTERNS[source] = regex.compile(source)
    return compiled


# -- conditions ----------------------------------------------------------------------------------------

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b,
}


def _search(source: str, items: Sequence[Any], clock: _Clock | None) -> bool:
    """Does `source` match any item? Each call gets REGEX_TIMEOUT_S, and all calls share the rule's clock."""
    pattern = _pattern(source)
    for i in items:
        if clock is not None and clock.left <= 0:
            raise _RegexBudget(source)
        timeout = REGEX_TIMEOUT_S if clock is None else min(REGEX_TIMEOUT_S, clock.left)
        start = time.perf_counter()
        try:
            found = pattern.search(str(i), timeout=timeout) is not None
        except TimeoutError as exc:
            if clock is not None and timeout < REGEX_TIMEOUT_S:
                clock.left = 0.0
                raise _RegexBudget(source) from exc
            raise _RegexTimeout(source) from exc
        finally:
            if clock is not None:
                clock.left -= time.perf_counter() - start
        if found:
            return True
    return False


def _test(op: str, v: Any, x: Any, bound: Mapping[str, set[int]], clock: _Clock | None = None) -> bool:
    """Does value `x` satisfy operator `op` with operand `v`? Missing values satisfy only the negations."""
    if _is_null(x):
        if op == "eq":
            return v is None
        if op == "exists":
            return v is False
        return op in ("ne", "not_in", "not_in_binding") and not (op == "ne" and v is None)
    if op == "eq":
        return v is not None and _same(x, v)
    if op == "ne":
        return v is None or not _same(x, v)
    if op == "in":
        return any(_same(x, i) for i in v)
    if op == "not_in":
        return not any(_same(x, i) for i in v)
    if op in _COMPARE:
        n = _number(x)
        return n is not None and _COMPARE[op](n, float(v))
    if op == "contains":
        if isinstance(x, (list, tuple)):
            return any(_same(i, v) for i in x)
        return str(v) in str(x)
    if op == "regex":
        return _search(v, x if isinstance(x, (list, tuple)) else [x], clock)
    if op == "exists":
        return bool(v)
    if op in ("in_binding", "not_in_binding"):
        inside = _as_rank(x) in bound.get(v, set())
        return inside if op == "in_binding" else not inside
    return False


def _mask(series: pd.Series, op: str, v: Any, bound: Mapping[str, set[int]],
          clock: _Clock | None = None) -> pd.Series:
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
    if numeric and op in _COMPARE and not isinstance(v, bool):
        return getattr(series, op.replace("gte", "ge").replace("lte", "le"))(v).fillna(False).astype(bool)
    return pd.Series([_test(op, v, x, bound, clock) for x in series], index=series.index, dtype=bool)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else ("null" if v is None else str(v))


def _describe_op(column: str, op: str, v: Any) -> str:
    words = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
    if op in words:
        return f"{column} {words[op]} {_fmt(v)}"
    if op in ("in", "not_in"):
        return f"{column} {op.replace('_', ' ')} [{', '.join(_fmt(i) for i in v)}]"
    if op == "contains":
        return f"{column} contains {_fmt(v)}"
    if op == "regex":
        return f"{column} matches /{v}/"
    if op == "exists":
        return f"{column} is {'set' if v else 'missing'}"
    if op == "in_binding":
        return f"{column} is one of the ranks of '{v}'"
    return f"{column} is none of the ranks of '{v}'"


def describe_condition(cond: Condition) -> str:
    """A condition in words, e.g. `fact pg_enqueue_lag where lag >= 1, on at least 1 rank`."""
    text = cond.source
    clauses = [_describe_op(col, op, v) for col, ops in cond.where.items() for op, v in ops.given()]
    if clauses:
        text += " where " + " and ".join(clauses)
    bounds: list[str] = []
    if cond.ranks is not None:
        r = cond.ranks
        for value, words in ((r.min, "at least {} rank(s)"), (r.max, "at most {} rank(s)"),
                             (r.min_fraction, "at least {:.0%} of ranks"),
                             (r.max_fraction, "at most {:.0%} of ranks"),
                             (r.all_but, "all ranks but {}")):
            if value is not None:
                bounds.append(words.format(value))
    if cond.count is not None:
        for value, words in ((cond.count.min, "at least {} row(s)"), (cond.count.max, "at most {} row(s)")):
            if value is not None:
                bounds.append(words.format(value))
    if bounds:
        text += ", on " + " and ".join(bounds)
    if cond.bind:
        text += f" (bound as '{cond.bind}')"
    return text


@dataclass
class _Run:
    """Per-evaluation state: the input, cached event frames, warnings raised so far."""

    tables: TablesLike
    catalog: Mapping[str, set[str]]
    warnings: list[str] = field(default_factory=list)
    limits: Limits = DEFAULT_LIMITS
    clock: _Clock | None = None  # the regex time left to the rule being evaluated
    _events: dict[str, pd.DataFrame] = field(default_factory=dict)
    _texts: dict[tuple[str, int], str] | None = None   # (only for events not in the reader's order)
    _ordered: bool | None = None
    _by_kind: dict[str, list[Any]] | None = None
    # The kinds the rules name (their conditions and evidence): the one pass over a big job's events keeps
    # lists of these only. A kind asked for beyond them costs a pass of its own.
    wanted: frozenset[str] | None = None

    def event_frame(self, kind: str) -> pd.DataFrame:
        cached = self._events.get(kind)
        if cached is not None:
            return cached
        if self._by_kind is None:  # one pass over the events for every kind the rules ask for
            by_kind: dict[str, list[Any]] = {}
            wanted = self.wanted
            for e in self.tables.events:
                if wanted is None or e.kind in wanted:
                    by_kind.setdefault(e.kind, []).append(e)
            self._by_kind = by_kind
        if self.wanted is None or kind in self.wanted:
            evs = self._by_kind.get(kind, [])
        else:
            evs = [e for e in self.tables.events if e.kind == kind]
        names = set(self.catalog.get(kind, ()))
        for e in evs:
            names.update(e.fields)
        extra = sorted(names - set(BASE_ATTRIBUTES))
        columns = [*BASE_ATTRIBUTES, *extra]
        # Column by column, straight into the frame's one block: no tuple per event, and no list per column
        # beside the frame (a big job has one event of a kind per rank)
        # (lazy: `object_frame` reads each column to its end before it takes the next, so `n` is bound right)
        values = itertools.chain(
            ((e.rank for e in evs), (e.host for e in evs), (e.level for e in evs), (e.text for e in evs),
             (e.path for e in evs), (e.line for e in evs), (e.time for e in evs),
             (e.kind for e in evs)),
            ((e.get(n) for e in evs) for n in extra))
        frame = object_frame(columns, values, len(evs)) if evs else pd.DataFrame(columns=columns)
        del values
        self._events[kind] = frame
        return frame

    def fact_frame(self, name: str) -> pd.DataFrame:
        frame = self.tables.tables.get(name)
        if frame is None:
            spec = FACT_SPECS.get(name)
            return pd.DataFrame(columns=list(spec.columns) if spec else [])
        return frame

    def frame(self, cond: Condition) -> pd.DataFrame:
        return self.fact_frame(cond.fact) if cond.fact is not None else self.event_frame(cond.event or "")

    def text_at(self, path: str, line: int) -> str:
        """The text of the first event read from line `line` of `path` ("" if none)."""
        evs = self.tables.events
        if self._ordered is None:
            self._ordered = events_in_order(evs)
        if self._texts is None:
            if self._ordered:
                # (found by bisection in the reader's order: no index of a big job's 180,000 lines)
                i = bisect_left(evs, (path, line), key=_path_line)
                return evs[i].text if i < len(evs) and _path_line(evs[i]) == (path, line) else ""
            self._texts = {}
            for e in evs:
                self._texts.setdefault((e.path, e.line), e.text)
        return self._texts.get((path, line), "")

    def denominator(self) -> int | None:
        return self.tables.world_size or (len(self.tables.ranks) or None)


def _check(cond: Condition, run: _Run, bindings: Mapping[str, pd.DataFrame],
           rule_id: str) -> tuple[bool, pd.DataFrame, str]:
    """(holds, matching rows, why it does not hold / what it found) for one condition."""
    frame = run.frame(cond)
    bound = {name: _ranks_of(b) for name, b in bindings.items()}
    mask = pd.Series(True, index=frame.index, dtype=bool)
    for column, ops in cond.where.items():
        series = (frame[column] if column in frame.columns
                  else pd.Series([None] * len(frame), index=frame.index, dtype=object))
        for op, v in ops.given():
            try:
                mask &= _mask(series[mask], op, v, bound, run.clock).reindex(frame.index, fill_value=False)
            except _RegexTimeout:
                run.warnings.append(f"rule {rule_id}: regex /{v}/ on {column} timed out after "
                                    f"{REGEX_TIMEOUT_S} s; the condition was treated as false")
                return False, frame.iloc[0:0], f"regex /{v}/ timed out"
    rows = frame[mask]
    what = describe_condition(cond)
    n = len(rows)
    lo = cond.count.min if cond.count is not None and cond.count.min is not None else 1
    if n < lo:
        return False, rows, f"no {what}" if n == 0 else f"only {n} row(s) of {what}"
    if cond.count is not None and cond.count.max is not None and n > cond.count.max:
        return False, rows, f"{n} rows of {what}"
    if cond.ranks is not None:
        r = cond.ranks
        k = len(_ranks_of(rows))
        denom = run.denominator()
        if r.min is not None and k < r.min:
            return False, rows, f"{k} rank{'' if k == 1 else 's'} with {what}"
        if r.max is not None and k > r.max:
            return False, rows, f"{k} ranks with {what}"
        for bound_f, low in ((r.min_fraction, True), (r.max_fraction, False)):
            if bound_f is None:
                continue
            if denom is None:
                return False, rows, f"world size unknown, cannot bound the fraction of ranks for {what}"
            if (k / denom < bound_f) if low else (k / denom > bound_f):
                return False, rows, f"{k} of {denom} ranks with {what}"
        if r.all_but is not None:
            if denom is None:
                return False, rows, f"no rank known, cannot count all ranks but {r.all_but} for {what}"
            if k != denom - r.all_but:
                return False, rows, f"{k} of {denom} ranks with {what}"
    return True, rows, f"found {what}"


@dataclass(frozen=True, slots=True)
class _Matched:
    rule: Rule
    bindings: dict[str, pd.DataFrame]


def _kinds_named(rules: Sequence[Rule]) -> frozenset[str]:
    """The event kinds `rules` read: their conditions' and their evidence's."""
    named = {cond.event for rule in rules for _, _, cond in rule.conditions() if cond.event}
    named |= {spec.event for rule in rules for spec in rule.evidence if spec.event}
    return frozenset(named)


def _missing(rule: Rule, run: _Run, present: set[str]) -> list[str]:
    out = [f"event {k}" for k in rule.requires.events if k not in present]
    out += [f"fact {f}" for f in rule.requires.facts if len(run.fact_frame(f)) == 0]
    return out


def _match(rule: Rule, run: _Run) -> tuple[dict[str, pd.DataFrame] | None, str]:
    """The bindings when the rule matches, else None and the failed condition in words."""
    bindings: dict[str, pd.DataFrame] = {}
    for i, cond in enumerate(rule.match.all):
        held, rows, why = _check(cond, run, bindings, rule.id)
        if not held:
            return None, f"match.all[{i}]: {why}"
        if cond.bind:
            bindings[cond.bind] = rows
    if rule.match.any:
        reasons: list[str] = []
        for i, cond in enumerate(rule.match.any):
            held, rows, why = _check(cond, run, bindings, rule.id)
            if cond.bind:
                bindings[cond.bind] = rows if held else rows.iloc[0:0]
            if not held:
                reasons.append(f"match.any[{i}]: {why}")
        if len(reasons) == len(rule.match.any):
            return None, "none of match.any held (" + "; ".join(reasons) + ")"
    for i, cond in enumerate(rule.match.none):
        held, rows, why = _check(cond, run, bindings, rule.id)
        if held:
            return None, f"match.none[{i}]: {why}" + _cite(rows)
    return bindings, ""


def _cite(rows: pd.DataFrame) -> str:
    if not {"path", "line"} <= set(rows.columns) or len(rows) == 0:
        return ""
    first = rows.iloc[0]
    return f" ({first['path']}:{first['line']})" if not _is_null(first["path"]) else ""


def _sorted_rows(frame: pd.DataFrame, first: int = 32) -> Iterator[dict[str, Any]]:
    """The rows of `frame` as dicts, by time, path and line (stable), each dict made when it is reached: the
    evidence takes the first few of a frame that may hold one row per rank.

    The `first` smallest come from a heap over the row numbers (a big job's frame is not turned into a tuple
    and a sort key per row for a few rows of evidence); past them, the rest is sorted.
    """
    cols = list(frame.columns)
    columns = [frame.iloc[:, j].tolist() for j in range(len(cols))]   # (Python values, as itertuples gives)
    at = {c: j for j, c in enumerate(cols)}   # (a repeated name: the last column, as a dict of the row says)

    def column(name: str) -> Any:
        j = at.get(name)
        return None if j is None else columns[j]

    times, paths, lines = column("time"), column("path"), column("line")

    def key(i: int) -> tuple[Any, ...]:
        t = _number(times[i]) if times is not None else None
        return (t is None, t or 0.0, str((paths[i] if paths is not None else None) or ""),
                (_number(lines[i]) if lines is not None else None) or 0.0, i)

    def row(i: int) -> dict[str, Any]:
        return {c: columns[j][i] for j, c in enumerate(cols)}

    n = len(frame)
    head = heapq.nsmallest(first, range(n), key=key)
    yield from map(row, head)
    if n > len(head):
        taken = set(head)
        yield from map(row, sorted((i for i in range(n) if i not in taken), key=key))


def _subject_rank(rank: Any, failed_rank: Any) -> int | None:
    """The rank a line is about: its writer's, else the rank a launcher's line reports on (`failed_rank` of
    torchrun's failure table, whose lines the agent writes)."""
    own = _as_rank(rank)
    return own if own is not None else _as_rank(failed_rank)


def _evidence(rule: Rule, run: _Run, bindings: Mapping[str, pd.DataFrame],
              culprits: set[int]) -> list[Evidence]:
    out: list[Evidence] = []
    seen: set[tuple[str, int]] = set()
    for spec in rule.evidence:
        if spec.from_ is not None:
            frame = bindings.get(spec.from_, pd.DataFrame())
        else:
            frame = run.event_frame(spec.event or "")
            if spec.ranks is not None:
                keep = (culprits if spec.ranks == "culprits"
                        else _ranks_of(bindings.get(spec.ranks, pd.DataFrame())))
                if len(frame):
                    about = (frame["failed_rank"].tolist() if "failed_rank" in frame.columns
                             else [None] * len(frame))
                    frame = frame[[_subject_rank(r, a) in keep
                                   for r, a in zip(frame["rank"].tolist(), about, strict=True)]]
        if not {"path", "line"} <= set(frame.columns):
            continue
        taken = 0
        for r in _sorted_rows(frame):
            if taken >= spec.limit:
                break
            line = _number(r.get("line"))
            if _is_null(r.get("path")) or line is None:
                continue
            ref = (str(r["path"]), int(line))
            if ref in seen:
                continue
            seen.add(ref)
            taken += 1
            rank = _subject_rank(r.get("rank"), r.get("failed_rank"))
            text = r.get("text")
            out.append(Evidence(path=ref[0], line=ref[1], rank=rank,
                                host=None if _is_null(r.get("host")) else str(r["host"]),
                                time=_number(r.get("time")),
                                text=str(text) if isinstance(text, str) else run.text_at(*ref)))
    return out


def _truthy(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index, dtype=bool)
    return pd.Series([v is True or (not _is_null(v) and not isinstance(v, str) and bool(v))
                      for v in frame[column]], index=frame.index, dtype=bool)


def _flagged_ranks(run: _Run) -> set[int]:
    """Ranks rank_status says crashed, hung or suffered (the default victims, minus culprits)."""
    status = run.fact_frame("rank_status")
    if len(status) == 0:
        return set()
    return _ranks_of(status[_flagged_mask(status)])


def _flagged_mask(status: pd.DataFrame) -> pd.Series:
    return _truthy(status, "crashed") | _truthy(status, "hung") | _truthy(status, "victim")


# How a process dies of its own fault, never of a peer's: a fatal signal of its own (a peer's failure ends
# a rank by SIGTERM from the launcher or SIGABRT from its watchdog, failure-signatures.md section 0.6), or a
# local fault event first (an OOM, a CUDA error, a GPU Xid, its DataLoader: sections 3-8).
_OWN_DEATH_SIGNALS = frozenset({"SIGSEGV", "SIGKILL", "SIGBUS", "SIGFPE", "SIGILL"})
_LOCAL_FAULT_KINDS = frozenset({"oom", "cuda_error", "device_assert", "xid", "dataloader_worker_died",
                                "dataloader_error"})


def _default_victims(run: _Run) -> set[int]:
    """Victims when a rule names none: the flagged ranks less those whose own process died of its own fault
    (a crashed rank whose launcher reports a fatal signal of its own, or whose first failure is a local
    fault). A victim only suffered a peer's failure (failure-signatures.md section 0.1, section 17); a rank
    that died that way is at worst an unnamed culprit, never one of those."""
    status = run.fact_frame("rank_status")
    if len(status) == 0:
        return set()
    own = pd.Series([s in _OWN_DEATH_SIGNALS or k in _LOCAL_FAULT_KINDS
                     for s, k in zip(status["signal"], status["first_error_kind"], strict=True)],
                    index=status.index, dtype=bool) & _truthy(status, "crashed")
    return _ranks_of(status[_flagged_mask(status) & ~own])


def _host_ranks(rows: pd.DataFrame, column: str, hosts: Mapping[int, str], nproc: int | None = None,
                world: int | None = None) -> set[int]:
    """Every rank on a host a row names, or on the host of a row's rank (`culprits: {by_host: true}`): the
    fault is the node's, so it is every rank's the job placed there. A row's rank whose host no line names
    still has its node where every node runs the same stated number of workers (`nproc`): torchrun gives a
    node the consecutive block of ranks `group_rank * nproc_per_node + local_rank` (log-formats.md section
    3.5), so that block is the node's; so is the block of a named host whose known ranks all lie in one."""
    if "host" not in rows.columns or column not in rows.columns:
        return set()
    named: set[str] = set()
    blocks: set[int] = set()

    def block(start: int, n: int) -> range:   # the node's n consecutive ranks from `start`, within the world
        return range(start, min(start + n, world or start + n))

    for x, h in zip(rows[column], rows["host"], strict=True):
        r = _as_rank(x)
        h = h if isinstance(h, str) and h else hosts.get(r) if r is not None else None
        if h:
            named.add(short_host(h))
        elif r is not None and nproc and (world is None or r < world):
            blocks.update(block(r - r % nproc, nproc))
    out = {r for r, h in hosts.items() if short_host(h) in named} if named else set()
    if nproc and named:
        # A named host's known ranks that all fall in one block of `nproc` are that node's block: its other
        # workers are there too, though no line of theirs was pasted (the same numbering).
        for h in named:
            starts = {r - r % nproc for r, hh in hosts.items() if short_host(hh) == h}
            if len(starts) == 1:
                blocks.update(block(next(iter(starts)), nproc))
    return out | blocks


def _spec_rows(spec: SourceSpec, bindings: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The rows a culprit / suspect / victim spec names: its `from` binding and those it lists in `also`
    (only the columns every one of them has, so ranks and hosts line up)."""
    frames = [bindings.get(name, pd.DataFrame()) for name in (spec.from_, *spec.also)]
    frames = [f for f in frames if len(f.columns)]
    if len(frames) <= 1:
        return frames[0] if frames else pd.DataFrame()
    common = [c for c in frames[0].columns if all(c in f.columns for f in frames[1:])]
    return pd.concat([f[common] for f in frames], ignore_index=True)


def _finding(rule: Rule, run: _Run, bindings: dict[str, pd.DataFrame]) -> Finding:
    culprits: set[int] = set()
    culprit_hosts: set[str] = set()
    if rule.culprits is not None:
        source = _spec_rows(rule.culprits, bindings)
        culprits = _ranks_of(source, rule.culprits.column)
        if rule.culprits.by_host:
            culprits |= _host_ranks(source, rule.culprits.column, run.tables.hosts,
                                    run.tables.nproc_per_node, run.tables.world_size)
        for r in sorted(culprits):
            host = run.tables.hosts.get(r)
            if host is None and "host" in source.columns and rule.culprits.column in source.columns:
                hosts = [h for x, h in zip(source[rule.culprits.column], source["host"], strict=True)
                         if _number(x) == r and isinstance(h, str)]
                host = min(hosts) if hosts else None
            if host is not None:
                culprit_hosts.add(host)
    suspects: set[int] = set()
    if rule.suspects is not None:
        suspect_rows = _spec_rows(rule.suspects, bindings)
        suspects = _ranks_of(suspect_rows, rule.suspects.column) - culprits
    if rule.victims is not None:
        victims = _ranks_of(_spec_rows(rule.victims, bindings), rule.victims.column) - culprits
    else:
        victims = _default_victims(run) - culprits
    victims -= suspects
    # The job's ranks and hosts as they are, not a copy per finding (a big job's are 16,384 long): the
    # sandbox is immutable (`template.BoundedSandbox`), so a template cannot change them.
    context = {"world_size": run.tables.world_size, "ranks": run.tables.ranks,
               "culprit_ranks": sorted(culprits), "culprit_hosts": sorted(culprit_hosts),
               "suspect_ranks": sorted(suspects),
               "victim_ranks": sorted(victims), "hosts_by_rank": run.tables.hosts}
    explanation, error = template.render(rule.explanation, bindings, context, run.limits)
    if error is not None:
        run.warnings.append(f"rule {rule.id}: explanation could not be rendered: {error}")
    return Finding(rule_id=rule.id, category=rule.category, confidence=rule.confidence, title=rule.title,
                   explanation=explanation, culprit_ranks=tuple(sorted(culprits)),
                   culprit_hosts=tuple(sorted(culprit_hosts)), victim_ranks=tuple(sorted(victims)),
                   remediation=tuple(rule.remediation), collect=tuple(rule.collect), superseded_by=None,
                   evidence=tuple(_evidence(rule, run, bindings, culprits)), priority=rule.priority,
                   suspect_ranks=tuple(sorted(suspects)))


def _strength(f: Finding) -> tuple[int, int, str]:
    return (-f.confidence.order, -f.priority, f.rule_id)


def _rank(findings: list[Finding], rules: Mapping[str, Rule]) -> list[Finding]:
    """Mark superseded findings (by their strongest superseder) and order best first."""
    matched = {f.rule_id for f in findings}
    out: list[Finding] = []
    for f in findings:
        by = sorted((g for g in findings if f.rule_id in rules[g.rule_id].supersedes and g.rule_id in matched
                     and g.rule_id != f.rule_id), key=_strength)
        out.append(Finding(**{**_fields(f), "superseded_by": by[0].rule_id}) if by else f)
    return sorted(out, key=lambda f: (f.superseded_by is not None, *_strength(f)))


def _fields(f: Finding) -> dict[str, Any]:
    return {name: getattr(f, name) for name in Finding.__dataclass_fields__}


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _failed(run: _Run) -> bool:
    """Is there failure evidence at all? NCCL WARN lines count (failure-signatures.md section 10), except
    the few that healthy jobs print too."""
    if _flagged_ranks(run):
        return True
    events = run.tables.events
    # A retried store connect is a failure only if the job never got going (failure-signatures.md
    # section 12, "Contradicts"): with training progress after it, it is the IPv6 attempt or the late
    # store host that the retry outlived.
    progressed = any(e.kind in ("progress", "run_finished") for e in events)
    # An exception CPython printed under `Exception ignored in ...` (a `__del__` or atexit callback at
    # teardown) was dropped and the process went on: no failure (parsers/traceback.py, `unraisable`).
    # A multiprocessing helper thread's traceback (kinds.survived_in_helper_thread) stays failure evidence:
    # its process lived too, but the batch it was sending is lost and its rank waits for it.
    return any((e.kind in FAILURE_KINDS or (e.level or "") in ERROR_LEVELS or is_failure_warning(e))
               and not (progressed and is_retried_connect_warning(e))
               and not (e.kind == "exception" and e.get("unraisable")) for e in events)


def _stopped_after_finish(run: _Run) -> str:
    """How the job was stopped, when every stop came after the run said it was over and nothing shows a
    hang (the `after_finish` column of job_stopped); empty otherwise."""
    stops = run.fact_frame("job_stopped")
    if len(stops) == 0 or "after_finish" not in stops.columns or not _truthy(stops, "after_finish").all():
        return ""
    return str(stops["said"].iloc[0])


def _log_cut(run: _Run) -> str:
    """`... ends inside a progress bar at step 0 of 14 (nohup.out:5)` when a log's last word is a bar short of
    its total (silent_hang column `bar_cut`), and nothing failed: the loop never finished, so the job did not
    end by itself (failure-signatures.md section 16: a hang with no error line is a finding of its own)."""
    quiet = run.fact_frame("silent_hang")
    if len(quiet) == 0 or "bar_cut" not in quiet.columns:
        return ""
    cut = quiet[_truthy(quiet, "bar_cut")]
    if len(cut) > 0:
        row = cut.iloc[0]
        rank = _as_rank(row["rank"])
        whose = f"rank {rank}'s" if rank is not None else "a"
        return (f"The log ends inside {whose} progress bar at step {row['last_step']} of {row['total']} "
                f"({row['path']}:{row['line']})")
    if "logged_cut" not in quiet.columns:
        return ""
    logged = quiet[_truthy(quiet, "logged_cut")]
    if len(logged) == 0:
        return ""
    row = logged.iloc[0]
    rank = _as_rank(row["rank"])
    whose = f"Rank {rank}'s" if rank is not None else "The"
    others = len(logged) - 1
    also = f"; {others} other rank{'s' if others > 1 else ''} stopped inside the loop too" if others else ""
    return (f"{whose} last report is step {row['last_step']} of {row['total']}, logged every "
            f"{row['stride']} step{'s' if row['stride'] != 1 else ''} ({row['path']}:{row['line']}{also})")


def _where_ranks_stopped(run: _Run) -> str:
    """`Rank 0 last reported step 12, rank 1 step 9.` from the progress table (empty when none)."""
    prog = run.fact_frame("progress")
    if len(prog) == 0 or "last_step" not in prog.columns:
        return ""
    parts = []
    for r, step in sorted((_as_rank(a), b) for a, b in zip(prog["rank"], prog["last_step"], strict=True)
                          if _as_rank(a) is not None and not _is_null(b)):
        parts.append(f"rank {r} step {step}")
    if not parts:
        return ""
    return " Last progress per rank: " + ", ".join(parts[:16]) + ("" if len(parts) <= 16 else ", ...") + "."


def _follow_up_last(ranked: list[Finding], tables: Any) -> list[Finding]:
    """When the last attempt of a restarted worker group failed before any training step after an earlier
    attempt failed (`followup_attempt`, analysis/status.py `restarts`), a finding that cites a line of an
    earlier attempt goes first: the last attempt's failure is that one's consequence (torchrun restarts the
    whole group with the same code and data; failure-signatures.md section 0.7, the first failure is the
    root). Findings keep their order otherwise."""
    last = getattr(tables, "followup_attempt", None)
    if last is None or len(ranked) < 2:
        return ranked
    cited = {(ev.path, ev.line) for f in ranked for ev in f.evidence}
    attempt = {(e.path, e.line): e.attempt for e in tables.events if (e.path, e.line) in cited}

    def earlier(f: Finding) -> bool:
        # a finding that cites a line of an earlier attempt is about that attempt's failure
        return any(a is not None and a < last for a in (attempt.get((ev.path, ev.line)) for ev in f.evidence))

    if earlier(ranked[0]):
        return ranked
    first = next((f for f in ranked if f.culprit_ranks and earlier(f)
                  and f.category not in (Category.NONE, Category.UNKNOWN)), None)
    if first is None:
        return ranked
    return [first, *(f for f in ranked if f is not first)]


def _verdict(findings: Sequence[Finding], run: _Run) -> Verdict:
    history = getattr(run.tables, "restart_note", "")
    if findings:
        top = findings[0]
        return Verdict(category=top.category, rule_id=top.rule_id, confidence=top.confidence,
                       culprit_ranks=top.culprit_ranks, culprit_hosts=top.culprit_hosts,
                       victim_ranks=top.victim_ranks, summary=_collapse(top.explanation) + history,
                       first_step=top.remediation[0] if top.remediation else "",
                       suspect_ranks=top.suspect_ranks)
    ranks = sorted(run.tables.ranks)
    finished = _stopped_after_finish(run)
    if finished:
        return Verdict(category=Category.NONE, rule_id=None, confidence=Confidence.LOW, culprit_ranks=(),
                       culprit_hosts=(), victim_ranks=(),
                       summary=f"The job was stopped from outside ({finished}) after its output said the run "
                       "was over; nothing failed before the stop." + history,
                       first_step=_FINISHED_FIRST_STEP)
    if _failed(run):
        flagged = sorted(_flagged_ranks(run))
        who = f" on rank{'s' if len(flagged) > 1 else ''} {template.rank_list(flagged)}" if flagged else ""
        return Verdict(category=Category.UNKNOWN, rule_id=None, confidence=Confidence.LOW, culprit_ranks=(),
                       culprit_hosts=(), victim_ranks=tuple(sorted(_default_victims(run))),
                       summary=f"The logs show a failure{who}, but no rule explains it."
                       + _where_ranks_stopped(run) + history,
                       first_step=_UNKNOWN_FIRST_STEP)
    cut = _log_cut(run)
    if cut:
        return Verdict(category=Category.UNKNOWN, rule_id=None, confidence=Confidence.LOW, culprit_ranks=(),
                       culprit_hosts=(), victim_ranks=(),
                       summary=f"No error line, but the job did not finish its loop. {cut}: the loop never "
                       "reached its total and nothing says it ended, so the job hung and was stopped "
                       "(or was still running when the logs were copied)." + _where_ranks_stopped(run),
                       first_step=_UNKNOWN_FIRST_STEP)
    confidence = Confidence.MEDIUM if len(ranks) >= 2 else Confidence.LOW
    # The ranks that wrote something: the job's ranks reach the highest one named, an excerpt's may have gaps.
    files = getattr(run.tables, "files", None)
    wrote = (sorted(printed_ranks(files)) if files else []) or ranks
    seen = (f"the logs of {len(wrote)} rank{'' if len(wrote) == 1 else 's'}" if wrote else "the logs")
    return Verdict(category=Category.NONE, rule_id=None, confidence=confidence, culprit_ranks=(),
                   culprit_hosts=(), victim_ranks=(),
                   summary=f"No failure signal in {seen}." + (history or _restarted(run)),
                   first_step="")


_LATER_ATTEMPT = re.compile(r"(?:^|/)attempt_[1-9]\d*/")


def _restarted(run: _Run) -> str:
    """Context for a `none` verdict: torchrun restarted the worker group (`--max-restarts`; the agent's
    `Worker group FAILED. <k>/<m> attempts left` line or a `--log-dir` tree's `attempt_<n>` folder, n > 0;
    torch/distributed/elastic/agent/server/api.py) and the run finished after it, so an earlier attempt's
    failure was survived (hanglens/analysis/status.py `_survived_by_success`).

    The attempt folders are read from the inputs (one name per file), not from every event's path: a big
    job's events are millions, its files thousands. Tables without a file list (a caller's own) fall back
    to the events' distinct paths."""
    files = getattr(run.tables, "files", None)
    paths = {f.path for f in files} if files else {e.path for e in run.tables.events}
    # (the events by kind were grouped once for the rules: this asks that index, not every event again)
    if len(run.event_frame("worker_group_restart")) or any(f.origin.attempt for f in files or ()) or any(
            _LATER_ATTEMPT.search(p) for p in paths):
        return (" The worker group was restarted (torchrun `--max-restarts`) and the last attempt finished:"
                " the failure of an earlier attempt was survived, not the job's end.")
    return ""


def evaluate(rules: Sequence[Rule], tables: TablesLike,
             catalog: Mapping[str, set[str]] | None = None, limits: Limits = DEFAULT_LIMITS) -> EngineResult:
    """Run every rule over `tables`; never raises on odd data (a faulty rule becomes a warning).

    A rule whose regexes use up `limits.rule_regex_budget_s` seconds is not evaluable, with that reason.
    """
    if catalog is None:
        from hanglens.parsers import event_catalog

        catalog = event_catalog()
    run = _Run(tables=tables, catalog=catalog, limits=limits, wanted=_kinds_named(rules))
    present = {e.kind for e in tables.events}
    findings: list[Finding] = []
    ruled_out: list[RuledOut] = []
    not_evaluable: list[NotEvaluable] = []
    for rule in sorted(rules, key=lambda r: r.id):
        missing = _missing(rule, run, present)
        if missing:
            not_evaluable.append(NotEvaluable(rule.id, rule.title, tuple(missing)))
            continue
        run.clock = _Clock(limits.rule_regex_budget_s)
        try:
            bindings, reason = _match(rule, run)
            if bindings is None:
                ruled_out.append(RuledOut(rule.id, rule.category, rule.title, reason))
                continue
            findings.append(_finding(rule, run, bindings))
        except _RegexBudget as exc:
            why = (f"regex /{exc}/ used up the rule's regex time on this job "
                   f"({limits.rule_regex_budget_s:g} s; limit rule_regex_budget_s)")
            run.warnings.append(f"rule {rule.id}: not evaluable: {why}")
            not_evaluable.append(NotEvaluable(rule.id, rule.title, (why,)))
        except Exception as exc:  # a rule tripping over unexpected data must not sink the whole analysis
            run.warnings.append(f"rule {rule.id}: evaluation failed: {type(exc).__name__}: {exc}")
            ruled_out.append(RuledOut(rule.id, rule.category, rule.title,
                                      f"could not be evaluated ({type(exc).__name__}: {exc})"))
    ranked = _follow_up_last(_rank(findings, {r.id: r for r in rules}), tables)
    return EngineResult(findings=tuple(ranked), ruled_out=tuple(ruled_out),
                        not_evaluable=tuple(not_evaluable), verdict=_verdict(ranked, run),
                        warnings=tuple(dict.fromkeys(run.warnings)))
