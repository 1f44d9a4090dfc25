"""Generator of the held-out probe51: real torchrun (gloo, CPU) jobs whose host refuses something.

Each job runs in a mount namespace of its own (`unshare -m`), so its tmpfs mounts (/dev/shm, the
checkpoint folder) never touch the machine's; memory limits are a memory cgroup of the job's own, other
limits are RLIMITs of the one process (train.py). Each case's truth is written into <out>/<case>/case.yaml
from the injected mechanism before the job runs; the console (and its --log-dir tree, and the kernel's
OOM lines where the case keeps them) are kept, with machine paths rewritten to /home/user/...
Usage: python run_probe51.py OUT [case-name-substring ...]   (one job at a time, each under `timeout`;
run as root with the Python that has torch 2.13, whose torchrun is used, or set TORCHRUN)
"""
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

HERE = pathlib.Path(__file__).resolve().parent
TORCHRUN = os.environ.get("TORCHRUN", str(pathlib.Path(sys.executable).with_name("torchrun")))
VENV = str(pathlib.Path(TORCHRUN).parent.parent)   # rewritten to /home/user/.venv in the kept logs
DLC, OOM, CRASH, RDZV, DLS = "dataloader_crash", "oom", "rank_crash", "rendezvous_failure", "dataloader_stall"
PORT = 29751

