"""The HTML report: self-contained, escaped, verdict first, rank overview that scales to 16,384 ranks."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import jinja2

from hanglens.report import html as report_html
from hanglens.report import render_html
from hanglens.report.rankmap import build_overview

from .conftest import HOSTILE

_URL_ATTR = re.compile(
    r"""(?:src|href|action|formaction|xlink:href|poster|data)\s*=\s*["']?([^"'\s>]+)""", re.I
)


def test_renders_strictly_and_is_deterministic(doc: dict[str, Any]) -> None:
    assert render_html(doc, strict=True) == render_html(doc, strict=True)


def test_no_external_reference_and_a_locking_csp(doc: dict[str, Any]) -> None:
    html = render_html(doc)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1)
    assert (
        "script-src 'sha256-" in csp.group(1) and "unsafe-inline" not in csp.group(1).split("script-src")[1]
    )
    targets = [t for t in _URL_ATTR.findall(html) if not t.startswith(("#", "data:"))]
    assert targets == []
    assert "@import" not in html and "url(http" not in html


def test_csp_hash_matches_the_inline_script(doc: dict[str, Any]) -> None:
    import base64
    import hashlib

    html = render_html(doc)
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in html


def test_verdict_is_on_the_first_screen(doc: dict[str, Any]) -> None:
    html = render_html(doc)
    verdict = html[html.index('id="verdict"') : html.index('id="evidence"')]
    assert "Control-flow divergence" in verdict
    assert "high confidence" in verdict
    assert ">2<" in verdict  # culprit rank
    assert "gpu-node-a.cluster.example.com" in verdict
    assert "0-1, 3-6" in verdict  # victims folded into ranges
    assert "stopped at collective #6462" in verdict
    assert "First step:" in verdict and "rank-dependent control flow" in verdict


def test_sections_are_all_there(doc: dict[str, Any]) -> None:
    html = render_html(doc)
    for anchor in (
        "evidence",
        "ranks",
        "timeline",
        "collective",
        "versions",
        "ruled-out",
        "unexplained",
        "remediation",
        "inputs",
        "rerun",
    ):
        assert f'id="{anchor}"' in html
    assert "rank0.log:4120" in html and "4119" in html  # cited line with its context line number
    assert "<details" in html and "@media print" in html
    assert "hanglens analyze /home/jdoe/runs/llm-7b/logs/" in html
    assert "driver" in html and "550.54.15" in html  # the version that differs is listed
    assert "no cuda_error event on any rank" in html  # ruled out, and why
    assert "core.1234" in html and "binary file" in html  # skipped input
    # a Python call is code in the prose, not a shell command to paste; the env assignment is exported
    assert "<code>init_process_group(timeout=timedelta(minutes=5))</code>" in html
    assert "<code>export TORCH_DISTRIBUTED_DEBUG=DETAIL</code>" in html
    assert "<code>init_process_group(timeout" not in html.split("snippet")[-1]


def test_every_log_string_is_escaped(evil_doc: dict[str, Any]) -> None:
    html = render_html(evil_doc, strict=True)
    for bad in HOSTILE:
        assert bad not in html
    body = html[html.index("<body>") :]
    assert body.count("<script") == 1  # only our own script
    assert re.search(r"<[a-z][^>]*\son\w+\s*=", body) is None  # no element carries an event handler
    tags = "".join(re.findall(r"<[^>]*>", body))
    assert "<img" not in tags and "javascript:" not in tags
    assert re.search(r"<a\s[^>]*href=[\"']?javascript", body) is None and "<svg onload" not in body
    assert "&lt;script&gt;document.title" in body


def test_rank_overview_folds_runs(doc: dict[str, Any]) -> None:
    ov = build_overview(doc["ranks"])
    assert [r.label for r in ov.rows] == ["0-1", "2", "3-6", "7"]
    assert [r.counts for r in ov.rows] == [
        (("victim", 2),),
        (("culprit", 1),),
        (("victim", 4),),
        (("silent", 1),),
    ]
    culprit, victim = ov.rows[1], ov.rows[0]
    assert culprit.progress is not None and victim.progress is not None and culprit.progress < victim.progress


