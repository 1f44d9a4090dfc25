"""The line layer: CR splits, progress-bar glue, hard-wrap rejoin, per-file rank attribution."""

from __future__ import annotations

import io
from pathlib import Path

from hanglens.ingest.reader import FileResult, Reader, compile_triggers
from hanglens.model import Origin
from hanglens.parsers.base import Parser


def read(data: bytes, parsers: tuple[type[Parser], ...]) -> FileResult:
    return Reader("f.log", Origin(), parsers).read(io.BytesIO(data))


def test_cr_and_progress_bar_glue(mark: tuple[type[Parser], ...]) -> None:
    data = b"Epoch 1: 10%|#   | 1/10\rEpoch 1: 20%|##  | 2/10 [00:01, 1.2it/s][rank3]:MARK a=1\nnext\n"
    res = read(data, mark)
    assert [(e.ref.line, e.rank, e.text) for e in res.events] == [(1, 3, "MARK a=1")]
    assert res.lines == 2


def test_hard_wrapped_paste_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    width = 80
    msg = "[rank6]:[E612 01:18:36.902741158 ProcessGroupNCCL.cpp:1743] [Rank 6] " + "word " * 40 + "MARK end"
    rows = [msg[i:i + width] for i in range(0, len(msg), width)]
    text = "\n".join(r.ljust(width) if i == len(rows) - 1 else r for i, r in enumerate(rows))
    text = "\n".join([text] * 3) + "\n"
    res = read(text.encode(), mark)
    assert len(res.events) == 3
    assert all(e.text.endswith("MARK end") and e.rank == 6 for e in res.events)
    assert any("rejoined" in n for n in res.notes)


def test_byte_counted_wrap_over_colour_codes_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    """`fold -w N` over a log saved with its colour codes cuts at N bytes, escape sequences included: a
    coloured line's first piece is N long with its codes and shorter without them."""
    width = 100
    out = []
    for r in range(4):
        msg = f"\x1b[31m[rank{r}]:[E1023 04:01:52.118273645 ProcessGroupNCCL.cpp:1375] [Rank {r}] " \
            + "word " * 30 + "MARK end\x1b[0m"
        out += [msg[i:i + width] for i in range(0, len(msg), width)]
    res = read(("\n".join(out) + "\n").encode(), mark)
    assert [e.rank for e in res.events if e.text.endswith("MARK end")] == [0, 1, 2, 3]
    assert any("rejoined" in n for n in res.notes)