# name, SCEN, world size, culprit rank(s), output (console | tee | logdir), DETAIL, LOGSTYLE, extra env,
# job setup (mounts inside the job's namespace), category, accept, culprit_ranks
CASES = [
    ("shm-rank-small-devshm-r2-ws4", "shm-rank", 4, 2, "tee", 0, "plain",
     {"FEAT": "65536", "NW": "2", "SHM_SIZE": "2m"}, "", DLC, [DLC], [2]),
    ("shm-rank-small-devshm-r0-ws2", "shm-rank", 2, 0, "logdir", 0, "tag",
     {"FEAT": "65536", "NW": "3", "SHM_SIZE": "1m"}, "", DLC, [DLC], [0]),
    ("shm-job-64m-every-rank-ws3", "healthy", 3, -2, "console", 0, "plain",
     {"FEAT": "1048576", "NW": "2"}, "shm:8m", DLC, [DLC], "all"),
    ("shm-job-one-rank-big-samples-r3-ws4", "shm-bigbatch", 4, 3, "tee", 0, "plain",
     {"FEAT": "8192", "NW": "2"}, "shm:8m", DLC, [DLC], [3]),
    ("fd-ancdata-ulimit-n-r1-ws4", "fd-ancdata", 4, 1, "tee", 0, "plain",
     {"NW": "4", "NOFILE": "128", "BS": "8"}, "", DLC, [DLC], [1]),
    ("fd-ancdata-ulimit-n-r0-ws3-detail", "fd-ancdata", 3, 0, "logdir", 1, "plain",
     {"NW": "2", "NOFILE": "48", "BS": "8"}, "", DLC, [DLC], [0]),
    ("oom-killer-rank-r3-ws4-dmesg", "oom-rank", 4, 3, "tee", 0, "plain",
     {"NW": "2", "CG_MB": "900"}, "dmesg", OOM, [OOM], [3]),
    ("oom-killer-rank-r0-ws2", "oom-rank", 2, 0, "logdir", 0, "tag",
     {"NW": "2", "CG_MB": "900"}, "", OOM, [OOM], [0]),
    ("oom-killer-worker-r1-ws4-dmesg", "oom-worker", 4, 1, "logdir", 0, "plain",
     {"NW": "2", "CG_MB": "400"}, "dmesg", OOM, [OOM], [1]),
    ("oom-killer-worker-r2-ws3", "oom-worker", 3, 2, "console", 0, "plain",
     {"NW": "3", "CG_MB": "400"}, "", OOM, [OOM, DLC], [2]),
    ("ulimit-v-tensor-r2-ws4", "as-tensor", 4, 2, "tee", 0, "plain", {"NW": "2"}, "", OOM, [OOM], [2]),
    ("ulimit-v-memoryerror-r0-ws3", "as-memerror", 3, 0, "console", 0, "tag", {"NW": "2"}, "", OOM, [OOM], [0]),
    ("ulimit-v-worker-memoryerror-r1-ws2", "as-worker", 2, 1, "tee", 0, "plain", {"NW": "2"}, "",
     OOM, [OOM, DLC], [1]),
    ("segv-rank-faulthandler-r1-ws4", "segv-rank-fh", 4, 1, "tee", 0, "plain", {"NW": "2"}, "", CRASH, [CRASH], [1]),
    ("segv-rank-r5-ws8", "segv-rank", 8, 5, "console", 0, "plain", {"NW": "2"}, "", CRASH, [CRASH], [5]),
    ("segv-rank-faulthandler-r0-ws3-logdir", "segv-rank", 3, 0, "logdir", 0, "plain", {"NW": "2", "FH": "1"}, "",
     CRASH, [CRASH], [0]),
    ("segv-worker-r3-ws4", "segv-worker", 4, 3, "tee", 0, "plain", {"NW": "3"}, "", DLC, [DLC], [3]),
    ("abort-rank-r0-ws3", "abort", 3, 0, "console", 0, "plain", {"NW": "2"}, "", CRASH, [CRASH], [0]),
    ("abort-rank-r2-ws4-detail", "abort", 4, 2, "tee", 1, "tag", {"NW": "2"}, "", CRASH, [CRASH], [2]),
    ("disk-full-ckpt-r0-ws4", "disk-full", 4, 0, "tee", 0, "plain", {"NW": "2"}, "ckpt:1m", CRASH, [CRASH], [0]),
    ("disk-full-ckpt-r1-ws2-logdir", "disk-full", 2, 1, "logdir", 0, "tag", {"NW": "2"}, "ckpt:1m",
     CRASH, [CRASH], [1]),
    ("readonly-ckpt-r0-ws4", "readonly", 4, 0, "console", 0, "plain", {"NW": "2"}, "ckpt:ro", CRASH, [CRASH], [0]),
    ("readonly-ckpt-r3-ws4-detail", "readonly", 4, 3, "logdir", 1, "plain", {"NW": "2"}, "ckpt:ro",
     CRASH, [CRASH], [3]),
    ("ulimit-u-worker-spawn-r2-ws4", "nproc", 4, 2, "tee", 0, "plain", {"NW": "4"}, "",
     DLC, [DLC, CRASH], [2]),
    ("master-port-in-use-ws4", "healthy", 4, -1, "console", 0, "plain", {"NW": "2"}, "squat:master",
     RDZV, [RDZV], "unknown"),
    ("init-method-port-in-use-ws3", "healthy", 3, -1, "tee", 0, "plain",
     {"NW": "2", "INIT_METHOD": "tcp://127.0.0.1:29851", "PGTO": "20"}, "squat:29851", RDZV, [RDZV], "unknown"),
    ("time-limit-hang-dataset-r1-ws4", "timelimit-hang", 4, 1, "tee", 0, "plain",
     {"NW": "2", "STEPS": "200", "PGTO": "600"}, "timelimit:45", DLS, [DLS, "straggler"], [1]),
    # second batch (added after the first scoring; first scored with the fixed tree)
    ("fd-ancdata-main-ulimit-n-r2-ws4", "fd-ancdata", 4, 2, "tee", 0, "plain",
     {"NW": "4", "NOFILE": "256", "FD_KEYS": "96", "BS": "8"}, "", DLC, [DLC, DLS], [2]),
    ("shm-rank-file-system-strategy-r1-ws3", "shm-rank", 3, 1, "tee", 0, "plain",
     {"FEAT": "65536", "NW": "2", "SHM_SIZE": "2m", "SHARING": "file_system"}, "", DLC, [DLC], [1]),
    ("disk-full-eval-dump-r3-ws4", "metrics-full", 4, 3, "console", 0, "plain", {"NW": "2"}, "ckpt:256k",
     CRASH, [CRASH], [3]),
    ("time-limit-hang-main-thread-dataset-r2-ws3", "timelimit-hang", 3, 2, "tee", 0, "plain",
     {"NW": "0", "STEPS": "200", "PGTO": "600"}, "timelimit:40", DLS, [DLS, "straggler"], [2]),
    ("segv-worker-faulthandler-r0-ws4", "segv-worker", 4, 0, "tee", 0, "plain", {"NW": "2", "FH": "1"}, "",
     DLC, [DLC], [0]),
    ("abort-worker-r2-ws3-logdir", "abort-worker", 3, 2, "logdir", 0, "plain", {"NW": "2"}, "", DLC, [DLC], [2]),
    ("healthy-time-limit-progressing-ws3", "timelimit-progress", 3, -1, "console", 0, "plain",
     {"NW": "2", "STEPS": "500"}, "timelimit:30", "none", ["none"], []),
    ("healthy-too-many-workers-ws2", "healthy", 2, -1, "tee", 0, "plain",
     {"NW": "4", "SHARING": "file_system", "STEPS": "10"}, "", "none", ["none"], []),
    ("healthy-ckpt-fallback-ws4-detail", "healthy-ckpt-retry", 4, -1, "logdir", 1, "tag",
     {"NW": "2", "FH": "1"}, "ckpt:1m", "none", ["none"], []),
    ("healthy-no-destroy-ws3", "healthy-nodestroy", 3, -1, "console", 0, "plain",
     {"NW": "3", "STEPS": "12"}, "", "none", ["none"], []),
]

