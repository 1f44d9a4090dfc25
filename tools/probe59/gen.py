# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe59 runs: real torchrun (gloo, CPU; torch 2.13) jobs of train.py that checkpoint with
torch.distributed.checkpoint (DCP) or a rank-0 torch.save of a gathered state dict, with one fault each.

Each case writes <out>/<case>/console.log (the launcher console captured with 2>&1), a --log-dir tree when
asked (logs/), and case.yaml: the injected fault's truth (category, accept, culprit ranks), written before
the job runs. Cases that resume first run a healthy preparation job (its output is not kept) that writes the
checkpoint, then damage it (PREP). `kill9` ranks are killed with SIGKILL from here (as an OOM killer or an
operator would) once they write their pid in the middle of a save. A rank's read-only or full checkpoint
directory is a tmpfs mounted in a private mount namespace of that rank only (a node-local disk: train.py
`_mount_private`; run as root). Machine paths are rewritten to /home/user/... afterwards.
Usage: python gen.py OUT [case-name-substring ...]   (one job at a time, each under `timeout`; run with the
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
CFD, CM, CRASH, STRAG, OOM = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler", "oom"
ALL = "all"

# name, SCEN, world size, fault ranks, output (console | tee | logdir), DETAIL, extra env, PREP (None or
# (world size, damage)), category, accept, culprit (list | "all" | "unknown")
D, F = {"PAR": "ddp"}, {"PAR": "fsdp"}
CASES = [
    ("readonly-r2-ws4-ddp-tee", "readonly", 4, [2], "tee", 0, D, None, CRASH, [CRASH], [2]),
    ("readonly-r0-ws3-fsdp-logdir", "readonly", 3, [0], "logdir", 0, F, None, CRASH, [CRASH], [0]),
    ("full-r1-ws2-ddp-console", "full", 2, [1], "console", 0, D, None, CRASH, [CRASH], [1]),
    ("full-r3-ws4-fsdp-tee-detail", "full", 4, [3], "tee", 1, F, None, CRASH, [CRASH], [3]),
    ("full-node-r2-r3-ws4-fsdp-tee", "full", 4, [2, 3], "tee", 0, F, None, CRASH, [CRASH], [2, 3]),
    ("sdraise-r1-ws4-ddp-tee", "sd-raise", 4, [1], "tee", 0, D, None, CRASH, [CRASH], [1]),
    ("sdraise-r0-ws3-fsdp-console", "sd-raise", 3, [0], "console", 0, F, None, CRASH, [CRASH], [0]),
    ("sdraise-r1-r4-ws6-ddp-logdir", "sd-raise", 6, [1, 4], "logdir", 0, D, None, CRASH, [CRASH], [1, 4]),
    ("skip-r2-ws4-ddp-tee", "skip", 4, [2], "tee", 0, D, None, CFD, [CFD, CM], [2]),
    ("skip-r0-ws2-fsdp-logdir", "skip", 2, [0], "logdir", 0, F, None, CFD, [CFD, CM], [0]),
    ("skip-r5-ws8-fsdp-console", "skip", 8, [5], "console", 0, F, None, CFD, [CFD, CM], [5]),
    ("shape-load-r1-ws3-ddp-tee", "shape", 3, [1], "tee", 0, dict(D, RESUME="step_3"), (3, ""), CRASH, [CRASH], [1]),
    ("shape-load-r3-ws4-fsdp-logdir-detail", "shape", 4, [3], "logdir", 1, dict(F, RESUME="step_3"), (4, ""), CRASH, [CRASH], [3]),
    ("missing-key-r0-ws2-ddp-console", "missing-key", 2, [0], "console", 0, dict(D, RESUME="step_3"), (2, ""), CRASH, [CRASH], [0]),
    ("resume-ws2-to-ws4-fsdp-tee", "healthy", 4, [2, 3], "tee", 0, dict(F, RESUME="step_3"), (2, ""), CRASH, [CRASH], [2, 3]),
    ("shard-missing-r2-ws4-fsdp-tee", "healthy", 4, [2], "tee", 0, dict(F, RESUME="step_3"), (4, "rm:__2_0.distcp"), CRASH, [CRASH], [2]),
    ("shard-corrupt-r1-ws3-fsdp-logdir", "healthy", 3, [1], "logdir", 0, dict(F, RESUME="step_3"), (3, "trunc:__1_0.distcp"), CRASH, [CRASH], [1]),
    ("metadata-missing-ws3-ddp-tee", "healthy", 3, [], "tee", 0, dict(D, RESUME="step_3"), (3, "rm:.metadata"), CRASH, [CRASH], ALL),
    ("async-full-r2-ws4-ddp-tee", "full", 4, [2], "tee", 0, dict(D, ASYNC="1", SAVE_AT="3,6"), None, CRASH, [CRASH], [2]),
    ("async-readonly-r0-ws3-fsdp-console", "readonly", 3, [0], "console", 0, dict(F, ASYNC="1", SAVE_AT="3,6"), None, CRASH, [CRASH], [0]),
    ("slow-writer-r1-ws4-ddp-tee", "slow", 4, [1], "tee", 0, D, None, STRAG, [STRAG], [1]),
    ("slow-writer-r0-ws3-fsdp-logdir", "slow", 3, [0], "logdir", 0, F, None, STRAG, [STRAG], [0]),
    ("gather-oom-r0-ws4-fsdp-tee", "gather-oom", 4, [0], "tee", 0, dict(F, FULL="1", HID="1024"), None, OOM, [OOM], [0]),
    ("gather-oom-r0-ws2-fsdp-console", "gather-oom", 2, [0], "console", 0, dict(F, FULL="1", HID="1024"), None, OOM, [OOM], [0]),
    ("kill9-save-r2-ws4-ddp-tee", "kill9", 4, [2], "tee", 0, D, None, CRASH, [CRASH, OOM], [2]),
    ("kill9-save-r0-ws3-fsdp-logdir", "kill9", 3, [0], "logdir", 0, F, None, CRASH, [CRASH, OOM], [0]),
    ("healthy-async-ws4-ddp-tee", "healthy", 4, [], "tee", 0, dict(D, ASYNC="1", SAVE_AT="3,6"), None, "none", ["none"], []),
    ("healthy-resume-ws4-to-ws2-fsdp-console", "healthy", 2, [], "console", 0, dict(F, RESUME="step_3"), (4, ""), "none", ["none"], []),
    ("healthy-full-save-ws3-fsdp-logdir-detail", "healthy", 3, [], "logdir", 1, dict(F, FULL="1"), None, "none", ["none"], []),
    ("healthy-ws8-fsdp-console", "healthy", 8, [], "console", 0, dict(F, SAVE_AT="2,5"), None, "none", ["none"], []),
]


def write_truth(case_dir, c):
    name, scen, ws, ranks, out, detail, extra, prep, cat, accept, culprit = c
    if culprit == ALL:
        culprit = list(range(ws))
    how = {"console": "console captured with 2>&1", "tee": "console with --tee 3",
           "logdir": "--log-dir tree with --redirects 3 and the console"}[out]
    prep_txt = (f"; a healthy job of world size {prep[0]} wrote the checkpoint first"
                + (f", then the generator damaged it ({prep[1]})" if prep[1] else "") if prep else "")
    env = ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
    (case_dir / "case.yaml").write_text(
        f"# real run (session 28, h28-dcp, probe59): torch 2.13 CPU, gloo, torchrun --nproc-per-node {ws}, "
        f"{how}{', TORCH_DISTRIBUTED_DEBUG=DETAIL' if detail else ''}; tools/probe59/gen.py case {name}, "
        f"SCEN={scen} on ranks {ranks or 'none'} ({env}){prep_txt}; truth written before the job ran; machine "
        f"paths rewritten to /home/user/...\n"
        f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def rewrite(case_dir, out_root):
    subs = [(str(case_dir), "/home/user/run"), (str(HERE), "/home/user/train"), (VENV, "/home/user/.venv"),
            (str(out_root), "/home/user"), (sys.base_prefix, "/usr")]
    probelib.rewrite_paths(case_dir, subs, keep=("case.yaml",))


def torchrun(ws, out, case_dir, env, log):
    cmd = [TORCHRUN, "--nproc-per-node", str(ws), "--master-port", "29959"]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "train.py")]
    return probelib.run_with_kill_files(cmd, case_dir, env, log=log)


