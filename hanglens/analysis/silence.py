"""A hang with no error line (failure-signatures.md section 16): how the job was stopped from outside, where
each rank stopped (last progress, phase and distributed line), the last common point and who differs."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from hanglens import lazyre as re
from hanglens.analysis.kinds import FAILURE_KINDS, host_of
from hanglens.analysis.progress import bar_name
from hanglens.analysis.record import Record, record_type
from hanglens.ingest.streams import outer_stream
from hanglens.model import AGENT_EVENT_KINDS, Event

Row = dict[str, Any]

# Parsers whose lines are about the distributed runtime (section 16 item 1: "last distributed line").
DIST_PARSERS = frozenset({"c10d", "wrapper", "nccl", "gloo", "store", "elastic", "ddp"})
# Signals a stop from outside sends; a worker that died of one of these was stopped, it did not fail.
STOP_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP"})
_GOT_SIGNAL = re.compile(r"got signal: (?P<num>\d{1,3})")
_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 15: "SIGTERM", 9: "SIGKILL"}
# How each kind of stop reads in a report.
STOP_WORDS = {
    "agent_signal": "torchrun's agent was signalled",
    "agent_closing": "torchrun's agent closed its workers while none had failed",
    "keyboard_interrupt": "Ctrl-C (KeyboardInterrupt)",
    "scheduler_cancel": "the scheduler cancelled the job",
}
# A rank whose silence outlasts this many of its own step intervals while others still printed stopped
# first (section 16 item 3).
CADENCE_FACTOR = 3.0


def _exc_type(e: Event) -> str:
    return str(e.get("exc_type") or "")


def stop_kind(e: Event) -> tuple[str, str | None] | None:
    """(how, signal) when `e` says the job was stopped from outside, else None.

    torchrun's agent receiving a signal (`Received 15 death signal`, `SignalException ... got signal: 15`),
    a Ctrl-C (`KeyboardInterrupt`), a scheduler cancelling the job (failure-signatures.md sections 16 item 6
    and 17.4). The agent's `Sending process N closing signal` alone is judged in `stop_rows`.
    """
    if e.kind == "job_stopped":
        return str(e.get("how") or "agent_signal"), e.get("signal")
    if e.kind == "exception":
        t = _exc_type(e)
        if t.endswith("SignalException"):
            m = _GOT_SIGNAL.search(f"{e.get('message') or ''} {e.text}")
            num = int(m["num"]) if m else None
            return "agent_signal", _SIGNALS.get(num or -1, f"SIG{num}" if num is not None else None)
        if t.endswith("KeyboardInterrupt"):
            return "keyboard_interrupt", "SIGINT"
    return None


def _stopped_worker(e: Event) -> bool:
    """A launcher line about a worker that ended by a stop signal (a consequence of the stop)."""
    return e.kind in ("worker_failed", "child_failed", "launcher_exit") and e.get("signal") in STOP_SIGNALS


def stop_rows(events: Sequence[Event], hosts: dict[int, str]) -> list[Row]:
    """One row per line that says the job was stopped from outside, in file order.

    The agent's `Sending process N closing signal SIGTERM` counts only when no worker failed first: torchrun
    closes the workers after a worker failure or after it was itself signalled (elastic/agent/server/api.py
    `_invoke_run`, elastic/multiprocessing/api.py `_close`), and only the second is a stop from outside.
    """
    rows: list[Row] = []
    worker_failed = any(
        e.kind in ("worker_failed", "child_failed") and not _stopped_worker(e) for e in events
    )
    for e in events:
        found = stop_kind(e)
        if found is None and e.kind == "closing_signal" and not worker_failed:
            found = ("agent_closing", e.get("signal"))
        if found is None:
            continue
        how, sig = found
        rank = None if e.kind in AGENT_EVENT_KINDS or e.kind == "job_stopped" else e.rank
        said = STOP_WORDS.get(how, how)
        if sig and how != "keyboard_interrupt":
            said += f" ({sig})"
        reason = e.get("reason") if e.kind == "job_stopped" else None
        if reason:
            said += f", due to {str(reason).lower()}"
        rows.append({"rank": rank, "host": host_of(e, hosts, rank), "how": how, "signal": sig,
                     "reason": str(reason) if reason else None, "said": said,
                     "time": e.time, "text": e.text[:300], "path": e.path, "line": e.line})
    return sorted(rows, key=lambda r: (r["path"], r["line"]))


def is_error(e: Event) -> bool:
    """A failure line that is not the stop itself nor its consequence (a worker ended by the stop signal)."""
    if e.kind not in FAILURE_KINDS or e.kind == "job_stopped" or _stopped_worker(e):
        return False
    return not (e.kind == "exception" and stop_kind(e) is not None)


def _stop_marks(events: Sequence[Event]) -> tuple[float | None, dict[str, int]]:
    """When the job was stopped from outside: the earliest stop time, and per file the first stop line."""
    first_time: float | None = None
    lines: dict[str, int] = {}
    for s in events:
        if stop_kind(s) is None:
            continue
        if s.time is not None:
            first_time = s.time if first_time is None else min(first_time, s.time)
        lines[s.path] = min(lines.get(s.path, s.line), s.line)
    return first_time, lines


def _after_stop(e: Event, marks: tuple[float | None, dict[str, int]]) -> bool:
    """Did `e` come after the job was stopped from outside? Then it is the stop's consequence (section 17.4:
    workers torn down by the launcher print store, peer and teardown errors), not a failure of its own."""
    return _after_stop_at(e.time, e.path, e.line, marks)


def _after_stop_at(time: float | None, path: str | None, line: int,
                   marks: tuple[float | None, dict[str, int]]) -> bool:
    """`_after_stop` of a line by its time, else its place in the file of a stop line."""
    first_time, lines = marks
    if time is not None and first_time is not None:
        return time >= first_time
    return path in lines and lines[path] < line


def mark_after_stop(rows: list[Row], events: Sequence[Event],
                    hosts: dict[int, str] | None = None) -> list[Row]:
    """Set each row's `after_stop`: did its line come after the job was stopped from outside (see
    `_after_stop`)? A row carries its line's `time`, `path`, `line` and `host`.

    A stop that reached some hosts only (one node's agent signalled: a node preempted or drained, the others'
    agents never told) is no stop of the ranks on the other hosts: what they print after it is their loss of
    the stopped node's ranks, not the consequence of a stop of their own (torchrun forwards a signal only to
    its own workers, torch/distributed/elastic/agent/server/api.py `_invoke_run`)."""
    stops = [e for e in events if stop_kind(e) is not None]
    marks = _stop_marks(stops)
    stopped_hosts = {host_of(e, hosts or {}) for e in stops}
    # the outer launcher stream (`srun -l` task, pdsh host) of each stop line, and of each row's line
    stopped_streams = {outer_stream(e.writer) for e in stops}
    keys = {(r.get("path"), r.get("line")) for r in rows} if stops else set()
    stream_of: dict[tuple[Any, Any], str] = {
        (e.path, e.line): outer_stream(e.writer) for e in events if (e.path, e.line) in keys}
    for r in rows:
        host = r.get("host")
        stream = stream_of.get((r.get("path"), r.get("line")), "")
        elsewhere_host = bool(host and stopped_hosts and None not in stopped_hosts
                              and host not in stopped_hosts)
        elsewhere_stream = bool(stream and stopped_streams and "" not in stopped_streams
                                and stream not in stopped_streams)
        if elsewhere_host or elsewhere_stream:
            r["after_stop"] = False
            continue
        t = r.get("time")
        r["after_stop"] = _after_stop_at(t if isinstance(t, (int, float)) else None, r.get("path"),
                                         r.get("line", -1), marks)
    return rows


# Where an interrupted process waited, when it was not idle after its run: inside torch.distributed (a
# collective, a barrier, destroy_process_group), or in the exit path (section 16 item 4:
# `destroy_process_group`, `_shutdown_workers`, `atexit` handlers are a teardown hang, section 14).
# torchrun's agent (elastic/, launcher/, run.py) sleeps between polls of its workers: its own traceback
# says nothing about them.
_BLOCKED_FRAME = re.compile(
    r"(?:^|/)torch/distributed/(?!elastic/|launcher/|run\.py|launch\.py)|(?:^|/)torch/utils/data/"
    r"|\bin (?:destroy_process_group|barrier|monitored_barrier|_shutdown_workers|_exitfunc)$"
)


def _blocked_stack(e: Event) -> bool:
    """A stop's traceback, or a main-thread stack dump, showing the process waiting in communication or
    in its exit path."""
    if e.kind == "stack_dump" and not (e.get("main") or e.get("thread") == "MainThread"):
        return False
    if e.kind not in ("stack_dump", "exception"):
        return False
    return any(_BLOCKED_FRAME.search(str(f)) for f in e.get("frames") or [])


def finished_before_stop(events: Sequence[Event], stops: Sequence[Row],
                         quiet: Sequence[Mapping[str, Any]],
                         last_lines: Sequence[Mapping[str, Any]] = ()) -> bool:
    """The job was stopped from outside after its output said the run was over, and nothing else failed.

    A user's Ctrl-C (or a scheduler's end of allocation) after `Training complete` interrupts a job that
    was idle or exiting, not a hang (failure-signatures.md section 16: a silent hang is read from where the
    ranks stopped; here they stopped after the end). It stays a hang when any sign of one is there: a
    failure line before the stop, a rank whose last point differs from its peers', or an interrupted stack
    waiting in torch.distributed, the DataLoader or the exit path (`destroy_process_group` hanging is a
    teardown hang, section 14). Nor is the run over when only some ranks said so and a peer that did not
    stopped on a line nobody went past (`last_lines`, fact last_line): those ranks left the loop early
    (early stopping decided on one rank's loss, a shorter shard; section 1) while the peer waited inside it.
    """
    if not stops:
        return False
    marks = _stop_marks(events)
    said = {e.rank for e in events if e.kind == "run_finished" and not _after_stop(e, marks)}
    if not said:
        return False
    if _finished_alone(said, last_lines):
        return False
    if any(is_error(e) and not _after_stop(e, marks) for e in events):
        return False
    if any(r.get("differs") for r in quiet):
        return False
    return not any(_blocked_stack(e) for e in events)


def _finished_alone(said: set[int | None], last_lines: Sequence[Mapping[str, Any]]) -> bool:
    """At most half of the ranks whose last lines were compared said the run was over, and a rank that did
    not stopped on a line no peer printed and went past (it was not merely quieter than a finished rank 0
    that printed the same lines and then its own ending)."""
    if None in said or not last_lines:
        return False
    compared = {r.get("rank") for r in last_lines}
    if not said <= compared or len(said) * 2 > len(compared):
        return False
    return any(r.get("rank") not in said and not r.get("passed_by") and r.get("position") != "behind"
               for r in last_lines)


def no_error_before_stop(events: Sequence[Event],
                         marks: tuple[float | None, dict[str, int]] | None = None) -> bool:
    """The job's logs hold no failure line but the stop from outside and its consequences (`is_error`,
    `_after_stop`)."""
    if marks is None:
        marks = _stop_marks(events)
    return not any(is_error(e) and not _after_stop(e, marks) for e in events)


def _order(evs: Sequence[Event]) -> list[Event]:
    """A rank's events in the order it wrote them: by time when every one has a time, else by position."""
    if evs and all(e.time is not None for e in evs):
        return sorted(evs, key=lambda e: (e.time or 0.0, e.path, e.line))
    return sorted(evs, key=lambda e: (e.path, e.line))


