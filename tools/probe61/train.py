# ruff: noqa: E501, UP031
# (a probe generator kept for provenance: log calls written the way users wrote them in 2023)
"""A small image-classifier job on gloo (CPU) for probe61, written against the torch 2.0-2.2 APIs (it runs
unchanged on torch 2.0.1, 2.1.2 and 2.2.2), with one injected fault.

Environment: FAULT (healthy, skip, crash, uneven, extkill, dlkill, dlstall, shape, opmix, stall, monbar,
unused, subskip, subcrash, silent), FAULT_RANKS (comma list), FAULT_STEP, STEPS, WRAP (ddp | fsdp (torch 2.2 only: FSDP on the CPU needs it) | none:
gradients averaged by hand), PG_TIMEOUT (seconds; unset = the release's default of 30 min), WORKERS
(DataLoader workers), DL_TIMEOUT, WARN (1: the harmless warnings of a healthy run), SPAWN (N: started as
`python train.py`, which runs torch.multiprocessing.spawn with N processes), RANKLOG (1: each rank also
writes its own log file rank<N>.log through logging, as many 2023 scripts did). `extkill` only writes the
rank's pid to STALL_DIR/kill.<rank>; gen.py kills it from outside. Used by gen.py; nothing here is read by
hanglens.
"""

from __future__ import annotations

import datetime
import logging
import os
import signal
import sys
import threading
import time
import warnings

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "1").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
WORKERS = int(os.environ.get("WORKERS", "0"))
DL_TIMEOUT = float(os.environ.get("DL_TIMEOUT", "0"))
WRAP = os.environ.get("WRAP", "ddp")
STALL_DIR = os.environ.get("STALL_DIR", ".")
RANK = int(os.environ.get("RANK", "-1"))
log = logging.getLogger("train")


class Images(Dataset):
    """Fake 3x16x16 images with 10 classes; `n` differs per rank in the `uneven` fault (each rank reads its own
    shard file list, no DistributedSampler)."""

    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 3, 16, 16, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if RANK in FAULT_RANKS and os.path.exists(os.path.join(STALL_DIR, f"fault.{RANK}")):
            if FAULT == "dlstall":
                time.sleep(200)  # a read from a network mount that never returns
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.classifier = nn.Linear(128, 10)
        self.aux_head = nn.Linear(128, 10)  # only used when aux loss is on

    def forward(self, x, aux=True):
        h = self.features(x)
        out = self.classifier(h)
        return (out, self.aux_head(h)) if aux else (out, None)


def setup_logging(rank):
    fmt = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"
    handlers = [logging.StreamHandler(sys.stdout)]
    if os.environ.get("RANKLOG") == "1":
        handlers.append(logging.FileHandler(os.path.join(STALL_DIR, f"rank{rank}.log")))
    logging.basicConfig(format=fmt, level=logging.INFO, handlers=handlers, force=True)


def wrap(model, rank):
    if WRAP == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, find_unused_parameters=os.environ.get("WARN") == "1")
    if WRAP == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        return FSDP(model, device_id=torch.device("cpu"))  # FSDP on the CPU (torch 2.2+)
    return model


