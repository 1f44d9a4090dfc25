# ruff: noqa: E501, UP031
# (a probe generator kept for provenance: log calls written the way users write them)
"""probe62 trainer: a small regression model trained with DDP, FSDP1 or FSDP2 (gloo, CPU) on torch
2.3.1 / 2.4.1 / 2.5.1 / 2.6.0, with one injected fault per run. Used by gen.py; nothing here is read by
hanglens.

Environment: FAULT (healthy, skip, crash, uneven, sigkill, dlkill, shape, opmix, stall, mbarrier, dcpfail,
silent), FAULT_RANKS (comma list), FAULT_STEP, STEPS, PAR (ddp | fsdp1 | fsdp2 | manual: gradients averaged
by hand with all_reduce), PG_TIMEOUT (seconds; unset: torch's default), WORKERS (DataLoader workers), WARN
(1: the harmless warnings of a healthy run), LOG (print | logging: how the per-step lines are written),
EVERY (1: every rank prints its step lines, 0: rank 0 only), KILLDIR (where a rank about to be killed from
outside writes its pid), CKPT (DCP checkpoint folder).
"""

from __future__ import annotations

import datetime
import logging
import os
import resource
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
WORKERS = int(os.environ.get("WORKERS", "0"))
PAR = os.environ.get("PAR", "ddp")
RANK = int(os.environ.get("RANK", "0"))
KILLDIR = os.environ.get("KILLDIR", ".")
EVERY = os.environ.get("EVERY", "0") == "1"
log = logging.getLogger("train")


def say(msg):
    if os.environ.get("LOG", "print") == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


class Data(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 32, generator=g)
        self.y = torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        return self.head(self.body(x))


def wrap(model, world):
    if PAR == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model)
    if PAR == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        return FSDP(model, use_orig_params=True, device_id=torch.device("cpu"))
    if PAR == "fsdp2":
        try:
            from torch.distributed.fsdp import fully_shard  # 2.6+
        except ImportError:
            from torch.distributed._composable.fsdp import fully_shard
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (world,))
        for layer in model.body:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model
    return model


def save_checkpoint(model, opt, step, rank):
    import torch.distributed.checkpoint as dcp
    path = os.path.join(os.environ.get("CKPT", "ckpt"), "step_%d" % step)
    say("rank %d: saving checkpoint to %s" % (rank, path)) if EVERY or rank == 0 else None
    if rank in FAULT_RANKS and FAULT == "dcpfail":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))   # a full quota on this rank's node: every write fails
    dcp.save({"model": model.state_dict()}, checkpoint_id=path)


def main():
    if os.environ.get("LOG", "print") == "logging":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    kw = {}
    if os.environ.get("PG_TIMEOUT"):
        kw["timeout"] = datetime.timedelta(seconds=float(os.environ["PG_TIMEOUT"]))
    dist.init_process_group("gloo", **kw)
    rank, world = dist.get_rank(), dist.get_world_size()
    print("rank %d/%d started on pid %d (torch %s)" % (rank, world, os.getpid(), torch.__version__), flush=True)
    torch.manual_seed(0)
    model = wrap(Net(), world)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ds = Data()
    sampler = DistributedSampler(ds, world, rank)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=WORKERS)
    if os.environ.get("WARN") == "1":
        warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated", UserWarning, stacklevel=1)
    bad = rank in FAULT_RANKS
    steps = STEPS - 2 if bad and FAULT == "uneven" else STEPS   # a shorter shard on this rank
    it = iter(dl)
    for step in range(1, steps + 1):
        here = bad and step == FAULT_STEP
        if here and FAULT == "dlkill":
            os.kill(it._workers[0].pid, signal.SIGKILL)
            time.sleep(0.5)
        if here and FAULT == "sigkill":
            with open(os.path.join(KILLDIR, "kill.%d" % rank), "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(60)
        x, y = next(it)
        if here and FAULT == "crash":
            raise ValueError("Expected input batch_size (16) to match target batch_size (12).")
        if here and FAULT == "silent":
            time.sleep(3600)   # a read from a dead NFS mount
        if here and FAULT == "stall":
            say("rank %d: writing eval predictions to /home/user/out/preds_%d.jsonl" % (rank, step))
            time.sleep(60)
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        if here and FAULT == "skip" and loss.item() > -1:
            say("rank %d: skipping step %d, loss spike %.4f" % (rank, step, loss.item()))
            continue
        opt.zero_grad()
        loss.backward()
        if PAR == "manual":
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
        opt.step()
        metric = torch.tensor([loss.item(), float(len(x))] + ([1.0, 2.0] if here and FAULT == "shape" else []))
        if here and FAULT == "opmix":
            outl = [torch.zeros_like(metric) for _ in range(world)]
            dist.all_gather(outl, metric)
        else:
            dist.all_reduce(metric)
        if rank == 0 or EVERY:
            say("epoch 0 step %d/%d loss %.4f" % (step, steps, metric[0].item() / world))
        if FAULT == "mbarrier" and step == FAULT_STEP:
            if bad:
                say("rank %d: running validation" % rank)
                time.sleep(40)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
        if FAULT == "dcpfail" and step == FAULT_STEP:
            save_checkpoint(model, opt, step, rank)
        time.sleep(0.2)
    dist.barrier()
    say("rank %d: training finished" % rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
