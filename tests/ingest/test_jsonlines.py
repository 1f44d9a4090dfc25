"""Logs stored as one JSON record per line (Docker's json-file driver, Cloud Logging exports) read as the
plain lines their records hold. Records written here from Docker's json-file format and a Cloud Logging
`textPayload` export; the lines inside them from ../shared/reference/log-formats.md (sections 1.5, 5.1)."""

from __future__ import annotations

import json
from pathlib import Path

from hanglens import api
from hanglens.ingest.jsonlines import message_path, plain_lines


def _docker(lines: list[tuple[str, str, str]]) -> str:
    return "".join(json.dumps({"log": text + "\n", "stream": stream, "time": t}, separators=(",", ":")) + "\n"
                   for t, stream, text in lines)


def test_message_path_needs_most_lines_to_be_records_with_a_string_field() -> None:
    assert message_path(['{"log":"a\\n","stream":"stdout","time":"2026-03-01T10:00:00Z"}'] * 3) == ("log",)
    assert message_path(['{"textPayload":"x","timestamp":"2026-03-01T10:00:00.1Z"}'] * 3) == ("textPayload",)
    assert message_path(['{"jsonPayload":{"message":"x"}}'] * 3) == ("jsonPayload", "message")
    assert message_path(['{"a": 1}', '{"a": 2}', '{"a": 3}']) is None          # no line in them
    assert message_path(["step 1 loss 0.3", '{"log":"x"}', "step 2 loss 0.2"]) is None  # a log quoting JSON


def test_a_record_becomes_its_line_behind_its_time_and_stream() -> None:
    rec = json.dumps({"log": 'File "/home/user/a.py", line 3\n', "stream": "stderr",
                      "time": "2026-03-01T10:00:00.123456789Z"})
    assert plain_lines(rec, ("log",)) == [
        '2026-03-01T10:00:00.123456789Z stderr F File "/home/user/a.py", line 3']
    assert plain_lines('{"textPayload":"a\\nb","timestamp":"2026-03-01T10:00:01Z"}', ("textPayload",)) == [
        "2026-03-01T10:00:01Z a", "2026-03-01T10:00:01Z b"]
    assert plain_lines("not a record", ("log",)) == ["not a record"]


def test_a_cuda_error_inside_cloud_logging_records_is_read_as_the_line_it_is(tmp_path: Path) -> None:
    # A Cloud Logging export (`textPayload`, one record per line) of a torch 2.5 job: rank 3's watchdog ends
    # on an ECC error (log-formats.md sections 1.5 and 5.1), rank 0 times out ten minutes later. Read as
    # JSON text, the CUDA error's message runs on into the record's other fields.
    def rec(t: str, text: str) -> str:
        return json.dumps({"insertId": "a1", "resource": {"labels": {"task_name": "workerpool0-0"}},
                           "severity": "ERROR", "textPayload": text, "timestamp": t}) + "\n"
    ecc = ("[rank3]:[E301 10:00:02.200118227 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) "
           "Rank 3] Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC "
           "error encountered")
    timeout = ("[rank0]:[E301 10:10:05.300118227 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=4121, OpType=ALLREDUCE, NumelIn=2048, "
               "NumelOut=2048, Timeout(ms)=600000) ran for 600107 milliseconds before timing out.")
    text = "".join([
        rec("2026-03-01T10:00:00.100Z", "epoch 2 step 410 loss 0.8811"),
        rec("2026-03-01T10:00:02.200Z", ecc),
        rec("2026-03-01T10:00:02.201Z", "CUDA kernel errors might be asynchronously reported at some other "
            "API call, so the stacktrace below might be incorrect."),
        rec("2026-03-01T10:10:05.300Z", timeout),
    ])
    (tmp_path / "export.jsonl").write_text(text)
    verdict = api.analyze([tmp_path]).result.verdict
    assert (verdict.category.value, verdict.culprit_ranks) == ("cuda_error", (3,))
