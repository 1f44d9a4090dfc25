"""A report an engineer trusts at first read: what the renderers show for real analyses (issue 10)."""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from failure_table import Failure as F
from failure_table import failure_table

from hanglens import api
from hanglens.report import _common as c
from hanglens.report import render_html, render_markdown, render_text
from hanglens.report.rankmap import build_overview, render_table

from .joblogs import ABORTED, screenshot_tool, write_job


@pytest.fixture(scope="module")
def demo_doc() -> dict[str, Any]:
    with resources.as_file(resources.files("hanglens") / "_demo" / "job") as job:
        return api.analyze([job]).to_dict()


@pytest.fixture(scope="module")
def aborted_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    job = write_job(tmp_path_factory.mktemp("aborted"), {"console.log": ABORTED})
    return api.analyze([job]).to_dict()


@pytest.fixture(scope="module")
def unexplained_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    log = screenshot_tool().UNEXPLAINED_LOG
    job = write_job(tmp_path_factory.mktemp("unexplained"), {"console.log": log})
    return api.analyze([job]).to_dict()


# 1. dead ranks are not drawn as healthy ------------------------------------------------------------


def test_ranks_the_launcher_saw_die_are_failed_not_ok(aborted_doc: dict[str, Any]) -> None:
    ranks = {r["rank"]: r for r in aborted_doc["ranks"]}
    assert {ranks[0]["status"], ranks[1]["status"]} == {"failed"}
    assert ranks[0]["signal"] == "SIGABRT" and ranks[1]["exitcode"] == -6
    table = render_table(build_overview(aborted_doc["ranks"]))
    assert "killed by SIGABRT" in table and "no progress reported" in table
    assert "ok ·" not in table and "st-ok" not in table
    assert '<span class="bar' not in table  # no step or sequence number known: no bar at all
    md = render_markdown(aborted_doc)
    assert "| 0-1 | failed | killed by SIGABRT |" in md


def test_a_bar_is_drawn_only_from_known_progress() -> None:
    ranks = [
        {"rank": 0, "status": "ok", "last_step": 10, "last_seq": {}},
        {"rank": 1, "status": "ok", "last_step": None, "last_seq": {}},
    ]
    rows = render_table(build_overview(ranks)).split("<tr")
    assert '<span class="bar' in rows[2] and '<span class="bar' not in rows[3]


# 2. evidence is not cut where it gets interesting ----------------------------------------------------

_MISMATCH = (
    "RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=7, OpType=BARRIER), but Rank 0 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=7OpType=GATHER)."
)
_WARN = (
    "node-3:51017:51102 [1] transport/net_ib.cc:1431 NCCL WARN NET/IB : Got completion from peer "
    "10.9.0.12<48812> with status=12 opcode=0 len=0 vendor err 129 (Recv) receiving 8 bytes instead of 4"
)


@pytest.mark.parametrize("width", [80, 200])
def test_evidence_keeps_the_field_that_matters_at_the_terminal_width(doc: dict[str, Any], width: int) -> None:
    doc = copy.deepcopy(doc)
    doc["findings"][0]["evidence"][0]["text"] = _MISMATCH
    doc["findings"][0]["evidence"][1]["text"] = _WARN
    out = render_text(doc, color=False, width=width)
    flat = " ".join(line.strip() for line in out.splitlines())
    assert "OpType=BARRIER" in flat and "receiving 8 bytes instead of 4" in flat
    assert max(len(line) for line in out.splitlines()) <= width
    if width == 200:  # a wide terminal uses its width: the mismatch takes two rows, not three or more
        assert [line.strip() for line in out.splitlines()].count(_MISMATCH[:100].strip()) == 0
        assert any(line.strip().startswith("RuntimeError") and len(line) > 150 for line in out.splitlines())


