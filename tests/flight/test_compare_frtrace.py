"""The committed side-by-side table with torchfrtrace holds, without torch.

docs/flight-recorder-vs-torchfrtrace.md is written by tools/compare_frtrace.py from torchfrtrace's
captured output (tests/flight/torchfrtrace/<fixture>.txt, each section labelled with its command) and
hanglens's answers. Here both halves are recomputed -- torchfrtrace's from the captured text, hanglens's
from the fixture -- and must equal the table; and hanglens must name each fixture's true culprit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "flight-recorder-vs-torchfrtrace.md"
CAPTURED = Path(__file__).parent / "torchfrtrace"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_frtrace", ROOT / "tools" / "compare_frtrace.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compare_frtrace", mod)
    spec.loader.exec_module(mod)
    return mod


TOOL = _tool()
FIXTURES = [p.name for p in TOOL.fixtures()]


def _rows() -> dict[str, list[str]]:
    out = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in FIXTURES:
            out[cells[0]] = cells
    return out


def test_every_flight_recorder_fixture_has_a_row_and_a_capture() -> None:
    assert len(FIXTURES) >= 9
    assert sorted(_rows()) == sorted(FIXTURES)
    for name in FIXTURES:
        text = (CAPTURED / f"{name}.txt").read_text(encoding="utf-8")
        assert text.startswith("# torchfrtrace (torch wheel)") and "\n$ torchfrtrace" in text
        assert "/work/" not in text and "/tmp/" not in text


@pytest.mark.parametrize("name", FIXTURES)
def test_the_table_row_is_what_both_tools_say_today(name: str) -> None:
    row = _rows()[name]
    frtrace: dict[str, Any] = TOOL.frtrace_answer((CAPTURED / f"{name}.txt").read_text(encoding="utf-8"))
    hang: dict[str, Any] = TOOL.hanglens_answer(ROOT / "fixtures" / name)
    truth = yaml.safe_load((ROOT / "fixtures" / name / "truth.yaml").read_text())
    notes = yaml.safe_load((Path(__file__).parent / "notes.yaml").read_text())
    expected = TOOL.table(
        [
            {
                "fixture": name,
                "injected": truth["injected"],
                "truth": f"{truth['expect']['category']} {TOOL._ranks(truth['expect']['culprit_ranks'])}",
                "frtrace": frtrace,
                "hanglens": hang,
                "note": notes.get(name, ""),
            }
        ]
    )
    want = [c.strip() for c in expected.splitlines()[-1].strip().strip("|").split("|")]
    assert row == want
    # hanglens names the true culprit on every fixture, including those where torchfrtrace cannot.
    assert hang["culprits"] == truth["expect"]["culprit_ranks"]
    assert hang["category"] in [truth["expect"]["category"], *truth["expect"].get("accept", [])]


def test_torchfrtrace_answers_are_read_from_its_own_words() -> None:
    """The reader of torchfrtrace's output, on lines it prints (utils.py error_analysis / EntryState.log)."""
    missing = (
        "$ torchfrtrace <dumps>\n# exit code 0\nNot all ranks joining collective, sequence number: 9\n"
        "internal record id: 8\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
        "missing ranks: {2, 5}\n"
    )
    assert TOOL.frtrace_answer(missing) | {"command": ""} == {
        "ran": True,
        "as_is": "ran",
        "mismatch": "missing ranks",
        "seq": 9,
        "culprits": [],
        "missing": [2, 5],
        "command": "",
    }
    typed = (
        "$ torchfrtrace x\n# exit code 0\nCollective sequence number: 12 has errors\n"
        "error msg: Culprit rank 3; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type\n"
    )
    got = TOOL.frtrace_answer(typed)
    assert (got["seq"], got["culprits"], got["mismatch"]) == (12, [3], "COLLECTIVE_TYPE_MISMATCH")
    crashed = "$ torchfrtrace x\n# exit code 1\nTraceback (most recent call last):\nKeyError: ('0', 3)\n"
    assert TOOL.frtrace_answer(crashed)["mismatch"] == "crashed: KeyError ('0', 3)"
