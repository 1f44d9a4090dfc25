"""Generator of the held-out probe54: real torchrun (gloo, CPU) runs of tools/probe54/epochs.py that go wrong
around the training step - at validation, metric gathering, checkpointing, early stopping, the last
partial batch, gradient accumulation, resume, shutdown - plus healthy runs that handle the same unevenness.

Each case's truth is written into <out>/<case>/case.yaml before the job runs; the job's console (and its
--log-dir tree) is kept, machine paths rewritten to /home/user/... A job that hangs is stopped once nothing
was written for QUIET seconds: `term` SIGTERM to torchrun, `ctrlc` SIGINT to the whole process group;
`timeout` runs use a 20 s process-group timeout, so gloo raises on the waiting ranks and the job ends itself.
Usage: python run_probe54.py OUT [case-name-substring ...]   (one job at a time; run with the Python that
has torch 2.13, whose torchrun is used, or set TORCHRUN)
"""
import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
TORCHRUN = os.environ.get("TORCHRUN", str(pathlib.Path(sys.executable).with_name("torchrun")))
VENV = str(pathlib.Path(TORCHRUN).parent.parent)   # rewritten to /home/user/.venv in the kept logs
CFD, MISM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
QUIET = 6

# name, fault, bad ranks, world size, output (logdir | tee | plain), style, DETAIL, stop, category, accept, culprits
CASES = [
    ("uneven-val-r1-ws2-tee", "uneven_val", [1], 2, "tee", "tag", False, "term", CFD, [CFD], [1]),
    ("uneven-val-r3-ws4-logdir-detail-timeout", "uneven_val", [3], 4, "logdir", "logging", True, "timeout",
     CFD, [CFD, MISM], [3]),
    ("uneven-val-r0-ws3-tee-timeout", "uneven_val", [0], 3, "tee", "plain", False, "timeout", CFD, [CFD], [0]),
    ("uneven-val-r6-ws8-plain-r0only", "uneven_val", [6], 8, "plain", "r0", False, "term", CFD, [CFD],
     "unknown"),
    ("gather-uneven-r1-ws2-tee", "gather_uneven", [1], 2, "tee", "tag", False, "term", MISM, [MISM], [1]),
    ("gather-uneven-r2-ws4-logdir-detail", "gather_uneven", [2], 4, "logdir", "logging", True, "term", MISM,
     [MISM], [2]),
    ("gather-uneven-r0-ws3-plain-r0only", "gather_uneven", [0], 3, "plain", "r0", False, "ctrlc", MISM, [MISM],
     [0]),
    ("gather-obj-r2-ws4-tee", "gather_obj", [2], 4, "tee", "tag", False, "term", CRASH, [CRASH], [2]),
    ("gather-obj-r0-ws2-logdir-logging", "gather_obj", [0], 2, "logdir", "logging", False, "term", CRASH,
     [CRASH], [0]),
    ("early-stop-r1-ws4-tee", "early_stop", [1], 4, "tee", "tag", False, "term", CFD, [CFD], [1]),
    ("early-stop-r5-ws6-logdir-timeout", "early_stop", [5], 6, "logdir", "logging", False, "timeout", CFD,
     [CFD], [5]),
    ("r0-eval-ws4-tee", "r0_eval", [0], 4, "tee", "plain", False, "term", CFD, [CFD], [0]),
    ("r0-eval-ws3-logdir-detail-timeout", "r0_eval", [0], 3, "logdir", "tag", True, "timeout", CFD, [CFD, MISM],
     [0]),
    ("r0-barrier-ws4-logdir", "r0_barrier", [0], 4, "logdir", "logging", False, "term", CFD, [CFD], [0]),
    ("r0-barrier-ws2-tee-detail-timeout", "r0_barrier", [0], 2, "tee", "tag", True, "timeout", CFD, [CFD, MISM],
     [0]),
    ("slow-save-r0-ws4-tee", "slow_save", [0], 4, "tee", "tag", False, "term", STRAG, [STRAG, CFD], [0]),
    ("slow-save-r0-ws3-logdir-timeout", "slow_save", [0], 3, "logdir", "logging", False, "timeout", STRAG,
     [STRAG, CFD], [0]),
    ("slow-save-r2-ws3-tee-ctrlc", "slow_save", [2], 3, "tee", "plain", False, "ctrlc", STRAG, [STRAG, CFD], [2]),
    ("save-fail-r0-ws4-tee", "save_fail", [0], 4, "tee", "tag", False, "term", CRASH, [CRASH], [0]),
    ("save-fail-r2-ws3-logdir-logging-detail", "save_fail", [2], 3, "logdir", "logging", True, "term", CRASH,
     [CRASH], [2]),
    ("exit-early-r1-ws2-tee", "exit_early", [1], 2, "tee", "tag", False, "term", CFD, [CFD], [1]),
    ("exit-early-r3-ws4-logdir-detail", "exit_early", [3], 4, "logdir", "logging", True, "term", CFD, [CFD], [3]),
    ("last-partial-r0-ws2-tee", "last_partial", [0], 2, "tee", "tag", False, "term", CFD, [CFD, MISM], [0]),
    ("last-partial-r1-ws2-tee", "last_partial", [1], 2, "tee", "tag", False, "term", CFD, [CFD, MISM], [1]),
    ("last-partial-r1r3-ws5-logdir-timeout", "last_partial", [1, 3], 5, "logdir", "plain", False, "timeout", CFD,
     [CFD, MISM], [1, 3]),
    ("accum-r2-ws4-tee-detail", "accum", [2], 4, "tee", "tag", True, "term", CFD, [CFD, MISM], [2]),
    ("accum-r1-ws3-logdir", "accum", [1], 3, "logdir", "logging", False, "term", CFD, [CFD, MISM], [1]),
    ("resume-r2-ws4-tee", "resume", [2], 4, "tee", "tag", False, "term", CFD, [CFD, MISM], [2]),
    ("resume-r0-ws8-logdir-timeout", "resume", [0], 8, "logdir", "plain", False, "timeout", CFD, [CFD, MISM],
     [0]),
    ("healthy-join-ws4-tee", "join_ok", [1], 4, "tee", "tag", False, "end", "none", ["none"], []),
    ("healthy-pad-ws3-logdir-detail", "pad_ok", [2], 3, "logdir", "logging", True, "end", "none", ["none"], []),
    ("healthy-slow-eval-r0-ws2-tee", "slow_eval_ok", [0], 2, "tee", "tag", False, "end", "none", ["none"], []),
    ("healthy-ws4-logdir-logging", "none", [], 4, "logdir", "logging", False, "end", "none", ["none"], []),
]