def _sanity_bar(e: Event) -> bool:
    return str(e.get("label") or "").startswith("Sanity Checking")


def _series(e: Event) -> tuple[Any, ...]:
    return (e.get("pattern"), bar_name(e.get("label")))


def _main_series(progress: list[Event], first: Event) -> set[tuple[Any, ...]]:
    """The series of a rank's main loop, whose first report is `first`.

    tqdm draws a bar when it is created, before the loop sets its description (`set_description` after
    each step, as torchtune's recipes do, recipes/full_finetune_distributed.py): an unlabelled bar that
    never completed, followed by a labelled one of the same shape and total, is that one bar redrawn with
    its description. A completed unlabelled bar is a loop of its own (a validation bar may follow it).
    """
    mine = _series(first)
    total = _total(first)
    if first.get("label") is not None or total is None:
        return {mine}
    if any(_series(e) == mine and _step(e) == total for e in progress):
        return {mine}
    later = next((e for e in progress
                  if e.get("label") is not None and e.get("pattern") == first.get("pattern")
                  and _total(e) == total and _step(e) is not None), None)
    return {mine} if later is None else {mine, _series(later)}


def _step(e: Event) -> int | None:
    s = e.get("step")
    return s if isinstance(s, int) and not isinstance(s, bool) else None


