"""CUDA runtime and library errors, device-side assertions, CUDA and host OOM, and NVIDIA Xid lines."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import (
    INT64_MAX,
    EventSpec,
    Example,
    Parser,
    match_at_keyword,
    quoted_in_prose,
    task_ids,
    to_count,
)

Fields = dict[str, Any]

# The message ends where the boilerplate would start when several lines were joined into one.
# `CUDA error: <msg>` up to the first of these ends (or the end of the line). The end is searched for
# once, forwards, instead of re-checked after every character of a lazy group (quadratic on a line
# that repeats the keyword without an end; issue 12, item 7).
CUDA_ERROR_HEAD_RE = re.compile(r"(?:CUDA error|Triton Error \[CUDA\]): ")
CUDA_ERROR_END_RE = re.compile(
    r"\s{0,64}(?:\\n|CUDA kernel errors might|For debugging consider|"
    r"Compile with `TORCH_USE_CUDA_DSA`|Exception raised from|$)"
)
MSG_STOP_RE = re.compile(r"[{}\n]")


def cuda_error_message(text: str) -> tuple[int, str] | None:
    """(start of the match, message) of the first `CUDA error: <msg>` whose message holds no brace."""
    end: re.Match[str] | None = None
    stop: re.Match[str] | None = None
    for head in CUDA_ERROR_HEAD_RE.finditer(text):
        begin = head.end()
        if end is None or end.start() < begin + 1:
            end = CUDA_ERROR_END_RE.search(text, begin + 1)
        if stop is None or stop.start() < begin:
            stop = MSG_STOP_RE.search(text, begin)
        if end is None or begin >= len(text):
            return None
        if stop is None or stop.start() >= end.start():
            return head.start(), text[begin:end.start()]
    return None


LIB_STATUS_RE = re.compile(r"(?P<status>(?P<lib>CUBLAS|CUSOLVER|CUSPARSE|CUFFT|CURAND)_STATUS_\w+)")
CUDNN_RE = re.compile(r"cuDNN error: (?P<status>CUDNN_STATUS_\w+)")
ASSERT_RE = re.compile(
    r"(?<![^\s:])(?P<file>[^\s:]{1,255}):(?P<line>\d{1,8}): (?P<func>[^\r\n]{0,512}?): ?block: "
    r"\[(?P<block>\d{1,10}, ?\d{1,10}, ?\d{1,10})\], "
    r"thread: \[(?P<thread>\d{1,10}, ?\d{1,10}, ?\d{1,10})\] Assertion [`'](?P<cond>.{0,2048})[`'] failed\."
)
OOM_HEAD_RE = re.compile(r"CUDA out of memory\.(?= Tried to allocate|\s*$|\s*\\n)")
# Bounded and started only where a number starts: a longer "number" is not a size (issue 12, items 7, 9).
SIZE = r"(?<![\d.])[\d.]{1,32} ?(?:[KMGTP]i?B|bytes|B)"
SIZE_RE = re.compile(r"(?P<num>\d{1,20}(?:\.\d{1,20})?) ?(?P<unit>[KMGTP]i?B|bytes|B)")
CUDNN_STATUS_RE = re.compile(r"CUDNN_STATUS_\w+")
OOM_REQ_RE = re.compile(rf"Tried to allocate (?P<v>{SIZE})")
OOM_GPU_RE = re.compile(r"\(GPU (?P<gpu>\d{0,6});|GPU (?P<gpu2>\d{0,6}) ?has a total capac")
OOM_TOTAL_RE = re.compile(rf"(?P<v>{SIZE}) total capacity|total capac(?:i)?ty of (?P<v2>{SIZE})")
OOM_FREE_RE = re.compile(rf"(?P<v>{SIZE}) free;|of which (?P<v2>{SIZE}) is free")
HOST_OOM_RE = re.compile(
    r"(?:Out of memory|out of memory)(?: \([^()]{0,256}\))?: Kill(?:ed)? process (?P<pid>\d{1,10}) "
    r"\((?P<comm>[^()]{0,256})\)"
)
# Kubernetes' record of a container the memory cgroup killed (failure-signatures.md section 5.2: "Kubernetes
# `OOMKilled`/exit 137"): `kubectl describe pod` prints `Reason:       OOMKilled` under the container's State
# or Last State; `kubectl get pods` prints it in the STATUS column (`<pod>   0/1   OOMKilled   0   2h`).
CONTAINER_OOM_RE = re.compile(
    r"^\s{0,40}Reason:\s{1,40}OOMKilled\s*$"
    r"|^(?P<pod>[a-z0-9][a-z0-9.-]{0,252})\s{1,40}\d{1,4}/\d{1,4}\s{1,40}OOMKilled\s{1,40}\d"
)
# c10/core/impl/alloc_cpu.cpp (CAFFE_ENFORCE in alloc_cpu): posix_memalign failed ("can't allocate memory",
# Linux/macOS) or memalign/_aligned_malloc returned NULL ("not enough memory", Android/Windows).
CPU_ALLOC_RE = re.compile(
    r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory): you tried to allocate "
    r"(?P<bytes>\d{1,20}) bytes"
)
# Python's own allocation failure as the exception line of a traceback: `MemoryError` (CPython, any
# extension that calls PyErr_NoMemory) and numpy's `_ArrayMemoryError: Unable to allocate <size> ...`.
PY_MEMORY_RE = re.compile(
    r"^(?:numpy\.(?:_?core\.)?_exceptions\._ArrayMemoryError: Unable to allocate "
    rf"(?P<v>{SIZE})|MemoryError(?::|$))"
)
# Slurm's cgroup OOM records (failure-signatures.md section 5.2, SLURM cgroup row; SchedMD/slurm
# src/srun/launch.c `_task_finish`, SIG_OOM branch, and slurmstepd): srun names the task(s) the memory cgroup
# killed, `srun: error: <host>: task(s) <ids>: Out Of Memory`, and slurmstepd counts the kills of the step,
# `slurmstepd: error: Detected <n> oom_kill event(s) in StepId=<job>.<step>. Some of the step tasks have been
# OOM Killed.` (no task named).
SRUN_OOM_RE = re.compile(
    r"srun: error: (?P<host>[\w.\[\],-]{1,255}): tasks? (?P<tasks>\d{1,6}(?:[-,]\d{1,6}){0,64}): "
    r"Out Of Memory\s*$"
)
SLURMSTEPD_OOM_RE = re.compile(
    r"slurmstepd: error: Detected (?P<n>\d{1,9}) oom.kill event(?:s|\(s\))? "
    r"in StepId=(?P<step>[\w.+]{1,64})\b"
)
OOM_KILL_RE = re.compile(r"oom-kill:[^\r\n]{0,1024}?\btask=(?P<comm>[^,\s]{0,255}),pid=(?P<pid>\d{1,10})")
XID_RE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\): (?P<xid>\d+),"
    r"(?: pid=(?P<pid>\d+|'?<unknown>'?),)?(?: name=(?P<proc>[^,]{0,255}),)? ?(?P<detail>.*)"
)
SXID_RE = re.compile(
    r"nvidia-nvswitch\d{1,4}: SXid \((?:PCI:)?(?P<pci>[^()]{1,64})\): (?P<xid>\d{1,10}),? ?(?P<detail>.*)"
)

PGP_RE = re.compile(
    r"\[PG ID (?P<pg_id>\d{1,10}) PG GUID (?P<pg_guid>[^\s()\[\]]{1,128})(?:\((?P<pg_desc>[^()]{0,256})\))?"
    r" Rank (?P<pg_rank>\d{1,10})\]"
    r"|\[PG (?P<pg_uid>[^\s()\[\]]{1,128})(?: \((?P<pg_desc2>[^()]{0,256})\))? Rank (?P<pg_rank2>\d{1,10})\]"
    r"|\[Rank (?P<rank>\d+)\]"
)

UNITS = {
    "B": 1,
    "bytes": 1,
    "KiB": 1 << 10,
    "MiB": 1 << 20,
    "GiB": 1 << 30,
    "TiB": 1 << 40,
    "PiB": 1 << 50,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
}

# cudaGetErrorString texts (and driver-API names NCCL prints) mapped to the event's closed `error` set.
CUDA_CLASSES: tuple[tuple[str, str], ...] = (
    ("illegal memory access", "illegal_memory_access"),
    ("cudaErrorIllegalAddress", "illegal_memory_access"),
    ("misaligned address", "misaligned_address"),
    ("device-side assert", "device_side_assert"),
    ("unspecified launch failure", "launch_failure"),
    ("ECC error", "ecc"),
    ("invalid device ordinal", "invalid_device_ordinal"),
    ("invalid argument", "invalid_argument"),
    ("unknown error", "unknown"),
)


def classify_cuda(message: str) -> str:
    """Map a cudaGetErrorString text to the `error` value of `cuda_error` (shared with the nccl parser)."""
    if LIB_STATUS_RE.search(message):
        return "cublas"
    if "CUDNN_STATUS_" in message:
        return "cudnn"
    for needle, cls in CUDA_CLASSES:
        if needle in message:
            return cls
    return "other"


def pg_fields(text: str) -> Fields:
    """`pg`, `pg_rank` and `stated_rank` from the first PG/work prefix in `text` (empty when none)."""
    m = PGP_RE.search(text)
    if not m:
        return {}
    if m["rank"] is not None:
        return {"stated_rank": to_count(m["rank"])}
    pg = m["pg_guid"] or m["pg_uid"]
    desc = m["pg_desc"] if m["pg_guid"] else m["pg_desc2"]
    pg_rank = to_count(m["pg_rank"] or m["pg_rank2"])
    out: Fields = {"pg": pg, "pg_rank": pg_rank}
    if pg == "0" or desc == "default_pg":
        out["stated_rank"] = pg_rank  # a rank in the default PG is the global rank
    return out


def size_bytes(text: str | None) -> int | None:
    """`4.35 GiB` -> bytes (int); None for missing or unreadable sizes."""
    m = SIZE_RE.match(text or "")
    if not m:
        return None
    try:
        value = float(m["num"]) * UNITS[m["unit"]]
    except (ValueError, KeyError):
        return None
    # A size beyond int64 (e.g. a capacity printed with hundreds of digits) is not a size: None.
    return int(value) if 0 <= value <= INT64_MAX else None


def _group(m: re.Match[str] | None, *names: str) -> str | None:
    if m is None:
        return None
    for name in names:
        value = m.group(name)
        if value is not None:
            return value
    return None


class CudaParser(Parser):
    """CUDA-side failures of a rank, and the kernel's view of the node.

    Example: `RuntimeError: CUDA error: an illegal memory access was encountered`
    """

    name = "cuda"
    triggers = (
        "CUDA error",
        "Error [CUDA]",
        "cuDNN error",
        "Assertion ",
        "CUDA out of memory",
        "DefaultCPUAllocator",
        "MemoryError",
        "of memory: Kill",
        "oom-kill:",
        "OOMKilled",
        "Xid (",
        "Out Of Memory",
        "oom_kill event",
    )
    emits = (
        EventSpec(
            "cuda_error",
            ("error", "message", "status", "pg", "pg_rank", "stated_rank"),
            "CUDA runtime error (`CUDA error: <msg>`), cuBLAS/cuDNN status errors; PG fields when the "
            "error is quoted by a ProcessGroupNCCL line",
        ),
        EventSpec(
            "device_assert",
            ("file", "line", "condition", "block", "thread"),
            "kernel assertion printf (one per failing thread)",
        ),
        EventSpec(
            "oom",
            ("device", "requested", "gpu", "total", "free", "pid", "process", "launcher", "tasks",
             "task_host"),
            "CUDA OOM (sizes in bytes), host OOM killer (`device: host`, pid, process name; Slurm's cgroup "
            "kill: `launcher: srun` with the killed `tasks` (SLURM_PROCIDs) on `task_host`, or slurmstepd's "
            "step-wide count with no task), a Kubernetes container OOMKilled (`device: container`, pod name "
            "when the line states it) or PyTorch's CPU allocator failing (`device: cpu`, requested bytes)",
        ),
        EventSpec("xid", ("xid", "pci", "detail", "pid", "nvswitch"), "NVIDIA driver Xid / NVSwitch SXid"),
    )
    examples = (
        Example("srun: error: cn-0412: task 3: Out Of Memory", "oom",
                {"device": "host", "launcher": "srun", "tasks": [3], "task_host": "cn-0412"},
                "Slurm srun (src/srun/launch.c _task_finish, SIG_OOM), cgroup memory limit"),
        Example("slurmstepd: error: Detected 2 oom_kill events in StepId=88120.0. Some of the step tasks "
                "have been OOM Killed.", "oom", {"device": "host", "launcher": "slurmstepd", "tasks": None},
                "Slurm slurmstepd (task/cgroup), any version"),
        Example(
            "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors "
            "might be asynchronously reported at some other API call,so the stacktrace below might be "
            "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
            "cuda_error",
            {"error": "illegal_memory_access", "message": "an illegal memory access was encountered"},
            "torch 1.10-1.13",
        ),
        Example(
            "RuntimeError: CUDA error: device-side assert triggered\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "cuda_error",
            {"error": "device_side_assert"},
            "torch 2.0-2.7",
        ),
        Example(
            "torch.AcceleratorError: CUDA error: misaligned address",
            "cuda_error",
            {"error": "misaligned_address"},
            "torch 2.8+",
        ),
        Example(
            "[rank3]:[E1003 18:37:01.832617039 ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 3] Process group watchdog thread terminated with exception: CUDA error: unspecified "
            "launch failure",
            "cuda_error",
            {"error": "launch_failure", "pg": "0", "pg_rank": 3, "stated_rank": 3},
            "torch 2.5+",
        ),
        Example(
            "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: CUDA "
            "error: uncorrectable ECC error encountered",
            "cuda_error",
            {"error": "ecc", "stated_rank": 1},
            "torch 1.13-2.2",
        ),
        Example("RuntimeError: CUDA error: unknown error", "cuda_error", {"error": "unknown"}, "torch 1.10+"),
        Example(
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "oom",
            {"device": "cuda", "requested": None},
            "torch 1.10+ (cuBLAS handle creation on a full GPU)",
        ),
        Example(
            "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
            "cuda_error",
            {"error": "illegal_memory_access"},
            "Triton 2.x-3.x kernels (torch.compile, vLLM)",
        ),
        Example(
            "RuntimeError: CUDA error: invalid device ordinal",
            "cuda_error",
            {"error": "invalid_device_ordinal"},
            "torch 1.10+",
        ),
        Example(
            "RuntimeError: CUDA error: invalid argument",
            "cuda_error",
            {"error": "invalid_argument"},
            "torch 1.10+",
        ),
        Example(
            "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( "
            "handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, "
            "CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
            "cuda_error",
            {"error": "cublas", "status": "CUBLAS_STATUS_EXECUTION_FAILED"},
            "torch 1.10+",
        ),
        Example(
            "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
            "cuda_error",
            {"error": "cudnn", "status": "CUDNN_STATUS_INTERNAL_ERROR"},
            "torch 1.10+",
        ),
        Example(
            "RuntimeError: CUDA error: the launch timed out and was terminated",
            "cuda_error",
            {"error": "other"},
            "torch 1.10+",
        ),
        Example(
            "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: "
            '[0,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` '
            "failed.",
            "device_assert",
            {
                "file": "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu",
                "line": 92,
                "condition": '-sizes[i] <= index && index < sizes[i] && "index out of bounds"',
                "thread": "0,0,0",
            },
            "torch 1.10+",
        ),
        Example(
            "RuntimeError: CUDA out of memory. Tried to allocate 12.55 GiB (GPU 0; 23.69 GiB total "
            "capacity; 12.58 GiB already allocated; 10.38 GiB free; 12.58 GiB reserved in total by "
            "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
            "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
            "oom",
            {
                "device": "cuda",
                "requested": int(12.55 * (1 << 30)),
                "gpu": 0,
                "total": int(23.69 * (1 << 30)),
                "free": int(10.38 * (1 << 30)),
            },
            "torch 1.10-2.0",
        ),
        Example(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a "
            "total capacty of 79.15 GiB of which 3.25 MiB is free. Including non-PyTorch memory, this "
            "process has 79.13 GiB memory in use. Of the allocated memory 77.50 GiB is allocated by "
            "PyTorch, and 1.02 GiB is reserved by PyTorch but unallocated.",
            "oom",
            {"device": "cuda", "requested": 20 * (1 << 20), "gpu": 1, "free": int(3.25 * (1 << 20))},
            "torch 2.1",
        ),
        Example(
            "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU  has a "
            "total capacity of 39.39 GiB of which 1.06 GiB is free. Process 4242 has 38.32 GiB memory in "
            "use. Of the allocated memory 36.00 GiB is allocated by PyTorch, and 1.50 GiB is reserved by "
            "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
            "oom",
            {"device": "cuda", "requested": 2 * (1 << 30), "gpu": None, "total": int(39.39 * (1 << 30))},
            "torch 2.4+",
        ),
        Example(
            "[1234567.890123] Out of memory: Killed process 41233 (python) total-vm:98765432kB, "
            "anon-rss:65432100kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:130000kB oom_score_adj:0",
            "oom",
            {"device": "host", "pid": 41233, "process": "python"},
            "Linux 5.x+ dmesg",
        ),
        Example(
            "Mar  1 12:34:56 node07 kernel: Memory cgroup out of memory: Kill process 5120 (python3) "
            "score 998 or sacrifice "
            "child",
            "oom",
            {"device": "host", "pid": 5120},
            "Linux 3.x-4.x journal",
        ),
        Example(
            "[1234567.890000] "
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,tas"
            "k_memcg=/user.slice,task=python,pid=41233,uid=1000",
            "oom",
            {"device": "host", "pid": 41233, "process": "python"},
            "Linux 4.19+ dmesg",
        ),
        Example(
            "[rank3]: RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: "
            "can't allocate memory: you tried to allocate 85899345920 bytes. Error code 12 (Cannot allocate "
            "memory)",
            "oom",
            {"device": "cpu", "requested": 85899345920},
            "torch 1.x-2.x on Linux (c10/core/impl/alloc_cpu.cpp; written here from that source)",
        ),
        Example(
            "RuntimeError: [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:72] data. "
            "DefaultCPUAllocator: not enough memory: you tried to allocate 3221225472 bytes.",
            "oom",
            {"device": "cpu", "requested": 3221225472},
            "torch 1.x-2.x on Windows (c10/core/impl/alloc_cpu.cpp; written here from that source)",
        ),
        Example(
            "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB for an array with shape "
            "(1000000, 1000) and data type float64",
            "oom",
            {"device": "cpu", "requested": 7999376588},
            "numpy 1.17+ (numpy/_core/_exceptions.py; written here from that source)",
        ),
        Example("MemoryError", "oom", {"device": "cpu", "requested": None}, "CPython, any version"),
        Example("      Reason:       OOMKilled", "oom", {"device": "container", "process": None},
                "kubectl describe pod (written here from failure-signatures.md section 5.2)"),
        Example("ft-job-worker-3   0/1     OOMKilled   0          2h41m", "oom",
                {"device": "container", "process": "ft-job-worker-3"},
                "kubectl get pods (written here from failure-signatures.md section 5.2)"),
        Example(
            "NVRM: Xid (PCI:0000:2b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            "xid",
            {"xid": 79, "pci": "0000:2b:00", "detail": "GPU has fallen off the bus."},
            "NVIDIA driver 535+",
        ),
        Example(
            "[ 3456.789012] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for "
            "remapping, reset gpu to activate.",
            "xid",
            {"xid": 63, "pci": "0000:10:1c", "pid": 1896},
            "NVIDIA driver 470+",
        ),
        Example(
            "NVRM: Xid (0000:08:00): 31, Ch 0000003b, intr 10000000. MMU Fault",
            "xid",
            {"xid": 31, "pci": "0000:08:00"},
            "old NVIDIA drivers",
        ),
        Example(
            "nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 44 egress non-posted PRIV "
            "error",
            "xid",
            {"xid": 12028, "nvswitch": True},
            "NVSwitch systems",
        ),
    )
    near_misses = (
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        '    raise RuntimeError(f"CUDA error: {msg}")',
        "RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
        "WARNING: CUDA out of memory detected in batch 3, retrying with a smaller batch",
        "Last week rank 1 died with `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB` "
        "at step 90, so I halved the batch.",
        "Is `CUDA error: an illegal memory access was encountered` from my kernel or from NCCL?",
        "    except torch.cuda.OutOfMemoryError:",
        "assert x > 0, 'Assertion failed in data pipeline'",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "CUDA error checking is enabled",
        "# restart the pod if it gets OOMKilled again",
        "      Reason:       Completed",
    )

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if "CUDA error" in text or "cuDNN error" in text or "Error [CUDA]" in text:
            out.extend(self._cuda_error(line))
        if "Assertion " in text:
            m = ASSERT_RE.search(text)
            if m:
                fields = {
                    "file": m["file"],
                    "line": to_count(m["line"]),
                    "condition": m["cond"],
                    "block": m["block"].replace(" ", ""),
                    "thread": m["thread"].replace(" ", ""),
                }
                # `line` is also the name of event()'s LogLine parameter, so the field is set afterwards.
                out.append(replace(self.event("device_assert", line), fields=fields))
        if "CUDA out of memory" in text:
            out.extend(self._cuda_oom(line))
        if "of memory" in text:
            m = HOST_OOM_RE.search(text)
            if m:
                out.append(self.event("oom", line, device="host", pid=to_count(m["pid"]), process=m["comm"]))
        if "DefaultCPUAllocator" in text:
            m = CPU_ALLOC_RE.search(text)
            if m:
                out.append(self.event("oom", line, device="cpu", requested=to_count(m["bytes"])))
        if "MemoryError" in text:
            m = PY_MEMORY_RE.search(text)
            if m:
                out.append(self.event("oom", line, device="cpu", requested=size_bytes(m["v"])))
        if "Out Of Memory" in text and text.startswith("srun: error: "):
            m = SRUN_OOM_RE.match(text)
            if m:
                out.append(self.event("oom", line, device="host", launcher="srun", tasks=task_ids(m["tasks"]),
                                      task_host=m["host"]))
        if "oom_kill event" in text or "oom-kill event" in text:
            m = SLURMSTEPD_OOM_RE.search(text)
            if m:
                out.append(self.event("oom", line, device="host", launcher="slurmstepd", tasks=None,
                                      task_host=None))
        if "OOMKilled" in text:
            m = CONTAINER_OOM_RE.search(text)
            if m:
                out.append(self.event("oom", line, device="container", process=m["pod"]))
        if "oom-kill:" in text:
            m = match_at_keyword(OOM_KILL_RE, text, "oom-kill:")
            if m:
                out.append(self.event("oom", line, device="host", pid=to_count(m["pid"]), process=m["comm"]))
        if "Xid (" in text:
            # GPU Xid first; an NVSwitch SXid line has the same fields but no pid.
            for rx, nvswitch in ((XID_RE, False), (SXID_RE, True)):
                m = rx.search(text)
                if m:
                    pid = None if nvswitch else to_count(m["pid"])
                    out.append(self.event("xid", line, xid=to_count(m["xid"]), pci=m["pci"],
                                          detail=m["detail"].strip(), pid=pid, nvswitch=nvswitch))
                    break
        return out

    def _cuda_error(self, line: LogLine) -> list[Event]:
        text = line.text
        m = CUDNN_RE.search(text)
        if m:
            return [self.event("cuda_error", line, error="cudnn", message=m["status"], status=m["status"])]
        found_msg = cuda_error_message(text)
        if found_msg is None:
            return []
        at, msg = found_msg
        if quoted_in_prose(text, at):
            return []
        msg = msg.strip()
        if not msg or msg.startswith(("%", "<", "'", '"', "+")):
            return []
        out = []
        error = classify_cuda(msg)
        status = None
        lib = LIB_STATUS_RE.search(msg)
        if lib:
            status = lib["status"]
        elif "CUDNN_STATUS_" in msg:
            found = CUDNN_STATUS_RE.search(msg)
            status = found.group(0) if found else None
        out.append(
            self.event(
                "cuda_error", line, error=error, message=msg, status=status, **pg_fields(text[:at])
            )
        )
        # `CUDA error: out of memory` is a raw cudaMalloc outside the caching allocator; a CUDA library that
        # cannot allocate its own GPU workspace says `<LIB>_STATUS_ALLOC_FAILED` (`CUBLAS_STATUS_ALLOC_FAILED
        # when calling `cublasCreate(handle)``): the GPU is out of memory either way (failure-signatures.md
        # sections 4 and 5.1; log-formats.md section 5.1).
        if msg.startswith("out of memory") or (status or "").endswith("_STATUS_ALLOC_FAILED"):
            out.append(
                self.event("oom", line, device="cuda", requested=None, gpu=None, total=None, free=None)
            )
        return out

    def _cuda_oom(self, line: LogLine) -> list[Event]:
        text = line.text
        head = OOM_HEAD_RE.search(text)
        if not head or quoted_in_prose(text, head.start()):
            return []
        rest = text[head.start() :]
        gpu_m = OOM_GPU_RE.search(rest)
        gpu_txt = _group(gpu_m, "gpu", "gpu2")
        return [
            self.event(
                "oom",
                line,
                device="cuda",
                requested=size_bytes(_group(OOM_REQ_RE.search(rest), "v")),
                gpu=to_count(gpu_txt) if gpu_txt else None,
                total=size_bytes(_group(OOM_TOTAL_RE.search(rest), "v", "v2")),
                free=size_bytes(_group(OOM_FREE_RE.search(rest), "v", "v2")),
            )
        ]
