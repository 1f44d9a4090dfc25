# ruff: noqa: E501
# (a probe generator kept for provenance)
"""A small gloo (CPU) regression trainer for probe58: one torchrun agent per "node" on one machine, with
one injected fault.

Environment: NODE (the node's name in this script's own log lines), FAULT (healthy, crash, crash-first,
kill, nodekill, stall), FAULT_RANKS (global ranks, comma list), FAULT_STEP, STEPS, PG_TIMEOUT (seconds),
LOG_STYLE (tagged: every rank logs with its node and global rank; rank0: only global rank 0 logs the loss,
every rank logs start-up and errors untagged). `kill` and `nodekill` only write the rank's pid to
STALL_DIR/kill.<rank> or STALL_DIR/nodekill.<rank> and wait; gen.py kills the worker (kill) or the whole
agent process group of its node (nodekill) from outside, as an OOM killer or a dying host would.
Used by gen.py with torch 2.13.0+cpu; nothing here is read by hanglens.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.elastic.multiprocessing.errors import record

NODE = os.environ.get("NODE", "node")
FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "5"))
STEPS = int(os.environ.get("STEPS", "12"))
STYLE = os.environ.get("LOG_STYLE", "tagged")
RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
RESTART = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
STALL_DIR = os.environ.get("STALL_DIR", ".")
TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "15")))

if STYLE == "tagged":
    FMT = f"%(asctime)s %(levelname)s [{NODE}][rank {RANK}/{WORLD}] %(message)s"
else:
    FMT = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"
logging.basicConfig(format=FMT, level=logging.INFO)
log = logging.getLogger("trainer")


def init():
    # A plain env:// init as user scripts write it: under torchrun the workers use the agent's store,
    # whose keys are not prefixed per restart in torch 2.13 (torch/distributed/rendezvous.py).
    dist.init_process_group("gloo", timeout=TIMEOUT)


def wait_to_be_killed(kind):
    with open(os.path.join(STALL_DIR, f"{kind}.{RANK}"), "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(60)


@record
def main():
    init()
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    log.info("started on %s: global rank %d of %d, local rank %d, restart %d", NODE, rank, world, local, RESTART)
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    bad = rank in FAULT_RANKS
    for step in range(1, STEPS + 1):
        here = bad and step == FAULT_STEP
        x = torch.randn(16, 32)
        y = x[:, :1] * 0.5
        if here and (FAULT == "crash" or (FAULT == "crash-first" and RESTART == 0)):
            shard = f"/home/user/data/shard-{rank:03d}-{step:04d}.pt"
            raise FileNotFoundError(2, "No such file or directory", shard)
        if here and FAULT == "kill":
            wait_to_be_killed("kill")
        if here and FAULT == "nodekill":
            wait_to_be_killed("nodekill")
        if here and FAULT == "stall":
            log.info("step %d: refreshing the feature cache from the shared filesystem", step)
            time.sleep(100)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        stat = torch.tensor([loss.item()])
        dist.all_reduce(stat)
        if STYLE == "tagged" or rank == 0:
            log.info("step %d/%d loss %.4f", step, STEPS, stat.item() / world)
        time.sleep(0.4)
    dist.barrier()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
