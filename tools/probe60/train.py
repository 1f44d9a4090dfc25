# ruff: noqa: E501, UP031, UP032
# (a probe generator kept for provenance: written for torch 1.12/1.13 and Python 3.8/3.10, the way scripts of 2022 were)
"""A small DDP job on gloo (CPU) with one injected fault, for probe60 (torch 1.12.1 / 1.13.1 releases under
`python -m torch.distributed.launch`, their torchrun, and `torch.multiprocessing.spawn`).

Environment: FAULT (healthy, skip, crash, uneven, extkill, segv, dlkill, shape, stall, mbarrier, unused,
badport, badaddr), FAULT_RANKS (comma list), FAULT_STEP, STEPS, PG_TIMEOUT (seconds), WORKERS (DataLoader
workers), SPAWN (n: start n ranks with torch.multiprocessing.spawn), LOGSTYLE (print | logging | files:
per-rank files under LOGDIR written by the logging module, an uncaught exception logged there too), WARN
(1: the harmless warnings of a healthy run). The rank comes from `--local_rank` (torch.distributed.launch
without --use_env) or the environment. Used by gen.py; nothing here is read by hanglens.
"""

import argparse
import datetime
import logging
import os
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "1").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
WORKERS = int(os.environ.get("WORKERS", "0"))
STALL_DIR = os.environ.get("STALL_DIR", ".")
LOGSTYLE = os.environ.get("LOGSTYLE", "print")
logger = logging.getLogger("train")


def say(rank, msg):
    if LOGSTYLE == "print":
        print(msg, flush=True)
    else:
        logger.info(msg)


class Shards(Dataset):
    """Samples of this rank's shard files; without a DistributedSampler each rank reads its own list."""

    def __init__(self, rank, n_files):
        g = torch.Generator().manual_seed(rank)
        n = 48 * n_files
        self.x = torch.randn(n, 32, generator=g)
        self.y = torch.randn(n, 1, generator=g)
        self.rank = rank

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.head = nn.Linear(64, 1)
        self.aux = nn.Linear(64, 1)   # an auxiliary head some batches skip

    def forward(self, x, use_aux=True):
        h = self.body(x)
        out = self.head(h)
        return out + self.aux(h) if use_aux else out


def setup_logging(rank):
    if LOGSTYLE == "files":
        d = os.environ.get("LOGDIR", "logs")
        os.makedirs(d, exist_ok=True)
        logging.basicConfig(filename=os.path.join(d, "train_rank%d.log" % rank), level=logging.INFO,
                            format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    elif LOGSTYLE == "logging":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format="%(asctime)s - %(levelname)s - %(name)s - [rank " + str(rank) + "] %(message)s")


def train(rank, world, local_rank):
    bad = rank in FAULT_RANKS
    timeout = datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "20")))
    if FAULT == "badport" and bad:
        os.environ["MASTER_PORT"] = str(int(os.environ["MASTER_PORT"]) + 1)   # a stale config on this node
    if "SPAWN" in os.environ or (FAULT == "badport" and bad):
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world, timeout=timeout)
    else:
        dist.init_process_group("gloo", timeout=timeout)
    say(rank, "rank %d/%d (local_rank %d) started on pid %d" % (rank, world, local_rank, os.getpid()))
    torch.manual_seed(0)
    model = DDP(Net(), find_unused_parameters=os.environ.get("WARN") == "1" and FAULT != "unused")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    n_files = 4 - (1 if FAULT == "uneven" and bad else 0) if FAULT == "uneven" else 4 * world
    ds = Shards(rank, n_files)
    if FAULT == "uneven":
        dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=WORKERS)
    else:
        dl = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, world, rank), num_workers=WORKERS)
    if os.environ.get("WARN") == "1" and rank == 0:
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order", UserWarning, stacklevel=1)
    say(rank, "rank %d: %d batches per epoch" % (rank, len(dl)))
    step = 0
    for epoch in range(int(os.environ.get("EPOCHS", "1"))):
        it = iter(dl)
        for x, y in it:
            step += 1
            if step > STEPS and FAULT != "uneven":
                break
            here = bad and step == FAULT_STEP
            if here and FAULT == "dlkill":
                os.kill(it._workers[0].pid, signal.SIGKILL)
                time.sleep(0.5)
                x, y = next(it)
            if here and FAULT == "extkill":
                with open(os.path.join(STALL_DIR, "kill.%d" % rank), "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(60)
            if here and FAULT == "segv":
                os.kill(os.getpid(), signal.SIGSEGV)
            if here and FAULT == "crash":
                raise ValueError("Expected input batch_size (16) to match target batch_size (15).")
            out = model(x, use_aux=not (here and FAULT == "unused"))
            loss = nn.functional.mse_loss(out, y)
            if here and FAULT == "stall":
                say(rank, "rank %d: saving checkpoint to /home/user/ckpt/step%d.pt" % (rank, step))
                time.sleep(80)
            opt.zero_grad()
            loss.backward()
            opt.step()
            metric = torch.tensor([loss.item(), float(len(x))] + ([1.0] if here and FAULT == "shape" else []))
            if here and FAULT == "skip" and loss.item() > -1:
                say(rank, "rank %d: loss spike at step %d (%.4f), not logging it" % (rank, step, loss.item()))
            else:
                dist.all_reduce(metric)
            if rank == 0:
                say(rank, "epoch %d step %d loss %.4f" % (epoch, step, metric[0].item() / world))
            time.sleep(0.2)
        if FAULT == "mbarrier":
            if bad:
                say(rank, "rank %d: evaluating on the validation set" % rank)
                time.sleep(60)
            dist.monitored_barrier(timeout=timeout)
        else:
            dist.barrier()
    say(rank, "rank %d: training finished" % rank)
    dist.destroy_process_group()


def worker(local_rank, world):
    setup_logging(local_rank)
    run(local_rank, world, local_rank)


def run(rank, world, local_rank):
    if LOGSTYLE == "files":
        try:
            train(rank, world, local_rank)
        except Exception:
            logger.exception("training failed")
            raise
    else:
        train(rank, world, local_rank)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", "0")))
    args = p.parse_args()
    if "SPAWN" in os.environ:
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29560")
        n = int(os.environ["SPAWN"])
        torch.multiprocessing.spawn(worker, args=(n,), nprocs=n, join=True)
        return 0
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    setup_logging(rank)
    run(rank, world, args.local_rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
