"""Strip the prefixes that schedulers, launchers and loggers wrap around a log line, keeping their fields.

Order (outermost first, reference §9.3): container/journal/dmesg stamps and external timestamps →
SLURM `srun -l` / Open MPI / pdsh tags → Ray / TorchX → torchrun `--tee` `[default0]:` →
`[rankN]:` (possibly doubled, possibly glued after a tqdm bar) → C++ (c10/glog) or Python logging
envelope → payload.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise

from hanglens import lazyre as re
from hanglens.ingest.jsonlines import json_record
from hanglens.model import YEARLESS_YEAR, ray_writer

# CSI (colours, cursor moves), charset selection, keypad modes, and OSC strings (a terminal title, an OSC 8
# hyperlink around a path) up to their BEL or ST terminator, at most 1 KiB: linear.
ANSI_RE = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]|\x1b\][^\x07\x1b\n]{0,1024}(?:\x07|\x1b\\)"
)

# -- outer transport/scheduler prefixes --------------------------------------------------------
CRI_RE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?P<stream>stdout|stderr) [FP] "
)
CLOUDWATCH_RE = re.compile(r"^\s*\|\s*(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?)\s*\|\s?")
ISO_RE = re.compile(
    r"^\[?(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]?(?: \|)? "
)
# coloredlogs' default format (coloredlogs/__init__.py DEFAULT_LOG_FORMAT `%(asctime)s %(hostname)s
# %(name)s[%(process)d] %(levelname)s %(message)s`, DEFAULT_DATE_FORMAT `%Y-%m-%d %H:%M:%S`; `,%(msecs)03d`
# with `milliseconds=True`), also written by hand with `logging`: date, host, logger[pid], level. verboselogs
# adds SPAM, VERBOSE, NOTICE and SUCCESS. The pid makes the line's process a stream of its own.
COLOREDLOGS_RE = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:[,.](?P<ms>\d{3}))? "
    r"(?P<host>[A-Za-z0-9][\w.-]{0,252}) (?P<name>[\w.<>-]{1,200})\[(?P<pid>\d{1,10})\] "
    r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL|SPAM|VERBOSE|NOTICE|SUCCESS) "
)
TIME_ONLY_RE = re.compile(r"^(?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,9}))? (?=\S)")
DMESG_RE = re.compile(r"^\[\s*(?P<uptime>\d+\.\d+)\] ")
JOURNAL_RE = re.compile(
    r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?P<hms>\d\d:\d\d:\d\d)(?:\.\d{6})? (?P<host>\S+) (?P<ident>[^\s\[:]+)(?:\[\d+\])?: "
)
# `journalctl -o short-iso` (log-formats.md section 9.3): the same envelope with an ISO 8601 time. The
# identifier must carry its `[pid]` (or be the kernel's) so that an ISO-stamped log line's next words
# (`INFO trainer: ...`) are not read as a host and an identifier.
JOURNAL_ISO_RE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:[+-]\d\d:?\d\d|Z)) (?P<host>\S{1,255}) "
    r"(?:[^\s\[:]{1,255}\[\d{1,10}\]|kernel): "
)
SLURM_RE = re.compile(r"^(?:P\d+ )?\s*(?P<task>\d{1,5}): ")
# Lines srun / slurmstepd write themselves (never behind a task label).
SLURM_OWN_RE = re.compile(r"^(?:srun|slurmstepd(?:-[\w.-]+)?)(?:@[\w.-]+)?: ")
OPENMPI_RE = re.compile(
    r"^\[(?P<job>[\w.@-]+),(?P<mpi_rank>\d{1,6})\](?:\[(?P<host>[^:\]]+):\d+\])?"
    r"<(?P<stream>stdout|stderr|stddiag)>: ?"
)
# Open MPI's `mpirun --timestamp-output` (4.x, orte/mca/iof/base/iof_base_output.c
# `orte_iof_base_write_output`): each chunk of a process's output starts with ctime() without its newline,
# then the `[<job>,<rank>]` tag when `--tag-output` is on too, then `<stdout>:`/`<stderr>:`
# (`%s[%s,%s]<%s>:`, else `%s<%s>:`).
OPENMPI_TIME_RE = re.compile(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}"
    r"(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d) (?P<year>\d{4})"
    r"(?:<(?P<stream>stdout|stderr|stddiag)>: ?|(?=\[[\w.@-]+,\d{1,6}\]<std(?:out|err|diag)>:))"
)
# A host name has a digit somewhere; the lookahead checks that within the name instead of a backtracking
# `[\w-]*\d[\w.-]*` (quadratic on a long token).
PDSH_RE = re.compile(r"^(?P<host>(?:\d{1,3}\.){3}\d{1,3}|(?=[\w.-]{0,253}\d)[A-Za-z][\w.-]{0,252}): (?=.)")
# docker compose (`docker compose up` / `logs`, v1 `docker-compose`) prefixes each container's line with its
# name, padded with spaces to the longest name, and ` | `: `trainer-1  | <line>` (v2 `<service>-<index>`, v1
# `<service>_<index>`; the `docker compose logs` reference: `--no-log-prefix` "Don't print prefix in logs").
# Read only when most lines of the file's sample carry it (`detect_dialect`): a level padded before a bar
# (`INFO     | ...`) has no index.
COMPOSE_RE = re.compile(r"^(?P<name>[A-Za-z0-9][\w.-]{0,62}?[-_]\d{1,4}) {1,64}\| ?")
# pdsh writes `<host>: ` whatever the host is called (log-formats.md section 9.3); a name without a digit is
# read as a host only when the file's sample shows it as a pdsh prefix (`_named_hosts`), not line by line.
PDSH_NAME_RE = re.compile(r"^(?P<host>[A-Za-z][\w.-]{0,62}): (?=.)")
# Words that start ordinary `word: text` lines (log levels, notes, exception and warning names).
_NOT_HOSTS = frozenset({"info", "warning", "warn", "error", "debug", "critical", "fatal", "notice", "trace",
                        "note", "hint", "traceback", "exception", "caused", "during", "usage", "wandb"})
_NOT_HOST_ENDS = ("Error", "Exception", "Warning", "Interrupt", "Exit", "Iteration")
NAMED_HOSTS_MAX = 64      # distinct names a sample may show as pdsh hosts
NAMED_HOST_LOG_SHARE = 0.25  # of the lines behind those names, the share that must start like a log line
# stern (github.com/stern/stern), a tail of several Kubernetes pods at once: its default template prints
# `{{.PodName}} {{.ContainerName}} {{.Message}}` (with `--all-namespaces`/`--namespace` shown, the namespace
# first), and `+ <pod> \u203a <container>` / `- <pod> \u203a <container>` (U+203A, a single right angle
# quote) when it starts or stops tailing one. Only the markers say which leading words are a pod and a
# container, so the prefixes are learned from them.
STERN_MARK_RE = re.compile(
    r"^[+-] (?:(?P<ns>[a-z0-9][a-z0-9-]{0,62}) )?(?P<pod>[a-z0-9][a-z0-9.-]{0,252}) \u203a "
    r"(?P<container>[a-z0-9][a-z0-9-]{0,62})\s*$")
STERN_PODS_MAX = 256     # distinct pod/container pairs learned from one file's markers
# `kubectl logs --prefix` (and `--all-pods`, `-l <selector>`, which set it) puts the log source in front of
# each line: `[<kind>/<name>/<container>] ` (kubectl reference, `--prefix`: "Prefix each log line with the log
# source (pod name and container name)"), before `--timestamps`' RFC 3339 time. The pod is the line's host.
KUBECTL_PREFIX_RE = re.compile(
    r"^\[(?P<kind>[a-z]{2,32})/(?P<pod>[a-z0-9][a-z0-9.-]{0,252})/(?P<container>[a-z0-9][a-z0-9-]{0,62})\] ")
# Loki's `logcli query` default output (`--output=default`): `<RFC 3339 time> <labels> <line>`, the stream's
# labels (those not common to every stream) as `{name="value", ...}` padded with blanks to the widest.
# A `pod`/`host`-like label names the line's host.
LOKI_LABELS_RE = re.compile(
    r'^\{(?P<labels>[A-Za-z_][\w.]{0,63}="(?:[^"\\]|\\.){0,512}"'
    r'(?:, ?[A-Za-z_][\w.]{0,63}="(?:[^"\\]|\\.){0,512}"){0,31})\} {1,256}')
LOKI_LABEL_RE = re.compile(r'(?P<name>[A-Za-z_][\w.]{0,63})="(?P<value>(?:[^"\\]|\\.){0,512})"')
LOKI_HOST_LABELS = ("pod", "pod_name", "host", "hostname", "instance", "node_name", "nodename")
RAY_RE = re.compile(r"^\((?P<actor>[\w.]{1,128}) pid=(?P<pid>\d{1,10})(?:, ip=(?P<ip>[\w.:]{1,64}))?\) ")
# vLLM's V1 worker processes (vllm/v1/executor/multiproc_executor.py `WorkerProc`: `_add_prefix(sys.stdout,
# f"VllmWorker rank={rank}", pid)`; later `Worker_TP<n>`, shown simplified as `Worker (TP<n>)`): the tag names
# the worker's rank in the executor, which is its torch.distributed rank when tensor parallelism is the
# only split (a `_PP` name is left to `RAY_RE`, a writer without a rank).
VLLM_WORKER_RE = re.compile(
    r"^\((?:VllmWorker rank=(?P<rank>\d{1,6}) pid=\d{1,10}|Worker_TP(?P<tp>\d{1,6}) pid=\d{1,10}"
    r"|Worker \(TP(?P<tp2>\d{1,6})\))\) "
)
# SGLang's scheduler processes (python/sglang/srt/managers/scheduler.py `run_scheduler_process`) log through
# `configure_logger(server_args, prefix=prefix)` (python/sglang/srt/utils.py, later utils/common.py:
# `format=f"[%(asctime)s{prefix}] %(message)s"`, `datefmt="%Y-%m-%d %H:%M:%S"`), the prefix made of ` DP<d>`,
# ` PP<p>`, ` ATTN_CP<c>`, ` MOE_DP<m>`, ` TP<t>`, ` EP<e>` for each split of size > 1 (any order across
# releases). With only TP (and EP, whose groups split the TP ranks) the TP rank is the process's
# torch.distributed rank; a DP, PP or context-parallel field makes the global rank depend on sizes the tag
# does not state, and the tag then names a writer only.
SGLANG_RE = re.compile(
    r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<tags>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d{1,6}){1,6})\] ")
SGLANG_TAG_RE = re.compile(r" (?P<name>[A-Z_]{2,7}?)(?P<n>\d{1,6})")
SGLANG_RANKLESS = frozenset({"DP", "PP", "ATTN_CP", "MOE_DP"})


def sglang_rank(tags: str) -> int | None:
    """The torch.distributed rank an SGLang logger prefix (` TP1`, ` DP0 TP1`) states, or None."""
    fields = {m["name"]: int(m["n"]) for m in SGLANG_TAG_RE.finditer(tags)}
    if "TP" not in fields or SGLANG_RANKLESS & fields.keys():
        return None
    return fields["TP"]


# vLLM V0 runs its driver worker, global rank 0, inside the engine's own process (vllm/executor/
# mp_distributed_executor.py and ray_distributed_executor.py create it with `rank=0`) and tags the other
# workers' lines (`(VllmWorkerProcess pid=N)`, `(RayWorkerWrapper pid=N, ip=...)`); a V1 engine process runs
# no worker except the single one of `UniProcExecutor`, rank 0 too. So a vLLM logger line from a worker
# module with no worker tag was written by rank 0.
VLLM_DRIVER_FILES = frozenset({"worker_base.py", "worker.py", "model_runner.py", "model_runner_base.py"})
TORCHX_RE = re.compile(r"^(?P<app>[\w.\-]+)/(?P<replica>\d+) (?=\[)")
TEE_RE = re.compile(r"^\[(?!rank\d)(?P<role>[A-Za-z_][\w-]{0,63}?)(?P<local_rank>\d{1,6})\]:")
RANK_RE = re.compile(r"\[rank(?P<rank>\d{1,6})\]: ?")
# torchrun 2.2+ `TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:"` (log-formats.md sections 3.3 and 10 item
# 10): the global rank alone in brackets before each teed line; read only when most lines carry it. A bare
# `[<n>]:` with nothing after it is an entry of torchrun's failure report (`Failures:` / `Root Cause`), not a
# tag.
RANK_TAG_RE = re.compile(r"^\[(?P<rank>\d{1,6})\]:(?=.)")
BARE_TAG_RE = re.compile(r"^\[\d{1,6}\]:\s*$")
# MPICH/Hydra `mpiexec -prepend-rank` (log-formats.md section 9.3): `[<rank>] ` before each line of the
# process of that MPI rank; read only when most lines carry it (a payload may start with `[3] ` too).
MPICH_RE = re.compile(r"^\[(?P<rank>\d{1,6})\] (?=.)")
# Training scripts' own rank tags at the start of a message: `[rank 3] step 1`, `[rank3] train: ...`, and
# Lightning's `[rank: 3] Seed set to 42` (lightning_fabric/utilities/rank_zero.py `rank_prefixed_message`
# writes `f"[rank: {rank}] {message}"`; seed_everything and the per-rank warnings use it).
# Only the lower-case and the all-capitals user forms (`[RANK 3]`, after the `RANK` variable torchrun
# sets): `[Rank 3]` is ProcessGroupNCCL's work prefix, which can name a sub-group rank, so the c10d parser
# reports it as `stated_rank` instead.
USER_RANK_RE = re.compile(r"^\[(?:rank|RANK)(?:: ?| ?)(?P<rank>\d{1,6})\][ :]")
# A script's own `rank R/W` (rank R of a world of W) opening a message, `print(f"rank {rank}/{world} | ...")`:
# the slash and the world size after it say it is the writer's rank in the job, not a count or a sub-group
# rank (ProcessGroupNCCL's `[Rank 3]` has no world size); read only where R < W. Also in brackets,
# `print(f"[rank {rank}/{world}] step ...")`.
USER_RANK_OF_RE = re.compile(
    r"^\[?(?:rank|Rank|RANK) (?P<rank>\d{1,6}) ?/ ?(?P<world>\d{1,6})(?=[ \t:|,\]-])"
)
# A script's own `rank R: ` opening a message, `print(f"rank {rank}: ...")`: the writer names itself as the
# subject before a colon, as torch does in its own per-rank lines (distributed_c10d.py `_store_based_barrier`
# logs `Rank <rank>: Completed store-based barrier for key:...` with the writer's `get_rank()`). Under a
# launcher that adds no rank prefix (DeepSpeed's `deepspeed`, torchrun without `--tee`) it is often the
# only thing that says whose line it is. Not `rank 3 of 8` nor `rank 3 timed out` (no colon right after
# the number: a sentence about a rank), nor ProcessGroupNCCL's bracketed `[Rank 3]`.
USER_RANK_COLON_RE = re.compile(r"^(?:rank|Rank|RANK) (?P<rank>\d{1,6}): (?=\S)")
# A script's own rank field in its log format's header, `%(asctime)s | %(levelname)-7s | w{rank}/{world} |
# %(name)s | %(message)s` (`w1/2`, `r3/8`, `rank 3/8`, `[3/8]`, `(3 of 8)`, `proc 3/8`): an optional word, the
# rank, `/` or ` of `, the world size, then the end of the field. Learned per file (`learn_rank_field`): only
# where a sample of the file's lines carries it after the same header shape with one world size, every rank
# below it, and (several values) taking turns as writers do rather than counting up as a step, epoch or batch
# counter (`step 3/8`, `[12/500]`) does.
RANK_FIELD_RE = re.compile(
    r"(?:^|(?<=[\s|\[(<,;:]))(?P<pre>[A-Za-z]{0,8}) ?(?P<rank>\d{1,6})(?: ?/ ?| of )(?P<world>\d{1,6})"
    r"(?=[\s|\])>,;:])")
# The same field without the world size, named by the word `rank` itself (`%(asctime)s rank{rank}
# %(levelname)s %(message)s`, loguru's `{time} | {level} | rank{extra[rank]} | ...`): learned the same way,
# with no world to bound it; also in brackets of its own after a bracketed time (`[%(asctime)s][rank%(rank)d]
# [%(levelname)s] %(message)s`, a filter setting `record.rank`, as Hydra's default `[%(asctime)s][%(name)s]
# [%(levelname)s]` header does for the logger's name). Not torch's own `[rank<r>]:` envelope (`RANK_RE`,
# read before any field: a `]:` after the number).
RANK_WORD_FIELD_RE = re.compile(
    r"(?:^|(?<=[\s|(<,;:\[]))(?P<pre>rank|Rank|RANK|r) ?(?P<rank>\d{1,6})(?=[\s|\])>,;:])(?!\]:)")
# The terse form of that field, `r<rank>`, often after the host (`%(asctime)s | %(levelname)s |
# {hostname}:r{rank} | %(message)s`): a line head that may hold it.
R_FIELD_HINT_RE = re.compile(r"(?:^|[\s|(<,;:])r\d")
# A host token closing the header before such a field (`gpu-a17:`, `vm:`): the one word a terse field may
# follow, besides a time and a level.
FIELD_HOST_TAIL_RE = re.compile(r"[A-Za-z][\w.-]{0,62}:$")
# What follows a progress bar's `n/total`: tqdm's ` [<elapsed><<remaining>, <rate>]` (tqdm/std.py
# `format_meter`: `{n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]`). A bar redrawn by
# several writers, or restarted, can make its counts take turns like ranks; it is never a rank field.
FIELD_BAR_TAIL_RE = re.compile(r" ?\[(?:\d{1,4}:)?\d{1,2}:\d\d")
# The header before it, as a shape: digits as 0, level words as L, blank runs as one space (a padded
# `%(levelname)-7s` and a changing clock keep one shape).
FIELD_DIGIT_RE = re.compile(r"\d")
FIELD_LEVEL_RE = re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
FIELD_BLANK_RE = re.compile(r"\s+")
# Lightning's `Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/8` (lightning/fabric/utilities/
# distributed.py `_init_dist_connection`: `log.info(f"Initializing distributed: GLOBAL_RANK: {global_rank},
# MEMBER: {global_rank + 1}/{world_size}")`, Lightning 1.x-2.6) is logged by the process of that global rank
# itself, right before it calls `init_process_group`: in a console every rank shares it is that rank's own
# line. Read only when the member number is the rank plus one and within the world (the shape Lightning
# writes).
LIGHTNING_INIT_RE = re.compile(
    r"^Initializing distributed: GLOBAL_RANK: (?P<rank>\d{1,6}), "
    r"MEMBER: (?P<member>\d{1,7})/(?P<world>\d{1,7})")
# DeepSpeed's `log_dist` (deepspeed/utils/logging.py: `final_message = "[Rank {}] {}".format(my_rank,
# message)`, `my_rank = dist.get_rank()`, the global rank) logs through the DeepSpeed logger's envelope
# (DEEPSPEED_RE), so right after that envelope `[Rank N] ` names the writer's global rank;
# ProcessGroupNCCL's `[Rank N]` comes after a c10 envelope instead.
DS_RANK_RE = re.compile(r"^\[Rank (?P<rank>\d{1,6})\] ")
# A bracketed level word before such a rank tag (`%(asctime)s [%(levelname)s] [RANK 3] ...`).
BRACKET_LEVEL_RE = re.compile(r"^\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] (?=\[(?:rank|RANK) ?\d)")
# After the timestamp: `INFO [rank1] train: ...`, or a `|`-separated format (loguru's default
# `<time> | INFO     | module:func:12 - msg`, `logging`'s `%(asctime)s | %(levelname)-8s | %(name)s | msg`).
LEVEL_WORD_RE = re.compile(
    r"^(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: (?=\[)| {0,8}\| (?:[\w.<>:-]{1,200} (?:\| |- ))?)")
# The same level and logger after an ISO time with a dash between them: `logging.basicConfig(format=
# "%(asctime)s - %(levelname)s - %(name)s - %(message)s")` with logging's default datefmt (`2023-05-01
# 12:00:00,123`), the transformers example scripts' format without their month-first `datefmt` and the
# logging cookbook's: the outer ISO_RE takes the time, this the level and the logger's name, so that the
# message (a script's own `rank 3: ...` tag) opens the text as after the other envelopes.
DASH_LEVEL_RE = re.compile(r"^- (?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) - [\w.<>-]{1,200} - (?=\S)")
MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}

# -- inner logging envelopes ---------------------------------------------------------------------
C10_RE = re.compile(
    r"^\[?(?P<lvl>[VIWEF])(?:(?P<md>\d{3,4}) (?P<hms>\d\d:\d\d:\d\d)\.(?P<frac>\d{6,9})(?: +\d+)? )?\s*"
    r"(?P<src>[\w.+-]+\.(?:cpp|cc|cu|h|hpp|c)):(?P<line>\d+)\] ?"
)
PYGLOG_RE = re.compile(
    r"^(?P<lvl>[VIWEC])(?P<mm>\d\d)(?P<dd>\d\d) (?P<hms>\d\d:\d\d:\d\d)\.(?P<frac>\d{6}) (?P<id>\d+) "
    r"(?P<path>\S+\.py):(?P<line>\d+)\](?: \[[^\]]*\])* ?"
)
PYLOG21_RE = re.compile(
    r"^\[(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d),(?P<ms>\d{3})\] (?P<logger>[\w.]+): "
    r"\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] "
)
DEEPSPEED_RE = re.compile(
    r"^\[(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d),(?P<ms>\d{3})\] \[(?P<lvl>[A-Z]+)\] "
    r"\[(?P<file>[\w.]+):(?P<line>\d+):(?P<func>\w+)\] "
)
PYFMT_RE = re.compile(
    r"^(?:\[[\w.-]+\] )?(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:,(?P<ms>\d{3}))? - [\w.<>-]+ - "
    r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
# The transformers example scripts' logging (examples/pytorch/*/run_*.py: `logging.basicConfig(format=
# "%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S")`), copied by many
# training scripts: the date month first, the level before the logger's name. Read for its time only.
HFEX_RE = re.compile(
    r"^(?P<mo>0[1-9]|1[0-2])/(?P<dd>\d\d)/(?P<yyyy>\d{4}) (?P<hms>\d\d:\d\d:\d\d)(?:,(?P<ms>\d{3}))? - "
    r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) - [\w.<>-]{1,200} - "
)
# MMEngine's logger (mmengine/logging/logger.py `MMFormatter`, used by every OpenMMLab toolbox's Runner):
# `%(asctime)s - %(name)s - <LEVEL> - %(message)s`, its console handler with `datefmt='%m/%d %H:%M:%S'`
# (no year: `12/05 09:13:41 - mmengine - INFO - ...`), the `work_dir/<timestamp>/<timestamp>.log` file
# handler with `'%Y/%m/%d %H:%M:%S'`; an ERROR record adds `%(pathname)s - %(funcName)s - %(lineno)d - `
# before the message.
MMENGINE_RE = re.compile(
    r"^(?:(?P<yyyy>\d{4})/)?(?P<mo>0[1-9]|1[0-2])/(?P<dd>[0-3]\d) (?P<hms>\d\d:\d\d:\d\d) - "
    r"[\w.<>-]{1,200} - (?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
    r"(?:[^ ]{1,1000}\.py - [\w<>]{1,200} - \d{1,7} - )?"
)
# transformers' own loggers after `transformers.utils.logging.enable_explicit_format()` (utils/logging.py:
# `logging.Formatter("[%(levelname)s|%(filename)s:%(lineno)s] %(asctime)s >> %(message)s")`; the run_*.py
# examples and many Trainer scripts call it): `[INFO|trainer.py:2518] 2026-03-14 09:27:01,512 >> ...`. Read
# for its time only, as HFEX_RE: the text keeps the envelope.
TFX_RE = re.compile(
    r"^\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\|[\w.-]{1,200}\.py:\d{1,6}\] "
    r"(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d),(?P<ms>\d{3}) >> "
)
# Hydra's job logging (`hydra/conf/hydra/job_logging/default.yaml`: `[%(asctime)s][%(name)s][%(levelname)s] -
# %(message)s`), and the same bracketed fields with a `datefmt` of the time alone or a user's `[rank N]` field
# before the ` - `.
HYDRA_RE = re.compile(
    r"^\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<hms>\d\d:\d\d:\d\d)(?:[,.](?P<ms>\d{3}))?\]"
    r"\[(?P<logger>[\w.-]{1,200})\]\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\]"
    r"(?: - |(?=\[(?:rank|RANK) ?\d))"
)
# vLLM's logger: `%(levelname)s %(asctime)s %(filename)s:%(lineno)d]` with a yearless `%m-%d %H:%M:%S`
# (0.8 and later: `[%(filename)s:%(lineno)d]`).
VLLM_RE = re.compile(
    r"^(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mm>\d\d)-(?P<dd>\d\d) "
    r"(?P<hms>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))? "
    r"\[?(?P<file>[\w.-]+\.py):(?P<line>\d+)\] ?"
)
STDLIB_RE = re.compile(r"^(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<logger>[\w.]+):")
# Structured logging: one record per line, as a JSON object (python-json-logger, structlog's JSONRenderer,
# a `logging.Formatter` that json.dumps a dict) or as logfmt `key=value` pairs that start with the record's
# time or level (structlog's KeyValueRenderer / LogfmtRenderer). A top-level `rank` (or `global_rank`) field
# is bound per process by the script that logs (`logger.bind(rank=dist.get_rank())`, a formatter's dict):
# the writer's own rank, as `[rank3]` is in a text format. The record's text is kept whole for the parsers.
JSON_RECORD_RE = re.compile(r'^\{\s*"[^"]{1,64}"\s*:')
LOGFMT_RANK_RE = re.compile(
    r"^(?:ts|time|timestamp|level|lvl)=\S{1,64}(?: [\w.@-]{1,64}=(?:\"[^\"]{0,300}\"|\S{0,200})){0,12}? "
    r"(?:global_)?rank=(?P<rank>\d{1,6})(?= |$)")
RECORD_RANK_KEYS = ("rank", "global_rank")
MAX_RECORD = 20000   # characters of a JSON record that are parsed; a longer line keeps no rank
LEVEL_LETTER = {"DEBUG": "D", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "C",
                "SPAM": "D", "VERBOSE": "D", "NOTICE": "I", "SUCCESS": "I"}


@dataclass(frozen=True, slots=True)
class Envelope:
    """What the prefixes of one line said. `year_known` is False when the timestamp had no year."""

    text: str
    rank: int | None = None
    host: str | None = None
    local_rank: int | None = None
    stream: str | None = None
    task: int | None = None
    time: float | None = None
    year: int | None = None
    year_known: bool = False
    clock: str | None = None
    level: str | None = None
    writer: str | None = None       # the launcher-prefixed stream (LogLine.writer)
    mpi_rank: int | None = None     # the rank of an Open MPI / PRRTE output tag


@dataclass(frozen=True, slots=True)
class Dialect:
    """File-level decisions about ambiguous prefixes (SLURM labels, pdsh hosts), from a sample of lines."""

    slurm: bool = False
    pdsh: bool = False
    pdsh_hosts: frozenset[str] = frozenset()   # host names without a digit the sample showed as pdsh's
    rank_tag: bool = False
    mpich: bool = False
    compose: bool = False   # docker compose's `<container>  | ` before every line
    lead: str = ""       # a paste's indentation or `> ` quote that every line of the file carries
    stern: tuple[tuple[str, str], ...] = ()   # (`<pod> <container> ` line prefix, pod) from stern's markers
    rank_field: tuple[str, str, int] | None = None   # (word, header shape, world) of a learned rank field


# A paste into an issue or e-mail can indent every line (a code block inside a list) or quote it (`> `); the
# lines under it are the log's own. Taken off only when nearly every non-empty line of the sample has it.
LEAD_SHARE = 0.9


def _lead(lines: list[str]) -> str:
    if sum(s.startswith(">") for s in lines) >= LEAD_SHARE * len(lines):
        return "> " if sum(s.startswith("> ") for s in lines) >= LEAD_SHARE * len(lines) else ">"
    indented = [s for s in lines if s[:1] in (" ", "\t")]
    if len(indented) < LEAD_SHARE * len(lines) or len(indented) < len(lines) - 2:
        return ""
    width = min(len(s) - len(s.lstrip(" \t")) for s in indented)
    lead = indented[0][:width]
    return lead if (width >= 2 or lead == "\t") and all(s.startswith(lead) for s in indented) else ""


def detect_dialect(sample: list[str]) -> Dialect:
    """Enable the ambiguous prefixes only when most non-empty lines of the sample carry them."""
    lines = [ANSI_RE.sub("", s) if "\x1b" in s else s for s in sample if s.strip()]
    if len(lines) < 3:
        return Dialect()
    lead = _lead(lines)
    if lead:
        lines = [x[len(lead):] if x.startswith(lead) else x for x in lines]
    d = _detect(lines, lead)
    field = learn_rank_field(lines)
    return d if field is None else replace(d, rank_field=field)


def _detect(lines: list[str], lead: str) -> Dialect:
    stern = _stern_prefixes(lines)
    if stern:
        return Dialect(lead=lead, stern=stern)
    # srun and slurmstepd write their own messages unlabelled into the same output (`srun: error: <host>:
    # task <t>: Exited with exit code <c>`, `slurmstepd: error: *** STEP ... CANCELLED ...`;
    # failure-signatures.md section 6, SchedMD/slurm src/srun/launch.c `_task_finish`): they say nothing
    # about whether the tasks' lines are labelled, so the share is taken over the other lines.
    if sum(1 for s in lines if _any_dialect().match(s)) < DIALECT_SHARE * len(lines):
        # (each test below needs that share of lines to start as its prefix, srun's own lines aside: at most
        # that share start as any of them, or as srun's own, so every test would say no)
        return Dialect(lead=lead, rank_tag=_teed_rank_tags(lines))
    labelled = [s for s in lines if not SLURM_OWN_RE.match(s)]
    slurm = bool(labelled) and _most(SLURM_RE, labelled)
    pdsh = not slurm and _most(PDSH_RE, lines)
    named = _named_hosts(lines) if not slurm and not pdsh else frozenset()
    pdsh = pdsh or bool(named)
    tag = not slurm and not pdsh and (_most(RANK_TAG_RE, lines) or _teed_rank_tags(lines))
    mpich = not slurm and not pdsh and not tag and _most(MPICH_RE, lines)
    compose = not slurm and not pdsh and not tag and not mpich and _most(COMPOSE_RE, lines)
    return Dialect(slurm=slurm, pdsh=pdsh, pdsh_hosts=named, rank_tag=tag, mpich=mpich, compose=compose,
                   lead=lead)


FIELD_HEAD = 96       # characters at a line's start where a header's rank field is looked for
FIELD_MIN_LINES = 6   # sample lines that must carry a rank field (and FIELD_SHARE of the sample's lines)
FIELD_SHARE = 0.15
FIELD_HEADED_SHARE = 0.8   # else of the sample's lines that open with the field's header shape
FIELD_MAX_COUNTING = 0.75   # share of a field's value changes that may be +1 (a counter's are nearly all)
# Words before an `n/N` that count progress, not writers (`step 3/8`, `epoch 1/4`, `batch 12/500`, ...).
PROGRESS_WORDS = frozenset({
    "step", "steps", "epoch", "epochs", "ep", "batch", "batches", "iter", "iters", "iteration", "it",
    "sample", "samples", "file", "files", "chunk", "chunks", "part", "page", "item", "items", "round",
    "trial", "try", "attempt", "retry", "stage", "phase", "shard", "block", "layer", "layers", "task",
    "tasks", "job", "test", "tests", "case", "fold", "run", "restart", "restarts", "micro", "mb",
    "accum", "grad", "eval", "val", "train", "loss", "done", "of", "at", "to", "in", "on", "for", "by",
    "and", "or", "is", "was",
})


def _field_shape(before: str) -> str:
    """The shape of the header before a rank field: digits as 0, level words as L, blank runs as one space."""
    return FIELD_BLANK_RE.sub(" ", FIELD_LEVEL_RE.sub("L", FIELD_DIGIT_RE.sub("0", before)))


def _field_at(s: str) -> tuple[str, str, int, int] | None:
    """(word, header shape, rank, world) of the first `<word?><r>/<W>` field in a line's head, or None."""
    head = s[:FIELD_HEAD]
    m = RANK_FIELD_RE.search(head)
    w = (RANK_WORD_FIELD_RE.search(head, 0, m.start() if m else len(head))
         if "ank" in head or "ANK" in head or R_FIELD_HINT_RE.search(head) else None)
    if w is not None:  # a world-less `rank<r>` field before any `<r>/<W>` one
        if not s[w.end():].strip():
            return None
        return w["pre"].lower(), _field_shape(s[:w.start()]), int(w["rank"]), 0
    if m is None or not s[m.end():].strip():
        return None
    if "%|" in s[:m.start()] or FIELD_BAR_TAIL_RE.match(s, m.end()) is not None:
        return None   # a progress bar's `n/total` (tqdm: `45%|####5 | 9/20 [00:04<00:05, 2.1it/s]`)
    return m["pre"].lower(), _field_shape(s[:m.start()]), int(m["rank"]), int(m["world"])


