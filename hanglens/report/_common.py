"""Helpers every renderer shares: category words, rank ranges, folding ranks into runs, time text."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hanglens import lazyre as re
from hanglens.model import utf8_text

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


# Programs a remediation step may tell the user to run; a backtick span starting with one of them (after
# optional `VAR=value` prefixes) is a whole shell command. Anything else in backticks is code or a name,
# shown inline as code, never as something to paste into a shell.
SHELL_PROGRAMS = frozenset(
    {
        "compute-sanitizer",
        "dmesg",
        "docker",
        "env",
        "export",
        "gdb",
        "hanglens",
        "ibstat",
        "ibv_devinfo",
        "journalctl",
        "lsof",
        "nc",
        "nvidia-smi",
        "pip",
        "py-spy",
        "python",
        "python3",
        "srun",
        "ss",
        "torchrun",
        "ulimit",
    }
)
_ENV_ONLY = re.compile(r"[A-Z][A-Z0-9_]{2,}=\S+(?: +[A-Z][A-Z0-9_]{2,}=\S+)*")


def shell_commands(text: str) -> list[str]:
    """The whole, runnable shell commands a step names: `export VAR=value ...` lines and program calls.

    Environment assignments (in backticks or not) become one `export` line, because `NCCL_DEBUG=INFO`
    on a line of its own sets a shell variable torchrun never sees. Fragments (`if rank == 0:`, `barrier`),
    Python calls and options without their program are not commands.
    """
    exports: list[str] = []
    commands: list[str] = []
    for span in (m.group(1).strip() for m in _BACKTICK.finditer(text)):
        words = span.split()
        if not words:
            continue
        if _ENV_ONLY.fullmatch(span):
            exports += [w for w in words if w not in exports]
            continue
        program = next((w for w in words if not _ENV_ASSIGN.fullmatch(w)), "")
        if program not in SHELL_PROGRAMS or (program == "py-spy" and "--pid" not in words):
            continue
        if span not in commands:
            commands.append(span)
    for m in _ENV_ASSIGN.finditer(_BACKTICK.sub(" ", text)):
        assign = m.group(1).rstrip(".:")  # the end of a sentence is not part of the value
        if assign not in exports:
            exports.append(assign)
    return ([f"export {' '.join(exports)}"] if exports else []) + commands


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


def observed(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What the document says was seen when no rule explained a failure (`observed`: headline, first step),
    for an `unknown` verdict only; None otherwise."""
    verdict = doc.get("verdict") or {}
    seen = doc.get("observed") if verdict.get("category") == "unknown" else None
    return seen if isinstance(seen, Mapping) and seen.get("headline") else None


def first_steps(doc: Mapping[str, Any], n: int | None = None) -> list[str]:
    """The first `n` remediation steps: what was seen calls for first (an unexplained failure's `observed`
    step, which takes the place of the rule-less verdict's generic one), else the verdict's first step; then
    the primary finding's remediation."""
    verdict = doc.get("verdict") or {}
    steps: list[str] = []
    seen_step = (observed(doc) or {}).get("first_step")
    if isinstance(seen_step, str) and seen_step:
        steps.append(seen_step)
    first = verdict.get("first_step")
    if isinstance(first, str) and first and not (steps and not verdict.get("rule_id")):
        steps.append(first)
    finding = primary_finding(doc)
    for s in (finding or {}).get("remediation") or []:
        if isinstance(s, str) and s not in steps:
            steps.append(s)
    return steps[:n]


def collect_items(doc: Mapping[str, Any]) -> list[str]:
    """What to collect on the rerun: the document's `collect_next`, which holds the primary finding's advice
    less what does not apply to this job (a knob the logs show was on, torchrun's `@record` under
    torch.multiprocessing.spawn); the primary finding's own list only for a document without it."""
    items: list[str] = []
    listed = doc["collect_next"] if "collect_next" in doc else (primary_finding(doc) or {}).get("collect")
    for s in listed or []:
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
    texts: set[tuple[Any, str]] = set()
    for f in findings:
        for ev in f.get("evidence") or []:
            if not isinstance(ev, Mapping) or len(out) >= n:
                continue
            key = (str(ev.get("path")), ev.get("line"))
            # the same rank's same words on another line (a traceback printed twice) say nothing new
            said = (as_rank(ev.get("rank")), one_line(ev.get("text"), 400))
            if key not in seen and said not in texts:
                seen.add(key)
                texts.add(said)
                out.append(ev)
    return out


