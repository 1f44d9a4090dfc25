"""Training script of probe51: a small DDP job (gloo, CPU) with a DataLoader whose host pushes back.

SCEN picks what the operating system refuses, BAD the rank it happens to (its own limits, mounts or
cgroup, as if that rank ran in a misconfigured container); the other ranks run normally. Limits that
must hold before torch starts threads (mount namespace, memory cgroup) are applied before torch is
imported; the rest (RLIMIT_*) the way a user's `ulimit` in a wrapper script would, at the point named.
"""
import os
import sys

RANK = int(os.environ.get("RANK", "0"))
SCEN = os.environ.get("SCEN", "healthy")
BAD = int(os.environ.get("BAD", "-1"))
ME = RANK == BAD

if ME and SCEN in ("shm-rank",) and os.environ.get("OSL_IN_NS") != "1":
    # this rank's "container" has a small /dev/shm: a private mount namespace with its own tmpfs
    os.environ["OSL_IN_NS"] = "1"
    size = os.environ.get("SHM_SIZE", "2m")
    os.execvp("unshare", ["unshare", "-m", "sh", "-c",
                          f"mount -t tmpfs -o size={size} tmpfs /dev/shm && exec \"$0\" \"$@\"",
                          sys.executable, *sys.argv])

if ME and SCEN == "oom-rank":
    # this rank's container has a memory limit: a memory cgroup of its own (children inherit it)
    with open(os.path.join(os.environ["OSL_CG"], "cgroup.procs"), "w") as fh:
        fh.write(str(os.getpid()))

import ctypes  # noqa: E402
import faulthandler  # noqa: E402
import logging  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, Dataset, DistributedSampler  # noqa: E402

STEPS = int(os.environ.get("STEPS", "8"))
NW = int(os.environ.get("NW", "2"))
FAULT_STEP = int(os.environ.get("FAULT_STEP", "3"))
FEAT = int(os.environ.get("FEAT", "64"))
CKPT = os.environ.get("CKPT", "ckpt")
STYLE = os.environ.get("LOGSTYLE", "plain")

if STYLE == "tag":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(message)s")
    _log = logging.getLogger("train")

    def log(msg, level=logging.INFO):
        _log.log(level, msg, extra={"rank": RANK})
else:
    def log(msg, level=None):
        print(f"rank {RANK}: {msg}", flush=True)


def worker_oom(_wid):
    # the worker alone lands in a small memory cgroup (a per-process limit of a data service)
    with open(os.path.join(os.environ["OSL_CG"], "cgroup.procs"), "w") as fh:
        fh.write(str(os.getpid()))


class Synth(Dataset):
    def __init__(self, n, feat, rank):
        self.n, self.feat, self.rank = n, feat, rank
        if SCEN == "shm-bigbatch" and ME:
            self.feat = feat * 64          # this rank reads the full-resolution shard

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.feat, generator=g)
        if ME and SCEN == "segv-worker" and i >= FAULT_STEP * 4:
            ctypes.string_at(0)            # a decoder's null dereference in a worker
        if ME and SCEN == "abort-worker" and i >= FAULT_STEP * 4:
            os.abort()                     # a native assertion in a worker's decoder
        if ME and SCEN == "oom-worker" and i >= FAULT_STEP * 4:
            hog = [torch.ones(64 << 20, dtype=torch.uint8) for _ in range(64)]   # grows past the limit
            x = x + float(len(hog))
        if ME and SCEN == "as-worker" and i >= FAULT_STEP * 4:
            blob = bytearray(3 << 30)      # a whole shard read into memory
            x = x + float(len(blob))
        if SCEN in ("timelimit-hang",) and ME and i >= FAULT_STEP * 4:
            time.sleep(10_000)             # a read from a dead mount never returns
        if SCEN == "fd-ancdata":
            return {f"f{k}": x[k:k + 1].clone() for k in range(self.feat)} | {"y": x.sum().unsqueeze(0)}
        return x, x.sum().unsqueeze(0)


def batch_xy(b):
    if isinstance(b, dict):
        y = b.pop("y")
        return torch.cat([b[k] for k in sorted(b)], dim=1), y
    return b


class HandDP(torch.nn.Module):
    """Data parallel by hand: one all_reduce per gradient after backward."""

    def __init__(self, module):
        super().__init__()
        self.module = module
        for p in module.parameters():
            dist.broadcast(p.data, 0)

    def forward(self, x):
        return self.module(x)

    def sync(self):
        for p in self.module.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()


def save_ckpt(model, step):
    os.makedirs(CKPT, exist_ok=True)
    path = os.path.join(CKPT, f"step{step}-rank{RANK}.pt")
    state = {"model": model.state_dict(), "opt_pad": torch.randn(1 << 20)}   # ~4 MB of optimizer state
    log(f"saving checkpoint to {path}")
    torch.save(state, path)


