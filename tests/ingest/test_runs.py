"""A folder that holds more than one run of a job (ingest/runs.py): the latest run is judged, the earlier ones
are set aside and named.

torchrun prints its `OMP_NUM_THREADS` banner once per invocation, before its rendezvous (log-formats.md
sections 3.4-3.5, torch 2.5-2.9 agent format), `--tee 3` prefixes the workers' lines with `[default<l>]:` and
the `[rank<N>]: ` excepthook prefix (section 3.3), and `--log-dir` gets one `<run_id>_<random>/` tree per
invocation (section 3.1). Lines written here from those sections (the worker lines are a script's own), values
our own; the shapes are those of the real runs of tools/probe63.
"""
# ruff: noqa: E501 - log lines stay whole, as torchrun prints them
from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema

from hanglens import api

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schema" / "analysis.schema.json").read_text())

BANNER = """\
W1206 {t} 4101 torch/distributed/run.py:874]
W1206 {t} 4101 torch/distributed/run.py:874] *****************************************
W1206 {t} 4101 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.
W1206 {t} 4101 torch/distributed/run.py:874] *****************************************
"""


def healthy(t: str, ws: int = 2, prefix: str = "") -> str:
    out = BANNER.format(t=t).replace("W1206", prefix + "W1206")
    for r in range(ws):
        out += f"{prefix}[default{r}]:[rank {r}] run starting: world size {ws}\n"
    for s in (1, 2, 3):
        for r in range(ws):
            out += f"{prefix}[default{r}]:[rank {r}] step {s}/3 loss 0.51{s}\n"
    for r in range(ws):
        out += f"{prefix}[default{r}]:[rank {r}] training finished, saving checkpoint\n"
    return out


def crashed(t: str, t_end: str, bad: int = 1, ws: int = 2) -> str:
    out = BANNER.format(t=t)
    for r in range(ws):
        out += f"[default{r}]:[rank {r}] run starting: world size {ws}\n"
    out += f"""\
[default{bad}]:[rank{bad}]: Traceback (most recent call last):
[default{bad}]:[rank{bad}]:   File "/home/user/train/train.py", line 85, in main
[default{bad}]:[rank{bad}]:     raise RuntimeError("shard 3 holds a corrupt record")
[default{bad}]:[rank{bad}]: RuntimeError: shard 3 holds a corrupt record
W1206 {t_end} 4301 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 4340 closing signal SIGTERM
E1206 {t_end} 4301 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: {bad} (pid: 4341) of binary: /home/user/.venv/bin/python3
"""
    return out


def test_an_appended_console_is_judged_on_its_last_run(tmp_path: Path) -> None:
    text = healthy("08:20:01.000000") + crashed("08:25:01.000000", "08:25:09.000000")
    (tmp_path / "train.log").write_text(text)
    ing = api.read([tmp_path])
    first = text.splitlines().index(BANNER.format(t="08:25:01.000000").splitlines()[0]) + 1
    assert ing.events and min(e.line for e in ing.events) >= first
    assert "2 runs" in ing.runs and "train.log lines 1-" in ing.runs
    v = api.analyze([tmp_path]).verdict
    assert v.category.value == "rank_crash" and v.culprit_ranks == (1,)
    assert "2 runs" in v.summary


