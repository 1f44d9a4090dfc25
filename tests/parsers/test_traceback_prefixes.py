"""A Python traceback behind any consistent per-line prefix is found, and the host or rank the prefix names is
kept. Lines are written here from ../shared/reference/log-formats.md §9.3 (pdsh/DeepSpeed, SLURM `srun -l`,
Open MPI `--tag-output`, torchrun `--tee`, `[rankN]:`) and from made-up prefixes no reader knows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hanglens import api
from hanglens.parsers.traceback import TracebackParser

from .harness import assert_never_breaks
from .harness import events as read_events


def tb(prefix: str, exc: str, file: str = "/home/user/job/train.py") -> str:
    body = ["Traceback (most recent call last):",
            f"  File \"{file}\", line 212, in <module>",
            "    main(cfg)",
            f"  File \"{file}\", line 160, in main",
            "    batch = collate(items)",
            exc]
    return "".join(f"{prefix}{ln}\n" for ln in body)


def exceptions(text: str) -> list[tuple[int | None, str | None, str | None, int]]:
    return [(e.rank, e.host, e.get("exc_type"), len(e.get("frames") or []))
            for e in read_events([TracebackParser], text, "exception")]


@pytest.mark.parametrize(("prefix", "rank", "host"), [
    ("trn-node07: ", None, "trn-node07"),                 # pdsh, as the DeepSpeed multi-node runner collects
    ("10.1.4.22: ", None, "10.1.4.22"),
    ("[1,3]<stderr>:", 3, None),                          # Open MPI tags one process: mpirun started rank 3
    ("[default2]:", None, None),                           # torchrun --tee: a local rank only
    ("[rank6]: ", 6, None),
    ("host17 | ", None, "host17"),                         # a prefix nobody told the reader about
    ("[node3] ", None, "node3"),
    ("worker-2> ", None, "worker-2"),
    ("[trainer rank 5] ", 5, None),
    ("2026-01-05 10:00:01 | ERROR | ", None, None),
])
def test_traceback_behind_a_prefix(prefix: str, rank: int | None, host: str | None) -> None:
    text = "job started\n" + tb(prefix, "KeyError: 'input_ids'") + "job ended\n"
    assert exceptions(text) == [(rank, host, "KeyError", 2)]


def test_srun_labels_right_aligned() -> None:
    lines = [f"{t:>2}: step 40 loss 1.2\n" for t in range(12)]
    text = "".join(lines) + tb(" 9: ", "ValueError: shapes (4,) and (3,) not aligned") + " 0: step 41\n"
    # srun started the workers (no launcher under any label): the task id is SLURM_PROCID, the rank (§9.3)
    assert exceptions(text) == [(9, None, "ValueError", 2)]
    teed = " 4: [default1]:step 41\n"   # a torchrun --tee under a label: the task id is a node
    assert exceptions(text + teed) == [(None, None, "ValueError", 2)]


def test_deepspeed_runner_two_hosts_interleaved() -> None:
    a = tb("gpu-b11: ", "RuntimeError: CUDA error: device-side assert triggered").splitlines(keepends=True)
    b = tb("gpu-b12: ", "torch.distributed.DistBackendError: NCCL error").splitlines(keepends=True)
    text = ("[2026-02-10 07:30:12,410] [INFO] [runner.py:571:main] cmd = pdsh -S -f 1024 -w gpu-b11,gpu-b12\n"
            "gpu-b11: [2026-02-10 07:30:15,002] [INFO] [launch.py:146:main] WORLD INFO DICT: {}\n"
            + "".join(x + y for x, y in zip(a, b, strict=True))
            + "gpu-b11: [2026-02-10 07:31:02,118] [INFO] [launch.py:319:sigkill_handler] Killing 7\n"
            "pdsh@gpu-b10: gpu-b11: ssh exited with exit code 1\n")
    want = [(None, "gpu-b11", "RuntimeError", 2), (None, "gpu-b12", "torch.distributed.DistBackendError", 2)]
    assert sorted(exceptions(text), key=str) == sorted(want, key=str)


def test_prefix_before_traceback_only_then_bare_frames() -> None:
    text = ("12:00:01 WARNING logger: Traceback (most recent call last):\n"
            "  File \"/home/user/job/io.py\", line 8, in <module>\n"
            "    load()\n"
            "OSError: [Errno 121] Remote I/O error\n")
    assert exceptions(text) == [(None, None, "OSError", 1)]


@pytest.mark.parametrize("text", [
    "note: Traceback (most recent call last): is printed below when it fails\nall good\n",
    "x: Traceback (most recent call last):\n" * 200,
    "a: Traceback (most recent call last):\na:   File \"q\", line 1, in f\n" * 50,
    "[x] Traceback (most recent call last):\n" + "unrelated\n" * 40 + "[x]   File \"q\", line 1, in f\n",
])
def test_lookalikes_give_nothing_and_never_break(text: str) -> None:
    assert_never_breaks(TracebackParser, text)
    assert all(exc is not None or frames for _, _, exc, frames in exceptions(text))
    if "note:" in text or "unrelated" in text:
        assert exceptions(text) == []


def test_a_host_prefixed_crash_is_not_called_healthy(tmp_path: Path) -> None:
    lines = [f"{h}: [2026-02-10 07:30:{s:02d},100] [INFO] [launch.py:146:main] step {s}\n"
             for s in range(3) for h in ("gpu-c01", "gpu-c02")]
    text = "".join(lines) + tb("gpu-c02: ", "ZeroDivisionError: division by zero")
    (tmp_path / "deepspeed.log").write_text(text)
    doc = api.analyze([tmp_path]).to_dict()
    assert doc["verdict"]["category"] != "none"
    (exc,) = [e for e in read_events([TracebackParser], text, "exception")]
    assert exc.host == "gpu-c02" and exc.get("exc_type") == "ZeroDivisionError"
