"""Generate benchmark corpora that look like real chatty logs, each ending in a failure with a known culprit.

Every line is written here from the templates of ../shared/reference/log-formats.md with made-up values
(hosts `gpu-node<NN>`, pids 40000+, invented pointers and hashes); NCCL 2.21-2.22 INFO envelope
`host:pid:tid [dev] NCCL INFO ...` (§4.1, §4.3), torch 2.4-2.9 c10 envelope `[rankN]:[I<MMDD> hh:mm:ss.<9>
file:line]` (§9.1), torchtitan-style Python logging step lines, Python `UserWarning` pairs and tqdm bars
that redraw with `\\r`. Shapes:

- `logdir`  (a): torchrun `--log_dir` tree `<out>/node<NN>/bench_<id>/attempt_0/<local_rank>/{stdout,stderr}.log`,
  8 local ranks per node. stdout: NCCL INFO init blocks for several communicators (world, TP, DP and
  pipeline pairs) and P2P channel/ring/tree chatter; stderr: ProcessGroupNCCL info lines, a step line
  every few lines, warnings, tqdm bars. Ends in a hang: every rank but the culprit times out in the
  watchdog at SeqNum K; the culprit's last collective is K-1 (category `control_flow_divergence`
  or `straggler`, culprit named).
- `console` (b): one torchrun `--tee` console, 64 ranks' lines interleaved, every line `[rankN]:`; ends
  in an illegal memory access on the culprit rank (others then time out).
- `many`    (c): the `logdir` shape with many ranks of a few KB each (e.g. 16,384 x 16 KB).
- `big`     (d): one console file of the `console` shape, gigabytes long (`--mb 2048`).

    python benchmarks/make_corpus.py --shape logdir --ranks 32 --mb 8 --out /tmp/hl-a
    python benchmarks/make_corpus.py --shape console --ranks 64 --mb 256 --out /tmp/hl-b
    python benchmarks/make_corpus.py --shape many --ranks 16384 --mb 0.016 --out /tmp/hl-c
    python benchmarks/make_corpus.py --shape big --ranks 64 --mb 2048 --out /tmp/hl-d

`<out>.expected.json` (next to `<out>`, so hanglens does not read it) holds the verdict the benchmark checks (category set and culprit ranks).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

NPROC = 8
K = 7219  # SeqNum of the collective the culprit never reached

# -- NCCL INFO (stdout of every rank) --------------------------------------------------------------
NCCL_BANNER = (
    "{h}:{pid}:{pid} [{d}] NCCL INFO Bootstrap : Using ib0:10.40.{n}.{d3}<0>",
    "{h}:{pid}:{pid} [{d}] NCCL INFO cudaDriverVersion 12040",
    "{h}:{pid}:{pid} [{d}] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "{h}:{pid}:{t1} [{d}] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared "
    "object file: No such file or directory : when loading libnccl-net.so",
    "{h}:{pid}:{t1} [{d}] NCCL INFO NET/Plugin: Using internal network plugin.",
    "{h}:{pid}:{t1} [{d}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_4:1/IB "
    "[3]mlx5_5:1/IB ; OOB ib0:10.40.{n}.{d3}<0>",
    "{h}:{pid}:{t1} [{d}] NCCL INFO Using non-device net plugin version 0",
    "{h}:{pid}:{t1} [{d}] NCCL INFO Using network IB",
)
NCCL_INIT = (
    "{h}:{pid}:{t1} [{d}] NCCL INFO ncclCommInitRank comm 0x{ptr:x} rank {cr} nranks {cn} cudaDev {d} "
    "nvmlDev {d} busId {bus}000 commId 0x{cid:016x} - Init START",
    "{h}:{pid}:{t1} [{d}] NCCL INFO Setting affinity for GPU {d} to ffff,ffffffff,00000000,00000000",
    "{h}:{pid}:{t1} [{d}] NCCL INFO NVLS multicast support is not available on dev {d}",
    "{h}:{pid}:{t1} [{d}] NCCL INFO comm 0x{ptr:x} rank {cr} nRanks {cn} nNodes {nn} localRanks {lr} "
    "localRank {d} MNNVL 0",
    "{h}:{pid}:{t1} [{d}] NCCL INFO Trees [0] {nx}/-1/-1->{cr}->{pv} [1] {nx}/-1/-1->{cr}->{pv}",
    "{h}:{pid}:{t1} [{d}] NCCL INFO P2P Chunksize set to 524288",
)
NCCL_CHANNEL = (
    "{h}:{pid}:{t1} [{d}] NCCL INFO Channel {c:02d}/0 : {cr}[{d}] -> {nx}[{dn}] via P2P/CUMEM/read",
    "{h}:{pid}:{t2} [{d}] NCCL INFO Channel {c:02d}/1 : {cr}[{d}] -> {nx}[{dn}] [send] via NET/IB/{c4}/GDRDMA",
    "{h}:{pid}:{t2} [{d}] NCCL INFO Channel {c:02d}/1 : {pv}[{dn}] -> {cr}[{d}] [receive] via NET/IB/{c4}/GDRDMA",
    "{h}:{pid}:{t1} [{d}] NCCL INFO Channel {c:02d}/24 :    0   1   2   3   4   5   6   7",
)
NCCL_INIT_END = (
    "{h}:{pid}:{t1} [{d}] NCCL INFO Connected all rings",
    "{h}:{pid}:{t1} [{d}] NCCL INFO Connected all trees",
    "{h}:{pid}:{t1} [{d}] NCCL INFO threadThresholds 8/8/64 | {tt}/8/64 | 512 | 512",
    "{h}:{pid}:{t1} [{d}] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, "
    "32 p2p channels per peer",
    "{h}:{pid}:{t1} [{d}] NCCL INFO TUNER/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared "
    "object file: No such file or directory : when loading libnccl-tuner.so",
    "{h}:{pid}:{t1} [{d}] NCCL INFO ncclCommInitRank comm 0x{ptr:x} rank {cr} nranks {cn} cudaDev {d} "
    "nvmlDev {d} busId {bus}000 commId 0x{cid:016x} - Init COMPLETE",
)
# -- stderr of every rank: c10 info, steps, warnings, tqdm ------------------------------------------
PG_INFO = (
    "[rank{r}]:[I{md} {hh:02d}:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:{ln}] [PG ID {pg} PG GUID {pg}"
    "({desc}) Rank {pr}] ProcessGroupNCCL initialization options: size: {ps}, global rank: {r}, "
    "TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, PG Name: {pg}",
    "[rank{r}]:[I{md} {hh:02d}:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:{ln}] [PG ID {pg} PG GUID {pg}"
    "({desc}) Rank {pr}] ProcessGroupNCCL created ncclComm_ 0x{ptr:x} on CUDA device: {d}",
    "[rank{r}]:[I{md} {hh:02d}:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:{ln}] [PG ID {pg} PG GUID {pg}"
    "({desc}) Rank {pr}] ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: "
    "3, TORCH_NCCL_DUMP_ON_TIMEOUT: 1, TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC: 60000, TORCH_NCCL_DESYNC_DEBUG: 0",
)
STEP = ("[rank{r}]:[titan] 2025-03-01 {hh:02d}:{mm:02d}:{ss:02d},{ms:03d} - root - INFO - step: {step:6d}  "
        "loss: {loss:.4f}  memory: 61.20GiB(77.41%)  tps: {tps}  tflops: 402.17  mfu: 40.66%")
WARN = (
    "[rank{r}]:/home/user/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:{ln}: UserWarning: "
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.",
    "[rank{r}]:  warnings.warn(",
)
TQDM = "[rank{r}]:\r eval:  {pct:3d}%|{bar}| {i}/{tot} [00:{s2:02d}<00:{s3:02d}, {rate:.2f}it/s]"
# -- the failures ----------------------------------------------------------------------------------
WATCHDOG = ("[rank{r}]:[E{md} {hh:02d}:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:632] [Rank {r}] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={k}, OpType=ALLREDUCE, "
            "NumelIn=8388608, NumelOut=8388608, Timeout(ms)=600000) ran for 600{extra:03d} milliseconds "
            "before timing out.")
PG_STATUS = ("[rank{r}]:[E{md} {hh:02d}:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:1664] "
             "[PG ID 0 PG GUID 0(default_pg) Rank {r}] Exception (either an error or timeout) detected by "
             "watchdog at work: {k}, last enqueued NCCL work: {k}, last completed NCCL work: {km1}.")
IMA = (
    "[rank{r}]:Traceback (most recent call last):",
    "[rank{r}]:  File \"/home/user/train/train.py\", line 412, in <module>",
    "[rank{r}]:    loss.backward()",
    "[rank{r}]:  File \"/home/user/venv/lib/python3.11/site-packages/torch/_tensor.py\", line 581, in backward",
    "[rank{r}]:    torch.autograd.backward(",
    "[rank{r}]:RuntimeError: CUDA error: an illegal memory access was encountered",
    "[rank{r}]:CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.",
    "[rank{r}]:For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "[rank{r}]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "[rank{r}]:",
)
COMMS = (("world", 0), ("tp", 1), ("dp", 2), ("pp", 3))


class Rank:
    """One rank's identity and line makers (values are invented here)."""

    def __init__(self, rank: int, world: int, rng: random.Random) -> None:
        self.r, self.world, self.rng = rank, world, rng
        self.node, self.d = divmod(rank, NPROC)
        self.h = f"gpu-node{self.node:02d}"
        self.pid = 40000 + rank * 7
        self.step = 0
        self.clock = 3600 * 9 + 17 * 60  # seconds into the day
        self.base = dict(h=self.h, pid=self.pid, d=self.d, n=self.node % 250, d3=self.d + 3, r=rank,
                         bus=0x18 + 0x10 * self.d, dn=(self.d + 1) % NPROC, nn=max(1, world // NPROC),
                         lr=min(NPROC, world))

    def _comm(self, which: int) -> dict[str, int]:
        size = self.world if which == 0 else (NPROC if which == 1 else max(1, self.world // NPROC))
        if which == 3:
            size = 2
        cr = self.r % size
        return dict(cr=cr, cn=size, nx=(cr + 1) % size, pv=(cr - 1) % size,
                    ptr=0x55D0_0000 + 0x1000 * which + self.r, cid=0x5D1E2F3A4B5C6D7E ^ (which * 0x1111 + size))

    def init_block(self, which: int) -> list[str]:
        rng = self.rng
        v = dict(self.base, t1=self.pid + 3 + which, t2=self.pid + 40 + which, tt=rng.choice((64, 128)),
                 **self._comm(which))
        out = [t.format(**v) for t in NCCL_INIT]
        for c in range(rng.randrange(8, 25)):
            out.append(NCCL_CHANNEL[rng.randrange(len(NCCL_CHANNEL))].format(c=c, c4=c % 4, **v))
        out.extend(t.format(**v) for t in NCCL_INIT_END)
        return out

    def chatter(self) -> str:
        """One P2P channel line of a pipeline send/recv set-up (NCCL prints these all through training)."""
        rng = self.rng
        v = dict(self.base, t1=self.pid + 3, t2=self.pid + 40 + rng.randrange(4), **self._comm(3))
        return NCCL_CHANNEL[rng.randrange(3)].format(c=rng.randrange(32), c4=rng.randrange(4), **v)

    def _time(self) -> dict[str, int]:
        self.clock += self.rng.randrange(0, 3)
        c = self.clock
        return dict(md=301, hh=(c // 3600) % 24, mm=(c // 60) % 60, ss=c % 60, ns=self.rng.randrange(10**9))

    def pg_info(self) -> str:
        desc, pg = COMMS[self.rng.randrange(len(COMMS))]
        return PG_INFO[self.rng.randrange(len(PG_INFO))].format(
            r=self.r, pg=pg, desc=desc if pg else "default_pg", pr=self.r % NPROC, ps=NPROC, d=self.d,
            ln=self.rng.choice((925, 1021, 2384)), ptr=0x7F00_0000 + self.r, **self._time())

    def step_line(self) -> str:
        self.step += 1
        t = self._time()
        return STEP.format(r=self.r, hh=t["hh"], mm=t["mm"], ss=t["ss"], ms=self.rng.randrange(1000),
                           step=self.step, loss=2.0 + self.rng.random(), tps=self.rng.randrange(3000, 4000))

    def warning(self) -> list[str]:
        return [w.format(r=self.r, ln=self.rng.choice((61, 464, 1399))) for w in WARN]

    def tqdm(self) -> str:
        tot = 50
        parts = []
        for i in range(0, tot + 1, 10):
            pct = 2 * i
            bar = "█" * (pct // 10) + " " * (10 - pct // 10)
            parts.append(TQDM.format(r=self.r, pct=pct, bar=bar, i=i, tot=tot, s2=i // 5, s3=(tot - i) // 5,
                                     rate=4.5 + self.rng.random()))
        return "".join(parts)

    def hang_end(self, culprit: int) -> list[str]:
        if self.r == culprit:
            return []
        t = self._time()
        return [WATCHDOG.format(r=self.r, k=K, extra=self.rng.randrange(100), **t),
                PG_STATUS.format(r=self.r, k=K, km1=K - 1, **self._time())]

    def ima_end(self) -> list[str]:
        return [line.format(r=self.r) for line in IMA]


def _stream(rank: Rank, budget: int, stdout: bool) -> Iterator[str]:
    """Lines of one rank's stdout (NCCL) or stderr (everything else), about `budget` bytes."""
    rng = rank.rng
    if stdout:
        lines = [t.format(t1=rank.pid + 3, **rank.base) for t in NCCL_BANNER]
        for which in range(len(COMMS) if budget >= 1 << 16 else 1):  # small files: the world comm only
            lines += rank.init_block(which)
    else:
        lines = [rank.pg_info() for _ in range(4)]
    yield from lines
    # A fixed allowance for the head (not its exact size, which differs by rank): every rank then writes
    # the same number of lines, so all ranks reach the same step.
    budget -= 150 * (6 + 30 * (len(COMMS) if budget >= 1 << 16 else 1)) if stdout else 4 * 330
    # Every rank draws the same sequence of line families (and so reaches the same step); values differ.
    fam = random.Random(1 if stdout else 2)
    for _ in range(max(0, budget) // (150 if stdout else 170)):
        if stdout:
            x = fam.random()
            line = rank.chatter() if x < 0.998 else "\n".join(rank.init_block(3))
        else:
            x = fam.random()
            if x < 0.45:
                line = rank.step_line()
            elif x < 0.80:
                line = rank.pg_info()
            elif x < 0.95:
                line = "\n".join(rank.warning())
            else:
                line = rank.tqdm()
        yield line


def make_logdir(out: Path, ranks: int, mb: float, culprit: int, seed: int) -> None:
    rng = random.Random(seed)
    for r in range(ranks):
        rank = Rank(r, ranks, rng)
        leaf = out / f"node{rank.node:02d}" / f"bench_{rank.node:02d}x7k2q9" / "attempt_0" / str(rank.d)
        leaf.mkdir(parents=True, exist_ok=True)
        budget = int(mb * (1 << 20))
        with open(leaf / "stdout.log", "w", encoding="utf-8") as fh:
            for line in _stream(rank, budget * 6 // 10, True):
                fh.write(line + "\n")
        with open(leaf / "stderr.log", "w", encoding="utf-8") as fh:
            for line in _stream(rank, budget * 4 // 10, False):
                fh.write(line + "\n")
            for line in rank.hang_end(culprit):
                fh.write(line + "\n")


def make_console(path: Path, ranks: int, mb: float, culprit: int, seed: int) -> None:
    """One torchrun `--tee` console: all ranks interleaved, every line `[rankN]:`."""
    rng = random.Random(seed)
    world = [Rank(r, ranks, rng) for r in range(ranks)]
    budget = int(mb * (1 << 20))
    per = budget // ranks
    streams = [(_stream(rk, per // 2, True), _stream(rk, per // 2, False)) for rk in world]
    path.parent.mkdir(parents=True, exist_ok=True)
    live = [it for pair in streams for it in pair]
    owner = [rk for rk in world for _ in range(2)]
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as fh:
        buf: list[str] = []
        while live:
            i = rng.randrange(len(live))
            rk = owner[i]
            for _ in range(rng.randrange(1, 6)):
                line = next(live[i], None)
                if line is None:
                    live.pop(i)
                    owner.pop(i)
                    break
                for part in line.split("\n"):
                    buf.append(part if part.startswith("[rank") else f"[rank{rk.r}]:{part}")
            if len(buf) > 4096:
                fh.write("\n".join(buf) + "\n")
                buf = []
        buf += world[culprit].ima_end()
        for rk in world:
            buf += rk.hang_end(culprit)
        fh.write("\n".join(buf) + "\n")


def expected_path(out: Path) -> Path:
    return out.parent / (out.name + ".expected.json")


def make_corpus(out: Path, shape: str, ranks: int, mb: float, culprit: int | None = None,
                seed: int = 1) -> dict[str, object]:
    """Write one corpus under `out`; return (and write to `out/expected.json`) the verdict to expect."""
    culprit = ranks // 2 + 1 if culprit is None else culprit
    out.mkdir(parents=True, exist_ok=True)
    if shape in ("logdir", "many"):
        make_logdir(out, ranks, mb, culprit, seed)
        expected: dict[str, object] = {"categories": ["control_flow_divergence", "straggler"],
                                       "culprits": [culprit]}
    elif shape in ("console", "big"):
        make_console(out / "console.log", ranks, mb, culprit, seed)
        expected = {"categories": ["illegal_memory_access"], "culprits": [culprit]}
    else:
        raise SystemExit(f"unknown shape {shape}")
    expected.update(shape=shape, ranks=ranks, mb=mb)
    expected_path(out).write_text(json.dumps(expected, indent=1) + "\n", encoding="utf-8")
    return expected


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=("logdir", "console", "many", "big"), default="logdir")
    ap.add_argument("--ranks", type=int, default=32)
    ap.add_argument("--mb", type=float, default=8.0, help="MB per rank (logdir, many) or of the file (console, big)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    make_corpus(args.out, args.shape, args.ranks, args.mb, seed=args.seed)
    print(f"wrote {args.shape} {args.ranks} ranks x {args.mb} MB under {args.out}")


if __name__ == "__main__":
    main()
