"""Analysis documents for the renderer tests: a hand-built 8-rank job, a hostile one, a 16,384-rank one.

The log texts follow the templates of the log-format reference (torch 2.4-2.5 c10 envelope and
ProcessGroupNCCL watchdog lines, NCCL 2.18+ INFO/WARN envelope, torchrun ChildFailedError block);
host names, users, addresses and secrets are invented so the redaction tests have something to find.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

T0 = 1_727_980_621.0  # 2024-10-03 18:37:01 on the normalised clock

HOSTS = ("gpu-node-a.cluster.example.com", "gpu-node-b.cluster.example.com")
USER = "jdoe"
SECRET_HF = "hf_" + "Q" * 8 + "abcdEFGH12345678ijkl"
SECRET_GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SECRET_AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SECRET_HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
EMAIL = "jane.doe@corp-example.org"
IPV4 = "10.42.7.19"
IPV6 = "fd00:1234:5678::42"

PRIVATE_VALUES = (
    *HOSTS,
    "gpu-node-a",
    "gpu-node-b",
    USER,
    SECRET_HF,
    SECRET_GH,
    SECRET_AWS,
    SECRET_HEX,
    EMAIL,
    IPV4,
    IPV6,
)


def _wd_line(rank: int, seq: int, t: str) -> str:
    # torch 2.4-2.5 watchdog timeout line (reference §1.4, c10 envelope with [rankN]: prefix)
    return (
        f"[rank{rank}]:[E1003 {t} ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
        f"Timeout(ms)=600000) ran for 600068 milliseconds before timing out."
    )


def small_doc() -> dict[str, Any]:
    """Rank 2 on host b never enqueued allreduce #6463; its 7 peers timed out waiting in it."""
    home = f"/home/{USER}/runs/llm-7b"
    ranks = []
    for r in range(8):
        host = HOSTS[r // 4]
        status = "culprit" if r == 2 else ("silent" if r == 7 else "victim")
        ranks.append(
            {
                "rank": r,
                "host": host if r != 7 else None,
                "last_step": None if r == 7 else (1200 if r == 2 else 1201),
                "status": status,
                "last_seq": {} if r == 7 else {"0": 6462 if r == 2 else 6463, "1": 88},
                "first_error_time": None if r in (2, 7) else T0 + r * 0.01,
                "first_error": None if r in (2, 7) else "Watchdog caught collective operation timeout",
            }
        )
    evidence = [
        {
            "path": f"{home}/logs/rank0.log",
            "line": 4120,
            "rank": 0,
            "host": HOSTS[0],
            "time": T0,
            "time_text": "2024-10-03 18:37:01.833",
            "text": _wd_line(0, 6463, "18:37:01.833575187"),
            "context": {
                "before": ["[rank0]:[I1003 18:27:01.120000000 train.py:88] step 1201 loss 2.31"],
                "after": [
                    "[rank0]:[E1003 18:37:01.833621509 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) "
                    "Rank 0] Timeout at NCCL work: 6463, last enqueued NCCL work: 6463, last "
                    "completed NCCL work: 6462."
                ],
            },
        },
        {
            "path": f"{home}/logs/rank2.log",
            "line": 4087,
            "rank": 2,
            "host": HOSTS[0],
            "time": T0 + 0.02,
            "time_text": "2024-10-03 18:37:01.853",
            "text": "[rank2]:[E1003 18:37:01.853621509 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 2] "
            "Timeout at NCCL work: 6462, last enqueued NCCL work: 6462, last completed NCCL work: 6462.",
            "context": {"before": [], "after": []},
        },
    ]
    finding = {
        "rule_id": "rank-missing-from-collective",
        "category": "control_flow_divergence",
        "confidence": "high",
        "title": "Some ranks never enqueued the collective their peers timed out on",
        "explanation": "In process group 0 rank 2 stopped at collective #6462 while its peers waited in "
        "#6463. "
        "It never reached the call.",
        "culprit_ranks": [2],
        "victim_ranks": [0, 1, 3, 4, 5, 6],
        "remediation": [
            "Look for rank-dependent control flow before this collective (`if rank == 0:` blocks, uneven "
            "shards).",
            "Set `init_process_group(timeout=timedelta(minutes=5))` and add `dist.barrier()` per step while "
            "debugging.",
            "Re-run with TORCH_DISTRIBUTED_DEBUG=DETAIL to get collective fingerprints.",
        ],
        "collect": ["TORCH_DISTRIBUTED_DEBUG=DETAIL logs of every rank", "TORCH_NCCL_TRACE_BUFFER_SIZE=2000"],
        "superseded_by": None,
        "evidence": evidence,
    }
    generic = {
        "rule_id": "watchdog-timeout-generic",
        "category": "unknown",
        "confidence": "low",
        "title": "A collective timed out",
        "explanation": "Ranks 0-1, 3-6 timed out in allreduce #6463.",
        "culprit_ranks": [],
        "victim_ranks": [0, 1, 3, 4, 5, 6],
        "remediation": ["Find the rank that did not arrive."],
        "collect": [],
        "superseded_by": "rank-missing-from-collective",
        "evidence": evidence[:1],
    }
    collectives = []
    for r in range(7):
        seq = 6462 if r == 2 else 6463
        collectives.append(
            {
                "pg": "0",
                "rank": r,
                "seq": seq,
                "op": "ALLREDUCE",
                "numel_in": 1048576,
                "numel_out": 1048576,
                "state": "completed" if r == 2 else "timed_out",
            }
        )
    return {
        "schema_version": 2,
        "hanglens_version": "0.1.0",
        "command": f"hanglens analyze {home}/logs/",
        "verdict": {
            "category": "control_flow_divergence",
            "category_title": "Control-flow divergence",
            "rule_id": "rank-missing-from-collective",
            "confidence": "high",
            "culprit_ranks": [2],
            "culprit_hosts": [HOSTS[0]],
            "suspect_ranks": [],
            "victim_ranks": [0, 1, 3, 4, 5, 6],
            "summary": finding["explanation"],
            "first_step": finding["remediation"][0],
        },
        "findings": [finding, generic],
        "ruled_out": [
            {
                "rule_id": "cuda-error-on-culprit",
                "category": "cuda_error",
                "title": "CUDA error on a rank",
                "reason": "no cuda_error event on any rank",
            }
        ],
        "not_evaluable": [
            {
                "rule_id": "collective-fingerprint-mismatch",
                "title": "Collective fingerprint mismatch",
                "missing": ["collective_mismatch"],
            }
        ],
        "ranks": ranks,
        "collectives": collectives,
        "disagreement": {
            "pg": "0",
            "seq": 6463,
            "rows": [
                {
                    "rank": r,
                    "op": "ALLREDUCE" if r != 2 else None,
                    "numel_in": 1048576 if r != 2 else None,
                    "numel_out": 1048576 if r != 2 else None,
                    "shape": None,
                    "dtype": None,
                    "state": "not_enqueued" if r == 2 else "timed_out",
                }
                for r in range(7)
            ],
            "differs": ["state"],
        },
        "timeline": [
            {
                "time": e["time"],
                "time_text": e["time_text"],
                "rank": e["rank"],
                "host": e["host"],
                "kind": "hang_detected",
                "text": e["text"],
                "path": e["path"],
                "line": e["line"],
            }
            for e in evidence
        ]
        + [
            {
                "time": T0 + 3.5,
                "time_text": "2024-10-03 18:37:05",
                "rank": None,
                "host": HOSTS[1],
                "kind": "child_failed",
                "text": f"host      : {HOSTS[1]}",
                "path": f"{home}/logs/agent-b.log",
                "line": 77,
            }
        ],
        "clock": {
            "offsets": {HOSTS[0]: 0.0, HOSTS[1]: -1.25},
            "note": "host clocks aligned on the first watchdog timeout of each host",
        },
        "versions": {
            "by_host": {
                HOSTS[0]: {
                    "torch": ["2.4.1"],
                    "nccl": ["2.20.5"],
                    "cuda": ["12.1"],
                    "driver": ["535.104.05"],
                },
                HOSTS[1]: {"torch": ["2.4.1"], "nccl": ["2.20.5"], "cuda": ["12.1"], "driver": ["550.54.15"]},
            },
            "distinct": {
                "torch": ["2.4.1"],
                "nccl": ["2.20.5"],
                "cuda": ["12.1"],
                "driver": ["535.104.05", "550.54.15"],
            },
        },
        "unexplained": [
            {
                "template": "NCCL WARN NET/Socket : peer <*> message truncated",
                "count": 3,
                "example": f"gpu-node-b:1234:1290 [1] misc/socket.cc:484 NCCL WARN NET/Socket : peer "
                f"{IPV4}<49152> "
                "message truncated",
                "path": f"{home}/logs/rank5.log",
                "line": 3999,
                "ranks": [4, 5, 6],
            },
            {
                "template": "Exception: login for <*> failed",
                "count": 1,
                "example": f"Exception: login for {EMAIL} failed token={SECRET_HF} from {IPV6} "
                f"aws={SECRET_AWS} gh={SECRET_GH} sha={SECRET_HEX}",
                "path": f"/Users/{USER}/notes.txt",
                "line": 1,
                "ranks": [],
            },
        ],
        # (as a built document holds it: the primary finding's advice first, then the job-level advice)
        "collect_next": ["TORCH_DISTRIBUTED_DEBUG=DETAIL logs of every rank",
                         "TORCH_NCCL_TRACE_BUFFER_SIZE=2000", "NCCL_DEBUG=INFO output of every rank"],
        "inputs": {
            "files": 9,
            "bytes": 1_843_200,
            "skipped": [{"path": f"{home}/logs/core.1234", "reason": "binary file"}],
            "ranks_seen": [0, 1, 2, 3, 4, 5, 6],
            "world_size": 8,
            "hosts": list(HOSTS),
            "detail": [
                {
                    "path": f"{home}/logs/rank{r}.log",
                    "size": 200_000,
                    "lines": 4100,
                    "ranks": [r],
                    "hosts": [HOSTS[r // 4]],
                    "events": 40,
                }
                for r in range(7)
            ],
        },
    }


HOSTILE = (
    "<script>document.title='PWNED'</script>",
    "<img src=x onerror=\"document.title='PWNED'\">",
    "<a href=\"javascript:document.title='PWNED'\">click</a>",
    "</textarea><script>document.title='PWNED'</script>",
    "</style><script>fetch('http://127.0.0.1:9/x')</script>",
    "]]></svg><svg onload=\"document.title='PWNED'\">",
    "`code` | pipe | **bold** [link](javascript:alert(1)) <b>x</b>",
)


def hostile_doc() -> dict[str, Any]:
    """The small job with attacker-controlled text in every field that comes from a log."""
    doc = copy.deepcopy(small_doc())
    bad = " ".join(HOSTILE)
    for f in doc["findings"]:
        for ev in f["evidence"]:
            ev["text"] = ev["text"] + " " + bad
            ev["context"]["before"].append(bad)
            ev["path"] = ev["path"] + HOSTILE[0]
    doc["verdict"]["summary"] += " " + bad
    doc["verdict"]["first_step"] += " " + bad
    doc["findings"][0]["remediation"].append(f"`{bad}`")
    doc["findings"][0]["explanation"] += bad
    doc["command"] += " " + HOSTILE[1]
    doc["unexplained"][0]["example"] = bad
    doc["unexplained"][0]["template"] = bad
    for row in doc["timeline"]:
        row["text"] = bad
    for r in doc["ranks"]:
        if r["host"]:
            r["first_error"] = bad
    doc["ranks"][3]["last_seq"] = {HOSTILE[5]: 1}
    doc["disagreement"]["rows"][1]["op"] = HOSTILE[2]
    doc["clock"]["note"] = bad
    doc["collect_next"].append(bad)
    doc["inputs"]["skipped"].append({"path": HOSTILE[3], "reason": bad})
    return doc


def huge_doc(world: int = 16_384, seed: int = 7) -> dict[str, Any]:
    """A 16,384-rank job with mixed states: most ranks ok, a silent node, culprits, a block of victims."""
    rng = random.Random(seed)
    doc = small_doc()
    ranks = []
    for r in range(world):
        host = f"node-{r // 8:04d}"
        if r in (1037, 9001):
            status, step = "culprit", 4100
        elif 4096 <= r < 4104:
            status, step = "silent", None
        elif 12_000 <= r < 12_512:
            status, step = "victim", 4101
        elif rng.random() < 0.002:
            status, step = "failed", 4101
        else:
            status, step = "ok", 4101
        ranks.append(
            {
                "rank": r,
                "host": None if status == "silent" else host,
                "last_step": step,
                "status": status,
                "last_seq": {} if step is None else {"0": 90_000 + (0 if status == "culprit" else 1)},
                "first_error_time": None,
                "first_error": None,
            }
        )
    doc["ranks"] = ranks
    doc["verdict"]["culprit_ranks"] = [1037, 9001]
    doc["verdict"]["culprit_hosts"] = ["node-0129", "node-1125"]
    doc["verdict"]["victim_ranks"] = list(range(12_000, 12_512))
    doc["collectives"] = [
        {
            "pg": "0",
            "rank": r["rank"],
            "seq": 90_001,
            "op": "ALLREDUCE",
            "numel_in": 1,
            "numel_out": 1,
            "state": "timed_out",
        }
        for r in ranks
        if r["status"] != "silent"
    ]
    doc["disagreement"] = {
        "pg": "0",
        "seq": 90_001,
        "differs": ["state"],
        "rows": [
            {
                "rank": r["rank"],
                "op": "ALLREDUCE",
                "numel_in": 1,
                "numel_out": 1,
                "shape": None,
                "dtype": None,
                "state": "not_enqueued" if r["status"] == "culprit" else "timed_out",
            }
            for r in ranks
            if r["status"] != "silent"
        ],
    }
    hosts = sorted({r["host"] for r in ranks if r["host"]})
    doc["versions"] = {
        "by_host": {
            h: {"torch": ["2.5.1"], "nccl": ["2.21.5"], "cuda": ["12.4"], "driver": ["550"]} for h in hosts
        },
        "distinct": {"torch": ["2.5.1"], "nccl": ["2.21.5"], "cuda": ["12.4"], "driver": ["550"]},
    }
    doc["inputs"]["hosts"] = hosts
    doc["inputs"]["ranks_seen"] = [r["rank"] for r in ranks if r["status"] != "silent"]
    doc["inputs"]["world_size"] = world
    doc["inputs"]["detail"] = [
        {
            "path": f"logs/rank{r}.log",
            "size": 1000,
            "lines": 10,
            "ranks": [r],
            "hosts": [f"node-{r // 8:04d}"],
            "events": 3,
        }
        for r in range(world)
    ]
    return doc


@pytest.fixture
def doc() -> dict[str, Any]:
    return small_doc()


@pytest.fixture
def evil_doc() -> dict[str, Any]:
    return hostile_doc()


@pytest.fixture(scope="session")
def big_doc() -> dict[str, Any]:
    return huge_doc()