def test_rank_overview_of_16384_ranks_stays_small(big_doc: dict[str, Any]) -> None:
    ov = build_overview(big_doc["ranks"])
    assert ov.total_ranks == 16_384 and len(ov.rows) <= 240
    labels = [r.label for r in ov.rows]
    assert "1037" in labels and "9001" in labels and "4096-4103" in labels and "12000-12511" in labels
    html = render_html(big_doc)
    assert len(html.encode()) < 2_000_000
    assert "16384 ranks in" in html


def test_rank_overview_falls_back_to_blocks_when_states_alternate() -> None:
    ranks = [
        {
            "rank": r,
            "host": f"h{r // 8}",
            "status": "ok" if r % 2 else "victim",
            "last_step": r % 7,
            "last_seq": {},
        }
        for r in range(16_384)
    ]
    ov = build_overview(ranks)
    assert ov.mode == "blocks" and len(ov.rows) <= 240
    assert sum(n for row in ov.rows for _, n in row.counts) == 16_384


def test_an_evidence_line_of_no_rank_says_no_rank(doc: dict[str, Any]) -> None:
    # a launcher's own line (torchrun's failure report) belongs to no rank: the summary names its file and
    # host, not "rank ?"
    item = dict(doc["findings"][0]["evidence"][0], rank=None, path="/home/user/logs/node1.log", line=149)
    changed = dict(doc, findings=[dict(doc["findings"][0], evidence=[item])])
    html = render_html(changed, strict=True)
    summary = re.search(r"node1\.log:149</span>[^<]*", html)
    assert summary is not None and "rank" not in summary.group(0)
    assert "rank 0" in render_html(doc, strict=True)


def test_missing_keys_do_not_break_the_report() -> None:
    html = render_html({"verdict": {"category": "none"}})
    assert "No failure found" in html


# -- the precompiled template (hanglens/report/_report_html.py, tools/precompile_templates.py) -----------


def _from_text(strict: bool) -> jinja2.Environment:
    """An environment like the report's that compiles every template from its text."""
    env = report_html._environment(strict)
    plain = jinja2.Environment(loader=jinja2.PackageLoader("hanglens.report", "templates"), autoescape=True,
                               undefined=env.undefined, trim_blocks=True, lstrip_blocks=True,
                               keep_trailing_newline=True)
    plain.filters.update(env.filters)
    return plain


def test_the_precompiled_template_is_up_to_date() -> None:
    env = report_html._environment(False)
    for name, module in report_html.PRECOMPILED.items():
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        current = Path(spec.origin).read_text(encoding="utf-8")
        assert current == report_html.precompiled_source(env, name), (
            f"{name} changed: run `python tools/precompile_templates.py`")


def test_the_report_is_rendered_from_the_precompiled_template_as_from_the_text(
        doc: dict[str, Any], evil_doc: dict[str, Any]) -> None:
    for strict in (False, True):
        template = report_html._environment(strict).get_template("report.html.j2")
        assert template.filename is not None and template.filename.endswith("_report_html.py")
        for d in (doc, evil_doc):
            text = _from_text(strict).get_template("report.html.j2").render(**report_html._context(d))
            assert render_html(d, strict=strict) == text


def test_a_precompiled_template_that_does_not_fit_is_not_used(doc: dict[str, Any]) -> None:
    # other syntax options than the ones the module was compiled with: the text is compiled instead
    env = jinja2.Environment(loader=report_html._Loader("hanglens.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=False,
                             keep_trailing_newline=True)
    env.filters.update(report_html._environment(True).filters)
    template = env.get_template("report.html.j2")
    assert template.filename is not None and template.filename.endswith("report.html.j2")
    assert "<html" in template.render(**report_html._context(doc))
