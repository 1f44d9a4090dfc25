"""Sandboxed jinja2 rendering of rule explanations, with the filters rules use on bindings."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jinja2
import pandas as pd
from jinja2 import meta, nodes
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["GLOBALS", "BindingView", "environment", "find_variables", "rank_list", "render"]

# Names a template may use besides bindings; `render` always provides them.
GLOBALS: tuple[str, ...] = ("culprit_hosts", "culprit_ranks", "hosts_by_rank", "ranks", "suspect_ranks",
                            "victim_ranks", "world_size")


def _is_null(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _plain(value: Any) -> Any:
    """numpy/pandas scalars → Python scalars, nulls → None (templates and JSON see plain values)."""
    if _is_null(value):
        return None
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (list, tuple, dict, str)):
        try:
            return item()
        except (TypeError, ValueError):
            return value
    return value


class BindingView:
    """Read-only view of a binding for templates: `b.column` is the column's values as a list.

    Wrapping matters because DataFrame attributes (`rank`, `min`, `count`) would shadow columns.
    """

    __slots__ = ("_columns", "_rows")

    def __init__(self, frame: pd.DataFrame) -> None:
        self._columns = tuple(str(c) for c in frame.columns)
        self._rows = [{c: _plain(v) for c, v in zip(self._columns, row, strict=True)}
                      for row in frame.itertuples(index=False, name=None)]

    def __getattr__(self, name: str) -> list[Any]:
        if name.startswith("_") or name not in self._columns:
            raise AttributeError(name)
        return [r[name] for r in self._rows]

    def __getitem__(self, name: str) -> list[Any]:
        if name not in self._columns:
            raise KeyError(name)
        return [r[name] for r in self._rows]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __bool__(self) -> bool:
        return bool(self._rows)

    def __str__(self) -> str:
        return f"{len(self._rows)} row(s)"


def _values(value: Any) -> list[Any]:
    """The non-null values of a list-like (a lone scalar counts as a list of one)."""
    if isinstance(value, BindingView):
        raise TypeError("apply the filter to a column (binding.column), not to the whole binding")
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        items: list[Any] = [value]
    else:
        items = list(value)
    return [_plain(v) for v in items if not _is_null(v)]


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def _as_int(value: Any) -> int | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else None


def rank_list(value: Any) -> str:
    """Sorted unique integer ranks folded into ranges: `0-3, 5, 7-9` (non-integers are ignored)."""
    ints = sorted({i for i in (_as_int(v) for v in _values(value)) if i is not None})
    parts: list[str] = []
    start = prev = None
    for i in ints:
        if start is None:
            start = prev = i
        elif prev is not None and i == prev + 1:
            prev = i
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(parts)


def _first(value: Any) -> Any:
    vals = _values(value)
    return vals[0] if vals else None


def _min(value: Any) -> Any:
    vals = _values(value)
    return min(vals, key=_sort_key) if vals else None


def _max(value: Any) -> Any:
    vals = _values(value)
    return max(vals, key=_sort_key) if vals else None


def _count(value: Any) -> int:
    if isinstance(value, BindingView):
        return len(value)
    return len(_values(value))


def _unique(value: Any) -> list[Any]:
    seen: dict[str, Any] = {}
    for v in _values(value):
        seen.setdefault(repr(v), v)
    return sorted(seen.values(), key=_sort_key)


def _join(value: Any, sep: str = ", ") -> str:
    return sep.join(str(v) for v in _values(value))


@jinja2.pass_context
def _hosts(ctx: jinja2.runtime.Context, value: Any) -> list[str]:
    by_rank: Mapping[int, str] = ctx.get("hosts_by_rank") or {}
    out = {by_rank[i] for i in (_as_int(v) for v in _values(value)) if i is not None and i in by_rank}
    return sorted(out)


def environment() -> SandboxedEnvironment:
    """A fresh sandbox with strict undefined names and the rule filters."""
    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters.update({"rank_list": rank_list, "first": _first, "min": _min, "max": _max, "count": _count,
                        "unique": _unique, "join": _join, "hosts": _hosts})
    return env


_ENV = environment()


def find_variables(source: str) -> tuple[set[str], list[tuple[str, str]]]:
    """Undeclared names of a template, and every (name, attribute) access on a plain name.

    Raises jinja2.TemplateSyntaxError (with `lineno`) or TemplateAssertionError (unknown filter).
    """
    ast = _ENV.parse(source)
    _ENV.compile(ast)
    attrs = sorted({(n.node.name, n.attr) for n in ast.find_all(nodes.Getattr)
                    if isinstance(n.node, nodes.Name)})
    return set(meta.find_undeclared_variables(ast)), attrs


def render(source: str, bindings: Mapping[str, pd.DataFrame],
           context: Mapping[str, Any]) -> tuple[str, str | None]:
    """Render `source`; returns (text, error). On error the text says so instead of raising."""
    values: dict[str, Any] = {name: BindingView(frame) for name, frame in bindings.items()}
    values.update(context)
    try:
        text = _ENV.from_string(source).render(values)
    except Exception as exc:  # any template fault must degrade to a message, never abort the analysis
        msg = f"{type(exc).__name__}: {exc}"
        return f"(explanation could not be rendered: {msg})", msg
    return text.strip(), None
