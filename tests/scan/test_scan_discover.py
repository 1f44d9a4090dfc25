"""Job discovery: which folders and archives are jobs, and what is skipped with a reason."""

from __future__ import annotations

import os
import time
from pathlib import Path

from scan_helpers import pack

from hanglens.scan.discover import discover, job_id_for


def _touch(p: Path, text: str = "x\n") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _rel(root: Path, paths: list[str]) -> list[str]:
    return [os.path.relpath(p, root) for p in paths]


def test_default_rule_finds_folders_archives_and_torchrun_trees(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _touch(root / "2024-05-01" / "slurm-1" / "slurm-1.out")
    _touch(root / "2024-05-01" / "slurm-1" / "extra" / "deep" / "more.log")      # part of slurm-1
    _touch(root / "2024-05-01" / "per-rank" / "rank0" / "out.log")               # rank folders: one job
    _touch(root / "2024-05-01" / "per-rank" / "rank1" / "out.log")
    tr = root / "2024-05-02" / "logs" / "run42_abc"
    _touch(tr / "attempt_0" / "0" / "stdout.log")
    _touch(tr / "attempt_0" / "1" / "stderr.log")
    _touch(tr / "attempt_1" / "0" / "stdout.log")                                 # restart: same job
    src = _touch(tmp_path / "src" / "a.log").parent
    pack(src, root / "2024-05-03" / "deep" / "er" / "job7.tar.gz")
    pack(src, root / "2024-05-03" / "job8.zip")
    pack(src, root / "2024-05-01" / "slurm-1" / "inner.tar.gz")                  # inside a job folder
    (root / "empty" / "nothing").mkdir(parents=True)
    _touch(root / "notes" / "README.md")                                          # not a log

    found = discover([root])
    assert _rel(root, [j.path for j in found.jobs]) == [
        "2024-05-01/per-rank", "2024-05-01/slurm-1", "2024-05-02/logs", "2024-05-03/deep/er/job7.tar.gz",
        "2024-05-03/job8.zip",
    ]
    kinds = {os.path.basename(j.path): j.kind for j in found.jobs}
    assert kinds["job7.tar.gz"] == "archive" and kinds["logs"] == "folder"
    logs = next(j for j in found.jobs if j.path.endswith("logs"))
    assert [f[0] for f in logs.files] == [
        "run42_abc/attempt_0/0/stdout.log", "run42_abc/attempt_0/1/stderr.log",
        "run42_abc/attempt_1/0/stdout.log",
    ]
    slurm = next(j for j in found.jobs if j.path.endswith("slurm-1"))
    assert "inner.tar.gz" in [f[0] for f in slurm.files]


def test_a_root_that_is_a_job_and_a_job_with_thousands_of_files(tmp_path: Path) -> None:
    job = tmp_path / "job"
    for i in range(2500):
        _touch(job / f"node{i % 7}" / f"rank{i}.log", "")
    _touch(job / "launcher.log")
    found = discover([job])
    assert len(found.jobs) == 1
    assert found.jobs[0].path == str(job) and len(found.jobs[0].files) == 2501


def test_symlink_loop_is_skipped_with_a_reason_and_terminates(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _touch(root / "a" / "b" / "job" / "rank0.log")
    os.symlink(root / "a", root / "a" / "b" / "loop")
    os.symlink(root / "a" / "b" / "job", root / "alias")
    os.symlink(tmp_path / "missing", root / "dangling")
    inner = root / "j2"
    _touch(inner / "r.log")
    os.symlink(inner, inner / "self")                                             # loop inside a job
    found = discover([root])
    assert _rel(root, [j.path for j in found.jobs]) == ["a/b/job", "j2"]
    reasons = {os.path.relpath(s.path, root): s.reason for s in found.skipped}
    assert reasons["a/b/loop"] == "symlink loop"
    assert reasons["alias"].startswith("same folder as")
    assert reasons["j2/self"] == "symlink loop inside a job"
    assert reasons["dangling"] == "broken symlink, or not a regular file"


def test_job_glob_overrides_the_rule_and_nested_matches_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _touch(root / "c1" / "job_1" / "x" / "r.txt")
    _touch(root / "c1" / "job_1" / "job_9" / "r.txt")
    _touch(root / "c2" / "job_2" / "data.bin")
    (root / "c2" / "job_3").mkdir(parents=True)
    found = discover([root], job_glob="**/job_*")
    assert _rel(root, [j.path for j in found.jobs]) == ["c1/job_1", "c2/job_2", "c2/job_3"]
    assert [s.reason for s in found.skipped] == [f"inside job {root / 'c1' / 'job_1'}"]
    assert next(j for j in found.jobs if j.path.endswith("job_3")).notes == ("empty folder",)


def test_since_keeps_recent_jobs_only(tmp_path: Path) -> None:
    old = _touch(tmp_path / "root" / "old" / "r.log")
    _touch(tmp_path / "root" / "new" / "r.log")
    past = time.time() - 10 * 86400
    os.utime(old, (past, past))
    found = discover([tmp_path / "root"], since_ns=int((time.time() - 86400) * 1e9))
    assert [os.path.basename(j.path) for j in found.jobs] == ["new"]
    assert [s.reason for s in found.skipped] == ["older than --since"]


def test_key_changes_when_a_file_changes_and_ids_are_safe_and_unique(tmp_path: Path) -> None:
    f = _touch(tmp_path / "root" / "we ird<&>" / "r.log")
    k1 = discover([tmp_path / "root"]).jobs[0]
    f.write_text("longer content\n")
    k2 = discover([tmp_path / "root"]).jobs[0]
    assert k1.job_id == k2.job_id and k1.key != k2.key
    assert k1.job_id.startswith("we_ird-")
    assert set(k1.job_id) <= set("abcdefghijklmnopqrstuvwxyz0123456789._-")
    assert job_id_for("/a/x", "x") != job_id_for("/b/x", "x")
    assert len(job_id_for("/p", "d/" * 100)) <= 80


def test_missing_root_is_skipped(tmp_path: Path) -> None:
    found = discover([tmp_path / "nope"])
    assert found.jobs == [] and found.skipped[0].reason == "no such file or folder"


def test_loose_files_beside_job_folders_are_jobs_of_their_own(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _touch(root / "notes.txt")                                   # loose, beside two jobs of the same shape
    _touch(root / "job-a" / "console.log")
    _touch(root / "job-a" / "dumps" / "stuck-0.txt")
    _touch(root / "job-b" / "console.log")
    found = discover([root])
    assert _rel(root, [j.path for j in found.jobs]) == ["job-a", "job-b", "notes.txt"]
    assert {os.path.basename(j.path): j.kind for j in found.jobs}["notes.txt"] == "file"


def test_one_jobs_dump_and_host_folders_stay_parts_of_it(tmp_path: Path) -> None:
    # a job's own subfolders: dumps and traces (no file names in common), machines named like hosts
    one = tmp_path / "job"
    _touch(one / "console.log")
    _touch(one / "dumps" / "stuck-0.txt")
    _touch(one / "pyspy" / "rank0.txt")
    _touch(one / "gpu-a1" / "train.log")
    _touch(one / "gpu-a2" / "train.log")
    assert _rel(tmp_path, [j.path for j in discover([one]).jobs]) == ["job"]
