"""Worker of the probe48 generator: one small training loop per parallel style, with one injected fault.

Run under torchrun (gloo, CPU). SCEN picks the style and fault, BAD the culprit rank, STEPS the loop length,
PGTO the process-group timeout in seconds, LOGSTYLE `plain` (no rank in the line) or `tag` (`[rank r/ws]`).
"""
import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

SCEN = os.environ.get("SCEN", "healthy-ddp")
BAD = int(os.environ.get("BAD", "-1"))
STEPS = int(os.environ.get("STEPS", "6"))
PGTO = float(os.environ.get("PGTO", "15"))
STYLE = os.environ.get("LOGSTYLE", "plain")

rank = int(os.environ["RANK"])
ws = int(os.environ["WORLD_SIZE"])


def log(msg):
    if STYLE == "tag":
        print(f"[rank {rank}/{ws}] {msg}", flush=True)
    else:
        print(msg, flush=True)


def bad(step=None, at=2):
    return rank == BAD and (step is None or step == at)


def mlp(d=16):
    return nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))


def run_pipeline(kind):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    torch.manual_seed(0)
    d, batch = 16, 8
    n_mb = 4
    if kind == "mbcount" and rank == BAD:
        n_mb = 2
    stage_mod = nn.Sequential(nn.Linear(d, d), nn.ReLU())

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = stage_mod
            self.step = 0

        def forward(self, x):
            if kind == "crash" and rank == BAD and self.step >= 2 * n_mb:
                raise RuntimeError(f"stage {rank}: activation check failed, "
                                   "got non-finite values in block output")
            self.step += 1
            return self.body(x)

    mod = Stage()
    mb = batch // n_mb
    input_args = None
    if kind == "shape" and rank == BAD:
        input_args = (torch.randn(mb, d + 8),)  # this stage expects a wider input than its neighbour sends
    stage = PipelineStage(mod, rank, ws, torch.device("cpu"), input_args=input_args)
    sched_cls = Schedule1F1B if os.environ.get("SCHED") == "1f1b" else ScheduleGPipe
    sched = sched_cls(stage, n_microbatches=n_mb, loss_fn=nn.MSELoss())
    opt = torch.optim.SGD(mod.parameters(), lr=0.01)
    log(f"pipeline stage {rank} of {ws}: schedule {sched_cls.__name__}, {n_mb} microbatches")
    for step in range(STEPS):
        if kind == "stall" and bad(step, 2):
            log(f"stage {rank}: refreshing shard cache before step {step}")
            time.sleep(PGTO * 4)
        x = torch.randn(batch, d)
        y = torch.randn(batch, d)
        opt.zero_grad()
        if rank == 0:
            sched.step(x)
        elif rank == ws - 1:
            losses = []
            sched.step(target=y, losses=losses)
            log(f"step {step} loss {sum(x.item() for x in losses) / len(losses):.4f}")
        else:
            sched.step()
        opt.step()
        if rank != ws - 1:
            log(f"step {step} done")


