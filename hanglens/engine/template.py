"""Sandboxed jinja2 rendering of rule explanations, with the filters rules use on bindings."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jinja2
import pandas as pd
from jinja2 import meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from hanglens import lazyre as re
from hanglens.limits import DEFAULT_LIMITS, Limits

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

    Wrapping matters because DataFrame attributes (`rank`, `min`, `count`) would shadow columns. A column's
    list is made when a template asks for it, and a row's dict when a loop reaches it: a binding may hold a
    row per rank of a big job, and a template reads a few columns of it.
    """

    __slots__ = ("_at", "_columns", "_frame")

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._columns = tuple(str(c) for c in frame.columns)
        self._at = {c: j for j, c in enumerate(self._columns)}   # (a repeated name: its last column)

    def _column(self, name: str) -> list[Any]:
        return [_plain(v) for v in self._frame.iloc[:, self._at[name]]]

    def __getattr__(self, name: str) -> list[Any]:
        if name.startswith("_") or name not in self._at:
            raise AttributeError(name)
        return self._column(name)

    def __getitem__(self, name: str) -> list[Any]:
        if name not in self._at:
            raise KeyError(name)
        return self._column(name)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        cols = self._columns
        return ({c: _plain(v) for c, v in zip(cols, row, strict=True)}
                for row in self._frame.itertuples(index=False, name=None))

    def __len__(self) -> int:
        return len(self._frame)

    def __bool__(self) -> bool:
        return len(self._frame) > 0

    def __str__(self) -> str:
        return f"{len(self._frame)} row(s)"


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
    """Sorted unique integer ranks folded into ranges: `0-3, 5, 7-9` (non-integers are ignored).

    A cell may itself hold a list of ranks (an event that names several, such as NCCL's duplicate-GPU pair):
    its members count like separate values.
    """
    flat: list[Any] = []
    for v in _values(value):
        if isinstance(v, (list, tuple)):
            flat.extend(_values(v))
        else:
            flat.append(v)
    ints = sorted({i for i in (_as_int(v) for v in flat) if i is not None})
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


def ranks_phrase(value: Any) -> str:
    """`rank 3` for one rank, `ranks 0-3, 5` for several (rank_list's ranges).

    With no rank number at all (the lines carry no rank prefix) the phrase still has to stand as the subject
    or object of the rule's sentence, so it says so in words rather than leaving a hole ("report ...").
    """
    listed = rank_list(value)
    if not listed:
        return "ranks not named in the logs"
    return f"rank {listed}" if listed.isdigit() else f"ranks {listed}"


def agree(value: Any, singular: str, plural: str) -> str:
    """The verb form that agrees with `ranks_phrase` of the same value: `singular` for exactly one rank.

    `{{ b.rank | ranks_phrase }} {{ b.rank | agree('was', 'were') }}` reads `rank 3 was` / `ranks 0-2 were`
    (and `ranks not named in the logs were` when no rank is known).
    """
    listed = rank_list(value)
    return singular if listed.isdigit() else plural


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


def _size(value: Any) -> str:
    """Bytes as PyTorch prints them in an OOM message (`336.00 MiB`, `4.35 GiB`); other values unchanged."""
    n = _as_int(value)
    if n is None or n < 0:
        return "" if value is None else str(value)
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"