def _epoch(e: Event) -> float | None:
    x = e.get("epoch")
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _position(e: Event) -> tuple[float, int]:
    """A progress report's place in its series: (epoch, step), an epoch-less report's epoch as -1."""
    x = _epoch(e)
    return (x if x is not None else -1.0, _step(e) or 0)


def _total(e: Event) -> int | None:
    t = e.get("total")
    return t if isinstance(t, int) and not isinstance(t, bool) and t > 0 else None


def _complete(e: Event) -> bool:
    total = _total(e)
    return total is not None and _step(e) == total


def _boundary(progress: list[Event], phases: list[Event]) -> tuple[bool, str | None, Event | None]:
    """(stalled_start, boundary, the phase line it comes from) of one rank's stream.

    `stalled_start`: its last progress report is a unit (epoch, bar) at 0 of N that never advanced, right
    after a unit that completed (N of N): the log stops at the first step of a new epoch (section 16 item 2).
    `boundary` names the phase the rank was at when it stopped: epoch_start, or the phase line (checkpoint
    save/load, validation, data preparation) written after its last completed unit, or a completed
    validation bar (a second loop with its own total) between the completed unit and the stalled start.
    """
    if not progress:
        last_phase = phases[-1] if phases else None
        return False, (str(last_phase.get("phase")) if last_phase is not None else None), last_phase
    last = progress[-1]
    earlier = progress[:-1]
    done = [e for e in earlier if _complete(e)]
    stalled = _step(last) == 0 and _total(last) is not None and bool(done)
    anchor = done[-1] if stalled else last
    key = (anchor.path, anchor.line) if anchor.time is None else None
    # A phase line on the physical line of the last redraw came after it: tqdm redraws with `\r` and writes
    # no newline, so the next line a logger writes is glued after the bar and ends that physical line
    # (hanglens/ingest/reader.py `split_glued`; failure-signatures.md section 16 item 3).
    after = [
        p for p in phases
        if (p.time is not None and anchor.time is not None and p.time >= anchor.time)
        or (key is not None and ((p.path, p.line) > key
                                 or ((p.path, p.line) == key and p.text != anchor.text)))
    ]
    if after:
        return stalled, str(after[-1].get("phase")), after[-1]
    if stalled:
        train_total = _total(last)
        same = [i for i, e in enumerate(done) if _total(e) == train_total]
        since = done[same[-1] + 1:] if same else done
        label = str(last.get("label") or "").lower()
        if since or "val" in label or "eval" in label:
            return True, "validation", None  # a loop with its own total completed after the training unit
        return True, "epoch_start", None
    return False, None, None