def run_tp(kind):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    shape, names = (2, ws // 2), ("dp", "tp")
    if kind == "meshdiff" and rank == BAD:
        shape = (ws // 2, 2)
    if kind == "meshnames" and rank == BAD:
        names = ("tp", "dp")  # this rank lays out the same 2D mesh with its dimensions named the other way
    mesh = init_device_mesh("cpu", shape, mesh_dim_names=names)
    log(f"device mesh {mesh}")
    torch.manual_seed(0)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(16, 32)
            self.down = nn.Linear(32, 16)

        def forward(self, x):
            return self.down(torch.relu(self.up(x)))

    model = parallelize_module(MLP(), mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dp = mesh.get_group("dp")
    for step in range(STEPS):
        torch.manual_seed(100 + step + mesh.get_local_rank("dp"))
        x = torch.randn(4, 16)
        out = model(x)
        loss = out.pow(2).mean()
        loss.backward()
        if kind == "redistribute" and bad(step, 3):
            log(f"step {step}: gathering full weight for inspection")
            w = model.up.weight.full_tensor()
            log(f"full weight norm {w.norm().item():.3f}")
        opt.step()
        opt.zero_grad()
        lt = loss.detach().clone()
        dist.all_reduce(lt, group=dp)
        log(f"step {step} loss {lt.item() / dist.get_world_size(dp):.4f}")


def run_fsdp2(kind):
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    for m in (model[0], model[2]):
        fully_shard(m)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(STEPS):
        torch.manual_seed(step * 10 + rank)
        x = torch.randn(4, 16)
        if kind == "skipfwd" and bad(step, 3):
            log(f"step {step}: empty micro-batch, skipping forward")
            continue
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        log(f"step {step} loss {loss.item():.4f}")


def run_compile(kind):
    torch.manual_seed(0)
    blocks = [m for _ in range(16) for m in (nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64))]
    model = nn.Sequential(*blocks)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    if kind == "oneranks" and rank == BAD:
        log("compiling model with torch.compile(mode='max-autotune')")
        model = torch.compile(model, mode="max-autotune")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        x = torch.randn(8, 64)
        loss = model(x).pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad()
        log(f"step {step} loss {loss.item():.4f}")


def run_p2p(kind):
    buf = torch.zeros(32)
    for step in range(STEPS):
        dst = (rank + 1) % ws
        src = (rank - 1) % ws
        n = 32
        if kind == "wrongpeer" and bad(step, 2):
            dst = (rank + 2) % ws
        if kind == "size" and bad(step, 2):
            n = 48
        send = torch.full((n,), float(rank + step))
        reqs = [dist.isend(send, dst), dist.irecv(buf, src)]
        for r in reqs:
            r.wait()
        log(f"ring step {step}: sent to {dst}, got {buf[0].item():.0f} from {src}")
        dist.barrier()


def run_subgroup(kind):
    half = ws // 2
    ga = dist.new_group(list(range(half)))
    gb = dist.new_group(list(range(half, ws)))
    mine = ga if rank < half else gb
    t = torch.ones(8)
    for step in range(STEPS):
        if kind == "crash" and bad(step, 3):
            name = "A" if rank < half else "B"
            raise ValueError(f"expert block of subgroup {name}: routing table has 0 entries")
        if not (kind == "skip" and bad(step, 3)):
            dist.all_reduce(t, group=mine)
        t = t / t.abs().max()
        g = torch.ones(1)
        dist.all_reduce(g)
        log(f"step {step} subgroup {'A' if rank < half else 'B'} ok, global sum {g.item():.0f}")


def run_a2a(kind):
    for step in range(STEPS):
        ins = [2] * ws
        outs = [2] * ws
        if kind == "splits" and bad(step, 2):
            ins = [3] + [2] * (ws - 2) + [1]
            outs = list(ins)
        inp = torch.arange(sum(ins), dtype=torch.float32) + rank * 100
        out = torch.empty(sum(outs))
        dist.all_to_all_single(out, inp, output_split_sizes=outs, input_split_sizes=ins)
        log(f"step {step} all_to_all ok, received {out.numel()} tokens")


def run_objects(kind):
    for step in range(STEPS):
        meta = {"step": step, "rank": rank, "lr": 0.01}
        if kind == "bcast" and bad(step, 2):
            meta["schedule"] = lambda s: 0.01 * 0.9**s
        objs = [meta if rank == 0 else None]
        if kind == "bcast" or step % 2 == 0:
            dist.broadcast_object_list(objs, src=0)
        mine = {"rank": rank, "seen": step}
        if kind == "gather" and bad(step, 2):
            mine["lock"] = threading.Lock()
        out = [None] * ws
        dist.all_gather_object(out, mine)
        log(f"step {step}: gathered {len(out)} states")


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=PGTO))
    log(f"init done rank {rank} world {ws} scenario {SCEN.split('-')[0]}")
    family, _, kind = SCEN.partition("-")
    fn = {
        "pp": run_pipeline, "tp": run_tp, "fsdp2": run_fsdp2, "compile": run_compile,
        "p2p": run_p2p, "sub": run_subgroup, "a2a": run_a2a, "obj": run_objects,
    }[family]
    fn(kind)
    dist.barrier()
    log("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
