"""Redaction: no host, address, user, e-mail or secret survives in any output; aliases are consistent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hanglens.report import redact, render_html, render_json, render_markdown, render_text

from .conftest import HOSTS, PRIVATE_VALUES, USER

# A job's logs written from the reference templates (c10 envelope torch 2.4+, NCCL 2.10-2.17 INFO
# envelope, TCPStore client error 2.x, ChildFailedError block 1.10-2.9), filled with invented private values.
_RANK0 = """\
[rank0]:[E1003 18:37:01.833575187 socket.cpp:1023] [c10d] The client socket has timed out after 600000ms \
while trying to connect to (10.42.7.19, 29500).
gpu-node-a:191643:191866 [0] NCCL INFO comm 0x5590ec4762b0 rank 0 nranks 2 cudaDev 0 busId 85000 \
- Init COMPLETE
Traceback (most recent call last):
  File "/home/jdoe/project/train.py", line 42, in <module>
    main()
RuntimeError: upload to s3 failed for jane.doe@corp-example.org key AKIAIOSFODNN7EXAMPLE \
token=hf_QQQQQQQQabcdEFGH12345678ijkl
"""
_RANK1 = """\
[rank1]:[E1003 18:37:02.100000000 TCPStore.cpp:318] [c10d] TCP client failed to connect/validate to host \
[fd00:1234:5678::42]:29500 - timed out (try=1, timeout=600000ms): Socket Timeout
gpu-node-b:191700:191701 [0] NCCL INFO comm 0x55aa00000000 rank 1 nranks 2 cudaDev 0 busId 86000 \
- Init COMPLETE
RuntimeError: cannot read /Users/jdoe/.netrc: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 rejected
"""
_AGENT = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-10-03_18:37:05
  host      : gpu-node-a.cluster.example.com
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 60554)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def _outputs(doc: dict[str, Any]) -> dict[str, str]:
    return {
        "html": render_html(doc),
        "markdown": render_markdown(doc),
        "json": render_json(doc),
        "text": render_text(doc, color=False),
    }


def _survivors(outputs: dict[str, str], values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(name, v) for name, text in outputs.items() for v in values if v.lower() in text.lower()]


def test_the_unredacted_report_does_contain_the_values(doc: dict[str, Any]) -> None:
    found = {v for _, v in _survivors(_outputs(doc), PRIVATE_VALUES)}
    assert found == set(PRIVATE_VALUES)  # otherwise the next test would prove nothing


def test_nothing_private_survives_in_any_output(doc: dict[str, Any]) -> None:
    assert _survivors(_outputs(redact(doc)), PRIVATE_VALUES) == []


def test_aliases_are_consistent_and_deterministic(doc: dict[str, Any]) -> None:
    red = redact(doc)
    assert red == redact(doc)
    assert red["verdict"]["culprit_hosts"] == ["host-1"]
    assert [r["host"] for r in red["ranks"]] == ["host-1"] * 4 + ["host-2"] * 3 + [None]
    assert sorted(red["versions"]["by_host"]) == ["host-1", "host-2"] == sorted(red["clock"]["offsets"])
    assert red["inputs"]["hosts"] == ["host-1", "host-2"]
    assert red["command"] == "hanglens analyze /home/user-1/runs/llm-7b/logs/"
    example = red["unexplained"][0]["example"]
    assert example.startswith("host-2:1234:1290 [1]") and "peer ip-1<49152>" in example
    assert red["unexplained"][1]["path"] == "/home/user-1/notes.txt"
    assert "email-1@example.invalid" in red["unexplained"][1]["example"]
    assert "ip6-1" in red["unexplained"][1]["example"]


def test_ordinary_text_is_left_alone() -> None:
    keep = [
        "torch 2.4.1 NCCL 2.20.5+cuda12.1 driver 535.104.05 at 18:37:01.833",
        "Root Cause (first observed failure): see https://pytorch.org/docs/stable/elastic/errors.html",
        "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout connect to 127.0.0.1:29500 and [::1]:29500",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
        "WorkNCCL(SeqNum=6463, OpType=ALLREDUCE, NumelIn=1048576) commId 0xfa38415269cf0cf7",
        "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py:3174",
        "ProcessGroupNCCLWatchdogHeartbeatMonitorThreadStuckForTooLong_2024",
    ]
    doc = {"unexplained": [{"example": k} for k in keep]}
    assert redact(doc) == doc


def test_secrets_in_assignments_and_roots() -> None:
    doc = {
        "timeline": [
            {"text": "WANDB_API_KEY=0123456789abcdef0123 password: hunter22 in /root/.cache"},
            {"text": "USER=alice LOGNAME=alice wrote /home/alice/x; alice@gpu-1"},
        ]
    }
    red = json.dumps(redact(doc))
    for v in ("0123456789abcdef0123", "hunter22", "/root/", "alice"):
        assert v not in red, v


def test_report_from_real_logs_with_private_values(tmp_path: Path) -> None:
    api = pytest.importorskip("hanglens.api")
    logs = tmp_path / HOSTS[0] / USER
    logs.mkdir(parents=True)
    (logs / "rank0.log").write_text(_RANK0)
    (logs / "rank1.log").write_text(_RANK1)
    (logs / "agent.log").write_text(_AGENT)
    doc = api.analyze([logs], rules=[], command=f"hanglens analyze {logs}").to_dict()
    plain = _outputs(doc)
    assert any(USER in text for text in plain.values())
    red = _outputs(redact(doc))
    assert _survivors(red, PRIVATE_VALUES) == []
    assert "ChildFailedError" in red["json"] or "exitcode" in red["json"]
