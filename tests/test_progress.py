"""Progress while reading: the callback counts bytes and files; the CLI bar shows on a terminal only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hanglens.ingest import Meter, ReadProgress, read_inputs

ROOT = Path(__file__).resolve().parents[1]

# Lines written here from the c10d/NCCL templates of the format reference (torch 2.4-2.9).
TIMEOUT = (
    "[rank{r}]:[E1203 04:11:{s:02d}.518220731 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, "
    "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
)
CHATTER = "node07:51123:51180 [{r}] NCCL INFO Channel 03/0 : {r}[{r}] -> 1[1] via P2P/CUMEM/read\n"


def _job(root: Path, ranks: int = 4) -> Path:
    for r in range(ranks):
        text = CHATTER.format(r=r) * (20 + r) + (TIMEOUT.format(r=r, s=10 + r) if r != 2 else "")
        (root / f"rank{r}.log").write_text(text, encoding="utf-8")
    return root


def test_meter_reports_chunks_then_the_rest_of_each_file() -> None:
    seen: list[ReadProgress] = []
    m = Meter(100, 2, seen.append)
    m.advance(30)
    m.advance(0)  # nothing to say
    m.file_done(60)  # 30 of its 60 bytes were reported as chunks
    m.file_done(40)
    assert seen == [ReadProgress(30, 100, 0, 2), ReadProgress(60, 100, 1, 2), ReadProgress(100, 100, 2, 2)]


def test_meter_never_passes_its_totals() -> None:
    seen: list[ReadProgress] = []
    m = Meter(10, 1, seen.append)
    m.advance(25)
    m.file_done(50)
    m.file_done(50)
    assert seen[-1] == ReadProgress(10, 10, 1, 1)
    assert all(p.bytes_done <= p.bytes_total and p.files_done <= p.files_total for p in seen)


@pytest.mark.parametrize("jobs", [1, 2])
def test_read_inputs_reports_every_file(tmp_path: Path, jobs: int) -> None:
    job = _job(tmp_path)
    total = sum(p.stat().st_size for p in job.iterdir())
    seen: list[ReadProgress] = []
    ing = read_inputs([job], jobs=jobs, progress=seen.append)
    assert len(ing.files) == 4
    assert [p.files_done for p in seen] == [1, 2, 3, 4]
    assert {(p.bytes_total, p.files_total) for p in seen} == {(total, 4)}
    done = [p.bytes_done for p in seen]
    assert done == sorted(done) and done[-1] == total


def test_progress_changes_no_result(tmp_path: Path) -> None:
    job = _job(tmp_path)
    assert read_inputs([job], jobs=1, progress=lambda p: None).events == read_inputs([job], jobs=1).events


# The command line, with stderr on a pseudo-terminal or a pipe. The bar's delay is set to 0 (it normally
# waits two seconds), so whether it shows depends only on the terminal and the options.
_RUN = "import sys, hanglens.cli as c; c.PROGRESS_DELAY_S = 0; from hanglens.__main__ import main; main()"


def _hanglens(args: list[str], *, tty: bool) -> tuple[bytes, bytes]:
    """(stdout, stderr) of `hanglens ARGS`; stderr is a pseudo-terminal when `tty`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", COLUMNS="120")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)
    cmd = [sys.executable, "-c", _RUN, *args]
    if not tty:
        p = subprocess.run(cmd, capture_output=True, env=env, stdin=subprocess.DEVNULL, check=False)
        assert p.returncode in (0, 1), p.stderr
        return p.stdout, p.stderr
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    err = bytearray()
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: every holder of the terminal has closed it
            break
        if not data:
            break
        err += data
    os.close(master)
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert proc.wait() in (0, 1), bytes(err)
    return out, bytes(err)


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_bar_on_a_terminal_never_on_a_pipe(tmp_path: Path) -> None:
    job = str(_job(tmp_path))
    out, err = _hanglens(["analyze", job], tty=True)
    assert b"reading" in err or b"analysing" in err
    assert b"4/4 files" in err  # the last report, drawn when the bar stops
    assert out.startswith(b"hanglens: ") and b"4/4 files" not in out and b"\x1b" not in out

    out_pipe, err_pipe = _hanglens(["analyze", job], tty=False)
    assert err_pipe == b""
    assert out_pipe.splitlines()[:3] == out.splitlines()[:3]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("extra", [["--quiet"], ["--format", "json"]])
def test_no_bar_when_quiet_or_json_on_stdout(tmp_path: Path, extra: list[str]) -> None:
    _, err = _hanglens(["analyze", str(_job(tmp_path)), *extra], tty=True)
    assert b"files" not in err and b"reading" not in err
