"""Prefix stripping per family, with near-misses that must stay payload (templates from the reference)."""

# ruff: noqa: E501 - one log template per case line reads better than templates cut mid-token
from __future__ import annotations

import calendar
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hanglens.ingest import prefix
from hanglens.ingest.prefix import Dialect, detect_dialect, strip_prefixes

CASES = [
    # (raw, dialect, text, rank, local_rank, host, level)
    ("[rank3]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught x",  # torch 2.4-2.9
     Dialect(), "[Rank 3] Watchdog caught x", 3, None, None, "E"),
    ("[E ProcessGroupNCCL.cpp:828] [Rank 2] Watchdog caught x", Dialect(), "[Rank 2] Watchdog caught x",  # 1.11-2.1
     None, None, None, "E"),
    ("[default1]:[rank1]:[E ProcessGroupNCCL.cpp:583] [Rank 1] y", Dialect(), "[Rank 1] y", 1, 1, None, "E"),
    ("[rank0]:[rank0]: Traceback (most recent call last):", Dialect(), "Traceback (most recent call last):",
     0, None, None, None),
    ("Epoch 3: 40it [00:05, 7.1it/s][rank2]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] z", Dialect(),
     "z", 2, None, None, "E"),
    ("W1130 08:04:26.123000 12345 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 12346 "
     "closing signal SIGTERM", Dialect(), "Sending process 12346 closing signal SIGTERM", None, None, None, "W"),
    ("[2024-05-28 14:04:27,954] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 1 closing",
     Dialect(), "Sending process 1 closing", None, None, None, "W"),
    ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)", Dialect(),
     "failed (exitcode: 1)", None, None, None, "E"),
    ("[1,3]<stderr>:RuntimeError: x", Dialect(), "RuntimeError: x", None, None, None, None),      # Open MPI <= 4
    ("node-7: [rank5]:[E ProcessGroupNCCL.cpp:1] q", Dialect(pdsh=True), "q", 5, None, "node-7", "E"),
    ("(RayWorkerWrapper pid=2702, ip=10.1.2.3) [rank3]:[E219 08:58:32.606233339 ProcessGroupNCCL.cpp:1] r",
     Dialect(), "r", 3, None, "10.1.2.3", "E"),
    ("2024-11-30T08:04:26.123456789Z stderr F [rank1]: ValueError: v", Dialect(), "ValueError: v", 1, None, None, None),
    # vLLM's logger; an untagged line of a worker module is V0's driver worker (rank 0, in the engine process)
    ("ERROR 07-02 09:14:55 worker_base.py:620] Traceback (most recent call last):", Dialect(),
     "Traceback (most recent call last):", 0, None, None, "E"),
    ("(VllmWorkerProcess pid=5120) ERROR 07-02 09:14:55 worker_base.py:620] Traceback (most recent call last):",
     Dialect(), "Traceback (most recent call last):", None, None, None, "E"),
    ("(RayWorkerWrapper pid=881, ip=10.0.3.7) ERROR 07-02 09:14:55 worker_base.py:620] x", Dialect(), "x",
     None, None, "10.0.3.7", "E"),
    ("ERROR 07-02 09:14:55 llm_engine.py:213] engine step failed", Dialect(), "engine step failed",
     None, None, None, "E"),
    # vLLM V1 workers tag their lines with their rank (0.8+: `[file:line]` in brackets)
    ("(VllmWorker rank=3 pid=6016) ERROR 07-02 09:14:55 [multiproc_executor.py:512] WorkerProc hit an exception.",
     Dialect(), "WorkerProc hit an exception.", 3, None, None, "E"),
    ("(Worker_TP1 pid=6017) INFO 07-02 09:14:50 [gpu_worker.py:88] ready", Dialect(), "ready", 1, None, None, "I"),
    ("(Worker (TP2)) WARNING 07-02 09:14:51 [worker.py:3] slow", Dialect(), "slow", 2, None, None, "W"),
    ("INFO 04-15 00:31:11.123 llm_engine.py:2] ok", Dialect(), "ok", None, None, None, "I"),
    # SGLang's scheduler logger prefix (`[%(asctime)s{prefix}] %(message)s`): a TP-only prefix is the rank
    # (EP splits the TP ranks); with a DP or PP field the global rank is not stated
    ("[2026-12-05 10:41:07 TP3] Decode batch. #running-req: 4, #token: 812", Dialect(),
     "Decode batch. #running-req: 4, #token: 812", 3, None, None, None),
    ("[2026-12-05 10:41:07 TP6 EP1] Load weight end.", Dialect(), "Load weight end.", 6, None, None, None),
    ("[2026-12-05 10:41:07 DP1 TP2] Prefill batch.", Dialect(), "Prefill batch.", None, None, None, None),
    ("[2026-12-05 10:41:07 PP1 TP0] Scheduler hit an exception", Dialect(), "Scheduler hit an exception",
     None, None, None, None),
    ("[2026-12-05 10:41:07] Receive: obj=GenerateReqInput()", Dialect(), "Receive: obj=GenerateReqInput()",
     None, None, None, None),
    # `|`-separated formats: logging's `%(asctime)s | %(levelname)-8s | %(name)s | %(message)s`, loguru's default
    ("2026-03-09 11:20:41,805 | INFO     | trainer | [rank 2] step 40 loss 1.25", Dialect(),
     "[rank 2] step 40 loss 1.25", 2, None, None, "I"),
    ("2026-03-09 11:20:41.805 | WARNING  | train.loop:run:88 - [rank 5] slow batch", Dialect(),
     "[rank 5] slow batch", 5, None, None, "W"),
    ("2026-03-09 11:20:41,805 | INFO | epoch 1 - loss 2.1", Dialect(), "epoch 1 - loss 2.1", None, None, None, "I"),
    # Hydra's job logging `[%(asctime)s][%(name)s][%(levelname)s] - %(message)s`, and with a time-only datefmt
    # and a user's `[rank N]` field before the ` - `
    ("[2026-04-02 09:15:31,482][__main__][INFO] - epoch 2 step 118 loss 0.731", Dialect(),
     "epoch 2 step 118 loss 0.731", None, None, None, "I"),
    ("[09:15:31][fit.loop][ERROR][rank 5] - could not read ckpt/meta.json", Dialect(),
     "could not read ckpt/meta.json", 5, None, None, "E"),
    ("[09:15:31][fit.loop] - not a level", Dialect(), "[09:15:31][fit.loop] - not a level", None, None, None, None),
    # `%(asctime)s [%(levelname)s] [RANK {rank}] %(name)s: %(message)s`: the all-capitals tag after `RANK`
    ("2026-05-14 16:02:11,377 [WARNING] [RANK 6] trainer: grad norm 41.0 clipped", Dialect(),
     "[RANK 6] trainer: grad norm 41.0 clipped", 6, None, None, "W"),
    ("[RANK 2] epoch 3 batch 17 loss 0.41", Dialect(), "[RANK 2] epoch 3 batch 17 loss 0.41", 2, None, None, None),
    # Lightning's `rank_prefixed_message` (`[rank: N] <message>`), also after a `|`-separated logging format
    ("[rank: 3] Seed set to 42", Dialect(), "[rank: 3] Seed set to 42", 3, None, None, None),
    ("2026-11-20 08:14:05,311 | WARNING | fit.loop | [rank: 1] shard 4 is empty; skipping metric sync",
     Dialect(), "[rank: 1] shard 4 is empty; skipping metric sync", 1, None, None, "W"),
    # Lightning's `_init_dist_connection` announcement is logged by the process of that global rank itself
    # (lightning/fabric/utilities/distributed.py), under a torchrun `--tee` prefix too (local rank 1 there)
    ("Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/8", Dialect(),
     "Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/8", 5, None, None, None),
    ("[default1]:Initializing distributed: GLOBAL_RANK: 9, MEMBER: 10/16", Dialect(),
     "Initializing distributed: GLOBAL_RANK: 9, MEMBER: 10/16", 9, 1, None, None),
    ("INFO:lightning.fabric.utilities.distributed:Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4", Dialect(),
     "Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4", 2, None, None, "I"),
    # a script's own `rank R/W | ...` (rank R of W) opening the message; not a count past the world size
    ("rank 1/4 | epoch 2 step 6/12 loss 4.84", Dialect(), "rank 1/4 | epoch 2 step 6/12 loss 4.84", 1, None, None,
     None),
    ("2026-03-09 11:20:41,805 | INFO | trainer | Rank 3/8: saved shard", Dialect(), "Rank 3/8: saved shard", 3,
     None, None, "I"),
    ("rank 4/4 | ranks done", Dialect(), "rank 4/4 | ranks done", None, None, None, None),
    # the same in brackets, `print(f"[rank {rank}/{world}] ...")` (probe48's real runs); not past the world
    ("[rank 2/4] ring step 1: sent to 3", Dialect(), "[rank 2/4] ring step 1: sent to 3", 2, None, None, None),
    ("[Rank 0/8] device mesh ready", Dialect(), "[Rank 0/8] device mesh ready", 0, None, None, None),
    ("[rank 8/8] done", Dialect(), "[rank 8/8] done", None, None, None, None),
    # a script's own `rank R: ` opening the message (`print(f"rank {rank}: ...")` under DeepSpeed's launcher,
    # which adds no prefix), and torch's own `Rank R: Completed store-based barrier`; not a sentence about a
    # rank (no colon right after the number)
    ("rank 2: skipping loss sync at step 3", Dialect(), "rank 2: skipping loss sync at step 3", 2, None, None,
     None),
    ("Rank 5: Completed store-based barrier for key:store_based_barrier_key:1 with 8 nodes.", Dialect(),
     "Rank 5: Completed store-based barrier for key:store_based_barrier_key:1 with 8 nodes.", 5, None, None,
     None),
    ("rank 3 timed out: waiting for rank 1", Dialect(), "rank 3 timed out: waiting for rank 1", None, None,
     None, None),
    ("rank 3 of 8: loss 0.4", Dialect(), "rank 3 of 8: loss 0.4", None, None, None, None),
    ("rank 2/3rds of the data", Dialect(), "rank 2/3rds of the data", None, None, None, None),
    # DeepSpeed's `log_dist` puts the global rank after the DeepSpeed logger's envelope (deepspeed/utils/
    # logging.py); the same tag after another envelope, or a lower-case one, is not read this way
    ("[2026-06-02 08:30:12,401] [INFO] [engine.py:310:step] [Rank 5] step=40, skipped=1, lr=[0.0003]", Dialect(),
     "step=40, skipped=1, lr=[0.0003]", 5, None, None, "I"),
    ("[2026-06-02 08:30:12,401] [WARNING] [stage_1_and_2.py:1905:step] [Rank 0][deepspeed] OVERFLOW!", Dialect(),
     "[Rank 0][deepspeed] OVERFLOW!", None, None, None, "W"),
    ("[2026-06-02 08:30:12,401] [INFO] [engine.py:310:step] train [Rank 2] note", Dialect(),
     "train [Rank 2] note", None, None, None, "I"),
    # ProcessGroupNCCL's `[Rank 3]` can be a sub-group rank: never read as the global rank
    ("[Rank 3] Watchdog caught collective operation timeout", Dialect(),
     "[Rank 3] Watchdog caught collective operation timeout", None, None, None, None),
    # coloredlogs' default `%(asctime)s %(hostname)s %(name)s[%(process)d] %(levelname)s %(message)s`
    ("2026-01-05 10:11:12 host-3 trainer[1234] ERROR loss is nan at step 88", Dialect(),
     "loss is nan at step 88", None, None, "host-3", "E"),
    ("2026-01-05 10:11:12,407 gpu-b7.cluster fit.data[55120] WARNING [rank 6] slow shard", Dialect(),
     "[rank 6] slow shard", 6, None, "gpu-b7.cluster", "W"),
    ("[default2]:2026-01-05 10:11:12 gpu-b7 __main__[55121] VERBOSE step 3", Dialect(), "step 3",
     None, 2, "gpu-b7", "D"),
    ("2026-01-05 10:11:12 host-3 trainer ERROR no pid", Dialect(), "host-3 trainer ERROR no pid",
     None, None, None, None),
    # a bracketed level alone is left in the text
    ("2026-05-14 16:02:11,377 [INFO] loading shards", Dialect(), "[INFO] loading shards", None, None, None, None),
    # MMEngine's MMFormatter (mmengine/logging/logger.py, 0.10.7): console `%m/%d %H:%M:%S`, the work_dir log
    # file `%Y/%m/%d %H:%M:%S`, an ERROR record with the caller's path, function and line
    ("03/17 22:40:09 - mmengine - INFO - Epoch(train) [3][ 20/120]  lr: 1.0000e-02", Dialect(),
     "Epoch(train) [3][ 20/120]  lr: 1.0000e-02", None, None, None, "I"),
    ("2025/03/17 22:40:09 - mmengine - WARNING - The model and loaded state dict do not match", Dialect(),
     "The model and loaded state dict do not match", None, None, None, "W"),
    ("2025/03/17 22:41:50 - mmengine - ERROR - /home/user/mmdet/engine/hooks/eval.py - after_val_epoch - 88 - "
     "[rank 2] shard missing", Dialect(), "[rank 2] shard missing", 2, None, None, "E"),
    ("[default1]:03/17 22:40:09 - mmdet - INFO - loading annotations", Dialect(), "loading annotations",
     None, 1, None, "I"),
    # month/day/year belongs to the transformers examples' format (HFEX_RE), not MMEngine's
    ("03/17/2025 22:40:09 - INFO - __main__ - x", Dialect(), "03/17/2025 22:40:09 - INFO - __main__ - x",
     None, None, None, None),
]


