"""Read the lines that say where a job was in its life when it went quiet, and how it was stopped from
outside: the launcher told to shut down, a scheduler cancelling the job, a phase starting (checkpoint,
validation, data preparation).

Example (torch 2.5+, envelope already stripped): `Received 15 death signal, shutting down workers`
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, QuietTexts, to_int

# torch/distributed/elastic/agent/server/api.py `run`: `Received {e.sigval} death signal, shutting down
# workers` (failure-signatures.md section 17.4; log-formats.md section 3.5). `sigval` prints as a number
# or as `Signals.SIGTERM` / `<Signals.SIGTERM: 15>` depending on the release.
DEATH_SIGNAL_RE = re.compile(
    r"Received (?:<?Signals\.(?P<name>SIG[A-Z0-9]{2,8})(?::[ ]?\d{1,3}>)?|(?P<num>\d{1,3})) death signal"
)
# Slurm's slurmstepd when the job or step is cancelled (scancel, time limit, preemption): `*** JOB <id> ON
# <host> CANCELLED AT <time> [DUE TO <reason>] ***` (failure-signatures.md section 16 item 6).
SLURM_CANCEL_RE = re.compile(
    r"\*\*\* (?P<what>JOB|STEP) (?P<job>\d{1,20}(?:\.\w{1,20})?) ON (?P<host>[\w.-]{1,255}) CANCELLED AT "
    r"(?P<at>\S{1,40})(?: DUE TO (?P<reason>[A-Z][A-Z ]{0,40}?))?(?: \*\*\*|$)"
)
# A phase of the training loop where rank-0-only code and collectives meet (section 16 item 1: "last phase
# line"): checkpoint save/load, evaluation/validation, data preparation. Words only, nothing unbounded.
PHASE_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("checkpoint_save", re.compile(
        r"(?i)\b(?:sav(?:e|ed|ing)|writ(?:e|ing)|stor(?:e|ing))\b[ \w.:-]{0,40}?\bcheckpoint"
        r"|\bcheckpoint\b[ \w.:-]{0,20}?\b(?:sav(?:e|ed|ing)|written)\b")),
    ("checkpoint_load", re.compile(
        r"(?i)\b(?:load(?:ing|ed)?|restor(?:e|ed|ing)|resum(?:e|ed|ing))\b[ \w.:-]{0,40}?\bcheckpoint"
        r"|\bcheckpoint\b[ \w.:-]{0,20}?\b(?:load(?:ed|ing)?|restored)\b")),
    # Not a word glued after a slash: a path (`/data/validation/`) or c10d's own `TCP client failed to
    # connect/validate to host` (TCPStore.cpp, 2.4+; log-formats.md section 3.7), which is a store line.
    ("validation", re.compile(
        r"(?i)(?<![\w/])(?:validat(?:e|ing|ion)|evaluat(?:e|ing|ion)|running eval(?:uation)?|eval(?:uation)? "
        r"(?:loop|step|epoch|start|begin)|test(?:ing)? (?:loop|epoch))(?![\w])")),
    # Building an index or a cache is data preparation too (section 15, "cache building"; Megatron-LM
    # megatron/core/datasets/gpt_dataset.py builds and saves its document/sample index maps on one rank
    # first): `building the indices on rank 0`, `rebuilding document index cache`.
    ("data_prep", re.compile(
        r"(?i)(?<![\w])(?:tokeniz(?:e|er|ers|ing|ation)|preprocess(?:ing)?|building (?:the )?dataset|"
        r"loading (?:the )?dataset|caching (?:the )?dataset|"
        r"(?:re)?build(?:ing)? (?:the |a )?(?:[\w-]{1,30} ){0,3}?(?:index|indices|index maps?|caches?))"
        r"(?![\w])")),
    # TorchDynamo recompiling a frame whose guards failed (a new input shape, a changed Python value):
    # torch/_dynamo/guards.py `get_and_maybe_log_recompilation_reasons` logs `Recompiling function <name> in
    # <file>:<line>` under TORCH_LOGS=recompiles (or recompiles_verbose) before it traces and compiles the
    # frame again, which takes seconds on the host per recompile (inductor) while the rank's peers wait in
    # the step's collectives.
    ("compile", re.compile(r"\bRecompiling function [\w<>.]{1,120} in \S")),
)
# The training script saying its run is over (section 16 item 1, the last line a rank printed): generic
# `Training complete(d)` / `finished training`, HF transformers' Trainer `Training completed. Do not forget
# to share your model ...` (trainer.py), Lightning's fit loop `` `Trainer.fit` stopped: `max_epochs=N`
# reached.`` (fit_loop.py). A stop from outside after it interrupts an idle or exiting job, not a hang.
FINISHED_RE = re.compile(
    r"(?i)(?<![\w-])training (?:is |has )?(?:complete|completed|finished|done)(?![\w-])"
    r"|(?<![\w-])(?:finished|completed|done with) (?:the )?training(?![\w-])"
    r"|`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d{1,12}` reached"
    # A script's own last line giving the run's duration: `done in 41s`, `All done in 3.2 min`. The whole
    # line only: `epoch 3 done in 12s` is an epoch, not the run.
    r"|^(?:\[?rank ?\d{1,7}\]?:? )?(?:all |job |run |training )?done in \d{1,9}(?:\.\d{1,3})? ?"
    r"(?:s|secs?|seconds|m|mins?|minutes|h|hours?)\.?$"
)
FINISHED_TRIGGERS = ("raining", "Trainer.fit", "one in ")
# A rank's own statement that its training loop is over while the run goes on (final evaluation, save, exit):
# `training loop finished at iteration 36`, `exiting the train loop after step 80`, `data iterator
# exhausted at step 12`, `ran out of batches`. Uneven data shows this way (failure-signatures.md section 1,
# "uneven number of batches per rank": the rank whose data runs out leaves the loop early and its peers
# wait in the collectives of their remaining steps). The step it names, when it names one, is kept.
LOOP_END_RE = re.compile(
    r"(?i)(?<![\w-])(?:training|train|main) loop (?:has |is )?"
    r"(?:finished|ended|done|exited|completed?|over)(?![\w-])"
    r"|(?<![\w-])(?:exit(?:s|ed|ing)?|leav(?:e|es|ing)|left|end(?:ed)? of) (?:the )?(?:training|train) loop"
    r"(?![\w-])"
    r"|(?<![\w-])ran out of (?:data|batches|samples)(?![\w-])"
    r"|(?<![\w-])(?:data ?loader|data|data iterator|iterator|dataset|shard) (?:is |was |has been )?exhausted"
    r"(?![\w-])"
)
LOOP_END_STEP_RE = re.compile(r"(?i)\b(?:at|after) (?:iteration|iter|step|batch) (?P<step>\d{1,12})\b")
LOOP_END_TRIGGERS = (" loop", "ran out of", "xhausted")
# A phase that reports how long it took once it is over: `elapsed time to build and save doc-idx mapping
# (seconds): 702.55` (Megatron-LM's dataset index builders, megatron/core/datasets/gpt_dataset.py, print
# `elapsed time to build and save <what> (seconds): <s>`), `elapsed time for <what> (seconds): <s>`. A
# phase that took longer than the timeout its peers waited with is what they waited for
# (failure-signatures.md section 15).
PHASE_TOOK_RE = re.compile(
    r"(?i)\belapsed time (?:to|for) (?P<what>[\w ,/.-]{1,120}?) \((?:seconds|secs?|s)\) ?: ?"
    r"(?P<secs>\d{1,9})(?:\.\d{1,9})?\b"
)
PHASE_TOOK_TRIGGERS = ("lapsed time",)
# A rank's own log saying it left out a synchronisation this time: `no valid samples; skipping metric sync`,
# `skipped all_gather of predictions`, `barrier skipped`. Data-dependent branches that skip a collective on
# one rank are a typical cause of divergence (failure-signatures.md section 1, "What it is": skip a batch on
# NaN/empty input), and such a line is that rank's own statement that it left the others' path. Only a
# skip of a communication word counts (`skipping batch 7`, `skipped step 3` are not; a bare `reduce` after
# a space is torch.distributed.reduce or a metric reduce across ranks, `reduce_lr` and an option value
# `skip-reduce` are not); model averaging is one (torch/distributed/algorithms/model_averaging/averagers.py:
# `average_parameters` all-reduces the parameters), and so is a distributed evaluation (`skipping eval`,
# `validation skipped`: an evaluation section gathers or reduces its metrics across ranks, section 1's
# "rank-conditional code that contains a collective ... metric all_reduce"; not `skipping eval data` of a
# dataset's own split). So is a checkpoint save (`skipping checkpoint`, `not saving`, `save skipped`): a
# sharded or distributed save is a collective every rank calls (torch.distributed.checkpoint.save plans
# with `reduce_scatter` and writes with `all_reduce` on every rank, torch/distributed/checkpoint/
# state_dict_saver.py `_save_state_dict`; get_state_dict gathers FSDP's shards; a save that ends in
# `dist.barrier()`), and section 1 names checkpoint saving among the rank-conditional code that hangs; not a
# skipped checkpoint load, restore or resume (`skipping checkpoint loading`), which is start-up.
SYNC_SKIPPED_RE = re.compile(
    r"(?i)\bskip(?:s|ped|ping)?\b[ \w.:'`-]{0,40}?\b(?:sync(?:hroni[sz](?:e|ation|ing))?"
    r"|all[_ -]?gather(?:_object)?|gather(?:_object)?|all[_ -]?reduce|reduce[_ -]scatter|(?<=\s)reduce"
    r"|broadcast(?:_object_list)?|barrier|collectives?|(?:model|parameter|param|weight)s? averaging)\b"
    r"|\bskip(?:s|ped|ping)? (?:the |this |its )?(?:eval(?:uation)?|validation)\b"
    r"(?! (?:data|dataset|split|set)s?\b)"
    r"|\b(?:sync(?:hroni[sz]ation)?|all[_ -]?gather(?:_object)?|all[_ -]?reduce|reduce|barrier|collectives?"
    r"|eval(?:uation)?|validation|checkpoint(?:ing)?|save) (?:is |was |are |were )?skipped\b"
    r"|\bskip(?:s|ped|ping)? (?:the |this )?(?:checkpoint(?:ing)?|save)\b"
    r"(?! (?:load|loading|restore|resume)\b)"
    r"|\bnot (?:saving|checkpointing)\b"
)
SYNC_SKIPPED_TRIGGERS = ("skip", "Skip", "SKIP", "ot saving", "OT SAVING", "ot checkpointing")
# A rank's own log saying it dropped a training batch (or that batch's forward/backward) this time:
# `non-finite pixels in batch, skipping it`, `skipping this micro-batch`, `skipping backward`. Under DDP/FSDP
# the collectives run inside forward and backward (DDP's gradient all_reduce, FSDP's all-gather and
# reduce-scatter), so a rank that drops a batch the others train on issues that step's collectives fewer
# times (failure-signatures.md section 1: "data-dependent branches (skip a batch on NaN/empty input ...)").
# Not `skipped step` (an optimizer step skipped on overflow: AMP's GradScaler and DeepSpeed decide it from an
# all-reduced flag, on every rank alike) nor a batch index read from a file (`skipping batch 7` of a resumed
# run's data-skip): only the batch at hand, also when the message ends on the verb (`blank image in batch,
# skipping`: what it skips is the batch the reason was found in), and when the batch is named by the step
# it was drawn at or given a reason (`skipping batch at step 4, target longer than input`, `skipped batch due
# to NaN loss`): a resume's data-skip counts batches and names no step of the loop.
BATCH_SKIPPED_RE = re.compile(
    r"(?i)\bskip(?:s|ped|ping)? (?:this|the current|that) (?:micro[- ]?)?batch\b"
    r"|\b(?:micro[- ]?)?batch\b[^.;:]{0,60}?[,;:] ?(?:skip(?:ping|ped)|dropp(?:ing|ed)) it\b"
    r"|\b(?:in|from) (?:the |this )?(?:micro[- ]?)?batch[,;:] ?(?:skip(?:ping|ped)|dropp(?:ing|ed))"
    r"\s*[.!]?\s*$"
    r"|\bskip(?:s|ped|ping)? (?:the )?(?:micro[- ]?)?batch (?:at|in|on) (?:global )?(?:step|iter(?:ation)?)"
    r" \d"
    r"|\bskip(?:s|ped|ping)? (?:the )?(?:micro[- ]?)?batch (?:due to|because|since)\b"
    r"|\bskip(?:s|ped|ping)? (?:the )?(?:forward|backward)(?: pass)?(?: for this (?:micro[- ]?)?batch)?\b"
    r"(?! (?:send|recv|to|from)\b)"
)
# The banner every process of a transformers example script prints at WARNING (examples/pytorch/*/run_*.py:
# `logger.warning(f"Process rank: {training_args.local_rank}, device: ..., n_gpu: ..., distributed training:
# ...")`): WARNING because those scripts set `log_level = training_args.get_process_log_level()`, and a
# replica logs only at `log_level_replica` (warning by default; TrainingArguments.get_process_log_level,
# `should_log` = local process zero). Each process states its local rank; with two or more of them in one
# unprefixed console, the INFO lines of the same format there are the main process's alone.
# The line every process prints in the torchvision reference scripts' init_distributed_mode
# (references/classification/utils.py: `print(f"| distributed init (rank {args.rank}): {args.dist_url}",
# flush=True)`, before setup_for_distributed silences every process but the main one; DETR, DeiT and MAE copy
# it, MAE with `, gpu <n>` after the URL). Its writer is the global rank it names: on a console holding many
# processes' unprefixed output it is often the only line a non-main rank writes.
RANK_INIT_RE = re.compile(r"\| distributed init \(rank (?P<rank>\d{1,7})\): ")
# A process's own banner naming its global rank among the world (`global rank 3 of 8: tensor-parallel rank
# 1, ...`, `process rank 3/8 starting`): what `dist.get_rank()` / `dist.get_world_size()` print at
# start-up, the statement opening the message. A mention of another rank inside a sentence (`waiting for
# rank 3 of 8`) is not one.
RANK_BANNER_RE = re.compile(
    r"(?:^|[:\]] )(?i:global|process) rank (?P<rank>\d{1,7}) ?(?:of|/) ?(?P<world>\d{1,7})"
    r"(?:[:,]| starting\b|$)"
)
# The lines whose rank_init depends on their envelope as well as their text (`LifecycleParser._rank_init`).
_RANK_STATEMENT_TRIGGERS = ("distributed init (rank ", "lobal rank ", "rocess rank ")
PROCESS_BANNER_RE = re.compile(
    r"\bProcess rank: (?P<rank>-?\d{1,7}), device: [\w:.-]{1,40}, n_gpu: \d{1,4}, distributed training: "
    r"(?P<dist>True|False)\b"
)
PHASE_TRIGGERS = ("heckpoint", "alidat", "valuat", "eval", "Eval", "est loop", "est epoch", "okeniz",
                  "reprocess", "ataset", "uilding", "ecompiling function")
# Lines of a stack or a traceback mention these words as code, not as a phase.
_CODE_LINE = re.compile(r"^\s*(?:File \"|at |#\d|Traceback|\w+Error\b|\w+Exception\b)")
MAX_PHASE_LINE = 400
# Texts that gave nothing (see `LifecycleParser.feed`); what a rank statement gives depends on the line's
# envelope rank too (`_rank_init`: under `[rank1]:` the text `| distributed init (rank 5)` gives nothing,
# alone rank 5's `rank_init`), so such texts are never remembered.
_QUIET = QuietTexts(line_dependent=lambda text: any(t in text for t in _RANK_STATEMENT_TRIGGERS))


class LifecycleParser(Parser):
    """How the job was stopped from outside (`job_stopped`) and which phase it was in (`phase`)."""

    name = "lifecycle"
    triggers = ("death signal", "CANCELLED AT", *PHASE_TRIGGERS, *FINISHED_TRIGGERS, *PHASE_TOOK_TRIGGERS,
                *SYNC_SKIPPED_TRIGGERS, *LOOP_END_TRIGGERS, "Process rank: ",
                *_RANK_STATEMENT_TRIGGERS)
    emits = (
        EventSpec("job_stopped", ("how", "signal", "job_id", "stopped_host", "reason"),
                  "the job was stopped from outside: torchrun's agent received a signal (`how` agent_signal, "
                  "`signal` e.g. SIGTERM), or the scheduler cancelled it (`how` scheduler_cancel, `reason` "
                  "e.g. TIME LIMIT)"),
        EventSpec("phase", ("phase",),
                  "a training-loop phase began or ended: checkpoint_save, checkpoint_load, validation, "
                  "data_prep (the phase a silent hang most often stops in), compile (TorchDynamo "
                  "recompiling a frame, logged under TORCH_LOGS=recompiles)"),
        EventSpec("phase_took", ("label", "duration_s"),
                  "a phase reported how long it took once it was over (`elapsed time to <what> (seconds): "
                  "<s>`): `duration_s` whole seconds"),
        EventSpec("sync_skipped", ("phrase",),
                  "a rank's own log says it skipped a synchronisation (`skipping metric sync`, `skipped "
                  "all_gather`, `barrier skipped`): it left the collective path its peers are on"),
        EventSpec("batch_skipped", ("phrase",),
                  "a rank's own log says it dropped the training batch at hand or its forward/backward "
                  "(`non-finite pixels in batch, skipping it`, `skipping this micro-batch`): under DDP/FSDP "
                  "it issued that step's collectives fewer times than its peers"),
        EventSpec("process_banner", ("process_rank", "distributed"),
                  "a transformers example script's per-process banner (`Process rank: <local rank>, device: "
                  "..., distributed training: True`), printed at WARNING by every process while replicas "
                  "log nothing below WARNING"),
        EventSpec("rank_init", ("global_rank",),
                  "the torchvision reference scripts' per-process line `| distributed init (rank <r>): "
                  "<url>`, printed by every process before only the main one may print; the event carries "
                  "rank <r>"),
        EventSpec("loop_finished", ("phrase", "step"),
                  "a rank's own line says its training loop ended while the run goes on (`training loop "
                  "finished at iteration 36`, `data iterator exhausted`, `ran out of batches`); `step` when "
                  "the line names one"),
        EventSpec("run_finished", ("phrase",),
                  "the training script said its run is over (`Training complete`, HF Trainer's `Training "
                  "completed.`, Lightning's `` `Trainer.fit` stopped: `max_epochs=N` reached``)"),
    )
    examples = (
        Example("W0412 09:31:07.220000 5121 torch/distributed/elastic/agent/server/api.py:719] Received 15 "
                "death signal, shutting down workers", "job_stopped",
                {"how": "agent_signal", "signal": "SIGTERM"}, "torch 2.5-2.13"),
        Example("[2024-03-02 17:40:11,905] torch.distributed.elastic.agent.server.api: [WARNING] Received "
                "Signals.SIGINT death signal, shutting down workers", "job_stopped",
                {"how": "agent_signal", "signal": "SIGINT"}, "torch 2.1-2.2"),
        Example("slurmstepd: error: *** JOB 771204 ON gpu-a17 CANCELLED AT 2025-06-03T04:12:55 DUE TO TIME "
                "LIMIT ***", "job_stopped",
                {"how": "scheduler_cancel", "job_id": "771204", "stopped_host": "gpu-a17",
                 "reason": "TIME LIMIT"}, "Slurm slurmstepd"),
        Example("slurmstepd: error: *** STEP 90311.0 ON node-3 CANCELLED AT 2025-01-20T11:02:41 ***",
                "job_stopped", {"how": "scheduler_cancel", "job_id": "90311.0", "reason": None},
                "Slurm slurmstepd"),
        Example("INFO:trainer:Saving checkpoint to /ckpt/epoch_3", "phase", {"phase": "checkpoint_save"},
                "generic training loops"),
        Example("Loading checkpoint from /ckpt/latest.pt", "phase", {"phase": "checkpoint_load"},
                "generic training loops"),
        Example("Running validation at epoch 2", "phase", {"phase": "validation"}, "generic training loops"),
        Example("Running tokenizer on dataset (num_proc=8)", "phase", {"phase": "data_prep"},
                "HF datasets map with a desc"),
        Example("2026-11-02 10:14:03,551 INFO data: rebuilding the token index cache for shard 12", "phase",
                {"phase": "data_prep"}, "user code (written here)"),
        Example(" > building indices for blendable datasets ...", "phase", {"phase": "data_prep"},
                "Megatron-LM blended dataset"),
        Example("[rank3]:V1203 10:02:11.418000 4410 torch/_dynamo/guards.py:5396] [0/2] [__recompiles] "
                "Recompiling function forward in /home/user/proj/model.py:88", "phase", {"phase": "compile"},
                "torch 2.6-2.13 TORCH_LOGS=recompiles"),
        Example("    elapsed time to build and save sample-idx mapping (seconds): 1204.5", "phase_took",
                {"label": "build and save sample-idx mapping", "duration_s": 1204},
                "Megatron-LM gpt_dataset"),
        Example("12/03/2026 10:02:11 - WARNING - __main__ - no valid eval samples on this process at "
                "step 40; skipping metric sync", "sync_skipped", {"phrase": "skipping metric sync"},
                "user code (written here)"),
        Example("[rank3] empty prediction batch, skipped all_gather_object of predictions", "sync_skipped",
                {"phrase": "skipped all_gather_object"}, "user code (written here)"),
        Example("WARNING tabfit: loss spike at step 12, skipping model averaging this round", "sync_skipped",
                {"phrase": "skipping model averaging"}, "local SGD / periodic model averaging loops"),
        Example("2026-05-02 10:11:02,530 node3 train[4410] WARNING: non-finite pixels in batch, skipping it",
                "batch_skipped", {"phrase": "batch, skipping it"}, "user code (written here)"),
        Example("[rank1] loss is NaN, skipping this micro-batch", "batch_skipped",
                {"phrase": "skipping this micro-batch"}, "user code (written here)"),
        Example("12/02/2026 10:48:02 - INFO - trainer - Stage 2: validation shard is empty, skipping eval",
                "sync_skipped", {"phrase": "skipping eval"}, "user code (written here)"),
        Example("grad norm is inf: barrier skipped", "sync_skipped", {"phrase": "barrier skipped"},
                "user code (written here)"),
        Example("2026-11-20 08:00:01,002 INFO trainer: global rank 5 of 8: tensor-parallel rank 1, "
                "data-parallel rank 2", "rank_init", {"global_rank": 5},
                "user code, python logging (written here)"),
        Example("process rank 2/4 starting", "rank_init", {"global_rank": 2}, "user code (written here)"),
        Example("| distributed init (rank 3): env://", "rank_init", {"global_rank": 3},
                "torchvision references/classification/utils.py init_distributed_mode (written here)"),
        Example("[09:12:40.118] rank 3: eval counters unchanged, skipping reduce of accuracy", "sync_skipped",
                {"phrase": "skipping reduce"},
                "user code, torchvision-style timestamped print (written here)"),
        Example("12/03/2026 07:04:58 - WARNING - __main__ - Process rank: 1, device: cuda:1, n_gpu: 1, "
                "distributed training: True, 16-bits training: False", "process_banner",
                {"process_rank": 1, "distributed": True}, "transformers example scripts"),
        Example("Training completed. Do not forget to share your model on huggingface.co/models =)",
                "run_finished", {"phrase": "Training completed"}, "HF transformers Trainer"),
        Example("`Trainer.fit` stopped: `max_epochs=20` reached.", "run_finished",
                {"phrase": "`Trainer.fit` stopped: `max_epochs=20` reached"}, "Lightning 2.x fit loop"),
        Example("[rank 0] finished training after 12 epochs", "run_finished", {"phrase": "finished training"},
                "generic training loops"),
        Example("2026-12-03 10:14:05,220 INFO train: training loop finished at iteration 36", "loop_finished",
                {"phrase": "training loop finished", "step": 36}, "user code, python logging (written here)"),
        Example("[rank 2] data iterator exhausted at step 118, leaving the train loop", "loop_finished",
                {"phrase": "data iterator exhausted", "step": 118}, "user code (written here)"),
        Example("rank 5 ran out of batches", "loop_finished", {"phrase": "ran out of batches", "step": None},
                "user code (written here)"),
        Example("done in 41s", "run_finished", {"phrase": "done in 41s"}, "generic training scripts"),
        Example("All done in 3.5 min", "run_finished", {"phrase": "All done in 3.5 min"},
                "generic training scripts"),
        Example("[rank 1] done in 41s", "run_finished", {"phrase": "[rank 1] done in 41s"},
                "generic training scripts"),
    )
    near_misses = (
        "  File \"/opt/lib/python3.11/site-packages/trainer/checkpoint.py\", line 40, in save_checkpoint",
        "Training did not complete: loss is NaN",
        "pre-training completed_steps=40",
        "Resuming training from step 800",
        "checkpoint_dir: /ckpt",
        "eval_steps=500",
        "Sending process 4411 closing signal SIGTERM",
        "epoch 3 done in 12s",
        "[rank 1] epoch 3 done in 12s",
        "done in 41s, retrying",
        "elapsed time: 12.5",
        "skipping batch 7: all labels are padding",
        "skipped step 3 (overflow), loss scale 32768",
        "Skipping synchronous download; using the cache",
        "skipping loss averaging for an empty batch",
        "inner training loop: grad accumulation 4",
        "building GPT model ...",
        "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
        "resuming: skipping the first 1200 batches of epoch 3",
        "micro-batch empty after filtering, skipping forward send",
        "skipping eval dataset download: already cached",
        "rebuilding the optimizer after a resize",
        "the loop finished at 10:14",
        "retrying: connection pool exhausted",
        "still waiting for rank 3 of 8 to join",
        "[c10d] TCP client failed to connect/validate to host 10.0.0.4:29500 - retrying (try=0, "
        "timeout=600000ms, delay=3021ms): The client socket has timed out after 600000ms",
        "reading shards from /data/validation/shard-00007.bin",
        "INFO: rank 9 of 8: out of range",
    )

    def feed(self, line: LogLine) -> Iterable[Event]:
        return _QUIET.read(line, self._read)   # (no state: the text decides, but for `line_dependent` texts)

    def _rank_init(self, line: LogLine, r: int) -> tuple[Event, ...]:
        """A process's statement that it is global rank `r`: rank `r`'s `rank_init`, unless the line's
        envelope names another rank (a line about rank r, not by it)."""
        ev = self.event("rank_init", line, global_rank=r)
        if line.rank is None:
            ev = replace(ev, rank=r)
        return (ev,) if ev.rank == r else ()

    def _read(self, line: LogLine) -> tuple[Event, ...]:
        text = line.text
        if "death signal" in text:
            m = DEATH_SIGNAL_RE.search(text)
            if m:
                num = to_int(m["num"])
                sig = m["name"] or _SIGNALS.get(num or -1, f"SIG{num}" if num is not None else None)
                return (self.event("job_stopped", line, how="agent_signal", signal=sig, job_id=None,
                                   stopped_host=None, reason=None),)
        if "CANCELLED AT" in text:
            m = SLURM_CANCEL_RE.search(text)
            if m:
                reason = (m["reason"] or "").strip() or None
                return (self.event("job_stopped", line, how="scheduler_cancel", signal=None, job_id=m["job"],
                                   stopped_host=m["host"], reason=reason),)
        if len(text) > MAX_PHASE_LINE or _CODE_LINE.match(text):
            return ()
        if "distributed init (rank " in text:
            m = RANK_INIT_RE.search(text)
            if m:
                return self._rank_init(line, int(m["rank"]))
        if "lobal rank " in text or "rocess rank " in text:
            m = RANK_BANNER_RE.search(text)
            if m and int(m["rank"]) < int(m["world"]):
                return self._rank_init(line, int(m["rank"]))
        if "Process rank: " in text:
            m = PROCESS_BANNER_RE.search(text)
            if m:
                return (self.event("process_banner", line, process_rank=int(m["rank"]),
                                   distributed=m["dist"] == "True"),)
        m = LOOP_END_RE.search(text) if any(t in text for t in LOOP_END_TRIGGERS) else None
        if m:
            st = LOOP_END_STEP_RE.search(text)
            step = int(st["step"]) if st else None
            return (self.event("loop_finished", line, phrase=m.group(0), step=step),)
        m = FINISHED_RE.search(text)
        if m:
            return (self.event("run_finished", line, phrase=m.group(0)),)
        skip = any(t in text for t in SYNC_SKIPPED_TRIGGERS)
        m = SYNC_SKIPPED_RE.search(text) if skip else None
        if m:
            return (self.event("sync_skipped", line, phrase=m.group(0)),)
        m = BATCH_SKIPPED_RE.search(text) if skip else None
        if m:
            return (self.event("batch_skipped", line, phrase=m.group(0)),)
        m = PHASE_TOOK_RE.search(text) if "lapsed time" in text else None
        if m:
            return (self.event("phase_took", line, label=m["what"].strip(), duration_s=int(m["secs"])),)
        for phase, rx in PHASE_RES:
            if rx.search(text):
                return (self.event("phase", line, phase=phase),)
        return ()


_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM"}