def _cadence(progress: list[Event]) -> float | None:
    """Seconds per step of the rank's main series, from its first and last timed reports."""
    by: dict[tuple[Any, ...], list[Event]] = defaultdict(list)
    for e in progress:
        if e.time is not None and _step(e) is not None:
            by[_series(e)].append(e)
    rates = []
    for evs in by.values():
        first, last = evs[0], evs[-1]
        s0, s1 = _step(first), _step(last)
        if s0 is not None and s1 is not None and s1 > s0 and last.time is not None and first.time is not None:
            rates.append((last.time - first.time) / (s1 - s0))
    return statistics.median(rates) if rates else None


# Timestamps of one second resolution cannot show an interval shorter than that.
STAMP_RESOLUTION_S = 1.0


def _quiet_before_stop(evs: list[Event], progress: list[Event],
                       stop_time: float | None) -> tuple[float | None, bool]:
    """(seconds from the rank's newest timed line to the stop from outside, whether that quiet is a hang).

    Section 16 item 3: a rank's normal cadence is the interval between its lines; a job whose every line
    stopped for more than CADENCE_FACTOR times the longest interval it showed since its first progress
    report (STAMP_RESOLUTION_S at least), and that was then stopped from outside, had hung before the stop,
    rather than been stopped while it still ran. Lines after the stop are its consequence, not progress.
    """
    if stop_time is None or not progress:
        return None, False
    start = min((e.time for e in progress if e.time is not None), default=None)
    times = sorted(e.time for e in evs if e.time is not None and e.time < stop_time)
    if start is None or not times:
        return _quiet_before_stop_tod(evs, progress, stop_time)
    quiet = stop_time - times[-1]
    since = [t for t in times if t >= start]
    longest = max((b - a for a, b in pairwise(since)), default=0.0)
    return quiet, quiet > CADENCE_FACTOR * max(longest, STAMP_RESOLUTION_S)


# The time of day a print prefix gives, with no date: the DeiT/MAE/DINO `setup_for_distributed` print
# (`builtin_print('[{}] '.format(datetime.datetime.now().time()), end='')`, util/misc.py) that
# torchvision-style scripts copy, `[11:12:54.591687] Epoch: [0] ...`.
TIME_OF_DAY_RE = re.compile(r"^\[(?P<h>[01]\d|2[0-3]):(?P<m>[0-5]\d):(?P<s>[0-5]\d)(?:\.(?P<f>\d{1,6}))?\] ")
DAY_S = 86400.0


def _time_of_day(e: Event) -> float | None:
    m = TIME_OF_DAY_RE.match(e.text)
    if m is None:
        return None
    return int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"]) + float(f"0.{m['f'] or 0}")


def _quiet_before_stop_tod(evs: list[Event], progress: list[Event],
                           stop_time: float) -> tuple[float | None, bool]:
    """`_quiet_before_stop` for a rank whose lines carry only the time of day: against the stop's own time
    of day (its stamp's date is not theirs to compare), in line order, across midnight at most once."""
    first = next((i for i, e in enumerate(evs) if e.kind == "progress" and _time_of_day(e) is not None), None)
    if first is None or not any(_time_of_day(e) is not None for e in progress):
        return None, False
    tods = [t for t in (_time_of_day(e) for e in evs[first:]) if t is not None]
    longest = max(((b - a) % DAY_S for a, b in pairwise(tods)), default=0.0)
    quiet = (stop_time % DAY_S - tods[-1]) % DAY_S
    if quiet > DAY_S / 2 or longest > DAY_S / 2:
        return None, False   # out of order, or days apart: nothing to read
    return quiet, quiet > CADENCE_FACTOR * max(longest, STAMP_RESOLUTION_S)