@pytest.mark.parametrize(("raw", "dialect", "text", "rank", "local_rank", "host", "level"), CASES,
                         ids=[c[0][:30] for c in CASES])
def test_strip(raw: str, dialect: Dialect, text: str, rank: int | None, local_rank: int | None,
               host: str | None, level: str | None) -> None:
    env = strip_prefixes(raw, dialect)
    assert env.text.strip() == text.strip()
    assert (env.rank, env.local_rank, env.host, env.level) == (rank, local_rank, host, level)


NEAR_MISSES = [
    "Failures:",                                    # ChildFailedError header, not a pdsh host
    "  time      : 2024-05-28_14:04:28",
    "Root Cause (first observed failure):",
    "ERROR: Unexpected bus error encountered in worker.",
    "INFO 2024 is not a vLLM stamp",
    "[rank]: not a rank",
    "[rank: a] not a rank",
    "Initializing distributed: GLOBAL_RANK: 4, MEMBER: 2/2",   # member number not the rank's: not that line
    "note: Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2 was logged twice",
]


@pytest.mark.parametrize("raw", NEAR_MISSES)
def test_near_misses_stay_payload(raw: str) -> None:
    env = strip_prefixes(raw, Dialect(pdsh=True))
    assert env.text == raw and env.rank is None and env.host is None


