"""Generator of the held-out probe63: folders that hold more than one run. Each case runs two or three real
torchrun jobs (torch 2.13 CPU, gloo, tools/probe63/train63.py) one after the other into the same place, the
way users leave them: a `--log-dir` that gets a new `<run_id>_<random>/` tree per invocation (`logdir`, and
`logdir+out` with the console appended to train.out as well), one console appended run after run
(`nohup torchrun ... >> train.log 2>&1`: `append`, with `--tee 3` when the run says tee), one
`slurm-<jobid>.out` per submission (`slurm`), the script's own per-rank files rank<r>.log rewritten by every
run (so a rerun with fewer ranks leaves the bigger run's files beside it) with the console appended to
nohup.out (`files`). A run may be a `--max-restarts 1` job.

The judged run is the latest one: its fault (or none) is the truth; a failed run followed by a healthy rerun
is `none` (the job the user runs now works; the earlier failure is history), as a restarted job whose last
attempt finished is. Each case's truth is written into <out>/<case>/case.yaml before any job runs; machine
paths are rewritten to /home/user/... (tools/probelib.py). The first run was scored with the labels of the
table below; `corrected` holds the two corrections made after it (the kept case.yaml say so).
Usage: python run_probe63.py OUT [case-name-substring ...]   (run with the Python that has torch 2.13; one job
at a time)
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
CFD, CRASH, DLC, STRAG, NONE = "control_flow_divergence", "rank_crash", "dataloader_crash", "straggler", "none"


def R(ws, fault="none", bad=-1, log="print", tee=True, restarts=0, restart_ok=False):
    return dict(ws=ws, fault=fault, bad=bad, log=log, tee=tee, restarts=restarts, restart_ok=restart_ok)


# name, layout, runs (oldest first), category, accept, culprit_ranks (of the latest run)
CASES = [
    ("logdir-ok-then-skip-r1-ws4", "logdir", [R(4), R(4, "skip", 1)], CFD, [CFD], [1]),
    ("logdir-ok-then-exc-r0-ws2", "logdir", [R(2), R(2, "exc", 0)], CRASH, [CRASH], [0]),
    ("logdirout-ok-then-kill9-r2-ws4", "logdir+out", [R(4), R(4, "kill9", 2)], CRASH, [CRASH], [2]),
    ("append-tee-ok-then-exc-r3-ws4", "append", [R(4), R(4, "exc", 3)], CRASH, [CRASH], [3]),
    ("append-tee-ok-ok-then-dlkill-r1-ws3", "append", [R(3), R(3), R(3, "dlkill", 1)], DLC, [DLC], [1]),
    ("append-plain-ok-then-slow-r1-ws2", "append", [R(2, tee=False), R(2, "slow", 1, tee=False)], STRAG,
     [STRAG, CFD], [1]),
    ("append-logging-ok-then-hang-r2-ws4", "append", [R(4, log="logging", tee=False),
                                                     R(4, "hang", 2, log="logging", tee=False)], STRAG,
     [STRAG, CFD], [2]),
    ("slurm-ok-then-exc-r1-ws4", "slurm", [R(4, tee=False), R(4, "exc", 1, tee=False)], CRASH, [CRASH], [1]),
    ("slurm-ok-then-kill9-r1-ws2", "slurm", [R(2), R(2, "kill9", 1)], CRASH, [CRASH], [1]),
    ("slurm-ok-then-hang-r3-ws4", "slurm", [R(4), R(4, "hang", 3)], STRAG, [STRAG, CFD], [3]),
    ("files-ok-ws8-then-exc-r2-ws4", "files", [R(8, log="files"), R(4, "exc", 2, log="files")], CRASH, [CRASH],
     [2]),
    ("files-kill9-r6-ws8-then-slow-r1-ws4", "files", [R(8, "kill9", 6, log="files"),
                                                      R(4, "slow", 1, log="files")], STRAG, [STRAG, CFD], [1]),
    ("files-dlkill-r5-ws8-then-ok-ws4", "files", [R(8, "dlkill", 5, log="files"), R(4, log="files")], NONE,
     [NONE], []),
    ("files-ok-ws8-then-hang-r0-ws4", "files", [R(8, log="files"), R(4, "hang", 0, log="files")], STRAG,
     [STRAG, CFD], [0]),
    ("logdir-exc-r1-then-ok-ws4", "logdir", [R(4, "exc", 1), R(4)], NONE, [NONE], []),
    ("append-tee-kill9-r2-then-ok-ws3", "append", [R(3, "kill9", 2), R(3)], NONE, [NONE], []),
    ("slurm-skip-r0-then-ok-ws2", "slurm", [R(2, "skip", 0), R(2)], NONE, [NONE], []),
    ("append-logging-dlkill-r3-then-ok-ws4", "append", [R(4, "dlkill", 3, log="logging", tee=False),
                                                       R(4, log="logging", tee=False)], NONE, [NONE], []),
    ("logdirout-slow-r1-then-ok-ws2", "logdir+out", [R(2, "slow", 1), R(2)], NONE, [NONE], []),
    ("append-tee-exc-r1-then-kill9-r3-ws4", "append", [R(4, "exc", 1), R(4, "kill9", 3)], CRASH, [CRASH], [3]),
    ("logdir-dlkill-r0-then-exc-r1-ws2", "logdir", [R(2, "dlkill", 0), R(2, "exc", 1)], CRASH, [CRASH], [1]),
    ("slurm-kill9-r2-then-skip-r1-ws4", "slurm", [R(4, "kill9", 2), R(4, "skip", 1)], CFD, [CFD], [1]),
    ("append-plain-exc-r0-then-dlkill-r2-ws3", "append", [R(3, "exc", 0, tee=False), R(3, "dlkill", 2, tee=False)],
     DLC, [DLC], [2]),
    ("append-tee-recovered-restart-then-kill9-r0-ws4", "append",
     [R(4, "exc", 2, restarts=1, restart_ok=True), R(4, "kill9", 0)], CRASH, [CRASH], [0]),
    ("logdir-restarts-exc-r1-then-ok-ws4", "logdir", [R(4, "exc", 1, restarts=1), R(4)], NONE, [NONE], []),
    ("append-tee-ok-then-restarts-kill9-r3-ws4", "append", [R(4), R(4, "kill9", 3, restarts=1)], CRASH, [CRASH],
     [3]),
    ("append-tee-kill9-r6-ws8-then-skip-r2-ws4", "append", [R(8, "kill9", 6), R(4, "skip", 2)], CFD, [CFD], [2]),
    ("logdir-ok-ok-ws4", "logdir", [R(4), R(4)], NONE, [NONE], []),
    ("append-tee-ok-ws2-ws4-ws2", "append", [R(2), R(4), R(2)], NONE, [NONE], []),
    ("files-ok-ws8-then-ok-ws4", "files", [R(8, log="files"), R(4, log="files")], NONE, [NONE], []),
    ("slurm-ok-ok-ws3", "slurm", [R(3), R(3)], NONE, [NONE], []),
]

LAYOUT_WORDS = {
    "logdir": "torchrun --log-dir logs --redirects 3 per run into the same logs/ folder (console not kept)",
    "logdir+out": "torchrun --log-dir logs --redirects 3 per run into the same logs/ folder, console appended "
                  "to train.out",
    "append": "one console appended run after run (>> train.log 2>&1)",
    "slurm": "one slurm-<jobid>.out console per run in one folder",
    "files": "the script's own rank<r>.log per rank, rewritten by each run, console appended to nohup.out",
}


def run_words(r):
    w = f"{r['ws']} ranks, {r['fault'] if r['fault'] != 'none' else 'healthy'}"
    if r["bad"] >= 0:
        w += f" on rank {r['bad']}"
    if r["restarts"]:
        w += ", --max-restarts 1" + (" (fault in the first attempt only)" if r["restart_ok"] else "")
    return w + f", LOG={r['log']}" + (", --tee 3" if r["tee"] and r["log"] != "files" else "")


def corrected(c):
    """The labels as corrected after the first run (session 29): a SIGKILLed rank is also accepted as `oom`
    and a SIGKILLed DataLoader worker as `oom` (failure-signatures.md section 5.2 lists torchrun's `-9` and
    `is killed by signal: Killed.` as host-OOM signals; the other probes label them so), and a rank that
    blocks in its own code before its step's line, while its peers block in the same step's collective,
    leaves every rank's last line alike, so the logs cannot tell the culprit (`unknown`)."""
    name, layout, runs, cat, accept, cul = c
    fault = runs[-1]["fault"]
    if fault in ("kill9", "dlkill") and "oom" not in accept:
        accept = [*accept, "oom"]
    if fault == "hang":
        cul = "unknown"
    return name, layout, runs, cat, accept, cul


