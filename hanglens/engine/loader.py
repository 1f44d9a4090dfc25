"""Load rule files, reporting every problem of every file at once as `path:line:col: key: problem (hint)`."""

from __future__ import annotations

import difflib
import importlib.resources
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

import jinja2
import pydantic
from pydantic import BaseModel

from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.engine import rulecache, template
from hanglens.engine.schema import BASE_ATTRIBUTES, RULE_CATEGORIES, Expect, Rule
from hanglens.errors import RuleError
from hanglens.limits import DEFAULT_LIMITS, Limits, human_bytes

if TYPE_CHECKING:  # PyYAML loads only when a rule file is read: the cache of built-in rules skips it
    import yaml

__all__ = ["Problem", "builtin_rules_dir", "collect_rules", "load_rules", "repo_root"]

_RULE_SUFFIXES = (".yaml", ".yml")
_CULPRITS = "culprits"  # the pseudo-binding evidence `ranks:` may name


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    """One thing wrong with a rule file, positioned at the YAML node it concerns (1-based line/col)."""

    path: str
    line: int
    col: int
    key: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        key = f"{self.key}: " if self.key else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{self.path}:{self.line}:{self.col}: {key}{self.message}{hint}"


def repo_root() -> Path | None:
    """The source checkout holding this package (None when installed from a wheel)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def builtin_rules_dir() -> Path | None:
    """Built-in rules: the wheel's package data first, then the source checkout's `rules/`."""
    try:
        shipped = importlib.resources.files("hanglens") / "_rules"
        if shipped.is_dir():
            return Path(str(shipped))
    except (ModuleNotFoundError, OSError):
        pass
    root = repo_root()
    if root is not None and (root / "rules").is_dir():
        return root / "rules"
    return None


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _keypath(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _suggest(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


def _known(known: Iterable[str], limit: int = 40) -> str:
    names = sorted(known)
    shown = ", ".join(names[:limit])
    return f"known: {shown}" + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _hint(word: str, known: Iterable[str]) -> str:
    known = sorted(known)
    return "; ".join(h for h in (_suggest(word, known), _known(known)) if h)


class _FileCheck:
    """Validation of one rule file: the composed YAML tree gives every problem its line and column."""

    def __init__(self, path: Path, root: Path, builtin: bool, catalog: Mapping[str, Iterable[str]],
                 facts: Mapping[str, Sequence[str]], limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.path = path
        self.root = root
        self.builtin = builtin
        self.catalog = {k: set(v) for k, v in catalog.items()}
        self.facts = {k: tuple(v) for k, v in facts.items()}
        self.shown = _display(path)
        self.problems: list[Problem] = []
        self.node: yaml.Node | None = None
        self.data: Any = None
        self.text = ""

    # -- positions ---------------------------------------------------------------------------------

    def _locate(self, loc: Sequence[str | int]) -> tuple[yaml.Node | None, yaml.Node | None, int]:
        """(value node, key node of the last mapping step, components consumed) for a key path."""
        import yaml

        node, key_node, used = self.node, None, 0
        for part in loc:
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                found = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
                if not found:
                    break
                key_node, node = found[-1]
            elif (isinstance(node, yaml.SequenceNode) and isinstance(part, int)
                  and 0 <= part < len(node.value)):
                key_node, node = None, node.value[part]
            else:
                break
            used += 1
        return node, key_node, used

    def add(self, loc: Sequence[str | int], message: str, hint: str = "", *, at_key: bool = False,
            line_offset: int = 0) -> Problem:
        """Record a problem at the node of `loc`; `at_key` points at the key and names its parent path."""
        problem = self.problem(loc, message, hint, at_key=at_key, line_offset=line_offset)
        self.problems.append(problem)
        return problem

    def problem(self, loc: Sequence[str | int], message: str, hint: str = "", *, at_key: bool = False,
                line_offset: int = 0) -> Problem:
        """A problem positioned at the node of `loc`, not recorded (for checks across files)."""
        node, key_node, _ = self._locate(loc)
        mark_node = key_node if at_key and key_node is not None else node
        line, col = (1, 1)
        if mark_node is not None:
            line, col = mark_node.start_mark.line + 1 + line_offset, mark_node.start_mark.column + 1
        return Problem(self.shown, line, col, _keypath(loc[:-1] if at_key else loc), message, hint)

    # -- reading -----------------------------------------------------------------------------------

    def read(self) -> bool:
        import yaml

        cap = self.limits.max_rule_bytes
        try:
            with open(self.path, "rb") as fh:
                data = fh.read(cap + 1)
            if len(data) > cap:
                self.problems.append(Problem(self.shown, 1, 1, "", f"rule file over {human_bytes(cap)}",
                                             "limit max_rule_bytes, --limit max_rule_bytes=BYTES"))
                return False
            self.text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(Problem(self.shown, 1, 1, "", f"cannot read rule file: {exc}"))
            return False
        # libyaml composes ~10x faster and keeps node marks; the pure-Python loader is the fallback.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(self.text)
        try:
            self.node = loader.get_single_node()
            if self.node is None:
                self.problems.append(Problem(self.shown, 1, 1, "", "empty rule file"))
                return False
            if not self._no_aliases(self.node):
                return False
            self._duplicates(self.node, ())
            self.data = loader.construct_document(self.node)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
            what = " ".join(p for p in (exc.context, exc.problem) if p)
            self.problems.append(Problem(self.shown, line, col, "", f"invalid YAML: {what}"))
            return False
        except yaml.YAMLError as exc:
            self.problems.append(Problem(self.shown, 1, 1, "", f"invalid YAML: {exc}"))
            return False
        finally:
            loader.dispose()
        if not isinstance(self.data, dict):
            self.problems.append(Problem(self.shown, 1, 1, "", "a rule file must be a mapping (key: value)"))
            return False
        return True

    def _no_aliases(self, root: yaml.Node) -> bool:
        """False (and a problem at the first aliased node) when aliases add more than max_yaml_aliases
        nodes to the document once expanded, or make a node contain itself.

        An alias makes the composed tree a graph; walking or constructing it as a tree is exponential
        ("billion laughs": 81 aliases standing for 9**9 nodes), so the expanded size is computed once per
        node and the count stops at the limit. The default 0 refuses every alias.
        """
        import yaml

        allowed = self.limits.max_yaml_aliases
        cap = allowed + 1 + 10**7  # past any file's own node count: counting stops there
        reused: list[yaml.Node] = []
        size: dict[int, int] = {}      # expanded node count of each node finished
        open_ids: set[int] = set()
        cyclic: yaml.Node | None = None
        stack: list[tuple[yaml.Node, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            key = id(node)
            kids = ([x for kv in node.value for x in kv] if isinstance(node, yaml.MappingNode) else
                    list(node.value) if isinstance(node, yaml.SequenceNode) else [])
            if done:
                size[key] = min(1 + sum(size.get(id(k), 1) for k in kids), cap)
                open_ids.discard(key)
                continue
            if key in size:
                reused.append(node)
                continue
            if key in open_ids:
                cyclic = cyclic or node
                reused.append(node)
                continue
            open_ids.add(key)
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
        extra = size.get(id(root), 1) - len(size)
        if not reused or (cyclic is None and extra <= allowed):
            return True
        first = cyclic or min(reused, key=lambda n: (n.start_mark.line, n.start_mark.column))
        if cyclic is not None:
            what = "a YAML alias makes a node contain itself"
        elif allowed == 0:
            what = "YAML anchors and aliases are not allowed in rule files"
        else:
            what = f"YAML aliases add more than {allowed} nodes to the file once expanded"
        self.problems.append(Problem(self.shown, first.start_mark.line + 1, first.start_mark.column + 1, "",
                                     what + " (the aliased node starts here)",
                                     "write the value out in full (limit max_yaml_aliases)"))
        return False

    def _duplicates(self, node: yaml.Node, loc: tuple[str | int, ...]) -> None:
        import yaml

        if isinstance(node, yaml.MappingNode):
            seen: dict[str, yaml.Node] = {}
            for k, v in node.value:
                name = k.value if isinstance(k, yaml.ScalarNode) else None
                if name is not None and name in seen:
                    first = seen[name].start_mark
                    self.problems.append(Problem(
                        self.shown, k.start_mark.line + 1, k.start_mark.column + 1, _keypath(loc),
                        f"duplicate key '{name}'",
                        f"first given at line {first.line + 1}; the last one wins"))
                elif name is not None:
                    seen[name] = k
                self._duplicates(v, (*loc, name if name is not None else "?"))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._duplicates(item, (*loc, i))

    # -- schema ------------------------------------------------------------------------------------

    def validate_schema(self) -> Rule | None:
        try:
            return Rule.model_validate(self.data)
        except pydantic.ValidationError as exc:
            self._schema_errors(exc.errors())
            return None

    def _schema_errors(self, errors: Sequence[Any]) -> None:
        # Union members each report their own failure; collapse them onto the YAML node they concern.
        groups: dict[tuple[str | int, ...], list[Any]] = {}
        for err in errors:
            loc: tuple[str | int, ...] = tuple(err["loc"])
            if err["type"] in ("extra_forbidden", "missing"):
                groups.setdefault(loc, []).append(err)
                continue
            _, _, used = self._locate(loc)
            groups.setdefault(loc[:used] if used < len(loc) else loc, []).append(err)
        for loc, errs in groups.items():
            err = errs[0]
            kind = err["type"]
            if kind == "extra_forbidden":
                name = str(loc[-1])
                known = _model_keys(loc[:-1])
                self.add(loc, f"unknown key '{name}'", _hint(name, known), at_key=True)
            elif kind == "missing":
                self.add(loc[:-1], f"missing required key '{loc[-1]}'")
            elif kind in ("enum", "literal_error"):
                allowed = str(err.get("ctx", {}).get("expected", "")).replace("'", "").replace(" or ", ", ")
                if loc and loc[-1] == "category":
                    allowed = ", ".join(RULE_CATEGORIES)
                self.add(loc, f"{err['input']!r} is not one of {allowed}")
            elif kind == "string_pattern_mismatch" and loc == ("id",):
                self.add(loc, f"{err['input']!r} is not a kebab-case id",
                         "lowercase letters and digits joined by '-', e.g. rank-missing-from-collective")
            elif len(errs) > 1:
                tags = sorted({str(e["loc"][-1]) for e in errs if len(e["loc"]) > len(loc)})
                self.add(loc, f"invalid value {err['input']!r}", f"expected one of: {', '.join(tags)}"
                         if tags else "")
            else:
                msg = str(err["msg"]).removeprefix("Value error, ")
                self.add(loc, msg[:1].lower() + msg[1:])

    # -- meaning -----------------------------------------------------------------------------------

    def validate_meaning(self) -> None:
        d = self.data
        stem = self.path.stem
        if isinstance(d.get("id"), str) and d["id"] != stem:
            self.add(("id",), f"id '{d['id']}' differs from the file name '{self.path.name}'",
                     f"rename the file to {d['id']}{self.path.suffix} or set id: {stem}")
        category = d.get("category")
        if isinstance(category, str):
            if category in ("none", "unknown"):
                self.add(("category",), f"'{category}' is a verdict, not a rule category",
                         f"one of {', '.join(RULE_CATEGORIES)}")
            folder = self.path.parent
            if folder == self.root:
                if self.builtin:
                    self.add(("category",), "built-in rules live in a folder named after their category",
                             f"move the file to {category}/{self.path.name}")
            elif folder.name != category:
                self.add(("category",), f"category '{category}' differs from the folder '{folder.name}'",
                         f"move the file to {category}/{self.path.name} or set category: {folder.name}")
        requires = d.get("requires")
        if isinstance(requires, dict):
            for i, kind in _items(requires.get("events")):
                self._event_kind(("requires", "events", i), kind)
            for i, fact in _items(requires.get("facts")):
                self._fact_name(("requires", "facts", i), fact)
        bound = self._conditions(d.get("match"))
        for key in ("culprits", "suspects", "victims"):
            spec = d.get(key)
            if isinstance(spec, dict):
                self._binding_column((key,), spec.get("from"), spec.get("column", "rank"), bound)
                column = spec.get("column", "rank")
                for i, name in _items(spec.get("also")):
                    cols = self._binding((key, "also", i), name, bound)
                    if cols is not None and isinstance(column, str) and column not in cols:
                        self.add((key, "also", i), f"binding '{name}' has no column '{column}'",
                                 _hint(column, cols))
        for i, ev in _items(d.get("evidence")):
            if not isinstance(ev, dict):
                continue
            if isinstance(ev.get("from"), str):
                cols = self._binding(("evidence", i, "from"), ev["from"], bound)
                if cols is not None and not {"path", "line"} <= cols:
                    self.add(("evidence", i, "from"),
                             f"binding '{ev['from']}' has no path/line columns to cite",
                             "cite events of a kind instead: `event: KIND` with `ranks: BINDING`")
            if isinstance(ev.get("event"), str):
                self._event_kind(("evidence", i, "event"), ev["event"])
            if isinstance(ev.get("ranks"), str) and ev["ranks"] != _CULPRITS:
                cols = self._binding(("evidence", i, "ranks"), ev["ranks"], bound, also=(_CULPRITS,))
                if cols is not None and "rank" not in cols:
                    self.add(("evidence", i, "ranks"), f"binding '{ev['ranks']}' has no rank column")
        if isinstance(d.get("explanation"), str):
            self._template(d["explanation"], bound)
        self._tests(d.get("tests"))

    def _event_kind(self, loc: tuple[str | int, ...], kind: Any) -> set[str] | None:
        if not isinstance(kind, str):
            return None
        if kind not in self.catalog:
            self.add(loc, f"no parser emits event kind '{kind}'", _hint(kind, self.catalog))
            return None
        return set(self.catalog[kind]) | set(BASE_ATTRIBUTES)

    def _fact_name(self, loc: tuple[str | int, ...], name: Any) -> set[str] | None:
        if not isinstance(name, str):
            return None
        if name not in self.facts:
            self.add(loc, f"unknown fact '{name}'", _hint(name, self.facts))
            return None
        return set(self.facts[name])

    def _binding(self, loc: tuple[str | int, ...], name: Any, bound: Mapping[str, set[str] | None],
                 also: Sequence[str] = ()) -> set[str] | None:
        """Columns of binding `name` (None when unknown or unchecked); reports names not bound yet."""
        if not isinstance(name, str):
            return None
        if name not in bound:
            known = [*bound, *also]
            self.add(loc, f"binding '{name}' is used before it is bound",
                     _suggest(name, known) or (f"bound so far: {', '.join(known)}" if known else
                                               "add `bind: NAME` to an earlier condition"))
            return None
        return bound[name]

    def _binding_column(self, loc: tuple[str | int, ...], name: Any, column: Any,
                        bound: Mapping[str, set[str] | None]) -> None:
        cols = self._binding((*loc, "from"), name, bound)
        if cols is not None and isinstance(column, str) and column not in cols:
            self.add((*loc, "column"), f"binding '{name}' has no column '{column}'", _hint(column, cols))

    def _conditions(self, match: Any) -> dict[str, set[str] | None]:
        bound: dict[str, set[str] | None] = {}
        if not isinstance(match, dict):
            return bound
        for group in ("all", "any", "none"):
            for i, cond in _items(match.get(group)):
                if not isinstance(cond, dict):
                    continue
                loc: tuple[str | int, ...] = ("match", group, i)
                cols: set[str] | None = None
                what = ""
                if isinstance(cond.get("fact"), str):
                    cols, what = self._fact_name((*loc, "fact"), cond["fact"]), f"fact '{cond['fact']}'"
                elif isinstance(cond.get("event"), str):
                    cols, what = self._event_kind((*loc, "event"), cond["event"]), f"event '{cond['event']}'"
                where = cond.get("where")
                if isinstance(where, dict):
                    for column, ops in where.items():
                        if cols is not None and isinstance(column, str) and column not in cols:
                            noun = "column" if "fact" in cond else "field"
                            self.add((*loc, "where", column), f"unknown {noun} '{column}' for {what}",
                                     _hint(column, cols), at_key=True)
                        if isinstance(ops, dict):
                            self._ops((*loc, "where", column), ops, bound)
                if cond.get("ranks") is not None and cols is not None and "rank" not in cols:
                    self.add((*loc, "ranks"), f"{what} has no rank column to count")
                name = cond.get("bind")
                if isinstance(name, str):
                    if group == "none":
                        self.add((*loc, "bind"), "a `none` condition cannot bind",
                                 "when the rule matches, its `none` conditions found nothing")
                    elif name in bound:
                        self.add((*loc, "bind"), f"binding '{name}' is bound twice")
                    elif name in template.GLOBALS or name == _CULPRITS:
                        self.add((*loc, "bind"), f"'{name}' is a reserved name",
                                 f"reserved: {', '.join(sorted((*template.GLOBALS, _CULPRITS)))}")
                    else:
                        bound[name] = cols
        return bound

    def _ops(self, loc: tuple[str | int, ...], ops: Mapping[str, Any],
             bound: Mapping[str, set[str] | None]) -> None:
        for op in ("in_binding", "not_in_binding"):
            if isinstance(ops.get(op), str):
                cols = self._binding((*loc, op), ops[op], bound)
                if cols is not None and "rank" not in cols:
                    self.add((*loc, op), f"binding '{ops[op]}' has no rank column")
        pattern = ops.get("regex")
        if isinstance(pattern, str):
            import regex  # rule files are read only on a cache miss

            try:
                regex.compile(pattern)
            except regex.error as exc:
                self.add((*loc, "regex"), f"invalid regex: {exc}")

    def _at_text(self, loc: Sequence[str | int], needle: str, message: str, hint: str = "") -> None:
        """Report at the first occurrence of `needle` inside the scalar at `loc` (template names)."""
        node, _, _ = self._locate(loc)
        if node is not None:
            import regex

            lines = self.text.splitlines()
            word = regex.compile(r"\b" + regex.escape(needle) + r"\b")
            for i in range(node.start_mark.line, min(node.end_mark.line + 1, len(lines))):
                m = word.search(lines[i], node.start_mark.column if i == node.start_mark.line else 0)
                if m is not None:
                    self.problems.append(Problem(self.shown, i + 1, m.start() + 1, _keypath(loc), message,
                                                 hint))
                    return
        self.add(loc, message, hint)

    def _template(self, source: str, bound: Mapping[str, set[str] | None]) -> None:
        import yaml

        node, _, _ = self._locate(("explanation",))
        # Block scalars (`|`, `>`) start their text on the line after the indicator.
        block = isinstance(node, yaml.ScalarNode) and node.style in ("|", ">")
        try:
            names, attrs = template.find_variables(source)
        except jinja2.TemplateSyntaxError as exc:
            self.add(("explanation",), f"template error: {exc.message}",
                     line_offset=(exc.lineno or 1) - (0 if block else 1))
            return
        except jinja2.TemplateError as exc:
            self.add(("explanation",), f"template error: {exc}")
            return
        allowed = set(bound) | set(template.GLOBALS)
        for name in sorted(names - allowed):
            self._at_text(("explanation",), name,
                          f"template variable '{name}' is neither a binding nor a global",
                     _suggest(name, allowed) or f"bindings: {', '.join(sorted(bound)) or 'none'}; "
                                                f"globals: {', '.join(template.GLOBALS)}")
        for name, attr in attrs:
            cols = bound.get(name)
            if cols is not None and attr not in cols:
                self._at_text(("explanation",), attr, f"binding '{name}' has no column '{attr}'",
                              _hint(attr, cols))

    def _tests(self, tests: Any) -> None:
        cases = [t for _, t in _items(tests) if isinstance(t, dict)]
        expects = {t.get("expect") for t in cases}
        loc: tuple[str, ...] = ("tests",) if tests is not None else ()
        for expect in (Expect.MATCH.value, Expect.NO_MATCH.value):
            if expect not in expects:
                self.add(loc, f"no test with `expect: {expect}`",
                         "every rule carries at least one match and one no-match test")
        seen: set[str] = set()
        for i, t in _items(tests):
            name = t.get("name") if isinstance(t, dict) else None
            if isinstance(name, str):
                if name in seen:
                    self.add(("tests", i, "name"), f"test name '{name}' is used twice")
                seen.add(name)


def _items(value: Any) -> list[tuple[int, Any]]:
    return list(enumerate(value)) if isinstance(value, list) else []


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside `X | None`, `list[X]`, `dict[str, X]` (container → element type)."""
    origin = get_origin(annotation)
    if origin is Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        return [t for a in get_args(annotation) for t in _unwrap(a)]
    if origin in (list, tuple, set):
        return [("item", a) for a in get_args(annotation)[:1]]
    if origin is dict:
        return [("value", get_args(annotation)[1])]
    return [annotation]


