"""Generator of the held-out probe48: real torchrun (gloo, CPU) runs of parallel styles beyond DDP.

Each case's truth is written into <out>/<case>/case.yaml from the injected fault before the job runs;
the job's console (and its --log-dir tree) is kept, with machine paths rewritten to /home/user/...
Usage: python run_probe48.py OUT [case-name-substring ...]   (one job at a time, each under `timeout`; run
with the Python that has torch 2.13, whose torchrun is used, or set TORCHRUN)
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
VENV = str(pathlib.Path(TORCHRUN).parent.parent)   # rewritten to /home/user/.venv in the kept logs
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DIV = [CFD, CM]
F1B = {"SCHED": "1f1b"}
# a compile must take longer than the peers' 8 s timeout: no FX/inductor cache from an earlier run
SLOW = {"PGTO": "8", "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}

# name, SCEN, world size, culprit rank, output (console | tee | logdir), DETAIL, LOGSTYLE, extra env,
# category, accept, culprit_ranks
CASES = [
    ("pp-gpipe-stage-crash-r2-ws4", "pp-crash", 4, 2, "console", 0, "plain", {}, CRASH, [CRASH], [2]),
    ("pp-1f1b-stage-crash-r0-ws2", "pp-crash", 2, 0, "logdir", 0, "plain", F1B, CRASH, [CRASH], [0]),
    ("pp-gpipe-input-shape-r2-ws4", "pp-shape", 4, 2, "tee", 0, "plain", {}, CM, [CM], [2]),
    ("pp-1f1b-input-shape-r1-ws3-detail", "pp-shape", 3, 1, "logdir", 1, "tag", F1B, CM, [CM], [1]),
    ("pp-gpipe-microbatches-r1-ws4", "pp-mbcount", 4, 1, "console", 0, "tag", {}, CFD, DIV, [1]),
    ("pp-1f1b-microbatches-r0-ws3", "pp-mbcount", 3, 0, "tee", 0, "plain", F1B, CFD, DIV, [0]),
    ("pp-gpipe-stage-stall-r1-ws4", "pp-stall", 4, 1, "console", 0, "plain", {}, STRAG, [STRAG], [1]),
    ("pp-1f1b-stage-stall-r3-ws4-detail", "pp-stall", 4, 3, "logdir", 1, "plain", F1B, STRAG, [STRAG], [3]),
    ("tp-2d-mesh-dims-swapped-r3-ws4", "tp-meshnames", 4, 3, "console", 0, "plain", {}, CFD, DIV, [3]),
    ("tp-2d-mesh-shape-differs-r0-ws8", "tp-meshdiff", 8, 0, "logdir", 0, "tag", {}, CFD, DIV, [0]),
    ("tp-redistribute-one-rank-r1-ws4-detail", "tp-redistribute", 4, 1, "tee", 1, "plain", {}, CFD, DIV, [1]),
    ("tp-redistribute-one-rank-r2-ws4", "tp-redistribute", 4, 2, "console", 0, "tag", {}, CFD, DIV, [2]),
    ("fsdp2-skip-forward-r2-ws4", "fsdp2-skipfwd", 4, 2, "console", 0, "plain", {}, CFD, DIV, [2]),
    ("fsdp2-skip-forward-r0-ws3-detail", "fsdp2-skipfwd", 3, 0, "tee", 1, "plain", {}, CFD, DIV, [0]),
    ("compile-one-rank-r1-ws2", "compile-oneranks", 2, 1, "console", 0, "plain", SLOW, STRAG, [STRAG], [1]),
    ("compile-one-rank-r0-ws3", "compile-oneranks", 3, 0, "logdir", 0, "tag", SLOW, STRAG, [STRAG], [0]),
    ("p2p-ring-wrong-peer-r2-ws4", "p2p-wrongpeer", 4, 2, "console", 0, "tag", {}, CFD, DIV, [2]),
    ("p2p-ring-send-size-r1-ws3", "p2p-size", 3, 1, "tee", 0, "plain", {}, CM, [CM], [1]),
    ("p2p-ring-wrong-peer-r0-ws3-detail", "p2p-wrongpeer", 3, 0, "logdir", 1, "plain", {}, CFD, DIV, [0]),
    ("subgroup-crash-r4-ws6", "sub-crash", 6, 4, "console", 0, "plain", {}, CRASH, [CRASH], [4]),
    ("subgroup-skip-allreduce-r1-ws6", "sub-skip", 6, 1, "tee", 0, "plain", {}, CFD, DIV, [1]),
    ("subgroup-crash-r0-ws4", "sub-crash", 4, 0, "logdir", 0, "tag", {}, CRASH, [CRASH], [0]),
    ("a2a-wrong-splits-r3-ws4", "a2a-splits", 4, 3, "console", 0, "plain", {}, CM, [CM], [3]),
    ("a2a-wrong-splits-r0-ws2-detail", "a2a-splits", 2, 0, "tee", 1, "plain", {}, CM, [CM], [0]),
    ("obj-broadcast-unpicklable-r0-ws3", "obj-bcast", 3, 0, "console", 0, "plain", {}, CRASH, [CRASH], [0]),
    ("obj-gather-unpicklable-r2-ws4", "obj-gather", 4, 2, "logdir", 0, "plain", {}, CRASH, [CRASH], [2]),
    ("healthy-pp-1f1b-ws4", "pp-healthy", 4, -1, "tee", 0, "plain", F1B, "none", ["none"], []),
    ("healthy-tp-2d-ws4-detail", "tp-healthy", 4, -1, "console", 1, "tag", {}, "none", ["none"], []),
    ("healthy-fsdp2-ws2", "fsdp2-healthy", 2, -1, "logdir", 0, "plain", {}, "none", ["none"], []),
    ("healthy-subgroups-ws6", "sub-healthy", 6, -1, "console", 0, "plain", {}, "none", ["none"], []),
    ("healthy-objects-a2a-ws3", "obj-healthy", 3, -1, "tee", 0, "tag", {}, "none", ["none"], []),
]


def write_truth(case_dir, c):
    _name, scen, ws, bad, out, detail, _style, _extra, cat, accept, cul = c
    how = {"console": "console captured with 2>&1", "tee": "console with --tee 3",
           "logdir": "--log-dir tree with --redirects 3 and the console"}[out]
    debug = ", TORCH_DISTRIBUTED_DEBUG=DETAIL" if detail else ""
    culprit = bad if bad >= 0 else "none"
    text = (f"# real run (session 25, h25-pp, probe48): torch 2.13 CPU, gloo, torchrun --nproc-per-node "
            f"{ws}, {how}{debug}; generator tools/probe48/run_probe48.py scenario {scen}, injected fault "
            f"on rank {culprit}; truth written before hanglens ran\n"
            f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {cul}\n")
    (case_dir / "case.yaml").write_text(text)


def rewrite(case_dir, run_dir, out_root):
    subs = [(str(run_dir), "/home/user/run"), (str(HERE), "/home/user/train"),
            (VENV, "/home/user/.venv"), (str(out_root.parent), "/home/user")]
    for p in case_dir.rglob("*"):
        if p.is_file() and p.name != "case.yaml":
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


def run(out_root, c):
    name, scen, ws, bad, out, detail, style, extra, *_ = c
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    write_truth(case_dir, c)
    env = dict(os.environ, SCEN=scen, BAD=str(bad), LOGSTYLE=style, PYTHONUNBUFFERED="1", **extra)
    env.setdefault("PGTO", "15")
    env["STEPS"] = env.get("STEPS", "6")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    cmd = [TORCHRUN, "--nproc-per-node", str(ws), "--master-port", "29748"]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "par.py")]
    with open(case_dir / "console.log", "w") as fh:
        rc = subprocess.run(["timeout", "-s", "TERM", "150", *cmd], stdout=fh, stderr=subprocess.STDOUT,
                            env=env, cwd=case_dir).returncode
    rewrite(case_dir, case_dir, out_root)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
