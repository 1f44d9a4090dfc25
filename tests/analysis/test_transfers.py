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