def _model_keys(loc: Sequence[str | int]) -> list[str]:
    """The keys the schema allows at a key path (for "did you mean" on unknown keys)."""
    current: list[Any] = [Rule]
    for part in loc:
        nxt: list[Any] = []
        for t in current:
            if isinstance(t, tuple):
                nxt.extend(_unwrap(t[1]))
            elif isinstance(t, type) and issubclass(t, BaseModel) and isinstance(part, str):
                for name, info in t.model_fields.items():
                    if part in (name, info.alias):
                        nxt.extend(_unwrap(info.annotation))
        current = nxt
    keys: set[str] = set()
    for t in current:
        if isinstance(t, tuple):
            t = t[1]
        for inner in _unwrap(t):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                keys.update(info.alias or name for name, info in inner.model_fields.items())
    return sorted(keys)


def _rule_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.suffix in _RULE_SUFFIXES and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


# Loaded files by (path, mtime, size, root, builtin, catalogue): `analyze` loads the same rules per job.
_CACHE: dict[tuple[Any, ...], tuple[Rule | None, _FileCheck]] = {}


def _check_file(path: Path, root: Path, builtin: bool, catalog: Mapping[str, Iterable[str]],
                facts: Mapping[str, Sequence[str]],
                limits: Limits = DEFAULT_LIMITS) -> tuple[Rule | None, _FileCheck]:
    try:
        st = path.stat()
        key: tuple[Any, ...] | None = (str(path.resolve()), st.st_mtime_ns, st.st_size, str(root), builtin,
                                       _catalog_key(catalog), _catalog_key(facts), str(Path.cwd()),
                                       limits.max_rule_bytes, limits.max_yaml_aliases)
    except OSError:
        key = None
    if key is not None and key in _CACHE:
        return _CACHE[key]
    result = _check_file_uncached(path, root, builtin, catalog, facts, limits)
    if key is not None:
        _CACHE[key] = result
    return result


