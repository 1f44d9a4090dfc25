# ruff: noqa: E501
# (a probe generator kept for provenance)
"""probe57 training script: a tiny regression model trained by PyTorch Lightning's Trainer (DDP, gloo, CPU),
with one fault injected where Lightning owns the code path (FAULT, FAULT_RANKS from gen.py).

Run either as one `python train.py` (Lightning's own launcher starts the other ranks: DEVICES) or under
torchrun (Lightning reads the torchelastic environment). Faults:
synclog    `self.log(..., sync_dist=True)` inside an `if batch_idx % k == 0` whose k differs by rank
valend     `on_validation_epoch_end` all_gathers per-class counts on the fault ranks only
r0coll     a `@rank_zero_only` summary that calls `self.all_gather`
unevenval  per-rank validation shards of unequal length (use_distributed_sampler=False), val loss logged per step with sync_dist
localstop  a hand-written early stop: `self.trainer.should_stop = True` from the rank's own metric
earlystop  Lightning's EarlyStopping on a metric that differs by rank (Lightning reduces the decision: healthy)
ckptpickle an unpicklable entry added in `on_save_checkpoint`: only rank 0 writes, so only rank 0 fails
stepnone   `training_step` returns None on the fault ranks for one batch
setupexc   `setup()` opens a per-rank shard that is missing on the fault ranks
prepdata   `prepare_data` (local rank 0 only) raises
dlworker   a DataLoader worker of the fault rank is SIGKILLed while loading
kill9      the fault rank writes its pid to kill.<rank> and gen.py SIGKILLs it
stall      the fault rank sleeps well past the process-group timeout inside training_step
healthy    nothing (WARN=1 adds the usual warnings: few workers, epoch-level log without sync_dist)
"""

import os
import signal
import time
from datetime import timedelta

import lightning as L
import torch
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, RichProgressBar, TQDMProgressBar
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.utilities import rank_zero_only
from torch import nn
from torch.utils.data import DataLoader, Dataset

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "").split(",") if r}
JOB_DIR = os.environ.get("JOB_DIR", ".")
PG_TIMEOUT = int(os.environ.get("PG_TIMEOUT", "30"))
WORKERS = int(os.environ.get("WORKERS", "0"))
EPOCHS = int(os.environ.get("EPOCHS", "3"))


def my_rank():
    return int(os.environ.get("RANK", os.environ.get("GLOBAL_RANK", os.environ.get("LOCAL_RANK", "0"))))


