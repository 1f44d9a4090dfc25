"""Helpers every renderer shares: category words, rank ranges, folding ranks into runs, time text."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CATEGORY_TITLES: dict[str, str] = {
    "control_flow_divergence": "Control-flow divergence",
    "collective_mismatch": "Collective mismatch",
    "illegal_memory_access": "Illegal memory access",
    "cuda_error": "CUDA error",
    "oom": "Out of memory",
    "rank_crash": "Rank crashed",
    "dataloader_stall": "DataLoader stall",
    "dataloader_crash": "DataLoader worker crash",
    "network_transport": "Network / transport failure",
    "nccl_init_failure": "NCCL initialisation failure",
    "version_mismatch": "Version mismatch",
    "rendezvous_failure": "Rendezvous / store failure",
    "ddp_unused_parameters": "DDP unused parameters",
    "watchdog_stuck": "Watchdog stuck",
    "straggler": "Straggler",
    "none": "No failure found",
    "unknown": "Failure not explained",
}

STATUSES: tuple[str, ...] = ("culprit", "failed", "victim", "ok", "silent")
STATUS_WORDS: dict[str, str] = {
    "culprit": "culprit",
    "failed": "failed",
    "victim": "victim",
    "ok": "ok",
    "silent": "silent (no log)",
}

_BACKTICK = re.compile(r"`([^`]+)`")
_CALL = re.compile(r"[A-Za-z_][\w.]*\(.*\)")
_ENV_ASSIGN = re.compile(r"(?<![\w.-])([A-Z][A-Z0-9_]{2,}=[^\s`,;)]+)")


def category_title(verdict: Mapping[str, Any]) -> str:
    """The category in words, from the document or from the built-in table."""
    title = verdict.get("category_title")
    if isinstance(title, str) and title:
        return title
    cat = str(verdict.get("category") or "unknown")
    return CATEGORY_TITLES.get(cat, cat.replace("_", " ").capitalize())


def rank_list(ranks: Iterable[int | None], *, limit: int = 12) -> str:
    """`[0, 1, 2, 5, 7, 8]` -> `0-2, 5, 7-8`; long lists are cut with a count of what was left out."""
    clean = sorted({x for x in (as_rank(r) for r in ranks) if x is not None})
    if not clean:
        return "none"
    parts: list[str] = []
    start = prev = clean[0]
    for r in clean[1:]:
        if r == prev + 1:
            prev = r
            continue
        parts.append(_span(start, prev))
        start = prev = r
    parts.append(_span(start, prev))
    if len(parts) > limit:
        shown = ", ".join(parts[:limit])
        return f"{shown}, … ({len(clean)} ranks in {len(parts)} runs)"
    return ", ".join(parts)


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}-{b}"


def host_list(hosts: Iterable[str | None], *, limit: int = 6) -> str:
    clean = sorted({h for h in hosts if h})
    if not clean:
        return "unknown host"
    if len(clean) > limit:
        return ", ".join(clean[:limit]) + f", … ({len(clean)} hosts)"
    return ", ".join(clean)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def human_bytes(n: int | None) -> str:
    if not isinstance(n, int):
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def where(item: Mapping[str, Any]) -> str:
    """`path:line` of a cited line, or the path alone when the line is unknown."""
    path = str(item.get("path") or "?")
    line = item.get("line")
    return f"{path}:{line}" if isinstance(line, int) else path


def rel_time(t: Any, t0: float | None) -> str:
    """Seconds after the first failure on the normalised clock, e.g. `+12.345 s`."""
    if not isinstance(t, (int, float)) or t0 is None:
        return ""
    return f"+{t - t0:.3f} s"


def last_seq_text(last_seq: Mapping[str, Any] | None) -> str:
    if not last_seq:
        return ""
    return ", ".join(f"pg {pg}: #{seq}" for pg, seq in sorted(last_seq.items(), key=lambda kv: str(kv[0])))


def code_snippets(text: str) -> list[str]:
    """Copyable snippets inside a remediation step: backtick spans and `ENV_VAR=value` assignments."""
    found: list[str] = []
    for m in _BACKTICK.finditer(text):
        found.append(m.group(1).strip())
    outside = _BACKTICK.sub(" ", text)
    for m in _ENV_ASSIGN.finditer(outside):
        found.append(m.group(1))
    unique: list[str] = []
    for s in found:
        if s and s not in unique:
            unique.append(s)
    return unique


def is_command(snippet: str) -> bool:
    """A snippet worth a copy button: an env assignment, a call or a shell command, not a bare expression."""
    return bool(
        _ENV_ASSIGN.fullmatch(snippet) or _CALL.search(snippet) or snippet.startswith(("export ", "$ "))
    )


def split_code(text: str) -> list[tuple[bool, str]]:
    """Split prose into (is_code, piece) at backtick spans, so renderers can mark code up safely."""
    pieces: list[tuple[bool, str]] = []
    pos = 0
    for m in _BACKTICK.finditer(text):
        if m.start() > pos:
            pieces.append((False, text[pos : m.start()]))
        pieces.append((True, m.group(1)))
        pos = m.end()
    if pos < len(text):
        pieces.append((False, text[pos:]))
    return pieces


@dataclass(slots=True)
class Run:
    """Consecutive ranks (by rank number) that share one state; `items` are the source rows."""

    first: int
    last: int
    key: Hashable
    items: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return _span(self.first, self.last)

    @property
    def count(self) -> int:
        return len(self.items)


def as_rank(value: Any) -> int | None:
    """A rank as int; integral floats (a pandas column with nulls) count, anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def fold_runs(rows: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Hashable]) -> list[Run]:
    """Fold rows sorted by `rank` into runs of consecutive ranks whose `key` is equal.

    A gap in rank numbers ends a run, so a range label never claims a rank that is not in the data.
    """
    runs: list[Run] = []
    ordered = sorted(
        (r for r in rows if as_rank(r.get("rank")) is not None), key=lambda r: as_rank(r["rank"]) or 0
    )
    for row in ordered:
        rank = as_rank(row["rank"]) or 0
        k = key(row)
        if runs and runs[-1].key == k and runs[-1].last == rank - 1:
            runs[-1].last = rank
            runs[-1].items.append(row)
        else:
            runs.append(Run(rank, rank, k, [row]))
    return runs


