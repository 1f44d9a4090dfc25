#!/usr/bin/env python3
"""Render the demo report and one failure no rule explains, and screenshot both in headless Chromium.

So the next change to the report is looked at, not guessed:

    python tools/screenshot_report.py OUT_DIR [--widths 800,1400]

writes OUT_DIR/<case>.html, OUT_DIR/<case>-<width>.png for each width (the whole page up to 4000 px
tall) and OUT_DIR/<case>-<columns>col.txt, the terminal summary at 80 and 200 columns. Needs Chromium
(`apt-get install chromium`); without it the HTML and text are still written and the script exits 3.

The unexplained case is a console log written here from the log-format reference (torch 2.4-2.5 c10
envelope, ProcessGroupNCCL watchdog lines): one rank of eight timed out in an ALLREDUCE and no other
rank left a line, so no rule names a culprit.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from hanglens import api
from hanglens.report import render_html, render_text

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
UNEXPLAINED_LOG = """\
[rank5]:[E0214 06:41:12.118204511 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective operation \
timeout: WorkNCCL(SeqNum=3318, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=900000) ran for \
900117 milliseconds before timing out.
[rank5]:[E0214 06:41:12.118290043 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) Rank 5] Exception (either \
an error or timeout) detected by watchdog at work: 3318, last enqueued NCCL work: 3318, last completed NCCL \
work: 3317.
[rank5]:[E0214 06:41:12.118301977 ProcessGroupNCCL.cpp:630] [Rank 5] Some NCCL operations have failed or \
timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on \
corrupted/incomplete data.
[rank5]:[E0214 06:41:12.118309412 ProcessGroupNCCL.cpp:636] [Rank 5] To avoid data inconsistency, we are \
taking the entire process down.
"""


def chromium() -> str | None:
    return next(
        (
            p
            for p in (
                shutil.which("chromium"),
                shutil.which("chromium-browser"),
                shutil.which("google-chrome"),
            )
            if p
        ),
        None,
    )


def screenshot(browser: str, page: Path, png: Path, width: int, height: int = 4000) -> None:
    """Chromium's own `--screenshot` of `page` in a window `width` px wide (a fresh profile each time)."""
    with tempfile.TemporaryDirectory(prefix="hanglens-shot-", ignore_cleanup_errors=True) as profile:
        subprocess.run(
            [
                browser,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                f"--window-size={width},{height}",
                page.resolve().as_uri(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )


def documents(work: Path) -> dict[str, dict[str, object]]:
    """The analysis documents to render: the bundled demo job and the unexplained timeout."""
    with resources.as_file(resources.files("hanglens") / "_demo" / "job") as job:
        demo = api.analyze([job], command="hanglens demo").to_dict()
    logs = work / "unexplained-job"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "console.log").write_text(UNEXPLAINED_LOG, encoding="utf-8")
    unexplained = api.analyze([logs], command="hanglens analyze unexplained-job/").to_dict()
    return {"demo": demo, "unexplained": unexplained}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the HTML, PNG and text files")
    ap.add_argument("--widths", default="800,1400", help="page widths in px, comma-separated")
    args = ap.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    widths = [int(w) for w in args.widths.split(",") if w.strip()]
    browser = chromium()
    with tempfile.TemporaryDirectory(prefix="hanglens-shot-logs-") as work:
        docs = documents(Path(work))
    for name, doc in docs.items():
        page = out / f"{name}.html"
        page.write_text(render_html(doc), encoding="utf-8")
        for cols in (80, 200):
            (out / f"{name}-{cols}col.txt").write_text(
                render_text(doc, color=False, width=cols), encoding="utf-8"
            )
        if browser is None:
            continue
        for w in widths:
            png = out / f"{name}-{w}.png"
            screenshot(browser, page, png, w)
            print(png)
    if browser is None:
        print("chromium not found: wrote HTML and text only", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
