"""Every written case under tests/written_cases: the verdict matches the truth in its case.yaml.

The cases are failure (and healthy) logs written here from ../shared/reference/log-formats.md and
../shared/reference/failure-signatures.md (PyTorch 1.10-2.9, NCCL 2.10-2.30 formats; each case.yaml names
its sections), shaped the way users paste or collect them. A healthy case must stay `none` or below high
confidence; a failed case must never be called `none`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hanglens import api

CASES = Path(__file__).parent / "written_cases"
NAMES = sorted(p.parent.name for p in CASES.glob("*/case.yaml"))


def params() -> list[Any]:
    """Every case; one whose truth records a `known_gap` is a strict xfail (fixing it fails loudly until
    the gap is removed from its case.yaml)."""
    out = []
    for n in NAMES:
        gap = yaml.safe_load((CASES / n / "case.yaml").read_text()).get("known_gap")
        mark = pytest.mark.xfail(strict=True, reason=f"known gap: {gap}")
        out.append(pytest.param(n, marks=mark) if gap else n)
    return out


def truth(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((CASES / name / "case.yaml").read_text()))


def verdict(name: str) -> dict[str, Any]:
    folder = CASES / name
    paths = [str(p) for p in sorted(folder.iterdir()) if p.name != "case.yaml"]
    return dict(api.analyze(paths).to_dict()["verdict"])


def test_there_are_written_cases_of_every_category() -> None:
    seen = {truth(n)["category"] for n in NAMES}
    assert len(NAMES) >= 40
    assert {"none", "rank_crash", "control_flow_divergence", "collective_mismatch", "oom", "cuda_error",
            "illegal_memory_access", "dataloader_stall", "dataloader_crash", "network_transport",
            "nccl_init_failure", "version_mismatch", "rendezvous_failure", "ddp_unused_parameters",
            "watchdog_stuck", "straggler"} <= seen


@pytest.mark.parametrize("name", params())
def test_written_case(name: str) -> None:
    want = truth(name)
    got = verdict(name)
    accept = want.get("accept") or [want["category"]]
    assert got["category"] in accept, f"category {got['category']} ({got.get('rule_id')}), expected {accept}"
    if want["category"] == "none":
        assert got["category"] == "none" or got["confidence"] != "high", "confident verdict on a healthy run"
    else:
        assert got["category"] != "none", "a failed job called none"
    culprits = want.get("culprit_ranks")
    if isinstance(culprits, list):
        assert sorted(got["culprit_ranks"]) == sorted(culprits), (
            f"culprits {got['culprit_ranks']} ({got.get('rule_id')}), expected {culprits}")
