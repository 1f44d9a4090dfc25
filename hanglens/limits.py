"""Named bounds on the work one analysis may do: every limit on hostile input is declared here, once.

Reaching a limit is never a crash or a hang: the input (or the rest of it) becomes a skip whose reason
names the input and the limit. The README's "Limits" section lists each one with its default and flag.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True, slots=True)
class Limits:
    """Every bound, with its default. Field names are the CLI flags' names with `-` for `_`."""

    # Reading
    max_line_bytes: int = 1 * MiB  # one line; the rest of a longer line is dropped (counted)
    max_files: int = 200_000  # files read for one job; the rest are skipped with this reason
    # Compressed files and archives (read in place, never extracted)
    max_member_bytes: int = 4 * GiB  # decompressed bytes of one compressed file or archive member
    max_job_bytes: int = 64 * GiB  # decompressed bytes of one job, all inputs together
    max_ratio: int = 250  # decompressed / compressed bytes of one member (logs: 5-50:1; bombs: 1000:1 and up)
    max_members: int = 100_000  # members of one archive
    # Flight Recorder pickles (restricted unpickler: no globals at all)
    max_pickle_bytes: int = 256 * MiB
    max_pickle_objects: int = 10_000_000  # containers and scalars built while unpickling
    # User rules
    max_rule_files: int = 2_000  # rule files in one user rule folder (more: the folder is refused)
    max_rule_bytes: int = 1 * MiB  # size of one rule file
    max_yaml_aliases: int = 0  # anchors/aliases in rule files are refused outright
    max_template_output: int = 64 * KiB  # characters one rendered explanation may have
    rule_regex_budget_s: float = 2.0  # total regex time of one rule over one job
    # Scanning
    job_deadline_s: float = 600.0  # wall clock of one job in `hanglens scan` (then status `timeout`)
    job_memory_bytes: int = 8 * GiB  # address space of one scan worker (RLIMIT_AS; then status `oom`)

    def with_overrides(self, **values: Any) -> Limits:
        """A copy with the given fields replaced (None values are ignored)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown limit(s): {', '.join(unknown)}")
        return replace(self, **{k: v for k, v in values.items() if v is not None})


DEFAULT_LIMITS = Limits()

_SUFFIXES = {"": 1, "k": KiB, "kib": KiB, "kb": KiB, "m": MiB, "mib": MiB, "mb": MiB, "g": GiB, "gib": GiB,
             "gb": GiB, "t": GiB << 10, "tib": GiB << 10, "tb": GiB << 10}


# Below these a limit would stop ordinary input, not hostile input (a line shorter than its log prefix).
MINIMUMS = {"max_line_bytes": 256}


def parse_value(name: str, text: str) -> int | float:
    """The value of limit `name` from `text`: `4GiB`, `512M`, `10_000`, `2.5` (seconds)."""
    kind = {f.name: f.type for f in fields(Limits)}.get(name)
    if kind is None:
        known = ", ".join(f.name for f in fields(Limits))
        raise ValueError(f"unknown limit '{name}' (known: {known})")
    raw = text.strip().replace("_", "").lower()
    if kind in (float, "float"):
        try:
            value: int | float = float(raw.removesuffix("s"))
        except ValueError:
            raise ValueError(f"limit {name}: '{text}' is not a number of seconds") from None
    else:
        digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = raw[len(digits):]
        if unit not in _SUFFIXES or not digits.isdigit():
            raise ValueError(f"limit {name}: '{text}' is not a whole number (suffixes K, M, G, T allowed)")
        value = int(digits) * _SUFFIXES[unit]
    if value < 0 or value != value or value == float("inf"):
        raise ValueError(f"limit {name}: '{text}' must be a finite number, 0 or more")
    if value < MINIMUMS.get(name, 0):
        raise ValueError(f"limit {name}: '{text}' is below the smallest allowed value, {MINIMUMS[name]}")
    return value


def parse_limits(items: list[str] | tuple[str, ...], base: Limits = DEFAULT_LIMITS) -> Limits:
    """`base` with `NAME=VALUE` overrides (the CLI's repeatable `--limit`); ValueError names a bad item."""
    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--limit '{item}': use NAME=VALUE, e.g. max_member_bytes=8GiB")
        key = name.strip().replace("-", "_")
        values[key] = parse_value(key, text)
    return base.with_overrides(**values)


def human_bytes(n: int) -> str:
    """`n` bytes for a message: 4 GiB, 64 MiB, 1.5 KiB, 12 B."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value.is_integer() or value >= 100 else f"{value:.1f} {unit}"
    return f"{n} B"
