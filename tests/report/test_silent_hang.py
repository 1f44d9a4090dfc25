"""A hang with no error line is a finding of its own in every output: where each rank stopped, how the
job was stopped, what to collect next (failure-signatures.md section 16). Logs written here from the
log-format reference (torchrun agent lines of torch 2.5+, Slurm slurmstepd), with invented values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hanglens import api
from hanglens.report import render_html, render_markdown, render_text

AGENT_SIGTERM = ("W0714 03:12:45.901000 6021 torch/distributed/elastic/agent/server/api.py:719] Received 15 "
                 "death signal, shutting down workers\n")


def analyze(tmp_path: Path, files: dict[str, str]) -> dict[str, Any]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return api.analyze([str(tmp_path)]).to_dict()


def skipped_step_job(tmp_path: Path) -> dict[str, Any]:
    steps = {0: [10, 11, 12, 13], 1: [10, 11, 12, 13], 2: [10, 11, 13, 14], 3: [10, 11, 12, 13]}
    files = {f"rank{r}.log": "".join(f"step {s} loss 0.{s}1\n" for s in ss) for r, ss in steps.items()}
    files["launcher.log"] = AGENT_SIGTERM
    return analyze(tmp_path, files)


def test_skipped_step_names_the_rank_and_shows_where_each_rank_stopped(tmp_path: Path) -> None:
    doc = skipped_step_job(tmp_path)
    v = doc["verdict"]
    assert (v["category"], v["rule_id"], v["confidence"]) == (
        "control_flow_divergence", "silent-hang-rank-skipped-step", "low")
    assert v["culprit_ranks"] == [2]
    sh = doc["silent_hang"]
    assert sh["common_step"] == 13
    assert [s["how"] for s in sh["stopped"]] == ["agent_signal"]
    assert {r["rank"]: r["last_step"] for r in sh["ranks"]} == {0: 13, 1: 13, 2: 14, 3: 13}
    out = render_text(doc, color=False, width=120)
    assert "Where each rank stopped (no error line; stopped from outside: torchrun's agent was" in out
    table = out[out.index("  ranks"):]
    assert "0-1    13" in table and "3      13" in table
    assert "2      14" in table and "no report for the step after 11, which its peers printed" in table
    assert "Last step every rank reached: 13." in out
    assert "py-spy dump --pid" in out  # what to collect next
    md = render_markdown(doc)
    assert "| ranks | last step | epoch | phase | what differs |" in md and "| 2 | 14 |" in md
    html = render_html(doc)
    assert 'id="silent-hang"' in html and "no report for the step after 11, which its peers printed" in html


def test_stopped_without_any_shape_is_unexplained_but_says_where_ranks_stopped(tmp_path: Path) -> None:
    doc = analyze(tmp_path, {
        "rank0.log": "step 40 loss 0.2\nstep 41 loss 0.2\n",
        "rank1.log": "step 40 loss 0.3\nstep 41 loss 0.3\n",
        "slurm-5521.out": "slurmstepd: error: *** JOB 5521 ON node-q4 CANCELLED AT 2025-02-11T08:30:00 "
                          "DUE TO TIME LIMIT ***\n",
    })
    assert doc["verdict"]["category"] == "unknown"
    # The scheduler's clock stopped it: nothing says it had hung rather than still trained at the limit.
    assert doc["observed"]["headline"].startswith(
        "The job was stopped from outside at its time limit, with no error line: the scheduler cancelled the "
        "job, due to time limit; the last step every rank reached is 41. The logs do not say whether it had "
        "hung or was still working")
    assert "hung without an error line" not in doc["observed"]["headline"]
    assert "longer limit" in doc["observed"]["first_step"] and "py-spy dump" in doc["observed"]["first_step"]
    out = render_text(doc, color=False, width=120)
    assert "No failure found" not in out and "Where each rank stopped" in out and "0-1    41" in out


def test_stopped_by_its_agent_says_it_hung_and_what_to_collect(tmp_path: Path) -> None:
    doc = analyze(tmp_path, {
        "rank0.log": "step 40 loss 0.2\nstep 41 loss 0.2\n",
        "rank1.log": "step 40 loss 0.3\nstep 41 loss 0.3\n",
        "launcher.log": AGENT_SIGTERM,
    })
    assert doc["verdict"]["category"] == "unknown"
    assert doc["observed"]["headline"].startswith(
        "The job hung without an error line and was stopped from outside: torchrun's agent was signalled")
    assert "TORCH_FR_BUFFER_SIZE" in doc["observed"]["first_step"]


def test_a_phase_line_before_later_steps_is_not_where_the_rank_stopped(tmp_path: Path) -> None:
    lines = ["step 40 loss 0.2", "Saving checkpoint to /home/user/ckpt/step_40.pt", "step 41 loss 0.2",
             "step 42 loss 0.2"]
    doc = analyze(tmp_path, {"rank0.log": "\n".join(lines) + "\n", "rank1.log": "\n".join(lines) + "\n",
                             "launcher.log": AGENT_SIGTERM})
    assert doc["silent_hang"]["ranks"][0]["last_phase"] == "checkpoint_save"   # (the newest phase line)
    out = render_text(doc, color=False, width=120)
    table = out[out.index("  ranks"):]
    assert "0-1    42" in table and "checkpoint" not in table


def test_epoch_boundary_without_ranks(tmp_path: Path) -> None:
    doc = analyze(tmp_path, {"console.log": (
        "Epoch 2: 100%|██████████| 120/120 [00:30<00:00,  4.00it/s]\n"
        "Validation: 100%|██████████| 16/16 [00:02<00:00,  8.00it/s]\n"
        "  0%|          | 0/120 [00:00<?, ?it/s]\n")})
    v = doc["verdict"]
    assert (v["category"], v["rule_id"], v["culprit_ranks"]) == (
        "control_flow_divergence", "silent-hang-at-phase-boundary", [])
    assert "(all output)" in render_text(doc, color=False)


def test_a_healthy_excerpt_has_no_silent_hang_section(tmp_path: Path) -> None:
    doc = analyze(tmp_path, {
        "rank0.log": "step 1 loss 0.5\nstep 2 loss 0.4\nstep 3 loss 0.3\n",
        "rank1.log": "step 1 loss 0.5\nstep 2 loss 0.4\nstep 3 loss 0.3\n",
    })
    assert doc["verdict"]["category"] == "none"
    assert doc["silent_hang"] is None
    assert "Where each rank stopped" not in render_text(doc, color=False)


def test_the_rank_whose_last_line_no_peer_printed_is_named_and_its_peers_wait(tmp_path: Path) -> None:
    steps = "".join(f"[rank{r}]: 12:00:0{n} step {n} loss 2.{r}{n}\n" for n in (5, 6) for r in range(4))
    odd = "[rank2]: 12:00:06 step 6: fetching shard 0007 from object store\n"
    doc = analyze(tmp_path, {"console.log": steps + odd, "launcher.log": AGENT_SIGTERM})
    v = doc["verdict"]
    assert (v["rule_id"], v["culprit_ranks"], v["victim_ranks"]) == (
        "silent-hang-rank-went-where-peers-did-not", [2], [0, 1, 3])
    assert "(fetching shard from object store)" in doc["findings"][0]["explanation"]
