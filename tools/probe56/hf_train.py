"""A tiny BERT classifier trained with the Hugging Face Trainer (gloo, CPU) with one injected fault, for
probe56 (real runs of the transformers stack under torchrun).

Environment: FAULT (healthy, cbraise, cbhang, metraise, methang, mpfslow, mpfraise, skipbwd, savefail,
dlkill, memerr, extkill), FAULT_RANKS (comma list), FAULT_STEP, STEPS, PG_TIMEOUT (TrainingArguments
ddp_timeout, seconds), WORKERS (dataloader_num_workers), BASE (a saved tiny BertModel: loading it with a
classification head prints transformers' usual "Some weights ... were not initialized" warning), WARN (1:
more of the framework's harmless warnings). `extkill` only writes the rank's pid to STALL_DIR/kill.<rank>;
gen.py kills it from outside. Used by gen.py; nothing here is read by hanglens.
"""

from __future__ import annotations

import datetime
import faulthandler
import logging
import os
import sys
import signal
import time
import warnings

import numpy as np
import torch
from datasets import Dataset
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainerCallback,
                          TrainingArguments)
from transformers.utils import logging as hf_logging

FAULT = os.environ.get("FAULT", "healthy")
FAULT_RANKS = {int(r) for r in os.environ.get("FAULT_RANKS", "").split(",") if r}
FAULT_STEP = int(os.environ.get("FAULT_STEP", "4"))
STEPS = int(os.environ.get("STEPS", "8"))
WORKERS = int(os.environ.get("WORKERS", "0"))
RANK = int(os.environ.get("RANK", "0"))
STALL_DIR = os.environ.get("STALL_DIR", ".")
BAD = RANK in FAULT_RANKS
VOCAB = 128


def tokenize(batch):
    """The 'tokenizer': hashes words to ids (no downloaded tokenizer)."""
    if BAD and FAULT == "mpfslow":
        time.sleep(1.5)  # a slow tokenizer on a big shard, done by the main process first
    if BAD and FAULT == "mpfraise" and any("\x00" in t for t in batch["text"]):
        raise ValueError("Input text contains a NUL byte; cannot tokenize row of %d characters" % max(len(t) for t in batch["text"]))
    ids = [[2 + (hash(w) % (VOCAB - 2)) for w in t.split()][:32] for t in batch["text"]]
    ids = [x + [0] * (32 - len(x)) for x in ids]
    return {"input_ids": ids, "attention_mask": [[1 if v else 0 for v in x] for x in ids]}


class Rows(torch.utils.data.Dataset):
    """Wraps the mapped dataset; its workers die on the fault rank once the marker exists."""

    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        if BAD and FAULT == "dlkill" and os.path.exists(os.path.join(STALL_DIR, f"fault.{RANK}")):
            if torch.utils.data.get_worker_info() is not None:
                os.kill(os.getpid(), signal.SIGKILL)
        r = self.ds[i]
        return {"input_ids": torch.tensor(r["input_ids"]), "attention_mask": torch.tensor(r["attention_mask"]),
                "labels": torch.tensor(r["label"])}


