"""What the probe generators under tools/probe*/ share: picking jobs from the command line, running one
torchrun job under `timeout` while honouring the kill files its workers leave, and rewriting this machine's
paths in the kept logs to neutral ones (/home/user/...).

Each generator stays a standalone script (`python tools/probeNN/gen.py OUT [name-substring ...]`); it puts
this folder on `sys.path` to import this module.
"""
import contextlib
import functools
import os
import pathlib
import signal
import subprocess
import sys
import time


def run_selected(table, run):
    """`run(out_root, row)` for each row of `table` whose name (its first field) contains one of the
    command line's substrings, or for every row when none is given. OUT is the first argument."""
    out_root = pathlib.Path(sys.argv[1]).resolve()
    pick = sys.argv[2:]
    for row in table:
        if not pick or any(p in row[0] for p in pick):
            run(out_root, row)


def run_with_kill_files(cmd, job_dir, env, timeout_s=150, *, log=None, cwd=None, timeout_signal="TERM",
                        own_session=False):
    """Run `cmd` in `cwd` (default job_dir) under `timeout -s <timeout_signal>`, its output into `log`
    (default job_dir/console.log). A worker that wants to be killed from outside (the `kill9` faults) writes
    its pid into `kill.<rank>` in `cwd`: that pid is sent SIGKILL and the file removed. With `own_session`
    the job runs in a session of its own whose process group is killed at the end (a launcher such as
    Lightning's leaves its child ranks behind when its parent is killed). Returns the exit code."""
    cwd = cwd or job_dir
    with open(log or job_dir / "console.log", "w") as fh:
        proc = subprocess.Popen(["timeout", "-s", timeout_signal, str(timeout_s), *cmd], stdout=fh,
                                stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=own_session)
        while proc.poll() is None:
            for k in cwd.glob("kill.*"):
                time.sleep(0.5)
                try:
                    os.kill(int(k.read_text()), signal.SIGKILL)
                except (ValueError, ProcessLookupError):
                    continue
                k.unlink()
            time.sleep(0.3)
    if own_session:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode


def rewrite_paths(root, subs, keep=("job.yaml",), binary_suffixes=()):
    """Replace each (old, new) of `subs`, in order, in every file under `root` but the ones named in
    `keep` and the ones with a suffix in `binary_suffixes`."""
    for p in root.rglob("*"):
        if p.is_file() and p.name not in keep and p.suffix not in binary_suffixes:
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


@functools.cache
def torch_prefix(python):
    """The environment whose torch `python` imports (its `<prefix>/lib/pythonX.Y/site-packages/torch`): a
    venv that takes torch from another one through a `.pth` file prints that one's paths in its tracebacks,
    and they are rewritten like the venv's own."""
    code = "import pathlib, torch; print(pathlib.Path(torch.__file__).parents[4])"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def job_meta(job_dir):
    """A kept job's `job.yaml` as the cutters read it: its `key: value` lines (comments aside) and its first
    line, the job's provenance."""
    text = (job_dir / "job.yaml").read_text()
    meta = {k.strip(): v.strip() for k, v in (x.split(":", 1) for x in text.splitlines()
                                              if x and not x.startswith("#"))}
    return meta, text.splitlines()[0]


# torchrun's failure report opens with this line and ends at its closing `=====` rule
TABLE_START = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"


def failure_table(console):
    """The lines of the first torchrun failure report in `console`, from its ChildFailedError line to its
    closing `=====` rule (the rest of the console when the rule is missing), as a user pastes the table
    alone; [] when there is none."""
    for i, line in enumerate(console):
        if line.startswith(TABLE_START):
            closing = (j for j in range(i + 3, len(console)) if console[j].startswith("====="))
            end = next(closing, len(console) - 1)
            return console[i:end + 1]
    return []


def grep_context(lines, pattern):
    """`grep -n -B2 -A2` of `pattern` over `lines`: `N:` before a hit, `N-` before a context line, `--`
    between separate groups."""
    hit = [i for i, x in enumerate(lines) if pattern.search(x)]
    keep = sorted({k for i in hit for k in range(max(0, i - 2), min(len(lines), i + 3))})
    out, prev = [], None
    for k in keep:
        if prev is not None and k != prev + 1:
            out.append("--")
        out.append(f"{k + 1}{':' if k in hit else '-'}{lines[k]}")
        prev = k
    return out
