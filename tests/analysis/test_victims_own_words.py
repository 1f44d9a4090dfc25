"""Victims that speak in their own words after a peer's fault (probe53): a wrapper that logs the peer's
failure and raises its own error from it, a teardown traceback CPython printed and dropped, a traceback
logged under a timed record, and an exit code shared with ranks that only passed a failure on.

Lines shaped like probe53's torch 2.13 gloo runs (tools/probe53/denoise.py; log-formats.md sections 3.4-3.6
for torchrun's lines, section 7 for gloo's) with machine paths rewritten to /home/user.
"""
# ruff: noqa: E501 - console lines stay whole, as they were printed
from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.analysis import status
from hanglens.model import Event

WRAPPED = """\
[default0]:[rank0]: Traceback (most recent call last):
[default0]:[rank0]:   File "/home/user/train/denoise.py", line 106, in train_step
[default0]:[rank0]:     loss.backward()
[default0]:[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:41703: Connection reset by peer
[default0]:
[default0]:[rank0]: The above exception was the direct cause of the following exception:
[default0]:
[default0]:[rank0]: Traceback (most recent call last):
[default0]:[rank0]:   File "/home/user/train/denoise.py", line 158, in main
[default0]:[rank0]:     raise RuntimeError(f"training step {step} failed") from e
[default0]:[rank0]: RuntimeError: training step 3 failed
"""


def _analyze(tmp_path: Path, text: str) -> api.Analysis:
    (tmp_path / "console.log").write_text(text)
    return api.analyze([tmp_path])


def _exceptions(a: api.Analysis) -> list[Event]:
    return [e for e in a.tables.events if e.kind == "exception"]


def test_a_wrapper_raised_from_a_lost_peer_is_a_victim(tmp_path: Path) -> None:
    (exc,) = _exceptions(_analyze(tmp_path, WRAPPED))
    assert exc.get("message") == "training step 3 failed"
    assert "Connection reset by peer" in exc.get("chained_messages")[0]
    assert not status.is_own_crash(exc)


def test_a_wrapper_raised_from_its_own_error_is_a_crash(tmp_path: Path) -> None:
    text = WRAPPED.replace("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:41703: Connection reset by peer",
                           "ValueError: noise schedule index 2496 out of range for 1000 timesteps")
    (exc,) = _exceptions(_analyze(tmp_path, text))
    assert status.is_own_crash(exc)


def test_an_exception_ignored_at_teardown_is_no_failure(tmp_path: Path) -> None:
    text = """\
[default0]:2026-12-06 03:13:59,214 INFO    denoise.r0: step 6/6 loss 1.0481
[default1]:2026-12-06 03:13:59,214 INFO    denoise.r1: step 6/6 loss 1.0481
[default0]:2026-12-06 03:13:59,214 INFO    denoise.r0: training done
[default1]:2026-12-06 03:13:59,214 INFO    denoise.r1: training done
[default0]:Exception ignored in: <function _Writer.__del__ at 0x7fa3d36b4360>
[default0]:Traceback (most recent call last):
[default0]:  File "/home/user/train/denoise.py", line 183, in __del__
[default0]:OSError: [Errno 9] Bad file descriptor
"""
    a = _analyze(tmp_path, text)
    (exc,) = _exceptions(a)
    assert exc.get("unraisable") is True
    assert a.verdict.category == "none"


def test_a_logged_traceback_takes_its_record_s_time(tmp_path: Path) -> None:
    text = """\
[default1]:2026-12-06 03:04:48,758 ERROR   denoise.r1: step 3 failed on rank 1
[default1]:Traceback (most recent call last):
[default1]:  File "/home/user/train/denoise.py", line 86, in alphas_for
[default1]:    raise ValueError(f"noise schedule index {int(t.max())} out of range")
[default1]:ValueError: noise schedule index 2496 out of range for 1000 timesteps
"""
    a = _analyze(tmp_path, text)
    (exc,) = _exceptions(a)
    (head,) = [e for e in a.tables.events if e.kind == "error_line" and e.line == 1]
    assert exc.time is not None and exc.time == head.time


def test_an_exit_code_shared_with_wrapping_victims_names_nobody(tmp_path: Path) -> None:
    # rank 1's lines were cut from the paste; it exited with code 1 like rank 0, whose error only passed a
    # lost connection on
    text = WRAPPED + """\
E1206 03:06:00.411000 14638 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -6) local_rank: 2 (pid: 14645) of binary: /home/user/.venv/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/home/user/train/denoise.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-06_03:06:00
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 14642)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2026-12-06_03:06:00
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 14643)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_03:05:43
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : -6 (pid: 14645)  (SIGABRT)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 14645
============================================================
"""
    crash = _analyze(tmp_path, text).tables.fact("crash")
    assert 1 not in set(crash["rank"])
