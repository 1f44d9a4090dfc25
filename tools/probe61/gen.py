# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe61 runs: real jobs of train.py on the torch releases most public issues of 2023-early 2024 come from --
torch 2.0.1 (Python 3.10.13), 2.1.2 (Python 3.10.13) and 2.2.2 (Python 3.11.7), the PyPI CUDA wheels running on
the CPU with gloo -- under torchrun or torch.multiprocessing.spawn, DDP, FSDP or gradients averaged by hand,
with one injected fault each.

Each job writes <out>/<job>/ with the console as the user collected it: `train.log` (the launcher's stdout and
stderr through `2>&1 | tee train.log`; with `--tee 3` the ranks' lines carry torchrun's `[defaultN]:` prefix),
a `--log_dir` tree when asked (logs/; then `--redirects 3` and the console keeps only the agent's lines), and
job.yaml: the injected fault's truth (category, accept, culprit ranks), written before the job runs.
`extkill` ranks are killed with SIGKILL from here (as an OOM killer would) once they write their pid; `silent`
jobs are stopped with SIGTERM to torchrun (`timeout -s TERM`), as a user presses Ctrl-C or a scheduler cancels.
Machine paths are rewritten to /home/user/... afterwards.
Usage: python gen.py OUT [job-name-substring ...]   (one job at a time, each under `timeout`; the venvs are
found under $VENVS, default /tmp/mid: t201, t212, t222, each `python -m venv` of the pyenv Python named above
with `pip install torch==<release> 'numpy<2'`)
"""

import os
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
VENVS = pathlib.Path(os.environ.get("VENVS", "/tmp/mid"))
RELEASE = {"t201": "torch 2.0.1, Python 3.10.13", "t212": "torch 2.1.2, Python 3.10.13", "t222": "torch 2.2.2, Python 3.11.7"}
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DLC, DLS, DDPU, OOM, UNK = "dataloader_crash", "dataloader_stall", "ddp_unused_parameters", "oom", "unknown"
DIV = [CFD, CM]
PG = {"PG_TIMEOUT": "15"}
DL2 = {"WORKERS": "2"}

# venv, name, FAULT, world size, fault ranks, output, DETAIL, WRAP, extra env, category, accept
# output: console (torchrun, ranks' output unprefixed) | tee (--tee 3) | logdir (--log_dir + --redirects 3)
#         | spawn (python train.py, torch.multiprocessing.spawn); "+r1" appends --max_restarts 1
JOBS = [
    ("t201", "skip-r0-ws2-tee", "skip", 2, [0], "tee", 0, "ddp", PG, CFD, DIV),
    ("t201", "crash-r2-ws4-logdir-restart", "crash", 4, [2], "logdir+r1", 0, "ddp", {}, CRASH, [CRASH]),
    ("t201", "uneven-r1-ws3-console", "uneven", 3, [1], "console", 0, "ddp", PG, CFD, DIV),
    ("t201", "extkill-r3-ws4-tee", "extkill", 4, [3], "tee", 0, "ddp", {}, CRASH, [CRASH, OOM]),
    ("t201", "shape-r1-ws4-tee-detail", "shape", 4, [1], "tee", 1, "none", PG, CM, DIV),
    ("t201", "spawn-crash-r1-ws2", "crash", 2, [1], "spawn", 0, "ddp", {}, CRASH, [CRASH]),
    ("t201", "monbar-r2-ws4-console", "monbar", 4, [2], "console", 0, "ddp", {}, STRAG, [STRAG, CFD]),
    ("t201", "silent-r1-ws4-tee", "silent", 4, [1], "tee", 0, "ddp", {}, UNK, [UNK, STRAG, CFD, DLS, "watchdog_stuck"]),
    ("t201", "healthy-ws4-tee-warn", "healthy", 4, [], "tee", 0, "ddp", {"WARN": "1", "WORKERS": "3"}, "none", ["none"]),
    ("t212", "skip-r3-ws4-logdir", "skip", 4, [3], "logdir", 0, "ddp", PG, CFD, DIV),
    ("t222", "skip-r1-ws2-tee-fsdp", "skip", 2, [1], "tee", 0, "fsdp", PG, CFD, DIV),
    ("t222", "crash-r0-ws3-tee-fsdp", "crash", 3, [0], "tee", 0, "fsdp", {}, CRASH, [CRASH]),
    ("t212", "dlkill-r1-ws4-tee", "dlkill", 4, [1], "tee", 0, "ddp", DL2, DLC, [DLC]),
    ("t212", "dlstall-r2-ws3-logdir", "dlstall", 3, [2], "logdir", 0, "ddp", dict(DL2, DL_TIMEOUT="8"), DLS, [DLS]),
    ("t212", "opmix-r2-ws4-console-detail", "opmix", 4, [2], "console", 1, "none", PG, CM, DIV),
    ("t212", "stall-r0-ws4-tee", "stall", 4, [0], "tee", 0, "ddp", {"PG_TIMEOUT": "10"}, STRAG, [STRAG]),
    ("t212", "unused-r1-ws2-tee", "unused", 2, [1], "tee", 0, "ddp", PG, DDPU, [DDPU, CM]),
    ("t212", "subskip-r3-ws4-tee", "subskip", 4, [3], "tee", 0, "ddp", PG, CFD, DIV),
    ("t212", "spawn-extkill-r0-ws3", "extkill", 3, [0], "spawn", 0, "ddp", {}, CRASH, [CRASH, OOM]),
    ("t222", "healthy-ws2-logdir-fsdp-warn", "healthy", 2, [], "logdir", 0, "fsdp", {"WARN": "1"}, "none", ["none"]),
    ("t212", "healthy-ws3-spawn", "healthy", 3, [], "spawn", 0, "ddp", {"WORKERS": "1"}, "none", ["none"]),
    ("t222", "uneven-r0-ws4-tee", "uneven", 4, [0], "tee", 0, "ddp", PG, CFD, DIV),
    ("t222", "crash-r5-ws8-tee", "crash", 8, [5], "tee", 0, "ddp", {"STEPS": "6"}, CRASH, [CRASH]),
    ("t222", "shape-r0-ws3-logdir-detail", "shape", 3, [0], "logdir", 1, "none", PG, CM, DIV),
    ("t222", "monbar-r1-ws3-tee-ranklog", "monbar", 3, [1], "tee", 0, "ddp", {"RANKLOG": "1"}, STRAG, [STRAG, CFD]),
    ("t222", "subcrash-r2-ws4-console", "subcrash", 4, [2], "console", 0, "ddp", PG, CRASH, [CRASH]),
    ("t222", "dlkill-r0-ws2-console-fsdp", "dlkill", 2, [0], "console", 0, "fsdp", DL2, DLC, [DLC]),
    ("t222", "silent-r2-ws3-console", "silent", 3, [2], "console", 0, "ddp", {}, UNK, [UNK, STRAG, CFD, DLS, "watchdog_stuck"]),
    ("t222", "stall-r3-ws4-logdir", "stall", 4, [3], "logdir", 0, "ddp", {"PG_TIMEOUT": "10"}, STRAG, [STRAG]),
    ("t222", "healthy-ws4-tee-warn-detail", "healthy", 4, [], "tee", 1, "none", {"WARN": "1", "WORKERS": "3"}, "none", ["none"]),
]


def write_job(job_dir, j):
    venv, name, fault, ws, ranks, out, detail, wrap, _extra, cat, accept = j
    culprit = "unknown" if cat == UNK else ranks
    launch = f"torch.multiprocessing.spawn nprocs={ws}" if out == "spawn" else f"torchrun --nproc_per_node {ws}, output {out}"
    (job_dir / "job.yaml").write_text(
        f"# real run (session 29, h29-mid, probe61): {RELEASE[venv]} (PyPI CUDA wheel on the CPU), gloo, {launch}, "
        f"{ {'ddp': 'DDP', 'fsdp': 'FSDP', 'none': 'gradients averaged by hand'}[wrap]}{', TORCH_DISTRIBUTED_DEBUG=DETAIL' if detail else ''}; "
        f"tools/probe61/gen.py job {name}, FAULT={fault} on ranks {ranks or 'none'}; written before the job ran\n"
        f"world_size: {ws}\nfault: {fault}\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def rewrite(job_dir, out_root, venv_dir):
    pyver = "3.11.7" if venv_dir.name == "t222" else "3.10.13"
    subs = [(str(job_dir), "/home/user/cls"), (str(HERE), "/home/user/cls"), (str(venv_dir), "/home/user/venv"),
            (f"/root/.pyenv/versions/{pyver}", "/usr"), (str(out_root), "/home/user")]
    probelib.rewrite_paths(job_dir, subs)


def run(out_root, j):
    venv, name, fault, ws, ranks, out, detail, wrap, extra, *_ = j
    venv_dir = VENVS / venv
    job_dir = out_root / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    write_job(job_dir, j)
    env = dict(os.environ, FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               STALL_DIR=str(job_dir), WRAP=wrap, **extra)
    env.setdefault("STEPS", "8")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    if out == "spawn":
        env["SPAWN"] = str(ws)
        cmd = [str(venv_dir / "bin/python"), str(HERE / "train.py")]
    else:
        cmd = [str(venv_dir / "bin/torchrun"), "--nproc_per_node", str(ws), "--master_port", "29961"]
        if "+r1" in out:
            cmd += ["--max_restarts", "1"]
        if out.startswith("tee"):
            cmd += ["--tee", "3"]
        if out.startswith("logdir"):
            cmd += ["--log_dir", str(job_dir / "logs"), "--redirects", "3"]
        cmd += [str(HERE / "train.py")]
    timeout_s = 45 if fault == "silent" else 150
    rc = probelib.run_with_kill_files(cmd, job_dir, env, timeout_s, log=job_dir / "train.log")
    for p in [*job_dir.glob("fault.*"), *job_dir.glob("kill.*")]:
        p.unlink()
    rewrite(job_dir, out_root, venv_dir)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected([(j[1], *j) for j in JOBS], lambda root, row: run(root, row[1:]))


if __name__ == "__main__":
    main()
