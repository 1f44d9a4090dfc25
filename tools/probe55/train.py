# ruff: noqa: E501, UP031
# (a probe generator kept for provenance: log calls written the way users write them)
"""A small speech (CTC) model on gloo (CPU) with variable-length batches, Trainer-like logging and a
progress bar, with one injected fault, for probe55 (real runs cut into pasted excerpts).

Environment: FAULT (healthy, skip, shape, bcast, evalstall, stall, dlkill, dlraise, dlstall, crash, abort,
extkill, unused, memerr), FAULT_RANKS (comma list), FAULT_STEP, STEPS, PG_TIMEOUT (seconds), WORKERS
(DataLoader workers), DL_TIMEOUT (0 = none), WARN (1: the harmless warnings of a healthy run), NODDP (1:
gradients averaged by hand with all_reduce; DDP's constructor segfaults under TORCH_DISTRIBUTED_DEBUG=DETAIL
in the torch 2.13 CPU build used). `extkill` only writes the rank's pid to STALL_DIR/kill.<rank>; gen.py
kills it from outside. Used by gen.py; nothing here is read by hanglens.
"""

from __future__ import annotations

import datetime
import faulthandler
import json
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
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "1").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
WORKERS = int(os.environ.get("WORKERS", "0"))
DL_TIMEOUT = float(os.environ.get("DL_TIMEOUT", "0"))
RANK = int(os.environ.get("RANK", "0"))
STALL_DIR = os.environ.get("STALL_DIR", ".")
VOCAB = 29

logging.basicConfig(format="%(levelname)s:%(name)s:%(message)s", level=logging.INFO)
log = logging.getLogger("asr.trainer")