def _epoch_done(progress: list[Event], stepped: list[Event]) -> Event | None:
    """A rank's newest `epoch_end` report (`epoch 3 done`), when nothing of its main series came after it:
    the rank went past every step of that epoch (section 16 item 1, its last progress line). Else None."""
    ends = [e for e in progress if e.get("pattern") == "epoch_end" and _epoch(e) is not None]
    if not ends:
        return None
    end = ends[-1]
    if stepped:
        last = stepped[-1]
        at = {id(e): i for i, e in enumerate(progress)}
        if at[id(last)] > at[id(end)]:
            return None   # it went on reporting steps after it
        epoch, ended = _epoch(last), _epoch(end)
        if epoch is not None and ended is not None and epoch > ended:
            return None
    return end


def _epoch_ends_shared(per_rank: Sequence[Sequence[Event]]) -> bool:
    """Do the ranks that print epoch ends print them all? False when a rank reported a step of an epoch
    after one whose end another rank printed and it did not (`epoch 0 done` on rank 0 alone, then every
    rank in epoch 1): then an epoch end says which rank logs summaries, not how far a rank got."""
    ended: list[set[Any]] = []
    reached: list[float] = []
    for evs in per_rank:
        ended.append({e.get("epoch") for e in evs
                      if e.kind == "progress" and e.get("pattern") == "epoch_end"})
        epochs = [x for e in evs if e.kind == "progress" and e.get("pattern") != "epoch_end"
                  and _step(e) is not None and (x := _epoch(e)) is not None]
        reached.append(max(epochs, default=-1.0))
    every = set().union(*ended) if ended else set()
    return not any(x not in mine and top > float(x)
                   for x in every if isinstance(x, (int, float))
                   for mine, top in zip(ended, reached, strict=True))


# Progress patterns (parsers/progress.py) that are a bar redrawn with `\r` and closed by one newline (tqdm,
# and Lightning's progress bar, which is tqdm's).
DRAWN_BARS = frozenset({"tqdm", "lightning"})


def _bar_cut(last: Event, events_by_path: Mapping[str, tuple[int, int]], lines: Mapping[str, int]) -> bool:
    """The file ends inside a running progress bar: `last` is a bar short of its total (step < total) on its
    file's last physical line, and no event of that file comes after it. tqdm redraws with `\r` and writes
    its newline only when the bar closes (log-formats.md section 9.2), so its writer never finished the loop:
    the process hung and was stopped, died without a word, or was still running when the file was copied
    (failure-signatures.md section 16: a hang with no error line)."""
    total, step = _total(last), _step(last)
    # Only a bar drawn in place: a logged `step 4/6` line ends with its newline, and a script that logs
    # every k-th step ends a finished epoch on such a line.
    if last.get("pattern") not in DRAWN_BARS:
        return False
    if total is None or step is None or step >= total or last.path not in lines:
        return False
    return lines[last.path] == last.line and events_by_path.get(last.path) == (last.line, id(last))


def _stride(stepped: list[Event]) -> int | None:
    """The steps between consecutive logged reports of the series' last epoch (a script that logs every
    k-th step prints k apart): the smallest positive difference, None with fewer than two reports."""
    last_epoch = _epoch(stepped[-1]) if stepped else None
    steps = [s for s in (_step(e) for e in stepped if _epoch(e) == last_epoch) if s is not None]
    gaps = [b - a for a, b in pairwise(steps) if b > a]
    return min(gaps) if gaps else None


def _logged_cut(last: Event, stride: int | None) -> bool:
    """A logged report (a line with its newline, not a bar drawn in place) after which the loop still had
    at least one more report to print before its end: `step + stride < total`. A script that logs every
    k-th step ends a finished epoch on its last multiple of k, which is never that far from the total, so
    a loop that stopped short of it did not finish (failure-signatures.md section 16: a hang with no error
    line is a finding of its own). Only the stride the rank itself showed counts."""
    total, step = _total(last), _step(last)
    if last.get("pattern") in DRAWN_BARS or total is None or step is None or stride is None:
        return False
    return step + stride < total


