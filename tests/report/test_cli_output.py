"""What the CLI prints and writes: paths checked first, flags shown as flags, escaped text, safe names."""

from __future__ import annotations

import csv
import io
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import hanglens
from hanglens import api
from hanglens.cli import EXIT_STDOUT_CLOSED, app

from .joblogs import ABORTED, write_job

ESC = "\x1b]0;owned\x07\x1b[2J"
OOM = (
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB. GPU 1 has a total "
    "capacity of 39.39 GiB of which 12.50 MiB is free. Including non-PyTorch memory, this process has "
    "39.37 GiB memory in use.\n"
)


def run(*args: str, columns: int = 100, **env: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": str(columns), **env})


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return write_job(tmp_path / "job", {"rank1.log": OOM})


# 8. output mistakes are refused before the work, in one line ------------------------------------------


def test_missing_output_folder_is_refused_before_the_analysis(job: Path, tmp_path: Path) -> None:
    for flag in ("--html", "--markdown", "--output"):
        res = run("analyze", str(job), flag, str(tmp_path / "missing-dir" / "x.out"))
        assert res.exit_code == 2
        assert res.output.strip().splitlines() == [
            f"hanglens: cannot write {tmp_path / 'missing-dir' / 'x.out'}: no such folder "
            f"{tmp_path / 'missing-dir'}"
        ]
    res = run("analyze", str(job), "--output", str(tmp_path))
    assert res.exit_code == 2 and "internal error" not in res.output
    assert f"cannot write {tmp_path}: it is a folder" in res.output


def test_reports_are_written_when_the_paths_are_good(job: Path, tmp_path: Path) -> None:
    res = run("analyze", str(job), "--html", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "r.md"))
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r.html").stat().st_size > 1000 and (tmp_path / "r.md").stat().st_size > 100


# 10. help shows flags as flags --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["analyze", "events", "inputs", "scan", "demo"])
def test_help_shows_flags_as_flags(command: str) -> None:
    res = run(command, "--help")
    assert res.exit_code == 0
    usage = res.output.splitlines()[0]
    assert "<bool>" not in res.output and "<list[" not in res.output and "{" not in usage
    assert "<path>" not in res.output
    for line in res.output.splitlines():
        if line.strip().startswith(("--help", "--redact", "--force")):
            assert line.split()[1:2] != ["<bool>"] and not line.split()[1].startswith("<")
    if command == "analyze":
        assert "Usage: hanglens analyze [OPTIONS] PATH..." in res.output
        assert "--html FILE" in res.output


def test_usage_errors_are_one_line() -> None:
    res = run("analyze", "--bogus", "x")
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        "hanglens: No such option: --bogus (see `hanglens analyze --help`)"
    ]


# a reader that goes away (`hanglens demo | head -1`) ends the command quietly ----------------------------


@pytest.mark.parametrize("args", [("demo", "--output", "{tmp}"), ("analyze", "{job}"),
                                  ("analyze", "{job}", "-f", "json"), ("events", "{job}"), ("--version",),
                                  ("--help",)])
def test_a_closed_stdout_ends_quietly_with_its_own_exit_code(args: tuple[str, ...], job: Path,
                                                             tmp_path: Path) -> None:
    root = Path(hanglens.__file__).resolve().parents[1]
    argv = [a.format(tmp=tmp_path, job=job) for a in args]
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write gets EPIPE, as after `| head -1` exits
    try:
        env = dict(os.environ, PYTHONPATH=str(root), HANGLENS_CACHE_DIR=str(tmp_path / "c"))
        proc = subprocess.run([sys.executable, "-m", "hanglens", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, env=env, cwd=tmp_path, timeout=300)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr.decode()) == (EXIT_STDOUT_CLOSED, "")
    if args[0] == "demo":  # the report is written before the text: it is complete
        report = tmp_path / "hanglens-demo-report.html"
        assert report.read_text(encoding="utf-8").rstrip().endswith("</html>")


# 12. events, scan ---------------------------------------------------------------------------------------


def test_unknown_event_kind_lists_the_valid_kinds(job: Path) -> None:
    res = run("events", str(job), "--kind", "bogus")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "unknown event kind bogus" in lines[0] and "oom" in lines[0]
    assert "hang_detected" in lines[0]


def test_text_events_have_host_and_time_columns(tmp_path: Path) -> None:
    log = (
        "[rank0]:[E0611 14:02:29.118204511 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=512, NumelOut=512, "
        "Timeout(ms)=600000) ran for 600091 milliseconds before timing out.\n"
    )
    job = write_job(tmp_path / "node-4", {"rank0.log": log})
    res = run("events", str(job), "--kind", "hang_detected")
    assert res.exit_code == 0, res.output
    cols = res.output.splitlines()[0].split("\t")
    assert cols[0].endswith("rank0.log:1") and cols[1] == "rank 0"
    assert cols[3] == "06-11 14:02:29.118" and cols[4] == "hang_detected"


def test_scan_refuses_a_missing_root_and_writes_nothing(tmp_path: Path) -> None:
    res = run("scan", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2
    assert (
        res.output.strip()
        .splitlines()[0]
        .startswith(f"hanglens: {tmp_path / 'nope'}: no such file or folder")
    )
    assert not (tmp_path / "out").exists()


@pytest.fixture
def inline_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    real = api.scan

    def scan(*args: Any, **kwargs: Any) -> Any:
        kwargs["engine"] = "inline"  # no process pool in a unit test
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "scan", scan)