OUT_WORDS = {"logdir": "--log-dir tree with --redirects 3 and the console", "tee": "console with --tee 3",
             "plain": "console captured with 2>&1"}
STOP_WORDS = {"term": "SIGTERM to torchrun once the job was quiet", "ctrlc": "SIGINT to the process group "
              "(Ctrl-C) once the job was quiet", "timeout": "20 s process-group timeout (the job ends itself)",
              "end": "ran to its end"}
WHAT = {
    "uneven_val": "rank(s) {bad} run one more validation batch; their per-batch metric all_reduce has no partner",
    "gather_uneven": "rank(s) {bad} gather a shorter prediction tensor (dist.all_gather without padding)",
    "gather_obj": "rank(s) {bad} put a lambda into the all_gather_object result and fail to pickle it",
    "early_stop": "rank(s) {bad} decide early stopping on their own validation loss and leave the epoch loop",
    "r0_eval": "`if rank == 0: evaluate()` whose metric all_reduce only rank 0 calls",
    "r0_barrier": "dist.barrier() inside the rank-0-only checkpoint block",
    "slow_save": "rank(s) {bad} write the checkpoint and stall in it (a filesystem that stopped answering) while "
                 "the others wait in the barrier",
    "save_fail": "rank(s) {bad} fail in torch.save (missing checkpoint directory) while the others wait",
    "exit_early": "rank(s) {bad} have a shorter last-epoch shard, finish, destroy the group and exit",
    "last_partial": "drop_last=False: rank(s) {bad} get one more (partial) training batch in epoch 1",
    "accum": "rank(s) {bad} compute a different gradient-accumulation boundary from their own shard",
    "resume": "rank(s) {bad} resume from a newer stale checkpoint step and run fewer steps in the epoch",
    "join_ok": "healthy: rank(s) {bad} get one more training batch, handled with DDP join()",
    "pad_ok": "healthy: rank(s) {bad} have shorter predictions, padded to the longest before all_gather",
    "slow_eval_ok": "healthy: rank(s) {bad} validate 4 s slower each epoch and finish",
    "none": "healthy",
}


