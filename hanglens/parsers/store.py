"""Read rendezvous and TCPStore failures: bind/connect/recv/send/wait errors on the c10d store and the
Rendezvous*Error family; store waits that time out are also reported as hangs noticed by the store.

Example (torch 1.11+, envelope already stripped):
`[c10d] The server socket has failed to bind to [::]:29511 (errno: 98 - Address already in use).`
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, to_count, to_int

# Linux errno of the strerror texts the socket layer prints without a number.
ERRNO_BY_TEXT = {
    "Address already in use": 98,
    "Cannot assign requested address": 99,
    "Connection refused": 111,
    "Connection reset by peer": 104,
    "Broken pipe": 32,
    "Connection timed out": 110,
    "No route to host": 113,
    "Network is unreachable": 101,
}
ERRNO_TEXT_RE = re.compile("|".join(re.escape(k) for k in sorted(ERRNO_BY_TEXT)))

# PG prefix of c10d lines (reference §10 item 18), newest form first.
PG_PREFIX_RE = re.compile(
    r"\[PG ID (?P<pg_id>\d+) PG GUID (?P<guid>[^\s(\]]+)(?:\((?P<desc1>[^)]*)\))? Rank (?P<r1>\d+)\]"
    r"|\[PG (?P<uid>[^\s(\]]+)(?: \((?P<desc2>[^)]*)\))? Rank (?P<r2>\d+)\]"
)

SERVER_BIND_RE = re.compile(
    r"The server socket has failed to (?:bind to|listen on) (?P<addr>\S+) "
    r"\(errno: (?P<errno>\d+) - (?P<err>[^)]+)\)"
)
SERVER_ANY_RE = re.compile(
    r"The server socket has failed to listen on any local network address\."
    r"(?: port: (?P<port>\d+), useIpv6: \w+, code: (?P<code>-?\d+), name: (?P<name>\w+), message: "
    r"(?P<msg>.*))?"
)
CLIENT_TIMEOUT_RE = re.compile(
    r"The client socket has timed out after (?P<dur>\d+)(?P<unit>ms|s) while trying to connect to "
    r"\((?P<host>[^,]+), (?P<port>\d+)\)"
)
CLIENT_ERRNO_RE = re.compile(
    r"The client socket has failed to connect to \[(?P<host>[^\]]+)\]:(?P<port>\d+) "
    r"\(errno: (?P<errno>\d+) - (?P<err>[^)]+)\)"
)
CLIENT_ANY_RE = re.compile(
    r"The client socket has failed to connect to any network address of \((?P<host>[^,]+), (?P<port>\d+)\)"
)
CONNECT_110_RE = re.compile(r"connect\(\) timed out\. Original timeout was (?P<ms>\d+) ?ms")
TCP_CLIENT_RE = re.compile(
    r"TCP client failed to connect/validate to host (?P<host>\S+):(?P<port>\d+) - "
    r"(?P<what>timed out|retrying)"
    r"(?: \(try=\d+, timeout=(?P<to>\d+)ms(?:, delay=\d+ms)?\))?(?:: (?P<inner>.*))?"
)
SOCKET_IO_RE = re.compile(
    r"(?P<op>recvValue|recvBytes|sendBytes|sendValue|recvVector|recvString|sendString) failed on "
    r"SocketImpl\(fd=-?\d+, addr=(?P<addr>[^,]+), remote=(?P<remote>[^)]+)\)(?:: (?P<err>.*))?"
)
ZERO_BYTES_RE = re.compile(
    r"Failed to (?P<op>recv|send), (?:got|sent) 0 bytes\. Connection was likely closed"
)
WAIT_FOR_INPUT_RE = re.compile(
    r"waitForInput: (?:poll for )?socket SocketImpl\(fd=-?\d+, addr=(?P<addr>[^,]+), "
    r"remote=(?P<remote>[^)]+)\)"
    r"(?: timed out after (?P<ms>\d+) ?ms| returned (?P<ret>-?\d+))?"
)
SOCKET_TIMEOUT_RE = re.compile(r"\bSocket Timeout\b")
# TCPStore::doWait (torch/csrc/distributed/c10d/TCPStore.cpp, 1.10-2.x): the reply to a WAIT was not the
# store's STOP_WAITING byte, so the peer at the endpoint does not speak the TCPStore protocol (another
# service at MASTER_ADDR:MASTER_PORT); torch before 2.2 has no VALIDATE handshake at connect that would
# have said so (2.x: `TCP client failed to connect/validate`)
STOP_WAITING_RE = re.compile(r"\bStop_waiting response is expected\b")
WAIT_TIMEOUT_RE = re.compile(
    r"(?<![\w])[Ww]ait timeout\b(?: after (?P<ms>\d+) ?ms)?(?:, keys: (?P<keys>.*))?"
)
WAIT_CLIENTS_RE = re.compile(
    r"Timed out after (?P<s>\d+) seconds waiting for clients\.(?: (?P<joined>\d+)/(?P<world>\d+) clients "
    r"joined)?"
)
STORE_BARRIER_RE = re.compile(
    r"Timed out initializing process group in store based barrier on rank:? (?P<rank>\d+), for key: "
    r"(?P<key>[^\s,]+)(?: \(world_size=(?P<ws>\d+), (?:worker_count|num_workers_joined)=(?P<joined>\d+), "
    r"timeout=(?P<to>[^ )]+))?"
)
# `_store_based_barrier` (torch/distributed/distributed_c10d.py, 1.10-2.0 by default) logs at INFO, for each
# rank that reached it: `Added key: <key> to store for rank: <r>` (failure-signatures.md section 12).
BARRIER_ADDED_RE = re.compile(r"Added key: (?P<key>[^\s,]+) to store for rank: (?P<rank>\d+)")
# Then, once the count reached the group's size: `Rank <r>: Completed store-based barrier for key:<key> with
# <n> nodes.` (`logger.info` in `_store_based_barrier`, torch 1.10-2.2; 2.1 and 2.2 run the barrier only with
# TORCH_DIST_INIT_BARRIER=1). `<n>` is the size the barrier waited for: the world's in torch 1.10-2.0 (a
# `new_group` barrier counts every rank of the default store there too), the group's in 2.1-2.2.
BARRIER_DONE_RE = re.compile(
    r"Rank (?P<rank>\d+): Completed store-based barrier for key:(?P<key>[^\s,]+) with (?P<n>\d+) nodes")
DUMP_FLAG_RE = re.compile(
    r"Failed to check the \"should dump\" flag on TCPStore.*?(?:with error: (?P<err>.*))?$"
    r"|Failed to get (?:timeout rank ID from TCPStore|exception dump flag from the global "
    r"store)\.?\s*(?P<err2>.*)"
)
RDZV_ERROR_RE = re.compile(
    r"(?:^|[\s.'\"(])(?P<cls>Rendezvous(?:Timeout|Connection|Closed|State|GracefulExit)?Error)"
    r"(?::\s*(?P<msg>.*?)|\(\)|\s*)[\"',]*\s*$"
)
RDZV_CODE_RE = re.compile(r"^\s*(?:raise|except|from|import|class|def|return)\b|\bimport\b")
RDZV_CONN_RE = re.compile(r"The connection to (?:the )?(?P<backend>C10d store|etcd) has failed")
RDZV_STATE_RE = re.compile(r"The rendezvous state is corrupt")
RESET_RE = re.compile(r"Connection reset by peer|Broken pipe")
STORE_CONTEXT_RE = re.compile(r"TCPStore|SocketImpl| store\b")
# ProcessGroupNCCL's ncclUniqueId exchange failure names the rank that could not get the id
# (log-formats.md sections 1.6 and 10 item 37: `[<rank>] is setting up NCCL communicator and retrieving
# ncclUniqueId from [0] via c10d key-value store by key '<key>', but store->get('<key>') got error: <err>`;
# 1.13 spells it `retreiving`): the writer's own rank in the group being created, the global rank for the
# default group.
UNIQUE_ID_RE = re.compile(
    r"\[(?P<rank>\d{1,6})\] is setting up NCCL communicator and re(?:trie|trei)ving ncclUniqueId"
)
TIMEDELTA_RE = re.compile(r"^(?:(?P<days>\d+) days?, )?(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)$")


def _ms(value: str | None, unit: str = "ms") -> int | None:
    n = to_int(value)
    if n is None:
        return None
    return n * 1000 if unit == "s" else n


def timedelta_ms(text: str | None) -> int | None:
    """`0:30:00`, `1 day, 0:00:00`, `1800s`, `600000ms` → milliseconds; None when unreadable."""
    if not text:
        return None
    m = TIMEDELTA_RE.match(text)
    if m:
        secs = int(m["days"] or 0) * 86400 + int(m["h"]) * 3600 + int(m["m"]) * 60 + float(m["s"])
        return round(secs * 1000)
    m2 = re.match(r"^(\d+(?:\.\d+)?)(ms|s)$", text)
    if m2:
        return round(float(m2[1]) * (1 if m2[2] == "ms" else 1000))
    return None


def _errno(text: str | None) -> int | None:
    if not text:
        return None
    m = ERRNO_TEXT_RE.search(text)
    return ERRNO_BY_TEXT[m.group(0)] if m else None


def pg_fields(text: str) -> dict[str, Any]:
    """`pg` and `pg_rank` from a c10d PG prefix, or nothing."""
    m = PG_PREFIX_RE.search(text)
    if not m:
        return {}
    if m["r1"] is not None:
        return {"pg": m["pg_id"], "pg_rank": to_count(m["r1"])}
    return {"pg": m["uid"], "pg_rank": to_count(m["r2"])}


def _unique_id_rank(text: str) -> int | None:
    """The rank a ncclUniqueId exchange failure names as the writer's own (`UNIQUE_ID_RE`), else None."""
    if "ncclUniqueId" not in text:
        return None
    m = UNIQUE_ID_RE.search(text)
    return to_count(m["rank"]) if m else None


