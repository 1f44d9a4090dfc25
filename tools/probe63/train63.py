"""A small DDP trainer (gloo, CPU) for probe63: each rank reads batches from a DataLoader, logs each step and
all_reduces its gradients through DDP. One rank (BAD) carries the run's fault (FAULT):
  skip   it decides on its own to stop early at step AT: it leaves the loop, skips the final barrier and exits
  exc    it raises a RuntimeError at step AT
  kill9  it is SIGKILLed at step AT (as the kernel's OOM killer would)
  dlkill its DataLoader worker is SIGKILLed while loading step AT's batch
  slow   it spends SLOW_S seconds in its own code at step AT, longer than the GLOO_TIMEOUT_S process group timeout
  hang   it blocks forever in its own code at step AT (the generator stops the job from outside)
  none   no fault
RESTART_OK=1: the fault fires only in the first attempt of a torchrun `--max-restarts` job.
LOG: print (`[rank r] ...` on stdout), plain (no rank tag), logging (timestamped logging to stderr, rank in the
message), files (timestamped logging into rank<r>.log in the working folder, overwritten by every run, plus a
short line on stdout from rank 0)."""
import datetime
import logging
import os
import pathlib
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

rank = int(os.environ["RANK"])
ws = int(os.environ["WORLD_SIZE"])
FAULT = os.environ.get("FAULT", "none")
BAD = int(os.environ.get("BAD", "-1"))
AT = int(os.environ.get("AT", "3"))
STEPS = int(os.environ.get("STEPS", "6"))
LOG = os.environ.get("LOG", "print")
GLOO_TIMEOUT_S = float(os.environ.get("GLOO_TIMEOUT_S", "1800"))
SLOW_S = float(os.environ.get("SLOW_S", "25"))
MARK = os.environ.get("MARKDIR")
if os.environ.get("RESTART_OK") == "1" and int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
    FAULT = "none"

log = logging.getLogger("train")
if LOG == "logging":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s [rank" + str(rank) + "] %(message)s")
elif LOG == "files":
    logging.basicConfig(level=logging.INFO, filename=f"rank{rank}.log", filemode="w",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def say(msg):
    if LOG in ("logging", "files"):
        log.info(msg)
    elif LOG == "plain":
        print(msg, flush=True)
    else:
        print(f"[rank {rank}] {msg}", flush=True)
    if MARK:
        pathlib.Path(MARK, f"rank{rank}").write_text(str(os.getpid()))


class Shards(Dataset):
    def __len__(self):
        return 64 * STEPS

    def __getitem__(self, i):
        if FAULT == "dlkill" and rank == BAD and i >= 8 * AT:
            os.kill(os.getpid(), signal.SIGKILL)
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), torch.randn(4, generator=g)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=GLOO_TIMEOUT_S))
    say(f"run starting: world size {ws}, pid {os.getpid()}, {STEPS} steps, batch 8")
    if LOG == "files" and rank == 0:
        print(f"training with {ws} ranks, logs in rank<r>.log", flush=True)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Shards(), batch_size=8, num_workers=1 if FAULT == "dlkill" else 0)
    it = iter(loader)
    for step in range(STEPS):
        x, y = next(it)
        if rank == BAD and step == AT:
            if FAULT == "exc":
                raise RuntimeError(f"shard {step} holds a corrupt record (offset {8 * step})")
            if FAULT == "kill9":
                os.kill(os.getpid(), signal.SIGKILL)
            if FAULT == "slow":
                time.sleep(SLOW_S)
            if FAULT == "hang":
                if MARK:
                    pathlib.Path(MARK, "stalled").write_text(str(rank))
                time.sleep(3600)
        if FAULT == "skip" and rank == BAD and step == AT:
            say(f"early stop at step {step + 1}: validation loss did not improve")
            dist.destroy_process_group()
            return
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        say(f"step {step + 1}/{STEPS} loss {loss.item():.4f}")
        time.sleep(0.2)
    dist.barrier()
    say("training finished, saving checkpoint")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
