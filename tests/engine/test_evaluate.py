"""Condition operators, constraints, bindings, requires, supersedes, ranking and the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from hanglens.analysis.facts_spec import FACT_SPECS
from hanglens.engine import evaluate
from hanglens.engine.evaluate import describe_condition
from hanglens.model import Category, Confidence

from .conftest import CATALOG, FakeTables, event, fact, rule, tables

STATUS = [
    {"rank": 0, "host": "a", "crashed": False, "hung": True, "victim": True},
    {"rank": 1, "host": "a", "crashed": True, "hung": False, "victim": False,
     "first_error_kind": "cuda_error"},
    {"rank": 2, "host": "b", "crashed": False, "hung": True, "victim": True},
    {"rank": 3, "host": "b", "crashed": None, "hung": None, "victim": None},
]


def run(rules: list[Any], **kw: Any) -> Any:
    return evaluate(rules, tables(**kw), catalog=CATALOG)


def matches(where: dict[str, Any], events: list[Any]) -> bool:
    r = rule(match={"all": [{"event": "hang_detected", "where": where}]}, culprits=None, explanation="x")
    return bool(run([r], events=events).findings)


HANG = [event("hang_detected", 0, detector="watchdog", pg="0", seq=12, op="ALLREDUCE", timeout_ms=600000),
        event("hang_detected", 2, detector="gloo", pg="1", seq=None, op=None, timeout_ms=None,
              text="gloo timeout")]


@pytest.mark.parametrize(("where", "expected"), [
    ({"detector": "watchdog"}, True),
    ({"detector": {"eq": "heartbeat_monitor"}}, False),
    ({"pg": 0}, True),                                  # numbers compare with numeric text
    ({"seq": {"ne": 12}, "rank": 2}, True),              # a missing value is "not 12"
    ({"op": {"in": ["ALLREDUCE", "BROADCAST"]}}, True),
    ({"op": {"not_in": ["ALLREDUCE"]}, "rank": 0}, False),
    ({"seq": {"gt": 11}}, True),
    ({"seq": {"gt": 12}}, False),
    ({"seq": {"gte": 12, "lte": 12}}, True),
    ({"seq": {"lt": 12}}, False),
    ({"text": {"contains": "gloo"}}, True),
    ({"text": {"contains": "nccl"}}, False),
    ({"op": {"regex": "^ALL(REDUCE|GATHER)$"}}, True),
    ({"op": {"regex": "^BROAD"}}, False),
    ({"seq": {"exists": False}}, True),
    ({"timeout_ms": {"exists": True}, "rank": 2}, False),
    ({"path": "rank2.log", "line": 1, "kind": "hang_detected"}, True),
    ({"level": {"exists": True}}, False),
])
def test_operator(where: dict[str, Any], expected: bool) -> None:
    assert matches(where, HANG) is expected


def test_contains_on_list_field() -> None:
    evs = [event("exception", 1, exc_type="RuntimeError", frames=["train.py", "step.py"])]
    r = rule(match={"all": [{"event": "exception", "where": {"frames": {"contains": "step.py"}}}]},
             culprits=None, explanation="x")
    assert run([r], events=evs).findings


def test_in_binding_and_not_in_binding() -> None:
    cuda = [event("cuda_error", 1, error="illegal_memory_access")]
    base = {"fact": "rank_status", "where": {"hung": True}, "bind": "hung"}
    inside = rule(match={"all": [base, {"event": "cuda_error", "where": {"rank": {"in_binding": "hung"}}}]})
    outside = rule(id="other", match={"all": [base, {"event": "cuda_error",
                                                      "where": {"rank": {"not_in_binding": "hung"}}}]})
    res = run([inside, outside], events=cuda, facts={"rank_status": STATUS})
    assert [f.rule_id for f in res.findings] == ["other"]
    assert "match.all[1]" in res.ruled_out[0].reason


@pytest.mark.parametrize(("ranks", "count", "world", "expected"), [
    ({"min": 2}, None, None, True),
    ({"min": 3}, None, None, False),
    ({"max": 1}, None, None, False),
    ({"max_fraction": 0.5}, None, 4, True),
    ({"max_fraction": 0.25}, None, 4, False),
    ({"min_fraction": 0.5}, None, None, True),       # 2 of the 4 ranks seen
    ({"min_fraction": 0.6}, None, None, False),
    (None, {"min": 3}, None, False),
    (None, {"max": 1}, None, False),
    (None, {"min": 2, "max": 2}, None, True),
])
def test_rank_and_count_constraints(ranks: Any, count: Any, world: Any, expected: bool) -> None:
    cond: dict[str, Any] = {"fact": "rank_status", "where": {"hung": True}, "bind": "hung"}
    if ranks is not None:
        cond["ranks"] = ranks
    if count is not None:
        cond["count"] = count
    r = rule(match={"all": [cond]}, culprits={"from": "hung"}, explanation="x")
    res = run([r], facts={"rank_status": STATUS}, world_size=world, ranks=[0, 1, 2, 3])
    assert bool(res.findings) is expected


def test_count_min_zero_holds_without_rows() -> None:
    r = rule(match={"all": [{"event": "cuda_error", "count": {"min": 0, "max": 0}}]}, culprits=None,
             explanation="x")
    assert run([r]).findings


def test_any_and_none_groups() -> None:
    hang = {"event": "hang_detected", "bind": "h"}
    cuda = {"event": "cuda_error", "bind": "c"}
    any_rule = rule(match={"any": [hang, cuda]}, culprits={"from": "h"},
                    explanation="{{ h.rank | rank_list }}/{{ c.rank | count }}")
    none_rule = rule(id="none-rule", match={"all": [hang], "none": [{"event": "cuda_error"}]},
                     culprits=None, explanation="x")
    res = run([any_rule, none_rule], events=HANG)
    assert sorted(f.rule_id for f in res.findings) == ["none-rule", "test-rule"]
    assert next(f for f in res.findings if f.rule_id == "test-rule").explanation == "0, 2/0"
    res = run([any_rule, none_rule], events=[event("cuda_error", 1, error="ecc")])
    assert [f.rule_id for f in res.findings] == ["test-rule"]
    res = run([none_rule], events=[*HANG, event("cuda_error", 1, error="ecc")])
    assert res.ruled_out[0].reason.startswith("match.none[0]: found event cuda_error")
    assert "rank1.log:1" in res.ruled_out[0].reason
    res = run([any_rule])
    assert res.ruled_out[0].reason.startswith("none of match.any held")


def test_requires_makes_a_rule_not_evaluable() -> None:
    r = rule(requires={"events": ["hang_detected"], "facts": ["progress"]})
    res = run([r], facts={"rank_status": STATUS})
    assert [n.to_dict() for n in res.not_evaluable] == [
        {"rule_id": "test-rule", "title": "A test rule", "missing": ["event hang_detected", "fact progress"]}]
    assert not res.ruled_out and not res.findings


def test_culprits_victims_hosts_and_evidence() -> None:
    evs = [event("cuda_error", 1, line=7, text="CUDA error: an illegal memory access", time=5.0, error="x"),
           event("cuda_error", 1, line=3, text="earlier", time=2.0, error="x"),
           event("cuda_error", 2, line=9, error="x")]
    r = rule(evidence=[{"event": "cuda_error", "ranks": "culprits", "limit": 1},
                       {"event": "cuda_error", "ranks": "crashed"}])
    res = run([r], events=evs, facts={"rank_status": STATUS}, hosts={1: "node-b"})
    f = res.findings[0]
    assert f.culprit_ranks == (1,) and f.culprit_hosts == ("node-b",)
    assert f.victim_ranks == (0, 2)
    assert [(e.path, e.line, e.text) for e in f.evidence] == [
        ("rank1.log", 3, "earlier"), ("rank1.log", 7, "CUDA error: an illegal memory access")]
    assert res.verdict.culprit_hosts == ("node-b",)
    named = rule(victims={"from": "crashed"}, culprits={"from": "crashed", "column": "rank"})
    assert run([named], facts={"rank_status": STATUS}).findings[0].victim_ranks == ()


def test_culprit_host_falls_back_to_the_binding() -> None:
    res = run([rule()], facts={"rank_status": STATUS})
    assert res.findings[0].culprit_hosts == ("a",)


def test_evidence_from_fact_rows_takes_text_from_events() -> None:
    evs = [event("exception", 2, line=4, text="RuntimeError: boom", exc_type="RuntimeError")]
    r = rule(match={"all": [{"fact": "first_failure", "where": {"order": 1}, "bind": "first"}]},
             culprits={"from": "first"}, evidence=[{"from": "first"}], explanation="x")
    res = run([r], events=evs, facts={"first_failure": [{"order": 1, "rank": 2, "kind": "exception",
                                                         "path": "rank2.log", "line": 4}]})
    assert [e.to_dict() for e in res.findings[0].evidence] == [
        {"path": "rank2.log", "line": 4, "rank": 2, "host": None, "time": None, "text": "RuntimeError: boom"}]


def test_supersedes_and_ranking() -> None:
    generic = rule(id="generic", confidence="high", priority=90)
    specific = rule(id="specific", confidence="medium", supersedes=["generic"])
    low = rule(id="low", confidence="low")
    tie_a = rule(id="tie-a", confidence="medium", priority=10)
    tie_b = rule(id="tie-b", confidence="medium", priority=10)
    res = run([low, generic, tie_b, specific, tie_a], facts={"rank_status": STATUS})
    assert [(f.rule_id, f.superseded_by) for f in res.findings] == [
        ("specific", None), ("tie-a", None), ("tie-b", None), ("low", None), ("generic", "specific")]
    assert res.verdict.rule_id == "specific"
    assert res.verdict.first_step == "look at the crashed rank"


def test_superseded_only_when_the_superseder_matched() -> None:
    generic = rule(id="generic")
    specific = rule(id="specific", supersedes=["generic"],
                    match={"all": [{"event": "cuda_error", "bind": "crashed"}]})
    res = run([generic, specific], facts={"rank_status": STATUS})
    assert [(f.rule_id, f.superseded_by) for f in res.findings] == [("generic", None)]


def test_verdict_none_and_unknown() -> None:
    quiet = run([rule()], ranks=[0, 1], facts={"rank_status": [{"rank": 0, "crashed": False},
                                                               {"rank": 1, "crashed": False}]})
    assert (quiet.verdict.category, quiet.verdict.confidence) == (Category.NONE, Confidence.MEDIUM)
    single = run([], ranks=[0])
    assert (single.verdict.category, single.verdict.confidence) == (Category.NONE, Confidence.LOW)
    failed = run([], ranks=[0, 1], events=[event("exception", 1, exc_type="ValueError")])
    assert (failed.verdict.category, failed.verdict.confidence) == (Category.UNKNOWN, Confidence.LOW)
    flagged = run([], facts={"rank_status": STATUS})
    # Rank 1 died of its own fault (a CUDA error first): failed, never a victim (evaluate._default_victims).
    assert flagged.verdict.category is Category.UNKNOWN and flagged.verdict.victim_ranks == (0, 2)
    assert "ranks 0-2" in flagged.verdict.summary
    level = run([], events=[event("error_file", 0, level="E")])
    assert level.verdict.category is Category.UNKNOWN


def test_catastrophic_regex_finishes_promptly_with_a_warning() -> None:
    evs = [event("exception", 0, message="a" * 50_000 + "!", exc_type="X")]
    r = rule(match={"all": [{"event": "exception", "where": {"message": {"regex": "(a+)+$"}}}]},
             culprits=None, explanation="x")
    # The regex timeout turns the condition false with a warning (no wall-clock assertion: the machine may
    # be loaded; benchmarks/ measures speed).
    res = run([r, r.model_copy(update={"id": "again"})], events=evs)
    assert not res.findings
    assert len(res.warnings) == 2 and all("timed out" in w for w in res.warnings)
    assert all("timed out" in r.reason for r in res.ruled_out)


def test_evaluation_never_raises_on_odd_values() -> None:
    evs = [event("hang_detected", 0, seq=["not", "a", "number"], timeout_ms="soon")]
    where = {"seq": {"gt": 1}, "timeout_ms": {"lt": 5}}
    r = rule(match={"all": [{"event": "hang_detected", "where": where}]},
             culprits=None, explanation="x")
    res = run([r], events=evs)
    assert not res.findings and res.ruled_out


def test_describe_condition() -> None:
    r = rule(match={"all": [{"fact": "pg_enqueue_lag", "where": {"lag": {"gte": 1}, "pg": "0"},
                             "ranks": {"min": 1, "max_fraction": 0.5}, "bind": "laggards"}]},
             culprits={"from": "laggards"}, explanation="x")
    assert describe_condition(r.match.all[0]) == (
        "fact pg_enqueue_lag where lag >= 1 and pg = '0', on at least 1 rank(s) and at most 50% of ranks "
        "(bound as 'laggards')")


def test_to_dict_is_plain_and_sorted() -> None:
    res = run([rule()], facts={"rank_status": STATUS}, ranks=[0, 1, 2, 3])
    doc = res.to_dict()
    assert doc["verdict"]["category"] == "rank_crash"
    assert doc["findings"][0]["culprit_ranks"] == [1]
    assert doc["findings"][0]["explanation"] == "ranks 1"


def test_nccl_warn_is_failure_evidence_but_benign_warnings_are_not() -> None:
    warned = run([], ranks=[0, 1],
                 events=[event("nccl_warn", 0, message="Bootstrap : no socket interface found")])
    assert warned.verdict.category is Category.UNKNOWN
    benign = run([], ranks=[0, 1], events=[event("nccl_warn", 0, message="Failed to open libibverbs.so[.1]")])
    assert benign.verdict.category is Category.NONE


def test_retried_store_connect_is_no_failure_once_the_job_progressed() -> None:
    retry = event("store_error", 0, op="connect", errno=99, level="W")
    outlived = run([], ranks=[0, 1], events=[retry, event("progress", 0, line=4, step=200)])
    assert outlived.verdict.category is Category.NONE
    stuck = run([], ranks=[0, 1], events=[retry])
    assert stuck.verdict.category is Category.UNKNOWN
    timed_out = run([], ranks=[0, 1], events=[event("store_error", 0, op="connect", error="timed out"),
                                               event("progress", 0, line=4, step=200)])
    assert timed_out.verdict.category is Category.UNKNOWN


def test_by_host_culprits_stand_for_every_rank_on_a_rows_host() -> None:
    """`culprits: {by_host: true}`: a row naming host b2 but no rank gives every rank put on b2, a row of
    rank 5 every rank on rank 5's host; without the option the rankless row names nobody."""
    evs = [event("exception", None, line=3, host="b2.cluster", exc_type="RuntimeError"),
           event("exception", 5, line=4, host="b3", exc_type="RuntimeError")]
    hosts = {0: "b1", 1: "b1", 2: "b2", 3: "b2", 4: "b3", 5: "b3"}
    match = {"all": [{"event": "exception", "bind": "raised"}]}
    by_host = rule(match=match, culprits={"from": "raised", "by_host": True},
                   explanation="{{ culprit_ranks | rank_list }}")
    f = run([by_host], events=evs, hosts=hosts).findings[0]
    assert f.culprit_ranks == (2, 3, 4, 5) and f.culprit_hosts == ("b2", "b3")
    plain = rule(match=match, culprits={"from": "raised"}, explanation="x")
    assert run([plain], events=evs, hosts=hosts).findings[0].culprit_ranks == (5,)
    assert run([by_host], events=evs[:1]).findings[0].culprit_ranks == ()   # no layout: no ranks


