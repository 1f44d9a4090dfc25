"""Discovery, archives read in place, origins from paths, error.json, and evidence context."""

# ruff: noqa: E501 - expected paths and origins stay on one line each, as a table
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from hanglens.errors import InputError
from hanglens.ingest import read_context, read_inputs
from hanglens.ingest.origin import origin_of
from hanglens.model import Event, Origin, SourceRef
from hanglens.parsers.base import Parser

LOG = b"start\nMARK kind=mark\nend\n"


def parsed(events: list[Event]) -> list[Event]:
    """The events the parsers made (not the `last_line` each writer's last line gives, ingest/tail.py)."""
    return [e for e in events if e.kind != "last_line"]


def _tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> None:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize(("name", "pack"), [
    ("a.log.gz", gzip.compress), ("a.log.bz2", bz2.compress), ("a.log.xz", lzma.compress),
    ("a.log.zst", lambda b: zstandard.ZstdCompressor().compress(b)), ("a.log", lambda b: b),
])
def test_compressed_files_read_in_place(tmp_path: Path, mark: tuple[type[Parser], ...], name: str,
                                        pack: Callable[[bytes], bytes]) -> None:
    (tmp_path / name).write_bytes(pack(LOG))
    ing = read_inputs([tmp_path], parsers=mark)
    assert [(e.ref.path, e.ref.line) for e in parsed(ing.events)] == [(name, 2)]
    assert ing.files[0].lines == 3 and ing.files[0].size == len(LOG)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]       # nothing extracted


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_tar_members_shown_with_bang(tmp_path: Path, mark: tuple[type[Parser], ...], mode: str) -> None:
    _tar(tmp_path / "logs.tar", {"node0/rank1.log": LOG, "node0/rank2.log.gz": gzip.compress(LOG)}, mode)
    ing = read_inputs([tmp_path / "logs.tar"], parsers=mark)
    assert [(e.ref.path, e.rank, e.host) for e in parsed(ing.events)] == [
        ("logs.tar!node0/rank1.log", 1, "node0"), ("logs.tar!node0/rank2.log.gz", 2, "node0")]


def test_tar_zst_and_zip_with_gz_member(tmp_path: Path, mark: tuple[type[Parser], ...]) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        info = tarfile.TarInfo("rank4.log")
        info.size = len(LOG)
        tf.addfile(info, io.BytesIO(LOG))
    (tmp_path / "x.tar.zst").write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    with zipfile.ZipFile(tmp_path / "y.zip", "w") as zf:
        zf.writestr("logs/rank5.log.gz", gzip.compress(LOG))
    ing = read_inputs([tmp_path], parsers=mark)
    assert [(e.ref.path, e.rank) for e in parsed(ing.events)] == [("x.tar.zst!rank4.log", 4), ("y.zip!logs/rank5.log.gz", 5)]