def primary_finding(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The finding the verdict came from: same rule id, else the first one not superseded."""
    findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    rule_id = (doc.get("verdict") or {}).get("rule_id")
    for f in findings:
        if rule_id and f.get("rule_id") == rule_id:
            return f
    for f in findings:
        if not f.get("superseded_by"):
            return f
    return findings[0] if findings else None


def first_steps(doc: Mapping[str, Any], n: int) -> list[str]:
    """The first `n` remediation steps, starting with the verdict's first step."""
    verdict = doc.get("verdict") or {}
    steps: list[str] = []
    first = verdict.get("first_step")
    if isinstance(first, str) and first:
        steps.append(first)
    finding = primary_finding(doc)
    for s in (finding or {}).get("remediation") or []:
        if isinstance(s, str) and s not in steps:
            steps.append(s)
    return steps[:n]


def collect_items(doc: Mapping[str, Any]) -> list[str]:
    """What to collect on the rerun: the job-level list first, then the primary finding's."""
    items: list[str] = []
    finding = primary_finding(doc)
    for s in [*(doc.get("collect_next") or []), *((finding or {}).get("collect") or [])]:
        if isinstance(s, str) and s not in items:
            items.append(s)
    return items


def top_evidence(doc: Mapping[str, Any], n: int) -> list[Mapping[str, Any]]:
    """The first `n` cited lines of the primary finding (then of the other findings)."""
    out: list[Mapping[str, Any]] = []
    seen: set[tuple[str, Any]] = set()
    finding = primary_finding(doc)
    findings = [finding] if finding else []
    findings += [f for f in doc.get("findings") or [] if f is not finding]
    for f in findings:
        for ev in f.get("evidence") or []:
            key = (str(ev.get("path")), ev.get("line")) if isinstance(ev, Mapping) else ("", None)
            if isinstance(ev, Mapping) and len(out) < n and key not in seen:
                seen.add(key)
                out.append(ev)
    return out


def lines_to_cite(doc: Mapping[str, Any], n: int) -> tuple[str, list[Mapping[str, Any]]]:
    """The lines a reader should look at first: cited evidence, or else the earliest failures."""
    evidence = top_evidence(doc, n)
    if evidence:
        return "Evidence", evidence
    rows = [t for t in doc.get("timeline") or [] if isinstance(t, Mapping) and t.get("path")]
    timed = sorted(
        (t for t in rows if isinstance(t.get("time"), (int, float))), key=lambda t: float(t["time"])
    )
    untimed = [t for t in rows if not isinstance(t.get("time"), (int, float))]
    return "First failures (no rule cited a line)", [*timed, *untimed][:n]


def one_line(text: Any, width: int = 200) -> str:
    """A log text on one line (control characters shown as spaces), cut at `width` characters."""
    s = "".join(ch if ch.isprintable() else " " for ch in str(text if text is not None else ""))
    s = s.strip()
    return s if len(s) <= width else s[: width - 1] + "…"
