# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe56 runs: real jobs of the Hugging Face stack on gloo (CPU) with one injected fault each: hf_train.py
(transformers Trainer, under torchrun) and acc_loop.py (an accelerate loop, under `accelerate launch` or
torchrun), kept whole for cut.py.

Ran with torch 2.13.0+cpu, transformers 5.25.0, accelerate 1.16.0, datasets 5.2.0, Python 3.11 (a venv that
sees torch 2.13 and has the three packages installed; its bin/ has `torchrun` and `accelerate`).
Each job writes <out>/<job>/console.log (the launcher console captured with 2>&1), a log-dir tree when asked
(logs/), and job.yaml: the injected fault (category, accept, culprit ranks) written before the job runs.
`extkill` ranks are killed with SIGKILL from here (outside the job, as an OOM killer or an operator would)
once they write their pid. Machine paths are rewritten to /home/user/... afterwards.
Usage: VENV=/path/to/venv python gen.py OUT [job-name-substring ...]   (one job at a time, each under `timeout`)
"""

import os
import pathlib
import shutil
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
VENV = os.environ.get("VENV", str(pathlib.Path(sys.executable).parent.parent))
PY, TORCHRUN, ACCEL = (f"{VENV}/bin/{x}" for x in ("python", "torchrun", "accelerate"))
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DLC, OOM, DDPU = "dataloader_crash", "oom", "ddp_unused_parameters"
HANG = [STRAG, CFD]
TR, AC = "hf_train.py", "acc_loop.py"

# name, script, launcher (torchrun | accelerate), FAULT, world size, fault ranks, output (console | tee | logdir), DETAIL, extra env, category, accept
JOBS = [
    ("cbraise-r1-ws2-tee", TR, "torchrun", "cbraise", 2, [1], "tee", 0, {}, CRASH, [CRASH]),
    ("cbraise-r0-ws2-tee", TR, "torchrun", "cbraise", 2, [0], "tee", 0, {}, CRASH, [CRASH]),
    ("cbhang-r2-ws4-logdir", TR, "torchrun", "cbhang", 4, [2], "logdir", 0, {}, STRAG, HANG),
    ("metraise-r3-ws4-console", TR, "torchrun", "metraise", 4, [3], "console", 0, {}, CRASH, [CRASH]),
    ("methang-r0-ws3-tee", TR, "torchrun", "methang", 3, [0], "tee", 0, {}, STRAG, HANG),
    ("mpfslow-r0-ws4-tee", TR, "torchrun", "mpfslow", 4, [0], "tee", 0, {}, STRAG, [STRAG]),
    ("mpfslow-r0-ws6-logdir-detail", TR, "torchrun", "mpfslow", 6, [0], "logdir", 1, {}, STRAG, [STRAG]),
    ("mpfraise-r0-ws3-logdir", TR, "torchrun", "mpfraise", 3, [0], "logdir", 0, {}, CRASH, [CRASH]),
    ("mpfraise-r0-ws5-tee-detail", TR, "torchrun", "mpfraise", 5, [0], "tee", 1, {}, CRASH, [CRASH]),
    ("skipbwd-r1-ws3-tee", TR, "torchrun", "skipbwd", 3, [1], "tee", 0, {}, CFD, [CFD, CM, DDPU]),
    ("skipbwd-r0-ws2-console", TR, "torchrun", "skipbwd", 2, [0], "console", 0, {}, CFD, [CFD, CM, DDPU]),
    ("savefail-r0-ws4-tee", TR, "torchrun", "savefail", 4, [0], "tee", 0, {}, CRASH, [CRASH]),
    ("savefail-r0-ws8-logdir", TR, "torchrun", "savefail", 8, [0], "logdir", 0, {"ROWS": "768"}, CRASH, [CRASH]),
    ("dlkill-r2-ws4-logdir", TR, "torchrun", "dlkill", 4, [2], "logdir", 0, {"WORKERS": "2"}, DLC, [DLC]),
    ("dlkill-r1-ws2-tee", TR, "torchrun", "dlkill", 2, [1], "tee", 0, {"WORKERS": "2"}, DLC, [DLC]),
    ("memerr-r3-ws4-tee", TR, "torchrun", "memerr", 4, [3], "tee", 0, {}, OOM, [OOM]),
    ("extkill-r1-ws3-tee", TR, "torchrun", "extkill", 3, [1], "tee", 0, {}, CRASH, [CRASH, OOM]),
    ("extkill-r5-ws6-logdir", TR, "torchrun", "extkill", 6, [5], "logdir", 0, {}, CRASH, [CRASH, OOM]),
    ("healthy-ws4-tee-warn", TR, "torchrun", "healthy", 4, [], "tee", 0, {"WARN": "1", "BASE": "@base"}, "none", ["none"]),  # rank 1 aborted at exit: kept relabelled as exitabort-r1-ws4-tee-warn
    ("healthy-ws6-console-warn-destroy", TR, "torchrun", "healthy", 6, [], "console", 0, {"WARN": "1", "BASE": "@base", "DESTROY": "1"}, "none", ["none"]),
    ("healthy-ws2-logdir-warn", TR, "torchrun", "healthy", 2, [], "logdir", 0, {"WARN": "1", "BASE": "@base", "WORKERS": "1"}, "none", ["none"]),
    ("uneven-r2-ws4-acc-tee", AC, "accelerate", "uneven", 4, [2], "tee", 0, {}, CFD, [CFD, CM]),  # ran healthy: kept relabelled as uneven-r2-ws4-default-dispatch-acc-tee
    ("uneven-r1-ws3-split-acc-logdir", AC, "accelerate", "uneven", 3, [1], "logdir", 0, {"SPLIT": "1"}, CFD, [CFD, CM]),  # failed at prepare on every rank: kept relabelled as splitcfg-all-ws3-acc-logdir
    ("uneven-r2-ws4-nodispatch-acc-tee", AC, "accelerate", "uneven", 4, [2], "tee", 0, {"DISPATCH": "0"}, CFD, [CFD, CM]),
    ("uneven-r1-ws3-split-nodispatch-acc-logdir", AC, "accelerate", "uneven", 3, [1], "logdir", 0, {"SPLIT": "1", "DISPATCH": "0"}, CFD, [CFD, CM]),
    ("uneven-r0-ws4-dispatch-acc-console", AC, "accelerate", "uneven", 4, [0], "console", 0, {"DISPATCH": "1"}, "none", ["none"]),  # hung at exit after every rank finished: kept relabelled as exithang-ws4-dispatch-acc-console
    ("gather-r1-ws4-acc-tee", AC, "accelerate", "gather", 4, [1], "tee", 0, {}, CM, [CM, CFD, STRAG, "unknown"]),
    ("gather-r2-ws3-acc-debug-tee", AC, "accelerate", "gather", 3, [2], "tee", 0, {"ACCELERATE_DEBUG_MODE": "1"}, CM, [CM]),
    ("mainonly-r0-ws4-torchrun-tee", AC, "torchrun", "mainonly", 4, [0], "tee", 0, {}, CFD, [CFD, CM]),
    ("crash-r3-ws4-acc-logdir", AC, "accelerate", "crash", 4, [3], "logdir", 0, {}, CRASH, [CRASH]),
    ("healthy-ws3-acc-warn-tee", AC, "accelerate", "healthy", 3, [], "tee", 0, {"WARN": "1"}, "none", ["none"]),
]


def write_job(job_dir, j):
    name, script, launcher, fault, ws, ranks, out, detail, _extra, cat, accept = j
    culprit = ranks if ranks and cat != "none" and "unknown" not in accept else ("unknown" if "unknown" in accept else [])
    (job_dir / "job.yaml").write_text(
        f"# real run (session 28, h28-hf, probe56): torch 2.13 CPU, gloo, transformers 5.25.0, accelerate 1.16.0, datasets 5.2.0; "
        f"{launcher} {script} with {ws} processes, output {out}{', TORCH_DISTRIBUTED_DEBUG=DETAIL' if detail else ''}; "
        f"tools/probe56/gen.py job {name}, FAULT={fault} on ranks {ranks or 'none'}; written before the job ran\n"
        f"world_size: {ws}\nfault: {fault}\ncategory: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def rewrite(job_dir, out_root):
    subs = [(str(job_dir), "/home/user/run"), (str(HERE), "/home/user/proj"), (VENV, "/home/user/.venv"),
            (probelib.torch_prefix(PY), "/home/user/.venv"), (str(out_root), "/home/user")]
    probelib.rewrite_paths(job_dir, subs, binary_suffixes=(".safetensors", ".bin", ".pt"))


def base_model(out_root):
    """A tiny BertModel saved locally: loading it with a classification head prints transformers' usual warning."""
    d = out_root / "_base"
    if not d.exists():
        subprocess.run([PY, "-c", "import sys; from transformers import BertConfig, BertModel; BertModel(BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)).save_pretrained(sys.argv[1])", str(d)], check=True)
    return str(d)