MEMCG = None
for line in open("/proc/self/cgroup"):
    parts = line.strip().split(":", 2)
    if parts[1] == "memory":
        MEMCG = "/sys/fs/cgroup/memory" + parts[2]
KERNEL_OOM = re.compile(r"invoked oom-killer|oom-kill:|Memory cgroup out of memory|Out of memory|oom_reaper")


def write_truth(case_dir, c):
    _name, scen, ws, bad, out, detail, _style, extra, setup, cat, accept, cul = c
    how = {"console": "console captured with 2>&1", "tee": "console with --tee 3",
           "logdir": "--log-dir tree with --redirects 3 and the console"}[out]
    debug = ", TORCH_DISTRIBUTED_DEBUG=DETAIL" if detail else ""
    who = {-1: "no rank", -2: "every rank (the job's /dev/shm)"}.get(bad, f"rank {bad}")
    limits = ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
    if cul == "all":
        cul = list(range(ws))
    text = (f"# real run (session 26, h26-oslimit, probe51): torch 2.13 CPU, gloo, torchrun --nproc-per-node "
            f"{ws}, {how}{debug}; generator tools/probe51/run_probe51.py scenario {scen} ({limits}"
            f"{'; job setup ' + setup if setup else ''}), the fault is injected on {who}; truth written before "
            f"hanglens ran; machine paths rewritten to /home/user/...\n"
            + ("# the generator plays the scheduler at the time limit: SIGUSR1 to the ranks (faulthandler dumps), "
               "then the one line it writes itself, slurmstepd's `CANCELLED AT <time> DUE TO TIME LIMIT` "
               "(failure-signatures.md section 16), then SIGTERM to torchrun and SIGKILL after 15 s\n"
               if "timelimit" in setup else "")
            + f"category: {cat}\naccept: [{', '.join(accept)}]\nculprit_ranks: {cul}\n")
    (case_dir / "case.yaml").write_text(text)


def rewrite(case_dir, out_root):
    subs = [(str(case_dir), "/home/user/run"), (str(HERE), "/home/user/train"),
            (VENV, "/home/user/.venv"), (str(out_root.parent), "/home/user"),
            (str(pathlib.Path.home()) + "/", "/home/user/")]
    if MEMCG:
        subs.append((MEMCG[len("/sys/fs/cgroup/memory"):], "/kubepods/pod-train"))
    for p in case_dir.rglob("*"):
        if p.is_file() and p.name != "case.yaml":
            t = p.read_text(errors="replace")
            for a, b in subs:
                t = t.replace(a, b)
            p.write_text(t)


