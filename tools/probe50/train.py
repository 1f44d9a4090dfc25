# ruff: noqa: E501, UP031
# (a probe generator kept for provenance: log calls written the way users write them)
"""A small DDP job on gloo (CPU) with one injected fault, for probe50 (real runs cut into pasted excerpts).

Environment: FAULT (healthy, skip, shape, opmix, stall, dlkill, dlraise, dlstall, crash, sigkill, segv,
unused, memerr, allocerr), NODDP (1: gradients averaged by hand with all_reduce, as many scripts do;
DDP's constructor segfaults under TORCH_DISTRIBUTED_DEBUG=DETAIL in the torch 2.13 CPU build used), FAULT_RANKS (comma list), FAULT_STEP, STEPS, PG_TIMEOUT (seconds), WORKERS
(DataLoader workers), DL_TIMEOUT (0 = none), WARN (1: the harmless warnings of a healthy run).
Used by gen.py; nothing here is read by hanglens.
"""

from __future__ import annotations

import datetime
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
DL_TIMEOUT = float(os.environ.get("DL_TIMEOUT", "0"))
RANK = int(os.environ.get("RANK", "0"))
STALL_DIR = os.environ.get("STALL_DIR", ".")


class Data(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 32, generator=g)
        self.y = torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        marker = os.path.join(STALL_DIR, f"fault.{RANK}")
        if RANK in FAULT_RANKS and os.path.exists(marker):
            if FAULT == "dlstall":
                time.sleep(120)  # a read on a network filesystem that never returns
            if FAULT == "dlraise":
                raise OSError("[Errno 5] Input/output error: '/home/user/data/shard-%05d.tar'" % (i // 64))
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


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "20"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    print("rank %d/%d started on pid %d" % (rank, world, os.getpid()), flush=True)
    torch.manual_seed(0)
    noddp = os.environ.get("NODDP") == "1"
    model = Net() if noddp else DDP(Net(), find_unused_parameters=os.environ.get("WARN") == "1")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ds = Data()
    dl = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, world, rank), num_workers=WORKERS,
                    timeout=DL_TIMEOUT if WORKERS else 0)
    if os.environ.get("WARN") == "1" and rank == 0:
        warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated", UserWarning, stacklevel=1)
    it = iter(dl)
    bad = rank in FAULT_RANKS
    for step in range(1, STEPS + 1):
        here = bad and step == FAULT_STEP
        if here and FAULT in ("dlstall", "dlraise"):
            open(os.path.join(STALL_DIR, f"fault.{rank}"), "w").close()
            it = iter(dl)  # fresh workers see the marker
        if here and FAULT == "dlkill":
            pid = it._workers[0].pid
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
        if here and FAULT == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if here and FAULT == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        x, y = next(it)
        if here and FAULT == "crash":
            raise KeyError("input_ids")
        if here and FAULT == "memerr":
            cache = bytearray(1 << 46)  # a feature cache sized from a corrupt header
            print(len(cache))
        if here and FAULT == "allocerr":
            buf = torch.empty(1 << 44, dtype=torch.float32)
            print(buf.shape)
        out = model(x, use_aux=not (bad and FAULT == "unused" and step >= FAULT_STEP))
        loss = nn.functional.mse_loss(out, y)
        if here and FAULT == "stall":
            print("rank %d: writing checkpoint to /home/user/ckpt/step%d.pt" % (rank, step), flush=True)
            time.sleep(90)
        if here and FAULT == "skip" and loss.item() > -1:
            print("rank %d: skipping step %d, loss spike %.4f" % (rank, step, loss.item()), flush=True)
            continue
        opt.zero_grad()
        loss.backward()
        if noddp:
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
        opt.step()
        metric = torch.tensor([loss.item(), float(len(x))] + ([1.0] if here and FAULT == "shape" else []))
        if here and FAULT == "opmix":
            outl = [torch.zeros_like(metric) for _ in range(world)]
            dist.all_gather(outl, metric)
        else:
            dist.all_reduce(metric)
        if rank == 0:
            print("epoch 0 step %d/%d loss %.4f" % (step, STEPS, metric[0].item() / world), flush=True)
        time.sleep(0.2)
    dist.barrier()
    print("rank %d: training finished" % rank, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