def learn_rank_field(lines: list[str]) -> tuple[str, str, int] | None:
    """The (word, header shape, world) of a rank field that a file's log format puts in each line's header
    (`12:00:01.250 | INFO | w1/2 | fit | msg`), learned from a sample of its lines; None when there is none.

    A field counts only where it is the writer's rank beyond doubt: at least FIELD_MIN_LINES lines (and
    FIELD_SHARE of the sample) carry it after the same header shape (so it sits in the header, not in the
    message), its word is not a progress word (`step`, `epoch`, `batch`), it states one world size W >= 2 and
    every rank below W; when it takes several values they take turns as writers' lines do (the values come
    back: more runs than twice the values, and at most FIELD_MAX_COUNTING of the changes are +1 steps, where
    a counter's are nearly all), and a single value needs a word (`w0/2`; a bare `[1/4]` may be the first
    epoch of a counter)."""
    found: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for s in lines:
        head = s[:FIELD_HEAD]
        if ("/" not in head and " of " not in head and "ank" not in head and "ANK" not in head
                and not R_FIELD_HINT_RE.search(head)):
            continue
        hit = _field_at(s)
        if hit is not None:
            found.setdefault(hit[:2], []).append(hit[2:])
    if not found:
        return None
    (word, shape), seen = max(found.items(), key=lambda kv: len(kv[1]))
    if len(seen) < FIELD_MIN_LINES or word in PROGRESS_WORDS:
        return None
    if len(seen) < FIELD_SHARE * len(lines):
        # Many lines without a header (tracebacks, a launcher's report) thin the share out: the field still
        # counts when most lines that open with its header's shape carry it.
        head_re = re.compile("^" + "".join(_SHAPE_PARTS.get(c) or re.escape(c) for c in shape))
        if len(seen) < FIELD_HEADED_SHARE * sum(1 for s in lines if head_re.match(s)):
            return None
    world = seen[0][1]
    if world == 0:  # a `rank<r>` field: the word says what it is, no world bounds it, so it must open the
        # message: only a time and a level before it (`run: rank 1 epoch 2` is a sentence of a logger's).
        # The terse `r<r>` may follow a host token too (`vm:r1`), and only as the field of several writers
        # taking turns (below): one value of a bare `r<n>` says nothing.
        before = FIELD_HOST_TAIL_RE.sub("", shape) if word == "r" else shape
        if word not in ("rank", "r") or any(w != 0 for _, w in seen) or any(
                c.isalpha() and c not in "LTZ" for c in before):
            return None
    elif world < 2 or any(w != world or r >= world for r, w in seen):
        return None
    ranks = [r for r, _ in seen]
    values = set(ranks)
    if len(values) == 1:
        return (word, shape, world) if word and word != "r" else None
    changes = [(a, b) for a, b in pairwise(ranks) if a != b]
    counting = sum(1 for a, b in changes if b == a + 1)
    if counting > FIELD_MAX_COUNTING * len(changes):
        return None
    if len(changes) + 1 < 2 * len(values) and not (world == 0 and counting == 0):
        # Values that do not come back may be a counter's. A `rank<r>` field is named by its word (as a
        # single value is): there, values that never step up by one are writers taking turns too, as in a
        # short excerpt where rank 2 logs a few lines and then rank 0 does.
        return None
    return word, shape, world


