"""Each rank's last lines of any kind (`last_line` events, hanglens/ingest/tail.py) compared across ranks:
which rank stopped on a line its peers printed and went past, or on a line none of them printed
(failure-signatures.md section 16 items 1 and 3).

Every rank runs the same script and prints the same lines in the same order, so the lines are a clock each
rank keeps for itself. When the ranks' last lines are read side by side, a rank whose last line its peers also
printed, and after which they printed more, stopped before the point they reached; a rank whose last line no
peer printed went where they did not. Nothing here decides whether the job hung: the rules do (a stop from
outside, no failure line), and they name a rank only where the lines show one worker apart from the others.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from hanglens import lazyre as re
from hanglens.analysis.kinds import host_of
from hanglens.model import Event

Row = dict[str, Any]
KIND = "last_line"

# A tag at a line's start naming its writer, as scripts write them (`[GPU1] `, `worker 3: `, `w1/4 | `, `(rank
# 2) `): the rank's own number there is not part of what it says. Only with a word that names a process.
_OWN_TAG_RE = re.compile(
    r"^[\[(<]?(?:rank|gpu|worker|proc|process|device|cuda|dev|node|w|r)[ _:#-]?(?P<n>\d{1,6})(?:/\d{1,6})?"
    r"[\])>:|]?\s+", re.IGNORECASE)
# accelerate's logger (`accelerate.logging.get_logger`, MultiProcessAdapter.log in accelerate/logging.py) puts
# `[RANK <process_index>] ` before every message, after the logging format's own header (time, level, name).
_ACCELERATE_TAG_RE = re.compile(r"\[RANK (?P<n>\d{1,6})\] ")
# Values that differ from rank to rank or run to run at the same point of the script: times of day, floats (a
# loss, a rate), hex addresses, process ids and long counts.
_TIME_RE = re.compile(r"\d{1,2}:\d\d(?::\d\d)?(?:[.,]\d+)?")
# A time of day opening a line (rich's `Console.log` column, which it leaves blank when the second has not
# changed): whether it is there says nothing about where the rank is.
_LEAD_TIME_RE = re.compile(r"^\[?\d{1,2}:\d\d(?::\d\d)?(?:[.,]\d+)?\]?\s+")
_FLOAT_RE = re.compile(r"\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+")
_PID_RE = re.compile(r"\b(?P<w>pid|PID|tid|TID)[ =:]?\d+")
_LONG_RE = re.compile(r"\d{5,}")
_BLANK_RE = re.compile(r"\s+")
_DIGITS_RE = re.compile(r"\d+")
_NAME_DIGITS_RE = re.compile(r"\d+")


def line_key(text: str, rank: int | None) -> str:
    """What a line says, apart from what differs between ranks at the same point (its writer's own tag, times,
    floats, addresses, pids): equal keys on two ranks are the same line of the script at the same iteration
    (small integers, such as a shard or step number, are kept)."""
    m = _OWN_TAG_RE.match(text)
    if m is not None and rank is not None and int(m["n"]) == rank:
        text = text[m.end():]
    a = _ACCELERATE_TAG_RE.search(text) if "[RANK " in text else None
    if a is not None and rank is not None and int(a["n"]) == rank:
        text = text[:a.start()] + text[a.end():]
    text = _TIME_RE.sub("t", _LEAD_TIME_RE.sub("", text.strip()))
    text = _HEX_RE.sub("0x#", text)
    text = _FLOAT_RE.sub("#.#", text)
    text = _PID_RE.sub(lambda p: f"{p['w']} #", text)
    text = _LONG_RE.sub("#", text)
    return _BLANK_RE.sub(" ", text).strip().lower()


def _shape(key: str) -> str:
    """A key with every number masked: the same line of the script at any iteration."""
    return _DIGITS_RE.sub("#", key)


def _channel(path: str) -> str:
    """Files that are each rank's copy of one stream (`attempt_0/3/stdout.log`, `rank3.log`) are one channel;
    a console is its own."""
    return _NAME_DIGITS_RE.sub("#", PurePosixPath(path.replace("!", "/")).name)


def _passed(mine: str, theirs: list[str]) -> int | None:
    """Where in `theirs` (a peer's last lines, oldest first) the peer printed `mine` and then printed more:
    the index of its newest such line, else None."""
    for i in range(len(theirs) - 2, -1, -1):
        if theirs[i] == mine:
            return i
    return None


def _positions(tails: dict[int, list[str]]) -> dict[int, tuple[str, int]]:
    """Per rank of one channel: (position, peers that went past its last line).

    `behind`: its last line is one its peers printed and then printed more after, and it went past none of
    theirs: against a strict majority (two at least) that stopped on one line, or, with no majority (two
    ranks), against a peer whose lines after that point are lines this rank printed earlier too (the common
    path it had run before: the peer is not in a section of its own); or, of three ranks or more and with no
    majority, every peer printed its last line and went on (they then stopped at different points: some
    collectives complete without it, gloo's broadcast tree). `elsewhere`: a strict majority stopped
    on one line, and this rank's last line, at any iteration, is one neither it nor any peer printed among
    the lines read. `same`: the majority's line. `differs`: anything else.
    """
    # Linear in the ranks (a job of thousands): who holds which line is indexed once, and each rank's
    # questions are answered from the index and its own few lines instead of by scanning every peer.
    last = {r: t[-1] for r, t in tails.items()}
    n = len(tails)
    top, count = Counter(last.values()).most_common(1)[0]
    majority = top if count * 2 > n and count >= 2 else None
    by_last: dict[str, set[int]] = defaultdict(set)     # a line -> the ranks that stopped on it
    holders: dict[str, set[int]] = defaultdict(set)     # a line -> the ranks that printed it and went on
    shape_holders: dict[str, set[int]] = defaultdict(set)   # a masked line -> the ranks that printed it
    for r, t in tails.items():
        by_last[t[-1]].add(r)
        for k in set(t[:-1]):
            holders[k].add(r)
        for k in {_shape(k) for k in t}:
            shape_holders[k].add(r)
    major_group = by_last[majority] if majority is not None else set()
    # per line stopped on: the peers that printed it and then more (none of them stopped on it), and
    # whether every rank of the majority did
    passed_of = {k: len(holders[k] - rs) if k in holders else 0 for k, rs in by_last.items()}
    major_passed = {k: bool(major_group)
                    and sum(1 for x in holders.get(k, ()) if last[x] == majority) == len(major_group)
                    for k in by_last}
    out: dict[int, tuple[str, int]] = {}
    for r, t in tails.items():
        mine = last[r]
        passed = passed_of[mine]
        # did this rank print a peer's last line and go on (a peer stopped on a line it had passed)?
        went_past = any(k != mine and by_last.get(k) for k in t[:-1])
        if majority is not None:
            if mine == majority:
                out[r] = ("same", passed)
                continue
            if major_passed[mine] and majority not in t[:-1]:
                out[r] = ("behind", passed)
                continue
            shape = _shape(mine)
            earlier = {_shape(k) for k in t[:-1]}
            if not passed and shape not in earlier and len(shape_holders[shape]) == 1:
                out[r] = ("elsewhere", 0)
                continue
            out[r] = ("differs", passed)
            continue
        if n >= 3 and passed == n - 1 and not went_past:
            out[r] = ("behind", passed)   # every peer printed its last line and went on
            continue
        if n == 2 and passed and not went_past:
            s = next(x for x in tails if x != r)
            at = _passed(mine, tails[s])
            after = tails[s][(at or 0) + 1:]
            mine_before = {_shape(k) for k in t[:-1]}
            if after and all(_shape(k) in mine_before for k in after):
                out[r] = ("behind", 1)
                continue
        out[r] = ("same" if len(by_last) == 1 else "differs", passed)
    return out


def last_line_rows(events: Sequence[Event], hosts: dict[int, str], no_error: bool = True) -> list[Row]:
    """One row per rank whose own last lines were read (`last_line` events of a known rank).

    Columns: `text` its last line, `before` the line before it; `channel` the stream compared (the one where
    most ranks left lines: a `--log-dir` tree's `stdout.log` files, a console); `ranks_compared` how many
    ranks left lines there; `position` behind / elsewhere / same / differs (`_positions`; null when fewer than
    two ranks left lines in a channel); `passed_by` how many peers printed its last line and then more;
    `peer_line` the line the most ranks stopped on; `all_same` when every compared rank stopped on one line;
    `no_error` when the job's logs hold no failure line but a stop from outside and its consequences.
    """
    by: dict[str, dict[int, list[Event]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e.kind == KIND and e.rank is not None:
            by[_channel(e.path)][e.rank].append(e)
    if not by:
        return []
    # the channel where most ranks left lines, then the most lines (a worker's stderr.log may hold only
    # warnings, its stdout.log the script's prints)
    channel = max(by, key=lambda c: (len(by[c]), sum(len(v) for v in by[c].values()), c))
    ranks = by[channel]
    tails: dict[int, list[str]] = {}
    evs: dict[int, list[Event]] = {}
    texts: dict[int, list[str]] = {}
    for r, lst in ranks.items():
        # (a rank with two writers in one channel, a `[rankN]:` envelope and its plain lines: the newest)
        e = max(lst, key=lambda x: (x.line, x.path))
        evs[r] = [e]
        before = e.get("before")
        texts[r] = [*(str(b) for b in before if isinstance(b, str))] if isinstance(before, list) else []
        texts[r].append(e.text)
        tails[r] = [line_key(t, r) for t in texts[r]]
    pos = _positions(tails) if len(tails) >= 2 else {}
    counts = Counter(t[-1] for t in tails.values())
    peer_key = counts.most_common(1)[0][0] if counts else None
    peer_text = next((evs[r][-1].text for r in sorted(tails) if tails[r][-1] == peer_key), None)
    all_same = len(counts) == 1 and len(tails) >= 2
    rows: list[Row] = []
    for r in sorted(evs):
        last = evs[r][-1]
        position, passed = pos.get(r, (None, 0))
        rows.append({
            "rank": r, "host": host_of(last, hosts, r), "text": last.text,
            "before": texts[r][-2] if len(texts[r]) >= 2 else None,
            "channel": channel, "ranks_compared": len(tails), "position": position, "passed_by": passed,
            "peer_line": peer_text, "all_same": all_same, "no_error": no_error, "time": last.time,
            "path": last.path, "line": last.line,
        })
    return rows
