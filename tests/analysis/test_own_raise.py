"""An exception the program raised itself is its rank's own fault, whatever its message says."""

from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis.kinds import is_victim_exception, raised_by_own_code, survived_in_helper_thread
from hanglens.analysis.status import is_own_crash
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


def test_a_multiprocessing_helper_threads_printed_error_is_no_crash() -> None:
    # CPython's queue feeder thread (queues.py `_feed`) and resource sharer (`_serve`) print and carry on
    feeder = exc("OSError", "[Errno 24] Too many open files",
                 ["/usr/lib/python3.11/multiprocessing/queues.py:244 in _feed",
                  "/usr/lib/python3.11/multiprocessing/reduction.py:51 in dumps",
                  "/opt/venv/lib/python3.11/site-packages/torch/multiprocessing/reductions.py:614 in "
                  "reduce_storage",
                  "/usr/lib/python3.11/multiprocessing/resource_sharer.py:48 in __init__"])
    sharer = exc("OSError", "[Errno 24] Too many open files",
                 ["/usr/lib/python3.11/multiprocessing/resource_sharer.py:145 in _serve",
                  "/usr/lib/python3.11/socket.py:546 in fromfd"])
    assert survived_in_helper_thread(feeder) and not is_own_crash(feeder)
    assert survived_in_helper_thread(sharer) and not is_own_crash(sharer)
    # the main thread's own failure in a queue's `get` is the rank's
    main = exc("OSError", "[Errno 24] Too many open files",
               ["/srv/job/train.py:88 in <module>",
                "/usr/lib/python3.11/multiprocessing/queues.py:122 in get"])
    assert not survived_in_helper_thread(main) and is_own_crash(main)