def silent_hang_rows(events: Sequence[Event], hosts: dict[int, str],
                     lines: Mapping[str, int] | None = None) -> list[Record]:
    """Where each rank stopped (section 16 items 1-3): one row per rank that reported progress or a phase.

    Columns: `last_step`/`last_epoch`/`total` and the time of its last progress report; `last_phase` (the
    newest checkpoint/validation/data-preparation line) and `last_dist` (the kind of its newest distributed
    runtime line); `common_step` = the lowest last step over ranks (the last point every rank reached);
    `position` ahead / behind / same against the step most ranks stopped at (with no majority every rank
    that is not at the common step is ahead); `differs` when that position is not `same`; `sequence`
    skipped (the rank has no report for a step its peers printed, `skipped_after` is the step before the
    hole) or extra (it printed a step most peers skipped); `cadence_s`, `silent_for_s` (how long before the
    last rank's last report it went quiet) and `first_silent` (quiet for more than CADENCE_FACTOR of its own
    step intervals while others still printed); `stalled_start`/`boundary` (see `_boundary`); `no_error`
    (the job's logs hold no failure line but the stop itself); `ran_out` when its loop ended (last step =
    its total) in the epoch the majority stopped in, at a total smaller than the majority's, while the
    majority were still inside theirs. Output of several ranks attributed to none
    is one row with rank None, only when no rank has a row of its own.
    """
    by_rank: dict[int | None, list[Event]] = defaultdict(list)
    for e in events:
        if e.kind in ("progress", "phase") or e.parser in DIST_PARSERS:
            by_rank[e.rank].append(e)
    ranked = sorted(
        r for r, evs in by_rank.items() if r is not None and any(e.kind in ("progress", "phase") for e in evs)
    )
    keys: list[int | None] = [*ranked] if ranked else ([None] if by_rank.get(None) else [])
    marks = _stop_marks(events)
    stop_time = marks[0]
    no_error = no_error_before_stop(events, marks)
    # per file, the last event (line, identity): a bar cut at the file's end must be its last word
    newest: dict[str, tuple[int, int]] = {}
    if lines:
        for e in events:
            if e.path in lines and (e.path not in newest or e.line >= newest[e.path][0]):
                newest[e.path] = (e.line, id(e))
    shared_ends = _epoch_ends_shared([by_rank[r] for r in keys if r is not None])
    # A finish line anywhere (the run said it was over) means no loop was cut.
    finished = any(e.kind == "run_finished" for e in events)
    base: list[Record] = []
    for rank in keys:
        evs = _order(by_rank[rank])
        progress = [e for e in evs if e.kind == "progress"]
        phases = [e for e in evs if e.kind == "phase"]
        dist = [e for e in evs if e.parser in DIST_PARSERS and e.kind not in ("progress", "phase")]
        if rank is None and not progress:
            continue
        # The rank's main loop is the series it reported first (validation bars come later), past a
        # sanity-check bar: Lightning validates a few batches before training starts, under its own bar
        # ("Sanity Checking", lightning/pytorch/callbacks/progress/progress_bar.py).
        first = next((e for e in progress if _step(e) is not None and not _sanity_bar(e)), None) \
            or next((e for e in progress if _step(e) is not None), None)
        main = _main_series(progress, first) if first is not None else set()
        stepped = [e for e in progress if _series(e) in main]
        last = (stepped or progress or phases)[-1]
        stalled, boundary, phase_line = _boundary(progress, phases)
        if phase_line is not None:
            last = phase_line  # the row cites the line the rank stopped at
        gap = next(
            (e.get("gap_after") for e in reversed(stepped) if isinstance(e.get("gap_after"), int)), None
        )
        quiet, hung = _quiet_before_stop(evs, progress, stop_time)
        steps = [s for s in (_step(e) for e in stepped) if s is not None]
        last_step = _step(stepped[-1]) if stepped else None
        unranked_note = None
        # How far a report is: by its epoch first where the series counts steps within an epoch
        # (`Epoch 3: 40/1251`, `Epoch(train) [3][150/1251]`), so epoch 2's step 250 is behind epoch 3's 150.
        top = max((e for e in stepped if _step(e) is not None), key=_position, default=None)
        if rank is None and top is not None and _position(top) != _position(stepped[-1]):
            # Interleaved lines of several ranks with no rank on them: the last line is whichever rank
            # printed last, not where the job stopped; the furthest step printed is how far some rank got.
            unranked_note = (f"no line names its rank: some rank printed step {_step(top)}, the last line is "
                             f"step {last_step}; which rank stopped where cannot be told")
            last_step = _step(top)
        elif rank is None and steps:
            unranked_note = "no line names its rank: which rank stopped where cannot be told"
        done = _epoch_done(progress, stepped) if shared_ends else None
        if done is not None and phase_line is None:
            last = done   # the row cites the line saying its epoch was over
        stride = _stride(stepped)
        base.append(_SilentRow(
            rank=rank,
            epoch_done=done.get("epoch") if done is not None else None,
            bar_cut=bool(lines) and bool(progress) and _bar_cut(progress[-1], newest, lines or {}),
            stride=stride,
            logged_cut=(bool(stepped) and not finished and boundary is None and done is None
                        and unranked_note is None and progress[-1] is stepped[-1]
                        and _logged_cut(stepped[-1], stride)),
            host=hosts.get(rank) if rank is not None else None,
            last_step=last_step,
            unranked_note=unranked_note,
            first_step=min(steps) if steps else None,
            last_epoch=next(
                (e.get("epoch") for e in reversed(stepped or progress) if e.get("epoch") is not None), None
            ),
            total=_total(stepped[-1]) if stepped else None,
            _series=_series(stepped[-1]) if stepped else None,   # (compared in `_compare`, then dropped)
            last_time=stepped[-1].time if stepped else (progress[-1].time if progress else None),
            last_phase=str(phases[-1].get("phase")) if phases else None,
            last_dist=dist[-1].kind if dist else None,
            gap_after=gap,
            cadence_s=_cadence(progress),
            stalled_start=stalled,
            boundary=boundary,
            no_error=no_error,
            quiet_before_stop_s=quiet,
            hung_before_stop=hung,
            path=last.path,
            line=last.line,
        ))
    return _odd_tail(_compare(base), by_rank)


