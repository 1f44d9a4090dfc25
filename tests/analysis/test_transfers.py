"""Size errors on a transfer: the receiver that aborts, the sender behind the peer address or in a send."""

from __future__ import annotations

from typing import Any

from hanglens.analysis.build import build
from hanglens.model import Event, SourceRef

_n = iter(range(1, 1000))
TRUNC = ("NET/Socket : peer {ip}<40991> message truncated : receiving 5242880 bytes instead of 4194304. "
         "If you believe your socket network is in a healthy state, there may be a mismatch in collective "
         "sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks")


def ev(kind: str, rank: int | None, host: str | None = None, **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef("job.log", next(_n)), text=kind, parser="test", rank=rank,
                 host=host, fields=fields)


def boot(rank: int, host: str, ip: str) -> Event:
    return ev("nccl_bootstrap", rank, host, iface="ib0", ip=ip, pid=100 + rank, nccl_host=host)


def rows(evs: list[Event]) -> list[dict[str, Any]]:
    return list(build(evs).fact("transfer_size_error").to_dict(orient="records"))


def test_truncation_names_the_one_rank_behind_the_address_with_a_p2p_op() -> None:
    evs = [boot(0, "n1", "10.2.0.1"), boot(1, "n1", "10.2.0.1"), boot(2, "n2", "10.2.0.2"),
           ev("hang_detected", 1, "n1", detector="watchdog", op="SEND", seq=40, timeout_ms=600000),
           ev("hang_detected", 0, "n1", detector="watchdog", op="ALLREDUCE", seq=40, timeout_ms=600000),
           ev("nccl_warn", 2, "n2", message=TRUNC.format(ip="10.2.0.1"), nccl_host="n2")]
    got = {r["role"]: r for r in rows(evs)}
    assert got["receiver"]["rank"] == 2 and got["receiver"]["peer"] == 1
    assert got["sender"]["rank"] == 1 and got["sender"]["p2p"]
    assert (got["sender"]["remote_bytes"], got["sender"]["local_bytes"]) == (5242880, 4194304)


def test_truncation_with_two_candidates_and_no_p2p_names_no_sender() -> None:
    evs = [boot(0, "n1", "10.2.0.1"), boot(1, "n1", "10.2.0.1"), boot(2, "n2", "10.2.0.2"),
           ev("nccl_warn", 2, "n2", message=TRUNC.format(ip="10.2.0.1"), nccl_host="n2")]
    got = rows(evs)
    assert [(r["role"], r["peer"], r["p2p"]) for r in got] == [("receiver", None, False)]


def test_gloo_size_check_on_a_receiver_in_recv_names_the_rank_in_send() -> None:
    c10d = "/opt/py/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py"
    send = ev("exception", 3, exc_type="RuntimeError", message="Connection reset by peer",
              frames=["/srv/pp.py:10 in <module>", "/srv/pp.py:30 in stage", f"{c10d}:2100 in send"],
              sources=["stage()", "dist.send(x, dst=4)", "work.wait()"])
    recv = ev("stack_dump", 4, thread=None, main=True,
              frames=["/srv/pp.py:10 in <module>", "/srv/pp.py:24 in stage", f"{c10d}:2150 in recv"])
    abort = ev("process_teardown", 4, error="[enforce fail at pair.cc:446] op.preamble.length <= op.nbytes. "
               "640 vs 512. Received data size doesn't match expected size.")
    got = {r["role"]: r for r in rows([send, recv, abort])}
    assert got["receiver"]["rank"] == 4 and got["sender"]["rank"] == 3
    assert got["sender"]["p2p"] and got["sender"]["line"] == send.ref.line


def test_gloo_size_check_in_a_collective_is_not_point_to_point() -> None:
    abort = ev("process_teardown", 1, error="op.preamble.length <= op.nbytes. 24 vs 20.")
    assert [(r["role"], r["p2p"]) for r in rows([abort])] == [("receiver", False)]


SIZE_CHECK = ("[enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. 48 vs 44. Received data size "
              "doesn't match expected size.")
C10D = "/opt/py/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def in_all_reduce(rank: int) -> Event:
    return ev("exception", rank, exc_type="RuntimeError", message="Connection reset by peer",
              frames=["/srv/train.py:40 in <module>", f"{C10D}:2800 in all_reduce"],
              sources=["dist.all_reduce(grads)", "work.wait()"])


