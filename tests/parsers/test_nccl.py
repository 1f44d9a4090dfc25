"""Behaviour tests of the nccl parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from hanglens.parsers.cuda import pg_fields
from hanglens.parsers.nccl import NcclParser, normalize_version

from .harness import events as read_events
from .harness import has

events = partial(read_events, [NcclParser])


@pytest.mark.parametrize(("printed", "version"), [
    ("21.0.3", "2.10.3"), ("21.1.4", "2.11.4"), ("21.2.12", "2.12.12"), ("2.18.5", "2.18.5"),
    ("2.21.5", "2.21.5"),
])
def test_torch_version_spelling_is_normalized(printed: str, version: str) -> None:
    assert normalize_version(printed) == version


@pytest.mark.parametrize(("prefix", "fields"), [
    ("[PG ID 0 PG GUID 0(default_pg) Rank 3]", {"pg": "0", "pg_rank": 3, "stated_rank": 3}),
    ("[PG ID 2 PG GUID 3 Rank 3]", {"pg": "3", "pg_rank": 3}),
    ("[PG ID 12 PG GUID 99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4]", {"pg": "99", "pg_rank": 4}),
    ("[PG 0 (default_pg) Rank 12]", {"pg": "0", "pg_rank": 12, "stated_rank": 12}),
    ("[PG 5 Rank 1]", {"pg": "5", "pg_rank": 1}),
    ("[Rank 2]", {"stated_rank": 2}),
    ("no prefix", {}),
])
def test_pg_prefixes_give_exact_identity(prefix: str, fields: dict[str, Any]) -> None:
    assert pg_fields(prefix + " remote error detected from rank: 1") == fields


def test_warn_glued_after_a_partial_line_is_found() -> None:
    text = ("Epoch 3:  45%|####5     | 450/1000 [01:02<01:15]node07:41233:41410 [3] misc/socket.cc:484 NCCL "
            "WARN socketProgress: Connection closed by remote peer node08<43890>")
    warn = events(text, "nccl_warn")
    assert [(e.get("nccl_host"), e.get("pid"), e.get("src")) for e in warn] == [
        ("node07", 41233, "misc/socket.cc:484")]


def test_error_block_is_attributed_to_its_first_line_and_closed_by_the_next_log_line() -> None:
    text = ("[rank3]: torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, remote process exited or there was a "
            "network error, NCCL version 2.21.5\nncclRemoteError: A call failed possibly due to a network "
            "error or a remote process exiting prematurely.\nLast error:\nsocketProgressOpt: Call to recv "
            "from 10.1.2.3<33759> failed : Connection reset by peer\nnode07:41233:41410 [3] "
            "misc/socket.cc:484 NCCL WARN Cuda failure 'unknown error'\n")
    found = events(text)
    err = [e for e in found if e.kind == "nccl_error"]
    assert len(err) == 1 and err[0].rank == 3 and err[0].ref.line == 1
    assert err[0].get("error_type") == "ncclRemoteError"
    net = [e for e in found if e.kind == "network_error"]
    assert [(e.rank, e.get("peer"), e.get("port"), e.get("error")) for e in net] == [
        (3, "10.1.2.3", 33759, "connection_reset")]
    cuda = [e for e in found if e.kind == "cuda_error"]
    assert [(e.ref.line, e.get("error")) for e in cuda] == [(5, "unknown")]


def test_error_block_open_at_end_of_file_is_flushed() -> None:
    text = "RuntimeError: NCCL error in: a.cpp:1, invalid usage, NCCL version 2.14.3\nLast error:\n"
    err = events(text, "nccl_error")
    assert [(e.get("error_type"), e.get("last_error")) for e in err] == [("ncclInvalidUsage", None)]


def test_whole_message_on_one_physical_line() -> None:
    text = ("RuntimeError: NCCL error in: a.cpp:1, unhandled system error, NCCL version "
            "2.17.1\\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
            "device error. \\nLast error:\\nsocketStartConnect: Connect to 10.1.2.3<43115> failed : "
            "Connection refused")
    err = events(text, "nccl_error")
    assert err and err[0].get("error_type") == "ncclSystemError"
    assert err[0].get("last_error", "").startswith("socketStartConnect")
    assert has(events(text, "network_error"), {"error": "connect_failed", "peer": "10.1.2.3"})


def test_comm_init_lines_map_process_to_rank_exactly() -> None:
    text = "\n".join(
        f"node0{n}:{1000 + r}:{2000 + r} [{r % 2}] NCCL INFO comm 0x55{r:02d} rank {r} nranks 4 "
        f"cudaDev {r % 2} nvmlDev {r % 2} busId {18 + r}000 commId 0xabc - Init COMPLETE"
        for r, n in ((0, 1), (1, 1), (2, 2), (3, 2)))
    got = sorted((e.get("nccl_host"), e.get("pid"), e.get("comm_rank"), e.get("cuda_dev"), e.get("bus_id"))
                 for e in events(text, "nccl_comm_init"))
    assert got == [("node01", 1000, 0, 0, "18000"), ("node01", 1001, 1, 1, "19000"),
                   ("node02", 1002, 2, 0, "20000"), ("node02", 1003, 3, 1, "21000")]


def test_ib_status_of_older_comma_form() -> None:
    text = ("node07:41233:41410 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
            "10.1.2.3<51723> with error 13, opcode 1, len 0, vendor err 136")
    expected = {"status": 13, "error": "rnr_retry_exceeded", "peer": "10.1.2.3"}
    assert has(events(text, "network_error"), expected)


@pytest.mark.parametrize(("event", "is_error"), [
    ("port error", True), ("local catastrophic error", True), ("CQ error", True),
    ("GID table change", False), ("LID change", False), ("SM change", False), ("port active", False),
    ("client reregistration", False),
])
def test_ib_async_events_are_network_errors_only_when_they_are_errors(event: str, is_error: bool) -> None:
    text = f"roce-h2:51120:51207 [2] transport/net_ib.cc:92 NCCL WARN NET/IB : Got async event : {event}"
    net = events(text, "network_error")
    assert [(e.get("error"), e.get("detail")) for e in net] == ([("async_event", event)] if is_error else [])
    assert len(events(text, "nccl_warn")) == 1


CUT_HEAD = ("node07:41233:41410 [3] transport/net_ib.cc:1092 NCCL WARN NET/IB : req 0/1 tag 7 peer "
            "10.2.0.9<41120> collective mismatch erro")


def test_warn_cut_by_a_terminal_is_completed_by_the_next_line() -> None:
    # NCCL prints each message on one line (log-formats.md section 4.1): a bare line after a long WARN that
    # named nothing is the rest of it, cut at the terminal's width.
    found = events(CUT_HEAD + "\nr, local size 131072 remote size 65536\nstep 12 loss 0.3\n")
    warn = [e.get("message") for e in found if e.kind == "nccl_warn"]
    assert len(warn) == 1
    assert warn[0].endswith("collective mismatch error, local size 131072 remote size 65536")
    assert has(found, {"error": "collective_mismatch"})
    assert all(e.ref.line == 1 for e in found if e.kind != "progress")


@pytest.mark.parametrize("after", [
    "  indented context line that is not the rest of it",
    "[rank0]: Traceback (most recent call last):",
    "node07:41233:41411 [3] NCCL INFO transport/net.cc:1302 -> 6",
    "",
])
def test_a_long_warn_followed_by_a_record_or_blank_stays_as_it_was(after: str) -> None:
    found = events(CUT_HEAD + "\n" + after + "\n")
    warn = [e for e in found if e.kind == "nccl_warn"]
    assert [e.get("message") for e in warn][:1] == [CUT_HEAD.split("NCCL WARN ", 1)[1]]
    assert not has(found, {"error": "collective_mismatch"})


def test_a_long_warn_at_the_end_of_the_file_is_kept() -> None:
    found = events(CUT_HEAD)
    assert [e.get("message") for e in found if e.kind == "nccl_warn"] == [CUT_HEAD.split("NCCL WARN ", 1)[1]]
