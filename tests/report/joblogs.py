"""Small job logs for the report tests, written here from the log-format reference (own values).

`ABORTED`: torchrun 2.x agent output (elastic `api.py` failure line and the ChildFailedError table) in
which two workers were killed by SIGABRT and left no line of their own. `UNEXPLAINED` (in
tools/screenshot_report.py) is one rank's ProcessGroupNCCL watchdog timeout, torch 2.4-2.5 envelope.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from failure_table import HEADER, failure_table
from failure_table import Failure as F

_NODE_7 = {"host": "node-7", "time": "2025-06-11_14:02:31"}

REPO = Path(__file__).resolve().parents[2]

ABORTED = """\
E0611 14:02:31.412000 77120 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -6) \
local_rank: 0 (pid: 77131) of binary: /usr/bin/python3
""" + failure_table(F(0, -6, 77131, **_NODE_7), F(1, -6, 77132, **_NODE_7),
                        header=HEADER + " ")


def screenshot_tool() -> ModuleType:
    """tools/screenshot_report.py as a module (it is a script, not part of the package)."""
    path = REPO / "tools" / "screenshot_report.py"
    spec = importlib.util.spec_from_file_location("screenshot_report", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_job(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
