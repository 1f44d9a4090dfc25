"""IB completion errors that converge on one host even though that host's own ranks report errors toward
their peers (failure-signatures.md section 9, culprit rule 2: "many ranks report errors toward one host ->
that host"; rule 3: the host whose link failed sees errors toward every peer itself).

Per-host outputs written here from log-formats.md section 4.4 (NCCL 2.18-2.19 IB completion WARN with
`localGid`/`remoteGids`), section 4.3 (2.19 Init COMPLETE), section 4.1 (`Bootstrap : Using <if>:<ip>`),
values our own.
"""
# ruff: noqa: E501 - log lines stay whole, as NCCL and the launchers print them
from __future__ import annotations

from pathlib import Path

from hanglens import api


def _node(host: str, ip: str, ranks: tuple[int, int], errors: list[tuple[int, str]]) -> str:
    out = f"{host}:{ranks[0] + 500}:{ranks[0] + 500} [0] NCCL INFO Bootstrap : Using ib0:{ip}<0>\n"
    for i, r in enumerate(ranks):
        out += (f"{host}:{r + 500}:{r + 560} [{i}] NCCL INFO comm 0x55aa{r:08x} rank {r} nranks 6 cudaDev {i} "
                f"nvmlDev {i} busId {i + 1}8000 commId 0x5a1e0c77d2b4f390 - Init COMPLETE\n")
    for r, peer in errors:
        i = ranks.index(r)
        out += (f"\n{host}:{r + 500}:{r + 590} [{i}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
                f"from peer {peer}<5170{r}> with error 12, opcode 0, len 0, vendor err 129 (Send) "
                f"localGid ::ffff:{ip} remoteGids ::ffff:{peer}\n")
    return out


def _verdict(tmp_path: Path, b_errors: list[tuple[int, str]], c_errors: list[tuple[int, str]]) -> dict:
    (tmp_path / "node-a.out").write_text(_node("node-a", "10.9.0.1", (0, 1), [(0, "10.9.0.2"), (1, "10.9.0.2")]))
    (tmp_path / "node-b.out").write_text(_node("node-b", "10.9.0.2", (2, 3), b_errors))
    (tmp_path / "node-c.out").write_text(_node("node-c", "10.9.0.3", (4, 5), c_errors))
    return api.analyze([str(tmp_path)]).to_dict()["verdict"]


def test_errors_from_every_other_host_name_node_b_whose_own_ranks_name_their_peers(tmp_path: Path) -> None:
    v = _verdict(tmp_path, [(2, "10.9.0.1"), (3, "10.9.0.3")], [(5, "10.9.0.2")])
    assert (v["category"], v["rule_id"], v["culprit_ranks"]) == (
        "network_transport", "ib-errors-converge-on-peer", [2, 3])


def test_a_reporter_outside_the_peer_naming_another_host_breaks_the_convergence(tmp_path: Path) -> None:
    # node-c's rank 5 names node-a: the errors no longer single out one host
    v = _verdict(tmp_path, [(2, "10.9.0.1"), (3, "10.9.0.3")], [(5, "10.9.0.1")])
    assert v["rule_id"] != "ib-errors-converge-on-peer"
    assert v["culprit_ranks"] == []


def test_two_hosts_naming_each_other_single_out_neither(tmp_path: Path) -> None:
    (tmp_path / "node-a.out").write_text(_node("node-a", "10.9.0.1", (0, 1), [(0, "10.9.0.2"), (1, "10.9.0.2")]))
    (tmp_path / "node-b.out").write_text(_node("node-b", "10.9.0.2", (2, 3), [(2, "10.9.0.1"), (3, "10.9.0.1")]))
    v = api.analyze([str(tmp_path)]).to_dict()["verdict"]
    assert v["rule_id"] != "ib-errors-converge-on-peer"
    assert v["culprit_ranks"] == []