def test_unsafe_and_special_tar_members_skipped(tmp_path: Path, mark: tuple[type[Parser], ...]) -> None:
    path = tmp_path / "evil.tar"
    with tarfile.open(path, "w") as tf:
        for name in ("/etc/abs.log", "../up.log", "ok.log"):
            info = tarfile.TarInfo(name)
            info.size = len(LOG)
            tf.addfile(info, io.BytesIO(LOG))
        link = tarfile.TarInfo("link.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
        dev = tarfile.TarInfo("null")
        dev.type = tarfile.CHRTYPE
        tf.addfile(dev)
    ing = read_inputs([path], parsers=mark)
    reasons = {s.path: s.reason for s in ing.skipped}
    assert "absolute" in reasons["evil.tar!/etc/abs.log"]
    assert "'..'" in reasons["evil.tar!../up.log"]
    assert "link" in reasons["evil.tar!link.log"]
    assert "device" in reasons["evil.tar!null"]
    assert [f.path for f in ing.files] == ["evil.tar!ok.log"]


def test_checkpoint_zip_and_binaries_skipped(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "model.pt", "w") as zf:
        zf.writestr("model/data.pkl", b"\x80\x02}q\x00.")
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (tmp_path / "w.bin").write_bytes(bytes(range(256)) * 10)
    (tmp_path / "ok.log").write_bytes(LOG)
    ing = read_inputs([tmp_path])
    assert {s.path: s.reason for s in ing.skipped} == {
        "model.pt": "binary file (PyTorch checkpoint)", "plot.png": "binary file (PNG image)",
        "w.bin": "binary file (control bytes)"}
    assert [f.path for f in ing.files] == ["ok.log"]


def test_config_and_source_files_are_context_not_logs(tmp_path: Path) -> None:
    """Settings and code beside the logs say what could happen, not what did: a comment in Hydra's
    `.hydra/config.yaml` or a string in a DeepSpeed config is never evidence. JSON lines logs, error.json
    files, shell scripts and notebooks are still read."""
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(
        "trainer:\n  # lower if: CUDA out of memory. Tried to allocate 2.00 GiB\n  batch_size: 32\n")
    (tmp_path / "ds_config.json").write_text('{\n  "train_batch_size": 32,\n  "note": "MARK kind=mark"\n}\n')
    (tmp_path / "titan.toml").write_text('[job]\ndescription = "MARK kind=mark"\n')
    (tmp_path / "train.py").write_text('raise RuntimeError("MARK kind=mark")\n')
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 2 train.py\n")
    (tmp_path / "log.json").write_text('{"message": "MARK kind=mark", "level": "INFO"}\n'
                                       '{"message": "done", "level": "INFO"}\n')
    (tmp_path / "export.json").write_text('[\n  {"textPayload": "MARK kind=mark", "timestamp": '
                                          '"2026-11-30T10:00:00Z"}\n]\n')
    (tmp_path / "list.json").write_text('[1, 2, 3]\n')
    (tmp_path / "error.json").write_text('{"message": {"message": "RuntimeError: boom", "extraInfo": '
                                         '{"py_callstack": "Traceback", "timestamp": "1700000000"}}}')
    ing = read_inputs([tmp_path])
    assert {s.path: s.reason for s in ing.skipped} == {
        ".hydra/config.yaml": "configuration file (.yaml): read as context, not as a log",
        "ds_config.json": "JSON document (settings or state, not log records): read as context, not as a log",
        "list.json": "JSON document (settings or state, not log records): read as context, not as a log",
        "titan.toml": "configuration file (.toml): read as context, not as a log",
        "train.py": "Python source file (.py): read as context, not as a log"}
    assert [f.path for f in ing.files] == ["error.json", "export.json", "log.json", "run.sh"]
    assert not any(e.kind == "cuda_oom" for e in ing.events)
    assert any(e.kind == "error_file" for e in ing.events)


def test_torchrun_tree_and_error_json(tmp_path: Path, mark: tuple[type[Parser], ...]) -> None:
    leaf = tmp_path / "node07" / "myrun_ab12cd34" / "attempt_1" / "2"
    leaf.mkdir(parents=True)
    (leaf / "stderr.log").write_bytes(b"[rank10]:hello\nMARK kind=mark\n")
    (leaf / "error.json").write_text('{"message": {"message": "RuntimeError: boom\\nmore", "extraInfo": '
                                     '{"py_callstack": "Traceback", "timestamp": "1700000000"}, "errorCode": 1}}')
    ing = read_inputs([tmp_path], parsers=mark)
    err = next(e for e in ing.events if e.kind == "error_file")
    assert (err.rank, err.host, err.local_rank, err.attempt, err.time) == (10, "node07", 2, 1, 1700000000.0)
    assert dict(err.fields) == {"exc_type": "RuntimeError", "message": "boom", "timestamp": 1700000000.0,
                                "error_code": 1}
    f = next(f for f in ing.files if f.path.endswith("stderr.log"))
    assert f.origin == Origin(local_rank=2, attempt=1, stream="stderr", host="node07", node_dir="myrun_ab12cd34")


def test_error_json_new_format(tmp_path: Path) -> None:
    d = tmp_path / "r_x" / "attempt_0" / "0"
    d.mkdir(parents=True)
    (d / "error.json").write_text('{"message": "ValueError: bad", "timestamp": 1700000001, "errorCode": 2}')
    (ev,) = read_inputs([tmp_path]).events
    assert (ev.kind, ev.get("exc_type"), ev.get("message"), ev.time, ev.get("error_code")) == (
        "error_file", "ValueError", "bad", 1700000001.0, 2)


@pytest.mark.parametrize(("rel", "origin"), [
    ("logs/rank3.log", Origin(rank=3)),
    ("rank_3.txt", Origin(rank=3)),
    ("rank-3.err", Origin(rank=3, stream="stderr")),
    ("worker-3.log", Origin(rank=3)),
    ("train-rank12.out", Origin(rank=12, stream="stdout")),
    ("node0_rank3.log", Origin(rank=3, host="node0")),
    ("local_rank_1.log", Origin(local_rank=1)),
    # a file a user merged from two processes names both: no one rank's (or node's) file
    ("rank0_rank14.txt", Origin()),
    ("logs/rank3-rank7.log", Origin()),
    ("node0_node1.log", Origin()),
    ("rank03_rank3.log", Origin(rank=3)),
    ("ranking.log", Origin()),
    ("rank3x.log", Origin()),
    ("logs2024/train.log", Origin()),
    ("gpu-node-07/train.log", Origin(host="gpu-node-07")),
    ("r/run_1_abcd/attempt_0/3/stdout.log", Origin(local_rank=3, attempt=0, stream="stdout", node_dir="run_1_abcd")),
    # a node's `--log-dir logs` collected under the node's name (real multi-node runs, tests/written_cases/r58-*)
    ("gpu-a02/logs/run_1_abcd/attempt_0/1/stderr.log",
     Origin(local_rank=1, attempt=0, stream="stderr", host="gpu-a02", node_dir="run_1_abcd")),
    ("exp/logs/run_1_abcd/attempt_0/1/stderr.log", Origin(local_rank=1, attempt=0, stream="stderr", node_dir="run_1_abcd")),
    # Open MPI `mpirun --output-filename out`: out/<local jobid>/rank.<vpid>/std{out,err}, zero-padded vpid
    ("out/1/rank.2/stdout", Origin(rank=2, stream="stdout")),
    ("out/1/rank.11/stderr", Origin(rank=11, stream="stderr")),
    ("out/rank.03/stderr", Origin(rank=3, stream="stderr")),
    ("out/1/rank.2/notes.txt", Origin()),
])
def test_origin_hints(rel: str, origin: Origin) -> None:
    assert origin_of(rel).origin == origin


def test_nccl_debug_file_name() -> None:
    hints = origin_of("nccl/nccl.node07.41233")
    assert (hints.origin.host, hints.pid) == ("node07", 41233)


def test_display_paths_of_several_roots(tmp_path: Path) -> None:
    for node in ("n0", "n1"):
        (tmp_path / node).mkdir()
        (tmp_path / node / "a.log").write_bytes(LOG)
    ing = read_inputs([tmp_path / "n0", tmp_path / "n1"])
    assert [f.path for f in ing.files] == ["n0/a.log", "n1/a.log"]
    assert [f.path for f in read_inputs([str(tmp_path / "n*" / "*.log")]).files] == ["n0/a.log", "n1/a.log"]


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_inputs([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no log files found"):
        read_inputs([tmp_path / "empty"])


def test_parallel_equals_serial(tmp_path: Path, mark: tuple[type[Parser], ...]) -> None:
    for r in range(4):
        (tmp_path / f"rank{r}.log").write_bytes(LOG * 3)
    one = read_inputs([tmp_path], jobs=1, parsers=mark)
    assert len(parsed(one.events)) == 12
    for jobs in (2, 3):  # this process and a pool of 1, then 2, read side by side
        many = read_inputs([tmp_path], jobs=jobs, parsers=mark)
        assert one.events == many.events and one.files == many.files


def test_read_context_plain_and_member(tmp_path: Path, mark: tuple[type[Parser], ...]) -> None:
    body = b"".join(b"line %d\n" % i for i in range(1, 11)).replace(b"line 5\n", b"\x1b[31mMARK\x1b[0m\n")
    (tmp_path / "rank0.log").write_bytes(body)
    _tar(tmp_path / "b.tgz", {"rank1.log": body})
    ing = read_inputs([tmp_path], parsers=mark)
    ctx = read_context(ing, [SourceRef("rank0.log", 5), SourceRef("b.tgz!rank1.log", 1)], before=2, after=1)
    assert ctx[SourceRef("rank0.log", 5)] == [(3, "line 3"), (4, "line 4"), (5, "MARK"), (6, "line 6")]
    assert ctx[SourceRef("b.tgz!rank1.log", 1)] == [(1, "line 1"), (2, "line 2")]
    assert ing.context([SourceRef("gone.log", 1)]) == {SourceRef("gone.log", 1): []}


def test_osc_hyperlinks_and_titles_are_stripped(tmp_path: Path) -> None:
    """A terminal that wraps paths in OSC 8 hyperlinks (rich, modern `ls`) or sets its title leaves escape
    strings in a captured console; the text the parsers see has none of them."""
    link = "\x1b]8;;file:///home/user/project/train.py\x1b\\train.py\x1b]8;;\x1b\\"
    body = ("\x1b]0;job 4411\x07[rank1]:Traceback (most recent call last):\n"
            f'[rank1]:  File "/home/user/project/{link}", line 48, in <module>\n'
            "[rank1]:    main()\n"
            "[rank1]:\x1b[31mRuntimeError: CUDA error: an illegal memory access was encountered\x1b[0m\n")
    (tmp_path / "console.log").write_text(body, encoding="utf-8")
    ing = read_inputs([tmp_path])
    texts = [e.text for e in parsed(ing.events)]
    assert texts and not any("\x1b" in t or "\x07" in t for t in texts)
    ctx = ing.context([SourceRef("console.log", 1), SourceRef("console.log", 2)], before=0, after=0)
    assert ctx[SourceRef("console.log", 1)] == [(1, "[rank1]:Traceback (most recent call last):")]
    assert ctx[SourceRef("console.log", 2)] == [
        (2, '[rank1]:  File "/home/user/project/train.py", line 48, in <module>')]


def test_batches_hold_every_unit_once_biggest_first() -> None:
    from hanglens.ingest import _batches
    from hanglens.ingest.sources import Unit

    units = [Unit(fs_path=f"/x/{i}", display=f"{i}.log", rel=f"{i}.log", size=s)
             for i, s in enumerate([10, 5_000_000, 30, 20, 10, 40] * 50)]
    got = _batches(units, 2)
    flat = [i for b in got for i in b]
    assert sorted(flat) == list(range(len(units)))
    assert [units[i].size for i in flat] == sorted((u.size for u in units), reverse=True)
    assert all(len(b) == 1 for b in got if any(units[i].size == 5_000_000 for i in b))
    assert len(got) >= 2 * 8


def test_sharer_shares_equal_fields_but_never_mixes_types() -> None:
    from hanglens.ingest import Sharer

    def e(**fields: Any) -> Event:
        return Event(kind="k", ref=SourceRef("a.log", 1), text="".join(["same", " text"]), parser="p", fields=fields)

    evs = [e(n=1), e(n=1), e(n=True), e(n=1.0), e(x=0.0), e(x=-0.0), e(v=[1]), e(v=[1]), e(s="abc"), e(s="abc")]
    before = [dict(x.fields) for x in evs]
    Sharer().share(evs)
    assert [dict(x.fields) for x in evs] == before
    assert [type(x.fields["n"]) for x in evs[:4]] == [int, int, bool, float]
    assert evs[0].fields is evs[1].fields and evs[1].fields is not evs[2].fields
    assert evs[2].fields is not evs[3].fields and evs[0].fields is not evs[3].fields
    assert str(evs[4].fields["x"]) == "0.0" and str(evs[5].fields["x"]) == "-0.0"
    assert evs[6].fields is not evs[7].fields  # list values: not shared
    assert evs[8].fields is evs[9].fields and evs[0].text is evs[9].text


def test_compact_sharer_keeps_fields_equal_and_read_only() -> None:
    import pickle

    from hanglens.ingest import Sharer
    from hanglens.model import Fields

    def e(**fields: Any) -> Event:
        return Event(kind="k", ref=SourceRef("a.log", 1), text="t", parser="p", fields=fields)

    evs = [e(n=1, s="x"), e(n=1, s="x"), e(n=True), e(v=[1, 2]), e()]
    before = [dict(x.fields) for x in evs]
    Sharer(compact=True).share(evs)
    assert all(type(x.fields) is Fields for x in evs)
    assert [dict(x.fields) for x in evs] == before and [x.fields for x in evs] == before
    assert evs[0].fields is evs[1].fields and evs[0].fields is not evs[2].fields
    assert type(evs[2].get("n")) is bool and evs[0].get("missing", 7) == 7 and evs[3].get("v") == [1, 2]
    assert list(evs[0].fields) == ["n", "s"] and "s" in evs[0].fields and len(evs[4].fields) == 0
    assert pickle.loads(pickle.dumps(evs)) == evs
    with pytest.raises(TypeError):
        evs[0].fields["n"] = 2  # type: ignore[index]


def test_worker_results_travel_as_columns_and_come_back_equal(tmp_path: Path) -> None:
    import pickle

    from hanglens.ingest import _FileOut, _read_unit
    from hanglens.ingest.sources import discover
    from hanglens.parsers import PARSERS

    log = tmp_path / "rank3.log"
    log.write_text(
        "\n" * 299   # (the watchdog line is line 300: an int object of its own, not one of Python's cached ones)
        + "[rank3]:[E1201 10:11:12.123456789 ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
        "Timeout at NCCL work: 41, last enqueued NCCL work: 41, last completed NCCL work: 40.\n"   # (2 events)
        "step 7 loss 0.25\n"
    )
    units, _ = discover([str(tmp_path)])
    got = [x for u in units for x in _read_unit(u, tuple(PARSERS))]
    outs = [x for x in got if isinstance(x, _FileOut)]
    assert outs and sum(len(o.events) for o in outs) >= 2
    back = pickle.loads(pickle.dumps(got))
    for a, b in zip(outs, back, strict=True):
        assert b.events == a.events and (b.display, b.lines, b.notes, b.dated) == (a.display, a.lines, a.notes, a.dated)
    # The events keep their line as path and number (no SourceRef object each); a line's events share one
    # int object for its number after the trip, as they did before it.
    at_300 = [e for e in back[0].events if e.line == 300]
    assert len(at_300) >= 2 and all(e.line is at_300[0].line for e in at_300)
    timed = [e for e in at_300 if e.time is not None]
    assert len(timed) >= 2 and all(e.time is timed[0].time for e in timed)   # one float for the line's time
    assert all(e.ref == type(e.ref)(e.path, e.line) for e in back[0].events)


def test_job_sharer_shares_across_batches_but_never_mixes_types() -> None:
    import pickle

    from hanglens.ingest import JobSharer, Sharer

    def batch() -> list[Event]:
        # (each batch as a worker's pickle gives it: its own copies of every text, int and mapping)
        evs = [Event(kind="k", ref=SourceRef("a.log", 1), text="the same line", parser="p", rank=4099,
                     fields={"n": n, "s": "abc", "big": 70000}) for n in (1, True)]
        evs.append(Event(kind="k", ref=SourceRef("a.log", 2), text="t", parser="p", fields={"x": -0.0}))
        Sharer(compact=True).share(evs)
        return pickle.loads(pickle.dumps(evs))

    one, two = batch(), batch()
    assert one[0].fields is not two[0].fields and one[0].text is not two[0].text
    job = JobSharer()
    job.share(one)
    job.share(two)
    assert two[0].fields is one[0].fields and two[0].text is one[0].text and two[0].rank is one[0].rank
    assert two[0].get("big") is one[0].get("big")
    # True == 1 and 0.0 == -0.0: mappings holding a bool or a float are left as they are
    assert two[1].fields is not one[1].fields and type(two[1].get("n")) is bool
    assert str(two[2].get("x")) == "-0.0"
    assert [dict(e.fields) for e in two] == [dict(e.fields) for e in one]


def test_pool_starts_while_files_are_found(tmp_path: Path, mark: tuple[type[Parser], ...],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool forked once enough files are found (before the whole list is made) reads as the serial path."""
    import hanglens.ingest as ingest

    for r in range(6):
        (tmp_path / f"rank{r}.log").write_bytes(LOG * 3)
    monkeypatch.setattr(ingest, "PARALLEL_MIN_BYTES", 1)
    started: list[int] = []
    real_start = ingest._Pool.start

    def start(self: ingest._Pool, workers: int) -> None:
        started.append(self.files)
        real_start(self, workers)

    monkeypatch.setattr(ingest._Pool, "start", start)
    one = read_inputs([tmp_path], jobs=1, parsers=mark)
    assert started == []
    many = read_inputs([tmp_path], jobs=2, parsers=mark)
    assert started == [2]   # at the second file of six, not after the sixth
    assert one.events == many.events and one.files == many.files
