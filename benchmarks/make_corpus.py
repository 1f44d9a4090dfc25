"""Generate a synthetic multi-node torchrun log tree with one injected collective hang (ingest benchmark).

Layout: `<out>/node<NN>/bench_<suffix>/attempt_0/<local_rank>/{stdout.log,stderr.log}` (torchrun
`--log_dir` with `-r 3`, reference §3.1), 8 local ranks per node. stdout carries NCCL INFO noise
(NCCL 2.18+ envelope `host:pid:tid [dev] NCCL INFO ...`, reference §4.1/§4.3); stderr carries step
lines through a Python logging format and c10 INFO lines (`[rankN]:[I<M><DD> hh:mm:ss.<9> file:line]`,
torch 2.4-2.9, reference §9.1). At the end every rank but the culprit times out in the watchdog at
SeqNum K (torch 2.4-2.9 template, reference §1.4); the culprit's last collective is K-1.

    python benchmarks/make_corpus.py --ranks 64 --mb 8 --out /tmp/hanglens-bench
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

NPROC = 8
NCCL_NOISE = (
    "{h}:{pid}:{tid} [{d}] NCCL INFO Channel {c:02d}/0 : {r}[{d}] -> {p}[{pd}] via P2P/IPC/read",
    "{h}:{pid}:{tid} [{d}] NCCL INFO Connected all rings",
    "{h}:{pid}:{tid} [{d}] NCCL INFO {c} coll channels, 0 collnet channels, 0 nvls channels, "
    "{c} p2p channels, 2 p2p channels per peer",
    "{h}:{pid}:{tid} [{d}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.{n}.{d}<0>",
    "{h}:{pid}:{tid} [{d}] NCCL INFO Using network IB",
    "{h}:{pid}:{tid} [{d}] NCCL INFO Trees [0] {p}/-1/-1->{r}->{pd} [1] {p}/-1/-1->{r}->{pd}",
    "{h}:{pid}:{tid} [{d}] NCCL INFO Setting affinity for GPU {d} to ffffffff,00000000",
)
STEP = "[rank{r}]:[titan] 2025-03-01 12:{mm:02d}:{ss:02d},{ms:03d} - root - INFO - step: {step:6d}  " \
       "loss: {loss:.4f}  memory: 61.2GiB(77.4%)  tps: {tps}  mfu: 41.3%"
C10_INFO = "[rank{r}]:[I301 12:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:2034] " \
           "[PG ID 1 PG GUID 1 Rank {r}] ProcessGroupNCCL created ncclComm_ 0x{ptr:x} on CUDA device: {d}"
INIT = "{h}:{pid}:{tid} [{d}] NCCL INFO comm 0x{ptr:x} rank {r} nranks {n} cudaDev {d} nvmlDev {d} " \
       "busId {bus}000 commId 0x5d1e2f3a4b5c6d7e - Init COMPLETE"
WATCHDOG = "[rank{r}]:[E301 13:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:632] [Rank {r}] " \
           "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={k}, OpType=ALLREDUCE, " \
           "NumelIn=8388608, NumelOut=8388608, Timeout(ms)=600000) ran for 600{extra:03d} milliseconds " \
           "before timing out."
PG_STATUS = "[rank{r}]:[E301 13:{mm:02d}:{ss:02d}.{ns:09d} ProcessGroupNCCL.cpp:1664] " \
            "[PG ID 0 PG GUID 0(default_pg) Rank {r}] Exception (either an error or timeout) detected by " \
            "watchdog at work: {k}, last enqueued NCCL work: {k}, last completed NCCL work: {km1}."


def _rank_files(rank: int, world: int, mb: float, k: int, culprit: int,
                rng: random.Random) -> tuple[str, str]:
    node, d = divmod(rank, NPROC)
    host, pid = f"gpu-node{node:02d}", 40000 + rank * 7
    budget = int(mb * (1 << 20))
    out: list[str] = [INIT.format(h=host, pid=pid, tid=pid + 3, d=d, ptr=0x55D0000 + rank, r=rank, n=world,
                                  bus=0x18 + d)]
    err: list[str] = [C10_INFO.format(r=rank, mm=0, ss=1, ns=rng.randrange(10**9), ptr=0x7F000 + rank, d=d)]
    size = len(out[0]) + len(err[0])
    step = 0
    while size < budget:
        tmpl = NCCL_NOISE[rng.randrange(len(NCCL_NOISE))]
        line = tmpl.format(h=host, pid=pid, tid=pid + rng.randrange(1, 40), d=d, c=rng.randrange(32), r=rank,
                           p=(rank + 1) % world, pd=(d + 1) % NPROC, n=node)
        out.append(line)
        size += len(line) + 1
        if rng.random() < 0.08:
            step += 1
            s = STEP.format(r=rank, mm=(step // 60) % 60, ss=step % 60, ms=rng.randrange(1000), step=step,
                            loss=2.0 + rng.random(), tps=rng.randrange(3000, 4000))
            err.append(s)
            size += len(s) + 1
    last = k - 1 if rank == culprit else k
    if rank != culprit:
        err.append(WATCHDOG.format(r=rank, mm=10, ss=rng.randrange(60), ns=rng.randrange(10**9), k=last,
                                   extra=rng.randrange(100)))
        err.append(PG_STATUS.format(r=rank, mm=10, ss=rng.randrange(60), ns=rng.randrange(10**9), k=last,
                                    km1=last - 1))
    return "\n".join(out) + "\n", "\n".join(err) + "\n"


def make_corpus(out: Path, ranks: int, mb: float, k: int = 7219, culprit: int | None = None,
                seed: int = 1) -> Path:
    """Write the corpus under `out` (one torchrun tree per node) and return `out`."""
    rng = random.Random(seed)
    culprit = ranks // 2 + 1 if culprit is None else culprit
    for rank in range(ranks):
        node, lr = divmod(rank, NPROC)
        leaf = out / f"node{node:02d}" / f"bench_{node:02d}x7k2q9" / "attempt_0" / str(lr)
        leaf.mkdir(parents=True, exist_ok=True)
        stdout, stderr = _rank_files(rank, ranks, mb, k, culprit, rng)
        (leaf / "stdout.log").write_text(stdout, encoding="utf-8")
        (leaf / "stderr.log").write_text(stderr, encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--mb", type=float, default=8.0, help="MB of log per rank (stdout + stderr)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/hanglens-bench"))
    ap.add_argument("--seqnum", type=int, default=7219)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    make_corpus(args.out, args.ranks, args.mb, args.seqnum, seed=args.seed)
    print(f"wrote {args.ranks} ranks x {args.mb} MB under {args.out}")


if __name__ == "__main__":
    main()