class Utterances(Dataset):
    """Fake log-mel features of 20-60 frames with 4-12 label ids each (variable length)."""

    def __init__(self, n=384):
        g = torch.Generator().manual_seed(1)
        self.lens = torch.randint(20, 61, (n,), generator=g)
        self.tlens = torch.randint(4, 13, (n,), generator=g)
        self.seed = 1

    def __len__(self):
        return len(self.lens)

    def __getitem__(self, i):
        marker = os.path.join(STALL_DIR, f"fault.{RANK}")
        if RANK in FAULT_RANKS and os.path.exists(marker):
            if FAULT == "dlstall":
                time.sleep(120)  # an NFS read of the audio shard that never returns
            if FAULT == "dlraise":
                raise RuntimeError("Error opening '/home/user/corpus/train-clean/%04d/%d.flac': Format not recognised." % (i // 10, i))
        g = torch.Generator().manual_seed(i)
        feats = torch.randn(int(self.lens[i]), 40, generator=g)
        labels = torch.randint(1, VOCAB, (int(self.tlens[i]),), generator=g)
        return feats, labels


def collate(batch):
    feats = nn.utils.rnn.pad_sequence([b[0] for b in batch], batch_first=True)
    labels = torch.cat([b[1] for b in batch])
    return feats, labels, torch.tensor([len(b[0]) for b in batch]), torch.tensor([len(b[1]) for b in batch])


class TinyCTC(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(40, 48)
        self.rnn = nn.GRU(48, 48, batch_first=True)
        self.lm_head = nn.Linear(48, VOCAB)
        self.speaker_head = nn.Linear(48, 8)  # only batches with speaker labels use it

    def forward(self, x, with_speaker=True):
        h, _ = self.rnn(torch.relu(self.proj(x)))
        logits = self.lm_head(h)
        spk = self.speaker_head(h.mean(1)) if with_speaker else None
        return logits, spk


def bar(step, total, t0):
    """A tqdm-like bar on stderr (rank 0 only), carriage returns included as tqdm writes them."""
    done = int(20 * step / total)
    el = time.time() - t0
    rate = step / el if el else 0.0
    sys.stderr.write("\r%3d%%|%s%s| %d/%d [%02d:%02d<00:00, %.2fit/s]" % (100 * step // total, "#" * done, " " * (20 - done), step, total, int(el) // 60, int(el) % 60, rate))
    sys.stderr.flush()


def main():
    faulthandler.enable()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "20"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("process rank %d of %d, pid %d, device cpu", rank, world, os.getpid())
    torch.manual_seed(0)
    noddp = os.environ.get("NODDP") == "1"
    model = TinyCTC() if noddp else DDP(TinyCTC(), find_unused_parameters=os.environ.get("WARN") == "1")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ctc = nn.CTCLoss(zero_infinity=True)
    ds = Utterances()
    dl = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, world, rank), num_workers=WORKERS,
                    collate_fn=collate, timeout=DL_TIMEOUT if WORKERS else 0)
    if rank == 0:
        print("***** Running training *****")
        print("  Num examples = %d" % len(ds))
        print("  Num Epochs = 1")
        print("  Instantaneous batch size per device = 8")
        print("  Total train batch size (w. parallel, distributed) = %d" % (8 * world))
        print("  Total optimization steps = %d" % STEPS, flush=True)
        if os.environ.get("WARN") == "1":
            warnings.warn("`feature_extractor.sampling_rate` is not set, assuming 16000 Hz; pass it explicitly to silence this warning", UserWarning, stacklevel=1)
            log.warning("Some weights of TinyCTC were newly initialized: ['lm_head.bias', 'lm_head.weight']. You should probably train this model on a down-stream task.")
    it = iter(dl)
    bad = rank in FAULT_RANKS
    t0 = time.time()
    for step in range(1, STEPS + 1):
        here = bad and step == FAULT_STEP
        if here and FAULT in ("dlstall", "dlraise"):
            open(os.path.join(STALL_DIR, f"fault.{rank}"), "w").close()
            it = iter(dl)
        if here and FAULT == "dlkill":
            os.kill(it._workers[0].pid, signal.SIGKILL)
            time.sleep(0.5)
        if here and FAULT == "abort":
            log.error("rank %d: decoder state corrupted, aborting", rank)
            os.abort()
        if here and FAULT == "extkill":
            with open(os.path.join(STALL_DIR, f"kill.{rank}"), "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(60)
        feats, labels, flens, tlens = next(it)
        if here and FAULT == "crash":
            raise ValueError("Label id %d out of range for vocabulary of size %d (utterance lengths %s)" % (VOCAB + 2, VOCAB, flens.tolist()))
        if here and FAULT == "memerr":
            lattice = [bytearray(1 << 40)]  # a decoding lattice sized from a corrupt length field
            print(len(lattice))
        logits, spk = model(feats, with_speaker=not (bad and FAULT == "unused" and step >= FAULT_STEP))
        lp = logits.log_softmax(-1).transpose(0, 1)
        loss = ctc(lp, labels, flens, tlens)
        if spk is not None:
            loss = loss + 0.01 * spk.pow(2).mean()
        if here and FAULT == "skip" and loss.item() > -1:
            log.warning("rank %d: skipping batch at step %d, target longer than input after subsampling", rank, step)
            continue
        opt.zero_grad()
        loss.backward()
        if noddp:
            for p in model.parameters():
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
                p.grad /= world
        gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0))
        opt.step()
        if here and FAULT == "stall":
            log.info("rank %d: syncing checkpoint-%d to /home/user/ckpt", rank, step)
            time.sleep(90)
        if here and FAULT == "evalstall":
            log.info("***** Running Evaluation (computing WER on dev-clean) *****")
            time.sleep(90)
        stats = torch.tensor([loss.item(), float(flens.sum())] + ([float(flens.max())] if here and FAULT == "shape" else []))
        if here and FAULT == "bcast":
            dist.broadcast(stats, src=0)
        else:
            dist.all_reduce(stats)
        if rank == 0:
            bar(step, STEPS, t0)
            if step % 2 == 0:
                sys.stderr.write("\n")
                print(json.dumps({"loss": round(stats[0].item() / world, 4), "grad_norm": round(gn, 3), "learning_rate": 3e-4, "epoch": round(step / STEPS, 2)}).replace('"', "'"), flush=True)
        time.sleep(0.2)
    dist.barrier()
    if rank == 0:
        sys.stderr.write("\n")
        print("{'train_runtime': %.2f, 'train_samples_per_second': %.1f, 'epoch': 1.0}" % (time.time() - t0, STEPS * 8 * world / (time.time() - t0)), flush=True)
    log.info("rank %d: training completed", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
