"""Generator of the held-out probe53: real torchrun (gloo, CPU) runs of tools/probe53/denoise.py where one
rank's root fault makes the OTHER ranks raise louder errors of their own (wrapper re-raises, emergency
checkpoints failing in their own collective, destroy_process_group errors, SIGTERM-handler tracebacks, a
metrics warning storm), plus healthy runs whose teardown prints harmless warnings.

Each case's truth is written into <out>/<case>/case.yaml before the job runs. Output: `tee` (console with
--tee 3), `logdir` (--log-dir tree with --redirects 3 and the console), `paste` (what a user pastes: the
loudest rank's lines from its first ERROR/traceback on, and the launcher's closing lines with the failure
table, cut from a --tee 3 console). Machine paths are rewritten to /home/user/...
The first run of healthy-ws3-logdir-detail (DDP under DETAIL) died of SIGSEGV on every rank before its first
step; it is kept as segv-every-rank-ddp-init-ws3-logdir-detail, and the DETAIL cases run with MANUAL=1.
Usage: python run_probe53.py OUT [case-name-substring ...]   (one job at a time; run with the Python that
has torch 2.13, whose torchrun is used, or set TORCHRUN)
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
TORCHRUN = os.environ.get("TORCHRUN", str(pathlib.Path(sys.executable).with_name("torchrun")))
VENV = str(pathlib.Path(TORCHRUN).parent.parent)   # rewritten to /home/user/.venv in the kept logs
RC, CFD, CM = "rank_crash", "control_flow_divergence", "collective_mismatch"
CAT = {"exc": (RC, [RC]), "kill9": (RC, [RC, "oom"]), "oom": ("oom", ["oom", RC]),
       "skip": (CFD, [CFD, CM]), "extra": (CFD, [CFD, CM]), "shape": (CM, [CM]),
       "dlworker": ("dataloader_crash", ["dataloader_crash"]), "stall": ("straggler", ["straggler", CFD]),
       "none": ("none", ["none"])}
WHAT = {"exc": "raises a ValueError in its noise schedule", "kill9": "is killed with SIGKILL (kill -9)",
        "oom": "fails a CPU allocation (DefaultCPUAllocator: can't allocate memory)",
        "skip": "skips the loss all_reduce", "extra": "issues an extra all_reduce (grad norm)",
        "shape": "all_reduces a 2-element loss tensor where its peers pass 1 element",
        "dlworker": "loses its DataLoader worker to SIGKILL", "stall": "sleeps 45 s in its own code"}

# name, fault, bad ranks, world size, output, style, detail, handler, culprit_ranks
CASES = [
    ("exc-r1-ws3-tee", "exc", [1], 3, "tee", "logging", False, True, [1]),
    ("exc-r0-ws4-logdir", "exc", [0], 4, "logdir", "logging", False, True, [0]),
    ("exc-r1-ws2-tee-detail", "exc", [1], 2, "tee", "logging", True, True, [1]),
    ("exc-r3-ws6-paste", "exc", [3], 6, "paste", "logging", False, True, [3]),
    ("exc-pair-r1r2-ws4-tee", "exc", [1, 2], 4, "tee", "logging", False, True, [1, 2]),
    ("exc-r2-ws5-tee-print-nohandler", "exc", [2], 5, "tee", "print", False, False, [2]),
    ("kill9-r2-ws4-tee", "kill9", [2], 4, "tee", "logging", False, True, [2]),
    ("kill9-r0-ws3-logdir", "kill9", [0], 3, "logdir", "logging", False, True, [0]),
    ("kill9-r5-ws8-paste", "kill9", [5], 8, "paste", "logging", False, True, [5]),
    ("kill9-pair-r1r6-ws8-logdir", "kill9", [1, 6], 8, "logdir", "logging", False, True, [1, 6]),
    ("oom-r1-ws4-tee", "oom", [1], 4, "tee", "logging", False, True, [1]),
    ("oom-r0-ws2-logdir-print", "oom", [0], 2, "logdir", "print", False, True, [0]),
    ("oom-pair-r0r3-ws4-logdir-detail", "oom", [0, 3], 4, "logdir", "logging", True, True, [0, 3]),
    ("skip-r2-ws4-tee", "skip", [2], 4, "tee", "logging", False, True, [2]),
    ("skip-r0-ws3-logdir-detail", "skip", [0], 3, "logdir", "logging", True, True, [0]),
    ("extra-r1-ws3-tee", "extra", [1], 3, "tee", "logging", False, True, [1]),
    ("extra-r3-ws4-logdir-detail", "extra", [3], 4, "logdir", "logging", True, True, [3]),
    ("shape-r1-ws4-tee-detail", "shape", [1], 4, "tee", "logging", True, True, [1]),
    ("shape-r0-ws2-logdir", "shape", [0], 2, "logdir", "logging", False, True, [0]),
    ("dlworker-r2-ws3-tee", "dlworker", [2], 3, "tee", "logging", False, True, [2]),
    ("dlworker-r0-ws4-logdir-print", "dlworker", [0], 4, "logdir", "print", False, True, [0]),
    ("stall-r1-ws4-tee", "stall", [1], 4, "tee", "logging", False, True, [1]),
    ("stall-r0-ws3-logdir", "stall", [0], 3, "logdir", "logging", False, True, [0]),
    ("stall-r3-ws4-paste", "stall", [3], 4, "paste", "logging", False, True, [3]),
    ("healthy-ws4-tee", "none", [], 4, "tee", "logging", False, True, []),
    ("healthy-ws3-logdir-detail", "none", [], 3, "logdir", "logging", True, True, []),
    ("healthy-ws2-tee-print-workers", "none", [], 2, "tee", "print", False, True, []),
    ("healthy-ws6-logdir", "none", [], 6, "logdir", "logging", False, True, []),
]
OUT_WORDS = {"logdir": "--log-dir tree with --redirects 3 and the console", "tee": "console with --tee 3",
             "paste": "what a user pastes: the loudest rank's lines from its first error on plus the launcher's "
                      "closing lines, cut from a --tee 3 console"}


def truth(c):
    name, fault, bad, ws, out, style, detail, handler, cul = c
    cat, accept = CAT[fault]
    ranks = " and ".join(map(str, bad))
    what = (f"rank{'s' if len(bad) > 1 else ''} {ranks} {WHAT[fault]} at step 3" if bad else
            "healthy; the teardown prints a UserWarning, a metrics ERROR line and an `Exception ignored in` traceback")
    cul_text = "unknown" if cul == "unknown" else f"[{', '.join(map(str, cul))}]"
    return (f"# real run (session 27, h27-cascade, probe53): torch 2.13 CPU, gloo, torchrun --nproc-per-node {ws}, "
            f"{OUT_WORDS[out]}; generator tools/probe53/run_probe53.py + denoise.py (STYLE={style}"
            f"{', TORCH_DISTRIBUTED_DEBUG=DETAIL, MANUAL=1: gradients all_reduced by hand, no DDP' if detail else ''}{'' if handler else ', no SIGTERM handler'}"
            f"{', DataLoader workers' if fault == 'dlworker' or 'workers' in name else ''}); {what}; "
            f"the others log it, re-raise `training step N failed`, fail their emergency checkpoint all_reduce; "
            f"15 s process-group timeout; truth written before hanglens ran; machine paths rewritten to "
            f"/home/user/...\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {cul_text}\n")


def rewrite(case_dir, subs):
    for p in case_dir.rglob("*"):
        if p.is_file() and p.name != "case.yaml":
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


def cut_paste(console):
    """The loudest rank's lines from its first ERROR/traceback on, then the launcher's lines after the last
    worker line (its failure table)."""
    lines = console.read_text(errors="replace").splitlines(keepends=True)
    pre = re.compile(r"^\[default(\d+)\]:")
    counts = {}
    for ln in lines:
        m = pre.match(ln)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    loud = max(counts, key=lambda k: (counts[k], -int(k)))
    mine = [ln for ln in lines if ln.startswith(f"[default{loud}]:")]
    first = next((i for i, ln in enumerate(mine) if " ERROR " in ln or "Traceback" in ln), 0)
    last_worker = max(i for i, ln in enumerate(lines) if pre.match(ln))
    console.write_text("".join(mine[first:] + lines[last_worker + 1:]))


def run(out_root, c):
    name, fault, bad, ws, out, style, detail, handler, _cul = c
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    (case_dir / "case.yaml").write_text(truth(c))
    env = dict(os.environ, FAULT=fault, BAD=",".join(map(str, bad)), STYLE=style, PYTHONUNBUFFERED="1",
               OMP_NUM_THREADS="1", HANDLER="1" if handler else "0",
               WORKERS="1" if fault == "dlworker" or "workers" in name else "0")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
        env["MANUAL"] = "1"   # DDP's constructor died of SIGSEGV on every rank under DETAIL (gloo, CPU, 2.13)
    cmd = ["timeout", "-s", "TERM", "150", TORCHRUN, "--nproc-per-node", str(ws), "--master-port", os.environ.get("PORT", "29873")]
    if out in ("tee", "paste"):
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "denoise.py")]
    with open(case_dir / "console.log", "w") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=case_dir,
                             start_new_session=True)
        try:
            p.wait(timeout=170)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    if out == "paste":
        cut_paste(case_dir / "console.log")
    rewrite(case_dir, [(str(case_dir), "/home/user/run"), (str(HERE), "/home/user/train"),
                       (VENV, "/home/user/.venv"), (str(out_root.parent), "/home/user"),
                       (str(pathlib.Path.home()), "/home/user")])
    print(f"{name}: rc={p.returncode}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
