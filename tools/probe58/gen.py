# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe58 runs: multi-node torchrun jobs on one machine, one agent per "node" (c10d rendezvous on
127.0.0.1, node i started with --local-addr 127.0.0.<i+1> so that it gets group_rank i, node 0 hosting
the rendezvous store with --rdzv-conf is_host=true), gloo on CPU, train.py with one injected fault.

Each job writes <out>/<job>/ with one console per node (the agent's stdout+stderr, named by node), a
--log-dir tree per node when asked (<node>/logs/), and <job>.yaml beside the folder: the injected fault's
category, accept and culprit ranks, written before the job runs (and before hanglens ever sees it).
`kill` ranks are SIGKILLed from here once they write their pid; `nodekill` SIGKILLs the whole process
group of the rank's agent (the node dies: agent, workers, and with node 0 the rendezvous store).
Machine paths are rewritten to /home/user/...; the agent's `host : localhost` (socket.getfqdn() on this
machine) is rewritten to the node's name in that node's files.
Usage: python gen.py OUT [job-name-substring ...]   (one job at a time; every agent under `timeout`; run
with the torch 2.13.0+cpu venv's Python, whose torchrun is used, or set TORCHRUN)
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
TORCHRUN = os.environ.get("TORCHRUN", str(pathlib.Path(sys.executable).with_name("torchrun")))
VENV = str(pathlib.Path(TORCHRUN).parent.parent)
CRASH, NET, RDZV, STRAG, OOM = "rank_crash", "network_transport", "rendezvous_failure", "straggler", "oom"
HEALTHY = ("none", ["none"], [])

# name: nodes (nproc per node; None = that node never starts), fault, fault ranks, output, options,
# (category, accept, culprit_ranks | "unknown")
# output: consoles (every node's console) | logdir (per node: console + --log-dir tree) | one:<i> (node i's console only)
# options: info (LOGLEVEL=INFO), tee (--tee 3), restarts=<n>, join=<s> (join_timeout), late=<i>:<s>
# (node i starts s seconds after node 0), style=rank0, nnodes=<i>:<spec> (node i's own --nnodes),
# names=<a,b,c> (node names), scale=<s> (a third node joins s seconds after the start; --nnodes 2:3)
JOBS = [
    ("crash-r3-node1-2x2-consoles", [2, 2], "crash", [3], "consoles", {}, (CRASH, [CRASH], [3])),
    ("crash-r2-node1-2x2-logdir-info", [2, 2], "crash", [2], "logdir", {"info": 1}, (CRASH, [CRASH], [2])),
    ("crash-r4-node2-3x2-tee-rank0", [2, 2, 2], "crash", [4], "consoles", {"tee": 1, "style": "rank0"}, (CRASH, [CRASH], [4])),
    ("crash-r3-node1-only-node0-console", [2, 2], "crash", [3], "one:0", {}, (CRASH, [CRASH, NET], "unknown")),
    ("crash-r2-node1-only-node1-console-tee", [2, 2], "crash", [2], "one:1", {"tee": 1}, (CRASH, [CRASH], [2])),
    ("kill9-r1-node0-2x2-consoles", [2, 2], "kill", [1], "consoles", {}, (CRASH, [CRASH, OOM], [1])),
    ("kill9-r5-node2-3x2-logdir", [2, 2, 2], "kill", [5], "logdir", {}, (CRASH, [CRASH, OOM], [5])),
    ("kill9-r3-node1-2x2-info-tee", [2, 2], "kill", [3], "consoles", {"info": 1, "tee": 1}, (CRASH, [CRASH, OOM], [3])),
    ("nodekill-node1-2x2-consoles", [2, 2], "nodekill", [2], "consoles", {}, (CRASH, [CRASH, NET], [2, 3])),
    ("nodekill-node0-store-host-2x2-consoles", [2, 2], "nodekill", [0], "consoles", {}, (CRASH, [CRASH, NET], [0, 1])),
    ("nodekill-node0-store-host-2x2-info-logdir", [2, 2], "nodekill", [1], "logdir", {"info": 1}, (CRASH, [CRASH, NET], [0, 1])),
    ("nodekill-node1-3x2-consoles-info", [2, 2, 2], "nodekill", [2], "consoles", {"info": 1}, (CRASH, [CRASH, NET], [2, 3])),
    ("nodekill-node0-only-node1-console", [2, 2], "nodekill", [0], "one:1", {}, (CRASH, [CRASH, NET], "unknown")),
    ("late-node1-beyond-join-timeout-2x2", [2, 2], "healthy", [], "consoles", {"join": 20, "late": "1:40", "conf": "read_timeout=20"}, (RDZV, [RDZV], "unknown")),
    ("never-node2-of-3-3x2-info", [2, 2, None], "healthy", [], "consoles", {"join": 20, "info": 1}, (RDZV, [RDZV], "unknown")),
    ("never-node1-only-node0-console", [2, None], "healthy", [], "consoles", {"join": 20}, (RDZV, [RDZV], "unknown")),
    ("mismatched-nproc-2-vs-1-consoles", [2, 1], "healthy", [], "consoles", {"info": 1}, HEALTHY),
    ("mismatched-nnodes-2-vs-3-consoles", [2, 2], "healthy", [], "consoles", {"join": 20, "nnodes": "1:3"}, (RDZV, [RDZV], "unknown")),
    ("restarts2-crash-r3-every-attempt-info", [2, 2], "crash", [3], "consoles", {"info": 1, "restarts": 2}, (CRASH, [CRASH], [3])),
    ("restarts1-crash-r1-every-attempt-logdir", [2, 2], "crash", [1], "logdir", {"restarts": 1}, (CRASH, [CRASH], [1])),
    ("restarts1-crash-r2-first-attempt-only-info", [2, 2], "crash-first", [2], "consoles", {"info": 1, "restarts": 1}, HEALTHY),
    ("restarts2-crash-r3-first-attempt-only-logdir", [2, 2], "crash-first", [3], "logdir", {"restarts": 2}, HEALTHY),
    ("stall-r2-node1-2x2-consoles", [2, 2], "stall", [2], "consoles", {}, (STRAG, [STRAG], [2])),
    ("stall-r1-node0-3x2-logdir-rank0", [2, 2, 2], "stall", [1], "logdir", {"style": "rank0"}, (STRAG, [STRAG], [1])),
    ("stall-r3-node1-only-node0-console", [2, 2], "stall", [3], "one:0", {}, (STRAG, [STRAG], "unknown")),
    ("healthy-2x2-consoles-info", [2, 2], "healthy", [], "consoles", {"info": 1}, HEALTHY),
    ("healthy-3x1-logdir", [1, 1, 1], "healthy", [], "logdir", {}, HEALTHY),
    ("healthy-elastic-2of3-nodes-info", [2, 2], "healthy", [], "consoles", {"info": 1, "nnodes_all": "2:3"}, HEALTHY),
    ("healthy-scale-up-third-node-joins-info", [2, 2], "healthy", [], "consoles", {"info": 1, "scale": 12, "steps": 40}, HEALTHY),
]

# Truth corrected after the runs, before hanglens ran (the label files say so): the two `first-attempt-only`
# jobs did not recover (the restarted attempts failed in `Gloo connectFullMesh`: torch 2.13's agent store
# keeps the previous attempt's gloo addresses), so they are the crash that started it (rank_crash, accept
# nccl_init_failure); the scale-up job's re-rendezvous timed out on its own store keys (rendezvous_failure,
# culprit unknown; its folder renamed scale-up-third-node-rerendezvous-times-out-info).
NAMES = ["gpu-a01", "gpu-a02", "gpu-a03"]
PORT = 29958


def write_truth(out_root, j):
    name, nodes, fault, ranks, out, opts, (cat, accept, culprit) = j
    layout = " + ".join("never started" if n is None else f"{n}" for n in nodes)
    (out_root / f"{name}.yaml").write_text(
        f"# real run (session 28, h28-nodes, probe58): torch 2.13.0+cpu, gloo, one torchrun agent per node on one machine "
        f"(c10d rendezvous, nproc per node {layout}), output {out}, options {opts or 'none'}; tools/probe58/gen.py job {name}, "
        f"FAULT={fault} on global ranks {ranks or 'none'}; written before the job ran\n"
        f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit if culprit == 'unknown' else list(culprit)}\n")


def rewrite(job_dir, out_root, node_of):
    subs = [(str(job_dir), "/home/user/job"), (str(HERE), "/home/user/job"), (VENV, "/home/user/.venv"),
            (str(out_root), "/home/user")]
    for p in job_dir.rglob("*"):
        if not p.is_file():
            continue
        t = p.read_text(errors="replace")
        for a, b in subs:
            t = t.replace(a, b)
        node = node_of(p)
        if node is not None:
            t = re.sub(r"(host\s*: )localhost\b", r"\g<1>" + node, t)
            t = t.replace('"hostname": "localhost"', f'"hostname": "{node}"')
        p.write_text(t)


def agent_cmd(i, n, nodes, opts, job_dir, name, node):
    nnodes = opts.get("nnodes_all", str(len([x for x in nodes if x is not None]) if "never" not in name else len(nodes)))
    if "nnodes" in opts and opts["nnodes"].startswith(f"{i}:"):
        nnodes = opts["nnodes"].split(":", 1)[1]
    if "scale" in opts:
        nnodes = "2:3"
    conf = f"is_host={'true' if i == 0 else 'false'}"
    if "join" in opts:
        conf += f",join_timeout={opts['join']}"
    if "nnodes_all" in opts or "scale" in opts:
        conf += ",last_call_timeout=2"
    if "conf" in opts:
        conf += "," + opts["conf"]
    cmd = [TORCHRUN, "--nnodes", nnodes, "--nproc-per-node", str(n), "--rdzv-backend", "c10d",
           "--rdzv-endpoint", f"127.0.0.1:{PORT}", "--rdzv-id", f"probe58-{name[:20]}",
           "--local-addr", f"127.0.0.{i + 1}", "--rdzv-conf", conf, "--max-restarts", str(opts.get("restarts", 0))]
    if opts.get("tee"):
        cmd += ["--tee", "3"]
    if job_dir is not None:
        cmd += ["--log-dir", str(job_dir / node / "logs"), "--redirects", "3"]
    return [*cmd, str(HERE / "train.py")]


def descendants(pid):
    """Every process under pid (torchrun starts each worker in a session of its own, so the agent's
    process group alone would leave the workers running)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = pathlib.Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            kids = []
        out += [int(k) for k in kids]
        todo += [int(k) for k in kids]
    return out


def kill_node(pid):
    """SIGKILL a node's agent group and every worker under it at once: the node is gone."""
    victims = descendants(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for v in victims:
        try:
            os.kill(v, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run(out_root, j):
    name, nodes, fault, ranks, out, opts, _truth = j
    job_dir = out_root / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    write_truth(out_root, j)
    names = NAMES
    env = dict(os.environ, FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               STALL_DIR=str(job_dir), LOG_STYLE=opts.get("style", "tagged"), STEPS=str(opts.get("steps", 12)))
    if opts.get("info"):
        env["LOGLEVEL"] = "INFO"
    starts = {i: 0.0 for i, n in enumerate(nodes) if n is not None}
    if "late" in opts:
        i, s = opts["late"].split(":")
        starts[int(i)] = float(s)
    if "scale" in opts:
        nodes = [*nodes, 2]
        starts[len(nodes) - 1] = float(opts["scale"])
    shown = range(len(nodes)) if not out.startswith("one:") else [int(out.split(":")[1])]
    procs, files = {}, {}
    t0 = time.time()
    pending = dict(sorted(starts.items(), key=lambda kv: kv[1]))
    while True:
        for i, s in list(pending.items()):
            if time.time() - t0 >= s:
                node = names[i]
                logdir = job_dir if out == "logdir" else None
                if out == "logdir":
                    (job_dir / node).mkdir(exist_ok=True)
                console = job_dir / (f"{node}/console.log" if out == "logdir" else f"{node}.log")
                fh = open(console, "w")
                files[i] = fh
                procs[i] = subprocess.Popen(
                    ["timeout", "-s", "TERM", "170", *agent_cmd(i, nodes[i], nodes, opts, logdir, name, node)],
                    stdout=fh, stderr=subprocess.STDOUT, env=dict(env, NODE=node), cwd=job_dir,
                    start_new_session=True)
                del pending[i]
        for k in job_dir.glob("kill.*"):
            time.sleep(0.5)
            try:
                os.kill(int(k.read_text()), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                continue
            k.unlink()
        for k in job_dir.glob("nodekill.*"):
            rank = int(k.suffix[1:])
            bounds, acc = [], 0
            for n in nodes:
                bounds.append((acc, acc + (n or 0)))
                acc += n or 0
            node_i = next(i for i, (a, b) in enumerate(bounds) if a <= rank < b)
            time.sleep(0.5)
            kill_node(procs[node_i].pid)
            k.unlink()
        if not pending and all(p.poll() is not None for p in procs.values()):
            break
        if time.time() - t0 > 200:
            for p in procs.values():
                if p.poll() is None:
                    kill_node(p.pid)
        time.sleep(0.3)
    for fh in files.values():
        fh.close()
    rcs = {names[i]: p.returncode for i, p in procs.items()}
    for p in [*job_dir.glob("kill.*"), *job_dir.glob("nodekill.*")]:
        p.unlink()
    for i in range(len(nodes)):
        if i not in shown:
            for p in [job_dir / f"{names[i]}.log", job_dir / names[i]]:
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()

    def node_of(p):
        rel = p.relative_to(job_dir).parts[0]
        return next((n for n in names if rel.startswith(n)), None)

    rewrite(job_dir, out_root, node_of)
    print(f"{name}: rc={rcs} {time.time() - t0:.0f}s", flush=True)


def main():
    probelib.run_selected(JOBS, run)


if __name__ == "__main__":
    main()
