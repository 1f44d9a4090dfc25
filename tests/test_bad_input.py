"""Bad input through the CLI: each problem is a skip with a reason or one error line (exit 2), no traceback.

Documented behaviour: a path that does not exist -> `hanglens: <path>: no such file or folder`, exit 2;
a folder with nothing readable -> `hanglens: <path>: no log files found (...)`, exit 2; anything else
that cannot be read as a log is listed under `skipped` with its reason and the rest is read.
"""

from __future__ import annotations

import builtins
import gzip
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hanglens.cli import app

GOOD = b"[rank0]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 0] hello\n"


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            out[str(p.relative_to(root))] = (st.st_mode, st.st_size if not p.is_dir() else 0)
    return out


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _json(tmp_path: Path) -> dict[str, Any]:
    before = _snapshot(tmp_path)
    res = _run("events", "--format", "json", str(tmp_path))
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    assert _snapshot(tmp_path) == before            # nothing written anywhere
    doc: dict[str, Any] = json.loads(res.stdout)
    assert isinstance(doc["events"], list)
    return doc


def _skips(doc: dict[str, Any]) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in doc["skipped"]}


def test_binary_nul_invalid_utf8_cr_only_read_or_skipped(tmp_path: Path) -> None:
    (tmp_path / "ok.log").write_bytes(GOOD)
    (tmp_path / "blob.bin").write_bytes(bytes(range(1, 32)) * 300)
    (tmp_path / "nul.log").write_bytes(b"a\x00b\n" + GOOD + b"\x00" * 5000)
    (tmp_path / "latin1.log").write_bytes(b"caf\xe9 \xff\xfe\n" + GOOD)
    (tmp_path / "cr.log").write_bytes(GOOD.rstrip(b"\n") + b"\r" + b"x\r" * 5)
    doc = _json(tmp_path)
    assert _skips(doc) == {"blob.bin": "binary file (control bytes)"}
    res = _run("inputs", "--format", "json", str(tmp_path))
    files = {f["path"]: f for f in json.loads(res.stdout)["files"]}
    assert set(files) == {"ok.log", "nul.log", "latin1.log", "cr.log"}
    assert files["cr.log"]["lines"] == 6
    assert files["nul.log"]["ranks"] == [0] and files["latin1.log"]["ranks"] == [0]


def test_fifty_megabyte_single_line_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "one-line.log"
    with open(big, "wb") as fh:
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            fh.write(chunk)
        fh.write(b"\n" + GOOD)
    res = _run("inputs", "--format", "json", str(tmp_path))
    assert res.exit_code == 0
    (f,) = json.loads(res.stdout)["files"]
    assert f["lines"] == 2 and f["ranks"] == [0]
    assert any("longer than" in n for n in f["notes"])


def test_truncated_gz_reads_what_it_can_and_says_so(tmp_path: Path) -> None:
    data = gzip.compress(GOOD * 2000)
    (tmp_path / "cut.log.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "junk.gz").write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    doc = _json(tmp_path)
    skips = _skips(doc)
    assert "read stopped after line" in skips["cut.log.gz"]
    assert "junk.gz" in skips


def test_empty_folder_and_missing_path_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    cases = ((tmp_path / "empty", "no log files found"), (tmp_path / "nope", "no such file or folder"))
    for path, msg in cases:
        res = CliRunner().invoke(app, ["events", str(path)])
        assert res.exit_code == 2
        assert msg in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert "Traceback" not in res.stderr


def test_only_binary_input_is_an_error_naming_the_skip(tmp_path: Path) -> None:
    (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    res = CliRunner().invoke(app, ["inputs", str(tmp_path)])
    assert res.exit_code == 2 and "x.png: binary file (PNG image)" in res.stderr


def test_unreadable_file_symlink_loop_fifo_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ok.log").write_bytes(GOOD)
    (tmp_path / "secret.log").write_bytes(GOOD)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    (tmp_path / "devnull").symlink_to("/dev/null")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to(tmp_path)          # folder loop: walked once
    real_open = builtins.open

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).endswith("secret.log"):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    doc = _json(tmp_path)
    skips = _skips(doc)
    assert skips["secret.log"] == "cannot read: Permission denied"
    assert skips["loop"] == "symlink loop"
    assert skips["dangling"] == "broken symlink"
    assert skips["devnull"] == "not a regular file (device)"
    assert skips["pipe"] == "not a regular file (fifo)"
    res = _run("inputs", str(tmp_path))
    assert "skipped\tpipe\tnot a regular file (fifo)" in res.stdout


def test_archive_members_with_bad_paths(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "a.tar.gz", "w:gz") as tf:
        for name in ("/abs/rank1.log", "../../rank2.log", "fine/rank3.log"):
            info = tarfile.TarInfo(name)
            info.size = len(GOOD)
            tf.addfile(info, io.BytesIO(GOOD))
    doc = _json(tmp_path)
    assert set(_skips(doc)) == {"a.tar.gz!/abs/rank1.log", "a.tar.gz!../../rank2.log"}
    assert not (tmp_path.parent / "rank2.log").exists()
