# ruff: noqa: E501
# (a probe generator kept for provenance: one long case table)
"""probe57 runs: real PyTorch Lightning DDP jobs (train.py; lightning 2.6.6, torch 2.13.0+cpu, gloo, CPU), one
injected fault each, started either as one `python train.py` (Lightning's own launcher spawns the other
ranks: `lit`) or under torchrun (`tee` = --tee 3 console, `logdir` = --log-dir tree + the agent's console,
`console` = plain console with the ranks' output interleaved unprefixed).

Each case folder gets console.log (and logs/ for logdir) and case.yaml: the truth, written from the injected
fault before the job runs. Some cases are also cut the way users paste (`paste`: the console as a terminal
shows it -- carriage-return redraws collapsed to their last state -- last N lines; `rank`: one rank's
--log-dir stdout+stderr under a one-line summary); a cut keeps its culprit only where its lines still show
that rank, else `unknown`. `kill9` ranks are SIGKILLed from here once they write their pid. Machine paths are
rewritten to /home/user/... afterwards.
Usage: python gen.py OUT [job-name-substring ...]   (one job at a time, each under `timeout`; run with a
Python that has torch 2.13 and lightning 2.6.6)
"""

import os
import pathlib
import re
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
PY = sys.executable
CFD, CM, CRASH, STRAG = "control_flow_divergence", "collective_mismatch", "rank_crash", "straggler"
DLC, DDPU, OOM = "dataloader_crash", "ddp_unused_parameters", "oom"
DIV = [CFD, CM]
UNK = "unknown"
TIMEOUTS_ONLY = [CFD, CM, CRASH, STRAG, UNK]
# What a cut still shows, where it is less than the injected fault (written before hanglens ran):
# cut -> (accept, culprit, why). Other cuts keep the job's truth when each culprit rank has a line of its own.
OVERRIDES = {
    "synclog-r3-ws4-tee--paste-60": (TIMEOUTS_ONLY, UNK, "the tail is torchrun's failure table: every rank exited 1 after gloo timeouts; its 'first observed failure' is one second earlier, a tie-break, not a cause"),
    "synclog-r3-ws4-tee--grep-0": (TIMEOUTS_ONLY, UNK, "the error lines are four alike gloo timeouts and the failure table: nothing says which rank issued the extra all_reduce"),
    "r0coll-r0-ws3-tee--paste-50": (TIMEOUTS_ONLY, UNK, "the tail is torchrun's failure table: every rank exited 1; nothing says which one left the collective order"),
    "kill9-r4-ws6-tee--paste-40": ([CRASH, OOM], [4], "the failure table names rank 4 killed by SIGKILL six seconds before the others exited"),
    "ckptpickle-r0-ws4-logdir--rank-2": ([CRASH, CFD, UNK], UNK, "rank 2's own log ends in 'Connection closed by peer': a victim; the crashed rank is not in it"),
    "synclog-r1-r5-ws8-logdir--rank-1": ([CFD, CM, STRAG, UNK], UNK, "rank 1's own log: it timed out in its extra sync_dist all_reduce, which one log alone cannot tell from a peer's wait"),
}
W2 = {"WORKERS": "2"}