# A word of a report line: three letters or more (numbers, paths' digits and punctuation are not words).
_WORD = re.compile(r"[A-Za-z]{3,}")
_WORDS_OF = 400   # characters of a line read for its words


def _words(e: Event) -> tuple[str, ...]:
    """The words of a report line, lowercased, each once, in the line's order."""
    return tuple(dict.fromkeys(w.lower() for w in _WORD.findall(e.text[:_WORDS_OF])))


def _odd_tail(rows: list[Record], by_rank: Mapping[int | None, list[Event]]) -> list[Record]:
    """Mark the one rank whose last report says something no other report of the job says (`tail_words`,
    `odd_tail`; section 16 item 1: each rank's last progress or phase line).

    Every rank runs the same loop and prints the same lines: a last line with words the rank never printed
    before and no other rank printed at all (`step 4: reading next shard`, `writing shard .../__1_0.distcp`
    while its peers' last lines are their step reports) is where that rank went that its peers did not. With
    three ranks or more whose lines are read, and at the same point as the others (no step ahead or
    behind), that one rank is where the job stopped; two ranks are one line against one.
    """
    for r in rows:
        r.update(tail_words=None, odd_tail=False, mesh_peer_elsewhere=None)
    ranked = [r for r in rows if r["rank"] is not None]
    if len(ranked) < 3:
        return rows
    # per rank: its last report, its words and the words of its earlier reports (each line read once)
    read: dict[int, tuple[Event, tuple[str, ...], set[str]]] = {}
    spread: Counter[str] = Counter()   # a word -> how many ranks' reports carry it
    for r in ranked:
        evs = _order([e for e in by_rank.get(r["rank"], ()) if e.kind in ("progress", "phase")])
        if not evs:
            continue
        tail = evs[-1]
        at = (tail.path, tail.line)   # (a line read as both a phase and a progress report is one line)
        said = _words(tail)
        before: set[str] = set().union(*(_words(e) for e in evs if (e.path, e.line) != at))
        read[r["rank"]] = (tail, said, before)
        spread.update(before.union(said))
    tails: dict[int, tuple[tuple[str, ...], Event]] = {}
    for rank, (tail, said, before) in read.items():
        new = tuple(w for w in said if w not in before and spread[w] == 1)
        if new:
            tails[rank] = (new, tail)
    odd = next(iter(tails)) if len(tails) == 1 else None
    for r in rows:
        found = tails.get(r["rank"]) if r["rank"] is not None else None
        r.update(tail_words=" ".join(found[0]) if found else None,
                 odd_tail=r["rank"] == odd and odd is not None and not r["differs"])
        if r["odd_tail"] and found:
            r.update(path=found[1].path, line=found[1].line)   # the row cites the line it stopped at
    return rows


# (a slotted row: one per rank of a big job)
_SilentRow = record_type("silent_hang", extra=("_series",))


# The step of a rank past the end of its epoch (`epoch_done`): after every step of it.
EPOCH_OVER = 1 << 62


def _has_point(r: Record) -> bool:
    return r["last_step"] is not None or r["epoch_done"] is not None


def _point(r: Record) -> tuple[float, int]:
    done = r["epoch_done"]
    if done is not None:
        return (float(done), EPOCH_OVER)
    epoch = r["last_epoch"]
    return (float(epoch) if isinstance(epoch, (int, float)) and not isinstance(epoch, bool) else -1.0,
            int(r["last_step"]))


def _shortest_loop_ended(me: int, rows: list[Record], series: list[Any]) -> bool:
    """Did `r`'s loop end at a total smaller than every other rank's, while they were all inside theirs?

    Ranks that count the same loop to different totals have different numbers of batches
    (failure-signatures.md section 1, uneven data); the one whose last report is the end of its shorter loop
    (`N/N`, or `N-1/N` for a counter from 0: its first report was step 0) left it for the next collective
    while the others, at the same epoch, still had steps to run, even when both printed the same step
    number last (two ranks: no majority to stand apart from).
    """
    r = rows[me]
    total, last, first = r["total"], r["last_step"], r["first_step"]
    # (a loop counted to N ends at N, or at N-1 when it counts from 0)
    if not isinstance(total, int) or last is None or last not in (total, total - 1 if first == 0 else total):
        return False
    # (a generator: the first peer that fails ends the check, so a big job's ranks cost one look each)
    others = ((o, s) for i, (o, s) in enumerate(zip(rows, series, strict=True)) if i != me)
    return len(rows) > 1 and all(
        s == series[me] and o["last_step"] is not None and _point(o)[0] == _point(r)[0]
        and isinstance(o["total"], int) and o["total"] > total and o["last_step"] < _inside_below(o)
        for o, s in others)