def _catalog_key(catalog: Mapping[str, Iterable[str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(sorted((k, tuple(sorted(v))) for k, v in catalog.items()))


def _check_file_uncached(path: Path, root: Path, builtin: bool, catalog: Mapping[str, Iterable[str]],
                         facts: Mapping[str, Sequence[str]],
                         limits: Limits = DEFAULT_LIMITS) -> tuple[Rule | None, _FileCheck]:
    check = _FileCheck(path, root, builtin, catalog, facts, limits)
    if not check.read():
        return None, check
    rule = check.validate_schema()
    check.validate_meaning()
    if rule is not None:
        rule._path = path
        rule._root = root
        rule._builtin = builtin
    return rule, check


def collect_rules(dirs: Sequence[Path] = (), *, builtin: bool = True,
                  catalog: Mapping[str, Iterable[str]] | None = None,
                  facts: Mapping[str, Sequence[str]] | None = None,
                  limits: Limits = DEFAULT_LIMITS) -> tuple[list[Rule], list[Problem]]:
    """Every valid rule (user rules replacing built-ins by id) and every problem found, sorted.

    A user folder with more than `limits.max_rule_files` rule files is refused whole (one problem).
    """
    if catalog is None:
        from hanglens.parsers import event_catalog  # the catalogue grows as parsers register

        catalog = event_catalog()
    if facts is None:
        facts = {name: spec.columns for name, spec in FACT_SPECS.items()}
    sources: list[tuple[Path, bool]] = []
    if builtin:
        found = builtin_rules_dir()
        if found is not None:
            sources.append((found, True))
    sources.extend((Path(d), False) for d in dirs)
    problems: list[Problem] = []
    checks: list[_FileCheck] = []
    by_id: dict[str, Rule] = {}
    to_store: tuple[str, list[Path], list[_FileCheck]] | None = None
    for root, is_builtin in sources:
        if not root.exists():
            problems.append(Problem(_display(root), 1, 1, "", "no such rule folder or file"))
            continue
        seen_here: dict[str, Path] = {}
        files = _rule_files(root)
        if not is_builtin and len(files) > limits.max_rule_files:
            problems.append(Problem(_display(root), 1, 1, "",
                                    f"{len(files)} rule files, over {limits.max_rule_files}; none loaded",
                                    "split the folder, or raise --limit max_rule_files=N"))
            continue
        key = rulecache.cache_key(root, files, catalog, facts, limits) if is_builtin else None
        if key is not None and _from_cache(key, root, files, by_id):
            continue
        first_check = len(checks)
        for path in files:
            rule, check = _check_file(path, root, is_builtin, catalog, facts, limits)
            problems.extend(check.problems)
            checks.append(check)
            if rule is None:
                continue
            earlier = seen_here.get(rule.id) or (None if is_builtin or by_id.get(rule.id) is None
                                                 or by_id[rule.id].builtin else by_id[rule.id].path)
            if earlier is not None:
                problems.append(check.problem(("id",),
                                              f"rule id '{rule.id}' is also defined in {_display(earlier)}"))
                continue
            seen_here[rule.id] = path
            by_id[rule.id] = rule
        if key is not None:
            to_store = (key, files, checks[first_check:])
    # Ids of files that failed validation still count, so one broken rule does not cascade.
    known = set(by_id) | {c.data["id"] for c in checks
                          if isinstance(c.data, dict) and isinstance(c.data.get("id"), str)}
    for check in checks:
        data = check.data if isinstance(check.data, dict) else {}
        for i, other in _items(data.get("supersedes")):
            if not isinstance(other, str):
                continue
            if other == data.get("id"):
                problems.append(check.problem(("supersedes", i), "a rule cannot supersede itself"))
            elif other not in known:
                problems.append(check.problem(("supersedes", i), f"unknown rule id '{other}'",
                                              _suggest(other, known)))
    if to_store is not None and not problems:
        key, files, done = to_store
        rulecache.store(key, files, [c.data for c in done])
    return [by_id[k] for k in sorted(by_id)], sorted(set(problems))


def _from_cache(key: str, root: Path, files: list[Path], by_id: dict[str, Rule]) -> bool:
    """Built-in rules from the disk cache (they validated clean with the same inputs); False on a miss."""
    datas = rulecache.load(key, files)
    if datas is None:
        return False
    rules: list[Rule] = []
    try:
        for path, data in zip(files, datas, strict=True):
            rule = Rule.model_validate(data)
            rule._path, rule._root, rule._builtin = path, root, True
            rules.append(rule)
    except pydantic.ValidationError:
        return False
    by_id.update((r.id, r) for r in rules)
    return True


def load_rules(dirs: Sequence[Path] = (), *, builtin: bool = True,
               catalog: Mapping[str, Iterable[str]] | None = None,
               facts: Mapping[str, Sequence[str]] | None = None,
               limits: Limits = DEFAULT_LIMITS) -> list[Rule]:
    """Built-in rules plus the rules under `dirs`, sorted by id; raises RuleError listing every problem."""
    rules, problems = collect_rules(dirs, builtin=builtin, catalog=catalog, facts=facts, limits=limits)
    if problems:
        raise RuleError([str(p) for p in problems])
    return rules
