"""A small torchrun trainer (gloo, CPU) whose every line is its own: prints or logging, no step counter
hanglens knows. One rank (BAD) stalls in its own code (STALL: spin, sleep, lock, pipe, subproc) at WHERE
(before: while building its vocabulary; between: while loading a shard of the loop; extra: in a section only
it runs) while the others wait in the next all_reduce, under a 30 min process-group timeout, until the job
is stopped from outside. STALL=none runs to the end; STALL=slow makes BAD slower at every shard and ends.
STYLE: tag (`rank r: ...`), gpu (`[GPUr] ...`), none, logging (stderr, no rank), rich (rich's Console.log),
bar (a progress bar of its own while building the vocabulary). DUMP: a file name pattern with {rank}:
faulthandler writes every thread's stack there once the rank has printed nothing for DUMP_AFTER seconds."""
import datetime
import faulthandler
import logging
import os
import pathlib
import subprocess
import sys
import threading
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
ws = int(os.environ["WORLD_SIZE"])
BAD = {int(x) for x in os.environ.get("BAD", "").split(",") if x}
STALL = os.environ.get("STALL", "none")
WHERE = os.environ.get("WHERE", "before")
STYLE = os.environ.get("STYLE", "tag")
STEPS = int(os.environ.get("STEPS", "5"))
AT = int(os.environ.get("AT", "2"))
MARK = os.environ.get("MARKDIR")
DUMP = os.environ.get("DUMP")
DUMP_AFTER = float(os.environ.get("DUMP_AFTER", "6"))

log = logging.getLogger("trainer")
if STYLE == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
console = None
if STYLE == "rich":
    from rich.console import Console
    console = Console(width=110, force_terminal=False, log_time_format="[%X]")
dump_fh = None
if DUMP:
    p = pathlib.Path(DUMP.format(rank=rank))
    p.parent.mkdir(parents=True, exist_ok=True)
    dump_fh = open(p, "w")


def say(msg):
    if STYLE == "tag":
        print(f"rank {rank}: {msg}", flush=True)
    elif STYLE == "gpu":
        print(f"[GPU{rank}] {msg}", flush=True)
    elif STYLE == "logging":
        log.info(msg)
    elif STYLE == "rich":
        console.log(msg)
    else:
        print(msg, flush=True)
    if MARK:
        pathlib.Path(MARK, f"rank{rank}").write_text(str(os.getpid()))
    if dump_fh is not None:
        faulthandler.cancel_dump_traceback_later()
        faulthandler.dump_traceback_later(DUMP_AFTER, file=dump_fh)


def stall():
    if MARK:
        pathlib.Path(MARK, "stalled").write_text(str(rank))
    if STALL == "spin":
        x = 0
        while True:
            x = (x * 31 + 7) % 1000003
    elif STALL == "sleep":
        time.sleep(3600)
    elif STALL == "lock":
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()
    elif STALL == "pipe":
        r, _w = os.pipe()
        os.read(r, 1)
    elif STALL == "subproc":
        subprocess.run(["sleep", "60"], check=False)


def build_vocab():
    if STYLE == "bar":
        n = 20
        for i in range(n + 1):
            sys.stdout.write(f"\rbuilding vocabulary: {i}/{n} [{'#' * i:<{n}}]")
            sys.stdout.flush()
            if MARK:
                pathlib.Path(MARK, f"rank{rank}").write_text(str(os.getpid()))
            if rank in BAD and i == 7 and WHERE == "before":
                stall()
            time.sleep(0.05)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    say("building vocabulary ...")
    if rank in BAD and WHERE == "before":
        stall()
    time.sleep(0.3)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=30))
    say(f"worker up (pid {os.getpid()}, world {ws})")
    say("reading config from conf/train.yaml")
    build_vocab()
    say("vocabulary ready: 32000 tokens")
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    say("weights synchronised, entering training loop")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(STEPS):
        say(f"loading shard {it + 1} of {STEPS}")
        if rank in BAD and it == AT and WHERE == "between":
            stall()
        if STALL == "slow" and rank in BAD:
            time.sleep(2.5)
        time.sleep(0.2)
        x = torch.randn(32, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        say(f"shard {it + 1}: batch ready, syncing gradients")
        if rank in BAD and it == AT and WHERE == "extra":
            say("refreshing tokenizer cache on this worker")
            stall()
        if rank in BAD and it == AT and WHERE == "quiet":
            stall()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= ws
        opt.step()
        say(f"shard {it + 1} done, loss={loss.item():.4f}")
    say("all shards done, saving weights")
    dist.barrier()
    say("worker finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
