"""Generator of the held-out probe52: real torchrun (gloo, CPU) silent hangs seen only through the script's
own lines (tools/probe52/silent.py), stopped from outside, plus healthy and finished-but-slow runs.

Each case's truth is written into <out>/<case>/case.yaml before the job runs; the job's console (and its
--log-dir tree, and any stack dump the job or the user left) is kept, machine paths rewritten to /home/user/...
A stall is judged established once the stalling rank entered its stall and no rank printed for QUIET seconds; then the job
is stopped: `term` SIGTERM to torchrun, `ctrlc` SIGINT to the whole process group (a terminal's Ctrl-C),
`kill` SIGKILL to torchrun's process group and to every worker (nothing is printed), `timeout` the job ran under `timeout -s TERM`.
Usage: python run_probe52.py OUT [case-name-substring ...]   (one job at a time; run with the Python that
has torch 2.13, whose torchrun is used, or set TORCHRUN; PYSPY names py-spy for the `pyspy` dump cases)
"""
import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
TORCHRUN = os.environ.get("TORCHRUN", str(pathlib.Path(sys.executable).with_name("torchrun")))
VENV = str(pathlib.Path(TORCHRUN).parent.parent)   # rewritten to /home/user/.venv in the kept logs
PYSPY = os.environ.get("PYSPY", "py-spy")
STRAG, CFD = "straggler", "control_flow_divergence"
STALLED = [STRAG, CFD]

# name, stall, where, bad ranks, world size, output (logdir | tee | plain), style, stop, dump, culprit_ranks
# (dump: "" or "fh:<pattern with {rank}>" (faulthandler in the job) or "pyspy:<pattern with {rank}>")
CASES = [
    ("sleep-vocab-r1-ws2-logdir", "sleep", "before", [1], 2, "logdir", "none", "term", "", [1]),
    ("sleep-vocab-r0-ws2-logdir", "sleep", "before", [0], 2, "logdir", "none", "term", "", [0]),
    ("spin-vocab-r2-ws4-tee", "spin", "before", [2], 4, "tee", "none", "ctrlc", "", [2]),
    ("lock-shard-r3-ws4-logdir-logging", "lock", "between", [3], 4, "logdir", "logging", "term", "", [3]),
    ("pipe-shard-r0-ws3-tee-tag", "pipe", "between", [0], 3, "tee", "tag", "timeout", "", [0]),
    ("subproc-vocab-r5-ws8-logdir", "subproc", "before", [5], 8, "logdir", "none", "term", "", [5]),
    ("sleep-shard-r1-ws4-plain-tag", "sleep", "between", [1], 4, "plain", "tag", "ctrlc", "", [1]),
    ("spin-shard-r2-ws3-plain-untagged", "spin", "between", [2], 3, "plain", "none", "term", "", "unknown"),
    ("lock-vocab-r0-ws4-plain-gpu-kill", "lock", "before", [0], 4, "plain", "gpu", "kill", "", [0]),
    ("pipe-vocab-r3-ws6-logdir-rich", "pipe", "before", [3], 6, "logdir", "rich", "ctrlc", "", [3]),
    ("sleep-own-section-r1-ws4-tee", "sleep", "extra", [1], 4, "tee", "none", "term", "", [1]),
    ("lock-own-section-r0-ws3-logdir-logging", "lock", "extra", [0], 3, "logdir", "logging", "timeout", "", [0]),
    ("subproc-shard-r2-ws5-tee-logging", "subproc", "between", [2], 5, "tee", "logging", "term", "", [2]),
    ("sleep-shard-r0-ws2-tee-tag", "sleep", "between", [0], 2, "tee", "tag", "ctrlc", "", [0]),
    ("sleep-shard-r1-ws2-tee-tag", "sleep", "between", [1], 2, "tee", "tag", "ctrlc", "", [1]),
    ("spin-vocab-r4-ws8-tee", "spin", "before", [4], 8, "tee", "none", "timeout", "", [4]),
    ("sleep-vocab-bar-r1-ws3-logdir", "sleep", "before", [1], 3, "logdir", "bar", "term", "", [1]),
    ("sleep-quiet-r2-ws4-logdir", "sleep", "quiet", [2], 4, "logdir", "none", "term", "", "unknown"),
    ("lock-shard-r1-ws3-plain-fh-dump", "lock", "between", [1], 3, "plain", "none", "term",
     "fh:stacks/rank{rank}.dump", [1]),
    ("pipe-vocab-r2-ws4-tee-pyspy", "pipe", "before", [2], 4, "tee", "none", "term", "pyspy:pyspy_rank{rank}.txt", [2]),
    ("sleep-quiet-r0-ws4-logdir-logging-fh", "sleep", "quiet", [0], 4, "logdir", "logging", "ctrlc",
     "fh:hang-{rank}.tb", [0]),
    ("sleep-shard-r3-ws4-logdir-kill", "sleep", "between", [3], 4, "logdir", "none", "kill", "", [3]),
    ("healthy-ws4-logdir-logging", "none", "before", [], 4, "logdir", "logging", "end", "", []),
    ("healthy-ws3-tee-tag", "none", "before", [], 3, "tee", "tag", "end", "", []),
    ("healthy-ws2-plain-untagged", "none", "before", [], 2, "plain", "none", "end", "", []),
    ("slow-r1-ws4-tee-tag", "slow", "between", [1], 4, "tee", "tag", "end", "", []),
    ("slow-r0-ws3-logdir", "slow", "between", [0], 3, "logdir", "none", "end", "", []),
]