def test_the_width_comes_from_the_terminal(doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    doc = copy.deepcopy(doc)
    doc["findings"][0]["evidence"][0]["text"] = _MISMATCH
    monkeypatch.setenv("COLUMNS", "200")
    wide = render_text(doc, color=False).splitlines()
    assert any(line.strip().startswith("RuntimeError") and len(line) > 150 for line in wide)
    monkeypatch.setenv("COLUMNS", "80")
    assert max(len(line) for line in render_text(doc, color=False).splitlines()) <= 80


# 3. copy blocks hold whole commands -------------------------------------------------------------------


def test_shell_commands_are_whole_and_runnable() -> None:
    step = (
        "Rerun with NCCL_DEBUG=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL and keep the logs; look for "
        "`broadcast`/`barrier` behind data-dependent `if`s and `if rank == 0:` blocks, check "
        "`torch.cuda.nccl.version()`, run `py-spy dump --pid <PID>` and `nvidia-smi -q -d ECC`."
    )
    assert c.shell_commands(step) == [
        "export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL",
        "py-spy dump --pid <PID>",
        "nvidia-smi -q -d ECC",
    ]
    assert c.shell_commands("Set `TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1`.") == [
        "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1"
    ]
    assert c.shell_commands("Use `--rdzv-endpoint HOST:0` and `DataLoader(timeout=...)`.") == []


def test_no_fragment_or_python_is_shown_as_a_shell_command(doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(doc)
    doc["verdict"]["first_step"] = (
        "Find the branch with `broadcast barrier if` or `if rank == 0:`, print `torch.cuda.nccl.version()` "
        "and rerun with NCCL_DEBUG=INFO."
    )
    out = render_text(doc, color=False, width=100)
    dollars = [line.strip() for line in out.splitlines() if line.strip().startswith("$ ")]
    assert dollars == ["$ export NCCL_DEBUG=INFO"]
    html = render_html(doc)
    blocks = re.findall(r'<pre class="snippet"[^>]*><code>(.*?)</code></pre>', html, re.S)
    assert blocks and all(
        line.startswith(("export ", "hanglens ", "torchrun ", "py-spy ", "nvidia-smi", "dmesg"))
        for b in blocks
        for line in b.splitlines()
    )
    assert "<code>torch.cuda.nccl.version()</code>" in html


# 4. an unexplained failure still says what was seen -----------------------------------------------------


def test_unexplained_timeout_headline_comes_from_the_facts(unexplained_doc: dict[str, Any]) -> None:
    assert unexplained_doc["verdict"]["category"] == "unknown"
    head = unexplained_doc["observed"]["headline"]
    assert head == (
        "ALLREDUCE #3318 (process group 0) timed out after 15 min on rank 5; culprit not determined"
    )
    for out in (
        render_text(unexplained_doc, color=False, width=100),
        render_html(unexplained_doc),
        render_markdown(unexplained_doc),
    ):
        assert "ALLREDUCE #3318" in out and "culprit not determined" in out
        assert "Find the rank that never reached ALLREDUCE #3318" in out


def test_unexplained_crash_headline_and_advice(aborted_doc: dict[str, Any]) -> None:
    observed = aborted_doc["observed"]
    assert observed["headline"] == "Ranks 0-1 killed by SIGABRT; culprit not determined"
    assert "PYTHONFAULTHANDLER=1" in observed["first_step"]
    assert "Ranks 0-1 killed by SIGABRT" in render_text(aborted_doc, color=False)


def test_unattributed_nccl_warning_names_what_it_said_and_where(tmp_path: Path) -> None:
    # NCCL's argument check (misc/argcheck.cc) alone, no failure after it: no rule explains it, so the
    # headline says what was seen and where. (A /dev/shm segment error is nccl-shm-segment-failed's.)
    log = (
        "2025-03-04 10:11:12 node-9:4121:4380 [0] misc/argcheck.cc:39 NCCL WARN AllReduce : invalid root 9 "
        "(root should be in the 0..8 range)\n"
    )
    doc = api.analyze([write_job(tmp_path, {"combined.log": log})]).to_dict()
    assert doc["verdict"]["category"] == "unknown"
    assert doc["observed"]["headline"] == (
        'An NCCL warning ("AllReduce : invalid root 9 (root should be in the 0..8 range)") '
        "on host node-9; culprit not determined"
    )


def test_no_hang_advice_after_a_confident_oom(tmp_path: Path) -> None:
    rank = (
        "[rank1]:[E0611 14:02:29.118204511 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=512, NumelOut=512, "
        "Timeout(ms)=600000) ran for 600091 milliseconds before timing out.\n"
    )
    oom = (
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 301.62 MiB is free. Including non-PyTorch memory, this "
        "process has 78.88 GiB memory in use.\n"
    )
    doc = api.analyze([write_job(tmp_path, {"rank0.log": oom, "rank1.log": rank})]).to_dict()
    assert doc["verdict"]["category"] == "oom" and doc["verdict"]["confidence"] == "high"
    assert "512.00 MiB" in doc["verdict"]["summary"] and "536870912" not in doc["verdict"]["summary"]
    collect = " ".join(doc["collect_next"])
    assert "While it hangs" not in collect and "py-spy" not in collect


# 5. the timeline is one row per fact ----------------------------------------------------------------


def test_timeline_folds_repeats_and_launcher_rows(demo_doc: dict[str, Any]) -> None:
    facts = c.fold_timeline(demo_doc["timeline"])
    texts = [f.text for f in facts]
    assert all(t and not re.fullmatch(r"\[\d+\]:", t) for t in texts)
    assert facts[0].row["kind"] not in c.LAUNCHER_KINDS
    keys = [(c.as_rank(f.row.get("rank")), f.text) for f in facts]
    assert len(keys) == len(set(keys))
    assert len(facts) < len(demo_doc["timeline"])  # repeats went under their fact
    html = render_html(demo_doc)
    section = html[html.index('id="timeline"') : html.index('id="collective"')]
    assert "<td>?</td>" not in section and ">[1]:<" not in section
    assert "more line" in section  # folded rows are still there, one click away
    assert ". one clock" not in section


# 6. sections say what they mean ---------------------------------------------------------------------


def test_superseded_rule_is_said_in_prose(demo_doc: dict[str, Any]) -> None:
    reason = "match.none[0]: found fact collective_disagreement where minority = true (console.log:67)"
    why = c.why_not(reason, "ranks-run-different-collectives")
    assert why.startswith("Superseded by `ranks-run-different-collectives`") and "console.log:67" in why
    html = render_html(demo_doc)
    ruled = html[html.index('id="ruled-out"') : html.index('id="unexplained"')]
    assert "found fact" not in ruled and "match.none" not in ruled and "Superseded by" in ruled
    assert re.search(r"<details class=\"not-evaluable\">\s*<summary>Not evaluable", ruled)


def test_launcher_summary_lines_are_not_unexplained(demo_doc: dict[str, Any]) -> None:
    texts = " ".join(str(u["example"]) for u in demo_doc["unexplained"])
    assert "ChildFailedError" not in texts and " FAILED" not in texts


# 7. one attribution everywhere ------------------------------------------------------------------------


def test_a_files_rank_is_its_lines_rank(tmp_path: Path) -> None:
    log = (
        "RANK=3 -- LOCAL_RANK=1\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/train.py", line 12, in <module>\n'
        "    main()\n"
        "ValueError: shard 9 is empty\n"
    )
    doc = api.analyze([write_job(tmp_path, {"worker.log": log})]).to_dict()
    seen = {f["path"]: f["ranks"] for f in doc["inputs"]["detail"]}
    assert seen["worker.log"] == [3]
    rows = [t for t in doc["timeline"] if t["path"] == "worker.log"]
    assert rows and all(t["rank"] == 3 for t in rows)
    out = render_text(doc, color=False)
    assert "rank ?" not in out and "worker.log:2  rank 3" in out


def test_world_size_is_not_unknown_above_a_drawing_of_ranks(doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(doc)
    doc["inputs"]["world_size"] = None
    html = render_html(doc)
    inputs = html[html.index('id="inputs"') :]
    assert "<dd>unknown</dd>" not in inputs and "not stated in the logs; 8 ranks seen" in inputs


# 12. smaller ------------------------------------------------------------------------------------------


def test_markdown_lists_what_to_collect(doc: dict[str, Any]) -> None:
    md = render_markdown(doc)
    block = md[md.index("**Collect on the rerun:**") :].splitlines()
    assert block[1] == "" and block[2].startswith("- ") and block[3].startswith("- ")


def test_one_rank_is_rank_not_ranks(unexplained_doc: dict[str, Any]) -> None:
    summary = unexplained_doc["verdict"]["summary"]
    assert summary == "The logs show a failure on rank 5, but no rule explains it."


def _rule_test_doc(tmp_path: Path, rule: str, test_name: str) -> dict[str, Any]:
    """The document of one embedded test's logs of a built-in rule (`rules/<rule>.yaml`)."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    spec = yaml.safe_load((root / "rules" / f"{rule}.yaml").read_text())
    test = next(t for t in spec["tests"] if t["name"] == test_name)
    for name, text in test["logs"].items():
        (tmp_path / name).write_text(text)
    return api.analyze([tmp_path]).to_dict()


def test_rerun_advice_skips_knobs_the_logs_show_were_on(tmp_path: Path) -> None:
    """A DETAIL run is not told to turn DETAIL on; a run without it is told once, not twice."""
    # (a DETAIL report, whose rule advises DETAIL for the rerun)
    detail = _rule_test_doc(tmp_path, "control_flow_divergence/rank-blocked-outside-training-step",
                            "main-process-checkpoint-against-ddp-backward")
    assert detail["verdict"]["rule_id"] == "rank-blocked-outside-training-step"
    assert not any("TORCH_DISTRIBUTED_DEBUG=DETAIL" in s for s in detail["collect_next"])
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    plain = api.analyze([fixtures / "main-only-ckpt-rank0"]).to_dict()
    assert sum("TORCH_DISTRIBUTED_DEBUG=DETAIL" in s for s in plain["collect_next"]) == 1


def test_stack_dump_advice_is_given_once(tmp_path: Path) -> None:
    """A silent-hang rule's own py-spy advice and the generic one for a hang are one piece of advice."""
    doc = _rule_test_doc(tmp_path, "control_flow_divergence/silent-hang-at-phase-boundary",
                         "new-epoch-bar-never-advances-after-validation")
    assert doc["verdict"]["rule_id"] == "silent-hang-at-phase-boundary"
    assert sum("py-spy dump" in s for s in doc["collect_next"]) == 1, doc["collect_next"]


def test_a_spawned_job_is_told_what_torchrun_would_add_and_not_to_use_record(tmp_path: Path) -> None:
    """Under torch.multiprocessing.spawn nobody reads the error file `@record` writes (torchrun's agent names
    it): the advice is to launch with torchrun, in the document and in every rendering of it."""
    root = Path(__file__).resolve().parents[2]
    case = root / "tests/written_cases/g17-spawn-raised-rank4-of6"
    (tmp_path / "console.txt").write_text((case / "console.txt").read_text())
    doc = api.analyze([tmp_path]).to_dict()
    assert doc["verdict"]["category"] == "rank_crash"
    assert doc["collect_next"][0].startswith("This job was started with `torch.multiprocessing.spawn`")
    shown = (render_text(doc, color=False, width=100), render_markdown(doc), " ".join(doc["collect_next"]))
    for text in shown:
        assert "errors.record" not in text
        assert "torch.multiprocessing.spawn`, whose console" in text.replace("\n", " ").replace("  ", " ")


def test_an_mpirun_job_is_told_what_mpirun_can_keep_and_not_to_use_record() -> None:
    """Under Open MPI's mpirun nobody reads `@record`'s error file either: the advice is mpirun's own tags and
    per-rank output files, unless those files are what was read."""
    root = Path(__file__).resolve().parents[2] / "tests/written_cases"
    doc = api.analyze([root / "p22-ompi-timestamp-tag-sigsegv-rank5-of-8"]).to_dict()
    assert doc["verdict"]["culprit_ranks"] == [5]
    assert doc["collect_next"][0].startswith("This job was started with Open MPI's `mpirun`")
    for text in (render_text(doc, color=False, width=100), render_markdown(doc)):
        assert "errors.record" not in text
    kept = api.analyze([root / "p22-ompi-output-filename-sigkill-rank2"]).to_dict()
    assert not any("errors.record" in s or "--output-filename" in s for s in kept["collect_next"])


def test_the_rendered_advice_skips_knobs_the_logs_show_were_on(tmp_path: Path) -> None:
    """The text and Markdown reports show the document's rerun advice, so a DETAIL run is not told there to
    turn DETAIL on either (they used to add the primary finding's own list back)."""
    doc = _rule_test_doc(tmp_path, "control_flow_divergence/rank-blocked-outside-training-step",
                         "main-process-checkpoint-against-ddp-backward")
    assert any("TORCH_DISTRIBUTED_DEBUG=DETAIL" in s for f in doc["findings"] for s in f.get("collect") or [])
    for text in (render_text(doc, color=False, width=100), render_markdown(doc)):
        collect = text.split("Collect", 1)[-1]
        assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" not in collect


def test_advice_the_fix_already_gives_is_not_repeated_under_collect() -> None:
    """The fix above already says "rerun with DETAIL": the list of what to collect does not say it again."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    doc = api.analyze([fixtures / "divergence-skip-allreduce"]).to_dict()
    fix = doc["findings"][0]["remediation"]
    assert any("TORCH_DISTRIBUTED_DEBUG=DETAIL" in s for s in fix)
    assert not any("TORCH_DISTRIBUTED_DEBUG=DETAIL" in s for s in doc["collect_next"]), doc["collect_next"]
    assert any("py-spy dump" in s for s in doc["collect_next"])


def test_a_job_whose_error_file_was_read_is_not_told_to_use_record(tmp_path: Path) -> None:
    """`@record` writes the worker's error.json (torch/distributed/elastic/multiprocessing/errors): when one
    was read, the job already had it, and the advice to decorate the entrypoint is noise."""
    attempt = tmp_path / "logs" / "none_k2x9" / "attempt_0"
    for lr in range(3):
        (attempt / str(lr)).mkdir(parents=True)
    err = "ValueError: label 7 out of range for 5 classes"
    (attempt / "2" / "stderr.log").write_text(f"Traceback (most recent call last):\n  File \"t.py\", line 9, "
                                              f"in <module>\n    main()\n{err}\n")
    for lr in (0, 1):
        (attempt / str(lr) / "stderr.log").write_text(
            f"[rank{lr}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
            f"closed by peer [127.0.0.1]:{5600 + lr}\n")
    without = api.analyze([tmp_path]).to_dict()
    assert without["verdict"]["culprit_ranks"] == [2]
    assert any("errors.record" in s for s in without["collect_next"])
    (attempt / "2" / "error.json").write_text(json.dumps({"message": {
        "message": err, "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1764800000"}}}))
    doc = api.analyze([tmp_path]).to_dict()
    assert doc["verdict"]["culprit_ranks"] == [2]
    assert not any("errors.record" in s for s in doc["collect_next"]), doc["collect_next"]


# A user's paste of every node's NCCL WARNs (their `<host>:<pid>:<tid>` envelopes) beside one rank's
# traceback (NCCL 2.26 timestamped WARN lines, log-formats.md sections 4.1 and 4.4; written here).
WARNS_OF_FOUR_HOSTS = """\
[2025-04-08 03:14:07] gpu-h03:51872:52211 [6] transport/net_ib.cc:1025 NCCL WARN NET/IB : Got async event : \
port error

[2025-04-08 03:14:09] gpu-h02:33017:33390 [6] transport/net_ib.cc:2449 NCCL WARN NET/IB: Got completion from \
peer 10.44.1.13<51222> with status=12 opcode=1 len=0 vendor err 129 (Send) localGid ::ffff:10.44.1.12 \
remoteGids ::ffff:10.44.1.13 hca mlx5_6

[2025-04-08 03:14:10] gpu-h01:60211:60617 [6] transport/net_ib.cc:2449 NCCL WARN NET/IB: Got completion from \
peer 10.44.1.13<40032> with status=5 opcode=0 len=0 vendor err 249 (Recv) localGid ::ffff:10.44.1.11 \
remoteGids ::ffff:10.44.1.13 hca mlx5_6
[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/\
ProcessGroupNCCL.cpp:3699, remote process exited or there was a network error, NCCL version 2.26.2
[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting \
prematurely.
"""


def test_a_file_of_several_hosts_lines_is_not_its_one_ranked_writers(tmp_path: Path) -> None:
    (tmp_path / "warns.txt").write_text(WARNS_OF_FOUR_HOSTS)
    doc = api.analyze([tmp_path]).to_dict()
    evidence = [ev for f in doc["findings"] for ev in f.get("evidence", [])]
    other = [ev for ev in evidence if ev.get("host") in ("gpu-h02", "gpu-h03")]
    assert other and all(ev.get("rank") is None for ev in other)


# 7. a line is its file's rank's or host's only when the file is that rank's or host's ---------------------

# torchrun console of two workers (torch 2.13 agent lines and failure table, log-formats.md section 3.5-3.6;
# gloo's pair.cc size check, failure-signatures.md section 2): only rank 0 tagged its lines, the agent's
# table says rank 1 died of SIGABRT, and the untagged `terminate called ...` is the aborting process's.
_NODE_A = {"host": "node-a", "time": "2026-12-05_08:11:02"}
_CONSOLE_ONE_TAGGED_RANK = """\
terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 40 vs 36. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/user/proj/train.py", line 57, in <module>
[rank0]:     dist.all_gather(out, preds)
[rank0]:   File "/home/user/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4287, in all_gather
[rank0]:     work.wait()
[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:40711: Connection reset by peer
W1205 08:11:02.120000 901 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 912 closing signal SIGTERM
E1205 08:11:02.240000 901 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -6) local_rank: 1 (pid: 913) of binary: /home/user/venv/bin/python3.11
""" + failure_table(F(1, -6, 913, **_NODE_A), F(0, -15, 912, **_NODE_A))  # noqa: E501

# A user's paste of two nodes' sections (NCCL 2.21 socket WARN and ProcessGroupNCCL lines of torch 2.5,
# log-formats.md sections 1.5 and 4.4): only node h7's lines name a host; rank 6's traceback is node h8's.
_PASTE_TWO_NODES_ONE_HOST = """\
== node h7, rank 0 ==
h7:4410:4502 [0] misc/socket.cc:47 NCCL WARN socketProgress: Connection closed by remote peer h8<51022>
[rank0]:[E1205 08:20:14.118220311 ProcessGroupNCCL.cpp:1595] [Rank 0] Collective WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) raised the following async exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5
== node h8 ==
[rank6]: Traceback (most recent call last):
[rank6]:   File "/home/user/proj/train.py", line 120, in <module>
[rank6]:     batch = next(it)
[rank6]: ValueError: empty batch at index 3310
"""  # noqa: E501


def _evidence(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [ev for f in doc["findings"] for ev in f["evidence"]]


def test_an_untagged_line_of_a_console_is_not_its_one_tagged_ranks(tmp_path: Path) -> None:
    doc = api.analyze([write_job(tmp_path, {"console.log": _CONSOLE_ONE_TAGGED_RANK})]).to_dict()
    terminate = [ev for ev in _evidence(doc) if ev["text"].startswith("terminate called")]
    assert terminate, _evidence(doc)
    assert all(ev["rank"] != 0 for ev in terminate)


def test_a_rank_of_another_node_does_not_take_the_pastes_one_host(tmp_path: Path) -> None:
    doc = api.analyze([write_job(tmp_path, {"paste.txt": _PASTE_TWO_NODES_ONE_HOST})]).to_dict()
    own = [ev for ev in _evidence(doc) if ev["rank"] == 6]
    assert own, _evidence(doc)
    assert all(ev["host"] != "h7" for ev in own)


# A gloo job's straggler timeout (torch 2.13 `[rankN]:` tracebacks; gloo/transport/tcp/unbound_buffer.cc
# timeouts; values written here): rank 2 logged a slow phase, ranks 0, 1 and 3 timed out in the all-reduce.
_GLOO = "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc"
GLOO_TIMEOUTS = f"""\
[rank2]:09:12:40 | r2 | rebuilding token cache
[rank0]: {_GLOO}:78] Timed out waiting 30000ms for recv operation to complete
[rank1]: {_GLOO}:78] Timed out waiting 30000ms for recv operation to complete
[rank3]: {_GLOO}:129] Timed out waiting 30000ms for send operation to complete
"""

def test_a_gloo_job_is_told_how_gloo_dumps_the_flight_recorder(tmp_path: Path) -> None:
    """gloo records into the flight recorder but dumps nothing on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT is
    ProcessGroupNCCL's; probe44's gloo reruns with TORCH_FR_DUMP_TEMP_FILE set wrote no file): the advice says
    to call `_dump_fr_trace()`, and NCCL_DEBUG, which does nothing on gloo, is not advised."""
    (tmp_path / "console.log").write_text(GLOO_TIMEOUTS)
    doc = api.analyze([tmp_path]).to_dict()
    advice = " ".join(doc["collect_next"])
    assert "_dump_fr_trace()" in advice, doc["collect_next"]
    assert "NCCL_DEBUG=INFO" not in advice
    assert not any("TORCH_NCCL_DUMP_ON_TIMEOUT=1` (dumps every rank" in s for s in doc["collect_next"])


def test_detail_advice_on_gloo_warns_about_ddp(tmp_path: Path) -> None:
    """torch 2.13 DDP on gloo dies of SIGSEGV under TORCH_DISTRIBUTED_DEBUG=DETAIL (probe44): where DETAIL is
    advised for a gloo job, the report says so and names what to use instead."""
    (tmp_path / "console.log").write_text(GLOO_TIMEOUTS)
    doc = api.analyze([tmp_path]).to_dict()
    detail = [s for s in doc["collect_next"] + list(doc["findings"][0].get("remediation") or [])
              if "TORCH_DISTRIBUTED_DEBUG=DETAIL" in s]
    assert detail
    assert any("SIGSEGV" in s for s in doc["collect_next"]), doc["collect_next"]


def test_stacks_of_every_rank_given_are_not_asked_for_again() -> None:
    """A py-spy dump of every rank is in the input (the user followed the advice before stopping the job): the
    rerun advice does not ask for them again (it used to, from the verdict's own `collect`)."""
    case = Path(__file__).resolve().parents[1] / "written_cases" / (
        "r44-pyspy-every-rank-rank0-outside-backward-validation-word-ws3")
    doc = api.analyze([p for p in sorted(case.rglob("*")) if p.is_file() and p.name != "case.yaml"]).to_dict()
    assert doc["verdict"]["culprit_ranks"] == [0]
    assert not any("py-spy dump --pid <PID>" in s for s in doc["collect_next"]), doc["collect_next"]


def test_signalled_ranks_with_faulthandler_stacks_are_told_what_the_stacks_show(tmp_path: Path) -> None:
    """Every worker killed by SIGABRT under PYTHONFAULTHANDLER=1 (a user's `kill -ABRT` of a hung job,
    probe44) printed its stack: the first step reads them (how many wait in which collective, how many are
    outside one) instead of asking to turn faulthandler on."""
    def dump(tid: int, inner: str) -> str:
        return (f"Fatal Python error: Aborted\n\nCurrent thread 0x00007f55a1{tid:06x} "
                f"(most recent call first):\n{inner}"
                '  File "/home/user/job/run.py", line 77 in <module>\n\n')
    coll = ('  File "/home/user/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
            'line 3252 in all_reduce\n  File "/home/user/job/run.py", line 61 in step\n')
    own = '  File "/home/user/job/run.py", line 40 in wait_for_shard\n'
    table = "".join(f"[{r}]:\n  rank      : {r} (local_rank: {r})\n"
                    f"  exitcode  : -6 (pid: {5100 + r})  (SIGABRT)\n" for r in range(3))
    (tmp_path / "console.log").write_text(
        dump(1, coll) + dump(2, own) + dump(3, coll)
        + "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nFailures:\n" + table)
    doc = api.analyze([tmp_path]).to_dict()
    step = (doc.get("observed") or {}).get("first_step") or ""
    assert "PYTHONFAULTHANDLER=1" not in step, doc.get("observed")
    assert "2 main threads waited in `all_reduce`" in step and "1 was outside any collective" in step, step


# A silent hang stopped from outside (torch 2.13 agent lines, log-formats.md section 3.4; the agent's own
# SignalException traceback, failure-signatures.md section 17.4), written here with values of our own; the
# script's lines are its own logging, which no parser reads.
_AGENT_STOPPED = """\
W1205 21:53:33.042000 24175 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, \
shutting down workers
W1205 21:53:33.043000 24175 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 24179 \
closing signal SIGTERM
Traceback (most recent call last):
  File "/home/user/venv/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.api.SignalException: Process 24175 got signal: 15
"""


def test_per_worker_files_are_not_told_to_collect_per_worker_files(tmp_path: Path) -> None:
    """The advice to collect every rank's log is for inputs that are not one file per worker already."""
    job = write_job(tmp_path / "tree", {"console.log": _AGENT_STOPPED})
    for lr in (0, 1, 2):
        write_job(job / "logs" / "none_ab12" / "attempt_0" / str(lr),
                  {"stderr.log": f"2026-12-05 21:52:57,434 INFO trainer: worker {lr} started\n"})
    advice = " ".join(api.analyze([job]).to_dict()["collect_next"])
    assert "could be attributed" not in advice
    alone = write_job(tmp_path / "console", {"console.log": _AGENT_STOPPED})
    advice = " ".join(api.analyze([alone]).to_dict()["collect_next"])
    assert "No line could be attributed to a rank" in advice


_FILTERED_TEE = """\
[default0]:rank 0/4 started on pid 16127 (torch 2.4.1+cu121)
[default0]:epoch 0 step 3/8 loss 0.9828
W1206 08:38:18.085000 140272961883008 torch/distributed/elastic/multiprocessing/api.py:858] Sending process \
16127 closing signal SIGTERM
E1206 08:38:18.359000 140272961883008 torch/distributed/elastic/multiprocessing/api.py:833] failed \
(exitcode: 1) local_rank: 2 (pid: 16129) of binary: /home/user/.venv/bin/python
Traceback (most recent call last):
  File "/home/user/.venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 264, in \
launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/home/user/train/train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_08:38:18
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : 1 (pid: 16129)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_a_console_filtered_by_local_ranks_filter_is_told_so(tmp_path: Path) -> None:
    """torchrun 2.3+ `--tee 3 --local-ranks-filter 0` (shape of tools/probe62 crash-r2-ws4-ddp-filter0, torch
    2.4.1): the agent names local rank 2, whose teed lines the filter kept out of the console."""
    job = write_job(tmp_path / "filtered", {"console.log": _FILTERED_TEE})
    advice = " ".join(api.analyze([job]).to_dict()["collect_next"])
    assert "--local-ranks-filter" in advice
    plain = write_job(tmp_path / "plain", {"console.log": _FILTERED_TEE.replace("[default0]:", "")})
    advice = " ".join(api.analyze([plain]).to_dict()["collect_next"])
    assert "--local-ranks-filter" not in advice
