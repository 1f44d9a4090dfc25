"""`hanglens demo`: the bundled real job is analysed and its HTML report written."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from typer.testing import CliRunner

from hanglens.cli import DEMO_REPORT, app


def test_demo_job_is_package_data() -> None:
    job = resources.files("hanglens") / "_demo" / "job"
    assert [p.name for p in job.iterdir()] == ["console.log"]


def test_demo_writes_the_report(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--output", str(tmp_path / "out")], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    report = tmp_path / "out" / DEMO_REPORT
    html = report.read_text(encoding="utf-8")
    assert "Control-flow divergence" in html
    assert result.output.startswith("hanglens: Control-flow divergence")
    assert "Culprit rank 2" in result.output
    assert str(report.resolve()) in result.output
    assert "\x1b[" not in result.output


def test_readme_shows_the_current_demo_output(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- demo-output -->\n```\n", 1)[1].split("```", 1)[0]
    assert block.startswith("$ hanglens demo\n")
    shown = [line for line in block.splitlines()[1:] if not line.startswith("Report: ")]
    result = CliRunner().invoke(
        app, ["demo", "--output", str(tmp_path)], env={"NO_COLOR": "1", "COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    printed = [line for line in result.output.splitlines() if not line.startswith("Report: ")]
    assert shown == printed, "README's demo output is stale: paste the output of `COLUMNS=100 hanglens demo`"