def _duration(value: Any) -> str:
    """Seconds as a reader says them (`30 min`, `29 min 58 s`, `1 h 2 min 7 s`); other values unchanged."""
    n = _as_int(value)
    if n is None or n < 0:
        return "" if value is None else str(value)
    h, rest = divmod(n, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{h} h" if h else "", f"{m} min" if m else "", f"{s} s" if s or not (h or m) else ""]
    return " ".join(p for p in parts if p)


def _tally(value: Any) -> str:
    """A count as tqdm's `unit_scale` prints it once it is large (`14.4G`, `1.83M`: three significant digits
    and an SI suffix, tqdm/std.py format_sizeof), plain below a million; other values unchanged."""
    n = _as_int(value)
    if n is None:
        return "" if value is None else str(value)
    if abs(n) < 10**6:
        return str(n)
    x = float(n)
    for suffix in ("", "k", "M", "G", "T", "P", "E", "Z"):
        if abs(x) < 999.5:
            return f"{x:.2f}{suffix}" if abs(x) < 9.995 else f"{x:.1f}{suffix}" if abs(x) < 99.95 \
                else f"{x:.0f}{suffix}"
        x /= 1000
    return f"{x:.1f}Y"


@jinja2.pass_context
def _hosts(ctx: jinja2.runtime.Context, value: Any) -> list[str]:
    by_rank: Mapping[int, str] = ctx.get("hosts_by_rank") or {}
    out = {by_rank[i] for i in (_as_int(v) for v in _values(value)) if i is not None and i in by_rank}
    return sorted(out)


MAX_POWER_BITS = 4096  # `a ** b` may build an integer of at most this many bits


def _length(value: Any) -> int | None:
    """Length of a string or sequence a template could multiply or concatenate, else None."""
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else None


_NUMBER = re.compile(r"\d+")
_NESTED = re.compile(r"\{[^{}]*\{")  # a replacement field inside another: `{:>{width}}`
# Filters and str methods whose numeric arguments are widths or counts of the text they build.
_WIDTH_FILTERS = frozenset({"center", "indent", "wordwrap", "truncate", "batch", "slice"})
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})
_FORMAT_METHODS = frozenset({"format", "format_map"})


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The jinja2 sandbox, plus bounds on the work one expression may do.

    `**` may not build an integer past MAX_POWER_BITS bits; `*` and `+` on strings and sequences, the
    widths given to padding filters and str methods, and the widths inside a format string (`%`,
    `format`) may not exceed `max_output` characters; `range` is jinja2's (at most 100,000 items).
    Passing a bound raises SecurityError, which `render` turns into the rule's rendering error. The
    rendered text itself stops at `max_output` characters.
    """

    intercepted_binops = frozenset(["**", "*", "+", "%"])

    def __init__(self, max_output: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_output = max_output

    def _refuse(self, what: str) -> SecurityError:
        return SecurityError(f"{what} (limit max_template_output = {self.max_output} characters)")

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if (operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0
                and abs(left) > 1 and max(1, abs(left).bit_length() - 1) * right > MAX_POWER_BITS):
            raise SecurityError(f"{left} ** {right} is too large (more than {MAX_POWER_BITS} bits)")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                n = _length(seq)
                if n is not None and isinstance(times, int) and n * times > self.max_output:
                    raise self._refuse(f"repeating {n} items {times} times")
        if operator == "+":
            a, b = _length(left), _length(right)
            if a is not None and b is not None and a + b > self.max_output:
                raise self._refuse(f"joining {a} and {b} items")
        if operator == "%" and isinstance(left, str):
            self.check_format(left)
            if "*" in left:  # `%*d`: the width is an argument
                self.check_widths(right if isinstance(right, tuple) else (right,), {})
        return super().call_binop(context, operator, left, right)

    def call(self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, (str, bytes)) and getattr(__obj, "__name__", "") in _WIDTH_METHODS:
            self.check_widths(args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Any:
        """jinja2 wraps `str.format` at attribute access; its format string is checked there."""
        owner = getattr(value, "__self__", None)
        wrapped = super().wrap_str_format(value)
        if not (isinstance(owner, str) and wrapped is not None):
            return wrapped
        self.check_format(owner)
        if not _NESTED.search(owner.replace("{{", "")):  # no width given as an argument
            return wrapped

        def checked(*args: Any, **kwargs: Any) -> Any:
            self.check_widths(args, kwargs)
            for v in (*args, *kwargs.values()):  # format_map's mapping
                if isinstance(v, Mapping):
                    self.check_widths((), v)
            return wrapped(*args, **kwargs)
        return checked

    def check_widths(self, args: Iterable[Any], kwargs: Mapping[str, Any]) -> None:
        for v in (*args, *kwargs.values()):
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > self.max_output:
                raise self._refuse(f"a width or count of {v}")

    def check_format(self, fmt: str) -> None:
        """Refuse a format string whose widths or precisions would build more than max_output."""
        for m in _NUMBER.finditer(fmt):
            if len(m.group()) > 9 or int(m.group()) > self.max_output:
                raise self._refuse(f"a format width of {m.group()[:12]}")


def _bounded_filter(env: BoundedSandbox, name: str, fn: Any) -> Any:
    """`fn` refusing widths past the output bound (`center(10**9)`, `format` with `%999999999s`)."""
    skip = (jinja2.runtime.Context, jinja2.nodes.EvalContext, jinja2.Environment)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = [a for a in args if not isinstance(a, skip)]
        if name == "format" and given and isinstance(given[0], str):
            env.check_format(given[0])
        else:
            env.check_widths(given[1:], kwargs)  # the first is the value filtered, not a width
        return fn(*args, **kwargs)
    wrapper.jinja_pass_arg = getattr(fn, "jinja_pass_arg", None)  # type: ignore[attr-defined]
    if wrapper.jinja_pass_arg is None:  # type: ignore[attr-defined]
        del wrapper.jinja_pass_arg  # type: ignore[attr-defined]
    return wrapper


def environment(max_output: int = DEFAULT_LIMITS.max_template_output) -> SandboxedEnvironment:
    """A fresh sandbox with strict undefined names, the rule filters and bounded operations."""
    env = BoundedSandbox(max_output, undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters.update({"rank_list": rank_list, "ranks_phrase": ranks_phrase, "agree": agree,
                        "first": _first, "min": _min, "max": _max, "count": _count,
                        "unique": _unique, "join": _join, "hosts": _hosts, "size": _size,
                        "duration": _duration, "tally": _tally})
    env.filters.update({name: _bounded_filter(env, name, env.filters[name])
                        for name in (*_WIDTH_FILTERS, "format") if name in env.filters})
    env.globals.pop("namespace", None)  # a namespace lets a loop double a string 60 times
    return env


_ENV = environment()
_ENVS: dict[int, SandboxedEnvironment] = {DEFAULT_LIMITS.max_template_output: _ENV}


def find_variables(source: str) -> tuple[set[str], list[tuple[str, str]]]:
    """Undeclared names of a template, and every (name, attribute) access on a plain name.

    Raises jinja2.TemplateSyntaxError (with `lineno`) or TemplateAssertionError (unknown filter).
    """
    ast = _ENV.parse(source)
    # find_undeclared_variables runs jinja's code generator over the tree, which raises on an unknown
    # filter or test as compiling would; compiling as well would double the cost of loading rules.
    undeclared = meta.find_undeclared_variables(ast)
    attrs = sorted({(n.node.name, n.attr) for n in ast.find_all(nodes.Getattr)
                    if isinstance(n.node, nodes.Name)})
    return set(undeclared), attrs


def render(source: str, bindings: Mapping[str, pd.DataFrame], context: Mapping[str, Any],
           limits: Limits = DEFAULT_LIMITS) -> tuple[str, str | None]:
    """Render `source`; returns (text, error). On error the text says so instead of raising.

    The text is built piece by piece and stops at `limits.max_template_output` characters.
    """
    cap = limits.max_template_output
    env = _ENVS.get(cap)
    if env is None:
        env = _ENVS[cap] = environment(cap)
    values: dict[str, Any] = {name: BindingView(frame) for name, frame in bindings.items()}
    values.update(context)
    try:
        parts: list[str] = []
        size = 0
        for piece in env.from_string(source).generate(values):
            size += len(piece)
            if size > cap:
                raise SecurityError(f"the explanation passed {cap} characters (limit max_template_output)")
            parts.append(piece)
        text = "".join(parts)
    except Exception as exc:  # any template fault must degrade to a message, never abort the analysis
        msg = f"{type(exc).__name__}: {exc}"
        return f"(explanation could not be rendered: {msg})", msg
    return text.strip(), None
