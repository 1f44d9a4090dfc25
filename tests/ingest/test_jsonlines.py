"""Logs stored as one JSON record per line (Docker's json-file driver, Cloud Logging exports) read as the
plain lines their records hold. Records written here from Docker's json-file format and a Cloud Logging
`textPayload` export; the lines inside them from ../shared/reference/log-formats.md (sections 1.5, 5.1)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hanglens import api
from hanglens.ingest import read_inputs
from hanglens.ingest.jsonlines import (
    CsvLines,
    JsonArrayLines,
    ReversedLines,
    export_kind,
    export_time,
    message_path,
    newest_first,
    plain_lines,
    text_newest_first,
)
from hanglens.ingest.reader import json_records_stream


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


# -- a script's own JSON log records, and whole-document exports ----------------------------------------
# Records written here in python-json-logger's and structlog's shapes (their JsonFormatter / JSONRenderer
# field names), with lines from log-formats.md sections 1.1 and 3.1; own values.

def _pjl(t: str, rank: int, level: str, msg: str, **extra: str) -> str:
    return json.dumps({"timestamp": t, "level": level, "name": "trainer", "message": msg, "rank": rank,
                       "world_size": 4, **extra}) + "\n"


TB = ('Traceback (most recent call last):\n  File "/home/user/proj/train.py", line 88, in <module>\n'
      '    run()\n  File "/home/user/proj/train.py", line 61, in run\n    batch = fetch(i)\n'
      "IndexError: shard 17 has 2048 rows, asked for row 2051")


def test_records_among_plain_lines_are_read_with_their_traceback_and_rank() -> None:
    sample = ["W0301 10:00:00.100000 811 torch/distributed/run.py:874] *****",
              _pjl("2026-03-01 10:00:01,200", 0, "INFO", "step 4 loss 0.51"),
              _pjl("2026-03-01 10:00:01,230", 2, "INFO", "step 4 loss 0.49")]
    assert message_path(sample) == ("message",)
    # JSON values a script printed (no level or time field) are not log records
    assert message_path(["epoch 1", '{"message": "a"}', '{"message": "b"}', "epoch 2"]) is None
    failed = _pjl("2026-03-01 10:00:02,001", 3, "ERROR", "fetch failed", exc_info=TB)
    lines = plain_lines(failed, ("message",))
    assert lines[0] == "2026-03-01 10:00:02,001 [rank3]: fetch failed"
    assert lines[1] == "2026-03-01 10:00:02,001 [rank3]: Traceback (most recent call last):"
    assert lines[-1] == ("2026-03-01 10:00:02,001 [rank3]: IndexError: shard 17 has 2048 rows, asked for "
                         "row 2051")
    # structlog's format_exc_info field, and a record inside a Cloud Logging record's textPayload
    inner = json.dumps({"rank": 1, "level": "error", "timestamp": "2026-03-01T10:00:02.5Z",
                        "exception": TB, "message": "fetch failed"})
    outer = json.dumps({"textPayload": inner, "timestamp": "2026-03-01T10:00:02.6Z"})
    lines = plain_lines(outer, ("textPayload",))
    assert lines[0] == "2026-03-01T10:00:02.6Z 2026-03-01T10:00:02.5Z [rank1]: fetch failed"
    assert lines[-1].endswith("[rank1]: IndexError: shard 17 has 2048 rows, asked for row 2051")


def test_a_traceback_only_in_a_json_record_names_its_rank(tmp_path: Path) -> None:
    # The script logs the exception with logger.exception and exits 1: torchrun's report has no traceback,
    # the only one is the record's escaped `exc_info` (log-formats.md section 3.1 for the launcher's lines).
    head = "".join(f"W0301 10:00:00.100000 811 torch/distributed/run.py:874] {s}\n" for s in ("", "*****"))
    recs = "".join(_pjl(f"2026-03-01 10:00:0{s},100", r, "INFO", f"step {s} loss 0.5")
                   for s in range(1, 4) for r in range(4))
    fail = _pjl("2026-03-01 10:00:04,010", 2, "ERROR", "training failed", exc_info=TB)
    tail = ("W0301 10:00:04.500000 811 torch/distributed/elastic/multiprocessing/api.py:908] Sending process "
            "901 closing signal SIGTERM\n"
            "E0301 10:00:04.800000 811 torch/distributed/elastic/multiprocessing/api.py:882] failed "
            "(exitcode: 1) local_rank: 2 (pid: 903) of binary: /home/user/venv/bin/python\n")
    (tmp_path / "console.log").write_text(head + recs + fail + tail)
    verdict = api.analyze([tmp_path]).result.verdict
    assert (verdict.category.value, verdict.culprit_ranks) == ("rank_crash", (2,))
    exc = [e for e in read_inputs([tmp_path]).events if e.kind == "exception"]
    assert [(e.rank, e.fields.get("exc_type")) for e in exc] == [(2, "IndexError")]


def test_a_newest_first_export_is_read_oldest_first() -> None:
    recs = [json.dumps({"labels": {"pod": "train-0"}, "line": f"step {i}",
                        "timestamp": f"2026-03-01T10:00:0{i}.000000000Z"}) for i in range(5)]
    assert not newest_first(recs)
    assert newest_first(recs[::-1])
    data = "\n".join(recs[::-1]).encode() + b"\n"
    out = ReversedLines(io.BytesIO(data)).read()
    assert out.decode().split("\n")[:5] == recs
    assert ReversedLines(io.BytesIO(data), cap=10).read() + ReversedLines(io.BytesIO(b""), cap=10).read() \
        == data  # past the cap: read as written


def test_gcloud_json_array_and_csv_exports_become_json_lines() -> None:
    entries = [{"textPayload": "step 3 loss 0.4", "timestamp": "2026-03-01T10:00:03Z"},
               {"textPayload": "a \"quoted\" line, with a comma", "timestamp": "2026-03-01T10:00:02Z"}]
    data = json.dumps(entries, indent=2).encode()
    assert export_kind(data) == "array"
    lines = JsonArrayLines(io.BytesIO(data)).read().decode().splitlines()
    assert [json.loads(s) for s in lines] == entries
    csv_text = ('"timestamp","pod","message"\n"2026-03-01T10:00:02Z","train-0","Traceback (most recent call '
                'last):\n  File ""a.py"", line 1"\n"2026-03-01T10:00:03Z","train-0","x, y"\n')
    kind = export_kind(csv_text.encode())
    assert kind == (2, 0)
    assert isinstance(kind, tuple)
    rows = CsvLines(io.BytesIO(csv_text.encode()), *kind).read().decode().splitlines()
    recs = [json.loads(s) for s in rows]
    assert recs == [{"message": 'Traceback (most recent call last):\n  File "a.py", line 1',
                     "timestamp": "2026-03-01T10:00:02Z"},
                    {"message": "x, y", "timestamp": "2026-03-01T10:00:03Z"}]
    assert export_kind(b"step,loss\n1,0.5\n") is None  # a CSV without a message column
    assert export_kind(b"[rank0]: x, y, z\n") is None


def test_records_behind_a_launcher_prefix_keep_the_prefix_and_their_traceback(tmp_path: Path) -> None:
    # `torchrun --tee 3` puts `[<role><local_rank>]:` before each line a worker writes (log-formats.md
    # section 3.1), so a python-json-logger record arrives as `[default2]:{"message": ...}`; torch's
    # excepthook adds `[rank<r>]:` (section 1.1).
    rec = _pjl("2026-03-01 10:00:02,001", 3, "ERROR", "fetch failed", exc_info=TB).rstrip("\n")
    lines = plain_lines("[default1]:" + rec, ("message",))
    assert lines[0] == "2026-03-01 10:00:02,001 [default1]:[rank3]: fetch failed"
    assert lines[-1].endswith("[default1]:[rank3]: IndexError: shard 17 has 2048 rows, asked for row 2051")
    assert plain_lines("[rank2]:" + rec, ("message",))[0] == "2026-03-01 10:00:02,001 [rank2]:fetch failed"
    assert plain_lines("[default1]:step 3", ("message",)) == ["[default1]:step 3"]
    # the record's world_size field is kept once per writer (parsers/environment.py reads `world_size=<n>`)
    worlds: set[tuple[int | None, int]] = set()
    step = _pjl("2026-03-01 10:00:01,200", 3, "INFO", "step 4").rstrip("\n")
    assert plain_lines("[default1]:" + step, ("message",), worlds=worlds)[1:] == [
        "2026-03-01 10:00:01,200 [default1]:[rank3]: world_size=4"]
    assert len(plain_lines("[default1]:" + step, ("message",), worlds=worlds)) == 1
    teed = ["[default0]:" + _pjl("2026-03-01 10:00:01,200", 0, "INFO", "step 4"),
            "[default1]:" + _pjl("2026-03-01 10:00:01,210", 1, "INFO", "step 4")]
    assert message_path(teed) == ("message",)


def test_a_teed_json_records_traceback_names_the_tees_rank(tmp_path: Path) -> None:
    # python-json-logger records with no rank field behind `torchrun --tee 3`'s prefixes (single node):
    # the only traceback is in rank 2's record, and only the tee names its writer.
    def rec_of(t: str, level: str, msg: str, **extra: str) -> str:  # no rank field: the tee names the writer
        return json.dumps({"asctime": t, "levelname": level, "name": "trainer", "message": msg, **extra})
    head = "".join(f"W0301 10:00:00.100000 811 torch/distributed/run.py:874] {s}\n" for s in ("", "*****"))
    recs = "".join(f"[default{r}]:" + rec_of(f"2026-03-01 10:00:0{s},100", "INFO", f"step {s} loss 0.5")
                   + "\n" for s in range(1, 4) for r in range(4))
    fail = "[default2]:" + rec_of("2026-03-01 10:00:04,010", "ERROR", "training failed", exc_info=TB) + "\n"
    tail = ("W0301 10:00:04.500000 811 torch/distributed/elastic/multiprocessing/api.py:908] Sending process "
            "901 closing signal SIGTERM\n"
            "E0301 10:00:04.800000 811 torch/distributed/elastic/multiprocessing/api.py:882] failed "
            "(exitcode: 1) local_rank: 2 (pid: 903) of binary: /home/user/venv/bin/python\n")
    (tmp_path / "console.log").write_text(head + recs + fail + tail)
    exc = [e for e in read_inputs([tmp_path]).events if e.kind == "exception"]
    assert [(e.rank, e.fields.get("exc_type")) for e in exc] == [(2, "IndexError")]
    verdict = api.analyze([tmp_path]).result.verdict
    assert (verdict.category.value, verdict.culprit_ranks) == ("rank_crash", (2,))


# -- API responses that are one JSON document, nested message fields, epoch times (probe47) -------------
# Field names from each API's reference: CloudWatch Logs FilteredLogEvent (`timestamp`, `ingestionTime` in
# ms since the epoch, `message`, `logStreamName`, `eventId`), Elasticsearch `_search` (`hits.hits[]._source`),
# Datadog Logs API v2 (`data[].attributes.message`/`timestamp`), journald's JSON (`__REALTIME_TIMESTAMP` in
# microseconds, `MESSAGE`); the lines inside from log-formats.md section 3.6 and 7; own values.

GLOO_CLOSED = ("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
               "Connection closed by peer [10.0.0.7]:41234")


def test_a_cloudwatch_events_document_is_read_as_its_records_with_their_epoch_times() -> None:
    doc = {"events": [{"logStreamName": "trainer/pytorch/a1", "timestamp": 1796500000123 + i,
                       "message": f"step {i} loss 0.5", "ingestionTime": 1796500000500, "eventId": str(i)}
                      for i in range(3)], "searchedLogStreams": [{"logStreamName": "trainer/pytorch/a1"}]}
    data = json.dumps(doc, indent=4).encode()
    kind = export_kind(data)
    assert kind == ("document", "events")
    stream, note = json_records_stream(data, io.BytesIO(b""))
    assert "record array" in note
    lines = stream.read().decode().splitlines()
    assert lines[0] == "2026-12-05T19:46:40.123000Z step 0 loss 0.5"


def test_elasticsearch_hits_and_datadog_data_documents_keep_their_nested_message_and_time() -> None:
    hits = {"took": 3, "hits": {"total": {"value": 2}, "hits": [
        {"_index": "filebeat", "_id": "b", "_source": {"@timestamp": "2026-03-01T10:00:02.000Z",
                                                      "message": GLOO_CLOSED}},
        {"_index": "filebeat", "_id": "a", "_source": {"@timestamp": "2026-03-01T10:00:01.000Z",
                                                      "message": "step 3 loss 0.4"}},
        {"_index": "filebeat", "_id": "0", "_source": {"@timestamp": "2026-03-01T10:00:00.000Z",
                                                      "message": "step 2 loss 0.5"}}]}}
    data = json.dumps(hits, indent=2).encode()
    assert export_kind(data) == ("document", "hits", "hits")
    stream, note = json_records_stream(data, io.BytesIO(b""))
    assert "oldest first" in note  # a `sort` descending export
    assert stream.read().decode().splitlines() == [
        "2026-03-01T10:00:00.000Z step 2 loss 0.5", "2026-03-01T10:00:01.000Z step 3 loss 0.4",
        f"2026-03-01T10:00:02.000Z {GLOO_CLOSED}"]
    dd = {"data": [{"id": "x", "type": "log", "attributes": {"timestamp": "2026-03-01T10:00:01.000Z",
                                                             "host": "gpu-1", "message": "step 3"}}],
          "meta": {"status": "done"}}
    assert export_kind(json.dumps(dd).encode()) == ("document", "data")
    # a JSON document whose array holds no log lines is no export (a settings file)
    assert export_kind(json.dumps({"data": [{"lr": 0.1}], "events": []}, indent=2).encode()) is None
    # JSON lines whose records hold an array are records, not one document
    recs = b"".join(json.dumps({"message": "x", "data": [{"message": "y"}]}).encode() + b"\n"
                    for _ in range(3))
    assert export_kind(recs) is None


def test_journald_json_and_structlog_records_read_with_their_time_and_message() -> None:
    rec = json.dumps({"__REALTIME_TIMESTAMP": "1796500000123456", "_HOSTNAME": "gpu-node-1",
                      "SYSLOG_IDENTIFIER": "torchrun", "_PID": "4100", "MESSAGE": "step 4 loss 0.3"})
    assert message_path([rec] * 3) == ("MESSAGE",)
    assert plain_lines(rec, ("MESSAGE",)) == ["2026-12-05T19:46:40.123456Z step 4 loss 0.3"]
    slog = json.dumps({"rank": 2, "event": "skipping step 4: loss spike", "level": "warning",
                       "timestamp": "2026-03-01T10:00:01.000Z"})
    assert message_path(["W0301 10:00:00.100000 811 torch/distributed/run.py:874] *****", slog, slog]) \
        == ("event",)
    assert plain_lines(slog, ("event",)) == ["2026-03-01T10:00:01.000Z [rank2]: skipping step 4: loss spike"]


def test_a_cloudwatch_document_is_analysed_not_skipped_as_settings(tmp_path: Path) -> None:
    lines = ["[rank1]: Traceback (most recent call last):",
             '[rank1]:   File "/home/user/proj/train.py", line 12, in <module>',
             "[rank1]: ValueError: label index 11 out of range for 10 classes",
             GLOO_CLOSED]
    doc = {"events": [{"logStreamName": "trainer/pytorch/a1", "timestamp": 1796500000000 + 10 * i,
                       "message": m, "ingestionTime": 1796500001000, "eventId": str(i)}
                      for i, m in enumerate(lines)]}
    (tmp_path / "filter-log-events.json").write_text(json.dumps(doc, indent=4))
    verdict = api.analyze([tmp_path]).result.verdict
    assert (verdict.category.value, verdict.culprit_ranks) == ("rank_crash", (1,))


def test_a_text_export_listed_newest_first_is_read_oldest_first(tmp_path: Path) -> None:
    # logcli's default output (`<RFC 3339> {<labels>} <line>`, `--direction backward` by default): a
    # traceback read newest first would open with its exception and end with its header.
    tb = ["[rank1]: Traceback (most recent call last):",
          '[rank1]:   File "/home/user/proj/train.py", line 12, in <module>',
          "[rank1]: ValueError: label index 11 out of range for 10 classes"]
    lines = [f'2026-03-01T10:00:0{i}Z {{pod="trainer-0"}} {text}' for i, text in enumerate(
        ["step 3 loss 0.4", *tb, GLOO_CLOSED])]
    assert text_newest_first(lines[::-1]) and not text_newest_first(lines)
    text = 'Common labels: {container="pytorch"}\n' + "\n".join(lines[::-1]) + "\n"
    (tmp_path / "logcli.txt").write_text(text)
    verdict = api.analyze([tmp_path]).result.verdict
    assert (verdict.category.value, verdict.culprit_ranks) == ("rank_crash", (1,))


def test_kibana_csv_time_is_read_as_an_iso_time() -> None:
    assert export_time("Mar 1, 2026 @ 10:00:02.120") == "2026-03-01T10:00:02.120"
    assert export_time("2026-03-01T10:00:02Z") == "2026-03-01T10:00:02Z"
    csv_text = ('"@timestamp","host.name",message\n"Mar 1, 2026 @ 10:00:03.000","gpu-1","b"\n'
                '"Mar 1, 2026 @ 10:00:02.000","gpu-1","a"\n"Mar 1, 2026 @ 10:00:01.000","gpu-1","z"\n')
    kind = export_kind(csv_text.encode())
    assert isinstance(kind, tuple)
    rows = CsvLines(io.BytesIO(csv_text.encode()), *kind).read().decode().splitlines()
    assert newest_first(rows)


def test_cloud_logging_entries_with_text_and_json_payloads_are_read_alike() -> None:
    # GKE's logging agent keeps a plain line as `textPayload` and parses a JSON line into `jsonPayload`
    # (structlog's `event`, `level`, `rank`); the entry's `timestamp` and `severity` are its own.
    def ent(t: str, **payload: object) -> str:
        return json.dumps({"severity": "INFO", "timestamp": t, **payload})
    sample = [ent(f"2026-03-01T10:00:0{i}Z", textPayload=f"plain {i}") for i in range(7)] + [
        ent("2026-03-01T10:00:08Z", jsonPayload={"event": "skipping step 4", "level": "warning", "rank": 1})]
    assert message_path(sample) == ("textPayload",)
    assert plain_lines(sample[-1], ("textPayload",)) == ["2026-03-01T10:00:08Z [rank1]: skipping step 4"]
    assert plain_lines(sample[0], ("textPayload",)) == ["2026-03-01T10:00:00Z plain 0"]


def test_azure_portal_csv_and_fluent_bit_epoch_date() -> None:
    assert export_time("12/5/2026, 9:30:13.525 PM") == "2026-12-05T21:30:13.525Z"
    assert export_time("1/2/2026, 12:01:00.000 AM") == "2026-01-02T00:01:00.000Z"
    head = '"TimeGenerated [UTC]",Computer,PodName,LogSource,LogMessage\n'
    assert export_kind(head.encode()) == (4, 0)
    fb = json.dumps({"date": 1796500000.5, "log": "step 1\n", "stream": "stdout",
                     "kubernetes": {"pod_name": "trainer-0"}})
    assert plain_lines(fb, ("log",)) == ["2026-12-05T19:46:40.500000Z stdout F step 1"]


def test_a_record_nested_deeper_than_the_decoder_recurses_is_only_not_a_record(tmp_path: Path) -> None:
    """A hostile line of JSON lines (arrays nested 5,000 deep, 10 KB) is not a log record; the file's other
    records are still read (it skipped the whole file as an internal error). The same for a JSON document
    with a record array (a CloudWatch-style `events` response) nested past the decoder's recursion."""

    good = '{"log": "[rank1]: RuntimeError: boom", "time": "2026-01-01T00:00:00Z"}\n'
    deep = '{"log": ' + "[" * 5000 + "]" * 5000 + "}\n"
    (tmp_path / "pod.log").write_text(good * 2 + deep + good)
    ing = read_inputs([tmp_path])
    assert not ing.skipped
    assert any(e.rank == 1 and "boom" in e.text for e in ing.events)
    doc = tmp_path / "doc"
    doc.mkdir()
    (doc / "events.json").write_text('{"events": [{"timestamp": 1700000000000, "message": "[rank0]: hi"}, '
                                     + "[" * 200_000 + "]" * 200_000 + "]}")
    assert all("RecursionError" not in s.reason for s in read_inputs([doc]).skipped)