def test_by_host_culprit_without_a_host_gets_its_nodes_block_of_ranks() -> None:
    """A row's rank whose host no line names, in a job whose launcher states 4 workers per node, stands
    for the node's consecutive block (torchrun: group_rank * nproc_per_node + local_rank); unstated, only
    itself."""
    evs = [event("exception", 9, line=4, exc_type="RuntimeError")]
    by_host = rule(match={"all": [{"event": "exception", "bind": "raised"}]},
                   culprits={"from": "raised", "by_host": True}, explanation="x")
    facts = {name: fact(name) for name in FACT_SPECS}
    stated = FakeTables(evs, facts, 12, [], {}, nproc_per_node=4)
    assert evaluate([by_host], stated, catalog=CATALOG).findings[0].culprit_ranks == (8, 9, 10, 11)
    unstated = FakeTables(evs, facts, 12, [], {})
    assert evaluate([by_host], unstated, catalog=CATALOG).findings[0].culprit_ranks == (9,)


def test_by_host_culprit_on_a_named_host_gets_the_block_its_known_ranks_lie_in() -> None:
    """Host node-a's known ranks 0 and 1 lie in one block of 4 (torchrun: group_rank * nproc_per_node +
    local_rank, log-formats.md section 3.5): ranks 2 and 3 are node-a's too; known ranks in two blocks
    (a host layout that is not torchrun's) add nothing."""
    evs = [event("nccl_warn", 0, line=1, host="node-a", message="x")]
    by_host = rule(match={"all": [{"event": "nccl_warn", "bind": "bad"}]},
                   culprits={"from": "bad", "by_host": True}, explanation="x")
    facts = {name: fact(name) for name in FACT_SPECS}
    one = FakeTables(evs, facts, 8, [], {0: "node-a", 1: "node-a", 4: "node-b"}, nproc_per_node=4)
    assert evaluate([by_host], one, catalog=CATALOG).findings[0].culprit_ranks == (0, 1, 2, 3)
    split = FakeTables(evs, facts, 8, [], {0: "node-a", 5: "node-a"}, nproc_per_node=4)
    assert evaluate([by_host], split, catalog=CATALOG).findings[0].culprit_ranks == (0, 5)