def world(n: int) -> list[Event]:
    return [ev("world_info", r, world_size=n, global_rank=r) for r in range(n)]


def test_gloo_collective_size_check_names_both_ends_of_the_ring() -> None:
    evs = [*world(4), in_all_reduce(0), in_all_reduce(1), in_all_reduce(2),
           ev("process_teardown", 3, error=SIZE_CHECK)]
    got = {r["role"]: r for r in rows(evs)}
    assert got["receiver"]["rank"] == 3 and got["sender"]["rank"] == 0  # ring: 3 receives from (3 + 1) % 4
    assert not got["sender"]["p2p"] and not got["sender"]["odd"] and not got["receiver"]["odd"]


def test_gloo_all_gather_receives_from_the_rank_below() -> None:
    gather = [ev("exception", r, exc_type="RuntimeError", message="Connection reset by peer",
                 frames=["/srv/train.py:52 in <module>", f"{C10D}:4280 in all_gather"],
                 sources=["dist.all_gather(out, t)", "work.wait()"]) for r in (1, 2, 3)]
    abort = ev("process_teardown", 0, error=SIZE_CHECK)
    got = {r["role"]: r["rank"] for r in rows([*world(4), *gather, abort])}
    assert got == {"receiver": 0, "sender": 3}


def test_gloo_size_check_in_another_collective_names_no_sender_beyond_two_ranks() -> None:
    bcast = ev("exception", 0, exc_type="RuntimeError", message="Connection reset by peer",
               frames=["/srv/train.py:40 in <module>", f"{C10D}:2400 in broadcast"],
               sources=["dist.broadcast(t, src=0)", "work.wait()"])
    got = rows([*world(4), bcast, ev("process_teardown", 2, error=SIZE_CHECK)])
    assert [(r["role"], r["rank"]) for r in got] == [("receiver", 2)]


def test_gloo_size_check_in_two_ranks_names_the_other_rank_whatever_the_call() -> None:
    got = {r["role"]: r["rank"] for r in rows([*world(2), ev("process_teardown", 0, error=SIZE_CHECK)])}
    assert got == {"receiver": 0, "sender": 1}


def test_unranked_size_check_is_the_rank_that_died_of_sigabrt() -> None:
    failed = ev("worker_failed", 2, exitcode=-6, local_rank=2, signal="SIGABRT")
    got = {r["role"]: r["rank"] for r in rows([*world(4), in_all_reduce(0), in_all_reduce(1), failed,
                                               ev("process_teardown", None, error=SIZE_CHECK)])}
    assert got == {"receiver": 2, "sender": 3}


def test_as_many_unranked_size_checks_as_sigabrt_ranks_are_theirs_one_each() -> None:
    # a plain console: each aborting process prints its own `what():` unprefixed (two ranks of four)
    failed = [ev("worker_failed", r, exitcode=-6, local_rank=r, signal="SIGABRT") for r in (0, 1)]
    checks = [ev("process_teardown", None, error=SIZE_CHECK) for _ in range(2)]
    got = rows([*world(4), *failed, *checks])
    assert sorted(r["rank"] for r in got if r["role"] == "receiver") == [0, 1]


def test_unranked_size_checks_not_matching_the_aborted_ranks_stay_unattributed() -> None:
    failed = [ev("worker_failed", r, exitcode=-6, local_rank=r, signal="SIGABRT") for r in (0, 1)]
    one = [ev("process_teardown", None, error=SIZE_CHECK)]
    other = SIZE_CHECK.replace(SIZE_CHECK.split("op.nbytes. ")[1].split(".")[0], "96 vs 8")
    assert not rows([*world(4), *failed, *one])  # one line for two aborted ranks: whose is unknown
    assert not rows([*world(4), *failed, *one, ev("process_teardown", None, error=other)])