# name, FAULT, world size, fault ranks, output (lit | tee | logdir | console), extra env, category, accept, cuts
JOBS = [
    ("synclog-r1-lit2", "synclog", 2, [1], "lit", {}, CFD, DIV, []),
    ("synclog-r3-ws4-tee", "synclog", 4, [3], "tee", {}, CFD, DIV, [("paste", 60), ("grep", 0)]),
    ("synclog-r1-r5-ws8-logdir", "synclog", 8, [1, 5], "logdir", {}, CFD, DIV, [("rank", 1)]),
    ("valend-r2-lit3", "valend", 3, [2], "lit", {"BAR": "rich"}, CFD, DIV, []),
    ("valend-r0-ws4-logdir", "valend", 4, [0], "logdir", {}, CFD, DIV, []),
    ("r0coll-r0-lit2", "r0coll", 2, [0], "lit", {}, CFD, DIV, []),
    ("r0coll-r0-ws3-tee", "r0coll", 3, [0], "tee", {}, CFD, DIV, [("paste", 50)]),
    ("unevenval-r1-lit4", "unevenval", 4, [1], "lit", {}, CFD, DIV, []),
    ("unevenval-r2-ws4-tee", "unevenval", 4, [2], "tee", {}, CFD, DIV, []),
    ("localstop-r1-lit2", "localstop", 2, [1], "lit", {"EPOCHS": "6"}, CFD, DIV, []),
    ("localstop-r2-ws4-logdir", "localstop", 4, [2], "logdir", {"EPOCHS": "6"}, CFD, DIV, []),
    ("ckptpickle-r0-lit3", "ckptpickle", 3, [0], "lit", {}, CRASH, [CRASH], []),
    ("ckptpickle-r0-ws4-logdir", "ckptpickle", 4, [0], "logdir", {}, CRASH, [CRASH], [("rank", 2)]),
    ("stepnone-r2-ws3-tee", "stepnone", 3, [2], "tee", {}, CRASH, [CRASH, DDPU, CFD], []),
    ("stepnone-r0-ws2-console", "stepnone", 2, [0], "console", {}, CRASH, [CRASH, DDPU, CFD], []),
    ("setupexc-r1-lit2", "setupexc", 2, [1], "lit", {}, CRASH, [CRASH], []),
    ("setupexc-r3-r7-ws8-tee", "setupexc", 8, [3, 7], "tee", {}, CRASH, [CRASH], []),
    ("prepdata-r0-ws4-tee", "prepdata", 4, [0], "tee", {}, CRASH, [CRASH], []),
    ("dlworker-r0-lit2", "dlworker", 2, [0], "lit", W2, DLC, [DLC], []),
    ("dlworker-r2-ws4-logdir", "dlworker", 4, [2], "logdir", W2, DLC, [DLC], []),
    ("kill9-r1-lit3", "kill9", 3, [1], "lit", {}, CRASH, [CRASH, OOM], []),
    ("kill9-r0-lit2", "kill9", 2, [0], "lit", {}, CRASH, [CRASH, OOM], []),
    ("kill9-r4-ws6-tee", "kill9", 6, [4], "tee", {}, CRASH, [CRASH, OOM], [("paste", 40)]),
    ("stall-r1-ws4-tee", "stall", 4, [1], "tee", {}, STRAG, [STRAG, CFD], []),
    ("stall-r2-lit3", "stall", 3, [2], "lit", {}, STRAG, [STRAG, CFD], []),
    ("healthy-lit2-warn", "healthy", 2, [], "lit", {"WARN": "1"}, "none", ["none"], []),
    ("healthy-earlystop-lit3", "earlystop", 3, [], "lit", {"EPOCHS": "6"}, "none", ["none"], []),
    ("healthy-ws4-tee-warn", "healthy", 4, [], "tee", {"WARN": "1", "CKPT": "1"}, "none", ["none"], []),
    ("healthy-ws2-logdir-rich", "healthy", 2, [], "logdir", {"BAR": "rich"}, "none", ["none"], []),
]


def header(name, fault, ws, ranks, out, extra):
    launch = f"python train.py (Lightning's launcher, devices={ws})" if out == "lit" else f"torchrun --nproc-per-node {ws}, output {out}"
    return (f"# real run (session 28, h28-light, probe57): lightning 2.6.6, torch 2.13.0+cpu, gloo, {launch}"
            f"{', env ' + ' '.join(f'{k}={v}' for k, v in extra.items()) if extra else ''}; tools/probe57/gen.py job {name}, "
            f"FAULT={fault} on ranks {ranks or 'none'}; written before the job ran\n")