DIALECT_SHARE = 0.6   # of a sample's lines that must start as a dialect's prefix (`_most`, `_named_hosts`)


@lru_cache(maxsize=1)
def _any_dialect() -> re.Pattern[str]:
    """A line starting as any prefix `detect_dialect` tests, or as srun's own lines: the union of their
    patterns (all anchored at the start), named groups made plain."""
    parts = (SLURM_RE, SLURM_OWN_RE, PDSH_RE, PDSH_NAME_RE, RANK_TAG_RE, MPICH_RE, COMPOSE_RE)
    return re.compile("|".join("(?:" + _PLAIN_GROUP_RE.sub("(?:", p.pattern) + ")" for p in parts))


_PLAIN_GROUP_RE = re.compile(r"\(\?P<\w+>")


def _stern_prefixes(lines: list[str]) -> tuple[tuple[str, str], ...]:
    """The `<pod> <container> ` prefixes a stern stream announced with its start markers (`+ <pod>`, the
    angle quote, `<container>`), longest first, when lines of the sample carry them; else none."""
    found: dict[str, str] = {}
    for s in lines:
        m = STERN_MARK_RE.match(s) if s[:2] in ("+ ", "- ") else None
        if m is not None:
            words = [w for w in (m["ns"], m["pod"], m["container"]) if w]
            found[" ".join(words) + " "] = m["pod"]
            if len(found) > STERN_PODS_MAX:
                return ()
    if not found or not any(s.startswith(p) for s in lines for p in found):
        return ()
    return tuple(sorted(found.items(), key=lambda kv: (-len(kv[0]), kv[0])))