def test_recorded_sizes_of_a_majority_name_the_odd_end() -> None:
    from hanglens.analysis.transfers import _odd_end

    sizes = {0: "ALLREDUCE [[90]] Float", 2: "ALLREDUCE [[90]] Float", 3: "ALLREDUCE [[90]] Float"}
    said = "its sender posted what 3 of 4 ranks posted (ALLREDUCE [[90]] Float)"
    assert _odd_end(1, 2, sizes, 4) == (1, said)
    assert _odd_end(1, 2, {**sizes, 2: "ALLREDUCE [[92]] Float"}, 4) is None  # 2 of 4 is no majority
    said = "its receiver posted what 3 of 4 ranks posted (a)"
    assert _odd_end(1, 2, {0: "a", 1: "a", 3: "a"}, 4) == (2, said)


def recv_stack(rank: int, call: str) -> Event:
    return ev("exception", rank, exc_type="RuntimeError",
              message="Timed out waiting 600000ms for recv operation to complete",
              frames=["/srv/pp.py:12 in <module>", "/srv/pp.py:50 in stage", f"{C10D}:2500 in recv"],
              sources=["main()", call, "work.wait()"])


def waits(evs: list[Event]) -> list[tuple[int, int, bool]]:
    got = build(evs).fact("recv_wait").to_dict(orient="records")
    return [(r["rank"], r["src"], r["src_waits"]) for r in got]


def test_recv_source_is_read_from_the_receivers_own_call() -> None:
    call = "dist.recv(h, src=rank - 1)"
    evs = [*world(4), recv_stack(2, call), recv_stack(3, call), in_all_reduce(0), in_all_reduce(1)]
    assert waits(evs) == [(2, 1, False), (3, 2, True)]


def test_recv_source_literal_positional_and_unreadable() -> None:
    evs = [*world(4), recv_stack(1, "dist.recv(scores, 0)"), recv_stack(3, "dist.recv(h, src=self.prev)"),
           in_all_reduce(0)]
    assert waits(evs) == [(1, 0, False)]


def test_recv_source_in_two_ranks_is_the_other_rank() -> None:
    assert waits([*world(2), recv_stack(1, "comm.recv_next(h)"), in_all_reduce(0)]) == [(1, 0, False)]


AUTOGRAD = "/opt/py/lib/python3.11/site-packages/torch/autograd/__init__.py"


def in_backward(rank: int) -> Event:
    return ev("exception", rank, exc_type="RuntimeError", message="Connection closed by peer [10.1.1.4]:5120",
              frames=["/srv/train.py:77 in <module>", f"{AUTOGRAD}:251 in backward"],
              sources=["loss.backward()", "_engine_run_backward("])


def split(evs: list[Event]) -> dict[int, tuple[bool, bool]]:
    got = build(evs).fact("gradient_sync_split").to_dict(orient="records")
    return {r["rank"]: (r["in_sync"], r["minority"]) for r in got}


def test_receiver_of_a_gradient_bucket_was_outside_the_sync_and_alone() -> None:
    # rank 1 rejects what rank 2 (in backward) sent: the bucket is the same size everywhere, so rank 1 is
    # the one in another collective; ranks 0 and 2 in backward are two against one.
    evs = [*world(3), in_backward(0), in_backward(2), ev("process_teardown", 1, error=SIZE_CHECK)]
    assert split(evs) == {0: (True, False), 1: (False, True), 2: (True, False)}


def test_a_rank_alone_in_backward_is_the_minority() -> None:
    evs = [*world(3), in_all_reduce(0), in_backward(2), ev("process_teardown", 1, error=SIZE_CHECK)]
    assert split(evs) == {0: (False, False), 1: (False, False), 2: (True, True)}


def test_two_ranks_have_no_minority_and_a_plain_sender_no_split() -> None:
    assert split([*world(2), in_backward(1), ev("process_teardown", 0, error=SIZE_CHECK)]) == {
        0: (False, False), 1: (True, False)}
    assert split([*world(3), in_all_reduce(0), in_all_reduce(2),
                  ev("process_teardown", 1, error=SIZE_CHECK)]) == {}


def p2p_stack(rank: int, call: str, line: int, func: str = "stage", op: str = "recv") -> Event:
    return ev("exception", rank, exc_type="RuntimeError",
              message=f"Timed out waiting 600000ms for {op} operation to complete",
              frames=["/srv/pp.py:12 in <module>", f"/srv/pp.py:{line} in {func}", f"{C10D}:2500 in {op}"],
              sources=["main()", call, "work.wait()"])