OUT_WORDS = {"logdir": "--log-dir tree with --redirects 3 and the console", "tee": "console with --tee 3",
             "plain": "console captured with 2>&1"}
STOP_WORDS = {"term": "SIGTERM to torchrun", "ctrlc": "SIGINT to the process group (Ctrl-C)",
              "kill": "SIGKILL to the process group", "timeout": "timeout -s TERM around torchrun",
              "end": "ran to its end"}


def truth(c):
    name, stall, where, bad, ws, out, style, stop, dump, cul = c
    if stall in ("none", "slow"):
        cat, accept = "none", ["none"]
    else:
        cat, accept = STRAG, STALLED
    what = (f"rank {bad[0]} stalls ({stall}) {where} while its peers wait in an all_reduce/broadcast with a 30 "
            f"min timeout" if cat != "none" else
            ("healthy" if stall == "none" else f"finished, rank {bad[0]} 2.5 s slower per shard"))
    dumped = f"; stack dumps {dump}" if dump else ""
    cul_text = "unknown" if cul == "unknown" else f"[{', '.join(map(str, cul))}]"
    return (f"# real run (session 26, h26-silent, probe52): torch 2.13 CPU, gloo, torchrun --nproc-per-node {ws}, "
            f"{OUT_WORDS[out]}; generator tools/probe52/run_probe52.py + silent.py (STYLE={style}); {what}; "
            f"stop: {STOP_WORDS[stop]}{dumped}; truth written before hanglens ran; machine paths rewritten "
            f"to /home/user/...\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {cul_text}\n")


def rewrite(case_dir, subs):
    for p in case_dir.rglob("*"):
        if p.is_file() and p.name != "case.yaml":
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


def wait_stalled(mark, ws, quiet, cap):
    t0 = time.time()
    while time.time() - t0 < cap:
        files = list(pathlib.Path(mark).glob("rank*"))
        if len(files) == ws and pathlib.Path(mark, "stalled").exists() and time.time() - max(f.stat().st_mtime for f in files) > quiet:
            return True
        time.sleep(0.5)
    return False


def run(out_root, c):
    name, stall, where, bad, ws, out, style, stop, dump, _cul = c
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    (case_dir / "case.yaml").write_text(truth(c))
    mark = tempfile.mkdtemp(prefix="probe52-mark-")
    env = dict(os.environ, STALL=stall, WHERE=where, BAD=",".join(map(str, bad)), STYLE=style, MARKDIR=mark,
               PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    if dump.startswith("fh:"):
        env["DUMP"] = dump[3:]
    cmd = [TORCHRUN, "--nproc-per-node", str(ws), "--master-port", "29752"]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "silent.py")]
    if stop == "timeout":
        cmd = ["timeout", "-s", "TERM", str(30 + 4 * ws), *cmd]
    with open(case_dir / "console.log", "w") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=case_dir,
                             start_new_session=True)
        try:
            if stop in ("end", "timeout"):
                p.wait(timeout=180)
            else:
                wait_stalled(mark, ws, 9 if dump else 4, 150)
                if dump.startswith("pyspy:"):
                    for f in sorted(pathlib.Path(mark).glob("rank*")):
                        r = f.name[4:]
                        with open(case_dir / dump[6:].format(rank=r), "w") as d:
                            subprocess.run(["timeout", "20", PYSPY, "dump", "--pid", f.read_text()], stdout=d,
                                           stderr=subprocess.STDOUT, check=False)
                sig = {"term": signal.SIGTERM, "ctrlc": signal.SIGINT, "kill": signal.SIGKILL}[stop]
                if stop == "term":
                    os.kill(p.pid, sig)
                else:
                    os.killpg(p.pid, sig)
                if stop == "kill":   # (the workers sit in sessions of their own: the whole job is killed)
                    for f in pathlib.Path(mark).glob("rank*"):
                        with contextlib.suppress(ProcessLookupError, ValueError):
                            os.kill(int(f.read_text()), signal.SIGKILL)
                p.wait(timeout=60)
        finally:
            # nothing of the job outlives its case: torchrun starts each worker in a session of its own, so
            # the workers (their pids are in the marker files) are killed one by one
            pids = [int(f.read_text()) for f in pathlib.Path(mark).glob("rank*") if f.read_text().isdigit()]
            for pid in [p.pid, *pids]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL) if pid == p.pid else os.kill(pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(mark, ignore_errors=True)
    rewrite(case_dir, [(str(case_dir), "/home/user/run"), (str(HERE), "/home/user/train"),
                       (VENV, "/home/user/.venv"), (str(out_root.parent), "/home/user"),
                       (str(pathlib.Path.home()), "/home/user")])
    print(f"{name}: rc={p.returncode}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