class FaultCallback(TrainerCallback):
    def on_step_begin(self, args, state, control, **kw):
        if BAD and FAULT == "dlkill" and state.global_step + 1 == FAULT_STEP:
            open(os.path.join(STALL_DIR, f"fault.{RANK}"), "w").close()

    def on_step_end(self, args, state, control, **kw):
        if not BAD or state.global_step != FAULT_STEP:
            return
        if FAULT == "cbraise":
            raise KeyError("early_stopping: metric 'eval_f1' not found in the log history; available: ['loss', 'grad_norm', 'learning_rate', 'epoch']")
        if FAULT == "cbhang":
            time.sleep(600)  # an upload to a model hub mirror that never returns
        if FAULT == "memerr":
            buf = [bytearray(1 << 40)]  # an activation histogram sized from the whole dataset
            print(len(buf))
        if FAULT == "extkill":
            with open(os.path.join(STALL_DIR, f"kill.{RANK}"), "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(60)


def compute_metrics(p):
    preds = np.argmax(p.predictions, -1)
    if BAD and FAULT == "metraise":
        raise ValueError("Found input variables with inconsistent numbers of samples: [%d, %d]" % (len(preds), len(preds) + 3))
    if BAD and FAULT == "methang":
        time.sleep(600)
    return {"accuracy": float((preds == p.label_ids).mean())}


class FaultTrainer(Trainer):
    def training_step(self, model, inputs, num_items_in_batch=None):
        if BAD and FAULT == "skipbwd" and self.state.global_step + 1 >= FAULT_STEP:
            model.train()
            with torch.no_grad():  # "the loss is NaN on this batch, skip its backward"
                loss = self.compute_loss(model, inputs)
            return loss.detach()
        return super().training_step(model, inputs, num_items_in_batch)

    def _save(self, output_dir=None, state_dict=None):
        if FAULT == "savefail" and BAD:
            raise OSError(28, "No space left on device", os.path.join(output_dir or "", "model.safetensors"))
        return super()._save(output_dir, state_dict)


def main():
    faulthandler.enable()
    # the transformers example scripts' logging set-up (examples/pytorch/*/run_*.py)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    log = logging.getLogger("__main__")
    # with use_cpu=True, TrainingArguments does not pass ddp_timeout on (training_args.py _setup_devices), so the
    # script opens the group itself, as users who want a short timeout on CPU do
    torch.distributed.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "15"))))
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
    rng = np.random.default_rng(0)
    n = int(os.environ.get("ROWS", "512"))
    texts = [" ".join(rng.choice(words, size=int(rng.integers(4, 24)))) for _ in range(n)]
    if FAULT == "mpfraise":
        texts[300] = texts[300] + " \x00"
    raw = Dataset.from_dict({"text": texts, "label": [int(len(t) % 2) for t in texts]})
    args = TrainingArguments(
        output_dir=os.path.join(STALL_DIR, "out"), per_device_train_batch_size=4, per_device_eval_batch_size=8,
        max_steps=STEPS, logging_steps=1, learning_rate=5e-4, report_to="none", use_cpu=True,
        ddp_timeout=int(os.environ.get("PG_TIMEOUT", "15")), dataloader_num_workers=WORKERS,
        eval_strategy="steps" if FAULT in ("metraise", "methang") else "no", eval_steps=FAULT_STEP,
        save_strategy="steps" if FAULT == "savefail" or os.environ.get("WARN") == "1" else "no",
        save_steps=FAULT_STEP, disable_tqdm=False, seed=0, log_level="info", log_level_replica="warning")
    level = args.get_process_log_level()
    log.setLevel(level)
    hf_logging.set_verbosity(level)
    hf_logging.enable_default_handler()
    hf_logging.enable_explicit_format()
    log.warning("Process rank: %s, device: %s, n_gpu: %s, distributed training: %s", args.local_rank, args.device, args.n_gpu, args.parallel_mode.value == "distributed")
    log.info("Training/evaluation parameters %s", args.output_dir)
    with args.main_process_first(desc="dataset map pre-processing"):
        ds = raw.map(tokenize, batched=True, batch_size=32, desc="Running tokenizer on dataset")
    base = os.environ.get("BASE")
    if base:
        model = BertForSequenceClassification.from_pretrained(base, num_labels=2, torch_dtype=torch.float32)
    else:
        cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64, num_labels=2)
        model = BertForSequenceClassification(cfg)
    if os.environ.get("WARN") == "1":
        warnings.warn("`resume_download` is deprecated and will be removed in version 1.0.0. Downloads always resume when possible.", FutureWarning, stacklevel=1)
    split = ds.train_test_split(test_size=0.125, seed=0)
    trainer = FaultTrainer(model=model, args=args, train_dataset=Rows(split["train"]), eval_dataset=Rows(split["test"]),
                           compute_metrics=compute_metrics, callbacks=[FaultCallback()])
    trainer.train()
    if FAULT in ("healthy",):
        print(trainer.evaluate())
    if os.environ.get("DESTROY") == "1":
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
