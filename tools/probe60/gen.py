# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe60 runs: real jobs of train.py on the torch releases of 2022-2023 users still paste logs from -
torch 1.12.1 (Python 3.8.18) and torch 1.13.1 (Python 3.10.13), the PyPI CUDA builds running on the CPU
(gloo) - under `python -m torch.distributed.launch` (with `--use_env`, or passing `--local_rank=N`), the
release's own torchrun, and `torch.multiprocessing.spawn`, with one injected fault each.

Each job writes <out>/<job>/: the console captured the way users keep it (`2>&1 | tee train.log`, or
console.log), a --log_dir tree (logs/) or the script's own per-rank log files (logs/train_rank<r>.log)
when asked, and job.yaml: the injected fault's truth (category, accept, culprit ranks), written before the
job runs. `extkill` ranks are SIGKILLed from here (outside the job, as the OOM killer would) once they write
their pid. Machine paths are rewritten to /home/user/... afterwards.
Usage: python gen.py OUT [job-name-substring ...]   (one job at a time, each under `timeout`); the venvs
of the two releases are T112 and T113 (default /tmp/old/t112, /tmp/old/t113), made with
`/root/.pyenv/versions/3.8.18/bin/python -m venv T112 && T112/bin/pip install torch==1.12.1 'numpy<2'` and
`/root/.pyenv/versions/3.10.13/bin/python -m venv T113 && T113/bin/pip install torch==1.13.1 'numpy<2'`.
"""

import os
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
VENVS = {"t112": os.environ.get("T112", "/tmp/old/t112"), "t113": os.environ.get("T113", "/tmp/old/t113")}
RELEASE = {"t112": "torch 1.12.1, Python 3.8.18", "t113": "torch 1.13.1, Python 3.10.13"}
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DLC, DDPU, OOM, RDZV = "dataloader_crash", "ddp_unused_parameters", "oom", "rendezvous_failure"
UNK = "unknown"
DIV = [CFD, CM]
PG10 = {"PG_TIMEOUT": "10"}
DL2 = {"WORKERS": "2"}
WARN = {"WARN": "1", "WORKERS": "2"}

# name, release, launcher (launch | launch-env | torchrun | spawn | launch-node1), FAULT, world size,
# fault ranks, output (tee | console | logdir | files | teeflag), extra env, category, accept, culprit
JOBS = [
    ("skip-r0-ws2-t112-launch-tee", "t112", "launch", "skip", 2, [0], "tee", PG10, CFD, DIV, [0]),
    ("skip-r1-ws2-t113-launchenv-tee", "t113", "launch-env", "skip", 2, [1], "tee", PG10, CFD, DIV, [1]),
    ("skip-r2-ws4-t113-torchrun-logdir", "t113", "torchrun", "skip", 4, [2], "logdir", PG10, CFD, DIV, [2]),
    ("skip-r0-ws3-t112-spawn-console", "t112", "spawn", "skip", 3, [0], "console", PG10, CFD, DIV, [0]),
    ("crash-r1-ws4-t112-launch-tee", "t112", "launch", "crash", 4, [1], "tee", {}, CRASH, [CRASH], [1]),
    ("crash-r0-ws2-t113-spawn-files", "t113", "spawn", "crash", 2, [0], "files", {}, CRASH, [CRASH], [0]),
    ("crash-r3-ws4-t113-torchrun-teeflag", "t113", "torchrun", "crash", 4, [3], "teeflag", {}, CRASH, [CRASH], [3]),
    ("crash-r5-ws8-t113-launch-tee", "t113", "launch", "crash", 8, [5], "tee", {"STEPS": "6"}, CRASH, [CRASH], [5]),
    ("uneven-r1-ws2-t112-launchenv-tee", "t112", "launch-env", "uneven", 2, [1], "tee", PG10, CFD, DIV, [1]),
    ("uneven-r2-ws3-t113-torchrun-logdir", "t113", "torchrun", "uneven", 3, [2], "logdir", PG10, CFD, DIV, [2]),
    ("extkill-r1-ws4-t112-launch-tee", "t112", "launch", "extkill", 4, [1], "tee", {}, CRASH, [CRASH, OOM], [1]),
    ("extkill-r0-ws2-t113-torchrun-logdir", "t113", "torchrun", "extkill", 2, [0], "logdir", {}, CRASH, [CRASH, OOM], [0]),
    ("segv-r2-ws3-t113-launchenv-tee", "t113", "launch-env", "segv", 3, [2], "tee", {}, CRASH, [CRASH], [2]),
    ("segv-r0-ws2-t112-spawn-console", "t112", "spawn", "segv", 2, [0], "console", {}, CRASH, [CRASH], [0]),
    ("dlkill-r1-ws2-t112-launch-tee", "t112", "launch", "dlkill", 2, [1], "tee", DL2, DLC, [DLC], [1]),
    ("dlkill-r3-ws4-t113-torchrun-logdir", "t113", "torchrun", "dlkill", 4, [3], "logdir", DL2, DLC, [DLC], [3]),
    # without DETAIL nothing names the odd size: gloo reports a length mismatch or a timeout on the receivers
    ("shape-r1-ws2-t113-launchenv-tee", "t113", "launch-env", "shape", 2, [1], "tee", PG10, CM, [CM, CFD, UNK], UNK),
    ("shape-r2-ws4-t112-torchrun-teeflag-detail", "t112", "torchrun", "shape", 4, [2], "teeflag", dict(PG10, TORCH_DISTRIBUTED_DEBUG="DETAIL"), CM, DIV, [2]),
    ("shape-r0-ws3-t113-launch-console", "t113", "launch", "shape", 3, [0], "console", PG10, CM, [CM, CFD, UNK], UNK),
    ("stall-r1-ws4-t113-launchenv-tee", "t113", "launch-env", "stall", 4, [1], "tee", PG10, STRAG, [STRAG], [1]),
    ("stall-r0-ws2-t112-torchrun-logdir", "t112", "torchrun", "stall", 2, [0], "logdir", PG10, STRAG, [STRAG], [0]),
    ("mbarrier-r2-ws3-t113-torchrun-teeflag", "t113", "torchrun", "mbarrier", 3, [2], "teeflag", PG10, STRAG, [STRAG, CFD], [2]),
    ("mbarrier-r1-ws4-t112-launch-files", "t112", "launch", "mbarrier", 4, [1], "files", PG10, STRAG, [STRAG, CFD], [1]),
    ("unused-r1-ws2-t113-launchenv-tee", "t113", "launch-env", "unused", 2, [1], "tee", PG10, DDPU, [DDPU, CM], [1]),
    ("unused-r0-ws3-t112-torchrun-logdir", "t112", "torchrun", "unused", 3, [0], "logdir", PG10, DDPU, [DDPU, CM], [0]),
    ("badport-r1-ws2-t112-spawn-console", "t112", "spawn", "badport", 2, [1], "console", PG10, RDZV, [RDZV], [1]),
    ("badport-r2-ws4-t113-launchenv-tee", "t113", "launch-env", "badport", 4, [2], "tee", PG10, RDZV, [RDZV], [2]),
    ("badaddr-node1-ws2-t113-launch-tee", "t113", "launch-node1", "healthy", 2, [], "tee", {}, RDZV, [RDZV], UNK),
    ("healthy-ws2-t112-launch-tee-warn", "t112", "launch", "healthy", 2, [], "tee", WARN, "none", ["none"], []),
    ("healthy-ws4-t113-torchrun-logdir", "t113", "torchrun", "healthy", 4, [], "logdir", {}, "none", ["none"], []),
    ("healthy-ws3-t113-spawn-files-warn", "t113", "spawn", "healthy", 3, [], "files", WARN, "none", ["none"], []),
    ("healthy-ws8-t112-launchenv-tee", "t112", "launch-env", "healthy", 8, [], "tee", {"STEPS": "4"}, "none", ["none"], []),
]

LAUNCHER_TEXT = {
    "launch": "python -m torch.distributed.launch --nproc_per_node={ws} (--local_rank=N passed to the script)",
    "launch-env": "python -m torch.distributed.launch --use_env --nproc_per_node={ws}",
    "torchrun": "torchrun --nproc_per_node={ws}",
    "spawn": "python train.py, torch.multiprocessing.spawn(nprocs={ws})",
    "launch-node1": "python -m torch.distributed.launch --nnodes=2 --node_rank=1 --master_addr=<unreachable> --nproc_per_node={ws} (the second node alone, the first never started)",
}
OUT_TEXT = {"tee": "console kept with 2>&1 | tee train.log", "console": "console kept with > console.log 2>&1",
            "logdir": "--log_dir tree with --redirects 3 and the console", "teeflag": "torchrun --tee 3, console kept with 2>&1 | tee train.log",
            "files": "the script's per-rank log files (logging module) and the console"}


def write_job(job_dir, j):
    name, rel, launcher, fault, ws, ranks, out, extra, cat, accept, culprit = j
    env = ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
    (job_dir / "job.yaml").write_text(
        f"# real run (session 29, h29-old, probe60): {RELEASE[rel]}, PyPI CUDA build on the CPU, gloo, "
        f"{LAUNCHER_TEXT[launcher].format(ws=ws)}, {OUT_TEXT[out]}; tools/probe60/gen.py job {name}, "
        f"FAULT={fault} on ranks {ranks or 'none'}{' (' + env + ')' if env else ''}; truth written before the job ran\n"
        f"world_size: {ws}\nfault: {fault}\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def command(j, job_dir):
    name, rel, launcher, fault, ws, ranks, out, *_ = j
    venv = VENVS[rel]
    py = f"{venv}/bin/python"
    script = str(HERE / "train.py")
    if launcher == "spawn":
        return [py, script]
    if launcher == "torchrun":
        cmd = [f"{venv}/bin/torchrun", f"--nproc_per_node={ws}", "--master_port=29560"]
    else:
        cmd = [py, "-m", "torch.distributed.launch", f"--nproc_per_node={ws}"]
        if launcher == "launch-env":
            cmd.append("--use_env")
        if launcher == "launch-node1":
            cmd += ["--nnodes=2", "--node_rank=1", "--master_addr=10.254.3.7", "--master_port=29560"]
        else:
            cmd.append("--master_port=29560")
    if out == "logdir":
        cmd += ["--log_dir", str(job_dir / "logs"), "--redirects", "3"]
    if out == "teeflag":
        cmd += ["--tee", "3"]
    return [*cmd, script]


def run(out_root, j):
    name, rel, launcher, fault, ws, ranks, out, extra, *_ = j
    job_dir = out_root / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    write_job(job_dir, j)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH", "PYTHON", "VIRTUAL_ENV"))}
    env.update(FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               STALL_DIR=str(job_dir), LOGDIR=str(job_dir / "logs"), **extra)
    env.setdefault("PG_TIMEOUT", "20")
    env.setdefault("STEPS", "8")
    if out == "files":
        env["LOGSTYLE"] = "files"
    if launcher == "spawn":
        env.update(SPAWN=str(ws), MASTER_ADDR="localhost", MASTER_PORT="29560")
    log = job_dir / ("console.log" if out in ("console", "logdir") else "train.log")
    rc = probelib.run_with_kill_files(command(j, job_dir), job_dir, env, timeout_s=150, log=log, own_session=True)
    for p in job_dir.glob("kill.*"):
        p.unlink()
    subs = [(str(job_dir), "/home/user/project"), (str(HERE), "/home/user/project"),
            (VENVS[rel], "/home/user/.venv"), (str(out_root), "/home/user"), ("/root/.pyenv", "/home/user/.pyenv")]
    probelib.rewrite_paths(job_dir, subs)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(JOBS, run)


if __name__ == "__main__":
    main()