def squat(port):
    """A stale process that holds the port (listening, never answering)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    return s


def children(pid):
    try:
        return [int(x) for x in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def run(out_root, c):
    name, scen, ws, bad, out, detail, style, extra, setup, *_ = c
    case_dir = out_root / name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    write_truth(case_dir, c)
    env = dict(os.environ, SCEN=scen, BAD=str(bad), LOGSTYLE=style, PYTHONUNBUFFERED="1", **extra)
    env.setdefault("PGTO", "30")
    env["CKPT"] = str(case_dir / "ckpt")
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    port = PORT
    sh = []
    held = None
    cg = None
    for item in filter(None, setup.split(",")):
        kind, _, arg = item.partition(":")
        if kind == "shm":
            sh.append(f"mount -t tmpfs -o size={arg} tmpfs /dev/shm")
        elif kind == "ckpt":
            (case_dir / "ckpt").mkdir()
            opt = "ro" if arg == "ro" else f"size={arg}"
            sh.append(f"mount -t tmpfs -o {opt} tmpfs {case_dir / 'ckpt'}")
        elif kind == "squat":
            held = squat(port if arg == "master" else int(arg))
    if "CG_MB" in extra:
        cg = pathlib.Path(MEMCG) / f"oslimit_{name[:20]}"
        cg.mkdir(exist_ok=True)
        (cg / "memory.limit_in_bytes").write_text(str(int(extra["CG_MB"]) << 20))
        env["OSL_CG"] = str(cg)
    dmesg_before = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.count("\n")
    cmd = [TORCHRUN, "--nproc-per-node", str(ws), "--master-port", str(port)]
    if out == "tee":
        cmd += ["--tee", "3"]
    if out == "logdir":
        cmd += ["--log-dir", str(case_dir / "logs"), "--redirects", "3"]
    cmd += [str(HERE / "train.py")]
    script = " && ".join(sh + ['exec "$@"'])
    full = ["unshare", "-m", "sh", "-c", script, "sh", "timeout", "-s", "TERM", "150", *cmd]
    limit = [int(x.partition(":")[2]) for x in setup.split(",") if x.startswith("timelimit")]
    with open(case_dir / "console.log", "w") as fh:
        p = subprocess.Popen(full, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=case_dir,
                             start_new_session=True)
        if limit:
            # the scheduler's wall-clock limit: USR1 to the ranks (`--signal=USR1@...`), its CANCELLED
            # line, SIGTERM to the launcher, SIGKILL to what is left after the grace period
            try:
                p.wait(limit[0])
            except subprocess.TimeoutExpired:
                agent = children(p.pid)
                ranks = [r for a in agent for r in children(a)]
                for r in ranks:
                    os.kill(r, signal.SIGUSR1)
                time.sleep(3)
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
                fh.write(f"slurmstepd: error: *** JOB 5151051 ON node-a07 CANCELLED AT {stamp} "
                         f"DUE TO TIME LIMIT ***\n")
                fh.flush()
                for a in agent:
                    os.kill(a, signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
    if held is not None:
        held.close()
    if "dmesg" in setup:
        lines = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()[dmesg_before:]
        (case_dir / "dmesg.txt").write_text("".join(x + "\n" for x in lines if KERNEL_OOM.search(x)))
    if cg is not None:
        for _ in range(20):
            try:
                cg.rmdir()
                break
            except OSError:
                time.sleep(0.5)
    for junk in ("ckpt", "ckpt-fallback"):
        shutil.rmtree(case_dir / junk, ignore_errors=True)
    rewrite(case_dir, out_root)
    print(f"{name}: rc={rc}", flush=True)


def main():
    probelib.run_selected(CASES, run)


if __name__ == "__main__":
    main()