def test_culprits_also_join_the_ranks_of_further_bindings() -> None:
    """`culprits: {from: warn, also: [own]}`: the ranks of both bindings, each row's host expanded with
    `by_host`; a listed binding whose condition matched no row (`count: {min: 0}`) adds nobody."""
    evs = [event("nccl_warn", None, line=1, host="c9", message="x"),
           event("nccl_error", 1, line=2, last_error="x"), event("nccl_error", 3, line=3, last_error="x")]
    hosts = {0: "c9", 1: "c9", 3: "d1"}
    own = {"event": "nccl_error", "where": {"last_error": "x"}, "count": {"min": 0}, "bind": "own"}
    match = {"all": [{"event": "nccl_warn", "bind": "warn"}, own]}
    both = rule(match=match, culprits={"from": "warn", "also": ["own"], "by_host": True}, explanation="x")
    assert run([both], events=evs, hosts=hosts).findings[0].culprit_ranks == (0, 1, 3)
    assert run([both], events=evs[:1], hosts=hosts).findings[0].culprit_ranks == (0, 1)
    alone = rule(match=match, culprits={"from": "warn", "by_host": True}, explanation="x")
    assert run([alone], events=evs, hosts=hosts).findings[0].culprit_ranks == (0, 1)


def test_a_none_verdict_says_the_worker_group_was_restarted_from_the_file_list() -> None:
    """A `--log-dir` tree's `attempt_1` folder is read from the inputs, also one whose files hold no event."""
    from dataclasses import dataclass, field

    from hanglens.model import InputFile, Origin

    @dataclass
    class WithFiles:
        events: list[Any] = field(default_factory=list)
        tables: dict[str, Any] = field(default_factory=dict)
        world_size: int | None = None
        ranks: list[int] = field(default_factory=list)
        hosts: dict[int, str] = field(default_factory=dict)
        files: list[InputFile] = field(default_factory=list)

    base = tables(ranks=[0, 1])
    files = [InputFile("logs/run_x/attempt_1/0/stderr.log", 10, 1, Origin(local_rank=0, attempt=1))]
    restarted = evaluate([], WithFiles(base.events, base.tables, None, [0, 1], {}, files))
    assert restarted.verdict.category is Category.NONE and "restarted" in restarted.verdict.summary
    first = [InputFile("logs/run_x/attempt_0/0/stderr.log", 10, 1, Origin(local_rank=0, attempt=0))]
    once = evaluate([], WithFiles(base.events, base.tables, None, [0, 1], {}, first))
    assert "restarted" not in once.verdict.summary