def pairs(evs: list[Event]) -> list[tuple[int, str, int, bool, bool, bool]]:
    got = build(evs).fact("recv_wait").to_dict(orient="records")
    return [(r["rank"], r["op"], r["src"], r["src_waits"], r["mutual"], r["ahead"]) for r in got]


def test_src_expression_in_any_case_but_never_local_rank() -> None:
    evs = [*world(4), recv_stack(1, "dist.recv(h, src=RANK - 1)"),
           recv_stack(2, "dist.recv(h, src=local_rank - 1)"),
           recv_stack(3, "dist.recv(h, src=self.global_rank - 1)"), in_all_reduce(0)]
    assert waits(evs) == [(1, 0, False), (3, 2, True)]


def test_sender_waits_for_its_destination_read_from_nested_call() -> None:
    evs = [*world(4), p2p_stack(2, "dist.send(out.detach().contiguous(), dst=rank + 1)", 60, op="send"),
           recv_stack(1, "dist.recv(g, src=rank + 1)"), in_all_reduce(3)]
    assert pairs(evs) == [(1, "recv", 2, True, False, False), (2, "send", 3, False, False, False)]


def test_mutual_receivers_in_one_function_the_later_line_is_ahead() -> None:
    evs = [*world(2), p2p_stack(0, "dist.recv(g, src=rank + 1)", 80),
           p2p_stack(1, "dist.recv(x, src=rank - 1)", 60)]
    assert pairs(evs) == [(0, "recv", 1, True, True, True), (1, "recv", 0, True, True, False)]
    other_function = [*world(2), p2p_stack(0, "dist.recv(g, src=1)", 80, func="backward_step"),
                      p2p_stack(1, "dist.recv(x, src=0)", 60, func="forward_step")]
    assert [p[-1] for p in pairs(other_function)] == [False, False]


def at(rank: int | None, line: int, source: str | None, kind: str = "exception") -> Event:
    """A rank's stack in all_reduce called from train.py:<line> (`source` None: a dump without source)."""
    frames = ["/srv/train.py:90 in <module>", f"/srv/train.py:{line} in fit", f"{C10D}:2800 in all_reduce"]
    if kind == "stack_dump":
        return ev("stack_dump", rank, frames=frames, main=True, trigger="Aborted", dumper="faulthandler")
    return ev("exception", rank, exc_type="RuntimeError", message="Connection reset by peer", frames=frames,
              sources=["fit()", source or "", "work.wait()"])


def places(evs: list[Event]) -> dict[int, bool]:
    return {r["rank"]: r["elsewhere"] for r in rows(evs)}


def test_the_end_at_another_line_with_another_tensor_went_elsewhere() -> None:
    # rank 1 rejects its ring sender rank 2's message; rank 2 all-reduces another tensor after its loop,
    # rank 0 and rank 3 (outside the transfer) are in the step's gradient all_reduce.
    evs = [*world(4), at(0, 40, "dist.all_reduce(grads)"), at(3, 40, "dist.all_reduce(grads)"),
           at(2, 60, "dist.all_reduce(hits)"), ev("process_teardown", 1, error=SIZE_CHECK)]
    assert places(evs) == {1: False, 2: True}


def test_the_same_tensor_from_another_line_is_one_call() -> None:
    evs = [*world(4), at(0, 40, "dist.all_reduce(grads)"), at(2, 44, "dist.all_reduce(grads.double())"),
           ev("process_teardown", 1, error=SIZE_CHECK)]
    assert places(evs) == {1: False, 2: False}


def test_a_place_without_source_decides_nothing() -> None:
    evs = [*world(4), at(0, 40, "dist.all_reduce(grads)"), at(2, 60, None),
           ev("process_teardown", 1, error=SIZE_CHECK)]
    assert places(evs) == {1: False, 2: False}


def test_an_unranked_crash_dump_is_the_aborted_ranks_stack() -> None:
    # torchrun saw local rank 1 die of SIGABRT; the one unranked `Fatal Python error: Aborted` stack is its.
    died = ev("child_failed", None, failed_rank=1, exitcode=-6, signal="SIGABRT", local_rank=1)
    evs = [*world(3), at(0, 40, "dist.all_reduce(grads)"), at(None, 60, None, kind="stack_dump"), died]
    calls = build(evs).fact("collective_call").to_dict(orient="records")
    assert {r["rank"]: r["user_frame"] for r in calls} == {0: "train.py:40 in fit", 1: "train.py:60 in fit"}


