# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe55 runs: real torchrun (gloo, CPU) jobs of train.py (a small CTC speech model) with one injected
fault each, kept whole for cut.py.

Each job writes <out>/<job>/console.log (the launcher console captured with 2>&1), a --log-dir tree when
asked (logs/), and job.yaml: the injected fault (category, accept, culprit ranks) written before the job
runs. `extkill` ranks are killed with SIGKILL from here (outside the job, as an OOM killer or an operator
would) once they write their pid. Machine paths are rewritten to /home/user/... afterwards.
Usage: python gen.py OUT [job-name-substring ...]   (one job at a time, each under `timeout`; run with the
Python that has torch 2.13, whose torchrun is used, or set TORCHRUN)
"""

import os
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
TORCHRUN = os.environ.get("TORCHRUN", str(pathlib.Path(sys.executable).with_name("torchrun")))
VENV = str(pathlib.Path(TORCHRUN).parent.parent)
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DLC, DLS, DDPU, OOM, RDZV = "dataloader_crash", "dataloader_stall", "ddp_unused_parameters", "oom", "rendezvous_failure"
DIV = [CFD, CM]
DL2 = {"WORKERS": "2"}
PG10 = {"PG_TIMEOUT": "10"}

# name, FAULT, world size, fault ranks, output (console | tee | logdir | rdzv), DETAIL, extra env, category, accept
JOBS = [
    ("skip-r2-ws4-tee", "skip", 4, [2], "tee", 0, PG10, CFD, DIV),
    ("skip-r0-ws3-logdir-detail", "skip", 3, [0], "logdir", 1, PG10, CFD, DIV),
    ("shape-r1-ws4-console-detail", "shape", 4, [1], "console", 1, {}, CM, DIV),
    ("shape-r3-ws4-console", "shape", 4, [3], "console", 0, PG10, CM, DIV),
    ("bcast-r2-ws3-tee-detail", "bcast", 3, [2], "tee", 1, PG10, CM, DIV),
    ("evalstall-r0-ws4-tee", "evalstall", 4, [0], "tee", 0, PG10, STRAG, [STRAG]),
    ("stall-r5-ws6-logdir", "stall", 6, [5], "logdir", 0, PG10, STRAG, [STRAG]),
    ("dlkill-r2-ws4-logdir", "dlkill", 4, [2], "logdir", 0, DL2, DLC, [DLC]),
    ("dlraise-r1-ws2-tee", "dlraise", 2, [1], "tee", 0, DL2, DLC, [DLC]),
    ("dlstall-r1-ws3-console", "dlstall", 3, [1], "console", 0, dict(DL2, DL_TIMEOUT="8"), DLS, [DLS]),
    ("crash-r1-r5-ws8-tee", "crash", 8, [1, 5], "tee", 0, {}, CRASH, [CRASH]),
    ("abort-r0-ws4-logdir", "abort", 4, [0], "logdir", 0, {}, CRASH, [CRASH]),
    ("extkill-r3-ws4-tee", "extkill", 4, [3], "tee", 0, {}, CRASH, [CRASH, OOM]),
    ("unused-r1-ws3-tee", "unused", 3, [1], "tee", 0, PG10, DDPU, [DDPU, CM]),
    ("memerr-r0-ws2-console", "memerr", 2, [0], "console", 0, {}, OOM, [OOM]),
    ("rdzv-nnodes2-one-node-tee", "healthy", 2, [], "rdzv", 0, {}, RDZV, [RDZV]),
    ("healthy-ws4-tee-warn", "healthy", 4, [], "tee", 0, {"WARN": "1", "WORKERS": "2"}, "none", ["none"]),
    ("healthy-ws2-logdir-detail-warn", "healthy", 2, [], "logdir", 1, {"WARN": "1"}, "none", ["none"]),
    ("healthy-ws6-console", "healthy", 6, [], "console", 0, {"WORKERS": "1"}, "none", ["none"]),
]


def write_job(job_dir, j):
    name, fault, ws, ranks, out, detail, _extra, cat, accept = j
    culprit = ranks if ranks else ("unknown" if cat == RDZV else [])
    (job_dir / "job.yaml").write_text(
        f"# real run (session 27, h27-paste, probe55): torch 2.13 CPU, gloo, torchrun --nproc-per-node {ws}, "
        f"output {out}{', TORCH_DISTRIBUTED_DEBUG=DETAIL (gradients averaged by hand: NODDP=1)' if detail else ''}; tools/probe55/gen.py job {name}, "
        f"FAULT={fault} on ranks {ranks or 'none'}; written before the job ran\n"
        f"world_size: {ws}\nfault: {fault}\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def rewrite(job_dir, out_root):
    subs = [(str(job_dir), "/home/user/asr"), (str(HERE), "/home/user/asr"), (VENV, "/home/user/.venv"),
            (str(out_root), "/home/user")]
    probelib.rewrite_paths(job_dir, subs)


def run(out_root, j):
    name, fault, ws, ranks, out, detail, extra, *_ = j
    job_dir = out_root / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    write_job(job_dir, j)
    env = dict(os.environ, FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               STALL_DIR=str(job_dir), **extra)
    env.setdefault("PG_TIMEOUT", "15")
    env.setdefault("STEPS", "8")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
        env["NODDP"] = "1"   # DDP's constructor segfaults under DETAIL in this torch build
    cmd = [TORCHRUN, "--nproc-per-node", str(ws)]
    if out == "rdzv":   # the second node never starts
        cmd += ["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29955",
                "--rdzv-conf", "join_timeout=20", "--tee", "3"]
    else:
        cmd += ["--master-port", "29955"]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(job_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "train.py")]
    rc = probelib.run_with_kill_files(cmd, job_dir, env)
    for p in [*job_dir.glob("fault.*"), *job_dir.glob("kill.*")]:
        p.unlink()
    rewrite(job_dir, out_root)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(JOBS, run)


if __name__ == "__main__":
    main()