def _named_hosts(lines: list[str]) -> frozenset[str]:
    """The host names (without a digit) of a pdsh console, or none.

    pdsh prefixes every line of every host with `<host>: `: most lines of the sample carry one of a few such
    names, each more than once, and what follows them is itself a log (a quarter at least starts like a
    log line: a launcher or `[rankN]:` tag, a c10/glog or Python logging envelope, a timestamp, a
    traceback). Ordinary `word: text` lines (`loss: 0.31`, `INFO: ...`, `wandb: ...`) fail one of these.
    """
    counts: dict[str, list[int]] = {}   # name -> [lines, lines that start like a log line behind it]
    for s in lines:
        m = PDSH_NAME_RE.match(s)
        if m is None:
            continue
        name = m["host"]
        if name.lower() in _NOT_HOSTS or name.endswith(_NOT_HOST_ENDS):
            continue
        c = counts.setdefault(name, [0, 0])
        if len(counts) > NAMED_HOSTS_MAX:
            return frozenset()
        c[0] += 1
        rest = s[m.end():]
        env = strip_prefixes(rest)
        if (env.time is not None or env.level is not None or env.rank is not None or env.writer is not None
                or rest.lstrip().startswith(("Traceback (most recent call last)", 'File "'))):
            c[1] += 1
    hosts = {n: c for n, c in counts.items() if c[0] >= 2}   # a name seen once is no one's prefix
    covered = sum(c[0] for c in hosts.values())
    logged = sum(c[1] for c in hosts.values())
    if not hosts or covered < DIALECT_SHARE * len(lines) or logged < NAMED_HOST_LOG_SHARE * covered:
        return frozenset()
    return frozenset(hosts)