def test_a_world_size_only_the_programs_lines_state_counts_when_they_agree() -> None:
    from hanglens.analysis.build import world_size_of

    user = [ev("world_info", r, world_size=4, stated_by="user") for r in (0, 1)]
    assert world_size_of(user) == 4
    assert world_size_of([*user, ev("world_info", 1, world_size=2, stated_by="user")]) is None
    # an environment echo or a launcher's statement wins over the program's lines
    assert world_size_of([*user, ev("world_info", 1, world_size=8)]) == 8


def in_all_to_all(rank: int) -> Event:
    return ev("exception", rank, exc_type="RuntimeError", message="Connection reset by peer",
              frames=["/srv/rec.py:77 in lookup", f"{C10D}:5140 in all_to_all_single"],
              sources=["dist.all_to_all_single(out, ids, output_split_sizes=o, input_split_sizes=i)",
                       "work.wait()"])


def test_size_checks_on_every_rank_but_one_name_the_one_that_sent_to_all() -> None:
    # an all_to_all: rank 2 sends each peer more than it announced; 0, 1 and 3 abort, 2 is only reset
    checks = [ev("process_teardown", r, error=SIZE_CHECK) for r in (0, 1, 3)]
    got = rows([*world(4), *checks, in_all_to_all(2)])
    senders = {r["rank"] for r in got if r["role"] == "sender"}
    assert senders == {2} and all(r["odd"] for r in got if r["role"] == "sender")
    assert {r["peer"] for r in got if r["role"] == "receiver"} == {2}


def test_no_common_sender_without_its_own_output_or_with_two_ranks_left() -> None:
    checks = [ev("process_teardown", r, error=SIZE_CHECK) for r in (0, 1, 3)]
    stated = ev("world_info", 0, world_size=4, global_rank=0)
    assert not [r for r in rows([stated, *checks]) if r["role"] == "sender"]  # rank 2 said nothing
    two_left = [ev("process_teardown", r, error=SIZE_CHECK) for r in (0, 1)]
    got = rows([*world(5), *two_left, in_all_to_all(2), in_all_to_all(3)])
    assert not [r for r in got if r["role"] == "sender"]


def test_gloo_size_check_in_two_ranks_with_a_pipeline_wait_is_point_to_point_from_the_other_rank() -> None:
    # A pipelining schedule's wait names no direction (`_wait_batch_p2p(work)`, torch 2.13 schedules.py):
    # in a 2-rank job the message still came from the other rank, over a point-to-point transfer.
    pipe = "/opt/py/lib/python3.11/site-packages/torch/distributed/pipelining/schedules.py"
    stage0 = ev("exception", 0, exc_type="RuntimeError", message="Connection reset by peer",
                frames=["/srv/pp.py:93 in <module>", f"{pipe}:785 in step",
                        f"{pipe}:928 in _step_microbatches", f"{pipe}:683 in _wait_batch_p2p"],
                sources=["schedule.step(batch)", "self._step_microbatches(", "_wait_batch_p2p(work)",
                         "w.wait()"])
    got = {r["role"]: r for r in rows([*world(2), stage0, ev("process_teardown", 1, error=SIZE_CHECK)])}
    assert (got["receiver"]["rank"], got["sender"]["rank"]) == (1, 0)
    assert got["sender"]["p2p"] and got["receiver"]["p2p"]


def test_two_aborting_receivers_without_a_sender_are_not_told_as_both_ends() -> None:
    # gloo-size-check-failed's text: two receivers and no sender are not "both ends" of one transfer
    from pathlib import Path

    from hanglens import api

    case = "r42-async-dcp-on-training-group-two-ranks-abort-size-check-ws4"
    log = Path(__file__).parents[1] / "written_cases" / case / "console.log"
    doc = api.analyze([str(log)]).to_dict()
    assert doc["verdict"]["rule_id"] == "gloo-size-check-failed"
    text = " ".join(str(f.get("explanation")) for f in doc["findings"]
                    if f.get("rule_id") == "gloo-size-check-failed")
    assert "only the aborting ranks are listed" in text and "both ends" not in text