def _inside_below(r: Record) -> int:
    """The step below which `r` is still inside its loop: its total when it counts from 1 (its first report
    was step 1: `N-1/N` has one step left), else one less (a counter from 0 ends at `N-1/N`)."""
    total: int = r["total"]
    return total if r["first_step"] == 1 else total - 1


def _compare(rows: list[Record]) -> list[Record]:
    """Fill the cross-rank columns: common step, position, sequence, first silent."""
    # A point is (epoch, step): step 0 of epoch 1 is past step 4 of epoch 0.
    points = [_point(r) for r in rows if _has_point(r)]
    lasts = points
    common_point = min(points) if points else None
    common = common_point[1] if common_point is not None and common_point[1] != EPOCH_OVER else None
    if common is None and common_point is not None:
        common = min((r["last_step"] for r in rows if r["last_step"] is not None), default=None)
    common_epoch = common_point[0] if common_point is not None and common_point[0] >= 0 else None
    counts = Counter(points)
    top = counts.most_common(1)[0] if counts else None
    majority = top[0] if top is not None and top[1] * 2 > len(lasts) else None
    gaps = Counter(r["gap_after"] for r in rows if r["gap_after"] is not None)
    times = [r["last_time"] for r in rows if r["last_time"] is not None]
    newest = max(times) if len(times) >= 2 else None
    # Ranks with no hole of their own, as (first, last) steps: did one of them print past step g? A rank
    # with a hole is never among them, so a row is never its own witness. One answer per hole, not per row.
    spans = [(p["first_step"], p["last_step"]) for p in rows
             if p["gap_after"] is None and p["last_step"] is not None and p["first_step"] is not None]
    witnessed: dict[Any, bool] = {}

    def printed_through(g: Any) -> bool:
        if g not in witnessed:
            witnessed[g] = any(first <= g < last for first, last in spans)
        return witnessed[g]

    # The totals the majority's loop counts to: a rank whose own loop ended at a smaller total while the
    # majority were still inside theirs ran out of batches (uneven shards, failure-signatures.md section 1).
    at_majority = [r for r in rows
                   if majority is not None and _has_point(r) and _point(r) == majority]
    majority_totals = [r["total"] for r in at_majority]
    # ... counting the same series (a tokenizer bar that ends at 300/300 is no shorter training loop)
    majority_series = {r["_series"] for r in at_majority}
    series = [r["_series"] for r in rows]   # (each row's is dropped as the loop below completes it)
    out: list[Record] = []
    for i, r in enumerate(rows):
        step = _point(r) if _has_point(r) else None
        if step is None or len(lasts) < 2:
            position = None
        elif majority is not None:
            position = "same" if step == majority else ("ahead" if step > majority else "behind")
        else:
            position = "same" if step == common_point else "ahead"
        sequence, skipped_after = None, None
        g = r["gap_after"]
        # A hole most ranks share is the job's cadence, not this rank's skip (the others printed extra).
        if g is not None and gaps[g] * 2 <= len(rows) and printed_through(g):
            sequence, skipped_after = "skipped", g
        elif g is None and r["last_step"] is not None and r["first_step"] is not None:
            common_gap = [
                x for x, n in gaps.items() if n * 2 > len(rows) and r["first_step"] <= x < r["last_step"]
            ]
            if common_gap:
                sequence, skipped_after = "extra", min(common_gap)
        silent_for = newest - r["last_time"] if newest is not None and r["last_time"] is not None else None
        cad = r["cadence_s"]
        first_silent = bool(silent_for is not None and cad and silent_for > CADENCE_FACTOR * cad)
        total = r["total"]
        ran_out = bool(
            position == "ahead" and majority is not None and step is not None and step[0] == majority[0]
            and isinstance(total, int) and r["last_step"] == total and majority_totals
            and majority_series == {r["_series"]}
            and all(isinstance(t, int) and t > total and majority[1] < t for t in majority_totals)
        ) or _shortest_loop_ended(i, rows, series)
        # (the row made here, completed in place: a big job has one per rank, and a copy would double them)
        del r["_series"]
        r.update(
            ran_out=ran_out,
            common_step=common,
            common_epoch=common_epoch,
            position=position,
            differs=position in ("ahead", "behind") or sequence is not None,
            sequence=sequence,
            skipped_after=skipped_after,
            silent_for_s=silent_for,
            first_silent=first_silent,
        )
        out.append(r)
    return out
