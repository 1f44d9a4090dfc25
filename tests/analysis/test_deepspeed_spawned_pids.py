"""DeepSpeed's launcher names the pid of each local rank it starts (deepspeed/launcher/launch.py `main`:
`process <pid> spawned with command: [... '--local_rank=<l>' ...]`), so the kernel's OOM kill of that pid
(failure-signatures.md section 5.2: "match pid <-> rank") names the rank even though the launcher's own
`exits with return code = -9` line carries the last local rank's command (section 6).

Lines written here from log-formats.md section 9.2-9.3 (DeepSpeed logger, pdsh prefix, dmesg -T), values
our own.
"""
# ruff: noqa: E501 - log lines stay whole, as NCCL and the launchers print them
from __future__ import annotations

from pathlib import Path

from hanglens import api


def _spawn(prefix: str, pid: int, lr: int) -> str:
    return (f"{prefix}[2026-02-02 10:00:0{lr},100] [INFO] [launch.py:256:main] process {pid} spawned with "
            f"command: ['/usr/bin/python3', '-u', 'fit.py', '--local_rank={lr}', '--deepspeed', 'z3.json']\n")


def _exit(prefix: str, code: int, last: int) -> str:
    return (f"{prefix}[2026-02-02 10:20:11,903] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', "
            f"'-u', 'fit.py', '--local_rank={last}', '--deepspeed', 'z3.json'] exits with return code = {code}\n")


OOM = ("[Mon Feb  2 10:20:10 2026] Out of memory: Killed process {pid} (python3) total-vm:90123456kB, "
       "anon-rss:80123456kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:160000kB oom_score_adj:0\n")


def _verdict(tmp_path: Path, console: str, dmesg: str) -> dict:
    (tmp_path / "console.log").write_text(console)
    (tmp_path / "dmesg.txt").write_text(dmesg)
    return api.analyze([str(tmp_path)]).to_dict()["verdict"]


def test_the_killed_pid_is_the_local_rank_deepspeed_spawned_it_as(tmp_path: Path) -> None:
    console = ("[2026-02-02 10:00:00,001] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict("
               "<class 'list'>, {'localhost': [0, 1, 2]})\n")
    console += "".join(_spawn("", 7100 + lr, lr) for lr in range(3)) + _exit("", -9, 2)
    v = _verdict(tmp_path, console, OOM.format(pid=7101))
    assert (v["category"], v["culprit_ranks"]) == ("oom", [1])


def test_a_pdsh_hosts_spawned_pid_is_placed_by_the_mapping(tmp_path: Path) -> None:
    console = ("n2: [2026-02-02 10:00:00,001] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict("
               "<class 'list'>, {'n1': [0, 1], 'n2': [2, 3]})\n")
    console += "".join(_spawn("n2: ", 7100 + lr, lr) for lr in range(2)) + _exit("n2: ", -9, 1)
    v = _verdict(tmp_path, console, OOM.format(pid=7100))
    assert (v["category"], v["culprit_ranks"]) == ("oom", [2])


def test_a_pid_spawned_on_two_hosts_names_nobody(tmp_path: Path) -> None:
    # containers give every node the same small pids: the kill (no host of its own) is not placed
    console = ("n2: [2026-02-02 10:00:00,001] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict("
               "<class 'list'>, {'n1': [0, 1], 'n2': [2, 3]})\n")
    console += "".join(_spawn(f"n{h}: ", 7100 + lr, lr) for h in (1, 2) for lr in range(2))
    v = _verdict(tmp_path, console + _exit("n2: ", -9, 1), OOM.format(pid=7100))
    assert (v["category"], v["culprit_ranks"]) == ("oom", [])


def test_the_exit_lines_last_local_rank_is_not_a_rank_that_died(tmp_path: Path) -> None:
    # the launcher printed rank 2's command (its loop's last), but rank 1 is the one the kernel killed
    console = ("[2026-02-02 10:00:00,001] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict("
               "<class 'list'>, {'localhost': [0, 1, 2]})\n")
    console += "".join(_spawn("", 7100 + lr, lr) for lr in range(3)) + _exit("", -9, 2)
    v = _verdict(tmp_path, console, OOM.format(pid=7101))
    assert 2 not in v["victim_ranks"] and 2 not in v["culprit_ranks"]
