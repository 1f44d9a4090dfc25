"""A small torchrun trainer (gloo, CPU) with an epoch loop, validation, gathered metrics and checkpointing,
where one rank (or a few, BAD) goes wrong around the training step rather than in it (FAULT):

  uneven_val     BAD runs one more validation batch; its per-batch metric all_reduce has no partner
  gather_uneven  BAD's predictions are shorter; dist.all_gather of per-rank tensors without padding
  gather_obj     BAD's result dict holds a lambda; dist.all_gather_object fails to pickle it on BAD
  early_stop     BAD decides early stopping on its own validation loss and leaves the epoch loop
  r0_eval        `if rank == 0: evaluate()` where evaluate all_reduces its metric (BAD must be [0])
  r0_barrier     dist.barrier() inside the rank-0-only checkpoint block (BAD must be [0])
  slow_save      BAD (the saving rank) writes its checkpoint slowly while the others wait in the barrier
  save_fail      BAD's torch.save fails (the checkpoint directory is missing) while the others wait
  exit_early     BAD's shard is shorter in the last epoch: it finishes, destroys its group and exits
  last_partial   drop_last=False: BAD ranks get one more (partial) training batch in the epoch
  accum          BAD computes its gradient-accumulation boundary from its own shard length
  resume         BAD restores a later step from a stale checkpoint and runs fewer steps in the epoch
  join_ok        uneven training shards handled with DDP's join() (healthy)
  pad_ok         uneven predictions padded to the longest before all_gather (healthy)
  slow_eval_ok   BAD's validation is slow but finishes (healthy)
  none           healthy

STYLE: tag (`[rank r] ...` prints), logging (logging with time, `rank r/ws` in the message), plain (prints
without a rank), r0 (only rank 0 prints progress; errors still reach stderr). TIMEOUT: the process group's
timeout in seconds (gloo raises on the waiting ranks when it passes). Under TORCH_DISTRIBUTED_DEBUG=DETAIL the
gradients are averaged by hand (this CPU build segfaults constructing DDP under DETAIL with gloo).
"""
import datetime
import logging
import os
import pathlib
import sys
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
ws = int(os.environ["WORLD_SIZE"])
BAD = {int(x) for x in os.environ.get("BAD", "").split(",") if x}
FAULT = os.environ.get("FAULT", "none")
STYLE = os.environ.get("STYLE", "tag")
EPOCHS = int(os.environ.get("EPOCHS", "3"))
AT = int(os.environ.get("AT", "1"))          # the epoch (0-based) in which the fault strikes
STEPS = int(os.environ.get("STEPS", "6"))
VAL = int(os.environ.get("VAL", "3"))
BS = 16
TIMEOUT = float(os.environ.get("TIMEOUT", "1800"))
DETAIL = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "") == "DETAIL"
CKPT = pathlib.Path(os.environ.get("CKPT", "checkpoints"))

log = logging.getLogger("train")
if STYLE == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stdout)


def say(msg):
    if STYLE == "tag":
        print(f"[rank {rank}] {msg}", flush=True)
    elif STYLE == "logging":
        log.info("rank %d/%d %s", rank, ws, msg)
    elif STYLE == "plain" or (STYLE == "r0" and rank == 0):
        print(msg, flush=True)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(),
                                        torch.nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)


def train_batches(epoch):
    n = STEPS
    if FAULT in ("last_partial", "join_ok") and epoch == AT and rank in BAD:
        n += 1
    if FAULT == "exit_early" and epoch == EPOCHS - 1 and rank in BAD:
        n -= 2
    return n


