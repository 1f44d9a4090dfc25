# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe62 runs: real torchrun (gloo, CPU) jobs of train.py on older torch releases and newer Pythons,
one injected fault each: torch 2.3.1 and 2.4.1 on Python 3.12.1, torch 2.5.1 and 2.6.0 on Python 3.13.0
(the PyPI CUDA builds, run on the CPU), numpy 1.26.4 (3.12) / 2.x (3.13).

Each case writes <out>/<case>/ with the launcher console (console.log, or train.log for a console kept with
`2>&1 | tee train.log`), a --log-dir tree when asked (logs/), and case.yaml: the injected fault's truth
(category, accept, culprit ranks), written before the job runs. `sigkill` ranks are SIGKILLed from here
(as the OOM killer would) once they write their pid; `silent` jobs are stopped from outside by `timeout -s
TERM` around torchrun. DCP checkpoints written by the jobs are removed afterwards. Machine paths are
rewritten to /home/user/...
Usage: TORCH_VENVS=2.3.1=/path/venv,2.4.1=...,2.5.1=...,2.6.0=... python gen.py OUT [case-name-substring ...]
(one job at a time, each under `timeout`)
"""

import os
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib

HERE = pathlib.Path(__file__).resolve().parent
VENVS = dict(x.split("=", 1) for x in os.environ.get("TORCH_VENVS", "").split(",") if x)
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DLC, OOM = "dataloader_crash", "oom"
DIV = [CFD, CM]
T10 = {"PG_TIMEOUT": "10"}
W2 = {"WORKERS": "2"}
V23, V24, V25, V26 = "2.3.1", "2.4.1", "2.5.1", "2.6.0"
PREFIX = "[${rank}]:"   # the example of local_elastic_agent.py's docstring

# name, torch, FAULT, world size, fault ranks, output, DETAIL (0 | 1 DETAIL | 2 DETAIL + TORCH_CPP_LOG_LEVEL=INFO),
# PAR, extra env, category, accept, culprit (None: the fault ranks)
# output: console (2>&1 into console.log) | trainlog (2>&1 | tee train.log) | tee (--tee 3) | logdir
# (--log-dir logs --redirects 3) | filter0 (--tee 3 --local-ranks-filter 0) | prefix (--tee 3
# TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE) | restarts (--tee 3 --max-restarts 1)
CASES = [
    ("skip-r0-ws2-ddp-tee", V24, "skip", 2, [0], "tee", 0, "ddp", T10, CFD, DIV, None),
    ("skip-r1-ws2-ddp-tee", V24, "skip", 2, [1], "tee", 0, "ddp", T10, CFD, DIV, None),
    ("skip-r2-ws4-fsdp1-logdir", V23, "skip", 4, [2], "logdir", 0, "fsdp1", T10, CFD, DIV, None),
    ("skip-r0-ws3-fsdp1-console", V26, "skip", 3, [0], "console", 0, "fsdp1", T10, CFD, DIV, None),
    ("skip-r3-ws4-ddp-trainlog", V25, "skip", 4, [3], "trainlog", 0, "ddp", T10, CFD, DIV, None),
    ("crash-r1-ws4-ddp-tee", V23, "crash", 4, [1], "tee", 0, "ddp", {}, CRASH, [CRASH], None),
    ("crash-r2-ws4-ddp-filter0", V24, "crash", 4, [2], "filter0", 0, "ddp", {}, CRASH, [CRASH], None),
    ("crash-r0-ws3-fsdp1-logdir", V26, "crash", 3, [0], "logdir", 0, "fsdp1", {}, CRASH, [CRASH], None),
    ("crash-r5-ws8-fsdp1-prefix", V25, "crash", 8, [5], "prefix", 0, "fsdp1", {}, CRASH, [CRASH], None),
    # added after the probe's first scoring (not part of it), for tests/written_cases: a hang behind the template
    ("skip-r1-ws4-ddp-prefix", V25, "skip", 4, [1], "prefix", 0, "ddp", T10, CFD, DIV, None),
    ("crash-r1-ws2-ddp-restarts", V26, "crash", 2, [1], "restarts", 0, "ddp", {}, CRASH, [CRASH], None),
    ("crash-r2-ws3-ddp-color-console", V25, "crash", 3, [2], "console", 0, "ddp", {"FORCE_COLOR": "1"}, CRASH, [CRASH], None),
    ("uneven-r1-ws4-ddp-tee", V23, "uneven", 4, [1], "tee", 0, "ddp", T10, CFD, DIV, None),
    ("uneven-r0-ws2-fsdp1-logdir", V25, "uneven", 2, [0], "logdir", 0, "fsdp1", T10, CFD, DIV, None),
    ("sigkill-r2-ws4-ddp-tee", V26, "sigkill", 4, [2], "tee", 0, "ddp", {}, CRASH, [CRASH, OOM], None),
    ("sigkill-r0-ws3-fsdp1-console", V24, "sigkill", 3, [0], "console", 0, "fsdp1", {}, CRASH, [CRASH, OOM], None),
    ("dlkill-r1-ws3-ddp-tee", V25, "dlkill", 3, [1], "tee", 0, "ddp", W2, DLC, [DLC], None),
    ("dlkill-r3-ws4-fsdp1-logdir", V23, "dlkill", 4, [3], "logdir", 0, "fsdp1", W2, DLC, [DLC], None),
    ("shape-r2-ws4-manual-detail-tee", V24, "shape", 4, [2], "tee", 1, "manual", T10, CM, DIV, None),
    ("shape-r1-ws3-ddp-detail-console", V26, "shape", 3, [1], "console", 1, "ddp", T10, CM, DIV, None),
    ("opmix-r3-ws4-manual-detail-logdir", V25, "opmix", 4, [3], "logdir", 1, "manual", T10, CM, DIV, None),
    ("stall-r1-ws4-ddp-tee", V23, "stall", 4, [1], "tee", 0, "ddp", T10, STRAG, [STRAG], None),
    ("stall-r0-ws3-fsdp1-logdir", V26, "stall", 3, [0], "logdir", 0, "fsdp1", T10, STRAG, [STRAG], None),
    ("mbarrier-r2-ws4-ddp-tee", V25, "mbarrier", 4, [2], "tee", 0, "ddp", {}, STRAG, [STRAG, CFD], None),
    ("mbarrier-r1-ws3-manual-detail-console", V24, "mbarrier", 3, [1], "console", 1, "manual", {}, STRAG, [STRAG, CFD], None),
    ("dcpfail-r1-ws4-fsdp1-tee", V26, "dcpfail", 4, [1], "tee", 0, "fsdp1", T10, CRASH, [CRASH], None),
    ("dcpfail-r2-ws3-ddp-logdir", V24, "dcpfail", 3, [2], "logdir", 0, "ddp", T10, CRASH, [CRASH], None),
    # culprit amended to unknown after the first scoring: rank 2 stalls before its step-4 line and the others
    # block in step 4's all-reduce before theirs, so every rank's last line is step 3 (the logs cannot tell)
    ("silent-r2-ws4-ddp-every-tee", V25, "silent", 4, [2], "tee", 0, "ddp", {"EVERY": "1", "LOG": "logging"}, STRAG, [STRAG, CFD], "unknown"),
    ("silent-r1-ws3-fsdp1-console", V23, "silent", 3, [1], "console", 0, "fsdp1", {}, STRAG, [STRAG, CFD], "unknown"),
    # FSDP2 (fully_shard) on the CPU: 2.3 creates torch.cuda streams, 2.6 calls Stream.record_event, which the
    # CPU stream lacks (both seen in trial runs before the probe): every rank fails at its first forward
    ("fsdp2-cpu-all-ws3-tee", V26, "healthy", 3, [], "tee", 0, "fsdp2", {}, CRASH, [CRASH], [0, 1, 2]),
    ("healthy-ws4-ddp-tee-warn", V24, "healthy", 4, [], "tee", 0, "ddp", {"WARN": "1", "WORKERS": "2"}, "none", ["none"], None),
    ("healthy-ws2-fsdp1-logdir", V26, "healthy", 2, [], "logdir", 0, "fsdp1", {}, "none", ["none"], None),
    ("healthy-ws3-fsdp1-console-detail-cppinfo", V23, "healthy", 3, [], "console", 2, "fsdp1", {}, "none", ["none"], None),
    ("healthy-ws4-ddp-prefix-cppinfo", V25, "healthy", 4, [], "prefix", 2, "ddp", {"LOG": "logging"}, "none", ["none"], None),
]
PY = {V23: "3.12.1", V24: "3.12.1", V25: "3.13.0", V26: "3.13.0"}
OUT_WORDS = {"console": "console captured with 2>&1", "trainlog": "console kept with 2>&1 | tee train.log",
             "tee": "console with --tee 3", "logdir": "--log-dir tree with --redirects 3 and the console",
             "filter0": "console with --tee 3 --local-ranks-filter 0",
             "prefix": f"console with --tee 3 and TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='{PREFIX}'",
             "restarts": "console with --tee 3 --max-restarts 1"}
DETAIL_WORDS = {0: "", 1: ", TORCH_DISTRIBUTED_DEBUG=DETAIL",
                2: ", TORCH_DISTRIBUTED_DEBUG=DETAIL and TORCH_CPP_LOG_LEVEL=INFO"}


def write_truth(job_dir, c):
    name, ver, fault, ws, ranks, out, detail, par, extra, cat, accept, cul = c
    culprit = ranks if cul is None else cul
    opts = ", ".join(f"{k}={v}" for k, v in extra.items())
    (job_dir / "case.yaml").write_text(
        f"# real run (session 29, h29-late, probe62): torch {ver} (PyPI CUDA build on the CPU), Python {PY[ver]}, gloo, "
        f"torchrun --nproc-per-node {ws}, {OUT_WORDS[out]}{DETAIL_WORDS[detail]}; tools/probe62/gen.py case {name}, "
        f"FAULT={fault} on ranks {ranks or 'none'} (PAR={par}{', ' + opts if opts else ''}); truth written before "
        f"the job ran; machine paths rewritten to /home/user/...\n"
        f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def run(out_root, c):
    name, ver, fault, ws, ranks, out, detail, par, extra, *_ = c
    venv = VENVS[ver]
    job_dir = out_root / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    write_truth(job_dir, c)
    env = dict(os.environ, FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               PAR=par, KILLDIR=str(job_dir), CKPT=str(job_dir / "ckpt"), **extra)
    env.pop("TORCH_VENVS", None)
    env.setdefault("STEPS", "8")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    if detail == 2:
        env["TORCH_CPP_LOG_LEVEL"] = "INFO"
    cmd = [f"{venv}/bin/torchrun", "--nproc-per-node", str(ws), "--master-port", "29862"]
    if out in ("tee", "filter0", "prefix", "restarts"):
        cmd += ["--tee", "3"]
    if out == "filter0":
        cmd += ["--local-ranks-filter", "0"]
    if out == "prefix":   # an environment variable only (no torchrun flag) in 2.3-2.6
        env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = PREFIX
    if out == "restarts":
        cmd += ["--max-restarts", "1"]
    if out == "logdir":
        cmd += ["--log-dir", str(job_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "train.py")]
    log = job_dir / ("train.log" if out == "trainlog" else "console.log")
    timeout_s = 45 if fault == "silent" else 150
    rc = probelib.run_with_kill_files(cmd, job_dir, env, timeout_s, log=log)
    shutil.rmtree(job_dir / "ckpt", ignore_errors=True)
    subs = [(str(job_dir), "/home/user/run"), (str(HERE), "/home/user/train"), (venv, "/home/user/.venv"),
            (str(out_root), "/home/user"), (f"/root/.pyenv/versions/{PY[ver]}", "/usr/local")]
    probelib.rewrite_paths(job_dir, subs, keep=())
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