def _logged_behind(m: re.Match[str], s: str) -> bool:
    """In a console the sample showed to be pdsh's (`_named_hosts`), a name the sample did not count (an
    excerpt may keep a single line of a host) is a host too when what follows it is a log line that states
    its writer's global rank, a `[rankN]:` envelope (pdsh prefixes every line of every host, log-formats.md
    section 9.3; an ordinary `word: text` line carries no rank envelope behind the word)."""
    name = m["host"]
    if name.lower() in _NOT_HOSTS or name.endswith(_NOT_HOST_ENDS):
        return False
    return strip_prefixes(s[m.end():]).rank is not None


AGENT_OWN_MIN = 3   # lines left once torchrun's own are set aside, for `_teed_rank_tags` to judge


def _teed_rank_tags(lines: list[str]) -> bool:
    """Most lines of a teed console carry the `[${rank}]:` template's tag once torchrun's own lines are set
    aside. The agent writes those into the same console untagged (local_elastic_agent.py hands the template
    to the workers' tee only): its logging lines (the 2.3+ glog-style envelope, log-formats.md section 3.4),
    and its exit traceback and `ChildFailedError` report, whose frames and fields are indented and whose
    entries open with a bare `[<n>]:`. A short job's console is mostly the agent's, so the share over all
    lines says no where every worker line is tagged."""
    rest = [s for s in lines
            if s[:1] not in (" ", "\t") and not PYGLOG_RE.match(s) and not BARE_TAG_RE.match(s)]
    return len(rest) >= AGENT_OWN_MIN and _most(RANK_TAG_RE, rest)


