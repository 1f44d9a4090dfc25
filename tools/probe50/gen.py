# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe50 runs: real torchrun (gloo, CPU) jobs with one injected fault each, kept whole for cut.py.

Each job writes <out>/<job>/console.log (the launcher console captured with 2>&1), a --log-dir tree when
asked (logs/), and job.yaml: the injected fault (category, accept, culprit ranks) written before the job
runs. Machine paths are rewritten to /home/user/... afterwards.
Usage: python gen.py OUT [job-name-substring ...]   (one job at a time, each under `timeout`; run with the
Python that has torch 2.13, whose torchrun is used, or set TORCHRUN)
"""

import os
import pathlib
import shutil
import subprocess
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

# name, FAULT, world size, fault ranks, output (console | tee | logdir), DETAIL, extra env, category, accept
JOBS = [
    ("skip-r1-ws4-tee", "skip", 4, [1], "tee", 0, {}, CFD, DIV),
    ("skip-r0-ws2-logdir-detail", "skip", 2, [0], "logdir", 1, {}, CFD, DIV),
    ("shape-r2-ws4-detail", "shape", 4, [2], "console", 1, {}, CM, DIV),
    ("opmix-r3-ws4-tee-detail", "opmix", 4, [3], "tee", 1, {}, CM, DIV),
    ("stall-r2-ws4-logdir", "stall", 4, [2], "logdir", 0, {"PG_TIMEOUT": "10"}, STRAG, [STRAG]),
    ("stall-r0-ws3-tee", "stall", 3, [0], "tee", 0, {"PG_TIMEOUT": "10"}, STRAG, [STRAG]),
    ("dlkill-r1-ws3-tee", "dlkill", 3, [1], "tee", 0, DL2, DLC, [DLC]),
    ("dlraise-r2-ws4-logdir", "dlraise", 4, [2], "logdir", 0, DL2, DLC, [DLC]),
    ("dlstall-r0-ws2-timeout", "dlstall", 2, [0], "console", 0, dict(DL2, DL_TIMEOUT="8"), DLS, [DLS]),
    ("dlstall-r3-ws4-tee-peers", "dlstall", 4, [3], "tee", 0, dict(DL2, PG_TIMEOUT="10"), DLS, [DLS, STRAG]),
    ("crash-r3-ws8-tee", "crash", 8, [3], "tee", 0, {}, CRASH, [CRASH]),
    ("crash-r0-ws2-logdir-detail", "crash", 2, [0], "logdir", 1, {}, CRASH, [CRASH]),
    ("sigkill-r1-r2-ws4-console", "sigkill", 4, [1, 2], "console", 0, {}, CRASH, [CRASH, OOM]),
    ("segv-r0-ws3-tee", "segv", 3, [0], "tee", 0, {}, CRASH, [CRASH]),
    ("unused-r0-r3-ws4-tee", "unused", 4, [0, 3], "tee", 0, {}, DDPU, [DDPU, CM]),
    ("unused-r1-ws2-logdir-info", "unused", 2, [1], "logdir", 2, {}, DDPU, [DDPU, CM]),
    ("unused-all-ws4-console-info", "unused", 4, [0, 1, 2, 3], "console", 2, {}, DDPU, [DDPU]),
    ("memerr-r1-ws3-console", "memerr", 3, [1], "console", 0, {}, OOM, [OOM]),
    ("allocerr-r2-ws4-logdir", "allocerr", 4, [2], "logdir", 0, {}, OOM, [OOM]),
    ("rdzv-nnodes2-one-node", "healthy", 2, [], "rdzv", 0, {}, RDZV, [RDZV]),
    ("healthy-ws4-tee-warn", "healthy", 4, [], "tee", 0, {"WARN": "1", "WORKERS": "4"}, "none", ["none"]),
    ("healthy-ws2-logdir-detail", "healthy", 2, [], "logdir", 1, {"WARN": "1"}, "none", ["none"]),
    ("healthy-ws3-console", "healthy", 3, [], "console", 0, {"WORKERS": "2"}, "none", ["none"]),
]


def write_job(job_dir, j):
    name, fault, ws, ranks, out, detail, _extra, cat, accept = j
    culprit = ranks if ranks else ("unknown" if cat == RDZV else [])
    (job_dir / "job.yaml").write_text(
        f"# real run (session 26, h26-excerpt, probe50): torch 2.13 CPU, gloo, torchrun --nproc-per-node {ws}, "
        f"output {out}{(', TORCH_DISTRIBUTED_DEBUG=DETAIL (gradients averaged by hand: NODDP=1)' if detail == 1 else ', TORCH_DISTRIBUTED_DEBUG=INFO') if detail else ''}; tools/probe50/gen.py job {name}, "
        f"FAULT={fault} on ranks {ranks or 'none'}; written before the job ran\n"
        f"world_size: {ws}\nfault: {fault}\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def rewrite(job_dir, out_root):
    subs = [(str(job_dir), "/home/user/run"), (str(HERE), "/home/user/train"), (VENV, "/home/user/.venv"),
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
    env.setdefault("STEPS", "6")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL" if detail == 1 else "INFO"
        if detail == 1:
            env["NODDP"] = "1"   # DDP's constructor segfaults under DETAIL in this torch build
    cmd = [TORCHRUN, "--nproc-per-node", str(ws)]
    if out == "rdzv":   # the second node never starts
        cmd += ["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29850",
                "--rdzv-conf", "join_timeout=20"]
    else:
        cmd += ["--master-port", "29850"]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(job_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "train.py")]
    with open(job_dir / "console.log", "w") as fh:
        rc = subprocess.run(["timeout", "-s", "TERM", "150", *cmd], stdout=fh, stderr=subprocess.STDOUT,
                            env=env, cwd=job_dir).returncode
    for p in job_dir.glob("fault.*"):
        p.unlink()
    rewrite(job_dir, out_root)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(JOBS, run)


if __name__ == "__main__":
    main()
