"""An exception the program raised itself is its rank's own fault, whatever its message says."""

from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis.kinds import is_victim_exception, raised_by_own_code
from hanglens.model import Event, SourceRef


def exc(exc_type: str, message: str, frames: list[str], chained: list[str] | None = None,
        last: str = "raise ConnectionResetError(msg)") -> Event:
    return Event(kind="exception", ref=SourceRef("c.log", 9), text=f"{exc_type}: {message}",
                 parser="traceback", rank=2,
                 fields={"exc_type": exc_type, "message": message, "frames": frames,
                         "sources": ["main()"] * (len(frames) - 1) + [last] if frames else [],
                         "chained": chained or []})


def test_a_raise_in_the_programs_own_frames_is_its_own_fault() -> None:
    own = exc("ConnectionResetError", "[Errno 104] Connection reset by peer while reading block 7",
              ["/srv/job/train.py:88 in <module>", "/srv/job/train.py:61 in load_block"])
    assert raised_by_own_code(own) and not is_victim_exception(own)


def test_torchs_report_of_a_lost_peer_stays_a_victims() -> None:
    c10d = exc("RuntimeError", "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection reset by "
               "peer [10.1.1.2]:4411", ["/srv/job/train.py:88 in <module>",
                                   "/opt/venv/lib/python3.11/site-packages/torch/distributed/"
                                   "distributed_c10d.py:2806 in all_reduce"])
    chained = exc("RuntimeError", "step failed: Connection reset by peer", ["/srv/job/train.py:90 in main"],
                  chained=["DistBackendError"])
    frameless = exc("ConnectionResetError", "[Errno 104] Connection reset by peer", [])
    stdlib = exc("TimeoutError", "timed out", ["/srv/job/train.py:12 in fetch",
                                               "/usr/lib/python3.11/socket.py:720 in create_connection"])
    # (a paste that left out torch's frames below the program's call: no `raise` of the program's own)
    cut = exc("RuntimeError", "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
              "waiting 60000ms for recv operation to complete", ["/srv/job/train.py:120 in main"],
              last="loss.backward()")
    for e in (c10d, chained, frameless, stdlib, cut):
        assert not raised_by_own_code(e) and is_victim_exception(e), e.fields


def test_the_rank_that_raised_its_own_connection_error_is_the_culprit(tmp_path: Path) -> None:
    """Its peers' gloo errors followed; before, its `Connection reset by peer` read as a victim's too, and
    nothing was explained."""
    tb = ("[rank1]: Traceback (most recent call last):\n"
          "[rank1]:   File \"/home/user/etl/train.py\", line 77, in <module>\n"
          "[rank1]:     main()\n"
          "[rank1]:   File \"/home/user/etl/train.py\", line 52, in main\n"
          "[rank1]:     raise ConnectionResetError(\"[Errno 104] Connection reset by peer while reading "
          "part 9\")\n"
          "[rank1]: ConnectionResetError: [Errno 104] Connection reset by peer while reading part 9\n")
    peers = "".join(
        f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed "
        f"by peer [127.0.0.1]:{41000 + r}\n" for r in (0, 2))
    steps = "[rank0]: step 3 loss 0.41\n[rank1]: step 3 loss 0.40\n"
    (tmp_path / "console.log").write_text(steps + tb + peers)
    doc = api.analyze([tmp_path]).to_dict()
    assert doc["verdict"]["category"] == "rank_crash"
    assert doc["verdict"]["culprit_ranks"] == [1]


def test_a_dcp_checkpoint_exception_is_a_victims_report_on_the_ranks_it_does_not_name() -> None:
    # torch/distributed/checkpoint/api.py: every rank raises it; its text names the ranks that failed.
    frames = ["/srv/job/train.py:71 in resume",
              "/opt/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/utils.py:221 in "
              "reduce_scatter"]
    dcp = "torch.distributed.checkpoint.api.CheckpointException"
    other = exc(dcp, "CheckpointException ranks:dict_keys([0, 5])", frames, last="raise result")
    named = exc(dcp, "CheckpointException ranks:dict_keys([2])", frames, last="raise result")
    assert is_victim_exception(other) and not is_victim_exception(named)