def train(rank, world):
    global RANK
    RANK = rank
    setup_logging(rank)
    timeout = os.environ.get("PG_TIMEOUT")
    kw = {"timeout": datetime.timedelta(seconds=float(timeout))} if timeout else {}
    if os.environ.get("SPAWN"):
        dist.init_process_group("gloo", rank=rank, world_size=world, **kw)
    else:
        dist.init_process_group("gloo", **kw)
    log.info("Initialized process group: rank %d, world size %d, backend %s", rank, world, dist.get_backend())
    torch.manual_seed(0)
    model = wrap(Net(), rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    if FAULT == "uneven":
        # each rank reads its own list of shards; one list is shorter, and nobody uses DistributedSampler
        n = 8 * (FAULT_STEP - 1) if rank in FAULT_RANKS else 8 * STEPS
        ds = Images(n)
        dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=WORKERS)
    else:
        ds = Images()
        dl = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, world, rank), num_workers=WORKERS,
                        timeout=DL_TIMEOUT if WORKERS else 0)
    sub = None
    if FAULT in ("subskip", "subcrash"):
        # tensor-parallel-like pairs: [0, 1], [2, 3], ...
        pairs = [list(range(i, min(i + 2, world))) for i in range(0, world, 2)]
        groups = [dist.new_group(p) for p in pairs]
        sub = groups[rank // 2]
        log.info("rank %d: joined subgroup %s", rank, pairs[rank // 2])
    if rank == 0:
        log.info("***** Running training *****")
        log.info("  Num examples = %d", len(ds))
        log.info("  Num steps = %d", STEPS)
        if os.environ.get("WARN") == "1":
            warnings.warn("The default value of the antialias parameter of all the resizing transforms (Resize(), RandomResizedCrop(), etc.) will change from None to True in v0.17, in order to be consistent across the PIL and Tensor backends.", UserWarning, stacklevel=1)
    bad = rank in FAULT_RANKS
    it = iter(dl)
    lock = threading.Lock()
    t0 = time.time()
    step = 0
    while step < STEPS:
        step += 1
        here = bad and step == FAULT_STEP
        if here and FAULT == "dlstall":
            open(os.path.join(STALL_DIR, f"fault.{rank}"), "w").close()
            it = iter(dl)
        if here and FAULT == "dlkill":
            os.kill(it._workers[0].pid, signal.SIGKILL)
            time.sleep(0.5)
        if here and FAULT == "extkill":
            with open(os.path.join(STALL_DIR, f"kill.{rank}"), "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(60)
        try:
            x, y = next(it)
        except StopIteration:
            log.info("rank %d: epoch finished after %d steps", rank, step - 1)
            break
        if here and FAULT == "skip":
            x = x * float("nan")  # a corrupt image decodes to NaNs
        if here and FAULT == "crash":
            raise KeyError("'label_names' (sample %d has no annotation)" % int(y[0]))
        if here and FAULT == "silent":
            with lock:
                with lock:  # an accidental re-entry into a non-reentrant lock: the rank blocks for ever
                    pass
        out, aux = model(x, aux=not (bad and FAULT == "unused" and step >= FAULT_STEP))
        loss = loss_fn(out, y) + (0.1 * loss_fn(aux, y) if aux is not None else 0.0)
        if not torch.isfinite(loss):
            log.warning("rank %d: non-finite loss at step %d, skipping batch", rank, step)
            continue
        opt.zero_grad()
        loss.backward()
        if WRAP == "none":
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
        opt.step()
        if here and FAULT == "stall":
            log.info("rank %d: writing checkpoint to /home/user/ckpt/step_%d.pt", rank, step)
            time.sleep(60)
        stat = torch.tensor([loss.item(), 1.0])
        if here and FAULT == "shape":
            stat = torch.tensor([loss.item(), 1.0, float(len(y))])
        if here and FAULT == "opmix":
            dist.broadcast(stat, src=0)
        elif sub is not None:
            if here and FAULT == "subcrash":
                raise RuntimeError("shard %d of the sharded embedding is missing on this rank" % rank)
            if not (here and FAULT == "subskip"):
                dist.all_reduce(stat, group=sub)
        else:
            dist.all_reduce(stat)
        if FAULT == "monbar" and step == FAULT_STEP:
            if bad:
                log.info("rank %d: running validation before the barrier", rank)
                time.sleep(30)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=8))
        if step % 2 == 0:
            log.info("rank %d step %d/%d loss %.4f (%.2fs)", rank, step, STEPS, stat[0].item() / world, time.time() - t0)
        time.sleep(0.2)
    if FAULT == "uneven":
        log.info("rank %d: computing validation accuracy", rank)
        acc = torch.tensor([0.5])
        dist.all_reduce(acc)
    dist.barrier()
    if rank == 0:
        log.info("Training finished in %.1fs", time.time() - t0)
    dist.destroy_process_group()


def spawned(local_rank, world):
    train(local_rank, world)


def main():
    n = os.environ.get("SPAWN")
    if n:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29961")
        mp.spawn(spawned, args=(int(n),), nprocs=int(n), join=True)
    else:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))


if __name__ == "__main__":
    main()