def test_a_log_cut_inside_a_running_bar_is_no_none_verdict() -> None:
    cut = {"rank": None, "last_step": 0, "total": 14, "bar_cut": True, "path": "nohup.out", "line": 5}
    res = run([], ranks=[0, 1, 2], facts={"silent_hang": [cut]})
    assert (res.verdict.category, res.verdict.confidence) == (Category.UNKNOWN, Confidence.LOW)
    assert "step 0 of 14 (nohup.out:5)" in res.verdict.summary and "py-spy" in res.verdict.first_step
    whole = run([], ranks=[0, 1, 2], facts={"silent_hang": [{**cut, "bar_cut": False}]})
    assert whole.verdict.category is Category.NONE


def test_a_none_verdict_counts_the_ranks_that_wrote(tmp_path: Any) -> None:
    # ranks 0 and 2 of an excerpt wrote lines (rank 1 is not in it): the healthy verdict says two ranks, not
    # the three up to the highest one named
    from hanglens import api

    for r in (0, 2):
        (tmp_path / f"rank{r}.log").write_text("".join(f"[rank{r}]: step {s} loss 0.{s}\n" for s in range(5)))
    res = api.analyze([tmp_path]).result
    assert res.verdict.category is Category.NONE
    assert "the logs of 2 ranks" in res.verdict.summary