def write_truth(case_dir, head, cat, accept, culprit, why=""):
    (case_dir / "case.yaml").write_text(
        head + (f"# {why}\n" if why else "")
        + f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {culprit}\n")


def rewrite(case_dir, subs):
    for p in case_dir.rglob("*"):
        if p.is_file() and p.name != "case.yaml":
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


def terminal_view(text):
    """The console as a terminal shows it: each carriage-return redraw keeps only its last state."""
    out = []
    for line in text.split("\n"):
        parts = [p for p in line.split("\r") if p.strip()]
        out.append(re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", parts[-1] if parts else ""))
    return out


def cut(out_root, j, style, arg, head):
    name, _fault, _ws, ranks, _out, _extra, cat, accept, _cuts = j
    src = out_root / name
    dst = out_root / f"{name}--{style}-{arg}"
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir()
    if style == "grep":   # grep -n -i for error words over the console as the terminal shows it
        pat = re.compile(r"error|exception|fail|timed out|killed|signal", re.I)
        lines = terminal_view((src / "console.log").read_text(errors="replace"))
        body = "".join(f"{i}:{t}\n" for i, t in enumerate(lines, 1) if pat.search(t))
    elif style == "paste":
        lines = terminal_view((src / "console.log").read_text(errors="replace"))[-arg:]
        body = "\n".join(lines) + "\n"
    else:   # rank: one rank's --log-dir files
        files = sorted(p for p in (src / "logs").rglob("*") if p.is_file() and p.parent.name == str(arg))
        body = f"training hangs then dies, this is rank {arg}'s log:\n\n"
        for p in files:
            body += "\n".join(terminal_view(p.read_text(errors="replace"))) + "\n"
    (dst / "issue.txt").write_text(body)
    if dst.name in OVERRIDES:
        acc, culprit, why = OVERRIDES[dst.name]
        write_truth(dst, head + f"# excerpt: gen.py cut {style} {arg} of {name}\n", cat, acc, culprit, why)
        return
    shown = [r for r in ranks if re.search(rf"\[(?:rank|default){r}\]:|GLOBAL_RANK: {r},|rank {r}'s log|local_rank: {r} ", body)]
    culprit = ranks if ranks and shown == ranks else ([] if not ranks else "unknown")
    why = "" if culprit == ranks else "the excerpt does not show every culprit rank by its own lines"
    write_truth(dst, head + f"# excerpt: gen.py cut {style} {arg} of {name}\n", cat, accept if culprit == ranks else sorted({*accept, "unknown"}), culprit, why)


def run(out_root, j):
    name, fault, ws, ranks, out, extra, cat, accept, cuts = j
    case_dir = out_root / name
    work = out_root.parent / "work" / name
    for d in (case_dir, work):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    head = header(name, fault, ws, ranks, out, extra)
    write_truth(case_dir, head, cat, accept, ranks)
    env = dict(os.environ, FAULT=fault, FAULT_RANKS=",".join(map(str, ranks)), PYTHONUNBUFFERED="1",
               JOB_DIR=str(work), **extra)
    env.setdefault("PG_TIMEOUT", "30")
    if out == "lit":
        env["DEVICES"] = str(ws)
        cmd = [PY, str(HERE / "train.py")]
    else:
        cmd = [PY, "-m", "torch.distributed.run", "--nproc-per-node", str(ws), "--master-port", "29957"]
        if out == "tee":
            cmd += ["--tee", "3"]
        if out == "logdir":
            cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
        cmd += [str(HERE / "train.py")]
    # Lightning's launcher leaves its child ranks behind when the parent is killed: the job's process group is
    # ended after it
    rc = probelib.run_with_kill_files(cmd, case_dir, env, cwd=work, timeout_signal="KILL", own_session=True)
    venv = str(pathlib.Path(PY).parent.parent)
    subs = [(str(work), "/home/user/regress"), (str(HERE), "/home/user/regress"), (venv, "/home/user/.venv"),
            (probelib.torch_prefix(PY), "/home/user/.venv"), (sys.base_prefix, "/usr"), (str(out_root), "/home/user/runs")]
    rewrite(case_dir, subs)
    print(f"{name}: rc={rc}", flush=True)
    for style, arg in cuts:
        cut(out_root, j, style, arg, head)


def main():
    if "--cuts-only" in sys.argv:
        sys.argv.remove("--cuts-only")

        def cuts(out_root, j):
            for style, arg in j[8]:
                cut(out_root, j, style, arg, header(*j[:4], j[4], j[5]))
        probelib.run_selected(JOBS, cuts)
    else:
        probelib.run_selected(JOBS, run)


if __name__ == "__main__":
    main()
