"""One torchrun agent per node: a node's console read together with its workers' `--log-dir` files, and a
node's workers that their own agent stopped together.

The logs are written here from log-formats.md section 3.5 (torch 2.5+ agent lines: `Sending process <pid>
closing signal SIGTERM`), section 3.7 (TCPStore client errors, `RendezvousConnectionError`) and section 3.1
(`--log-dir` tree `<run_id>_<rand>/attempt_<n>/<local_rank>/stderr.log`), with values of our own; the shapes
are those of the real probe58 runs (tests/written_cases/r58-*).
"""

from __future__ import annotations

from pathlib import Path

from hanglens import api

STORE_LOST = """\
[W1206 06:01:32.788835399 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=4, addr=[::ffff:10.0.0.2]:50904, remote=[::ffff:10.0.0.1]:29400): Connection reset by peer
W1206 06:01:32.899000 16392 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 16428 closing signal SIGTERM
W1206 06:01:32.917000 16392 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 16430 closing signal SIGTERM
torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.
"""  # noqa: E501


def _steps(node: str, rank: int, last: int) -> str:
    head = f"2026-12-06 06:01:25,700 INFO [{node}][rank {rank}/4]"
    return (f"{head} started on {node}: global rank {rank} of 4, local rank {rank % 2}, restart 0\n"
            + "".join(f"2026-12-06 06:01:3{s},100 INFO [{node}][rank {rank}/4] step {s}/12 loss 0.2{s}00\n"
                      for s in range(1, last + 1)))


def _logdir(root: Path, node: str, ranks: tuple[int, int]) -> None:
    for local, rank in enumerate(ranks):
        d = root / node / "logs" / "job_ab12cd34" / "attempt_0" / str(local)
        d.mkdir(parents=True)
        (d / "stderr.log").write_text(_steps(node, rank, 4))


def test_the_store_host_killed_with_logdir_trees_is_named(tmp_path: Path) -> None:
    # gpu-a01 (ranks 0-1, the store's host) is killed: its files stop at step 4; gpu-a02's agent console
    # has no step line of its own, its workers' files sit beside it under the same host folder
    _logdir(tmp_path, "gpu-a01", (0, 1))
    _logdir(tmp_path, "gpu-a02", (2, 3))
    (tmp_path / "gpu-a01" / "console.log").write_text("")
    (tmp_path / "gpu-a02" / "console.log").write_text(STORE_LOST)
    a = api.analyze([tmp_path])
    gone = a.tables.fact("vanished_stream")
    assert sorted(gone["rank"]) == [0, 1]
    assert set(gone["lost"]) == {"store"}
    assert a.result.verdict.rule_id == "store-host-node-vanished-mid-run"
    assert list(a.result.verdict.culprit_ranks) == [0, 1]


def test_files_of_one_host_alone_name_nobody(tmp_path: Path) -> None:
    # every file is the reporting node's: nobody went silent elsewhere
    _logdir(tmp_path, "gpu-a02", (2, 3))
    (tmp_path / "gpu-a02" / "console.log").write_text(STORE_LOST)
    assert api.analyze([tmp_path]).tables.fact("vanished_stream").empty


SURVIVOR = _steps("gpu-a02", 2, 4) + _steps("gpu-a02", 3, 4) + """\
[rank3]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.1]:13208
""" + STORE_LOST  # noqa: E501


def test_a_rank_its_agent_stopped_with_the_others_is_not_the_peer_that_died(tmp_path: Path) -> None:
    # only the surviving node's console: both of its workers got the agent's SIGTERM after it lost the store
    (tmp_path / "gpu-a02.log").write_text(SURVIVOR)
    a = api.analyze([tmp_path])
    status = a.tables.fact("rank_status").set_index("rank")
    assert bool(status.loc[2, "stopped_by_agent"])
    assert a.result.verdict.category.value == "rank_crash"
    assert 2 not in list(a.result.verdict.culprit_ranks)


def test_one_signal_short_of_the_node_s_ranks_is_not_a_stop_of_all(tmp_path: Path) -> None:
    # one closing signal for two ranks: one worker had died first and got none
    text = SURVIVOR.replace(
        "W1206 06:01:32.917000 16392 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
        "16430 closing signal SIGTERM\n", "")
    (tmp_path / "gpu-a02.log").write_text(text)
    status = api.analyze([tmp_path]).tables.fact("rank_status")
    assert not status["stopped_by_agent"].any()