def test_pdsh_dialect_needs_most_lines() -> None:
    lines = ["Failures:", "[1]:", "  host : node-1", "Root Cause (first observed failure):"]
    assert detect_dialect(lines) == Dialect()
    assert detect_dialect(["node-1: a", "node-2: b", "node-1: c", "node-2: d"]).pdsh


def test_pdsh_host_names_without_a_digit_from_a_consistent_sample() -> None:
    """pdsh prefixes `<host>: ` whatever the host is called (log-formats.md section 9.3): names without a digit
    count when most sampled lines carry one of them and what follows is a log (written here)."""
    lines = []
    for k in range(6):
        for host, lr in (("trainer-a", 0), ("trainer-b", 1)):
            lines += [f"{host}: [default{lr}]:step {k} loss 0.{k}1",
                      f"{host}: W1201 22:08:0{k}.140000 5128 torch/distributed/run.py:874] *****",
                      f"{host}: [default{lr}]:[rank{lr}]:   File \"/home/user/proj/fit.py\", line 9, in <module>"]
    d = detect_dialect(lines)
    assert d.pdsh and d.pdsh_hosts == frozenset({"trainer-a", "trainer-b"})
    env = strip_prefixes(lines[0], d)
    assert (env.host, env.local_rank, env.text) == ("trainer-a", 0, "step 0 loss 0.01")
    # a name the sample did not show as a host stays text
    assert strip_prefixes("summary: [default0]:x", d).host is None
    # ... unless a `[rankN]:` envelope follows it: an excerpt that kept a single line of a third host
    env = strip_prefixes("trainer-c: [rank9]: torch.distributed.DistBackendError: x", d)
    assert (env.host, env.rank) == ("trainer-c", 9)
    assert strip_prefixes("ValueError: [rank9]: x", d).host is None


