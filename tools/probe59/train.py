"""probe59 trainer: a small regression model trained with DDP or FSDP2 (gloo, CPU) that checkpoints with
torch.distributed.checkpoint (DCP) or with a rank-0 `torch.save` of a gathered state dict, and resumes from
one. One fault per run, injected on the ranks in BAD (comma list) by SCEN; see gen.py for the cases.

Environment: SCEN, BAD, PAR (ddp | fsdp), PGTO (collective timeout, s), CKPT (checkpoint root), STEPS,
SAVE_AT (comma list of steps), RESUME (a step folder under CKPT to load first), HID (hidden width), ASYNC=1
(dcp.async_save), FULL=1 (rank-0 torch.save of a gathered state dict instead of DCP), KILLDIR (where a rank
about to be killed writes its pid).
"""

import ctypes
import datetime
import io
import logging
import os
import resource
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict, get_state_dict,
                                                     set_state_dict)
from torch.distributed.checkpoint.stateful import Stateful

SCEN = os.environ.get("SCEN", "healthy")
BAD = {int(x) for x in os.environ.get("BAD", "").split(",") if x}
PAR = os.environ.get("PAR", "ddp")
PGTO = int(os.environ.get("PGTO", "20"))
CKPT = os.environ.get("CKPT", "/tmp/ckpt")
STEPS = int(os.environ.get("STEPS", "8"))
SAVE_AT = {int(x) for x in os.environ.get("SAVE_AT", "4").split(",") if x}
RESUME = os.environ.get("RESUME", "")
HID = int(os.environ.get("HID", "256"))

log = logging.getLogger("trainer")


class TrainerState(Stateful):
    """Step counter, the sampler's position and this rank's RNG state (keyed by rank, as many trainers do)."""

    def __init__(self, rank):
        self.rank, self.step = rank, 0

    def state_dict(self):
        if self.rank in BAD and SCEN == "sd-raise":
            # the sampler's state is read from the loader: this rank's iterator was never created
            raise AttributeError("'NoneType' object has no attribute 'state_dict' (dataloader iterator of "
                                 "this rank was never created)")
        if self.rank in BAD and SCEN == "slow":
            total = 24
            for i in range(1, total + 1):  # the rank spills its replay buffer to slow storage first
                time.sleep(PGTO * 1.6 / total)
                log.info("spilling replay buffer to storage: %d/%d chunks (%.1f MB/s)", i, total, 3.1)
        if self.rank in BAD and SCEN == "kill9":
            with open(os.path.join(os.environ["KILLDIR"], f"kill.{os.getpid()}"), "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(10)
        return {"step": self.step, f"rng_rank{self.rank}": torch.get_rng_state()}

    def load_state_dict(self, sd):
        self.step = sd["step"]
        torch.set_rng_state(sd[f"rng_rank{self.rank}"])


def _mount_private(target, opts):
    """This rank alone sees `target` as a tmpfs with `opts` (a private mount namespace: a node-local disk)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare")
    libc.mount(b"none", b"/", None, 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE
    os.makedirs(target, exist_ok=True)
    flags = 1 if "ro" in opts else 0  # MS_RDONLY
    if libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, opts.replace("ro", "").strip(",").encode() or None):
        raise OSError(ctypes.get_errno(), "mount")


def build(rank, ws):
    hid = HID * 2 if (SCEN == "shape" and rank in BAD) else HID
    model = torch.nn.Sequential(torch.nn.Linear(64, hid), torch.nn.ReLU(), torch.nn.Linear(hid, hid),
                                torch.nn.ReLU(), torch.nn.Linear(hid, 1))
    if SCEN == "missing-key" and rank in BAD:
        model.append(torch.nn.Tanh())
        model.append(torch.nn.Linear(1, 1))  # a head this rank's config adds: not in the checkpoint
    if PAR == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (ws,))
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return model, optim


def states(model, optim, trainer):
    if PAR == "fsdp":
        msd, osd = get_state_dict(model, optim)
        return {"model": msd, "optim": osd, "trainer": trainer}
    net = model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
    return {"model": net.state_dict(), "optim": optim.state_dict(), "trainer": trainer}


def save_full(model, rank, step):
    """Rank 0 gathers the whole model and writes it with torch.save (the `consolidated.pt` pattern)."""
    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    if rank in BAD and SCEN == "gather-oom":
        soft = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize() + (24 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (soft, resource.RLIM_INFINITY))
    full = get_model_state_dict(model, options=opts)
    if rank == 0:
        buf = io.BytesIO()
        torch.save({"model": full, "step": step, "extra": [bytes(8 << 20) for _ in range(6)]}, buf)
        path = os.path.join(CKPT, f"consolidated_step{step}.pt")
        os.makedirs(CKPT, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(buf.getvalue())
        log.info("wrote %s (%d bytes)", path, buf.tell())
    dist.barrier()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=PGTO))
    rank, ws = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    torch.manual_seed(0)
    if rank in BAD and SCEN in ("readonly", "full"):
        _mount_private(CKPT, "ro" if SCEN == "readonly" else "size=96k")
    model, optim = build(rank, ws)
    trainer = TrainerState(rank)
    log.info("model %s, %d parameters, world size %d, checkpoint dir %s", PAR.upper(),
             sum(p.numel() for p in model.parameters()), ws, CKPT)
    if RESUME:
        path = os.path.join(CKPT, RESUME)
        log.info("resuming from %s", path)
        sd = states(model, optim, trainer)
        dcp.load(sd, checkpoint_id=path)
        if PAR == "fsdp":
            set_state_dict(model, optim, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
        else:
            model.load_state_dict(sd["model"])
            optim.load_state_dict(sd["optim"])
        log.info("resumed at step %d", trainer.step)
    if PAR == "ddp":  # wrapped after the checkpoint is loaded into the plain module
        model = torch.nn.parallel.DistributedDataParallel(model)
    pending = None
    g = torch.Generator().manual_seed(rank)
    for step in range(trainer.step + 1, trainer.step + STEPS + 1):
        x = torch.randn(32, 64, generator=g)
        loss = (model(x).squeeze(-1) - x[:, 0]).pow(2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        trainer.step = step
        log.info("step %d loss %.4f", step, loss.item())
        time.sleep(0.2)
        if step not in SAVE_AT:
            continue
        if os.environ.get("FULL") == "1":
            save_full(model, rank, step)
            continue
        if SCEN == "skip" and rank in BAD:
            log.info("step %d: checkpoint skipped on this rank (no improvement in local validation loss)", step)
            continue
        path = os.path.join(CKPT, f"step_{step}")
        log.info("saving checkpoint to %s", path)
        t0 = time.time()
        if os.environ.get("ASYNC") == "1":
            if pending is not None:
                pending.result()
            pending = dcp.async_save(states(model, optim, trainer), checkpoint_id=path)
            log.info("async checkpoint of step %d started", step)
        else:
            dcp.save(states(model, optim, trainer), checkpoint_id=path)
            log.info("saved checkpoint %s in %.2fs", path, time.time() - t0)
    if pending is not None:
        pending.result()
        log.info("last async checkpoint finished")
    dist.barrier()
    log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