def run(out_root, j):
    name, script, launcher, fault, ws, ranks, out, detail, extra, *_ = j
    job_dir = out_root / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    write_job(job_dir, j)
    extra = {k: (base_model(out_root) if v == "@base" else v) for k, v in extra.items()}
    env = dict(os.environ, FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               STALL_DIR=str(job_dir), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", **extra)
    env.setdefault("PG_TIMEOUT", "15")
    env.setdefault("STEPS", "8")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    if launcher == "torchrun":
        cmd = [TORCHRUN, "--nproc-per-node", str(ws), "--master-port", "29956"]
        if out == "tee":
            cmd += ["--tee", "3"]
        if out == "logdir":
            cmd += ["--log-dir", str(job_dir / "logs"), "--redirects", "3"]
        cmd += [str(HERE / script)]
    else:
        cmd = [ACCEL, "launch", "--multi_gpu", "--num_processes", str(ws), "--main_process_port", "29956"]
        if out == "tee":
            cmd += ["--tee", "3"]
        if out == "logdir":
            cmd += ["--log_dir", str(job_dir / "logs"), "--tee", "3"]
        cmd += [str(HERE / script)]
    rc = probelib.run_with_kill_files(cmd, job_dir, env)
    for p in [*job_dir.glob("fault.*"), *job_dir.glob("kill.*")]:
        p.unlink()
    shutil.rmtree(job_dir / "out", ignore_errors=True)
    rewrite(job_dir, out_root)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(JOBS, run)


if __name__ == "__main__":
    main()