def truth(c):
    name, layout, runs, cat, accept, cul = corrected(c)
    cul_text = "unknown" if cul == "unknown" else f"[{', '.join(map(str, cul))}]"
    relabel = ("" if corrected(c)[4:] == tuple(c[4:]) else
               f"\n# relabelled after the first run (was accept {c[4]}, culprit_ranks {c[5]}): see corrected() in "
               "the generator")
    return (f"# real run (session 29, h29-multi, probe63): torch 2.13 CPU, gloo; {LAYOUT_WORDS[layout]}; runs, "
            f"oldest first: {'; '.join(run_words(r) for r in runs)}; the latest run is judged; generator "
            f"tools/probe63/run_probe63.py + train63.py; truth written before hanglens ran; machine paths "
            f"rewritten to /home/user/...{relabel}\ncategory: {cat}\naccept: [{', '.join(accept)}]\n"
            f"culprit_ranks: {cul_text}\n")


def wait_stalled(mark, ws, quiet, cap):
    t0 = time.time()
    while time.time() - t0 < cap:
        files = list(pathlib.Path(mark).glob("rank*"))
        if (len(files) == ws and pathlib.Path(mark, "stalled").exists()
                and time.time() - max(f.stat().st_mtime for f in files) > quiet):
            return True
        time.sleep(0.5)
    return False


