"""Where the material beside the repository lives (`../shared`), and what a test does when it is absent.

`../shared` is resolved from this file, never from an absolute path, so the tests find it wherever the
clone is. Without it the tests that need it skip and say why; under `CI=true` they fail instead, because
CI always has `../shared` beside the clone and a silent skip there would hide a broken layout.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
REAL_LOGS = SHARED / "real-logs"
T = TypeVar("T")


def require(path: Path) -> NoReturn:
    """Skip the calling test because `path` is missing (fail instead under CI=true)."""
    reason = f"{path} is not present (expected ../shared beside the repository at {REPO.parent})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must provide it", pytrace=False)
    pytest.skip(reason)


def or_missing(items: list[Any], width: int = 1) -> list[Any]:
    """`items` for parametrize, or one placeholder case (all None) whose test must call `require`."""
    if items:
        return items
    return [pytest.param(*([None] * width), id="shared-missing")]


def present(item: T | None, path: Path) -> T:
    """`item` of an `or_missing` list; for the placeholder, skip (or fail under CI) naming `path`."""
    if item is None:
        require(path)
    return item