def test_a_failed_run_followed_by_a_healthy_rerun_is_healthy_and_names_the_failure(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(crashed("08:20:01.000000", "08:20:09.000000")
                                        + healthy("08:25:01.000000"))
    v = api.analyze([tmp_path]).verdict
    assert v.category.value == "none"
    assert "run 1 (train.log lines 1-" in v.summary and "ended in a failure" in v.summary


def test_the_json_document_lists_the_runs_oldest_first_and_which_was_judged(tmp_path: Path) -> None:
    text = crashed("08:20:01.000000", "08:20:09.000000") + healthy("08:25:01.000000")
    (tmp_path / "train.log").write_text(text)
    # the run starts at its launcher's start, the banner's `Setting OMP_NUM_THREADS` line
    start = text.splitlines().index(BANNER.format(t="08:25:01.000000").splitlines()[2]) + 1
    doc = api.analyze([tmp_path]).to_dict()
    jsonschema.validate(doc, SCHEMA)
    runs = doc["inputs"]["runs"]
    assert runs == [
        {"run": 1, "where": [f"train.log lines 1-{start - 1}"], "judged": False, "failed": True},
        {"run": 2, "where": [f"train.log from line {start}"], "judged": True, "failed": None},
    ]


def test_a_scan_row_says_its_job_holds_several_runs(tmp_path: Path) -> None:
    from hanglens.scan import scan

    for name, text in (("appended", crashed("08:20:01.000000", "08:20:09.000000") + healthy("08:25:01.000000")),
                       ("single", crashed("08:20:01.000000", "08:20:09.000000"))):
        (tmp_path / "jobs" / name).mkdir(parents=True)
        (tmp_path / "jobs" / name / "train.log").write_text(text)
    df = scan([tmp_path / "jobs"], jobs=1)
    rows = {os.path.basename(r["path"]): r for r in df.to_dict("records")}
    assert rows["appended"]["category"] == "none"
    assert "holds 2 runs, the latest judged; earlier run 1 ended in a failure" in rows["appended"]["notes"]
    assert rows["single"]["category"] == "rank_crash" and "runs" not in (rows["single"]["notes"] or "")


def test_one_run_lists_no_runs(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(crashed("08:20:01.000000", "08:20:09.000000"))
    assert api.analyze([tmp_path]).to_dict()["inputs"]["runs"] == []


def test_two_banners_in_a_row_of_one_writer_are_two_runs(tmp_path: Path) -> None:
    # the console of a `--log-dir --redirects 3` job holds little but the agent's banner per run
    text = BANNER.format(t="08:20:01.000000") + crashed("08:25:01.000000", "08:25:09.000000")
    (tmp_path / "train.out").write_text(text)
    assert "2 runs" in api.read([tmp_path]).runs


def test_the_agents_of_two_nodes_merged_into_one_console_are_one_run(tmp_path: Path) -> None:
    # `srun -l`: each node's agent prints its banner before the rendezvous, so before any worker line
    text = (BANNER.format(t="08:20:01.000000").replace("W1206", "0: W1206")
            + BANNER.format(t="08:20:02.000000").replace("W1206", "1: W1206")
            + "".join(f"{n}: [default{r}]:[rank {2 * n + r}] step 1/3 loss 0.5\n" for n in (0, 1) for r in (0, 1)))
    (tmp_path / "job.log").write_text(text)
    assert api.read([tmp_path]).runs == ""


def test_one_slurm_file_per_submission_judges_the_latest(tmp_path: Path) -> None:
    (tmp_path / "slurm-48211.out").write_text(crashed("08:20:01.000000", "08:20:09.000000", bad=0))
    (tmp_path / "slurm-48218.out").write_text(crashed("08:25:01.000000", "08:25:09.000000", bad=1))
    ing = api.read([tmp_path])
    assert "2 runs" in ing.runs
    assert {s.path for s in ing.skipped if "earlier run" in s.reason} == {"slurm-48211.out"}
    assert api.analyze([tmp_path]).verdict.culprit_ranks == (1,)


def test_a_rank_file_dated_apart_is_not_a_run_of_its_own(tmp_path: Path) -> None:
    # a victim whose only dated line is its timeout, long after the culprit's last dated line: one run
    (tmp_path / "rank0.log").write_text("2026-12-06 08:20:01,100 INFO train: step 1/3\n")
    (tmp_path / "rank1.log").write_text("2026-12-06 08:50:01,100 INFO train: step 2/3\n")
    assert api.read([tmp_path]).runs == ""


def test_stale_rank_files_of_a_bigger_earlier_run_are_set_aside(tmp_path: Path) -> None:
    (tmp_path / "nohup.out").write_text(BANNER.format(t="08:20:01.000000") + BANNER.format(t="08:25:01.000000"))
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_text(f"2026-12-06 08:25:1{r},100 INFO train: step 1/3\n")
    for r in range(4, 8):
        (tmp_path / f"rank{r}.log").write_text(f"2026-12-06 08:20:0{r},100 INFO train: step 1/3\n")
    ing = api.read([tmp_path])
    assert {s.path for s in ing.skipped if "earlier run" in s.reason} == {f"rank{r}.log" for r in range(4, 8)}


def _tree(root: Path, run_dir: str, text: str, mtime: float) -> None:
    for lr in (0, 1):
        d = root / "logs" / run_dir / "attempt_0" / str(lr)
        d.mkdir(parents=True)
        (d / "stdout.log").write_text(text.format(r=lr))
        (d / "stderr.log").write_text("")
        for f in d.iterdir():
            os.utime(f, (mtime, mtime))


def test_undated_log_dir_trees_are_ordered_by_their_files_times(tmp_path: Path) -> None:
    _tree(tmp_path, "none_ab12cd34", "[rank {r}] step 3/3 loss 0.5\n[rank {r}] training finished\n", 1_000_000.0)
    _tree(tmp_path, "none_zz98yy76", "[rank {r}] step 1/3 loss 0.5\n", 1_000_600.0)
    ing = api.read([tmp_path])
    assert "2 runs" in ing.runs
    assert all("none_ab12cd34" in s.path for s in ing.skipped if "earlier run" in s.reason)


def test_undated_trees_with_equal_times_are_left_together(tmp_path: Path) -> None:
    _tree(tmp_path, "none_ab12cd34", "[rank {r}] step 3/3 loss 0.5\n", 1_000_000.0)
    _tree(tmp_path, "none_zz98yy76", "[rank {r}] step 1/3 loss 0.5\n", 1_000_000.0)
    assert api.read([tmp_path]).runs == ""


def test_undated_trees_of_two_nodes_are_one_run(tmp_path: Path) -> None:
    # one job's two agents writing into one shared `--log-dir`: their workers state different global ranks
    _tree(tmp_path, "none_ab12cd34", "[rank{r}]: RuntimeError: shard 3 holds a corrupt record\n", 1_000_000.0)
    _tree(tmp_path, "none_zz98yy76", "[rank{r}2]: RuntimeError: shard 3 holds a corrupt record\n", 1_000_600.0)
    assert api.read([tmp_path]).runs == ""


def test_a_dated_tree_and_an_undated_newer_one_are_ordered_by_their_files_times(tmp_path: Path) -> None:
    # a restarted run whose workers logged c10-stamped lines, then a rerun whose workers printed no time
    _tree(tmp_path, "none_ab12cd34", "[W1206 08:20:01.100000000 ProcessGroupGloo.cpp:1000] [rank{r}]: warn\n",
          1_000_000.0)
    _tree(tmp_path, "none_zz98yy76", "[rank {r}] step 1/3 loss 0.5\n", 1_000_600.0)
    ing = api.read([tmp_path])
    assert "2 runs" in ing.runs
    assert all("none_ab12cd34" in s.path for s in ing.skipped if "earlier run" in s.reason)


def test_a_cut_console_states_only_the_ranks_of_its_latest_run(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(crashed("08:20:01.000000", "08:20:09.000000", bad=3, ws=4)
                                        + healthy("08:25:01.000000", ws=2))
    ing = api.read([tmp_path])
    assert "2 runs" in ing.runs
    assert 3 not in next(f for f in ing.files if f.path == "train.log").ranks