def _most(rx: re.Pattern[str], lines: list[str]) -> bool:
    """At least 60 % of `lines` start with `rx` (the answer is known once too many do not: most files'
    first lines say no)."""
    need = DIALECT_SHARE * len(lines)
    left = len(lines)   # lines that may still match
    for s in lines:
        if not rx.match(s):
            left -= 1
            if left < need:
                return False
    return left >= need


def _iso_time(ts: str) -> tuple[float | None, int | None]:
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?", ts)
    if not m:
        return None, None
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    try:
        return calendar.timegm((y, mo, d, hh, mm, ss, 0, 0, 0)) + frac, y
    except (ValueError, OverflowError):
        return None, None


@lru_cache(maxsize=1024)
def _day_start(year: int, month: int, day: int) -> int:
    """`calendar.timegm` of the day's midnight (its integer sum with the time of day is `timegm`'s)."""
    return calendar.timegm((year, month, day, 0, 0, 0, 0, 0, 0))


def _md_time(year: int, month: int, day: int, hms: str, frac: str | None) -> float | None:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    try:
        hh, mm, ss = map(int, hms.split(":"))
        return _day_start(year, month, day) + hh * 3600 + mm * 60 + ss + (
            float("0." + frac) if frac else 0.0
        )
    except (ValueError, OverflowError):
        return None


def _record_rank(s: str) -> int | None:
    """The `rank` field of a structured log record (JSON object or logfmt, see JSON_RECORD_RE), else None."""
    if s.startswith("{"):
        rec = json_record(s, MAX_RECORD) if JSON_RECORD_RE.match(s) else None
        if rec is None:
            return None
        for key in RECORD_RANK_KEYS:
            v = rec.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1_000_000:
                return v
            if isinstance(v, str) and v.isdigit() and len(v) <= 6:
                return int(v)
        return None
    m = LOGFMT_RANK_RE.match(s)
    return int(m["rank"]) if m else None


_SHAPE_PARTS = {"0": r"\d", "L": r"(?:L|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)", " ": r"[ \t]+"}


def field_pattern(lead: str, field: tuple[str, str, int]) -> str:
    """The pattern of a line whose header has a learned rank field (word, header shape, world) after the
    file's `lead`, the rank as group 1: the shape's digits (0) as digits, level words (L) as level words,
    blanks as blank runs; the field ends a header field and the message after it is not empty."""
    word, shape, world = field
    head = "".join(_SHAPE_PARTS.get(c) or re.escape(c) for c in shape)
    total = r"(?: ?/ ?| of )" + str(world) if world else ""
    return (r"^" + re.escape(lead) + head + r"(?i:" + re.escape(word) + r") ?(\d{1,6})" + total
            + r"(?=[\s|\])>,;:])(?=[ \t]*\S)")


@lru_cache(maxsize=8)
def field_line_re(lead: str, field: tuple[str, str, int]) -> re.Pattern[str]:
    return re.compile(field_pattern(lead, field))


