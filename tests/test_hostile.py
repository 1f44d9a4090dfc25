"""Hostile inputs (issue 12): one test per class, every input generated here at test time.

Each limit that stops an input must leave a skip (or a rule problem, or a scan row) naming the input
and the limit, never a hang, a MemoryError or an internal error. Sizes here are small: the limits are
lowered through `Limits` (as `--limit NAME=VALUE` does) rather than the inputs made huge, except
where the point is that a small file claims gigabytes (those are built by repeating compressed frames).
"""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import zstandard
from typer.testing import CliRunner

from hanglens import api
from hanglens.cli import app
from hanglens.engine import collect_rules, template
from hanglens.ingest import read_inputs, sources
from hanglens.limits import DEFAULT_LIMITS, Limits, MiB, parse_limits

REPO = Path(__file__).resolve().parents[1]
LINE = b"W1201 03:14:15.926000 4242 train.py:77] padding line of a chatty rank " + b"." * 950 + b"\n"
CHUNK = LINE * ((16 * MiB) // len(LINE))  # 16 MiB of text that compresses about 1000:1


@pytest.fixture
def low_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge the expansion ratio from 1 MiB on (64 MiB by default) so a bomb stops after little work."""
    monkeypatch.setattr(sources, "RATIO_FLOOR", 1 * MiB)


def _skips(ing: Any) -> dict[str, str]:
    return {s.path: s.reason for s in ing.skipped}


def _lines(ing: Any) -> dict[str, int]:
    return {f.path: f.lines for f in ing.files}


def _counted_lines(n: int, start: int = 0) -> bytes:
    """Lines that compress only ~5:1 (distinct numbers), so the ratio cap does not fire on them."""
    return b"".join(b"I1201 03:14:15.%06d 77 loop.py:9] step %d loss %d.%04d\n"
                    % (i % 10**6, i, i % 97, i * 7 % 9973) for i in range(start, start + n))


# -- class 1: decompression bombs ------------------------------------------------------------------
def _gz_bomb(path: Path, gib: int) -> Path:
    member = gzip.compress(CHUNK, compresslevel=9, mtime=0)
    path.write_bytes(member * (gib * 64))  # concatenated gzip members: gib GiB of text
    return path


def _zst_bomb(path: Path, gib: int) -> Path:
    frame = zstandard.ZstdCompressor(level=19).compress(CHUNK)
    path.write_bytes(frame * (gib * 64))
    return path


def test_class1_decompression_bombs_stop_at_the_ratio_with_a_skip_naming_input_and_limit(
        tmp_path: Path, low_floor: None) -> None:
    job = tmp_path / "job"
    job.mkdir()
    gz = _gz_bomb(job / "rank0.log.gz", 4)  # a few MiB on disk, 4 GiB decompressed
    zst = _zst_bomb(job / "rank1.log.zst", 64)  # ~1 MiB on disk, 64 GiB decompressed
    assert gz.stat().st_size < 64 * MiB and zst.stat().st_size < 8 * MiB
    with zipfile.ZipFile(job / "logs.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("rank2.log", (b"." * 1023 + b"\n") * (64 * 1024))  # 64 MiB; deflate's best case, ~1000:1
        zf.writestr("rank3.log.gz", gzip.compress(CHUNK, mtime=0))  # stored as-is: a bomb inside a zip
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("rank4.log")
        info.size = len(CHUNK) * 2
        tf.addfile(info, io.BytesIO(CHUNK * 2))
    (job / "more.tar.gz").write_bytes(gzip.compress(buf.getvalue(), compresslevel=9, mtime=0))
    ing = read_inputs([job], jobs=1)
    skips, lines = _skips(ing), _lines(ing)
    for path in ("rank0.log.gz", "rank1.log.zst", "logs.zip!rank2.log", "logs.zip!rank3.log.gz"):
        assert "limit max_ratio" in skips[path], (path, skips)
        # Stopped once max_ratio times the compressed bytes read so far was passed: MiBs, not GiBs.
        assert lines[path] < 48 * MiB // len(LINE), (path, lines[path])
    assert "limit max_ratio" in skips["more.tar.gz"]


def _zip_bomb(path: Path, name: str, mib: int) -> Path:
    """A zip whose one deflated member inflates to `mib` MiB (~430:1) with several MiB to read: blocks of
    one compressed chunk, repeated (a full flush makes each block independent of what came before)."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = co.compress(CHUNK) + co.flush(zlib.Z_FULL_FLUSH)
    body = block * (mib // 16) + co.flush()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(name, body)
    data = bytearray(path.read_bytes())
    for sig, method_at, size_at in ((b"PK\x03\x04", 8, 22), (b"PK\x01\x02", 10, 24)):
        at = data.index(sig)
        data[at + method_at:at + method_at + 2] = zipfile.ZIP_DEFLATED.to_bytes(2, "little")
        data[at + size_at:at + size_at + 4] = (mib << 20).to_bytes(4, "little")  # the CRC is never reached
    path.write_bytes(bytes(data))
    return path


def test_class1_zip_bomb_with_megabytes_to_read_stops_at_the_ratio(tmp_path: Path, low_floor: None) -> None:
    """zipfile reads ahead as many compressed bytes as output was asked for; counted as used, they kept
    the ratio under the cap until ~600 MiB of a 430:1 member had been inflated."""
    job = tmp_path / "job"
    job.mkdir()
    bomb = _zip_bomb(job / "logs.zip", "rank0.log", 2048)
    assert bomb.stat().st_size > 2 * MiB
    with zipfile.ZipFile(job / "other.zip", "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr("rank1.log", b"x" * 100)
    ing = read_inputs([job], jobs=1)
    skips, lines = _skips(ing), _lines(ing)
    assert "limit max_ratio" in skips["logs.zip!rank0.log"]
    assert lines["logs.zip!rank0.log"] < 48 * MiB // len(LINE), lines
    assert "compressed with bzip2 (only stored and deflated members are read)" in skips["other.zip!rank1.log"]


def test_class1_member_and_job_byte_caps(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log.gz").write_bytes(gzip.compress(_counted_lines(60_000), mtime=0))  # ~3 MiB
    lim = DEFAULT_LIMITS.with_overrides(max_member_bytes=1 * MiB)
    ing = read_inputs([job], jobs=1, limits=lim)
    reason = _skips(ing)["rank0.log.gz"]
    assert "limit max_member_bytes" in reason and "1 MiB" in reason
    got = next(f for f in ing.files if f.path == "rank0.log.gz")
    assert got.size == 1 * MiB and 0 < got.lines < 60_000
    (job / "rank1.log.zst").write_bytes(zstandard.ZstdCompressor().compress(_counted_lines(60_000, 10**6)))
    lim = DEFAULT_LIMITS.with_overrides(max_job_bytes=4 * MiB)
    skips = _skips(read_inputs([job], jobs=1, limits=lim))
    assert "limit max_job_bytes" in skips["rank1.log.zst"] and "rank0.log.gz" not in skips
    # A tar.gz's members are counted once (as the decompressed tar stream), not again per member.
    tgz = tmp_path / "tgz"
    tgz.mkdir()
    data = _counted_lines(30_000)  # ~1.5 MiB
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("rank0.log")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    (tgz / "job.tar.gz").write_bytes(buf.getvalue())
    ing = read_inputs([tgz], jobs=1, limits=DEFAULT_LIMITS.with_overrides(max_job_bytes=2 * MiB))
    assert ing.skipped == [] and _lines(ing) == {"job.tar.gz!rank0.log": 30_000}


def test_class1_archive_members_and_files_per_job(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    with zipfile.ZipFile(job / "many.zip", "w") as zf:
        for i in range(5):
            zf.writestr(f"rank{i}.log", "I1201 03:14:15.000000 1 x.py:1] hello\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i in range(5):
            data = b"I1201 03:14:15.000000 1 x.py:1] hello\n"
            info = tarfile.TarInfo(f"node/rank{i}.log")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (job / "many.tar").write_bytes(buf.getvalue())
    for i in range(3):
        (job / f"z{i}.log").write_text("I1201 03:14:15.000000 1 x.py:1] hello\n")
    ing = read_inputs([job], jobs=1, limits=parse_limits(["max_members=3", "max_files=4"]))
    skips = _skips(ing)
    assert "limit max_members" in skips["many.zip"] and "5 members" in skips["many.zip"]
    assert "limit max_members" in skips["many.tar"]
    assert sorted(p for p in _lines(ing) if p.startswith("many.tar!")) == [
        "many.tar!node/rank0.log", "many.tar!node/rank1.log", "many.tar!node/rank2.log"]
    assert [p for p, r in skips.items() if "limit max_files" in r] == ["z2.log"]
    assert "z2.log" not in _lines(ing)


def test_class1_cli_limit_flag_and_bad_limit(tmp_path: Path, low_floor: None) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log.gz").write_bytes(gzip.compress(_counted_lines(60_000), mtime=0))
    runner = CliRunner()
    res = runner.invoke(app, ["inputs", str(job), "--limit", "max_member_bytes=512K"])
    assert res.exit_code == 0, res.output
    assert "rank0.log.gz" in res.stdout and "limit max_member_bytes" in res.stdout
    bad = runner.invoke(app, ["inputs", str(job), "--limit", "max_member_bites=1"])
    assert bad.exit_code == 2
    assert bad.stderr.count("\n") == 1 and "unknown limit 'max_member_bites'" in bad.stderr


def test_limits_parse_values() -> None:
    lim = parse_limits(["max_member_bytes=8GiB", "max-files=10_000", "rule_regex_budget_s=0.25"])
    assert (lim.max_member_bytes, lim.max_files, lim.rule_regex_budget_s) == (8 << 30, 10_000, 0.25)
    assert parse_limits(["max_line_bytes=2M"]).max_line_bytes == 2 << 20
    for bad in ("max_files", "max_files=ten", "max_files=-1", "job_deadline_s=nan", "nope=1",
                "max_line_bytes=100"):
        with pytest.raises(ValueError):
            parse_limits([bad])


def test_max_line_bytes_flag_cuts_lines_on_both_read_paths(tmp_path: Path) -> None:
    """`--limit max_line_bytes` is read by the line reader, for a small file and for one over 1 MB."""
    job = tmp_path / "job"
    job.mkdir()
    # (an NCCL WARN glued after a long partial line keeps NCCL's own `host:pid:tid [dev] file:line` envelope)
    late = ("I1201 03:14:15.000000 1 x.py:1] " + "x" * 3000
            + " node1:7:7 [0] misc/socket.cc:50 NCCL WARN late trigger\n")
    (job / "rank0.log").write_text("[rank0]:I1201 03:14:14.000000 1 x.py:1] start\n" + late)
    long_line = "y" * (600 << 10) + "\n"  # 1.2 MB: past the size where plain files take the fast path
    (job / "rank1.log").write_text("I1201 03:14:15.000000 1 x.py:1] a\n" + long_line * 2 + "end\n")
    runner = CliRunner()
    res = runner.invoke(app, ["inputs", str(job), "--limit", "max_line_bytes=1K"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "line 2 is longer than 1 KiB; read its start only (limit max_line_bytes" in out
    assert out.count("longer than 1 KiB") == 3  # rank0 line 2, rank1 lines 2 and 3
    assert "rank0.log\t3" in out and "0 events" in out.split("rank1.log")[0]  # the cut hid the warning
    res = runner.invoke(app, ["inputs", str(job), "--limit", "max_line_bytes=512K"])
    assert res.exit_code == 0, res.output
    assert res.stdout.count("longer than 512 KiB") == 2 and "1 events" in res.stdout.split("rank1.log")[0]
    default = runner.invoke(app, ["inputs", str(job)])
    assert "longer than" not in default.stdout


# -- class 3: YAML alias bombs and rule-folder size -------------------------------------------------
LAUGHS = "\n".join(["id: lol", "title: &a0 lol", *(f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]"
                                                    for i in range(1, 10))]) + "\n"


def test_class3_yaml_alias_bomb_is_refused_with_a_position(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "lol.yaml").write_text(LAUGHS)
    _, problems = collect_rules([rules])
    texts = [str(p) for p in problems]
    assert any("lol.yaml:2:8:" in t and "anchors and aliases are not allowed" in t for t in texts), texts
    res = CliRunner().invoke(app, ["rules", "check", str(rules)])
    assert res.exit_code == 2 and "anchors and aliases are not allowed" in res.stderr


def test_class3_raising_max_yaml_aliases_allows_aliases_but_never_their_bomb(tmp_path: Path) -> None:
    """`--limit max_yaml_aliases=N` used to count alias uses only: 81 aliases passed N=100 and the
    "billion laughs" (9**9 nodes once expanded) hung the loader. N now bounds the nodes aliases add."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "lol.yaml").write_text(LAUGHS)
    (rules / "cycle.yaml").write_text("id: &a [*a]\n")
    (rules / "reuse.yaml").write_text("id: reuse\ntitle: &t Title said twice\ndescription: *t\n")
    _, problems = collect_rules([rules], limits=Limits(max_yaml_aliases=1000))
    by_file: dict[str, str] = {}
    for p in problems:
        by_file[Path(p.path).name] = by_file.get(Path(p.path).name, "") + str(p) + "\n"
    assert "lol.yaml:2:8: YAML aliases add more than 1000 nodes" in by_file["lol.yaml"]
    assert "cycle.yaml:1:5: a YAML alias makes a node contain itself" in by_file["cycle.yaml"]
    assert "missing required key" in by_file["reuse.yaml"]  # read, validated: it lacks the other keys
    assert "alias" not in by_file["reuse.yaml"]  # one alias, one node added: allowed


def test_class3_rule_folder_and_rule_file_size_caps(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    for i in range(4):
        (rules / f"r{i}.yaml").write_text(f"id: r{i}\n")
    _, problems = collect_rules([rules], limits=Limits(max_rule_files=3))
    assert [p.message for p in problems] == ["4 rule files, over 3; none loaded"]
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.yaml").write_text("id: huge\n" + "# padding\n" * 20_000)
    _, problems = collect_rules([big], limits=Limits(max_rule_bytes=64 * 1024))
    assert [(p.path.endswith("huge.yaml"), p.message) for p in problems] == [(True, "rule file over 64 KiB")]


# -- class 4: template and regex work in user rules ---------------------------------------------------
@pytest.mark.parametrize("source", [
    "{{ 'x' * 10 ** 10 }}",
    "{{ 2 ** 100000000 }}",
    "{{ 99 ** 99 ** 99 }}",
    "{{ [1] * 10 ** 9 }}",
    "{{ 'x' | center(10 ** 9) }}",
    "{{ 'x'.ljust(10 ** 9) }}",
    "{{ '%999999999d' % 1 }}",
    "{{ '%*d' % (999999999, 1) }}",
    "{{ '{} {:999999999}'.format(1, 2) }}",
    "{{ '{} {:>{w}}'.format(1, 2, w=999999999) }}",
    "{{ '%999999999s' | format(1) }}",
    "{% for i in range(100000) %}{{ 'y' * 60000 }}{% endfor %}",
    "{{ 'ab' + 'c' * 60000 + 'd' * 60000 }}",
])
def test_class4_template_work_is_bounded(source: str) -> None:
    text, error = template.render(source, {}, {})
    assert error is not None and text.startswith("(explanation could not be rendered:")
    assert "SecurityError" in error, error


def test_class4_templates_still_render_ordinary_work() -> None:
    source = ("{{ 2 ** 10 }} {{ '-' * 3 }} {{ range(3) | list | join }} {{ 600000 | round }}"
              " {{ '%d ms' % 600000 }} {{ '{} s'.format(600000) }} {{ 'ab' | center(6) }}")
    text, error = template.render(source, {}, {})
    assert (text, error) == ("1024 --- 0, 1, 2 600000 600000 ms 600000 s   ab", None)


RULE = """\
id: hostile-regex
title: A user rule with a catastrophic regex and a runaway template
category: rank_crash
confidence: low
requires:
  events: [exception]
match:
  all:
    - event: exception
      where: {{message: {{regex: "^(a|aa)+$"}}}}
      bind: ex
explanation: |
  {explanation}
remediation:
  - 'Nothing to do.'
tests:
  - name: hit
    expect: match
    logs:
      console.log: |
        [rank1]: Traceback (most recent call last):
        [rank1]:   File "t.py", line 3, in <module>
        [rank1]: RuntimeError: aaaa
  - name: miss
    expect: no-match
    logs:
      console.log: |
        nothing here
"""


def _tracebacks(n: int, message: str) -> str:
    return "".join(f'[rank{i % 8}]: Traceback (most recent call last):\n'
                   f'[rank{i % 8}]:   File "t{i}.py", line {i}, in <module>\n'
                   f"[rank{i % 8}]: RuntimeError: {message}\n" for i in range(n))


def test_class4_regex_time_is_budgeted_per_rule_and_job(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "hostile-regex.yaml").write_text(RULE.format(explanation="{{ ex.rank | rank_list }}"))
    job = tmp_path / "job"
    job.mkdir()
    # `^(a|aa)+$` on 26 a's and a "!" backtracks through every split of the a's (Fibonacci(26) ways): about
    # 0.1 s per search even in the `regex` module, which defuses the textbook `(a+)+$`
    (job / "console.log").write_text(_tracebacks(300, "a" * 26 + "!"))
    lim = DEFAULT_LIMITS.with_overrides(rule_regex_budget_s=0.05)
    result = api.analyze([job], rules_dirs=[rules], limits=lim).result
    ne = {n.rule_id: n.missing for n in result.not_evaluable}
    assert "hostile-regex" in ne and "limit rule_regex_budget_s" in ne["hostile-regex"][0]
    assert any("hostile-regex: not evaluable" in w for w in result.warnings)


def test_class4_runaway_template_in_a_matching_rule_is_a_rule_error(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "hostile-regex.yaml").write_text(RULE.format(explanation="{{ 'x' * 10 ** 10 }}"))
    job = tmp_path / "job"
    job.mkdir()
    (job / "console.log").write_text(_tracebacks(2, "aaaa"))
    result = api.analyze([job], rules_dirs=[rules]).result
    finding = next(f for f in result.findings if f.rule_id == "hostile-regex")
    assert "could not be rendered" in finding.explanation and "max_template_output" in finding.explanation


# -- class 6: file names that are not UTF-8 -----------------------------------------------------------
def test_class6_a_job_folder_named_in_bytes_that_are_not_utf8_is_one_row(tmp_path: Path) -> None:
    """The job's own path (not only a file in it) not UTF-8: the scan used to end in an internal error
    (UnicodeEncodeError in the job's cache key, the cache line and the table) and lose every row."""
    root, out = tmp_path / "root", tmp_path / "out"
    root.mkdir()
    odd = os.fsencode(root) + b"/job-caf\xe9\xff"
    try:
        os.mkdir(odd)
    except OSError:
        pytest.skip("this filesystem refuses a name that is not UTF-8")
    (Path(os.fsdecode(odd)) / "rank0.log").write_text("[rank0]:RuntimeError: CUDA error: an illegal memory "
                                                       "access was encountered\n")
    (root / "plain").mkdir()
    (root / "plain" / "rank0.log").write_text("I1201 03:14:15.000000 1 x.py:1] hello\n")
    got: list[Any] = []
    table = api.scan([root], out=out, engine="inline", on_summary=got.append)  # the CLI's path, in-process
    assert sorted(table["status"]) == ["ok", "ok"] and got[0].errors == 0
    csv = (out / "jobs.csv").read_text(encoding="utf-8")
    assert "job-caf\\xe9\\xff," in csv and "/plain," in csv and "illegal_memory_access" in csv
    assert sorted(pd.read_parquet(out / "jobs.parquet")["status"]) == ["ok", "ok"]
    api.scan([root], out=out, engine="inline", on_summary=got.append)
    assert got[1].cached == 2  # the cache file took the row


# -- class 10: one bad job must not take down a scan -------------------------------------------------
def _fake_job(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "rank0.log").write_text("line\n")


def test_class10_hanging_crashing_and_memory_hungry_jobs_become_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hanglens.scan import ScanSummary, scan

    monkeypatch.syspath_prepend(str(REPO / "tests" / "scan"))
    root, out = tmp_path / "root", tmp_path / "out"
    for name in ("a__oom__r1", "b__hang", "c__die", "d__hog", "e__none__r", "f__rank_crash__r2"):
        _fake_job(root, name)
    lim = DEFAULT_LIMITS.with_overrides(job_deadline_s=4.0, job_memory_bytes=3 << 30)
    got: list[ScanSummary] = []
    df = scan([root], out=out, jobs=2, analyzer="scan_helpers:fake_analyze", limits=lim,
              on_summary=got.append)
    status = dict(zip(df["path"].map(os.path.basename), df["status"], strict=True))
    assert status == {"a__oom__r1": "ok", "b__hang": "timeout", "c__die": "crashed", "d__hog": "oom",
                      "e__none__r": "ok", "f__rank_crash__r2": "ok"}
    errors = dict(zip(df["path"].map(os.path.basename), df["error"], strict=True))
    assert "limit job_deadline_s" in errors["b__hang"] and "limit job_memory_bytes" in errors["d__hog"]
    assert got[0].errors == 3
    csv = (out / "jobs.csv").read_text()
    assert csv.count("\n") == 7 and "timeout" in csv and "oom" in csv


def test_class10_a_job_whose_outputs_cannot_be_written_is_one_error_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hanglens.scan import run

    monkeypatch.syspath_prepend(str(REPO / "tests" / "scan"))
    root, out = tmp_path / "root", tmp_path / "out"
    for name in ("a__oom__r1", "b__none__r", "c__oom__r2"):
        _fake_job(root, name)
    real = run._write_reports

    def refuse_b(out_dir: Path, res: Any) -> None:
        if "b__none" in res.job_id:
            raise OSError(28, "No space left on device")
        real(out_dir, res)

    monkeypatch.setattr(run, "_write_reports", refuse_b)
    df = run.scan([root], out=out, engine="inline", analyzer="scan_helpers:fake_analyze")
    status = dict(zip(df["path"].map(os.path.basename), df["status"], strict=True))
    assert status == {"a__oom__r1": "ok", "b__none__r": "error", "c__oom__r2": "ok"}
    assert "could not write the job's outputs" in df.loc[df["status"] == "error", "error"].item()
    assert (out / "jobs.csv").read_text().count("\n") == 4


def _bomb_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for name in ("job-a", "job-b"):
        (root / name).mkdir(parents=True)
        (root / name / "rank0.log").write_text("I1201 03:14:15.000000 1 x.py:1] hello\n")
    (root / "job-c").mkdir()
    _zst_bomb(root / "job-c" / "rank0.log.zst", 64)
    return root


# With these limits the bomb is read to its end (64 GiB): only the job deadline can stop it.
UNCAPPED = ["--limit", "max_ratio=1000000000", "--limit", "max_member_bytes=1T",
            "--limit", "max_job_bytes=1T"]


def test_class10_cli_scan_times_out_a_bomb_job_and_exits_1(tmp_path: Path) -> None:
    root, out = _bomb_root(tmp_path), tmp_path / "out"
    res = CliRunner().invoke(app, ["scan", str(root), "-o", str(out), "-j", "2", "--job-timeout", "20",
                                   *UNCAPPED])
    assert res.exit_code == 1, res.output
    df = pd.read_csv(out / "jobs.csv")
    status = dict(zip(df["path"].map(os.path.basename), df["status"], strict=True))
    assert status == {"job-a": "ok", "job-b": "ok", "job-c": "timeout"}
    assert "limit job_deadline_s" in df.loc[df["status"] == "timeout", "error"].item()


def test_class10_a_killed_scan_keeps_its_completed_rows(tmp_path: Path) -> None:
    root, out = _bomb_root(tmp_path), tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "hanglens", "scan", str(root), "-o", str(out), "-j", "2",
                             *UNCAPPED], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        done: list[str] = []
        for _ in range(600):  # the two small jobs finish within seconds; the bomb never does
            time.sleep(0.5)
            if (out / "jobs.csv").is_file():
                done = sorted(pd.read_csv(out / "jobs.csv")["path"].map(os.path.basename))
                if len(done) == 2:
                    break
        assert proc.poll() is None  # still busy with the bomb
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert done == ["job-a", "job-b"]
    assert sorted(pd.read_csv(out / "jobs.csv")["status"]) == ["ok", "ok"]
    assert (out / "index.html").is_file()


# -- regressions found by benchmarks/fuzz.py ----------------------------------------------------------
def test_fuzz_found_gloo_line_with_thousands_of_unclosed_brackets_reads(tmp_path: Path) -> None:
    """benchmarks/fuzz.py --seed 7, line 55003: a gloo timeout line behind thousands of repeats of an
    unclosed `[path`, its words broken by a mutation so that it does not match, made the gloo parser
    backtrack quadratically (2,500 repeats: 7 s; this line's 10,000: minutes). Read in linear time now."""
    job = tmp_path / "job"
    job.mkdir()
    junk = "[/src/torch/third_part" * 10_000
    (job / "rank0.log").write_text(
        f"[rank0]: RuntimeError: {junk}[/src/torch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
        "Timed out waiting 20000ms fo-r recv operation to complete\n")
    ing = read_inputs([job], jobs=1)
    assert ing.files[0].lines == 1 and ing.skipped == []
    assert "traceback" in {e.parser for e in ing.events}


def test_fuzz_found_pickle_naming_a_huge_memo_slot_is_skipped_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """benchmarks/fuzz.py --seed 12, folder f00201: a flipped byte made a Flight Recorder pickle store into
    memo slot 812,346,977; the C unpickler grew its memo table to that (13 GB, cleared slot by slot)
    before any opcode count could stop it: the folder hung past the fuzz's 90 s and ate memory."""
    from hanglens.ingest import flight

    evil = b"\x80\x04}r" + (812_346_977).to_bytes(4, "little") + b"."  # {} stored at slot 812,346,977
    job = tmp_path / "job"
    job.mkdir()
    (job / "fr_trace_rank_0").write_bytes(evil)
    (job / "rank0.log").write_text("I1201 03:14:15.000000 1 x.py:1] hello\n")
    # One thread: the unpickler runs under an address-space cap, the table's allocation fails at once.
    reason = _skips(read_inputs([job], jobs=1))["fr_trace_rank_0"]
    assert "memo index" in reason or "needs more memory than a dump of this size" in reason, reason
    # Other threads (they would share the cap): the opcodes are scanned first, the index refused.
    monkeypatch.setattr(flight.threading, "active_count", lambda: 2)
    reason = _skips(read_inputs([job], jobs=1))["fr_trace_rank_0"]
    assert "memo index 812346977 past the 3 opcodes read" in reason, reason
