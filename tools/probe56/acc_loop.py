"""A tiny GPT-2 language model trained with an accelerate loop (gloo, CPU) with one injected fault, for probe56.

Environment: FAULT (healthy, uneven, gather, mainonly, crash), FAULT_RANKS (comma list), FAULT_STEP, STEPS,
PG_TIMEOUT (InitProcessGroupKwargs timeout, seconds), DISPATCH / SPLIT (DataLoaderConfiguration
dispatch_batches / split_batches, 0/1; DISPATCH unset leaves accelerate's default, which dispatches an IterableDataset), WARN (1: the framework's harmless warnings). `uneven`: every rank
streams its own shard (an IterableDataset that reads rank-specific files), the fault ranks' shards are short;
`gather`: the fault ranks' eval predictions carry one extra row at gather_for_metrics; `mainonly`: an
evaluation that gathers runs under `if accelerator.is_main_process`. Used by gen.py; nothing here is read by
hanglens.
"""

from __future__ import annotations

import datetime
import faulthandler
import os
import warnings

import torch
from accelerate import Accelerator, DataLoaderConfiguration, InitProcessGroupKwargs
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, IterableDataset
from tqdm.auto import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
RANK = int(os.environ.get("RANK", "0"))
BAD = RANK in FAULT_RANKS
VOCAB = 96
logger = get_logger(__name__)


class ShardStream(IterableDataset):
    """Token blocks from this process's own shard files (rank-dependent, as when each node lists its files)."""

    def __init__(self, blocks):
        self.blocks = blocks

    def __iter__(self):
        g = torch.Generator().manual_seed(100 + RANK)
        for _ in range(self.blocks):
            yield {"input_ids": torch.randint(0, VOCAB, (24,), generator=g)}


def main():
    faulthandler.enable()
    import logging
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        level=logging.INFO)
    dl_cfg = DataLoaderConfiguration(dispatch_batches={"1": True, "0": False}.get(os.environ.get("DISPATCH", "")),  # unset: accelerate dispatches an IterableDataset
                                     split_batches=os.environ.get("SPLIT") == "1")
    pg = InitProcessGroupKwargs(backend="gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "15"))))
    accelerator = Accelerator(cpu=True, dataloader_config=dl_cfg, kwargs_handlers=[pg])
    logger.info(accelerator.state, main_process_only=False)
    set_seed(0)
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(cfg)
    if os.environ.get("WARN") == "1" and accelerator.is_local_main_process:
        warnings.warn("`torch_dtype` is deprecated! Use `dtype` instead!", FutureWarning, stacklevel=1)
        logger.warning("The attention mask and the pad token id were not set. As a consequence, you may observe unexpected behavior. Please pass your input's `attention_mask` to obtain reliable results.")
    # blocks read per optimizer step by each process's stream: the global batch (IterableDatasetShard reads it
    # whole and keeps its slice; split_batches: batch_size is already the global batch)
    split = os.environ.get("SPLIT") == "1"
    bs = 4 * accelerator.num_processes if split else 4
    per_step = bs if split else bs * accelerator.num_processes
    blocks = per_step * (FAULT_STEP - 1 if FAULT == "uneven" and BAD else STEPS)
    train_dl = DataLoader(ShardStream(blocks), batch_size=bs)
    eval_dl = DataLoader(ShardStream(3 * bs), batch_size=bs)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, train_dl, eval_dl = accelerator.prepare(model, opt, train_dl, eval_dl)
    logger.info("***** Running training *****")
    logger.info(f"  Instantaneous batch size per device = {bs}")
    logger.info(f"  Total optimization steps = {STEPS}")
    bar = tqdm(range(STEPS), disable=not accelerator.is_local_main_process)
    step = 0
    model.train()
    for batch in train_dl:
        out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
        accelerator.backward(out.loss)
        opt.step()
        opt.zero_grad()
        step += 1
        bar.update(1)
        if step % 2 == 0:
            accelerator.print(f"step {step}: loss {out.loss.item():.4f}")
        if FAULT == "crash" and BAD and step == FAULT_STEP:
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cpu and meta!")
        if step >= STEPS:
            break
    accelerator.wait_for_everyone()

    def evaluate():
        model.eval()
        losses = []
        for batch in eval_dl:
            with torch.no_grad():
                out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
            loss = out.loss.repeat(batch["input_ids"].shape[0])
            if FAULT == "gather" and BAD:
                loss = torch.cat([loss, loss[:1]])
            losses.append(accelerator.gather_for_metrics(loss))
        return torch.cat(losses).mean().item()

    if FAULT == "mainonly":
        if accelerator.is_main_process:
            accelerator.print(f"eval loss {evaluate():.4f}")
    else:
        accelerator.print(f"eval loss {evaluate():.4f}")
    accelerator.wait_for_everyone()
    accelerator.end_training()
    logger.info("Training finished")


if __name__ == "__main__":
    main()
