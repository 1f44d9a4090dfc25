"""The linters and type checker the project is held to, run as tests so CI enforces them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff() -> None:
    p = run(tool("ruff"), "check", "hanglens", "tests")
    assert p.returncode == 0, p.stdout + p.stderr


def test_import_layers() -> None:
    p = run(tool("lint-imports"))
    assert p.returncode == 0, p.stdout + p.stderr


def test_mypy_strict() -> None:
    p = run(tool("mypy"))
    assert p.returncode == 0, p.stdout + p.stderr