def test_logs_that_stop_inside_a_logged_loop_are_no_none_verdict(tmp_path: Any) -> None:
    # every rank logs every second step of six and stops at step 2 with no error, no stop and no finish line
    # (a job killed from outside by a launcher that prints nothing): the loop never ended
    from hanglens import api

    for r in range(3):
        (tmp_path / f"rank{r}.log").write_text(
            "".join(f"[rank{r}]: epoch 0 step {s}/6 loss 0.{s}1\n" for s in (0, 2)))
    res = api.analyze([tmp_path]).result
    assert (res.verdict.category, res.verdict.confidence) == (Category.UNKNOWN, Confidence.LOW)
    assert "step 2 of 6, logged every 2 steps" in res.verdict.summary
    # the same loop that printed its last report of the epoch (step 4) may have ended: still `none`
    for r in range(3):
        (tmp_path / f"rank{r}.log").write_text(
            "".join(f"[rank{r}]: epoch 0 step {s}/6 loss 0.{s}1\n" for s in (0, 2, 4)))
    assert api.analyze([tmp_path]).result.verdict.category is Category.NONE


def test_a_follow_up_attempt_yields_to_the_earlier_attempts_failure() -> None:
    # torchrun restarted the group after rank 1 raised in attempt 0; attempt 1 failed in init (a store split)
    # before any step: the finding that cites attempt 0's line goes first (status.restarts)
    from types import SimpleNamespace

    from hanglens.engine.evaluate import Evidence, Finding, _follow_up_last
    from hanglens.model import Event, SourceRef

    def finding(rule_id: str, category: Category, culprits: tuple[int, ...], *lines: int) -> Finding:
        ev = tuple(Evidence("console.log", n, None, None, None, "x") for n in lines)
        return Finding(rule_id, category, Confidence.MEDIUM, rule_id, "", culprits, (), (), (), (), None, ev)

    evs = [Event("exception", SourceRef("console.log", 10), attempt=0),
           Event("exception", SourceRef("console.log", 40), attempt=1),
           Event("exception", SourceRef("console.log", 41), attempt=1)]
    store = finding("store-split", Category.RENDEZVOUS_FAILURE, (0,), 40, 41)
    crash = finding("crash-first", Category.RANK_CRASH, (1,), 10, 41)
    follow = SimpleNamespace(events=evs, followup_attempt=1)
    assert [f.rule_id for f in _follow_up_last([store, crash], follow)] == ["crash-first", "store-split"]
    # no follow-up (one attempt, or the last attempt trained): the order stands
    alone = SimpleNamespace(events=evs, followup_attempt=None)
    assert _follow_up_last([store, crash], alone) == [store, crash]
    # a finding of the last attempt only, or one naming nobody, is not moved
    nobody = finding("nobody", Category.CONTROL_FLOW_DIVERGENCE, (), 10)
    assert _follow_up_last([store, nobody], follow) == [store, nobody]


def test_followup_attempt_is_the_last_attempt_that_failed_before_training() -> None:
    from hanglens.analysis.status import restarts
    from hanglens.model import Event, SourceRef

    def ev(kind: str, line: int, attempt: int, **fields: Any) -> Event:
        return Event(kind, SourceRef("console.log", line), text=f"{kind} {fields}", rank=1, attempt=attempt,
                     fields=fields)

    crash = ev("exception", 10, 0, exc_type="ValueError", message="shard 3: expected 128 records")
    trained = [ev("progress", 1, 0, step=1), crash]
    store = ev("exception", 40, 1, exc_type="torch.distributed.DistStoreError", message="wait timeout")
    assert restarts([*trained, store]).followup == 1
    # the last attempt trained before it failed: its failure is its own
    assert restarts([*trained, ev("progress", 30, 1, step=1), store]).followup is None
    # one attempt: nothing to follow
    assert restarts(trained).followup is None
