"""A pasted `tail` of several files (`==> <file> <==` before each, GNU coreutils tail.c / head.c) is read as
those files, each under its own name: a torchrun --log-dir path says whose lines follow (log-formats.md
section 3.1). A paste whose headers name pods or nodes in words stays one file.

Lines written here from log-formats.md sections 3.1 (the --log-dir layout) and 7 (gloo's transport errors),
values our own, shaped like torch 2.13 gloo runs of probe50 (tools/probe50).
"""
# ruff: noqa: E501 - log lines stay whole, as the runtime prints them
from __future__ import annotations

from pathlib import Path

from hanglens import api

PASTE = """\
==> logs/job_x1/attempt_0/1/stdout.log <==
rank 1/2 started on pid 14767

==> logs/job_x1/attempt_0/1/stderr.log <==
terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 2244 vs 4. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?

==> logs/job_x1/attempt_0/0/stderr.log <==
RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:23202: Connection reset by peer.
"""


def _ranks_by_kind(tmp_path: Path, text: str) -> dict[str, set[int | None]]:
    (tmp_path / "issue.txt").write_text(text)
    out: dict[str, set[int | None]] = {}
    for e in api.read([tmp_path]).events:
        out.setdefault(e.kind, set()).add(e.rank)
    return out


def test_each_section_is_read_as_the_file_its_header_names(tmp_path: Path) -> None:
    got = _ranks_by_kind(tmp_path, PASTE)
    assert got["process_teardown"] == {1}
    assert got["network_error"] == {0}


def test_headers_that_name_pods_in_words_leave_the_paste_one_file(tmp_path: Path) -> None:
    text = PASTE.replace("==> logs/job_x1/attempt_0/0/stderr.log <==", "==> trainer-master-0 <==")
    got = _ranks_by_kind(tmp_path, text)
    assert 0 not in got["network_error"]


def test_a_paste_that_opens_with_prose_stays_one_file(tmp_path: Path) -> None:
    got = _ranks_by_kind(tmp_path, "here is tail of both ranks:\n" + PASTE)
    assert got["network_error"] != {0}


def test_evidence_of_a_section_reads_its_own_lines(tmp_path: Path) -> None:
    (tmp_path / "issue.txt").write_text(PASTE)
    doc = api.analyze([tmp_path]).to_dict()
    paths = {ev["path"] for f in doc["findings"] for ev in f.get("evidence", [])}
    assert not paths or all("!" in p for p in paths if "attempt_0" in p)