def test_hard_wrapped_paste_under_a_longer_sentence_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    """An issue paste: the user's sentence above the log is longer than the terminal the log came from."""
    width = 90
    intro = "Here is what the pod printed before it died; the terminal cut the lines, sorry about that, " * 2
    msg = "[rank3]:[E817 04:55:12.332091781 ProcessGroupNCCL.cpp:1723] [Rank 3] " + "word " * 40 + "MARK end"
    rows = [msg[i:i + width] for i in range(0, len(msg), width)]
    text = intro.strip() + "\n\n" + "\n".join(["\n".join(rows)] * 3) + "\n"
    res = read(text.encode(), mark)
    assert [e.rank for e in res.events if e.text.endswith("MARK end")] == [3, 3, 3]
    assert any("rejoined" in n for n in res.notes)
    # Many lines longer than the common length are not prose around a paste: no wrap.
    long_records = [f"[rank{i}]:[E817 04:55:1{i}.332091781 ProcessGroupNCCL.cpp:1723] [Rank {i}] "
                    + "y" * (60 + 7 * i) for i in range(6)]
    many = "\n".join(long_records + rows) + "\n"
    assert not any("rejoined" in n for n in read(many.encode(), mark).notes)
    # Ranks' records of one template that share a length behind a timestamped shipper prefix (CloudWatch,
    # log-formats.md section 9.3 / CRI) with two longer records above them: records, not pieces of one line.
    shipped = [f"  | 2026-02-11T07:1{i}:0{i}.41{i}Z | [rank{i}]:[E211 07:1{i}:0{i}.41{i}000000 "
               f"ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {i}] Timeout at NCCL work: 7012, last "
               f"enqueued NCCL work: 7012." for i in range(7)]
    above = ["  | 2026-02-11T07:09:00.000Z | " + "z" * 150, "  | 2026-02-11T07:09:01.000Z | " + "q" * 200]
    assert len({len(x) for x in shipped}) == 1
    res = read(("\n".join(above + shipped) + "\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes)
    # A flattened failure table behind the same envelope, quoted in an issue (`> ` before every line): the
    # envelope after the quote is each row's own, so rows of one length are rows, not pieces of one line.
    rows = [f"  | 2026-03-02T11:40:12.55{i}Z | [{i}]: time : 2026-03-02_11:40:12 host : node-b rank : {i} "
            f"(local_rank: {i}) exitcode : -6 (pid: 44{i}1) error_file: <N/A> traceback : Signal 6 (SIGABRT) "
            f"received by PID 44{i}1" for i in range(2, 8)]
    head = ["  | 2026-03-02T11:40:05.101Z | [rank3]:[E ProcessGroupNCCL.cpp:577] [Rank 3] " + "s" * 160,
            "  | 2026-03-02T11:40:05.101Z | [rank3]:[E ProcessGroupNCCL.cpp:583] [Rank 3] " + "t" * 60]
    tail = ["  | 2026-03-02T11:40:12.559Z | " + "-" * 52, "  | 2026-03-02T11:40:12.559Z | Root Cause"]
    assert len({len(x) for x in rows}) == 1
    quoted = "\n".join("> " + x for x in head + rows + tail) + "\n"
    res = read(quoted.encode(), mark)
    assert not any("rejoined" in n for n in res.notes)


def _word_wrap(text: str, width: int) -> list[str]:
    """`text` broken at the last space before `width`, the space left at the end of each piece (what a
    word-wrapping terminal or an issue page shows)."""
    rows, cur = [], ""
    for word in text.split(" "):
        if cur and len(cur) + len(word) + 1 > width:
            rows.append(cur)
            cur = ""
        cur += word + " "
    return [*rows, cur.rstrip()]


def test_word_wrapped_paste_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    """Broken at spaces, the pieces are of different lengths: none is at the width, all are close to it."""
    width = 96
    intro = ("Output of the pod, the terminal wrapped every line, sorry; training had stopped at step 900 "
             "before this:")
    records = []
    for r in range(4):
        msg = (f"[rank{r}]:[E817 04:55:12.33{r}000000 ProcessGroupNCCL.cpp:1723] [PG ID 0 PG GUID "
               f"0(default_pg) Rank {r}] " + " ".join("w" + "x" * (k * 7 % 13) for k in range(60))
               + " MARK end")
        records.extend(_word_wrap(msg, width))
    assert len({len(x) for x in records}) > 3 and max(len(x) for x in records) <= width
    res = read((intro + "\n\n" + "\n".join(records) + "\n").encode(), mark)
    assert sorted(e.rank for e in res.events if e.text.endswith("MARK end")) == [0, 1, 2, 3]
    assert any("word-wrapped" in n for n in res.notes)


def test_word_wrap_that_dropped_its_spaces_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    """An editor's reflow (`textwrap.wrap`) drops the space it broke at: the pieces are rejoined with one,
    a short piece whose next word was too long to fit included (probe55's `fold=W` excerpts)."""
    import textwrap

    width = 96
    words = ["TensorShape=[48,", "40],", "TensorDtypes=Float,", "TensorDeviceTypes=TensorOptions(dtype=float",
             "(default),", "device=cpu,", "layout=Strided", "requires_grad=false", "pinned_memory=false",
             "memory_format=(nullopt))),", "but", "Rank", "is", "running", "collective:", "Op", "type:"]
    records = []
    for r in range(4):
        msg = (f"[rank{r}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {r} is "
               f"running collective: CollectiveFingerPrint(SequenceNumber=4{r}, OpType=ALLREDUCE, "
               + " ".join(words[(k * 5 + r) % len(words)] for k in range(14)) + " MARK end")
        records.extend(textwrap.wrap(msg, width))
    records += textwrap.wrap("[rank3]: RuntimeError: /" + "p" * 90 + " Timed out MARK tail", width)
    assert not any(x.endswith(" ") for x in records)
    res = read(("\n".join(records) + "\n").encode(), mark)
    ends = sorted(e.rank for e in res.events if e.text.endswith("MARK end"))
    assert ends == [0, 1, 2, 3]
    assert any(e.text.endswith("Timed out MARK tail") and "RuntimeError: /ppp" in e.text for e in res.events)
    assert any("word-wrapped" in n for n in res.notes)


def test_rejoined_record_cuts_a_tee_tag_glued_after_a_bar(mark: tuple[type[Parser], ...]) -> None:
    """A rejoined record is fed as a line is: a `[default1]:` tag glued after rank 0's tqdm bar starts rank
    1's own line, also when the paste was reflowed (probe55's `vtails fold=110` excerpt)."""
    import textwrap

    width = 110
    words = ["Connection", "closed", "by", "peer", "[127.0.0.1]:12686.", "This", "is", "typically",
             "caused", "a", "remote", "worker", "crashing.", "Check", "the", "logs", "before", "reporting",
             "an", "error."]
    bar = "[default0]: 37%|#######             | 3/8 [00:00<00:00, 5.26it/s]"
    lines = textwrap.wrap(bar + "[default1]:terminate called after throwing an instance of "
                          "'gloo::EnforceNotMet' MARK glued=1", width)
    for r in (0, 2, 3, 4):
        said = " ".join(words[(k * 3 + r) % len(words)] for k in range(22))
        lines += textwrap.wrap(f"[default{r}]:[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/"
                               f"gloo/gloo/transport/tcp/pair.cc:553] {said} MARK r={r}", width)
    res = read(("\n".join(lines) + "\n").encode(), mark)
    assert any("word-wrapped" in n for n in res.notes)
    # (cut before the tag: the piece is the local rank 1's, not rank 0's; the tee's local rank becomes a
    # global rank where the files are attributed)
    glued = [e for e in res.events if "glued=1" in e.text]
    assert [(e.rank, e.text.startswith("terminate called")) for e in glued] == [(None, True)]
    assert sorted(e.rank for e in res.events if "MARK r=" in e.text) == [0, 2, 3, 4]


def test_records_of_one_template_after_long_lines_are_no_dropped_space_wrap() -> None:
    """Long lines each followed by a record of a template the reader does not list (a failure table's
    `[2]:`, a logger's envelope) are complete records, not pieces: their heads repeat."""
    from hanglens.ingest.reader import _dropped_space_wrap_width

    rows = []
    for i in range(8):
        rows += [f"[{i}]:", f"  rank      : {i} (local_rank: {i})",
                 "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]
    assert _dropped_space_wrap_width([*rows, ""]) is None
    logged = []
    for i in range(6):
        logged += [f"[WARNING|logging.py:314] 2024-03-09 04:00:11,48{i} >> Process rank: {i}, device: "
                   "cuda:0, n_gpu: 1, distributed training: True, 16-bits training: True"]
    assert _dropped_space_wrap_width([*logged, ""]) is None


def test_lines_that_end_in_a_space_are_not_a_word_wrap(mark: tuple[type[Parser], ...]) -> None:
    """A log whose short lines end in a space, or whose long records are each complete, is read as it is."""
    records = [f"[rank{r}]:[W817 04:55:1{r}.332091781 ProcessGroupNCCL.cpp:1723] [Rank {r}] MARK x={r} "
               + "y" * 30 for r in range(6)]
    short = [f"epoch {i} done " for i in range(6)]
    res = read(("\n".join(records + short) + "\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes) and res.lines == 12
    frames = [f"  File \"/home/user/job/train.py\", line 1{i}2, in step_function_with_a_long_name_{'x' * i}"
              "\n    loss = model(batch)" for i in range(6)]
    res = read(("\n".join(frames) + "\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes)


def test_combined_console_does_not_credit_one_rank_with_all(mark: tuple[type[Parser], ...]) -> None:
    data = b"[default0]:[rank0]:hello\n[default1]:MARK x=1\n[default0]:MARK y=1\nMARK z=1\n"
    res = read(data, mark)
    by_text = {e.text: e.rank for e in res.events}
    # Untagged lines of a tee'd console are written by the torchrun agent, not by a worker.
    assert by_text == {"MARK x=1": None, "MARK y=1": 0, "MARK z=1": None}


def test_trigger_trie_finds_every_literal() -> None:
    class P(Parser):
        triggers = ("ab", "abc", "b[x", "NCCL WARN", "N")

    rx = compile_triggers([P])
    assert [m.group() for m in rx.finditer(b"xxabcd b[x NCCL WARN")] == [b"ab", b"b[x", b"N", b"N"]
    assert rx.search(b"nothing here") is None


def test_equal_length_stack_frames_are_not_a_hard_wrap(mark: tuple[type[Parser], ...]) -> None:
    frames = [f"frame #{i}: <unknown function> + 0x{i:06x} (0x7f00{i:08x} in /opt/lib/libtorch.so)"
              for i in range(6)]
    res = read(("MARK x=1\n" + "\n".join(frames) + "\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes) and res.lines == 7


def test_equal_width_python_logging_records_are_not_a_hard_wrap(mark: tuple[type[Parser], ...]) -> None:
    """torch 1.9-2.0's default logging format `<LEVEL>:<logger>:<message>` (log-formats.md section 3.4):
    every rank's `Added key ... for rank: <r>` is a record of its own, of the same width as the others."""
    recs = [f"INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for "
            f"rank: {r} MARK r={r}" for r in (0, 3, 1, 2, 5, 4)]
    res = read(("\n".join(recs) + "\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes)
    assert [e.ref.line for e in res.events] == [1, 2, 3, 4, 5, 6]


def test_rules_of_a_launchers_messages_are_not_a_hard_wrap(mark: tuple[type[Parser], ...]) -> None:
    """Open MPI's help messages sit between 74-dash rules: a console of them alone is read line by line."""
    rule = "-" * 74
    text = "\n".join([rule, "Primary job  terminated normally, but 1 process returned",
                      "a non-zero exit code. Per user-direction, the job has been aborted.", rule, rule,
                      "mpirun noticed that process rank 2 with PID 48211 on node trainer-a exited "
                      "on signal 9 (Killed). MARK x=1", rule]) + "\n"
    res = read(text.encode(), mark)
    assert not any("rejoined" in n for n in res.notes) and [e.ref.line for e in res.events] == [6]


def test_two_ranks_glued_on_one_line_are_split() -> None:
    """Two ranks printing at once: `...loss 0.29[rank 0] step 2` is two lines of two ranks."""
    from hanglens.parsers.progress import ProgressParser

    data = b"[rank 1] step 1 loss 0.2\n[rank 1] step 2 loss 0.2942[rank 0] step 2 loss 0.2398\n"
    res = read(data, (ProgressParser,))
    assert sorted((e.rank, e.get("step")) for e in res.events if e.ref.line == 2) == [(0, 2), (1, 2)]
    doubled = read(b"[rank0]:[rank0]: step 3 loss 0.1\n", (ProgressParser,))
    assert [(e.rank, e.get("step")) for e in doubled.events] == [(0, 3)]


def test_a_stamped_rank_line_glued_after_another_rank_s_line_is_split() -> None:
    """Two ranks' `print(f"{stamp} [rank N] ...", flush=True)` on one pipe: print writes the text and its
    newline apart, so the second record lands right after the first's last digit (probe38, a real two-node
    run under `srun -l`): `... loss 3.93812026-12-05 06:13:00,478 [rank 2] step 1/8`. The stamp and tag
    start the second rank's own line; a stamp at a line's start is not cut."""
    from hanglens.parsers.progress import ProgressParser

    data = (b"2027-03-01 09:10:11,100 [rank 1] step 1/8 loss 3.9312"
            b"2027-03-01 09:10:11,102 [rank 0] step 1/8 loss 3.9312\n")
    res = read(data, (ProgressParser,))
    assert sorted((e.rank, e.get("step")) for e in res.events) == [(0, 1), (1, 1)]
    one = read(b"2027-03-01 09:10:11,100 [rank 3] step 2/8 loss 3.9\n", (ProgressParser,))
    assert [(e.rank, e.get("step")) for e in one.events] == [(3, 2)]


def test_a_record_of_a_learned_rank_field_glued_after_another_writer_s_text_is_split() -> None:
    """A script's own header (`<time> <level> [<host>:<pid>] [r<rank>/<world>] key=value ...`) under
    `srun -l`: two ranks of one node print at once and the second record lands right after the first's
    last digit (probe43, a real 24-rank run: print writes the text and its newline apart). The second
    record is the
    other rank's own line behind the same task label; a line with one record, and a field named again in
    a message, are not cut."""
    from hanglens.parsers.progress import ProgressParser

    rec = "1: 08:14:22.{ms:03d} INFO  [node-x7:44{r:02d}] [r{r:02d}/12] step={s} loss=2.{r:02d}1 dt_ms={dt}"
    lines = [rec.format(ms=10 * r + s, r=r, s=s, dt=7 * r ** s)
             for s in range(2) for r in (6, 9, 7, 11, 8, 10)]
    glued = rec.format(ms=500, r=9, s=2, dt=166) + rec.format(ms=501, r=6, s=2, dt=92)[3:]
    lines += [glued, rec.format(ms=502, r=7, s=2, dt=5) + " peer=[r03/12]"]
    res = read(("\n".join(lines) + "\n").encode(), (ProgressParser,))
    step2 = sorted((e.rank, e.get("step")) for e in res.events if e.get("step") == 2)
    assert step2 == [(6, 2), (7, 2), (9, 2)]


def test_a_c10d_envelope_glued_mid_line_starts_that_rank_s_line() -> None:
    """Two ranks' watchdogs writing one terminal at once: the second `[rankN]:[E...]` line lands inside the
    first (log-formats.md section 9.1); it is read as its own line of its own rank, and an outer prefix
    such as `[default1]:[rank5]:` is not cut."""
    from hanglens.parsers.c10d import C10dParser

    wd = ("[rank{r}]:[E527 10:41:07.11833740{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
          "collective operation timeout: WorkNCCL(SeqNum=20871, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
          "Timeout(ms)=600000) ran for 600091 milliseconds before timing out.")
    a, b = wd.format(r=1), wd.format(r=2)
    data = (a[:150] + b + "\n" + a[150:] + "\n").encode()
    res = read(data, (C10dParser,))
    got = sorted((e.rank, e.get("op"), e.get("seq")) for e in res.events if e.kind == "hang_detected")
    assert got == [(1, None, 20871), (2, "ALLREDUCE", 20871)]
    tee = read(b"[default1]:" + wd.format(r=5).encode() + b"\n", (C10dParser,))
    assert [(e.rank, e.get("op")) for e in tee.events if e.kind == "hang_detected"] == [(5, "ALLREDUCE")]


def test_text_glued_to_a_tqdm_bar_is_its_own_line_and_the_bar_keeps_no_borrowed_rank() -> None:
    """tqdm redraws with `\\r` and no newline: another process's line lands on the bar's line."""
    from hanglens.parsers.progress import ProgressParser
    from hanglens.parsers.store import StoreParser

    data = ("Sorting shards:  64%|██████▍   | 6400/10000 [14:48<08:20,  7.20it/s][rank5]:[W0303 02:11:40."
            "501993221 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=41, addr=[10.1.0.8]:40112, "
            "remote=[10.1.0.2]:29555) timed out after 900000ms\n").encode()
    res = read(data, (ProgressParser, StoreParser))
    by_kind = {e.kind: e for e in res.events}
    assert by_kind["progress"].rank is None  # not rank 5's: rank 5 was waiting, not sorting
    assert by_kind["progress"].get("elapsed_s") == 888 and by_kind["progress"].get("remaining_s") == 500
    assert by_kind["hang_detected"].rank == 5 and by_kind["hang_detected"].get("timeout_ms") == 900000
    from hanglens.parsers import PARSERS

    more = (b"[rank5]: Traceback (most recent call last):\n"
            b"[rank5]:   File \"/srv/app/run.py\", line 77, in <module>\n")
    every = read(data + more, tuple(PARSERS))
    assert [e.rank for e in every.events if e.kind == "progress"] == [None]
    assert {e.rank for e in every.events if e.kind != "progress" and e.ref.line > 1} == {5}
    tb = read(b"Sorting shards:  64%|######4   | 6400/10000 [14:48<08:20,  7.20it/s]Traceback (most recent "
              b"call last):\n", (ProgressParser,))
    assert [e.get("step") for e in tb.events] == [6400]


def test_split_glued_cuts_only_after_a_bar_followed_by_text() -> None:
    from hanglens.ingest.reader import split_glued

    assert split_glued("x: 5%|#  | 5/100 [00:02<00:38, 2.50it/s]NEXT") == [
        "x: 5%|#  | 5/100 [00:02<00:38, 2.50it/s]", "NEXT"]
    assert split_glued("Epoch 2: 120it [1:05:09, 3.1s/it][rank0]:X") == [
        "Epoch 2: 120it [1:05:09, 3.1s/it]", "[rank0]:X"]
    for whole in ("x: 5%|#  | 5/100 [00:02<00:38, 2.50it/s]", "x: 5%|#  | 5/100 [00:02<00:38, 2.50it/s] \n",
                  'File "a.py", line 3, in <module>', "[12:30<x] not a bar", "a" * 5000 + "<" + "[" * 5000):
        assert split_glued(whole) == [whole]


def test_a_tee_tag_glued_after_another_worker_s_text_starts_that_worker_s_line() -> None:
    """`torchrun --tee`: a worker's `\r` progress line ends without a newline, so the next worker's tagged
    line lands on it (`[default1]:... 0.2991[default3]:step 2 ...`); each part is read as its own writer's."""
    from hanglens.parsers.progress import ProgressParser

    data = (b"[default1]:step 2 loss 0.2991[default3]:step 2 loss 0.1241\n"
            b"node-02: [default0]:step 4 loss 0.5[default2]:step 3 loss 0.7\n")
    res = read(data, (ProgressParser,))
    got = sorted((e.ref.line, e.local_rank, e.get("step")) for e in res.events if e.ref.line == 1)
    assert got == [(1, 1, 2), (1, 3, 2)]
    # behind a host prefix too (one line is too few to call it pdsh: the two parts are read all the same)
    assert sorted(e.get("step") for e in res.events if e.ref.line == 2) == [3, 4]


def test_split_tee_cuts_only_glued_launcher_tags() -> None:
    from hanglens.ingest.reader import split_tee

    assert split_tee("[default1]:a 0.1[default3]:b") == ["[default1]:a 0.1", "[default3]:b"]
    assert split_tee("h1: [default1]:a[default3]:b") == ["h1: [default1]:a", "h1: [default3]:b"]
    for whole in ("[default0]:[rank0]: x", "[default0]: d = {'[k1]': 2}", "[default0]:see [worker2]: later",
                  "no tag here x[default2]:y", "text: a[default1]:b[default2]:c" * 0 + "plain"):
        assert split_tee(whole) == [whole]


def test_a_file_of_bar_redraws_only_is_not_a_hard_wrapped_paste() -> None:
    """A worker's stderr.log that holds only tqdm redraws (`\\r`, no newline) keeps its last report."""
    from hanglens.parsers.progress import ProgressParser

    redraw = b"\rpacking: %3d%%|#####     | %d/30 [00:%02d<00:%02d,  1.00it/s]"
    data = b"".join(redraw % (n * 100 // 30, n, n, 30 - n) for n in range(12))
    res = read(data, (ProgressParser,))
    assert not any("rejoined" in n for n in res.notes)
    assert [e.get("step") for e in res.events] == [0, 11] and res.events[-1].get("remaining_s") == 19


def test_a_console_of_several_workers_is_not_credited_to_its_one_prefixed_rank(tmp_path: Path) -> None:
    # torchrun 2.13 plain console (written here from a real run's shape): the agent's banner says it started
    # several workers; rank 0's traceback carries `[rank0]:`, rank 1's C++ abort does not.
    from hanglens import api

    head = "W1202 08:37:30.550000 24159 torch/distributed/run.py:874] "
    stars = head + "*" * 41 + "\n"
    banner = (head + "\n" + stars + head + "Setting OMP_NUM_THREADS environment variable for each process "
              "to be 1 in default, to avoid your system being overloaded, please further tune the variable "
              "for optimal performance in your application as needed. \n" + stars)
    data = (banner + "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
            "  what():  [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
            "op.preamble.length <= op.nbytes. 364 vs 4. Received data size doesn't match expected size. "
            "Is there a distributed collective mismatch in your code?\n"
            "[rank0]: Traceback (most recent call last):\n"
            "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
            "[127.0.0.1]:24809: Connection reset by peer.\n")
    (tmp_path / "console.log").write_text(data)
    events = api.read([tmp_path]).events
    assert any(e.kind == "launch_config" for e in events)
    aborts = [e for e in events if e.kind == "process_teardown"]  # (terminate called ... what(): ...)
    assert aborts and all(e.rank is None for e in aborts)
    assert any(e.rank == 0 and "Connection reset" in e.text for e in events)


def _table(*rows: tuple[int, int]) -> str:
    """A torch 2.13 ChildFailedError summary of one agent: (rank, exit code) rows, the last the root cause."""
    out = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 40,
           "/home/user/job/train.py FAILED", "-" * 40, "Failures:"]
    for i, (rank, code) in enumerate(rows):
        if i == len(rows) - 1:
            out += ["-" * 40, "Root Cause (first observed failure):", "[0]:"]
        else:
            out.append(f"[{i + 1}]:")
        sig = {-15: "SIGTERM", -6: "SIGABRT"}.get(code)
        out += ["  time      : 2026-05-11_10:02:07", "  host      : node-2",
                f"  rank      : {rank} (local_rank: {rank})",
                f"  exitcode  : {code} (pid: {4100 + rank})" + (f"  ({sig})" if sig else ""),
                "  error_file: <N/A>",
                f"  traceback : Signal {-code} ({sig}) received by PID {4100 + rank}" if sig else
                "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]
    return "\n".join([*out, "=" * 40]) + "\n"


def test_a_console_whose_failure_table_lists_another_worker_is_not_its_prefixed_ranks(tmp_path: Path) -> None:
    # No start banner (torchrun prints none when OMP_NUM_THREADS is set), but the agent's table lists two
    # workers: the unprefixed abort and prints are not rank 1's although only rank 1 printed `[rank1]:`.
    from hanglens import api

    data = ("step 2 loss 0.31\n"
            "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
            "  what():  [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
            "op.preamble.length <= op.nbytes. 2048 vs 4. Received data size doesn't match expected size. "
            "Is there a distributed collective mismatch in your code?\n"
            "[rank1]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
            "[127.0.0.1]:3310: Connection reset by peer.\n" + _table((1, -15), (0, -6)))
    (tmp_path / "console.log").write_text(data)
    events = api.read([tmp_path]).events
    aborts = [e for e in events if e.kind == "process_teardown"]
    assert aborts and all(e.rank is None for e in aborts)
    assert all(e.rank is None for e in events if e.kind == "progress")
    assert any(e.rank == 1 and "Connection reset" in e.text for e in events)


def test_a_console_whose_failure_table_lists_only_its_prefixed_rank_stays_that_ranks(tmp_path: Path) -> None:
    from hanglens import api

    data = ("step 2 loss 0.31\n"
            "[rank1]: ValueError: bad sample\n" + _table((1, 1)))
    (tmp_path / "console.log").write_text(data)
    events = api.read([tmp_path]).events
    assert [e.rank for e in events if e.kind == "progress"] == [1]


def test_a_file_named_worker1_whose_own_table_names_rank_6_is_a_node_console(tmp_path: Path) -> None:
    # A node's console saved as `worker1.out` (the second machine); torch 1.x prints no `[rankN]:` prefix on
    # the traceback and the agent's table says rank 6 failed: the 1 in the name is not a rank.
    from hanglens import api

    data = ("step 40 loss 0.27\nTraceback (most recent call last):\n"
            '  File "/home/user/job/train.py", line 12, in <module>\n    main()\nValueError: bad sample\n'
            + _table((6, 1)))
    (tmp_path / "worker1.out").write_text(data)
    events = api.read([tmp_path]).events
    assert not any(e.rank == 1 for e in events)
    assert [e.get("failed_rank") for e in events if e.kind == "child_failed"] == [6]


_AGENT_SIGTERM = (
    "W0602 08:41:10.978000 4410 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, "
    "shutting down workers\n"
    "Traceback (most recent call last):\n"
    '  File "/home/user/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 1028, in main\n'
    "    run(args)\n"
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4410 got signal: 15\n")


def test_a_pod_console_of_several_workers_gives_the_agents_lines_no_rank(tmp_path: Path) -> None:
    # A pod's console saved as `worker-0.log`: torchrun started two workers there (its OMP_NUM_THREADS
    # banner, two ranks' DeepSpeed `[Rank N]` lines); the agent's SignalException is no worker's, whatever
    # the name says.
    from hanglens import api

    data = ("Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
            "system being overloaded, please further tune the variable for optimal performance in your "
            "application as needed.\n"
            "[2026-06-02 08:40:02,110] [INFO] [engine.py:88:__init__] [Rank 1] partition_size=1608\n"
            "[2026-06-02 08:40:02,114] [INFO] [engine.py:88:__init__] [Rank 0] partition_size=1608\n"
            "[2026-06-02 08:40:05,401] [INFO] [engine.py:310:step] [Rank 0] step=10, skipped=0\n"
            + _AGENT_SIGTERM)
    (tmp_path / "worker-0.log").write_text(data)
    events = api.read([tmp_path]).events
    assert [e.rank for e in events if e.kind == "exception"] == [None]
    assert [e.rank for e in events if e.kind == "job_stopped"] == [None]
    assert {e.rank for e in events if e.kind == "world_info" or "partition_size" in e.text} <= {0, 1}


def test_a_one_worker_console_named_after_its_rank_keeps_the_agents_lines(tmp_path: Path) -> None:
    from hanglens import api

    (tmp_path / "worker-3.log").write_text("step 10 loss 0.31\n" + _AGENT_SIGTERM)
    events = api.read([tmp_path]).events
    assert [e.rank for e in events if e.kind == "exception"] == [3]


def test_a_file_named_rank6_whose_table_names_rank_6_keeps_its_rank(tmp_path: Path) -> None:
    from hanglens import api

    data = "step 40 loss 0.27\nValueError: bad sample\n" + _table((6, 1))
    (tmp_path / "rank6.log").write_text(data)
    events = api.read([tmp_path]).events
    assert [e.rank for e in events if e.kind == "progress"] == [6]


def test_two_open_mpi_streams_are_not_credited_to_the_one_rank_envelope(tmp_path: Path) -> None:
    """Open MPI tags two processes, one printed `[rank0]:`: the other tag's traceback is its own rank's."""
    from hanglens import api

    a, b = "[prterun-h-1@1,0][node-a:41]<stderr>: ", "[prterun-h-1@1,1][node-b:52]<stderr>: "
    data = "".join(f"{p}{t}\n" for p, t in [
        (a, "epoch 3"), (b, "epoch 3"), (b, "Traceback (most recent call last):"),
        (b, '  File "/home/user/t.py", line 9, in <module>'), (b, "    main()"), (b, "ValueError: bad loss"),
        (a, "[rank0]:[E1130 11:02:40.551203311 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=90000) ran for 90312 milliseconds before timing out.")])
    (tmp_path / "job.out").write_text(data)
    events = api.read([tmp_path]).events
    assert {e.rank for e in events if e.kind == "exception"} == {1}
    assert {e.rank for e in events if e.kind == "hang_detected"} == {0}


def test_a_ray_tagged_workers_lines_are_not_the_drivers_rank(tmp_path: Path) -> None:
    """`(Worker pid=...)` lines are another process's in the driver's console: the driver's one `[rank0]:`
    does not make the worker's traceback rank 0's (log-formats.md section 9.2)."""
    from hanglens import api

    w = "(VllmWorkerProcess pid=61302) ERROR 11-24 08:01:41 multiproc_worker_utils.py:233] "
    data = "".join(f"{t}\n" for t in [
        "INFO 11-24 08:01:12 config.py:1020] Defaulting to use mp for distributed inference",
        w + "Traceback (most recent call last):",
        w + '  File "/home/user/srv/loader.py", line 40, in load_model', w + "    load(w)",
        w + "KeyError: 'w2'",
        "[rank0]:[E1124 08:11:42.002211876 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=90000) "
        "ran for 90120 milliseconds before timing out."])
    (tmp_path / "serve.log").write_text(data)
    events = api.read([tmp_path]).events
    assert [e.rank for e in events if e.kind == "exception"] == [None]
    assert {e.rank for e in events if e.kind == "hang_detected"} == {0}


def test_equal_length_nccl_warns_of_several_hosts_are_not_a_hard_wrap(mark: tuple[type[Parser], ...]) -> None:
    # NCCL WARN lines carry `<file>:<line>` before `NCCL WARN` (log-formats.md section 4.1); pdsh puts the
    # host first. Five ranks printing one WARN of the same width are five records, not one wrapped line.
    warns = [f"node-{c}: node-{c}:{5100 + i}:{5170 + i} [{i}] init.cc:1010 NCCL WARN MARK k={i}"
             for i, c in enumerate("abcde")]
    res = read(("\n".join(warns) + "\nMARK end=1\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes) and res.lines == 6
    plain = [w.split(": ", 1)[1] for w in warns]
    res = read(("\n".join(plain) + "\nMARK end=1\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes)


def test_hard_wrapped_paste_with_many_short_lines_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    # A 100-column terminal paste where most lines are short prints: under half of the lines sit at the width,
    # every one of them continued on the next line.
    width = 100
    short = [f"step {i} loss 0.{i}" for i in range(3)]
    lines = list(short)
    for r in (1, 2, 3):
        msg = f"[rank{r}]:[E1105 09:44:11.50122900{r} ProcessGroupNCCL.cpp:632] [Rank {r}] " + "word " * 30
        msg += f"MARK end={r}"
        lines += [msg[i:i + width] for i in range(0, len(msg), width)] + short
    res = read(("\n".join(lines) + "\n").encode(), mark)
    got = [(e.rank, e.text.endswith(f"MARK end={e.rank}")) for e in res.events]
    assert got == [(1, True), (2, True), (3, True)]


def test_hard_wrapped_paste_with_few_wrapped_messages_is_rejoined(mark: tuple[type[Parser], ...]) -> None:
    # A 120-column paste of a long log where only two messages among many short prints were long enough
    # to wrap (four cut lines): each cut line goes on mid-word on the next one.
    width = 120
    lines = [f"epoch 1 step {i} loss 0.{i}" for i in range(16)]
    for r in (1, 2):
        msg = f"[rank{r}]:[E1105 09:44:11.50122900{r} ProcessGroupNCCL.cpp:632] [Rank {r}] " + "tensor" * 45
        msg += f" MARK end={r}"
        lines += [msg[i:i + width] for i in range(0, len(msg), width)] + ["validation done"]
    res = read(("\n".join(lines) + "\n").encode(), mark)
    assert any("rejoined" in n for n in res.notes)
    got = [(e.rank, e.text.endswith(f"MARK end={e.rank}")) for e in res.events]
    assert got == [(1, True), (2, True)]


def test_repeated_warnings_with_their_source_lines_are_not_a_hard_wrap(
        mark: tuple[type[Parser], ...]) -> None:
    # Four ranks print one warning of the same (longest) width, each followed by the indented source line
    # Python's warnings module prints: one message repeated, continued by blanks, is not a terminal's cut.
    warn = "/home/user/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: " \
           "MARK a=1 deprecated, pass use_reentrant explicitly"
    lines = [f"step {i}" for i in range(12)]
    for _ in range(4):
        lines += [warn, "  return fn(*args, **kwargs)"]
    res = read(("\n".join(lines) + "\n").encode(), mark)
    assert not any("rejoined" in n for n in res.notes)


def test_torchrun_table_rules_are_not_a_hard_wrap(mark: tuple[type[Parser], ...]) -> None:
    # ChildFailedError rules are 60 characters and each is followed by a line of the table, not a record.
    rule, dash = "=" * 60, "-" * 60
    text = "\n".join(["MARK a=1", rule, "train.py FAILED", dash, "Failures:", "  <NO_OTHER_FAILURES>", dash,
                      "Root Cause (first observed failure):", "[0]:", "  rank      : 3 (local_rank: 3)", rule,
                      "MARK b=1"]) + "\n"
    res = read(text.encode(), mark)
    assert not any("rejoined" in n for n in res.notes) and len(res.events) == 2


def test_fallback_parser_reads_only_lines_no_other_parser_explained() -> None:
    """The catch-all (`fallback`) gets an error line no parser read into an event of that line; a line another
    parser read is explained, unless a progress report is among its events (its number may read as a step)."""
    from hanglens.parsers.catchall import CatchallParser
    from tests.ingest.conftest import MarkParser

    class Fatal(CatchallParser):
        fallback = False

    data = (b"MARK kind=oops Error: out of cheese\n"          # explained by the marking parser
            b"Error: no parser knows this one\n"              # the fallback's
            b"MARK kind=progress step=7 Error: loss is nan\n")  # a progress report: fed on
    got = [(e.line, e.kind) for e in read(data, (CatchallParser, MarkParser)).events]
    assert got == [(1, "oops"), (2, "error_line"), (3, "progress"), (3, "error_line")]
    # Without the flag, every error-looking line is the catch-all's as well (what the flag changes).
    plain = [(e.line, e.kind) for e in read(data, (MarkParser, Fatal)).events]
    assert (1, "error_line") in plain
def test_lines_stating_two_ranks_are_not_the_one_rank_prefix_s() -> None:
    """Written here: a job runner's console (per-line `<job>/worker-<n> | ` prefixes the reader does not know)
    whose launch lines state `RANK=0` and `RANK=3` and whose only `[rankN]:` is rank 0's: worker-3's
    traceback is not rank 0's."""
    from hanglens.parsers import PARSERS
    t = b"2025-02-07T11:20:%s.100Z job/worker-%s | "
    data = (t % (b"03", b"0") + b"starting (RANK=0 WORLD_SIZE=4 MASTER_ADDR=job-worker-0)\n"
            + t % (b"03", b"3") + b"starting (RANK=3 WORLD_SIZE=4 MASTER_ADDR=job-worker-0)\n"
            + t % (b"31", b"3") + b"Traceback (most recent call last):\n"
            + t % (b"31", b"3") + b"  File \"/app/train.py\", line 9, in <module>\n"
            + t % (b"31", b"3") + b"    import fused_kernels\n"
            + t % (b"31", b"3") + b"ImportError: libcudart.so.11.0: cannot open shared object file\n"
            + t % (b"34", b"0") + b"[rank0]: torch.distributed.DistStoreError: Timed out after 601 seconds "
            b"waiting for clients. 3/4 clients joined.\n")
    res = read(data, tuple(PARSERS))
    imp = [e for e in res.events if e.kind == "exception" and e.get("exc_type") == "ImportError"]
    assert imp and all(e.rank is None for e in imp)
    assert imp[0].get("writer_tag") == "job/worker-3 | "


def test_lines_padded_to_the_console_width_are_not_a_hard_wrap() -> None:
    """rich pads each line it prints to the console's width (80 columns when not a terminal) with spaces:
    Lightning's model summary in a worker's stdout.log, then its tqdm bar redraws, keep the last report."""
    from hanglens.parsers.progress import ProgressParser

    summary = ["Trainable params: 21.3 K", "Non-trainable params: 0", "Total params: 21.3 K",
               "Total estimated model params size (MB): 0.085", "Modules in train mode: 9",
               "Modules in eval mode: 0", "Total FLOPs: 0"]
    redraw = "\rEpoch 0: %3d%%|##        | %d/20 [00:01<00:02,  9.50it/s, v_num=3, train_loss=1.25]"
    bar = "".join(redraw % (n * 5, n) for n in range(14))
    data = ("\n".join(s.ljust(80) for s in summary) + "\n" + bar + "\n").encode()
    res = read(data, (ProgressParser,))
    assert not any("rejoined" in n for n in res.notes)
    assert res.events and res.events[-1].get("step") == 13


def test_bars_ending_on_one_physical_line_keep_the_order_they_were_drawn() -> None:
    """Lightning's sanity-check bar, then its epoch bar, redrawn with `\\r` on one physical line and cut
    mid-epoch: the epoch bar's last redraw is the file's last report (the sanity bar's came before it)."""
    from hanglens.parsers.progress import ProgressParser

    sanity = "".join(f"\rSanity Checking DataLoader 0: {n * 50:3d}%|###       | {n}/2 [00:00<00:00, 31.0it/s]"
                     for n in range(3))
    epoch = "".join(f"\rEpoch 0: {n * 100 // 8:3d}%|##        | {n}/8 [00:00<00:00, 40.00it/s, v_num=0, "
                    "train_loss=2.5]" for n in range(6))
    res = read(("setup done\n" + sanity + epoch).encode(), (ProgressParser,))
    assert [(e.get("step"), e.get("total")) for e in res.events][-1] == (5, 8)


def _rich_console(color: bool) -> str:
    """rich's logging handler (`RichHandler(rich_tracebacks=True)`, rich/_log_render.py and rich/traceback.py)
    at 100 columns: each record row is time, level padded to 8, message and the call's `file:line`
    right-aligned to the width; a logged exception's boxed traceback is indented under the message column,
    every row padded to the width. Own values."""
    def c(code: str, s: str) -> str:
        return f"\x1b[{code}m{s}\x1b[0m" if color else s

    def row(t: str, level: str, msg: str, where: str) -> str:
        head = f"{c('2;36', t or ' ' * 10)} {c('34', level.ljust(8))} {msg}"
        return head + " " * (100 - 20 - len(msg) - len(where)) + where

    pad = " " * 20
    title = c("1;31", "Traceback ") + c("1;2;31", "(most recent call last)")
    box = [pad + c("31", "╭" + "─" * 11) + " " + title + " " + c("31", "─" * 12 + "╮") + pad,
           *(pad + f"│ {s}".ljust(59) + "│" + pad for s in (
               "/home/user/proj/fit.py:88 in <module>", "❱ 88 │   run()",
               "/home/user/proj/fit.py:61 in run", "❱ 61 │   batch = fetch(i)")),
           pad + "╰" + "─" * 58 + "╯" + pad,
           pad + c("1;31", "IndexError: ") + "shard 17 has 2048 rows, asked for row 2051".ljust(68)]
    lines = [row(f"[10:00:0{s}]" if r == 0 else "", "INFO", f"[rank {r}] step {s} loss 0.5{r}", "fit.py:74")
             for s in range(1, 4) for r in range(3)]
    lines += [row("[10:00:04]", "ERROR", "[rank 2] fetch failed", "fit.py:90"), *box]
    return "\n".join(lines) + "\n"


def test_rich_handler_rows_at_the_console_width_are_not_a_hard_wrap() -> None:
    from hanglens.ingest.reader import _wrap_width
    sample = _rich_console(color=False).split("\n")
    assert {len(s) for s in sample[:9]} == {100}
    assert _wrap_width(sample) is None


def test_a_coloured_rich_traceback_is_read() -> None:
    # colour codes split the traceback box's title (`Traceback \x1b[0m\x1b[1;2;31m(most recent call last)`)
    from hanglens.parsers.traceback import TracebackParser
    res = read(_rich_console(color=True).encode(), (TracebackParser,))
    exc = [(e.ref.line, e.get("exc_type"), e.get("frame_func")) for e in res.events if e.kind == "exception"]
    assert exc == [(11, "IndexError", "run")]


def test_a_pod_console_of_several_workers_gives_its_name_s_number_to_no_line() -> None:
    """`<job>-worker-1.log`, a pod whose torchrun runs two workers (the OMP_NUM_THREADS banner: run.py prints
    it only for --nproc-per-node above 1), holds ranks 2 and 3: the name's 1 is the pod's index, so the
    agent's store error is nobody's rank, and a line tagged `[rank 3]` keeps its own (probe38, a real
    two-pod run)."""
    from hanglens.parsers.elastic import ElasticParser
    from hanglens.parsers.progress import ProgressParser
    from hanglens.parsers.store import StoreParser

    data = (b"W0301 09:10:11.100000 811 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment "
            b"variable for each process to be 1 in default, to avoid your system being overloaded, please "
            b"further tune the variable for optimal performance in your application as needed.\n"
            b"2027-03-01 09:10:15,100 [rank 3] step 4/9 loss 3.95\n"
            b"[W0301 09:10:17.713000000 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on "
            b"SocketImpl(fd=3, addr=[::ffff:10.1.0.12]:35334, remote=[::ffff:10.1.0.11]:29400): "
            b"Failed to recv, "
            b"got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?\n")
    parsers = (ElasticParser, StoreParser, ProgressParser)
    res = Reader("job-worker-1.log", Origin(rank=1), parsers).read(io.BytesIO(data))
    assert {e.rank for e in res.events if e.kind == "store_error"} == {None}
    assert {e.rank for e in res.events if e.kind == "progress"} == {3}


def test_a_local_rank_of_one_srun_task_takes_no_rank_another_task_paired(tmp_path: Path) -> None:
    """`srun -l` over one torchrun `--tee 3` per node: each task's agent numbers its workers' local ranks
    from 0 (log-formats.md section 9.3), so task 0 pairing `[default0]` with rank 0 says nothing about task
    1's `[default0]` (probe38: node 1's workers died at import before stating their ranks)."""
    from hanglens.ingest import read_inputs

    lines = ["0: [default0]:[rank0]: step 1 loss 0.52", "0: [default1]:[rank1]: step 1 loss 0.52"]
    lines += [f"1: [default{lr}]:{x}" for lr in (0, 1) for x in (
        "Traceback (most recent call last):",
        '  File "/home/user/proj/train.py", line 31, in <module>',
        "    tok = importlib.import_module(backend)",
        "ModuleNotFoundError: No module named 'fasttok'")]
    (tmp_path / "slurm-7731.out").write_text("\n".join(lines) + "\n")
    events = read_inputs([tmp_path]).events
    missing = [e for e in events if e.kind == "exception" and "fasttok" in e.text]
    assert len(missing) == 2 and {e.rank for e in missing} == {None}