class StoreParser(Parser):
    """TCPStore / rendezvous failures: store_error, rendezvous_error, hang_detected (detector=store)."""

    name = "store"
    triggers = (
        "socket",
        "Socket",
        "TCP",
        " store",
        "Rendezvous",
        "ait timeout",
        "waiting for clients",
        "Connection was likely closed",
        "connect() timed out",
        "Stop_waiting",
    )
    emits = (
        EventSpec("store_error", ("op", "addr", "errno", "error", "timeout_ms", "keys", "pg", "pg_rank",
                                  "stated_rank"),
                  "a TCPStore/socket operation failed "
                  "(op: bind, connect, recv, send, wait, check_dump_flag); stated_rank: the rank a "
                  "ncclUniqueId exchange failure names as its own"),
        EventSpec("rendezvous_error", ("error_class", "message", "world_size", "joined", "key", "timeout_ms",
                                       "stated_rank"),
                  "rendezvous or store-based barrier failed; error_class is the Rendezvous*Error class, "
                  "store_barrier_timeout or wait_for_workers_timeout"),
        EventSpec("hang_detected", ("detector", "op", "timeout_ms", "pg", "pg_rank", "stated_rank"),
                  "a wait on the store timed out (detector=store)"),
        EventSpec("store_barrier_arrived", ("key", "stated_rank", "world_size"),
                  "a rank reached init_process_group's store-based barrier (`Added key: <key> to store for "
                  "rank: <r>`, INFO; or passed it, `Rank <r>: Completed store-based barrier for key:<key> "
                  "with <n> nodes.`); stated_rank: that rank; world_size: the count the barrier waited for "
                  "(only on the completion line)"),
    )
    examples = (
        Example("[W socket.cpp:418] [c10d] The server socket has failed to bind to [::]:29511 (errno: 98 - "
                "Address already in use).", "store_error",
                {"op": "bind", "addr": "[::]:29511", "errno": 98, "error": "Address already in use"},
                "torch 1.11-2.3"),
        Example("[W1130 08:04:26.123456789 socket.cpp:455] [c10d] The server socket has failed to bind to "
                "0.0.0.0:29512 (errno: 98 - Address already in use).", "store_error",
                {"op": "bind", "addr": "0.0.0.0:29512", "errno": 98}, "torch 2.4-2.9"),
        Example("[E1130 08:04:26.123456789 socket.cpp:510] [c10d] The server socket has failed to listen on "
                "any "
                "local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: "
                "address "
                "already in use", "store_error", {"op": "bind", "addr": ":29500", "errno": 98},
                    "torch 2.4-2.9 (libuv)"),
        Example("[E socket.cpp:610] [c10d] The client socket has timed out after 1800s while trying to "
                "connect "
                "to (10.0.0.1, 29500).", "store_error",
                {"op": "connect", "addr": "10.0.0.1:29500", "timeout_ms": 1800000}, "torch 1.11-2.3"),
        Example("[rank3]:[E1130 08:04:26.707733876 socket.cpp:1023] [c10d] The client socket has timed out "
                "after "
                "600000ms while trying to connect to (node-01, 29500).", "store_error",
                {"op": "connect", "addr": "node-01:29500", "timeout_ms": 600000}, "torch 2.4-2.9"),
        Example("[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-01]:29500 "
                "(errno: 111 "
                "- Connection refused).", "store_error",
                {"op": "connect", "addr": "node-01:29500", "errno": 111}, "torch 1.11-2.9"),
        Example("RuntimeError: connect() timed out. Original timeout was 1800000 ms.", "store_error",
                {"op": "connect", "timeout_ms": 1800000}, "torch 1.10"),
        Example("[E1130 08:04:26.707888867 TCPStore.cpp:318] [c10d] TCP client failed to connect/validate "
                "to host "
                "10.0.0.1:29500 - timed out (try=1, timeout=600000ms): The client socket has timed out after "
                "600000ms while trying to connect to (10.0.0.1, 29500).", "store_error",
                {"op": "connect", "addr": "10.0.0.1:29500", "timeout_ms": 600000}, "torch 2.4-2.9"),
        Example("[rank12]:[W1130 10:00:41.000123456 TCPStore.cpp:125] [c10d] recvValue failed on "
                "SocketImpl(fd=135, "
                "addr=[node-03]:48750, remote=[node-01]:29500): Connection reset by peer", "store_error",
                {"op": "recv", "addr": "[node-01]:29500", "errno": 104, "error": "Connection reset by peer"},
                "torch 2.3-2.9"),
        Example("[rank1]:[W1130 11:09:03.100200300 TCPStore.cpp:117] [c10d] sendBytes failed on "
                "SocketImpl(fd=41, "
                "addr=[localhost]:50312, remote=[localhost]:29500): Broken pipe", "store_error",
                {"op": "send", "errno": 32}, "torch 2.3-2.9"),
        Example("[rank2]:[W1130 10:00:41.000123456 TCPStore.cpp:144] [c10d] Failed to recv, got 0 bytes. "
                "Connection was likely closed. Did the remote server shutdown or crash?", "store_error",
                {"op": "recv", "error": "connection closed"}, "torch 2.8-2.9"),
        Example("[rank1]:[W1130 14:40:10.000111222 socket.cpp:470] [c10d] waitForInput: socket "
                "SocketImpl(fd=33, "
                "addr=[localhost]:52018, remote=[localhost]:29500) timed out after 1800000ms",
                    "hang_detected",
                {"detector": "store", "op": "wait", "timeout_ms": 1800000}, "torch 2.3-2.9"),
        Example("torch.distributed.DistStoreError: wait timeout after 300000ms, keys: /default_pg//cuda//0",
                "store_error", {"op": "wait", "timeout_ms": 300000, "keys": "/default_pg//cuda//0"},
                "torch 2.4-2.9"),
        Example("RuntimeError: Socket Timeout", "hang_detected", {"detector": "store", "op": "wait"},
                "torch 1.10-2.3"),
        Example("RuntimeError: Stop_waiting response is expected", "store_error",
                {"op": "connect", "error": "not a TCPStore's reply: Stop_waiting response is expected"},
                "torch 1.10-2.x (TCPStore.cpp doWait; real run, probe60: torch 1.13.1, wrong --master_addr)"),
        Example("torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving "
                "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
                "Socket Timeout", "hang_detected", {"detector": "store", "op": "wait", "stated_rank": 2},
                "torch 2.0-2.9 (written here from log-formats.md section 1.6)"),
        Example("RuntimeError: [5] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via "
                "c10d key-value store by key '1', but store->get('1') got error: Socket Timeout",
                "store_error", {"op": "wait", "error": "Socket Timeout", "stated_rank": 5},
                "torch 1.13 (written here from log-formats.md section 1.6)"),
        Example("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 "
                "clients "
                "joined.", "rendezvous_error",
                {"error_class": "wait_for_workers_timeout", "world_size": 2, "joined": 1,
                 "timeout_ms": 901000},
                "torch 2.2-2.9"),
        Example("2023-06-01 10:12:03,501 - INFO - torch.distributed.distributed_c10d - Rank 2: Completed "
                "store-based barrier for key:store_based_barrier_key:1 with 4 nodes.",
                "store_barrier_arrived",
                {"key": "store_based_barrier_key:1", "stated_rank": 2, "world_size": 4}, "torch 2.0"),
        Example("INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for "
                "rank: 5", "store_barrier_arrived", {"key": "store_based_barrier_key:1", "stated_rank": 5},
                "torch 1.10-2.0"),
        Example("RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for "
                "key: "
                "store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)",
                    "rendezvous_error",
                {"error_class": "store_barrier_timeout", "stated_rank": 3, "world_size": 4, "joined": 3,
                 "key": "store_based_barrier_key:1", "timeout_ms": 1800000}, "torch 1.10-1.13"),
        Example("torch.distributed.DistStoreError: Timed out initializing process group in store based "
                "barrier on "
                "rank 3, for key: store_based_barrier_key:1 (world_size=4, num_workers_joined=3, "
                "timeout=0:30:00 "
                "error=Socket Timeout)", "hang_detected", {"detector": "store", "timeout_ms": 1800000},
                "torch 2.0-2.9"),
        Example("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the "
                "C10d "
                "store has failed. See inner exception for details.", "rendezvous_error",
                {"error_class": "RendezvousConnectionError"}, "torch 1.10-2.9"),
        Example("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", "rendezvous_error",
                {"error_class": "RendezvousTimeoutError", "message": None}, "torch 1.10-2.9"),
        Example("[rank1]:[W1130 11:12:00.300400500 ProcessGroupNCCL.cpp:1650] [PG ID 0 PG GUID "
                "0(default_pg) Rank 1]"
                " Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut "
                "down too "
                "early), with error: Connection reset by peer", "store_error",
                {"op": "check_dump_flag", "pg": "0", "pg_rank": 1, "errno": 104}, "torch 2.5-2.9"),
        Example("[rank1]:[W1130 11:12:00.300400500 ProcessGroupNCCL.cpp:1380] [PG 0 Rank 1] Failed to check "
                "the "
                "\"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with "
                "error: "
                "Broken pipe", "store_error", {"op": "check_dump_flag", "pg": "0", "pg_rank": 1},
                "torch 2.3-2.4"),
    )
    near_misses = (
        "NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        "Restoring checkpoint from the store of shards",
        "    raise RendezvousTimeoutError()",
        "from torch.distributed.elastic.rendezvous import RendezvousHandler",
        "NCCL WARN socketProgress: Connection reset by peer on 10.0.0.2<40001>",
        "Waiting for the store to be ready",
    )

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        ev = self._store(line, text)
        if ev is not None:
            out.extend(ev)
            return out
        out.extend(self._rendezvous(line, text))
        return out

    def _err(self, line: LogLine, op: str | None, *, addr: str | None = None, errno: int | None = None,
             error: str | None = None, timeout_ms: int | None = None, keys: str | None = None) -> Event:
        pg = pg_fields(line.text)
        return self.event("store_error", line, op=op, addr=addr,
                          errno=errno if errno is not None else _errno(error),
                          error=error, timeout_ms=timeout_ms, keys=keys, pg=pg.get("pg"),
                          pg_rank=pg.get("pg_rank"), stated_rank=_unique_id_rank(line.text))

    def _hang(self, line: LogLine, timeout_ms: int | None) -> Event:
        pg = pg_fields(line.text)
        return self.event("hang_detected", line, detector="store", op="wait", timeout_ms=timeout_ms,
                          pg=pg.get("pg"), pg_rank=pg.get("pg_rank"), stated_rank=_unique_id_rank(line.text))

    def _store(self, line: LogLine, text: str) -> list[Event] | None:
        """Socket/TCPStore messages; None when the line is not one."""
        m: re.Match[str] | None
        if "socket" in text:
            m = SERVER_BIND_RE.search(text)
            if m:
                return [self._err(line, "bind", addr=m["addr"], errno=to_count(m["errno"]),
                                  error=m["err"].strip())]
            m = SERVER_ANY_RE.search(text)
            if m:
                code = to_int(m["code"])
                return [self._err(line, "bind", addr=f":{m['port']}" if m["port"] else None,
                                  errno=abs(code) if code else None,
                                  error=(m["msg"] or "failed to listen on any local network address")
                                  .strip())]
            m = CLIENT_TIMEOUT_RE.search(text)
            if m and "TCP client failed" not in text:
                return [self._err(line, "connect", addr=f"{m['host']}:{m['port']}", error="timed out",
                                  timeout_ms=_ms(m["dur"], m["unit"]))]
            m = CLIENT_ERRNO_RE.search(text)
            if m:
                return [self._err(line, "connect", addr=f"{m['host']}:{m['port']}",
                                  errno=to_count(m["errno"]),
                                  error=m["err"].strip())]
            m = CLIENT_ANY_RE.search(text)
            if m:
                return [self._err(line, "connect", addr=f"{m['host']}:{m['port']}",
                                  error="failed to connect to any network address")]
            m = WAIT_FOR_INPUT_RE.search(text)
            if m:
                if m["ms"]:
                    ms = to_count(m["ms"])
                    return [self._err(line, "wait", addr=m["remote"], error="timed out", timeout_ms=ms),
                            self._hang(line, ms)]
                return [self._err(line, "wait", addr=m["remote"],
                                  error=f"poll returned {m['ret']}" if m["ret"] else None)]
        m = TCP_CLIENT_RE.search(text)
        if m:
            return [self._err(line, "connect", addr=f"{m['host']}:{m['port']}",
                              error=m["what"] + (f": {m['inner'].strip()}" if m["inner"] else ""),
                              timeout_ms=to_count(m["to"]))]
        m = CONNECT_110_RE.search(text)
        if m:
            return [self._err(line, "connect", error="connect() timed out", timeout_ms=to_count(m["ms"]))]
        m = SOCKET_IO_RE.search(text)
        if m:
            op = "recv" if m["op"].startswith("recv") else "send"
            return [self._err(line, op, addr=m["remote"].strip(), error=(m["err"] or "").strip() or None)]
        m = ZERO_BYTES_RE.search(text)
        if m:
            return [self._err(line, m["op"], error="connection closed")]
        m = DUMP_FLAG_RE.search(text)
        if m:
            err = (m["err"] or m["err2"] or "").strip() or None
            return [self._err(line, "check_dump_flag", error=err)]
        m = BARRIER_ADDED_RE.search(text)
        if m:
            return [self.event("store_barrier_arrived", line, key=m["key"], stated_rank=to_count(m["rank"]))]
        m = BARRIER_DONE_RE.search(text)
        if m:
            return [self.event("store_barrier_arrived", line, key=m["key"], stated_rank=to_count(m["rank"]),
                               world_size=to_count(m["n"]))]
        m = STORE_BARRIER_RE.search(text)
        if m:
            to = timedelta_ms(m["to"])
            return [self.event("rendezvous_error", line, error_class="store_barrier_timeout",
                               message=text[m.start():].strip(), world_size=to_count(m["ws"]),
                               joined=to_count(m["joined"]), key=m["key"], timeout_ms=to,
                               stated_rank=to_count(m["rank"])),
                    self._hang(line, to)]
        m = WAIT_CLIENTS_RE.search(text)
        if m:
            to = _ms(m["s"], "s")
            return [self.event("rendezvous_error", line, error_class="wait_for_workers_timeout",
                               message=text[m.start():].strip(), world_size=to_count(m["world"]),
                               joined=to_count(m["joined"]), key=None, timeout_ms=to, stated_rank=None),
                    self._hang(line, to)]
        m = WAIT_TIMEOUT_RE.search(text)
        if m:
            ms = to_count(m["ms"])
            return [self._err(line, "wait", error="wait timeout", timeout_ms=ms,
                              keys=m["keys"].strip() if m["keys"] else None),
                    self._hang(line, ms)]
        if SOCKET_TIMEOUT_RE.search(text):
            return [self._err(line, "wait", error="Socket Timeout"), self._hang(line, None)]
        if STOP_WAITING_RE.search(text):
            return [self._err(line, "connect",
                              error="not a TCPStore's reply: Stop_waiting response is expected")]
        m = RESET_RE.search(text)
        if m and STORE_CONTEXT_RE.search(text) and "Rendezvous" not in text:
            return [self._err(line, None, error=m.group(0))]
        return None

    def _rendezvous(self, line: LogLine, text: str) -> list[Event]:
        if "Rendezvous" in text and not RDZV_CODE_RE.search(text):
            m = RDZV_ERROR_RE.search(text)
            if m:
                msg = (m["msg"] or "").strip().rstrip("\"',").strip() or None
                return [self.event("rendezvous_error", line, error_class=m["cls"], message=msg,
                                   world_size=None,
                                   joined=None, key=None, timeout_ms=None, stated_rank=None)]
        m = RDZV_CONN_RE.search(text) or RDZV_STATE_RE.search(text)
        if m and "Rendezvous" not in text:
            cls = "RendezvousStateError" if "state is corrupt" in m.group(0) else "RendezvousConnectionError"
            return [self.event("rendezvous_error", line, error_class=cls, message=text[m.start():].strip(),
                               world_size=None, joined=None, key=None, timeout_ms=None, stated_rank=None)]
        return []
