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
    max_nesting: int = 2  # archives inside archives
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

    def with_overrides(self, **values: Any) -> Limits:
        """A copy with the given fields replaced (None values are ignored)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown limit(s): {', '.join(unknown)}")
        return replace(self, **{k: v for k, v in values.items() if v is not None})


DEFAULT_LIMITS = Limits()


def human_bytes(n: int) -> str:
    """`n` bytes for a message: 4 GiB, 64 MiB, 1.5 KiB, 12 B."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value.is_integer() or value >= 100 else f"{value:.1f} {unit}"
    return f"{n} B"