def main():
    if SCEN in ("segv-rank-fh", "timelimit-hang", "timelimit-progress") or os.environ.get("FH") == "1":
        faulthandler.enable()
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    if SCEN == "fd-ancdata" or os.environ.get("SHARING"):
        torch.multiprocessing.set_sharing_strategy(os.environ.get("SHARING", "file_descriptor"))
    init = os.environ.get("INIT_METHOD")
    pgto = int(os.environ.get("PGTO", "30"))
    import datetime
    if init:
        dist.init_process_group("gloo", init_method=init, rank=RANK,
                                world_size=int(os.environ["WORLD_SIZE"]),
                                timeout=datetime.timedelta(seconds=pgto))
    else:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=pgto))
    ws = dist.get_world_size()
    feat = int(os.environ.get("FD_KEYS", "48")) if SCEN == "fd-ancdata" else FEAT
    ds = Synth(4096, feat, RANK)
    sampler = DistributedSampler(ds, num_replicas=ws, rank=RANK, shuffle=False)
    if SCEN == "shm-bigbatch" and ME:
        net = torch.nn.Sequential(torch.nn.AvgPool1d(64), torch.nn.Linear(feat, 1))
    else:
        net = torch.nn.Linear(feat, 1)
    # DDP construction segfaults on every rank of this CPU build under TORCH_DISTRIBUTED_DEBUG=DETAIL (gloo,
    # seen while building probe51): DETAIL runs average the gradients by hand instead
    hand = os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL"
    model = HandDP(net) if hand else DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kw = {"worker_init_fn": worker_oom} if (ME and SCEN == "oom-worker") else {}
    loader = DataLoader(ds, batch_size=int(os.environ.get("BS", "4")), sampler=sampler, num_workers=NW,
                        persistent_workers=SCEN == "healthy-persistent", **kw)
    log(f"world size {ws}, {NW} DataLoader workers, {len(loader)} batches per epoch")
    if ME and SCEN == "fd-ancdata":
        lim = int(os.environ.get("NOFILE", "128"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (lim, lim))      # `ulimit -n` of this rank's shell
    if ME and SCEN == "as-worker":
        soft = _vm_bytes() + (512 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))         # `ulimit -v`, inherited by workers
    if ME and SCEN == "nproc":
        # an unprivileged user (root ignores RLIMIT_NPROC) whose `ulimit -u` leaves room for one more task;
        # the modules the loader imports lazily are loaded first (the user may not read root's stdlib)
        import importlib
        for m in ("multiprocessing.queues", "multiprocessing.popen_fork", "multiprocessing.synchronize",
                  "multiprocessing.connection", "multiprocessing.reduction", "multiprocessing.resource_sharer",
                  "multiprocessing.util", "multiprocessing.context", "multiprocessing.process",
                  "multiprocessing.heap", "multiprocessing.managers", "multiprocessing.pool", "threading",
                  "queue", "selectors", "torch.utils.data._utils.worker",
                  "torch.utils.data._utils.pin_memory", "torch.utils.data._utils.signal_handling"):
            importlib.import_module(m)
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        n = len(os.listdir("/proc/self/task")) + 1
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))            # `ulimit -u` of this rank's user
    step = 0
    epoch = 0
    while step < STEPS:
        sampler.set_epoch(epoch)
        for b in loader:
            x, y = batch_xy(b)
            if SCEN == "shm-bigbatch" and ME:
                x = x.unsqueeze(1)
                out = model(x).squeeze(1)
            else:
                out = model(x)
            loss = torch.nn.functional.mse_loss(out, y)
            opt.zero_grad()
            loss.backward()
            if hand:
                model.sync()
            opt.step()
            log(f"step {step}/{STEPS} loss {loss.item():.4f}")
            if step == FAULT_STEP and ME:
                fault(model)
            if SCEN in ("disk-full", "readonly") and step == FAULT_STEP and ME:
                save_ckpt(model.module, step)
            if SCEN == "metrics-full" and step == FAULT_STEP and ME:
                os.makedirs(CKPT, exist_ok=True)
                with open(os.path.join(CKPT, "predictions.jsonl"), "a") as fh:   # eval dump on a full disk
                    for k in range(4096):
                        fh.write('{"id": %d, "pred": [%s]}\n' % (k, ", ".join(["0.125"] * 64)))
            if SCEN == "healthy-ckpt-retry" and step == FAULT_STEP and RANK == 0:
                try:
                    save_ckpt(model.module, step)
                except (OSError, RuntimeError) as e:
                    log(f"WARNING: checkpoint to {CKPT} failed ({e}); writing to ./ckpt-fallback instead",
                        logging.WARNING)
                    os.makedirs("ckpt-fallback", exist_ok=True)
                    torch.save(model.module.state_dict(), "ckpt-fallback/last.pt")
            if SCEN.startswith("timelimit"):
                time.sleep(1.0)
            step += 1
            if step >= STEPS:
                break
        epoch += 1
    dist.barrier()
    log("training finished")
    if SCEN != "healthy-nodestroy":
        dist.destroy_process_group()


def _vm_bytes():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def fault(model):
    if SCEN in ("segv-rank", "segv-rank-fh"):
        ctypes.string_at(0)                                   # an extension dereferences NULL
    elif SCEN == "abort":
        os.abort()                                            # a native assert / abort()
    elif SCEN == "oom-rank":
        hog = []
        while True:                                           # an evaluation that gathers everything
            hog.append(torch.ones(256 << 20, dtype=torch.uint8))
    elif SCEN == "as-tensor":
        soft = _vm_bytes() + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
        torch.empty(2 << 30, dtype=torch.uint8).fill_(1)      # a 2 GiB buffer under `ulimit -v`
    elif SCEN == "as-memerror":
        soft = _vm_bytes() + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
        buf = b"\0" * (1 << 30)                               # pure-Python allocation: MemoryError
        log(f"{len(buf)}")


if __name__ == "__main__":
    main()