class Points(Dataset):
    def __init__(self, n, seed, rank=0, kill_at=None):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 16, generator=g)
        self.y = self.x[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
        self.rank = rank
        self.kill_at = kill_at
        self.served = 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.kill_at is not None and torch.utils.data.get_worker_info() is not None:
            self.served += 1   # this worker's own count
            if self.served == self.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        return self.x[i], self.y[i]


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        self.best = None

    def fault_here(self, name):
        return name == FAULT and self.global_rank in FAULT_RANKS

    def prepare_data(self):
        if FAULT == "prepdata":
            cache = os.path.join(JOB_DIR, "cache", "points_v2.pt")
            with open(cache, "rb") as fh:
                fh.read()

    def setup(self, stage):
        if self.fault_here("setupexc"):
            shard = os.path.join(JOB_DIR, "shards", f"train-{self.global_rank:05d}.pt")
            with open(shard, "rb") as fh:
                fh.read()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        k = 2 if self.fault_here("synclog") else 4
        if batch_idx % k == 0 and batch_idx > 0 and self.current_epoch >= 1:
            self.log("grad_scale", loss.detach() * 0 + 1.0, sync_dist=True, on_step=True, on_epoch=False)
        if self.fault_here("stepnone") and self.current_epoch == 1 and batch_idx == 3:
            return None
        if self.fault_here("stall") and self.current_epoch == 1 and batch_idx == 2:
            time.sleep(PG_TIMEOUT * 2.5)
        if self.fault_here("kill9") and self.current_epoch == 1 and batch_idx == 3:
            with open(os.path.join(JOB_DIR, f"kill.{self.global_rank}"), "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(30)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        if FAULT == "unevenval":
            self.log("val_loss", loss, sync_dist=True, on_step=True, on_epoch=True)
        elif FAULT in ("earlystop", "localstop"):
            # the metric differs by rank on purpose (no sync_dist)
            self.log("val_loss", loss + 0.5 * self.global_rank * self.current_epoch)
        else:
            self.log("val_loss", loss, sync_dist=os.environ.get("WARN") != "1")
        return loss

    def on_validation_epoch_end(self):
        if self.fault_here("valend") and self.current_epoch == 1:
            counts = torch.tensor([float(self.global_rank), 1.0])
            gathered = self.all_gather(counts)
            print(f"class counts: {gathered.tolist()}", flush=True)
        if FAULT == "localstop" and self.global_rank in FAULT_RANKS:
            current = float(self.trainer.callback_metrics["val_loss"])
            if self.best is not None and current > self.best:
                print(f"val_loss {current:.3f} did not improve on {self.best:.3f}; stopping", flush=True)
                self.trainer.should_stop = True
            self.best = current if self.best is None else min(self.best, current)
        if FAULT == "r0coll" and self.current_epoch == 1:
            self.write_summary()

    @rank_zero_only
    def write_summary(self):
        norms = self.all_gather(torch.stack([p.norm() for p in self.parameters()]))
        print(f"parameter norms: {norms.tolist()}", flush=True)

    def on_save_checkpoint(self, checkpoint):
        if FAULT == "ckptpickle":
            checkpoint["lr_schedule_fn"] = lambda step: 0.1 ** (step // 100)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class Data(L.LightningDataModule):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def train_dataloader(self):
        kill_at = 100 if (FAULT == "dlworker" and self.rank in FAULT_RANKS) else None
        return DataLoader(Points(512, 0, self.rank, kill_at), batch_size=16, num_workers=WORKERS,
                          persistent_workers=WORKERS > 0)

    def val_dataloader(self):
        if FAULT == "unevenval":
            n = 40 if self.rank in FAULT_RANKS else 32   # this rank's own shard, cut by hand
            return DataLoader(Points(n, 100 + self.rank), batch_size=8)
        return DataLoader(Points(64, 1), batch_size=16)


def main():
    L.seed_everything(0)
    devices = int(os.environ.get("DEVICES", os.environ.get("LOCAL_WORLD_SIZE", "1")))
    nodes = int(os.environ.get("NUM_NODES", "1"))
    callbacks = [RichProgressBar() if os.environ.get("BAR") == "rich" else TQDMProgressBar(refresh_rate=int(os.environ.get("REFRESH", "1")))]
    if FAULT == "earlystop":
        callbacks.append(EarlyStopping(monitor="val_loss", patience=0, min_delta=0.0))
    if FAULT == "ckptpickle" or os.environ.get("CKPT") == "1":
        callbacks.append(ModelCheckpoint(dirpath=os.path.join(JOB_DIR, "checkpoints"), monitor="val_loss", save_top_k=1))
    trainer = L.Trainer(
        accelerator="cpu", devices=devices, num_nodes=nodes,
        strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=PG_TIMEOUT)),
        max_epochs=EPOCHS, limit_train_batches=8, default_root_dir=JOB_DIR, callbacks=callbacks,
        enable_checkpointing=bool(any(isinstance(c, ModelCheckpoint) for c in callbacks)),
        use_distributed_sampler=FAULT != "unevenval", log_every_n_steps=2,
    )
    model = Regressor()
    trainer.fit(model, datamodule=Data(my_rank()))
    if trainer.is_global_zero:
        print(f"done: {trainer.callback_metrics.get('val_loss')}", flush=True)


if __name__ == "__main__":
    main()
