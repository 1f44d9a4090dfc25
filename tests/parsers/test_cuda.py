"""Behaviour tests of the cuda parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

import pytest

from hanglens.parsers.cuda import CudaParser, classify_cuda, size_bytes

from .harness import events as read_events

events = partial(read_events, [CudaParser])


@pytest.mark.parametrize(("message", "error"), [
    ("an illegal memory access was encountered", "illegal_memory_access"),
    ("misaligned address", "misaligned_address"),
    ("device-side assert triggered", "device_side_assert"),
    ("unknown error", "unknown"),
    ("uncorrectable ECC error encountered", "ecc"),
    ("unspecified launch failure", "launch_failure"),
    ("invalid device ordinal", "invalid_device_ordinal"),
    ("invalid argument", "invalid_argument"),
    ("CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", "cublas"),
    ("CUDNN_STATUS_MAPPING_ERROR", "cudnn"),
    ("an illegal instruction was encountered", "other"),
])
def test_cuda_messages_are_classified(message: str, error: str) -> None:
    assert classify_cuda(message) == error


@pytest.mark.parametrize(("text", "value"), [
    ("20.00 MiB", 20 << 20), ("1.5 GiB", 3 << 29), ("512 bytes", 512), ("3.00 KiB", 3072), ("", None),
    ("x", None),
])
def test_sizes_are_bytes(text: str, value: int | None) -> None:
    assert size_bytes(text) == value


def test_cuda_error_out_of_memory_is_also_an_oom() -> None:
    found = events("RuntimeError: CUDA error: out of memory")
    assert {e.kind for e in found} == {"cuda_error", "oom"}


def test_message_stops_before_joined_boilerplate() -> None:
    text = ("RuntimeError: CUDA error: an illegal memory access was encountered\\nCUDA kernel errors might "
            "be asynchronously reported at some other API call")
    messages = [e.get("message") for e in events(text, "cuda_error")]
    assert messages == ["an illegal memory access was encountered"]


def test_each_assert_line_keeps_its_own_thread() -> None:
    text = "".join(f"k.cu:7: f(): block: [0,0,0], thread: [{t},0,0] Assertion `ok` failed.\n" for t in (3, 4))
    assert [e.get("thread") for e in events(text, "device_assert")] == ["3,0,0", "4,0,0"]


def test_slurm_cgroup_oom_lines() -> None:
    # failure-signatures.md section 5.2 (SLURM cgroup row): srun names the killed task(s), slurmstepd
    # only counts
    found = events("srun: error: cn-07: tasks 2,5-6: Out Of Memory\n", "oom")
    assert [(e.get("device"), e.get("launcher"), e.get("tasks"), e.get("task_host")) for e in found] == [
        ("host", "srun", [2, 5, 6], "cn-07")]
    found = events("slurmstepd: error: Detected 1 oom_kill event(s) in StepId=44107.0. Some of the step "
                   "tasks have been OOM Killed.\n", "oom")
    assert [(e.get("launcher"), e.get("tasks")) for e in found] == [("slurmstepd", None)]
    for text in ("srun: error: cn-07: task 2: Exited with exit code 1\n",
                 "print('Out Of Memory handling enabled')\n",
                 "slurmstepd: error: Detected oom_kill events\n"):
        assert events(text, "oom") == []
