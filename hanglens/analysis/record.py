"""A fact table's row as a slotted object: a big job's per-rank tables hold one row per rank while they are
built, and a dict of 25 keys takes 832 bytes (its key table alone is 768, served by the C allocator, not
Python's), a row of 25 slots 232 (16,384 ranks: `silent_hang_rows` held 13.6 MiB after it returned, now
4.0, by tracemalloc).

A row reads and writes like the dict it replaces (`r["x"]`, `r.get("x")`, `r["x"] = 1`, `r.update(x=1)`,
`del r["x"]`, `{**r}`); only the columns its type declares can be set (a misspelt column raises), and a
column never set is missing (`r.get` gives the default, `r[...]` raises KeyError), as in a dict.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, ClassVar

from hanglens.analysis.facts_spec import FACT_SPECS


class Record(MutableMapping[str, Any]):
    """Base of the row types `record_type` makes; not used alone."""

    __slots__ = ()
    _columns: ClassVar[frozenset[str]] = frozenset()
    _order: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **values: Any) -> None:
        for key, value in values.items():
            setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default) if key in self._columns else default

    def __getitem__(self, key: str) -> Any:
        if key in self._columns:
            try:
                return getattr(self, key)
            except AttributeError:
                pass
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self._columns:
            raise KeyError(f"{type(self).__name__} has no column {key!r}")
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self._columns:
            raise KeyError(key)
        try:
            delattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._columns and hasattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._order if hasattr(self, k))

    def __len__(self) -> int:
        return sum(1 for k in self._order if hasattr(self, k))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self)!r})"


_TYPES: dict[tuple[str, tuple[str, ...]], type[Record]] = {}


def record_type(table: str, extra: Iterable[str] = ()) -> type[Record]:
    """The row type of fact table `table`: a slot per column of its spec, and one per name in `extra` (working
    values the builder reads before the table is made; `frame` takes only the spec's columns)."""
    more = tuple(extra)
    key = (table, more)
    made = _TYPES.get(key)
    if made is None:
        order = tuple(dict.fromkeys((*FACT_SPECS[table].columns, *more)))
        name = "".join(p.title() for p in table.split("_")) + "Row"
        made = type(name, (Record,), {"__slots__": order, "_columns": frozenset(order), "_order": order})
        _TYPES[key] = made
    return made
