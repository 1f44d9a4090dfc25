"""A small diffusion-shaped denoiser trained under DDP (torchrun, gloo, CPU) with the error handling users
write around it: each step runs in a wrapper that logs the exception (`log.exception`) and re-raises its own
`RuntimeError("step N failed")`; on any failure an emergency checkpoint is saved, which runs a collective of
its own; `destroy_process_group` runs in a `finally` and its error is logged; a SIGTERM handler turns the
launcher's SIGTERM into a traceback; a metrics client floods the log with its own warnings once the job is in
trouble. So after one rank's root fault the OTHER ranks print more, and in their own words.

FAULT on the ranks in BAD at step AT: exc (a ValueError in the noise schedule), kill9 (SIGKILL to itself),
oom (a CPU allocation that cannot be served), skip (skips the loss all_reduce), extra (an extra all_reduce
of the grad norm), shape (the loss all_reduce with a tensor of another size), dlworker (its DataLoader worker
is SIGKILLed), stall (sleeps STALL_S seconds in its own code), none (healthy; the teardown prints harmless
warnings and an `Exception ignored in` traceback). STYLE: logging (asctime, level, rank in the logger name),
print (bare prints, no rank).
"""
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
from torch.utils.data import DataLoader, Dataset, DistributedSampler

rank = int(os.environ["RANK"])
ws = int(os.environ["WORLD_SIZE"])
BAD = {int(x) for x in os.environ.get("BAD", "").split(",") if x}
FAULT = os.environ.get("FAULT", "none")
AT = int(os.environ.get("AT", "3"))
STEPS = int(os.environ.get("STEPS", "6"))
STYLE = os.environ.get("STYLE", "logging")
WORKERS = int(os.environ.get("WORKERS", "0"))
PGT = float(os.environ.get("PGT", "15"))
STALL_S = float(os.environ.get("STALL_S", "45"))
HANDLER = os.environ.get("HANDLER", "1") == "1"
EMERGENCY = os.environ.get("EMERGENCY", "1") == "1"
# MANUAL=1: gradients averaged by hand (one all_reduce of a flat buffer) instead of DDP; used with
# TORCH_DISTRIBUTED_DEBUG=DETAIL, under which constructing DDP on gloo killed every rank with SIGSEGV here
MANUAL = os.environ.get("MANUAL", "0") == "1"
T_STEPS = 1000
bad = rank in BAD

log = logging.getLogger(f"denoise.r{rank}")
metrics_log = logging.getLogger("metrics.client")
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")


def say(msg, *args, level=logging.INFO):
    if STYLE == "print":
        print(msg % args if args else msg, flush=True)
    else:
        log.log(level, msg, *args)


def on_sigterm(signum, frame):
    say("received signal %d, stopping training", signum, level=logging.WARNING)
    raise KeyboardInterrupt(f"terminated by signal {signum}")


class Noisy(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        if FAULT == "dlworker" and bad and info is not None and i % 97 == 5 and time.time() > START + 3:
            os.kill(os.getpid(), signal.SIGKILL)
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g)


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_embed = nn.Embedding(T_STEPS, 64)
        self.net = nn.Sequential(nn.Linear(32 + 64, 128), nn.SiLU(), nn.Linear(128, 32))

    def forward(self, x, t):
        return self.net(torch.cat([x, self.t_embed(t)], dim=-1))


def alphas_for(t):
    if (t >= T_STEPS).any():
        raise ValueError(f"noise schedule index {int(t.max())} out of range for {T_STEPS} timesteps")
    return torch.cos(t.float() / T_STEPS * 1.5707) ** 2


def train_step(model, opt, x, step):
    t = torch.randint(0, T_STEPS, (x.shape[0],))
    if bad and step == AT:
        if FAULT == "exc":
            t = t + T_STEPS // 2 * 3
        elif FAULT == "kill9":
            os.kill(os.getpid(), signal.SIGKILL)
        elif FAULT == "oom":
            _ = torch.empty(1 << 45, dtype=torch.float32)
        elif FAULT == "stall":
            time.sleep(STALL_S)
    a = alphas_for(t).unsqueeze(-1)
    noise = torch.randn_like(x)
    xt = a.sqrt() * x + (1 - a).sqrt() * noise
    loss = nn.functional.mse_loss(model(xt, t), noise)
    opt.zero_grad()
    loss.backward()
    if MANUAL:
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        dist.all_reduce(flat)
        flat /= ws
        off = 0
        for p in model.parameters():
            p.grad.copy_(flat[off:off + p.numel()].reshape(p.shape))
            off += p.numel()
    if bad and step == AT and FAULT == "extra":
        gn = torch.stack([p.grad.norm() for p in model.parameters()]).norm().reshape(1)
        dist.all_reduce(gn)
        say("grad norm %.3f", float(gn))
    opt.step()
    lt = loss.detach().reshape(1)
    if bad and step == AT and FAULT == "shape":
        lt = torch.stack([loss.detach(), loss.detach().sqrt()])
    if not (bad and step == AT and FAULT == "skip"):
        dist.all_reduce(lt)
    return float(lt.sum()) / ws


def emergency_checkpoint(model):
    say("saving emergency checkpoint to ckpt/emergency-r%d.pt", rank, level=logging.WARNING)
    sizes = torch.tensor([float(sum(p.numel() for p in model.parameters()))])
    dist.all_reduce(sizes)   # the shard table every rank writes beside its shard
    torch.save(model.state_dict(), os.devnull)
    say("emergency checkpoint saved")


def metrics_storm(n):
    for i in range(n):
        metrics_log.warning("flush of %d buffered points to the tracker failed (queue full), retry %d/%d",
                            64 * (i + 1), i + 1, n)


def main():
    global START
    START = time.time()
    if HANDLER:
        signal.signal(signal.SIGTERM, on_sigterm)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=PGT))
    say("process group up: rank %d of %d (pid %d)", rank, ws, os.getpid())
    torch.manual_seed(0)
    if MANUAL:
        model = nn.Module()
        model.module = Denoiser()
        model.forward = model.module.forward
        for p in model.module.parameters():
            dist.broadcast(p.data, src=0)
    else:
        model = DDP(Denoiser())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ds = Noisy()
    dl = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds), num_workers=WORKERS,
                    persistent_workers=WORKERS > 0)
    it = iter(dl)
    try:
        for step in range(STEPS):
            try:
                x = next(it)
                loss = train_step(model, opt, x, step)
            except KeyboardInterrupt:
                raise
            except Exception as e:
                log.exception("step %d failed on rank %d", step, rank)
                metrics_storm(6)
                raise RuntimeError(f"training step {step} failed") from e
            say("step %d/%d loss %.4f", step + 1, STEPS, loss)
            time.sleep(0.3)
        say("training done")
        if FAULT == "none":
            warnings.warn("the tracker run was not closed; call tracker.finish() before exit", UserWarning,
                          stacklevel=1)
            metrics_log.error("could not upload run summary: connection refused (offline mode); kept locally")
    except BaseException:
        if EMERGENCY:
            try:
                emergency_checkpoint(model.module)
            except BaseException:
                log.exception("emergency checkpoint failed")
        raise
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            log.exception("destroy_process_group failed")


class _Writer:
    def __del__(self):
        if FAULT == "none" and rank == 0:
            raise OSError(9, "Bad file descriptor")


_w = _Writer()

if __name__ == "__main__":
    main()