def test_scan_prints_jobs_per_category_and_iso_times(tmp_path: Path, inline_scan: None) -> None:
    root = tmp_path / "archive"
    write_job(root / "job-a", {"rank1.log": "2025-06-11T14:02:31.412Z " + OOM})  # a scheduler's timestamp
    write_job(root / "job-b", {"console.log": ABORTED})  # glog times carry no year
    old = os.umask(0o022)
    try:
        res = run("scan", str(root), "--out", str(tmp_path / "out"))
    finally:
        os.umask(old)
    assert res.exit_code == 0, res.output
    assert "jobs per category:" in res.output
    assert "  1  oom  Out of memory" in res.output and "  1  unknown  Failure not explained" in res.output
    rows = {
        r["path"].rsplit("/", 1)[-1]: r
        for r in csv.DictReader(io.StringIO((tmp_path / "out" / "jobs.csv").read_text()))
    }
    assert rows["job-a"]["first_ts"] == "2025-06-11T14:02:31.412"  # ISO 8601, not an epoch float
    assert rows["job-b"]["first_ts"] == ""  # year unknown: empty, not the year 2000
    # 9. files others can read: the umask decides, not mkstemp's 0600
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert written and {stat.S_IMODE(p.stat().st_mode) for p in written} == {0o644}


def test_scan_closing_line_adds_up_when_a_job_cannot_be_analysed(tmp_path: Path, inline_scan: None) -> None:
    root = tmp_path / "archive"
    write_job(root / "job-a", {"rank1.log": OOM})
    (root / "job-b").mkdir(parents=True)
    (root / "job-b" / "rank0.log").write_bytes(b"\x00\xff" * 4096)   # binary: no log in this job
    res = run("scan", str(root), "--out", str(tmp_path / "out"))
    assert res.exit_code == 1, res.output
    # 2 jobs = 1 analysed + 1 not; how many ran now or came from the cache is said apart
    assert "scanned 2 jobs: 1 analysed, 1 could not be analysed (2 run now, 0 from cache)" in res.output
    page = (tmp_path / "out" / "index.html").read_text()
    assert "2 jobs: 1 analysed, 1 could not be analysed" in page


def test_yearless_times_are_empty_in_jobs_csv(tmp_path: Path, inline_scan: None) -> None:
    log = (
        "[rank0]:[E0611 14:02:29.118204511 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=512, NumelOut=512, "
        "Timeout(ms)=600000) ran for 600091 milliseconds before timing out.\n"
    )
    write_job(tmp_path / "archive" / "job-c", {"rank0.log": log})
    res = run("scan", str(tmp_path / "archive"), "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    text = (tmp_path / "out" / "jobs.csv").read_text()
    (row,) = csv.DictReader(io.StringIO(text))
    assert row["first_ts"] == "" and "2000-" not in text


# issue 12, item 5: no terminal escape from a log, a file name or a rule reaches the terminal ---------------


def test_events_and_inputs_escape_log_text_and_file_names(tmp_path: Path) -> None:
    log = f"[rank0]: RuntimeError: bad batch {ESC} in shard 3\n"
    job = write_job(tmp_path / "job", {f"rank0{ESC}.log": log})
    for args in (["events", str(job)], ["events", str(job), "-f", "csv"], ["inputs", str(job)]):
        res = run(*args)
        assert res.exit_code == 0, res.output
        assert "\x1b" not in res.output and "\x07" not in res.output, args
        assert "\\x1b]0;owned\\x07" in res.output, args


def test_error_lines_and_rule_output_are_escaped(tmp_path: Path) -> None:
    res = run("analyze", str(tmp_path / f"gone{ESC}"))
    assert res.exit_code == 2 and "\x1b" not in res.output and "\\x1b[2J" in res.output
    res = run("rules", "explain", f"x{ESC}")
    assert res.exit_code == 2 and "\x1b" not in res.output and len(res.output.strip().splitlines()) == 1
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / f"bad{ESC}.yaml").write_text(f"id: bad\ntitle: {ESC!r}\ncategory: [\n", encoding="utf-8")
    res = run("rules", "check", str(rules))
    assert res.exit_code == 2 and "\x1b" not in res.output and "\\x1b" in res.output


# issue 12, item 6: a file name that is not UTF-8 --------------------------------------------------------


@pytest.fixture
def latin1_job(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    name = os.fsencode(job) + b"/rank1-caf\xe9.log"
    try:
        with open(name, "wb") as fh:
            fh.write(OOM.encode())
    except OSError:
        pytest.skip("this filesystem refuses a file name that is not UTF-8")
    return job


def test_a_non_utf8_file_name_does_not_break_the_reports(latin1_job: Path, tmp_path: Path) -> None:
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    res = run("analyze", str(latin1_job), "--html", str(html), "--markdown", str(md))
    assert res.exit_code == 0, res.output
    assert "internal error" not in res.output
    for out in (html.read_text(encoding="utf-8"), md.read_text(encoding="utf-8"), res.output):
        assert "rank1-caf\\xe9.log" in out
    res = run("analyze", str(latin1_job), "--format", "json")
    assert res.exit_code == 0 and "rank1-caf\\\\xe9.log" in res.output
    res = run("inputs", str(latin1_job))
    assert res.exit_code == 0 and "rank1-caf\\xe9.log" in res.output


def test_a_non_utf8_file_name_does_not_lose_the_scan(latin1_job: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    table = api.scan([latin1_job.parent], out=out, engine="inline")
    assert len(table) == 1 and table.loc[0, "category"] == "oom"
    assert "oom" in (out / "jobs.csv").read_text(encoding="utf-8")
    reports = list((out / "jobs").rglob("report.html"))
    assert reports and "caf\\xe9" in reports[0].read_text(encoding="utf-8")