def truth(c):
    name, fault, bad, ws, out, style, detail, stop, cat, accept, cul = c
    what = WHAT[fault].format(bad=", ".join(map(str, bad)))
    cul_text = "unknown" if cul == "unknown" else f"[{', '.join(map(str, cul))}]"
    return (f"# real run (session 27, h27-epochend, probe54): torch 2.13 CPU, gloo, torchrun --nproc-per-node {ws}, "
            f"{OUT_WORDS[out]}{', TORCH_DISTRIBUTED_DEBUG=DETAIL' if detail else ''}; generator "
            f"tools/probe54/run_probe54.py + epochs.py (FAULT={fault}, STYLE={style}); {what}; stop: "
            f"{STOP_WORDS[stop]}; truth written before hanglens ran; machine paths rewritten to /home/user/...\n"
            f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {cul_text}\n")


def rewrite(case_dir, subs):
    for p in case_dir.rglob("*"):
        if p.is_file() and p.name != "case.yaml" and p.suffix != ".pt":
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


def quiet_for(case_dir):
    """Seconds since any file of the case was written; 0 until a rank reached epoch 1 (where every fault
    strikes), so a slow start is never taken for a hang."""
    files = [f for f in case_dir.rglob("*") if f.is_file() and f.name != "case.yaml"]
    if not any("epoch 1 " in f.read_text(errors="replace") for f in files):
        return 0.0
    return time.time() - max(f.stat().st_mtime for f in files)


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(x) for x in out.split()]


def run(out_root, c):
    name, fault, bad, ws, out, style, detail, stop, *_ = c
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    (case_dir / "case.yaml").write_text(truth(c))
    work = out_root.parent / "work" / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, FAULT=fault, BAD=",".join(map(str, bad)), STYLE=style, PYTHONUNBUFFERED="1",
               OMP_NUM_THREADS="1", TIMEOUT="20" if stop == "timeout" else "1800")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    cmd = [TORCHRUN, "--nproc-per-node", str(ws), "--master-port", "29854"]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "epochs.py")]
    workers = set()
    with open(case_dir / "console.log", "w") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=work, start_new_session=True)
        try:
            t0 = time.time()
            while p.poll() is None and time.time() - t0 < 150:
                workers.update(children(p.pid))
                if stop in ("term", "ctrlc") and time.time() - t0 > 8 and quiet_for(case_dir) > QUIET:
                    if stop == "term":
                        os.kill(p.pid, signal.SIGTERM)
                    else:
                        os.killpg(p.pid, signal.SIGINT)
                    p.wait(timeout=60)
                    break
                time.sleep(0.5)
        finally:
            # nothing of the job outlives its case: torchrun starts each worker in a session of its own
            for pid in [p.pid, *workers]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            p.wait()
    shutil.rmtree(work, ignore_errors=True)
    rewrite(case_dir, [(str(case_dir), "/home/user/run"), (str(work), "/home/user/run"),
                       (str(HERE), "/home/user/train"), (VENV, "/home/user/.venv"),
                       (str(out_root.parent), "/home/user"), (str(pathlib.Path.home()), "/home/user")])
    print(f"{name}: rc={p.returncode} {time.time() - t0:.0f}s", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