@pytest.mark.parametrize("lines", [
    ["loss: 0.31 acc 0.5", "train: epoch 1 loss 0.3", "eval: acc 0.7"] * 10,   # ordinary `word: text`
    ["INFO: [rank0]: hello", "INFO:     started server", "WARNING: [rank1]: x"] * 10,   # log levels
    ["ValueError: bad shard", "RuntimeWarning: overflow in exp", "UserWarning: [rank0]: deprecated"] * 10,
    ["wandb: Tracking run with wandb version 0.19.1", "wandb: Run data is saved locally in /tmp/w"] * 10,
    [f"{w}: W1201 22:08:03.140000 5128 run.py:874] x" for w in (
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")],  # once each
])
def test_ordinary_word_colon_lines_are_not_pdsh_hosts(lines: list[str]) -> None:
    d = detect_dialect(lines)
    assert not d.pdsh_hosts and strip_prefixes(lines[0], d).host is None


def test_c10_stamp_is_yearless_and_month_not_padded() -> None:
    env = strip_prefixes("[rank0]:[E1218 01:02:03.000000001 ProcessGroupNCCL.cpp:1] x")
    assert not env.year_known and env.clock == "c10"
    import datetime as dt
    t = dt.datetime.fromtimestamp(env.time or 0, dt.timezone.utc)
    assert (t.year, t.month, t.day, t.hour) == (2000, 12, 18, 1)


def test_custom_prefix_template_rank_tag_only_when_most_lines_carry_it() -> None:
    """TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:" (torch 2.2+): `[6]:` is the global rank."""
    lines = ["[6]:step 10 loss 2.0", "[7]:step 10 loss 2.1", "[6]:Traceback (most recent call last):",
             "W0814 17:03:29.118000 2207 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
             "process 2290 closing signal SIGTERM"]
    d = detect_dialect(lines)
    assert d.rank_tag
    env = strip_prefixes("[6]:Traceback (most recent call last):", d)
    assert (env.rank, env.text) == (6, "Traceback (most recent call last):")
    assert strip_prefixes("[6]:x", Dialect()).rank is None
    assert not detect_dialect(["[1]: a", "plain", "plain too", "more plain"]).rank_tag


def test_custom_prefix_template_rank_tag_counts_only_the_workers_lines() -> None:
    """A short job's teed console is mostly torchrun's own untagged lines (its logging, its exit traceback and
    failure report): the `[${rank}]:` tag is judged on the other lines. Shape of a torch 2.5.1 run
    (tools/probe62/gen.py crash-r5-ws8-fsdp1-prefix)."""
    lines = [
        "W1206 08:40:38.146000 17430 torch/distributed/run.py:793] *****************************************",
        "[6]:rank 6/8 started on pid 17530 (torch 2.5.1+cu124)",
        "[0]:epoch 0 step 1/8 loss 1.0979",
        "[5]:[rank5]: Traceback (most recent call last):",
        '[5]:[rank5]:   File "/home/user/train/train.py", line 177, in <module>',
        "[5]:[rank5]:     sys.exit(main())",
        '[5]:[rank5]:   File "/home/user/train/train.py", line 139, in main',
        '[5]:[rank5]:     raise ValueError("Expected input batch_size (16) to match target batch_size (12).")',
        "[5]:[rank5]: ValueError: Expected input batch_size (16) to match target batch_size (12).",
        "W1206 08:40:57.420000 17430 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 17524 "
        "closing signal SIGTERM",
        "E1206 08:40:57.935000 17430 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 5 (pid: 17529) of binary: /home/user/.venv/bin/python",
        "Traceback (most recent call last):",
        '  File "/home/user/.venv/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-06_08:40:57",
        "  rank      : 5 (local_rank: 5)",
    ]
    d = detect_dialect(lines)
    assert d.rank_tag
    assert strip_prefixes("[0]:epoch 0 step 1/8 loss 1.0979", d).rank == 0
    # the failure report's entry header stays as it is
    assert strip_prefixes("[0]:", d) == strip_prefixes("[0]:", Dialect())
    # the agent's lines alone say nothing
    assert not detect_dialect([s for s in lines if not s.startswith("[") or s == "[0]:"]).rank_tag


@settings(max_examples=300, deadline=None)
@given(rank=st.integers(min_value=0, max_value=999_999),
       rest=st.lists(st.sampled_from([*"[]:,<>|() .-/_0123456789PJ\t", "stdout", "rank", "<stderr>"]),
                     max_size=20).map("".join))
def test_no_outer_prefix_starts_with_the_rank_envelope(rank: int, rest: str) -> None:
    """`strip_prefixes` skips the outer prefixes of a line starting with `[rankN]:`: none can match there."""
    line = f"[rank{rank}]:{rest}"
    for rx in (prefix.CRI_RE, prefix.CLOUDWATCH_RE, prefix.OPENMPI_RE, prefix.SLURM_RE, prefix.PDSH_RE,
               prefix.JOURNAL_RE, prefix.JOURNAL_ISO_RE, prefix.ISO_RE, prefix.TIME_ONLY_RE, prefix.DMESG_RE, prefix.RAY_RE,
               prefix.TORCHX_RE, prefix.TEE_RE, prefix.RANK_TAG_RE):
        assert rx.match(line) is None, rx.pattern


def test_mpich_prepend_rank_only_when_most_lines_carry_it() -> None:
    """MPICH/Hydra `mpiexec -prepend-rank` (log-formats.md section 9.3): `[3] ` is the MPI rank's stream."""
    lines = ["[0] rank=0 ready", "[1] rank=1 ready", "[3] Traceback (most recent call last):",
             "[3] KeyError: 'label_ids'", "= BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"]
    d = detect_dialect(lines)
    assert d.mpich and not d.rank_tag
    env = strip_prefixes("[3] KeyError: 'label_ids'", d)
    assert (env.mpi_rank, env.writer, env.text) == (3, "mpi hydra,3", "KeyError: 'label_ids'")
    assert strip_prefixes("[3] KeyError: 'x'", Dialect()).mpi_rank is None
    assert not detect_dialect(["[1] a", "plain", "plain too", "more plain"]).mpich
def test_most_is_sixty_percent_of_lines_matching() -> None:
    from hanglens.ingest.prefix import SLURM_RE, _most

    rng = random.Random(5)
    for _ in range(400):
        lines = [rng.choice(["0: x", "12: y", "x", "node-1: y", ""]) for _ in range(rng.randint(0, 12))]
        assert _most(SLURM_RE, lines) == (sum(1 for s in lines if SLURM_RE.match(s)) >= 0.6 * len(lines))


def test_paste_indentation_and_quote_are_taken_off_when_every_line_has_them() -> None:
    block = ["[rank1]:[E702 09:24:55.118204532 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught x",
             "[rank1]: Traceback (most recent call last):",
             '[rank1]:   File "/home/user/train.py", line 40, in <module>',
             "[rank1]: RuntimeError: boom"]
    for lead in ("    ", "\t", "> "):
        d = detect_dialect([lead + s for s in block])
        assert d.lead == lead
        env = strip_prefixes(lead + block[2], d)
        assert env.rank == 1 and env.text == '  File "/home/user/train.py", line 40, in <module>'
    # a traceback's own indentation is not a paste's: most lines start at column 0
    assert detect_dialect(["Traceback (most recent call last):", '  File "a.py", line 1, in f', "    f()",
                           "ValueError: x"]).lead == ""


def test_coloredlogs_envelope_gives_time_host_level_and_a_stream_per_process() -> None:
    env = strip_prefixes("2026-01-05 10:11:12,250 host-3 trainer[1234] ERROR boom")
    assert env.time is not None and env.year == 2026 and env.year_known and env.writer == "proc host-3:1234"
    assert strip_prefixes("2026-01-05 10:11:13 host-3 trainer[1235] INFO x").writer == "proc host-3:1235"


def test_srun_own_messages_do_not_count_against_task_labels() -> None:
    # Written from log-formats.md section 9.3 (`srun -l` right-aligns the task id to the widest id: ` 3: ` with
    # 16 tasks) and failure-signatures.md section 6 (srun's `srun: error: <host>: task <t>: Exited with exit code
    # <c>` and slurmstepd's `*** STEP <job>.<step> ON <host> CANCELLED AT <time> ***`, unlabelled, in the same
    # output); any Slurm version, torch 1.10-2.9 traceback text.
    lines = [
        " 1: epoch 3 | step 9100 | loss 0.71",
        "12: epoch 3 | step 9100 | loss 0.70",
        " 6: Traceback (most recent call last):",
        ' 6:   File "/srv/job/run.py", line 88, in <module>',
        " 6: IndexError: list index out of range",
        "srun: error: cn-0412: task 6: Exited with exit code 1",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        "slurmstepd: error: *** STEP 40917.0 ON cn-0412 CANCELLED AT 2026-01-05T11:02:40 ***",
        "srun: error: cn-0412: tasks 4-5,7: Terminated",
        "srun: error: cn-0413: tasks 8-15: Terminated",
    ]
    assert detect_dialect(lines).slurm
    env = strip_prefixes(" 6: IndexError: list index out of range", detect_dialect(lines))
    assert (env.task, env.text) == (6, "IndexError: list index out of range")
    # srun's own lines alone are not a labelled file, and a file of mostly unlabelled text stays unlabelled.
    assert not detect_dialect(lines[5:]).slurm
    assert not detect_dialect(["plain one", "plain two", "plain three", "0: x", "srun: error: a: task 0: x"]).slurm


def test_transformers_examples_envelope_gives_the_time() -> None:
    """`%(asctime)s - %(levelname)s - %(name)s - %(message)s` with datefmt `%m/%d/%Y %H:%M:%S`: the time is
    read, the text keeps the envelope (its INFO level marks the main process's lines)."""
    import datetime as dt

    raw = "03/14/2026 09:26:53 - WARNING - __main__ - Process rank: 1, device: cpu"
    env = strip_prefixes(raw)
    t = dt.datetime.fromtimestamp(env.time or 0, dt.timezone.utc)
    assert (t.year, t.month, t.day, t.hour, t.second) == (2026, 3, 14, 9, 53) and env.year_known
    assert env.text == raw
    # A day-first date or no level between the dashes is another format: no time.
    for other in ("14/03/2026 09:26:53 - WARNING - __main__ - x", "03/14/2026 09:26:53 - __main__ - x"):
        assert strip_prefixes(other).time is None


def test_transformers_explicit_format_gives_the_time() -> None:
    """transformers' `enable_explicit_format()` (`[%(levelname)s|%(filename)s:%(lineno)s] %(asctime)s >>
    %(message)s`): the time is read and the text keeps the envelope, as for the examples' format."""
    import datetime as dt

    raw = "[INFO|trainer.py:2518] 2026-03-14 09:27:01,512 >> ***** Running training *****"
    env = strip_prefixes(raw)
    t = dt.datetime.fromtimestamp(env.time or 0, dt.timezone.utc)
    assert (t.year, t.month, t.day, t.hour, t.minute, t.second) == (2026, 3, 14, 9, 27, 1) and env.year_known
    assert env.text == raw and env.rank is None
    # no `>>`, or a level word that is not logging's: another format, no time
    for other in ("[INFO|trainer.py:2518] 2026-03-14 09:27:01,512 ***** Running training *****",
                  "[NOTE|trainer.py:2518] 2026-03-14 09:27:01,512 >> x"):
        assert strip_prefixes(other).time is None


def test_a_scripts_rank_tag_after_the_transformers_examples_envelope_names_the_writer() -> None:
    # the script logs its own `[rank N]` first in the message (USER_RANK_RE), as after the other envelopes
    env = strip_prefixes("07/19/2026 22:40:02 - INFO - __main__ - [rank 6] building the packed dataset cache")
    assert env.rank == 6 and env.time is not None
    assert strip_prefixes("07/19/2026 22:40:02 - INFO - __main__ - ranks [6, 7] are slow").rank is None


def test_logging_default_datefmt_dash_envelope_gives_level_and_the_scripts_rank_tag() -> None:
    # `format="%(asctime)s - %(levelname)s - %(name)s - %(message)s"` with logging's default datefmt (a torch
    # 2.0-2.2 era training script under torchrun without --tee): the message opens the text
    env = strip_prefixes("2023-06-01 10:12:03,501 - INFO - train - rank 1: epoch finished after 3 steps")
    assert (env.rank, env.level, env.text) == (1, "I", "rank 1: epoch finished after 3 steps")
    assert env.time is not None
    env = strip_prefixes("2023-06-01 10:12:03,501 - WARNING - __main__ - rank 3 timed out waiting")
    assert (env.rank, env.level) == (None, "W")
    # no time before it: a Markdown list item, left as it is
    assert strip_prefixes("- INFO - train - rank 1: x").text == "- INFO - train - rank 1: x"


def test_dialect_quick_no_agrees_with_every_test_on_the_repositorys_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`detect_dialect` answers "no dialect" at once when too few lines start as any prefix it tests; on
    every 200-line window of the fixtures and written cases (pdsh, srun -l, Open MPI, MPICH consoles among
    them) the answer is the one the full tests give."""
    from pathlib import Path

    from hanglens.ingest import prefix

    root = Path(__file__).resolve().parents[2]
    samples = []
    for base in (root / "fixtures", root / "tests" / "written_cases"):
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in {".log", ".txt", ".out", ""} and path.stat().st_size < 1 << 22:
                lines = path.read_text("utf-8", "replace").split("\n")
                samples.extend(lines[i:i + 200] for i in range(0, len(lines), 200))
    quick = [prefix.detect_dialect(s) for s in samples]
    monkeypatch.setattr(prefix, "_any_dialect", lambda: prefix.re.compile(""))   # every line may: no quick no
    full = [prefix.detect_dialect(s) for s in samples]
    assert quick == full
    assert sum(d != prefix.Dialect(lead=d.lead) for d in full) >= 10   # (consoles with a dialect are among them)


def test_structured_records_name_their_writers_rank_and_keep_their_text() -> None:
    """A JSON or logfmt record's top-level `rank` field is the writer's rank (bound per process by the
    script's logger); a rank nested in another field, or inside a quoted message, is not."""
    cases = [
        ('{"time": "2026-05-02T11:40:07Z", "severity": "INFO", "rank": 5, "message": "iter 120 done"}', 5),
        ('{"ts": 1777722007.5, "level": "warning", "global_rank": "3", "event": "slow step"}', 3),
        ("time=2026-05-02T11:40:07Z level=info rank=6 msg=\"iter 121 done\"", 6),
        ('ts=1777722007 lvl=warn event="rank=2 is slow" rank=1', 1),
        ('{"msg": "peer lost", "peer": {"rank": 4}}', None),
        ('{"msg": "loss", "rank": true}', None),
        ('{"msg": "not closed", "rank": 3', None),
        ('level=info event="waiting for rank=2"', None),
        ("world rank=3 says hello", None),
    ]
    for raw, rank in cases:
        env = strip_prefixes(raw)
        assert (env.rank, env.text) == (rank, raw), raw


def test_open_mpi_timestamp_output_gives_the_time_and_keeps_the_tag() -> None:
    """`mpirun --timestamp-output` (orte/mca/iof/base/iof_base_output.c): ctime() then the tag or the stream."""
    env = strip_prefixes("Tue Mar  3 07:41:09 2026[1,5]<stderr>:[rank5]: KeyError: 'view2'")
    assert (env.rank, env.mpi_rank, env.stream, env.text) == (5, 5, "stderr", "KeyError: 'view2'")
    assert env.time == strip_prefixes("2026-03-03 07:41:09 x").time
    env = strip_prefixes("Tue Mar 13 07:41:09 2026<stdout>:rank 1/2 | epoch 0 step 2/3 loss 4.1")
    assert (env.rank, env.stream, env.text) == (1, "stdout", "rank 1/2 | epoch 0 step 2/3 loss 4.1")
    # a ctime() with neither a tag nor a stream after it is the payload's own
    assert strip_prefixes("Tue Mar 13 07:41:09 2026 backup done").text == "Tue Mar 13 07:41:09 2026 backup done"


def test_stern_pod_and_container_prefixes_are_learned_from_its_markers() -> None:
    # stern's default template `{{.PodName}} {{.ContainerName}} {{.Message}}` and its `+ <pod> \u203a <container>`
    # markers (github.com/stern/stern): the pod is the line's host, the rest is the pod's own line
    lines = ["+ job-master-0 › pytorch", "+ job-worker-3 › pytorch",
             "job-worker-3 pytorch [W1204 07:20:44.118402615 socket.cpp:767] [c10d] The client socket has failed"
             " to connect to [job-master-0]:23456 (errno: -3 - Temporary failure in name resolution).",
             "job-master-0 pytorch Traceback (most recent call last):", "- job-master-0 › pytorch"]
    d = detect_dialect(lines)
    e = strip_prefixes(lines[2], d)
    assert (e.host, e.level, e.text[:6]) == ("job-worker-3", "W", "[c10d]")
    assert strip_prefixes(lines[3], d).text == "Traceback (most recent call last):"
    # without a marker the same words are a payload, not a prefix
    assert not detect_dialect([*lines[2:4], "plain", "more"]).stern
    assert strip_prefixes("job-worker-3 pytorch x", Dialect()).host is None


# docker compose's container prefix (written here: `<service>-<index>` padded to the longest name, ` | `).
COMPOSE = [
    "trainer-1  | ts=2026-03-02T10:00:01.200+00:00 level=info rank=0 msg=\"step 3\"",
    "trainer-12 | W0302 10:00:02.100000 81 torch/distributed/run.py:792] Setting OMP_NUM_THREADS",
    'trainer-2  | {"ts": "2026-03-02T10:00:01.300+00:00", "level": "INFO", "rank": 1, "msg": "step 3"}',
    "trainer-2  |   File \"/home/user/train.py\", line 41, in main",
]


def test_compose_container_prefix_is_stripped_on_every_line() -> None:
    d = detect_dialect(COMPOSE)
    assert d.compose
    first = strip_prefixes(COMPOSE[0], d)
    assert first.text.startswith("ts=") and first.rank == 0 and first.writer == "container trainer-1"
    assert strip_prefixes(COMPOSE[1], d).level == "W"
    assert strip_prefixes(COMPOSE[2], d).rank == 1
    assert strip_prefixes(COMPOSE[3], d).text == "  File \"/home/user/train.py\", line 41, in main"


def test_a_padded_level_before_a_bar_is_no_container() -> None:
    lines = ["INFO     | step 1", "INFO     | step 2", "WARNING  | slow step", "INFO     | step 3"]
    assert not detect_dialect(lines).compose
    assert not detect_dialect(["trainer-1  | a", "plain", "plain too", "more plain"]).compose


def test_journal_short_iso_prefix_is_taken_off() -> None:
    """`journalctl -o short-iso` (log-formats.md section 9.3): `<ISO time> <host> <ident>[<pid>]: `, the same
    envelope as the default `short` output with an ISO 8601 time; the line behind it is read as usual."""
    env = strip_prefixes("2026-03-11T07:42:19+0000 gpu-07 python3[4411]:   rank      : 3 (local_rank: 3)")
    assert (env.host, env.text) == ("gpu-07", "  rank      : 3 (local_rank: 3)")
    assert env.time is not None
    env = strip_prefixes("2026-03-11T07:42:19.532811+01:00 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79")
    assert (env.host, env.text) == ("gpu-07", "NVRM: Xid (PCI:0000:3b:00): 79")
    # An ISO-stamped log line whose next words are no `<host> <ident>[<pid>]:` keeps them.
    env = strip_prefixes("2026-03-11T07:42:19+0000 INFO trainer: step 4")
    assert env.text == "INFO trainer: step 4"


def test_mmengine_envelope_times() -> None:
    """MMEngine's work_dir log file states the year, its console does not (mmengine/logging/logger.py
    MMFormatter datefmt '%Y/%m/%d %H:%M:%S' and '%m/%d %H:%M:%S')."""
    env = strip_prefixes("2025/03/17 22:40:09 - mmengine - INFO - x")
    assert env.time == calendar.timegm((2025, 3, 17, 22, 40, 9, 0, 0, 0)) and env.year_known
    env = strip_prefixes("03/17 22:40:09 - mmengine - INFO - x")
    assert env.time is not None and not env.year_known
    assert time.gmtime(env.time)[1:6] == (3, 17, 22, 40, 9)


def test_kubectl_prefix_and_logcli_labels_name_the_pod() -> None:
    # `kubectl logs --prefix --timestamps` (`[pod/<pod>/<container>] <RFC 3339> <line>`) and logcli's default
    # output (`<RFC 3339> {<labels>} <line>`), from the kubectl and Loki references; own values.
    env = strip_prefixes("[pod/trainer-1/pytorch] 2026-03-01T10:00:01.123456789Z [rank2]: Traceback (most "
                         "recent call last):")
    assert (env.text, env.rank, env.host, env.writer) == ("Traceback (most recent call last):", 2, "trainer-1",
                                                          "pod trainer-1")
    env = strip_prefixes('2026-03-01T10:00:01Z {pod="trainer-0", stream="stderr"}   step 3 loss 0.4')
    assert (env.text, env.host) == ("step 3 loss 0.4", "trainer-0")
    assert env.time is not None
    env = strip_prefixes('{pod="trainer-0"} step 3')  # labels only behind logcli's time
    assert env.text == '{pod="trainer-0"} step 3'
