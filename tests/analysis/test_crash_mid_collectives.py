"""A rank's own exception tears its peers out of whatever collective each was in: no divergence."""
# ruff: noqa: E501 - console lines stay whole, as torchrun prints them

from __future__ import annotations

from pathlib import Path

from hanglens import api

# A 2-D (dp x tp) job on gloo, written here from log-formats.md sections 3.5-3.6 (2.4+ `[rankN]:` prefixes)
# and failure-signatures.md section 6 (a Python exception on one rank; its peers' collectives fail with a lost
# peer) and section 17: rank 5 raises; ranks of its tp group are in the tp metric all_reduce, a rank of
# another replica is in FSDP's all-gather on the dp group. Nobody timed out: every peer error is a closed
# connection, so the different calls are where each rank happened to be, not ranks blocked on each other.
_STACK_AG = """\
[rank{r}]: Traceback (most recent call last):
[rank{r}]:   File "/home/user/job/fit2d.py", line 131, in <module>
[rank{r}]:     logits = net(batch)
[rank{r}]:   File "/home/user/venv/lib/python3.12/site-packages/torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", line 119, in __call__
[rank{r}]:     return dist.all_gather_single(
[rank{r}]:   File "/home/user/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 4402, in all_gather_single
[rank{r}]:     work.wait()
[rank{r}]: RuntimeError: [/build/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:{port}.
"""
_STACK_AR = """\
[rank{r}]: Traceback (most recent call last):
[rank{r}]:   File "/home/user/job/fit2d.py", line 140, in <module>
[rank{r}]:     dist.all_reduce(metric, group=tp_pg)
[rank{r}]:   File "/home/user/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line 3260, in all_reduce
[rank{r}]:     work.wait()
[rank{r}]: RuntimeError: [/build/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:{port}.
"""
_CRASH = """\
[rank5]: Traceback (most recent call last):
[rank5]:   File "/home/user/job/fit2d.py", line 136, in <module>
[rank5]:     check_batch(batch)
[rank5]: ValueError: token ids out of range in shard 2
"""


def _console(ag_ranks: list[int], ar_ranks: list[int], failure: str) -> str:
    out = ["step 7 loss 1.204"]
    out.append(_CRASH)
    for r in ag_ranks:
        out.append(_STACK_AG.format(r=r, port=40100 + r).replace("Connection closed by peer [127.0.0.1]:" + str(40100 + r) + ".", failure.format(port=40100 + r)))
    for r in ar_ranks:
        out.append(_STACK_AR.format(r=r, port=40100 + r).replace("Connection closed by peer [127.0.0.1]:" + str(40100 + r) + ".", failure.format(port=40100 + r)))
    return "\n".join(out)


LOST = "Connection closed by peer [127.0.0.1]:{port}."
TIMED_OUT = "Timed out waiting 20000ms for recv operation to complete"


def _verdict(tmp_path: Path, text: str) -> dict:
    (tmp_path / "console.log").write_text(text)
    return api.analyze([tmp_path]).to_dict()["verdict"]


def test_peers_torn_out_of_different_collectives_by_a_crash_name_the_crashed_rank(tmp_path: Path) -> None:
    v = _verdict(tmp_path, _console([2], [6, 7], LOST))
    assert v["category"] == "rank_crash"
    assert v["culprit_ranks"] == [5]


def test_peers_that_timed_out_in_different_collectives_are_still_read_as_blocked(tmp_path: Path) -> None:
    v = _verdict(tmp_path, _console([2], [6, 7], TIMED_OUT))
    assert v["rule_id"] != "rank-crashed-while-peers-in-collectives"


# gloo's size check aborts the receiver of a longer message (failure-signatures.md section 2, pair.cc
# `op.preamble.length <= op.nbytes`, thrown on gloo's I/O thread: `terminate called after throwing an
# instance of 'gloo::EnforceNotMet'`); ranks of the other groups lose it wherever they were.
_ABORT = """\
terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at /build/third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 16 vs 12. Received data size doesn't match expected size.
"""


def test_a_gloo_size_abort_is_no_divergence_of_the_calls_its_peers_were_in(tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "job_k2/attempt_0"
    for r in range(4):
        (logs / str(r)).mkdir(parents=True)
    (logs / "3" / "stderr.log").write_text(_ABORT)
    (logs / "0" / "stderr.log").write_text(_STACK_AG.format(r=0, port=40100))
    (logs / "1" / "stderr.log").write_text(_STACK_AR.format(r=1, port=40101))
    (logs / "2" / "stderr.log").write_text(_STACK_AR.format(r=2, port=40102))
    v = api.analyze([tmp_path]).to_dict()["verdict"]
    assert v["category"] == "collective_mismatch"
