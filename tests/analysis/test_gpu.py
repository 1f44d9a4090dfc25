"""Driver Xid lines mapped to the rank whose GPU they name (fact gpu_fault)."""

from __future__ import annotations

from typing import Any

from hanglens.analysis.build import build
from hanglens.analysis.gpu import _bus_number
from hanglens.model import Event, SourceRef

_n = iter(range(1, 1000))


def ev(kind: str, rank: int | None, host: str | None = None, path: str = "job.log", **fields: Any) -> Event:
    return Event(kind=kind, ref=SourceRef(path, next(_n)), text=kind, parser="test", rank=rank, host=host,
                 fields=fields)


def init(rank: int, host: str, bus: str, pid: int, nranks: int = 8) -> Event:
    return ev("nccl_comm_init", rank, host, comm_rank=rank, nranks=nranks, bus_id=bus, pid=pid,
              nccl_host=host, phase="init_complete")


def xid(n: int, pci: str, host: str | None = None, pid: int | None = None, path: str = "dmesg.txt") -> Event:
    return ev("xid", None, host, path=path, xid=n, pci=pci, detail="", nvswitch=False,
              **({"pid": pid} if pid is not None else {}))


def rows(evs: list[Event]) -> list[dict[str, Any]]:
    return list(build(evs).fact("gpu_fault").to_dict(orient="records"))


def test_pci_address_and_nccl_bus_id_are_one_number() -> None:
    assert _bus_number("0000:3b:00") == _bus_number("3b000") == _bus_number("0000:3b:00.0")
    assert _bus_number("0001:3b:00") == _bus_number("13b000")   # NCCL prints the digits as one hex number
    assert _bus_number("0000:3c:00") != _bus_number("3b000")
    assert _bus_number("zz:00") is None and _bus_number(None) is None


def test_bus_id_on_the_xid_host_names_the_rank() -> None:
    evs = [init(2, "n1", "9c000", 41), init(6, "n2", "9c000", 77), xid(48, "0000:9c:00", host="n2")]
    [got] = rows(evs)
    assert (got["rank"], got["fault"], got["mapped_by"], got["host"]) == (6, "hardware", "bus_id", "n2")


def test_same_bus_on_two_hosts_without_a_host_maps_nothing() -> None:
    [got] = rows([init(2, "n1", "9c000", 41), init(6, "n2", "9c000", 77), xid(79, "0000:9c:00")])
    assert got["rank"] is None


def test_a_file_named_after_one_host_gives_the_xid_its_host() -> None:
    evs = [init(2, "n1", "9c000", 41), init(6, "n2", "9c000", 77),
           xid(79, "0000:9c:00", path="logs/dmesg-n2.txt")]
    assert rows(evs)[0]["rank"] == 6


def test_the_pid_maps_when_no_bus_id_matches() -> None:
    [got] = rows([init(3, "n1", "1b000", 5120), xid(31, "0000:ca:00", host="n1", pid=5120)])
    assert (got["rank"], got["fault"], got["mapped_by"]) == (3, "memory_access", "pid")


def test_bus_id_and_pid_that_disagree_map_nothing() -> None:
    evs = [init(3, "n1", "1b000", 5120), init(4, "n1", "ca000", 5121),
           xid(13, "0000:ca:00", host="n1", pid=5120)]
    assert rows(evs)[0]["rank"] is None


def test_a_warning_xid_is_no_fault() -> None:
    assert rows([init(1, "n1", "2a000", 900), xid(63, "0000:2a:00", host="n1")])[0]["fault"] == "other"


def test_an_xid_of_another_process_on_the_ranks_gpu_maps_nothing() -> None:
    assert rows([init(1, "n1", "2a000", 900), xid(31, "0000:2a:00", host="n1", pid=12345)])[0]["rank"] is None


def test_a_split_communicators_rank_is_not_the_global_rank() -> None:
    """log-formats.md section 4.3: `ncclCommSplit comm ... rank <r> nranks <n> ... parent <ptr> color <c>
    key <k>` states the rank inside the split (a tensor-parallel group), not the global rank; with only the
    splits in the excerpt, the bus id names the process whose `[rankN]:` lines carry the line (rank 6)."""
    split = ev("nccl_comm_init", 6, "gpu-h2", comm_rank=2, nranks=4, bus_id="9b000", pid=71204,
               nccl_host="gpu-h2", phase="init_complete", api="ncclCommSplit", parent="0x5604877e1100")
    other = ev("nccl_comm_init", 4, "gpu-h2", comm_rank=0, nranks=4, bus_id="18000", pid=71202,
               nccl_host="gpu-h2", phase="init_complete", api="ncclCommSplit", parent="0x55a9b2c01340")
    [got] = rows([split, other, xid(79, "0000:9b:00", host="gpu-h2")])
    assert (got["rank"], got["mapped_by"]) == (6, "bus_id")