def average_gradients(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= ws


def train_epoch(epoch, model, net, opt, start=0):
    n = train_batches(epoch)
    accum = 2
    if FAULT == "accum" and epoch == AT and rank in BAD:
        accum = 3       # from its own (shorter-looking) shard length
    say(f"epoch {epoch} train: {n} batches, start at batch {start}")
    for i in range(start, n):
        x = torch.randn(BS if i < STEPS else 5, 32)
        y = torch.randint(0, 4, (x.shape[0],))
        if FAULT == "accum" and epoch == AT:
            boundary = (i + 1) % accum == 0 or i == n - 1
            if DETAIL:
                loss = torch.nn.functional.cross_entropy(model(x), y) / accum
                loss.backward()
                if boundary:
                    average_gradients(net)
            else:
                if boundary:
                    loss = torch.nn.functional.cross_entropy(model(x), y) / accum
                    loss.backward()
                else:
                    with model.no_sync():
                        loss = torch.nn.functional.cross_entropy(model(x), y) / accum
                        loss.backward()
            if boundary:
                opt.step()
                opt.zero_grad()
        else:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            if DETAIL:
                average_gradients(net)
            opt.step()
            opt.zero_grad()
        time.sleep(0.08)
        say(f"epoch {epoch} step {i + 1}/{n} loss {loss.item():.4f}")


def validate(epoch, net):
    """Per-batch synchronised metric (dist_sync_on_step style), then the predictions gathered for AUROC."""
    net.eval()
    n = VAL + (1 if FAULT == "uneven_val" and epoch == AT and rank in BAD else 0)
    if FAULT == "slow_eval_ok" and rank in BAD:
        time.sleep(4.0)
    say(f"epoch {epoch} validation: {n} batches")
    total = torch.zeros(2)
    preds = []
    with torch.no_grad():
        for b in range(n):
            x = torch.randn(BS, 32)
            out = net(x)
            batch = torch.tensor([out.pow(2).mean().item() * BS, float(BS)])
            dist.all_reduce(batch)
            total += batch
            preds.append(out.argmax(1).float())
            say(f"epoch {epoch} val batch {b + 1}/{n} running loss {total[0] / total[1]:.4f}")
    p = torch.cat(preds)
    if FAULT in ("gather_uneven", "pad_ok") and epoch == AT and rank in BAD:
        p = p[:-7]       # its last validation batch was a partial one
    if FAULT == "pad_ok":
        n_local = torch.tensor([p.numel()])
        dist.all_reduce(n_local, op=dist.ReduceOp.MAX)
        p = torch.cat([p, torch.full((int(n_local) - p.numel(),), -1.0)])
    gathered = [torch.zeros_like(p) for _ in range(ws)]
    dist.all_gather(gathered, p)
    acc = torch.cat(gathered).ge(0).float().mean().item()
    result = {"epoch": epoch, "rank": rank, "loss": float(total[0] / total[1])}
    if FAULT == "gather_obj" and epoch == AT and rank in BAD:
        result["threshold_fn"] = lambda v: v > 0.5
    results = [None] * ws
    dist.all_gather_object(results, result)
    net.train()
    val_loss = float(total[0] / total[1])
    say(f"epoch {epoch} validation done: loss {val_loss:.4f} acc {acc:.3f}")
    return val_loss


def evaluate_rank0(epoch, net):
    net.eval()
    with torch.no_grad():
        m = net(torch.randn(BS, 32)).pow(2).mean().reshape(1)
        dist.all_reduce(m)          # the metric helper syncs across ranks
    net.train()
    say(f"epoch {epoch} extra evaluation on the main rank: {m.item() / ws:.4f}")


def checkpoint(epoch, net, opt):
    path = CKPT / f"epoch{epoch}.pt"
    if FAULT == "save_fail" and epoch == AT:
        path = CKPT / "run-missing" / f"epoch{epoch}.pt"
    saver = min(BAD) if FAULT in ("slow_save", "save_fail") and BAD else 0
    if rank == saver:
        say(f"saving checkpoint to {path}")
        if FAULT == "slow_save" and epoch == AT:
            time.sleep(3600)     # a network filesystem that stopped answering
        torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, path)
        say(f"checkpoint saved ({epoch})")
        if FAULT == "r0_barrier" and epoch == AT:
            dist.barrier()       # "make sure everyone sees the file" - only rank 0 runs this
            say("all ranks synced after save")
    if not (FAULT == "r0_barrier" and epoch >= AT):
        dist.barrier()


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    CKPT.mkdir(exist_ok=True)
    say(f"process group ready (world {ws}, timeout {TIMEOUT:.0f} s, detail={DETAIL})")
    torch.manual_seed(1234)
    net = Net()
    if DETAIL:
        for p in net.parameters():
            dist.broadcast(p.data, src=0)
        model = net
    else:
        model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    torch.manual_seed(100 + rank)
    best = None
    start_epoch, start_step = 0, 0
    if FAULT == "resume":
        start_epoch, start_step = AT, 2
        if rank in BAD:
            start_step = 4       # it found a newer local checkpoint than the one the others loaded
        say(f"resumed from checkpoint: epoch {start_epoch} step {start_step}")
    for epoch in range(start_epoch, EPOCHS):
        if FAULT == "join_ok" and not DETAIL:
            with model.join():
                train_epoch(epoch, model, net, opt)
        else:
            train_epoch(epoch, model, net, opt, start_step if epoch == start_epoch else 0)
        val_loss = validate(epoch, net)
        if rank == 0 and FAULT == "r0_eval" and epoch == AT:
            evaluate_rank0(epoch, net)
        checkpoint(epoch, net, opt)
        if FAULT == "early_stop" and epoch == AT and rank in BAD:
            say(f"early stopping: validation loss {val_loss:.4f} did not improve on {best or val_loss:.4f}")
            break
        best = val_loss if best is None else min(best, val_loss)
    say("training finished")
    if FAULT == "exit_early" and rank in BAD:
        dist.destroy_process_group()
        say("process group destroyed, exiting")
        return
    dist.barrier()
    dist.destroy_process_group()
    say("done")


if __name__ == "__main__":
    main()