@lru_cache(maxsize=8)
def field_glue_re(field: tuple[str, str, int], slurm: bool, pdsh: bool) -> re.Pattern[str] | None:
    """A learned rank field's whole header (`12:35:15.808 INFO  [gpu-st-81:6611] [r00/24]`) anywhere in a
    line, the rank as group 1, for the cut between two writers' records that `print` glued together (it
    writes the text and the newline apart, so a second process writing the same pipe lands right after
    the first one's last character: log-formats.md section 9.1, "Concurrent writers"). The header is the
    learned shape without the launcher's label (`srun -l`'s `0: `, pdsh's `host: `), which only a line's
    start carries. None when that header holds no digit (no time stamp opens it): a field alone says too
    little to cut a line at."""
    word, shape, world = field
    outer = SLURM_RE.match(shape) if slurm else PDSH_NAME_RE.match(shape) if pdsh else None
    core = shape[outer.end():] if outer is not None else shape
    if "0" not in core:
        return None
    head = "".join(_SHAPE_PARTS.get(c) or re.escape(c) for c in core)
    total = r"(?: ?/ ?| of )" + str(world) if world else ""
    return re.compile(head + r"(?i:" + re.escape(word) + r") ?(\d{1,6})" + total + r"(?=[\s|\])>,;:])")


