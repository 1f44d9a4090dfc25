# ruff: noqa: E501, UP031
# (a probe generator kept for provenance: long case tables, log calls written the way users write them)
"""A small DDP job on gloo (CPU) with one injected fault, logging the way its LOGMODE says.

Environment: FAULT (healthy, crash, skip, shape, dlkill, dlstall, stall, sigkill), FAULT_RANK, FAULT_STEP,
LOGMODE (print, stdlog, loguru, structlog, rich), STEPS, PG_TIMEOUT (seconds), WORKERS (DataLoader workers),
DL_TIMEOUT (DataLoader timeout, 0 = none). Used by gen.py (probe47); nothing here is read by hanglens.
"""

from __future__ import annotations

import datetime
import logging
import os
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANK = int(os.environ.get("FAULT_RANK", "1"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
LOGMODE = os.environ.get("LOGMODE", "print")
STALL_DIR = os.environ.get("STALL_DIR", ".")  # where gen.py keeps the dlstall marker files
STEPS = int(os.environ.get("STEPS", "8"))
WORKERS = int(os.environ.get("WORKERS", "0"))
DL_TIMEOUT = float(os.environ.get("DL_TIMEOUT", "0"))
RANK = int(os.environ.get("RANK", "0"))


def make_logger():
    """(info, warn, exception) callables for the chosen LOGMODE."""
    if LOGMODE == "stdlog":
        class RankFilter(logging.Filter):
            def filter(self, record):
                record.rank = RANK
                return True
        h = logging.StreamHandler(sys.stdout)
        h.addFilter(RankFilter())
        h.setFormatter(logging.Formatter(os.environ.get(
            "LOGFMT", "%(asctime)s [%(process)d] [rank %(rank)s] %(levelname)s %(name)s: %(message)s")))
        log = logging.getLogger("trainer")
        log.addHandler(h)
        log.setLevel(logging.INFO)
        return log.info, log.warning, log.exception
    if LOGMODE == "loguru":
        from loguru import logger
        logger.remove()
        logger.add(sys.stderr, format="{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <8} | rank={extra[rank]} | "
                   "{name}:{function}:{line} - {message}", backtrace=True, diagnose=False)
        lg = logger.bind(rank=RANK)
        return lg.info, lg.warning, lg.exception
    if LOGMODE == "structlog":
        import structlog
        structlog.configure(processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ], logger_factory=structlog.PrintLoggerFactory(sys.stdout))
        lg = structlog.get_logger().bind(rank=RANK)
        return lg.info, lg.warning, lg.exception
    if LOGMODE == "rich":
        from rich.logging import RichHandler
        logging.basicConfig(level=logging.INFO, format="%(message)s", datefmt="[%X]",
                            handlers=[RichHandler(rich_tracebacks=True)])
        log = logging.getLogger("trainer")
        return log.info, log.warning, log.exception

    def p(msg, *a):
        print(msg % a if a else msg, flush=True)
    return p, p, p


info, warn, exception = make_logger()


class Data(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 32, generator=g)
        self.y = torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if FAULT == "dlstall" and RANK == FAULT_RANK and os.path.exists(os.path.join(STALL_DIR, f"stall.{RANK}")):
            time.sleep(300)  # a worker stuck on a read that never returns
        return self.x[i], self.y[i]


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "20"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    info("rank %d/%d started on pid %d" % (rank, world, os.getpid()))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ds = Data()
    dl = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, world, rank), num_workers=WORKERS,
                    timeout=DL_TIMEOUT if WORKERS else 0)
    it = iter(dl)
    for step in range(1, STEPS + 1):
        here = rank == FAULT_RANK and step == FAULT_STEP
        if here and FAULT == "dlstall":
            open(os.path.join(STALL_DIR, f"stall.{rank}"), "w").close()
            it = iter(dl)  # fresh workers see the marker
        if here and FAULT == "dlkill":
            pid = it._workers[0].pid
            warn("killing dataloader worker %d (simulated OOM kill)" % pid)
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
        if here and FAULT == "sigkill":
            subprocess.Popen(["kill", "-9", str(os.getpid())])
            time.sleep(5)
        x, y = next(it)
        if here and FAULT == "crash":
            raise ValueError("label index %d out of range for 10 classes in batch %d" % (11, step))
        loss = nn.functional.mse_loss(model(x), y)
        if here and FAULT == "stall":
            info("saving checkpoint shard to /home/user/ckpt/step%d" % step)
            time.sleep(90)
        if here and FAULT == "skip" and loss.item() > -1:
            warn("skipping step %d: loss spike %.4f" % (step, loss.item()))
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()
        metric = torch.tensor([loss.item(), float(len(x))] + ([1.0] if here and FAULT == "shape" else []))
        dist.all_reduce(metric)
        info("step %d/%d loss %.4f" % (step, STEPS, metric[0].item() / world))
        time.sleep(0.2)
    dist.barrier()
    info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    if LOGMODE in ("loguru", "structlog", "rich"):
        try:
            main()
        except Exception:
            exception("training failed")
            raise
    else:
        main()