def one_run(case_dir, layout, r, idx, jobid):
    mark = tempfile.mkdtemp(prefix="probe63-mark-")
    env = dict(os.environ, FAULT=r["fault"], BAD=str(r["bad"]), LOG=r["log"], MARKDIR=mark, PYTHONUNBUFFERED="1")
    env.pop("OMP_NUM_THREADS", None)
    if r["fault"] in ("skip", "slow"):
        env["GLOO_TIMEOUT_S"] = "10"
    if r["restart_ok"]:
        env["RESTART_OK"] = "1"
    cmd = [TORCHRUN, "--nproc-per-node", str(r["ws"]), "--master-port", "29763"]
    if r["restarts"]:
        cmd += ["--max-restarts", str(r["restarts"])]
    if layout.startswith("logdir"):
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    elif r["tee"] and r["log"] != "files":
        cmd += ["--tee", "3"]
    cmd += [str(HERE / "train63.py")]
    out = {"logdir": os.devnull, "logdir+out": case_dir / "train.out", "append": case_dir / "train.log",
           "slurm": case_dir / f"slurm-{jobid}.out", "files": case_dir / "nohup.out"}[layout]
    with open(out, "a") as fh:
        if layout == "slurm":
            fh.write(f"== job {jobid} on node cpu-07, {r['ws']} tasks ==\n")
            fh.flush()
        p = subprocess.Popen(["timeout", "-s", "TERM", "150", *cmd], stdout=fh, stderr=subprocess.STDOUT, env=env,
                             cwd=case_dir, start_new_session=True)
        try:
            if r["fault"] == "hang":
                wait_stalled(mark, r["ws"], 5, 120)
                os.kill(p.pid, signal.SIGTERM)   # (the timeout wrapper passes it to torchrun)
            p.wait(timeout=170)
        finally:
            pids = [int(f.read_text()) for f in pathlib.Path(mark).glob("rank*") if f.read_text().isdigit()]
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(mark, ignore_errors=True)
    return p.returncode


def run(out_root, c):
    name, layout, runs = c[:3]
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    (case_dir / "case.yaml").write_text(truth(c))
    rcs = []
    for i, r in enumerate(runs):
        rcs.append(one_run(case_dir, layout, r, i, 48211 + 7 * i))
        time.sleep(1.5)
    venv = probelib.torch_prefix(sys.executable)
    # the runs' files keep the times they were last written (the order of two `--log-dir` trees whose lines
    # state no time is theirs): the path rewrite must not touch them
    stamps = {p: (p.stat().st_atime, p.stat().st_mtime) for p in case_dir.rglob("*") if p.is_file()}
    probelib.rewrite_paths(case_dir, [(str(case_dir), "/home/user/run"), (str(HERE), "/home/user/train"),
                                      (venv, "/home/user/.venv"), (sys.base_prefix, "/home/user/.python"),
                                      (str(out_root.parent), "/home/user"), (str(pathlib.Path.home()), "/home/user")],
                           keep=("case.yaml",))
    for p, st in stamps.items():
        os.utime(p, st)
    print(f"{name}: rc={rcs}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