def run(out_root, c):
    name, scen, ws, ranks, out, detail, extra, prep, *_ = c
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    write_truth(case_dir, c)
    base = dict(os.environ, PYTHONUNBUFFERED="1", CKPT=str(case_dir / "ckpt"), KILLDIR=str(case_dir),
                PGTO="20", STEPS="6", SAVE_AT="3")
    if prep:
        env = dict(base, SCEN="healthy", PAR=extra["PAR"])
        rc = torchrun(prep[0], "console", case_dir, env, case_dir / "prep.txt")
        (case_dir / "prep.txt").unlink()
        kind, _, fname = prep[1].partition(":")
        target = case_dir / "ckpt" / "step_3" / fname
        if kind == "rm":
            target.unlink()
        elif kind == "trunc":
            with open(target, "r+b") as fh:
                fh.truncate(target.stat().st_size // 3)
        print(f"{name}: prep rc={rc}", flush=True)
    env = dict(base, SCEN=scen, BAD=",".join(map(str, ranks)), **extra)
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    rc = torchrun(ws, out, case_dir, env, case_dir / "console.log")
    for p in case_dir.glob("kill.*"):
        p.unlink()
    shutil.rmtree(case_dir / "ckpt", ignore_errors=True)
    rewrite(case_dir, out_root)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