def strip_prefixes(raw: str, dialect: Dialect = Dialect(), year_hint: int | None = None) -> Envelope:
    """Remove every recognised prefix of `raw` (already ANSI-stripped) and return the payload and fields."""
    s = raw[len(dialect.lead):] if dialect.lead and raw.startswith(dialect.lead) else raw
    rank: int | None = None
    host: str | None = None
    local_rank: int | None = None
    stream: str | None = None
    task: int | None = None
    time: float | None = None
    year: int | None = None
    year_known = False
    clock: str | None = None
    level: str | None = None
    writers: list[str] = []
    mpi_rank: int | None = None
    year_default = year_hint if year_hint is not None else YEARLESS_YEAR

    # A line starting with the `[rankN]:` envelope (a torchrun console's every line) has no outer prefix:
    # none of them starts with `[rank` and a digit (`TEE_RE` excludes it, `OPENMPI_RE` needs a comma inside
    # the brackets, the others another first character), so the loop below would try them all and stop.
    lead = RANK_RE.match(s) if s.startswith("[rank") else None
    for _ in range(0 if lead else 8):  # outer prefixes, in any order they were stacked
        m = CRI_RE.match(s)
        if m:
            time, year = _iso_time(m["ts"])
            year_known, clock, stream = year is not None, "iso", m["stream"]
            s = s[m.end():]
            continue
        m = KUBECTL_PREFIX_RE.match(s) if s[:1] == "[" and host is None else None
        if m:
            host = m["pod"]
            writers.append(f"pod {host}")
            s = s[m.end():]
            continue
        m = LOKI_LABELS_RE.match(s) if s[:1] == "{" and time is not None else None
        if m:
            labels = {x["name"]: x["value"] for x in LOKI_LABEL_RE.finditer(m["labels"])}
            named = next((labels[k] for k in LOKI_HOST_LABELS if labels.get(k)), None)
            if named is not None and host is None:
                host = named
                writers.append(f"pod {host}")
            s = s[m.end():]
            continue
        m = CLOUDWATCH_RE.match(s)
        if m:
            time, year = _iso_time(m["ts"])
            year_known, clock = year is not None, "iso"
            s = s[m.end():]
            continue
        m = OPENMPI_TIME_RE.match(s) if time is None else None
        if m:
            year = int(m["year"])
            time = _md_time(year, MONTHS[m["mon"]], int(m["day"]), m["hms"], None)
            year_known, clock = True, "ctime"
            if m["stream"]:
                stream = "stderr" if m["stream"] == "stderr" else "stdout"
            s = s[m.end():]
            continue
        m = OPENMPI_RE.match(s)
        if m:
            task = int(m["mpi_rank"])
            stream = "stderr" if m["stream"] == "stderr" else "stdout"
            host = m["host"] or host
            s = s[m.end():]
            if mpi_rank is None:  # a doubled tag (`[1,0]<stderr>:[1,0]<stderr>:`) names the same process
                mpi_rank = task
                writers.append(f"mpi {m['job']},{task}")
            continue
        if dialect.slurm:
            m = SLURM_RE.match(s)
            if m and task is None:
                task = int(m["task"])
                writers.append(f"task {task}")
                s = s[m.end():]
                continue
        if dialect.compose and not writers:
            m = COMPOSE_RE.match(s)
            if m:
                writers.append(f"container {m['name']}")
                s = s[m.end():]
                continue
        if dialect.pdsh and host is None:
            m = PDSH_RE.match(s)
            if m is None and dialect.pdsh_hosts:
                m = PDSH_NAME_RE.match(s)
                if m is not None and m["host"] not in dialect.pdsh_hosts and not _logged_behind(m, s):
                    m = None
            if m:
                host = m["host"]
                writers.append(f"host {host}")
                s = s[m.end():]
                continue
        if dialect.stern and host is None:
            hit = next(((pre, pod) for pre, pod in dialect.stern if s.startswith(pre)), None)
            if hit is not None:
                host = hit[1]
                writers.append(f"pod {hit[1]}")
                s = s[len(hit[0]):]
                continue
        m = JOURNAL_RE.match(s)
        if m:
            host = host or m["host"]
            t = _md_time(year_default, MONTHS[m["mon"]], int(m["day"]), m["hms"], None)
            if time is None:
                time, clock = t, "journal"
            s = s[m.end():]
            continue
        m = JOURNAL_ISO_RE.match(s) if s[:1].isdigit() else None
        if m:
            host = host or m["host"]
            if time is None:
                t, y = _iso_time(m["ts"])
                time, year, year_known, clock = t, y, y is not None, "journal"
            s = s[m.end():]
            continue
        m = COLOREDLOGS_RE.match(s) if time is None and s[:1].isdigit() else None
        if m:
            host = host or m["host"]
            time, year = _iso_time(f"{m['date']} {m['hms']},{m['ms'] or '0'}")
            year_known, clock, level = True, "pylog", LEVEL_LETTER[m["lvl"]]
            writers.append(f"proc {m['host']}:{m['pid']}")
            s = s[m.end():]
            continue
        m = SGLANG_RE.match(s) if s.startswith("[") and time is None else None
        if m:
            time, year = _iso_time(m["ts"])
            year_known, clock = year is not None, "iso"
            r = sglang_rank(m["tags"])
            rank = r if rank is None else rank
            writers.append(f"sglang{m['tags']}")
            s = s[m.end():]
            continue
        m = ISO_RE.match(s)
        if m and not PYLOG21_RE.match(s) and not DEEPSPEED_RE.match(s) and not PYFMT_RE.match(s):
            t, y = _iso_time(m["ts"])
            if time is None:
                time, year, year_known, clock = t, y, y is not None, "iso"
            s = s[m.end():]
            continue
        m = TIME_ONLY_RE.match(s)
        if m and time is None and (s[m.end():].startswith("[") or s[m.end():].startswith("(")):
            s = s[m.end():]
            continue
        m = DMESG_RE.match(s)
        if m:
            s = s[m.end():]
            continue
        m = VLLM_WORKER_RE.match(s) if s.startswith("(") else None
        if m:
            r = int(m["rank"] or m["tp"] or m["tp2"])
            rank = r if rank is None else rank
            writers.append(f"vllm rank {r}")
            s = s[m.end():]
            continue
        m = RAY_RE.match(s)
        if m:
            host = host or m["ip"]
            # Ray (and vLLM's multiprocessing workers) tag each worker process's lines in the driver's
            # console: the tagged lines are that process's stream, not the driver's.
            writers.append(ray_writer(m['actor'], m['pid']))
            s = s[m.end():]
            continue
        m = TORCHX_RE.match(s)
        if m:
            s = s[m.end():]
            continue
        m = TEE_RE.match(s)
        if m:
            local_rank = int(m["local_rank"])
            writers.append(f"tee {m['role']}{local_rank}")
            s = s[m.end():]
            continue
        if dialect.mpich and mpi_rank is None:
            m = MPICH_RE.match(s)
            if m:
                task = mpi_rank = int(m["rank"])
                writers.append(f"mpi hydra,{mpi_rank}")
                s = s[m.end():]
                continue
        if dialect.rank_tag and rank is None:
            m = RANK_TAG_RE.match(s)
            if m:
                rank = int(m["rank"])
                writers.append(f"rank {rank}")
                s = s[m.end():]
                continue
        break

    # `[rankN]:` may be doubled, or glued after a tqdm bar / another rank's partial line.
    m = lead or RANK_RE.search(s)
    if m:
        rank = int(m["rank"]) if rank is None else rank
        s = s[m.end():]
        while True:
            m2 = RANK_RE.match(s)
            if not m2:
                break
            s = s[m2.end():]
        m = TEE_RE.match(s)  # `[rank0]:[default0]:` seen in re-teed logs
        if m:
            local_rank = int(m["local_rank"])
            s = s[m.end():]

    # Inner envelope: c10 / glog C++, torch Python logging, DeepSpeed, common Python formats.
    m = C10_RE.match(s)
    if m:
        level = m["lvl"]
        if m["md"]:
            md = int(m["md"])
            t = _md_time(year_default, md // 100, md % 100, m["hms"], m["frac"][:6])
            if time is None or clock != "iso":
                time, clock, year_known = t, "c10", year_hint is not None
        s = s[m.end():]
    else:
        m = PYGLOG_RE.match(s)
        if m:
            level = m["lvl"]
            t = _md_time(year_default, int(m["mm"]), int(m["dd"]), m["hms"], m["frac"])
            if time is None:
                time, clock, year_known = t, "pylog", year_hint is not None
            s = s[m.end():]
        else:
            for rx in (PYLOG21_RE, DEEPSPEED_RE, PYFMT_RE, HFEX_RE, TFX_RE):
                m = rx.match(s)
                if m and rx is TFX_RE:
                    t, y = _iso_time(f"{m['date']} {m['hms']},{m['ms']}")
                    if time is None:
                        time, year, year_known, clock = t, y, True, "pylog"
                    break
                if m and rx is HFEX_RE:
                    # Only its time is taken: the text keeps the envelope, whose INFO level marks the main
                    # process's lines (analysis/status.py attribute_main_process_stream).
                    t, y = _iso_time(f"{m['yyyy']}-{m['mo']}-{m['dd']} {m['hms']},{m['ms'] or '0'}")
                    if time is None:
                        time, year, year_known, clock = t, y, True, "pylog"
                    # A script's own `[rank N]` tag opening the message names the writer (as after the
                    # other envelopes, USER_RANK_RE).
                    u = USER_RANK_RE.match(s[m.end():])
                    if u and rank is None:
                        rank = int(u["rank"])
                    break
                if m:
                    level = LEVEL_LETTER.get(m["lvl"], m["lvl"][:1])
                    t, y = _iso_time(f"{m['date']} {m['hms']},{m['ms'] or '0'}")
                    if time is None:
                        time, year, year_known, clock = t, y, True, "pylog"
                    s = s[m.end():]
                    if rx is DEEPSPEED_RE:
                        m = DS_RANK_RE.match(s)
                        if m and rank is None:
                            rank = int(m["rank"])
                            s = s[m.end():]
                    break
            else:
                m = MMENGINE_RE.match(s) if s[:1].isdigit() else None
                if m:
                    level = LEVEL_LETTER[m["lvl"]]
                    if m["yyyy"]:
                        t, y = _iso_time(f"{m['yyyy']}-{m['mo']}-{m['dd']} {m['hms']},0")
                        if time is None:
                            time, year, year_known, clock = t, y, True, "pylog"
                    elif time is None:
                        t = _md_time(year_default, int(m["mo"]), int(m["dd"]), m["hms"], None)
                        time, clock, year_known = t, "pylog", year_hint is not None
                    s = s[m.end():]
                m = None if m else VLLM_RE.match(s)
                if m:
                    level = LEVEL_LETTER[m["lvl"]]
                    t = _md_time(year_default, int(m["mm"]), int(m["dd"]), m["hms"], m["frac"])
                    if time is None:
                        time, clock, year_known = t, "pylog", year_hint is not None
                    if rank is None and not writers and m["file"] in VLLM_DRIVER_FILES:
                        rank = 0
                        writers.append("vllm driver")
                    s = s[m.end():]
                m = None if m or level is not None else HYDRA_RE.match(s) if s.startswith("[") else None
                if m:
                    level = LEVEL_LETTER[m["lvl"]]
                    if m["date"] and time is None:
                        time, year = _iso_time(f"{m['date']} {m['hms']},{m['ms'] or '0'}")
                        year_known, clock = True, "pylog"
                    s = s[m.end():]
                    m = USER_RANK_RE.match(s)
                    if m and rank is None:
                        rank = int(m["rank"])
                        s = s[m.end():].removeprefix("- ")
                    m = None
                m = None if level is not None else STDLIB_RE.match(s)
                if m:
                    level = LEVEL_LETTER[m["lvl"]]
                    s = s[m.end():]
    m = LEVEL_WORD_RE.match(s) or BRACKET_LEVEL_RE.match(s)  # `... INFO [rank1] train:` after the time
    if m is None and time is not None and s[:2] == "- ":
        m = DASH_LEVEL_RE.match(s)
    if m and level is None:
        level = LEVEL_LETTER[m["lvl"]]
        s = s[m.end():]
    if rank is None:
        m = USER_RANK_RE.match(s)
        if m:
            rank = int(m["rank"])
        elif s[:1] in "rR[":
            m = USER_RANK_OF_RE.match(s)
            if m and int(m["rank"]) < int(m["world"]):
                rank = int(m["rank"])
            elif m is None:
                m = USER_RANK_COLON_RE.match(s)
                if m:
                    rank = int(m["rank"])
        elif s[:1] == "I":
            m = LIGHTNING_INIT_RE.match(s)
            if m and int(m["member"]) == int(m["rank"]) + 1 <= int(m["world"]):
                rank = int(m["rank"])
    if rank is None and s[:1] in ("{", "t", "l"):
        rank = _record_rank(s)
    if rank is None and dialect.rank_field is not None:
        m = field_line_re(dialect.lead, dialect.rank_field).match(raw)
        if m is not None and (int(m[1]) < dialect.rank_field[2] or not dialect.rank_field[2]):
            rank = int(m[1])
    if rank is None and task is not None and local_rank is None:
        rank = None  # a scheduler task id is not a global rank; kept in `task`
    return Envelope(
        text=s, rank=rank, host=host, local_rank=local_rank, stream=stream, task=task, time=time,
        year=year, year_known=year_known, clock=clock, level=level,
        writer="/".join(writers) if writers else None, mpi_rank=mpi_rank,
    )