def lines_to_cite(doc: Mapping[str, Any], n: int) -> tuple[str, list[Mapping[str, Any]]]:
    """The lines a reader should look at first: cited evidence, or else the earliest failures."""
    evidence = top_evidence(doc, n)
    if evidence:
        return "Evidence", evidence
    facts = fold_timeline([t for t in doc.get("timeline") or [] if isinstance(t, Mapping)])
    rows: list[Mapping[str, Any]] = [{**f.row, "text": f.text} for f in facts]
    rows = [t for t in rows if t.get("path")]
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


def safe_text(value: Any) -> str:
    """Text that encodes as UTF-8: bytes of a file name that were not UTF-8 are shown as `\\xNN`."""
    return utf8_text(str(value if value is not None else ""))


_CTRL_NAMES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def term_text(value: Any) -> str:
    """Text from a log, a file name or a rule, safe for a terminal: every control character escaped.

    An escape sequence in a log (title change, cursor movement, clipboard write) is shown as `\\x1b...`,
    never sent to the terminal.
    """
    s = safe_text(value)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else _escape_char(ch) for ch in s)


def _escape_char(ch: str) -> str:
    named = _CTRL_NAMES.get(ch)
    if named:
        return named
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else (f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")


# -- the timeline of first failures, one row per distinct fact --------------------------------------------

LAUNCHER_KINDS = frozenset({"worker_failed", "child_failed"})
_RANK_TAG = re.compile(r"^\s*\[\d{1,9}\]:\s*")
_LAUNCHER_TEXT = ("ChildFailedError", "elastic.multiprocessing.errors")


@dataclass(slots=True)
class Fact:
    """One row of the timeline: the first line that showed a fact, and the rows that only repeated it."""

    row: Mapping[str, Any]
    also: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return fact_text(self.row)


def fact_text(row: Mapping[str, Any]) -> str:
    """A timeline row's text without the launcher's `[N]:` tag; the launcher's words when nothing is left."""
    text = _RANK_TAG.sub("", one_line(row.get("text"), 400))
    if text:
        return text
    if row.get("kind") in LAUNCHER_KINDS:
        return "the launcher reported this rank as failed"
    return str(row.get("kind") or "")


def _is_launcher(row: Mapping[str, Any]) -> bool:
    text = str(row.get("text") or "")
    return row.get("kind") in LAUNCHER_KINDS or any(t in text for t in _LAUNCHER_TEXT)


def _same(a: str, b: str) -> bool:
    a, b = a.strip().lower(), b.strip().lower()
    return bool(a and b) and (a == b or (len(a) > 20 and a in b) or (len(b) > 20 and b in a))


def fold_timeline(rows: Sequence[Mapping[str, Any]]) -> list[Fact]:
    """Fold the first-failure rows into facts: a rank's repeat of a line (an exception and the mismatch or
    timeout event it also is), the launcher's copy of a rank's traceback and the launcher's failure entries
    go under the rank's first row. A rank known only from the launcher keeps the launcher's row."""
    facts: list[Fact] = []
    by_rank: dict[int, Fact] = {}
    launcher: list[Mapping[str, Any]] = []
    for row in rows:
        if _is_launcher(row):
            launcher.append(row)
            continue
        rank = as_rank(row.get("rank"))
        text = fact_text(row)
        home = next(
            (
                f
                for f in facts
                if (rank is None or as_rank(f.row.get("rank")) in (rank, None)) and _same(f.text, text)
            ),
            None,
        )
        if home is not None:
            home.also.append(row)
            continue
        fact = Fact(row)
        facts.append(fact)
        if rank is not None:
            by_rank.setdefault(rank, fact)
    orphans: list[Fact] = []
    for row in launcher:
        rank = as_rank(row.get("rank"))
        home = by_rank.get(rank) if rank is not None else None
        if home is None and rank is not None:
            home = Fact(row)
            by_rank[rank] = home
            orphans.append(home)
            continue
        if home is None:
            home = orphans[0] if orphans else (facts[0] if facts else None)
        if home is None:
            home = Fact(row)
            orphans.append(home)
        else:
            home.also.append(row)
    return facts + orphans


# -- hypotheses ruled out, in words -------------------------------------------------------------------

_REASON = re.compile(r"^match\.(all|any|none)\[\d+\]: (.*)$", re.S)
_REF = re.compile(r"\(([^()\s]+:\d+)\)\s*$")


def why_not(reason: str, winner: Any) -> str:
    """A ruled-out rule's reason in words: `superseded by X` when the rule stepped aside for a more
    specific finding; otherwise what the logs lacked, with the condition shown as code."""
    m = _REASON.match(reason)
    if not m:
        return reason
    group, rest = m.groups()
    if group == "none" and rest.startswith("found "):
        ref = _REF.search(rest)
        at = f" (see {ref.group(1)})" if ref else ""
        if winner:
            return f"Superseded by `{winner}`, which explains the same lines more specifically{at}."
        return f"Stepped aside: the logs show what a more specific rule looks for{at}."
    rest = rest.replace("`", "'")
    if rest.startswith("no "):
        return f"Not in these logs: `{rest[3:]}`."
    return f"Did not hold: `{rest}`."


def how_it_ended(rank: Mapping[str, Any]) -> str:
    """How the launcher saw a rank end: `killed by SIGABRT`, `exit code 1`, or "" when it did not say."""
    if rank.get("signal"):
        return f"killed by {rank['signal']}"
    code = rank.get("exitcode")
    return f"exit code {code}" if isinstance(code, int) and not isinstance(code, bool) and code != 0 else ""


SILENT_COLUMNS = ("ranks", "last step", "epoch", "phase", "what differs")


def silent_table(doc: Mapping[str, Any]) -> tuple[str, list[tuple[str, ...]], str]:
    """The silent-hang section as (heading, rows of SILENT_COLUMNS, footer); empty rows when absent.

    Consecutive ranks that stopped at the same point are folded into one row (`1-3`).
    """
    sh = doc.get("silent_hang")
    if not isinstance(sh, Mapping):
        return "", [], ""
    ranks = [r for r in sh.get("ranks") or [] if isinstance(r, Mapping)]

    def cells(r: Mapping[str, Any]) -> tuple[str, ...]:
        step = r.get("last_step")
        total = r.get("total")
        shown = "" if step is None else (f"{step}/{total}" if total is not None else str(step))
        epoch = "" if r.get("last_epoch") is None else str(r.get("last_epoch"))
        # where it stopped: a phase line with later steps after it is history (`last_phase`), not the place
        phase = str(r.get("boundary") or "").replace("_", " ")
        if r.get("stalled_start"):
            phase = "new epoch, never advanced" + (f" (after {phase})" if phase != "epoch start" else "")
        return (shown, epoch, phase, one_line(r.get("note") or "", 200))

    rows: list[tuple[str, ...]] = []
    unranked = [r for r in ranks if as_rank(r.get("rank")) is None]
    rows += [("(all output)", *cells(r)) for r in unranked]
    for run in fold_runs(ranks, cells):
        rows.append((run.label, *cells(run.items[0])))
    stops = [one_line(s.get("text"), 120) for s in sh.get("stopped") or [] if isinstance(s, Mapping)]
    heading = "Where each rank stopped (no error line" + (
        f"; stopped from outside: {'; '.join(stops)})" if stops else ")"
    )
    footer = []
    if sh.get("common_step") is not None and len(ranks) > 1:
        epoch = f"epoch {sh['common_epoch']:g}, " if isinstance(sh.get("common_epoch"), (int, float)) else ""
        footer.append(f"Last step every rank reached: {epoch}{'step ' if epoch else ''}{sh['common_step']}.")
    if sh.get("more_ranks"):
        footer.append(f"{sh['more_ranks']} more ranks not shown.")
    return heading, rows, " ".join(footer)
