"""`Ingested.sources`: display path -> Locator, a folder's plain files kept as the folder's number."""

from __future__ import annotations

from pathlib import Path

from hanglens import api
from hanglens.ingest.sources import Locator, Sources


def test_plain_files_of_a_folder_keep_its_number_and_give_their_locator_back() -> None:
    s = Sources()
    s["node00/0/stdout.log"] = Locator("/data/job/node00/0/stdout.log")
    s["node00/1/stdout.log"] = Locator("/data/job/node00/1/stdout.log")
    s["logs.tar.gz!rank0.log"] = Locator("/data/job/logs.tar.gz", "rank0.log")
    s["/abs/one.log"] = Locator("/abs/one.log")
    s["renamed.log"] = Locator("/data/other-name.log")
    assert s._folders == ["/data/job/"]
    assert s._at["node00/1/stdout.log"] == 0
    assert s["node00/1/stdout.log"] == Locator("/data/job/node00/1/stdout.log")
    assert s["logs.tar.gz!rank0.log"] == Locator("/data/job/logs.tar.gz", "rank0.log")
    assert s["/abs/one.log"] == Locator("/abs/one.log")
    assert s["renamed.log"] == Locator("/data/other-name.log")
    assert s.get("missing.log") is None
    assert len(s) == 5 and next(iter(s)) == "node00/0/stdout.log"
    assert s == {k: s[k] for k in s}
    del s["renamed.log"]
    assert "renamed.log" not in s


def test_a_job_read_from_a_folder_finds_its_lines_again(tmp_path: Path) -> None:
    (tmp_path / "node1").mkdir()
    log = tmp_path / "node1" / "rank0.log"
    log.write_text("step 1\nstep 2\nRuntimeError: boom\nafter\n")
    ing = api.read([str(tmp_path)])
    assert isinstance(ing.sources, Sources)
    [display] = list(ing.sources)
    assert Path(ing.sources[display].fs_path) == log
    ctx = ing.context([f for f in (e.ref for e in ing.events) if f.line == 3][:1], before=1, after=1)
    assert [line for _, lines in ctx.items() for line in lines] == [(2, "step 2"), (3, "RuntimeError: boom"),
                                                                   (4, "after")]
