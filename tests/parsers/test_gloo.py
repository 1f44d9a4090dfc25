"""Behaviour tests of the gloo parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.gloo import GlooParser

from .harness import events as read_events
from .harness import has

events = partial(read_events, [GlooParser])


def test_peer_closed_and_timeout_carry_exact_numbers() -> None:
    text = ("RuntimeError: [pair.cc:598] Connection closed by peer [fe80::1%eth0]:8594\nRuntimeError: "
            "[unbound_buffer.cc:81] Timed out waiting 600000ms for send operation to complete\n")
    found = events(text)
    assert [(e.kind, e.get("peer"), e.get("port")) for e in found if e.kind == "peer_closed"] == [
        ("peer_closed", "fe80::1%eth0", 8594)]
    hangs = [(e.get("timeout_ms"), e.get("io")) for e in found if e.kind == "hang_detected"]
    assert hangs == [(600000, "send")]


def test_connect_full_mesh_names_the_inner_peer() -> None:
    text = "RuntimeError: Gloo connectFullMesh failed with [pair.cc:210] Connect timeout [10.0.0.5]:41000"
    found = events(text)
    assert has([e for e in found if e.kind == "gloo_error"], {"peer": "10.0.0.5", "port": 41000})
    assert has([e for e in found if e.kind == "network_error"], {"error": "connect_timeout"})


def test_loopback_fallback_is_a_warning_not_a_failure() -> None:
    # log-formats.md section 7: ProcessGroupGloo's W line; a one-host job runs fine on 127.0.0.1, and a job
    # across hosts fails with a connect line of its own.
    from hanglens.analysis.kinds import FAILURE_KINDS

    text = ("[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. "
            "Using the loopback address as fallback. Manually set the network interface to bind to with "
            "GLOO_SOCKET_IFNAME. (function operator())\n")
    found = events(text)
    assert [e.kind for e in found] == ["gloo_warning"]
    assert found[0].get("warning") == "loopback_fallback"
    assert "gloo_warning" not in FAILURE_KINDS


def test_work_wait_timeout_is_a_blocking_wait_hang() -> None:
    # c10d Work::wait(timeout) (torch/csrc/distributed/c10d/Work.cpp): `work.wait(timeout=...)` on an async
    # gloo collective that did not finish in time raises `Operation timed out!` on the waiting rank.
    text = ("[rank3]:     work.wait(timeout=datetime.timedelta(seconds=15))\n"
            "[rank3]: RuntimeError: Operation timed out!\n")
    hangs = [e for e in events(text) if e.kind == "hang_detected"]
    assert [(e.get("detector"), e.rank) for e in hangs] == [("blocking_wait", 3)]
    # another tool's timeout with more after it is not a collective's
    other = events("ConnectTimeout: Operation timed out! giving up\n")
    assert not [e for e in other if e.kind == "hang_detected"]
