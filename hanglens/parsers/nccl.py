"""NCCL's debug output (envelope, banner, communicator lifecycle, WARNs) and torch's NCCL error messages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, to_count, to_int
from hanglens.parsers.cuda import classify_cuda, pg_fields

# NCCL_DEBUG envelope (§10.E item 73); searched, because WARNs are often glued after a partial line.
# The host:pid:tid part is optional: pasted excerpts often keep only `file:line NCCL WARN msg`.
# NCCL_DEBUG envelope: `host:pid:tid [dev] [src:line (func)] NCCL LEVEL message`. The level marker is
# found first (a literal), then the prefix is read backwards from it over a bounded tail, so no optional
# group is retried at every position of a long line (issue 12, item 7: every pattern linear in the line).
LEVEL_RE = re.compile(r"NCCL (?P<lvl>INFO|WARN|TRACE|CALL)\b ?")
PREFIX_RE = re.compile(
    r"(?:(?P<host>[^\s:\[\]]{1,255}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) (?:\[(?P<dev>\d{1,4})\] )?)?"
    r"(?:\d{1,12}\.\d{1,9} \w{1,64}:\d{1,8} )?"
    r"(?:(?P<src>[\w/+-][\w./+-]{0,127}):(?P<line>\d{1,8}) (?:\((?P<func>[^()\s]{1,128})\) )?)?\Z"
)
MAX_PREFIX = 512  # characters before `NCCL <LEVEL>` that can hold the envelope


def envelope(text: str) -> dict[str, str | None] | None:
    """The NCCL_DEBUG envelope's fields (host, pid, tid, dev, src, line, func, lvl, msg), or None."""
    m = LEVEL_RE.search(text)
    if m is None:
        return None
    tail = text[max(0, m.start() - MAX_PREFIX):m.start()]
    pre = PREFIX_RE.search(tail)
    fields: dict[str, str | None] = dict.fromkeys(("host", "pid", "tid", "dev", "src", "line", "func"))
    if pre is not None:
        fields.update(pre.groupdict())
    if fields["pid"] is None and fields["src"] is None and tail.strip():
        # ncclDebugLog always writes `host:pid:tid [dev] ` and, for WARN, `file:line ` before the level
        # (log-formats.md section 4.1). With neither, and words before it, the line only mentions NCCL's
        # level in prose ("is this NCCL WARN something to fix?"): no NCCL line at all.
        return None
    fields["lvl"] = m["lvl"]
    fields["msg"] = text[m.end():]
    return fields


BANNER_RE = re.compile(
    r"NCCL version (?P<ver>\d{1,4}\.\d{1,4}\.\d{1,4})(?P<suffix>[^+\s,]{0,32})"
    r"\+cuda(?P<cuda>\d{1,4}\.\d{1,4})"
)
ENV_VERSION_RE = re.compile(r"NCCL version: (?P<ver>\d{1,4}\.\d{1,4}\.\d{1,4})")
TORCH_ERROR_RE = re.compile(
    r"NCCL (?P<kind>error|timeout) in: (?P<loc>[^,\s]{1,256}:\d{1,8}), (?P<errstr>.{1,2048}?), NCCL version "
    r"(?P<ver>\d{1,4}\.\d{1,4}\.\d{1,4})"
)
# The same message cut before its version, at the end of the physical line: a terminal that hard-wrapped
# the paste, or a log shipper's line limit, left `…, remote process exited or there was a network error, N`
# with `CCL version 2.21.5` on the next line (log-formats.md section 1.6 template; NCCL's error strings have
# no comma, so the reason ends at the first one). `VERSION_TAIL_RE` reads the rest of the cut tail.
TORCH_ERROR_CUT_RE = re.compile(
    r"NCCL (?P<kind>error|timeout) in: (?P<loc>[^,\s]{1,256}:\d{1,8}), (?P<errstr>[^,\r\n]{1,512}?)"
    r"(?P<cut>, ?[NCLversion ]{0,13})?$"
)
VERSION_TAIL = ", NCCL version "
VERSION_TAIL_RE = re.compile(r"^(?P<head>[A-Za-z ]{0,13}?)(?P<ver>\d{1,4}\.\d{1,4}\.\d{1,4})\s*$")
CUT_WARN_MIN = 80   # a terminal is this wide at least: a shorter WARN line was not cut by one
TORCH_ASYNC_RE = re.compile(
    r"NCCL (?P<kind>error): (?P<errstr>.{1,2048}?), NCCL version (?P<ver>\d{1,4}\.\d{1,4}\.\d{1,4})"
)
CODE_RE = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception): )?(?P<code>nccl[A-Z]\w*): ?(?P<detail>.*)$")
INLINE_CODE_RE = re.compile(r"(?:\\n|\n)(?P<code>nccl[A-Z]\w*): ?(?P<detail>.*?)(?=\\n|\n|$)")
INLINE_LAST_RE = re.compile(r"Last error:(?:\\n|\n| )*(?P<last>.+?)(?=\\n|\n|$)")
UNKNOWN_RE = re.compile(r"^\s*Unknown NCCL error!?\s*$")
LAST_ERROR_RE = re.compile(r"^\s*Last error:\s*(?P<inline>.*)$")
# torch's NCCL error message (ProcessGroupNCCL / NCCLUtils getNcclErrorDetailStr, log-formats.md section 4.4)
# goes on with `<ncclResult name>: <ncclGetErrorString>` and `Last error:` + NCCL's last WARN text. A paste
# cut below the `NCCL error in:` line is read from that detail line: the result names are NCCL's own enum
# (nccl.h ncclResult_t), and the block counts only when its `Last error:` is a message NCCL classifies.
HEADLESS_CODE_RE = re.compile(
    r"^\s*(?P<code>nccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|"
    r"RemoteError)): ?(?P<detail>.*)$")
ABORT_REASON_RE = re.compile(
    r"^\s*(?P<reason>Process Group (?:destroyed|shutdown) on rank (?P<rank>\d{1,10})"
    r"|No abort reason provided\.?)\s*$"
)
REMOTE_RE = re.compile(r"remote error detected from rank:? ?(?P<src>\d+)")

COMM_RE = re.compile(
    r"(?:\[Rank (?P<r0>\d{1,10})\] )?(?:(?P<api>nccl\w{1,64}) )?comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) "
    r"rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cuda_dev>\d+)(?: nvmlDev (?P<nvml_dev>\d+))? "
    r"busId (?P<bus_id>[0-9a-fA-F]+)"
)
# `Bootstrap : Using <if>:<ip><port>` (NCCL_DEBUG=INFO, log-formats.md section 4.4): the address this
# process's NCCL uses, which other ranks' WARN lines name as `peer <ip><port>`.
BOOTSTRAP_IF_RE = re.compile(
    r"^Bootstrap ?: Using (?P<iface>[^:\s]{1,64}):(?P<ip>[0-9A-Fa-f.:%\w]{1,64}?)<\d{1,6}>")
COMM_PHASE_RE = re.compile(r"(?P<phase>Init START|Init COMPLETE|Destroy COMPLETE|Abort COMPLETE)")
COMM_PARENT_RE = re.compile(r"parent (?P<parent>0x[0-9a-fA-F]+|\(nil\))")


def split_comm(e: Event) -> bool:
    """Is this `nccl_comm_init` line a communicator split from a parent (`ncclCommSplit ... parent <ptr>
    color <c> key <k>`, log-formats.md section 4.3)? Its `rank <r>` is the rank inside the subgroup, never
    the global rank, whatever its size."""
    parent = e.get("parent")
    return e.get("api") == "ncclCommSplit" or (isinstance(parent, str) and parent not in ("", "(nil)", "0x0"))
COMM_COLOR_RE = re.compile(r"color (?P<color>-?\d+) key (?P<key>-?\d+)")
COMM_ID_RE = re.compile(r"commId 0x(?P<comm_id>[0-9a-fA-F]+)")
TIMINGS_RE = re.compile(
    r"Init timings(?: - (?P<api>\w{1,64}))?: rank (?P<rank>\d+) nranks (?P<nranks>\d+)"
    r"(?: total (?P<total>[\d.]+))?"
)

IB_COMPLETION_RE = re.compile(
    r"NET/IB ?: Got completion from peer (?P<peer>[^<\s]{1,255})<(?P<port>\d+)> "
    r"with (?:error |status=)(?P<status>\d+)"
    r"(?:,? opcode[ =](?P<opcode>\d+))?"
)
IB_ASYNC_RE = re.compile(r"NET/IB ?: Got async event ?: (?P<event>.*)")
IB_MISMATCH_RE = re.compile(
    r"NET/IB ?[:-] req \S{1,64} tag \S{1,64} peer (?P<peer>[^<\s]{1,255})<(?P<port>\d+)> "
    r"collective mismatch error"
    r"(?:, local size (?P<local>\d+) remote size (?P<remote>\d+))?"
)
VERBS_RE = re.compile(
    r"Call to (?P<fn>(?:ibv|mlx5dv|wrap_ibv)\w{0,64})(?:\(\))? (?:failed|returned)(?P<rest>.*)"
)
SOCK_CALL_RE = re.compile(
    r"(?P<fn>socket\w{1,64}): Call to (?P<dir>recv from|send to) (?P<addr>\S{1,255}?) failed ?: (?P<err>.*)"
)
CLOSED_RE = re.compile(
    r"(?:socket\w{1,64}|NET/Socket|Net) ?: Connection closed by remote peer(?: (?P<addr>\S+))?"
)
CONNECT_RE = re.compile(
    r"socketStartConnect: Connect to (?P<addr>\S{1,255}) failed ?: (?P<err>.*)"
    r"|(?<!\w)(?P<fn>\w{1,64}): connect to (?P<addr2>\S{1,255}) "
    r"(?:returned (?P<ret>.{0,256}?), exceeded error retry count|failed ?: "
    r"(?P<err2>.*))"
    r"|socketPollConnect: exceeded (?P<what>retries|timeouts)"
)
ACCEPT_RE = re.compile(r"socketTryAccept: Accept failed: ?(?P<err>.*)")
TRUNC_RE = re.compile(
    r"(?:peer (?P<addr>\S{1,255}) )?[Mm]essage truncated ?: receiv(?:ed|ing) (?P<got>\d+) bytes "
    r"instead of (?P<want>\d+)"
)
IFACE_RE = re.compile(
    r"Bootstrap ?: no socket interface found|No usable listening interface found|no device found matching "
    r".{0,256}?, verify NCCL_\w{0,32}IFNAME"
    r"|No interface found in the same subnet as remote address (?P<addr>\S+)"
    # NCCL 2.27 when NCCL_SOCKET_IFNAME names an interface that does not exist: no address was found, so the
    # socket is set up with family 0 (src/misc/socket.cc ncclSocketInit; failure-signatures.md section 10.1,
    # NVIDIA/nccl#1837).
    r"|ncclSocketInit: connecting to address .{0,255}? with family \d+ is neither AF_INET\(2\) "
    r"nor AF_INET6\(10\)"
)
BOOT_ROOT_RE = re.compile(
    r"Bootstrap Root ?: (?:rank \d+ of \d+ ranks has already checked in"
    r"|mismatch in (?:rank count|info) from procs)"
)
PROXY_OP_RE = re.compile(
    r"\[Service thread\] Error encountered progressing operation=(?P<op>\w+), res=(?P<res>\d+)"
)
PROXY_POLL_RE = re.compile(r"\[Proxy Service\] Poll failed: ?(?P<err>.*)")
PROXY_CALL_RE = re.compile(
    r"ncclProxyCallBlockingUDS call to tpRank (?P<tp>\d{1,10})\([^)]{0,128}\) failed ?: ?(?P<res>\d+)"
)
SERVICE_CLOSED_RE = re.compile(r"\[Service thread\] Connection closed by localRank (?P<lr>\d+)")
CUDA_FAIL_RE = re.compile(r"Cuda failure (?:(?P<code>\d+) )?'+(?P<msg>[^']*)'+")
ADDR_RE = re.compile(r"^\[?(?P<ip>[^<]{0,255}?)\]?<(?P<port>\d{1,10})>")

ERRSTR_TYPES: tuple[tuple[str, str], ...] = (
    ("unhandled cuda error", "ncclUnhandledCudaError"),
    ("unhandled system error", "ncclSystemError"),
    ("internal error", "ncclInternalError"),
    ("invalid argument", "ncclInvalidArgument"),
    ("invalid usage", "ncclInvalidUsage"),
    ("remote process exited", "ncclRemoteError"),
    ("operation in progress", "ncclInProgress"),
)
# ibv_wc_status values that matter for diagnosis (§4.4).
IB_STATUS = {4: "local_protection_error", 5: "wr_flushed", 10: "remote_access_error", 12: "retry_exceeded",
             13: "rnr_retry_exceeded"}
STRERROR_TOKENS: tuple[tuple[str, str], ...] = (
    ("Connection reset by peer", "connection_reset"),
    ("Connection refused", "connection_refused"),
    ("timed out", "timed_out"),
    ("Broken pipe", "broken_pipe"),
    ("No route to host", "no_route"),
    ("Network is unreachable", "network_unreachable"),
)

Fields = dict[str, Any]


def normalize_version(text: str) -> str:
    """`21.0.3` (torch <= 1.12 divided NCCL_VERSION_CODE 21003 the pre-2.9 way) -> `2.10.3`."""
    parts = [int(p) for p in text.split(".")[:3] if p.isdigit() and len(p) <= 4]
    if len(parts) < 3:
        return text
    major, minor, patch = parts
    if major >= 10:
        code = major * 1000 + minor * 100 + patch
        major, minor, patch = code // 10000, (code % 10000) // 100, code % 100
    return f"{major}.{minor}.{patch}"


def _split_addr(addr: str | None) -> tuple[str | None, int | None]:
    if not addr:
        return None, None
    m = ADDR_RE.match(addr)
    if m:
        return m["ip"], to_count(m["port"])
    return addr.rstrip(".,:"), None


def _strerror_token(err: str | None, fallback: str) -> str:
    for needle, token in STRERROR_TOKENS:
        if err and needle in err:
            return token
    return fallback


def _net(transport: str, error: str, peer: str | None = None, port: int | None = None,
         status: int | None = None, detail: str | None = None) -> tuple[str, Fields]:
    return "network_error", {"transport": transport, "error": error, "peer": peer, "port": port,
                             "status": status, "detail": detail}


Classified = list[tuple[str, Fields]]
_Build = Callable[[re.Match[str], str], Classified]  # events from the match and the whole message
_Rule = tuple[re.Pattern[str], _Build]


def _from(m: re.Match[str], msg: str) -> str:
    """The message from where the pattern hit on: the part that names the failure."""
    return msg[m.start():].strip()


def _ib_completion(m: re.Match[str], msg: str) -> Classified:
    status = to_count(m["status"])
    error = IB_STATUS.get(status or -1, "completion_error")
    return [_net("ib", error, m["peer"], to_count(m["port"]), status, _from(m, msg))]


# NCCL's IB async thread WARNs every verbs async event by its `ibv_event_type_str` name (log-formats.md
# section 4.4; rdma-core libibverbs/enum_strs.c). These are management events (an address or the subnet
# manager changed, a port came up, a queue pair reached a normal state), not errors: the link keeps
# working, so they are no network_error.
IB_MANAGEMENT_EVENTS = ("GID table change", "LID change", "P_Key change", "SM change",
                        "client reregistration", "port active", "communication established",
                        "send queue drained", "path migration successful", "SRQ limit reached",
                        "last WQE reached")


def _ib_async(event: str) -> Classified:
    if event.startswith(IB_MANAGEMENT_EVENTS):
        return []
    return [_net("ib", "async_event", detail=event)]


def _socket_call(m: re.Match[str], msg: str) -> Classified:
    peer, port = _split_addr(m["addr"])
    fallback = "recv_failed" if m["dir"].startswith("recv") else "send_failed"
    return [_net("socket", _strerror_token(m["err"], fallback), peer, port, detail=m["err"].strip())]


def _closed(m: re.Match[str], msg: str) -> Classified:
    peer, port = _split_addr(m["addr"])
    return [_net("socket", "closed_by_peer", peer, port),
            ("peer_closed", {"transport": "socket", "peer": peer, "port": port})]


def _connect(m: re.Match[str], msg: str) -> Classified:
    peer, port = _split_addr(m["addr"] or m["addr2"])
    err = m["err"] or m["err2"] or m["ret"]
    return [_net("socket", "connect_failed", peer, port, detail=(err or msg[m.start():]).strip())]


def _socket_at(error: str, detail: Callable[[re.Match[str], str], str]) -> _Build:
    """A socket network_error named `error` at the peer address the pattern caught, if any."""

    def build(m: re.Match[str], msg: str) -> Classified:
        peer, port = _split_addr(m["addr"])
        return [_net("socket", error, peer, port, detail=detail(m, msg))]

    return build


# Two ranks of one communicator on the same physical GPU (failure-signatures.md section 10.2; NVIDIA/nccl
# src/init.cc initTransportsRank, NCCL 2.10-2.29): `Duplicate GPU detected : rank <r> and rank <k> both on
# CUDA device <busId>`. The ranks are communicator ranks: global ranks for the default group.
DUP_GPU_RE = re.compile(r"Duplicate GPU detected : rank (?P<a>\d{1,7}) and rank (?P<b>\d{1,7}) both on "
                        r"CUDA device (?P<bus>[0-9a-fA-F]{1,16})")


def _dup_gpu(m: re.Match[str], msg: str) -> Classified:
    ranks = sorted({int(m["a"]), int(m["b"])})
    return [("nccl_duplicate_gpu", {"comm_ranks": ranks, "bus_id": m["bus"].lower()})]


# NET/IB messages first, only when the message names NET/IB; otherwise the first pattern that hits decides.
_IB_RULES: tuple[_Rule, ...] = (
    (IB_COMPLETION_RE, _ib_completion),
    (IB_ASYNC_RE, lambda m, msg: _ib_async(m["event"].strip())),
    (IB_MISMATCH_RE,
     lambda m, msg: [_net("ib", "collective_mismatch", m["peer"], to_count(m["port"]), detail=msg.strip())]),
)
_RULES: tuple[_Rule, ...] = (
    (DUP_GPU_RE, _dup_gpu),
    (VERBS_RE, lambda m, msg: [_net("ib", "verbs_call_failed", detail=_from(m, msg))]),
    (SOCK_CALL_RE, _socket_call),
    (CLOSED_RE, _closed),
    (CONNECT_RE, _connect),
    (ACCEPT_RE, lambda m, msg: [_net("socket", "accept_failed", detail=m["err"].strip())]),
    (TRUNC_RE, _socket_at("message_truncated", _from)),
    (IFACE_RE, _socket_at("no_interface", lambda m, msg: m.group(0))),
    (BOOT_ROOT_RE, lambda m, msg: [_net("socket", "bootstrap_mismatch", detail=_from(m, msg))]),
    (PROXY_OP_RE,
     lambda m, msg: [_net("socket", "proxy_error", status=to_count(m["res"]), detail=_from(m, msg))]),
    (PROXY_POLL_RE, lambda m, msg: [_net("socket", "proxy_poll_failed", detail=m["err"].strip())]),
    (PROXY_CALL_RE, lambda m, msg: [_net("socket", "proxy_call_failed", f"tpRank {m['tp']}",
                                         status=to_count(m["res"]), detail=_from(m, msg))]),
    (SERVICE_CLOSED_RE, lambda m, msg: [("peer_closed", {"transport": "socket",
                                                         "peer": f"localRank {m['lr']}", "port": None,
                                                         "peer_local_rank": to_count(m["lr"])})]),
    (CUDA_FAIL_RE, lambda m, msg: [("cuda_error", {"error": classify_cuda(m["msg"]), "message": m["msg"],
                                                   "status": to_int(m["code"])})]),
)


def classify_message(msg: str) -> Classified:
    """Specific events (network_error, peer_closed, cuda_error) named by one NCCL WARN/INFO message text."""
    for rx, build in (*_IB_RULES, *_RULES) if "NET/IB" in msg else _RULES:
        m = rx.search(msg)
        if m:
            return build(m, msg)
    return []


MAX_ENV_VERSIONS = 64  # (rank, local rank, version) keys of ProcessGroupNCCL environments lines kept per file


@dataclass
class _ErrorBlock:
    """A torch `NCCL error in:` message whose detail and `Last error:` lines follow on the next lines."""

    head: LogLine
    fields: Fields
    awaiting_last: bool = False
    done: bool = False
    seen: int = 0
    cut: str | None = None  # the head line's cut-off version tail (`, N`), completed by the next line
    extra: list[tuple[str, Fields]] = field(default_factory=list)
    headless: bool = False  # began at the detail line: the `NCCL error in:` line above it was cut


class NcclParser(Parser):
    """NCCL library lines and torch's NCCL API failures.

    Example: `node07:41233:41410 [3] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed`
    """

    name = "nccl"
    triggers = ("NCCL WARN", "NCCL version", "NCCL error", " nranks ", "Cuda failure", "[Service thread]",
                "remote error detected", "Bootstrap : Using", "Bootstrap: Using", "ncclUnhandledCudaError",
                "ncclSystemError", "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage",
                "ncclRemoteError")
    emits = (
        EventSpec("nccl_version", ("version", "cuda", "pid", "nccl_host", "source"),
                  "NCCL version from the banner (source=banner), torch's error suffix (torch_error) or its "
                  "environments line (torch_env); 21.0.3 is reported as 2.10.3"),
        EventSpec("nccl_comm_init", ("comm", "comm_rank", "nranks", "cuda_dev", "bus_id", "phase", "pid",
                                     "nccl_host", "comm_id", "api", "parent", "color", "key", "nvml_dev",
                                     "total_s"),
                  "communicator lifecycle: phase init_start, init_complete, destroy_complete, "
                  "abort_complete, init_timings"),
        EventSpec("nccl_warn", ("message", "pid", "nccl_host", "src", "cuda_dev"), "any NCCL WARN line"),
        EventSpec("nccl_duplicate_gpu", ("comm_ranks", "bus_id", "pid", "nccl_host"),
                  "`Duplicate GPU detected : rank <r> and rank <k> both on CUDA device <busId>` (NCCL "
                  "2.10-2.29): the two communicator ranks sharing one GPU"),
        EventSpec("nccl_bootstrap", ("iface", "ip", "pid", "nccl_host"),
                  "`Bootstrap : Using <if>:<ip><port>` (INFO): the interface and address of this process's "
                  "NCCL, which peers' WARN lines name as `peer <ip><port>`"),
        EventSpec("network_error", ("transport", "peer", "port", "status", "error", "detail", "pid",
                                    "nccl_host"),
                  "IB completion/async/verbs errors (transport=ib), socket, bootstrap and proxy errors "
                  "(transport=socket); `error` is a token such as retry_exceeded, connection_reset"),
        EventSpec("peer_closed", ("transport", "peer", "port", "peer_local_rank", "pid", "nccl_host"),
                  "NCCL socket closed by the remote peer, or the proxy saw a local rank close its "
                  "connection"),
        EventSpec("cuda_error", ("error", "message", "status", "pid", "nccl_host"),
                  "`Cuda failure 'msg'` inside NCCL (status = driver error code when printed)"),
        EventSpec("nccl_error", ("error_type", "reason", "nccl_version", "location", "detail", "last_error",
                                 "timeout", "pg", "pg_rank", "stated_rank", "from_pg_rank"),
                  "torch's `NCCL error in: F:L, REASON, NCCL version X` (+ `ncclXxxError:` and `Last error:` "
                  "lines), or a propagated `remote error detected from rank` (error_type=remote_error)"),
    )
    examples = (
        Example("NCCL version 2.18.5+cuda12.2", "nccl_version",
                {"version": "2.18.5", "cuda": "12.2", "source": "banner"},
                "NCCL <= 2.21 (VERSION/WARN level)"),
        Example("node07:41233:41233 [0] NCCL INFO NCCL version 2.22.3+cuda12.6", "nccl_version",
                {"version": "2.22.3", "cuda": "12.6", "pid": 41233, "nccl_host": "node07"},
                "NCCL 2.22+ INFO"),
        Example("[I ProcessGroupNCCL.cpp:911] [Rank 0] ProcessGroupNCCL environments: NCCL version: 2.20.5, "
                "TORCH_NCCL_ASYNC_ERROR_HANDLING: "
                "3", "nccl_version", {"version": "2.20.5", "source": "torch_env"},
                "torch 2.2+ with TORCH_CPP_LOG_LEVEL=INFO"),
        Example("\ngpu-b:4417:4417 [0] init.cc:706 NCCL WARN Duplicate GPU detected : rank 15 and rank 8 "
                "both on CUDA device 1b000", "nccl_duplicate_gpu",
                {"comm_ranks": [8, 15], "bus_id": "1b000", "nccl_host": "gpu-b"}, "NCCL 2.10-2.29"),
        Example("trn-b7:50211:50211 [2] NCCL INFO Bootstrap : Using ib0:10.71.3.40<0>", "nccl_bootstrap",
                {"iface": "ib0", "ip": "10.71.3.40", "pid": 50211, "nccl_host": "trn-b7"}, "NCCL 2.10-2.2x"),
        Example("node07:41233:41410 [3] NCCL INFO comm 0x5590ec4762b0 rank 2 nranks 8 cudaDev 3 busId 85000 "
                "- Init COMPLETE", "nccl_comm_init",
                {"comm": "0x5590ec4762b0", "comm_rank": 2, "nranks": 8, "cuda_dev": 3, "bus_id": "85000",
                 "phase": "init_complete", "pid": 41233, "nccl_host": "node07"}, "NCCL 2.10-2.17"),
        Example("node07:41233:41233 [1] NCCL INFO comm 0x55df01b24dd0 rank 9 nranks 16 cudaDev 1 nvmlDev 1 "
                "busId 7000 commId 0x2114bc51af4fb978 - Init COMPLETE", "nccl_comm_init",
                {"comm_rank": 9, "nranks": 16, "cuda_dev": 1, "nvml_dev": 1, "bus_id": "7000",
                 "comm_id": "2114bc51af4fb978", "phase": "init_complete"}, "NCCL 2.18.3-2.20"),
        Example("node07:41233:41233 [1] NCCL INFO ncclCommInitRank comm 0x55df01b24dd0 rank 9 nranks 16 "
                "cudaDev 1 nvmlDev 1 busId 7000 commId 0x2114bc51af4fb978 - Init START", "nccl_comm_init",
                {"api": "ncclCommInitRank", "comm_rank": 9, "phase": "init_start"}, "NCCL 2.21-2.28"),
        Example("node07:41233:41233 [1] NCCL INFO ncclCommSplit comm 0x7f10 rank 1 nranks 4 cudaDev 1 "
                "nvmlDev 1 busId 1b000 parent 0x55df01b24dd0 splitCount 1 color 2003953581 key 1- Init START",
                "nccl_comm_init", {"api": "ncclCommSplit", "comm_rank": 1, "nranks": 4,
                                   "parent": "0x55df01b24dd0",
                                   "color": 2003953581, "key": 1, "phase": "init_start"}, "NCCL 2.24-2.28"),
        Example("node07:41233:41233 [1] NCCL INFO [Rank 9] ncclCommInitRankConfig comm 0x55df01b24dd0 rank 9 "
                "nranks 16 cudaDev 1 nvmlDev 1 busId 7000 commId 0x2114bc51af4fb978 - Init START",
                "nccl_comm_init", {"comm_rank": 9, "api": "ncclCommInitRankConfig", "phase": "init_start"},
                "NCCL 2.29-2.30"),
        Example("node07:41233:41233 [1] NCCL INFO Init timings - ncclCommInitRank: rank 9 nranks 16 total "
                "1.32 (kernels 0.21, alloc 0.01, bootstrap 0.55, allgathers 0.02, topo 0.30, graphs 0.03)",
                "nccl_comm_init", {"phase": "init_timings", "comm_rank": 9, "nranks": 16, "total_s": 1.32},
                "NCCL 2.26+"),
        Example("node07:41233:41233 [0] NCCL INFO comm 0x5590ec4762b0 rank 2 nranks 8 cudaDev 0 busId 85000 "
                "- Abort "
                "COMPLETE", "nccl_comm_init", {"phase": "abort_complete", "comm_rank": 2}, "NCCL 2.18+"),
        Example("\nnode07:41233:41410 [3] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed by "
                "remote peer node08<43890>", "nccl_warn",
                {"message": "socketProgress: Connection closed by remote peer node08<43890>", "pid": 41233,
                 "nccl_host": "node07", "src": "misc/socket.cc:484", "cuda_dev": 3}, "NCCL 2.10-2.25"),
        Example("node07:41233:41410 [3] misc/socket.cc:484 NCCL WARN socketProgress: Connection closed by "
                "remote peer node08<43890>", "peer_closed", {"transport": "socket", "peer": "node08",
                                                             "port": 43890}, "NCCL 2.18+"),
        Example("[2025-03-01 12:34:56] node07:41233:41410 [3] transport/net_ib.cc:2449 NCCL WARN NET/IB: Got "
                "completion from peer 10.1.2.3<51723> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
                "localGid ::ffff:10.1.2.7 remoteGids ::ffff:10.1.2.3 hca mlx5_3", "network_error",
                {"transport": "ib", "peer": "10.1.2.3", "port": 51723, "status": 12,
                 "error": "retry_exceeded",
                 "pid": 41233, "nccl_host": "node07"}, "NCCL 2.26-2.28"),
        Example("node07:41233:41410 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                "10.1.2.3<51723> with error 12, opcode 0, len 0, vendor err 129", "network_error",
                {"transport": "ib", "status": 12, "error": "retry_exceeded"}, "NCCL 2.10-2.17"),
        Example("[2026-07-01 08:00:01] node07:41233:41410 [3] transport/net_ib.cc:2510 (ncclIbTest) NCCL "
                "WARN NET/IB: Got completion from peer 10.1.2.3<51723> with status=5 opcode=1 len=0 vendor "
                "err 249 (Send) hca "
                "mlx5_3", "network_error", {"status": 5, "error": "wr_flushed"}, "NCCL 2.30.7+"),
        Example("node07:41233:41399 [0] transport/net_ib.cc:110 NCCL WARN NET/IB : Got async event : "
                "port error", "network_error",
                {"transport": "ib", "error": "async_event", "detail": "port error"}, "NCCL 2.10+"),
        Example("node07:41233:41410 [0] misc/socket.cc:538 NCCL WARN socketProgressOpt: Call to recv from "
                "10.1.2.3<33759> failed : Connection reset by peer", "network_error",
                {"transport": "socket", "peer": "10.1.2.3", "port": 33759, "error": "connection_reset"},
                "NCCL 2.18+"),
        Example("node07:41233:41233 [0] misc/socket.cc:615 NCCL WARN socketStartConnect: Connect to "
                "10.1.2.3<43115> failed : Connection refused", "network_error",
                {"transport": "socket", "error": "connect_failed", "peer": "10.1.2.3"}, "NCCL 2.18"),
        Example("node07:41233:41410 [0] transport/net_socket.cc:561 NCCL WARN NET/Socket : peer "
                "10.1.2.3<52907> message truncated : receiving 2048 bytes instead of 1024", "network_error",
                {"transport": "socket", "error": "message_truncated", "peer": "10.1.2.3"}, "NCCL 2.10-2.11"),
        Example("[2026-01-12 04:10:31] node07:41233:41310 [1] misc/socket.cc:421 NCCL WARN ncclSocketInit: "
                "connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)",
                "network_error", {"transport": "socket", "error": "no_interface"},
                "NCCL 2.27, NCCL_SOCKET_IFNAME naming a missing interface"),
        Example("node07:41233:41233 [0] bootstrap.cc:720 NCCL WARN Bootstrap : no socket interface found",
                "network_error", {"transport": "socket", "error": "no_interface"}, "NCCL 2.10+"),
        Example("node07:41233:41233 [0] bootstrap.cc:301 NCCL WARN Bootstrap Root : rank 3 of 8 ranks has "
                "already checked in", "network_error", {"error": "bootstrap_mismatch"}, "NCCL 2.10-2.2x"),
        Example("node07:41233:41500 [0] proxy.cc:1523 NCCL WARN [Service thread] Error encountered "
                "progressing operation=Connect, res=3, closing connection", "network_error",
                {"transport": "socket", "error": "proxy_error", "status": 3}, "NCCL 2.1x+"),
        Example("node07:41233:41410 [1] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 7 peer "
                "10.1.2.3<36114> collective mismatch error, local size 16384 remote size "
                "8192", "network_error",
                {"transport": "ib", "error": "collective_mismatch", "peer": "10.1.2.3"}, "NCCL 2.1x+"),
        Example("node07:41233:41500 [2] NCCL INFO [Service thread] Connection closed by localRank 2",
                "peer_closed", {"peer": "localRank 2", "peer_local_rank": 2, "pid": 41233}, "NCCL 2.1x+"),
        Example("node07:41233:41410 [0] enqueue.cc:1021 NCCL WARN Cuda failure 'an illegal memory access was "
                "encountered'", "cuda_error", {"error": "illegal_memory_access", "pid": 41233}, "NCCL 2.10+"),
        Example("[2026-03-17 14:22:05] node07:41233:41410 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 1 "
                "'invalid argument'", "cuda_error", {"error": "invalid_argument", "status": 1}, "NCCL 2.26+"),
        Example("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
                "unhandled system error, NCCL version 2.10.3\nncclSystemError: System call (e.g. socket, "
                "malloc) or external library call failed or device error. It can be also caused by "
                "unexpected exit of a remote peer, you can check NCCL warnings for failure reason and see if "
                "there is connection closure by a peer.",
                "nccl_error", {"error_type": "ncclSystemError", "reason": "unhandled system error",
                               "nccl_version": "2.10.3",
                               "location": "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191"},
                "torch 1.12"),
        Example("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:957, "
                "unhandled cuda error, NCCL version 21.0.3\nncclUnhandledCudaError: Call to CUDA function "
                "failed.",
                "nccl_error", {"error_type": "ncclUnhandledCudaError", "nccl_version": "2.10.3"},
                "torch 1.10-1.12 (NCCL 2.10.3 spelled 21.0.3)"),
        Example("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:957, "
                "unhandled cuda error, NCCL version "
                "21.0.3", "nccl_version", {"version": "2.10.3", "source": "torch_error"},
                "torch 1.10-1.12"),
        Example("terminate called after throwing an instance of 'c10::Error'\n  what():  NCCL error in: "
                "../torch/csrc/distributed/c10d/NCCLUtils.hpp:181, unhandled cuda error, NCCL version "
                "21.0.3\nProcess Group destroyed on rank 2\nException raised from ncclCommAbort at "
                "../torch/csrc/distributed/c10d/NCCLUtils.hpp:181 (most recent call first):", "nccl_error",
                {"error_type": "ncclUnhandledCudaError", "detail": "Process Group destroyed on rank 2",
                 "location": "../torch/csrc/distributed/c10d/NCCLUtils.hpp:181", "stated_rank": 2},
                "torch 1.10-1.12"),
        Example("torch.distributed.DistBackendError: NCCL error in: "
                "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1251, internal error - please report "
                "this issue to the NCCL developers, NCCL version 2.18.6\nncclInternalError: Internal check "
                "failed.\nLast error:\nBootstrap : no socket interface found", "nccl_error",
                {"error_type": "ncclInternalError", "nccl_version": "2.18.6",
                 "last_error": "Bootstrap : no socket interface found"}, "torch 2.1 / NCCL 2.18"),
        Example("torch.distributed.DistBackendError: NCCL error in: "
                "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1251, internal error - please report "
                "this issue to the NCCL developers, NCCL version 2.18.6\nncclInternalError: Internal check "
                "failed.\nLast error:\nBootstrap : no socket interface "
                "found", "network_error", {"error": "no_interface", "transport": "socket"},
                "torch 2.1 / NCCL 2.18"),
        Example("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
                "NCCLUtils.hpp:317, remote process exited or there was a network error, N\nCCL version "
                "2.21.5\nncclRemoteError: A call failed possibly due to a network error or a remote process "
                "exiting prematurely.\nLast error:\nsocketProgress: Connection closed by remote peer "
                "node11<51210>", "nccl_error",
                {"error_type": "ncclRemoteError", "nccl_version": "2.21.5", "reason":
                 "remote process exited or there was a network error"},
                "torch 2.5 / NCCL 2.21, the message cut before its version by a terminal's hard wrap"),
        Example("[rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 1] Process group watchdog thread "
                "terminated with exception: NCCL error: remote process exited or there was a network error, "
                "NCCL version 2.20.5\nncclRemoteError: A call failed possibly due to a network error or a "
                "remote process exiting prematurely.\nLast error:\nsocketProgress: Connection closed by "
                "remote peer node08<43890>",
                "nccl_error", {"error_type": "ncclRemoteError", "nccl_version": "2.20.5", "location": None,
                               "last_error":
                                   "socketProgress: Connection closed by remote peer node08<43890>"},
                "torch 2.3"),
        Example("[rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 1] Process group watchdog thread "
                "terminated with exception: NCCL error: remote process exited or there was a network error, "
                "NCCL version 2.20.5\nncclRemoteError: A call failed possibly due to a network error or a "
                "remote process exiting prematurely.\nLast error:\nsocketProgress: Connection closed by "
                "remote peer node08<43890>",
                "peer_closed", {"transport": "socket", "peer": "node08"}, "torch 2.3"),
        Example("[rank6]: ncclUnhandledCudaError: Call to CUDA function failed.\n[rank6]: Last error:\n"
                "[rank6]: Cuda failure 'an illegal memory access was encountered'",
                "nccl_error", {"error_type": "ncclUnhandledCudaError", "reason": None,
                               "last_error": "Cuda failure 'an illegal memory access was encountered'"},
                "torch 2.x (constructed: the message pasted without its `NCCL error in:` line)"),
        Example("[rank0]: torch.distributed.DistBackendError: NCCL error in: "
                "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, invalid usage (run with "
                "NCCL_DEBUG=WARN for details), NCCL version 2.26.2\n[rank0]: ncclInvalidUsage: This usually "
                "reflects invalid usage of NCCL library.\n[rank0]: Last error:\n[rank0]: Error: network not "
                "found.", "nccl_error",
                {"error_type": "ncclInvalidUsage", "nccl_version": "2.26.2",
                 "reason": "invalid usage (run with NCCL_DEBUG=WARN for details)",
                 "last_error": "Error: network not found."}, "torch 2.6+ / NCCL 2.26"),
        Example("[rank3]:[E312 10:01:02.418093275 ProcessGroupNCCL.cpp:2000] [PG ID 0 PG GUID 0(default_pg) "
                "Rank 3]  remote error detected from rank: 5", "nccl_error",
                {"error_type": "remote_error", "pg": "0", "pg_rank": 3, "stated_rank": 3, "from_pg_rank": 5},
                "torch 2.7+ (TORCH_NCCL_PROPAGATE_ERROR=1)"),
    )
    near_misses = (
        "node07:41233:41233 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
        "node07:41233:41233 [0] NCCL INFO NET/Socket : Using [0]eth0:10.9.8.7<0>",
        "node07:41233:41233 [0] NCCL INFO transport/net.cc:1302 -> 6",
        "node07:41233:41233 [0] NCCL INFO comm 0x55 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0",
        "[rank0]:[E ProcessGroupNCCL.cpp:1006] [Rank 0] found async exception when checking for NCCL errors",
        "Setting NCCL_DEBUG=INFO may print the NCCL version",
        "    raise RuntimeError(f'NCCL error in: {loc}')",
        "pip install nvidia-nccl-cu12==2.18.5  # pin the NCCL version",
        "grep 'NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, see above' issue.md",
        "**Question: is this NCCL WARN something I need to fix?**",
        "Every run prints a NCCL WARN at startup and then trains fine.",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
    )

    def __init__(self) -> None:
        self._block: _ErrorBlock | None = None
        # A long WARN that named nothing: (its line, message, pid and host), in case the next physical line
        # is the rest of it (see `_rest_of_cut_warn`).
        self._cut_warn: tuple[LogLine, str, Fields] | None = None   # (line, message, nccl_warn's fields)
        # ProcessGroupNCCL prints its environments line for every process group it creates: the version
        # it states is one fact per rank, so it becomes one event per rank and version in a file.
        # (Each key's event is kept with it, for `take_history`.)
        self._env_versions: dict[tuple[int | None, int | None, str], Event] = {}

    history = ("_env_versions",)

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        """A version this part gave first is dropped when `earlier` gave it already, or once the memo is
        full (this part's memo filled in the same order, so what it refused the joined one refuses too)."""
        if not self.same_as_fresh(earlier):
            return None
        known = dict(cast(NcclParser, earlier)._env_versions)
        out: dict[int, list[Event]] = {}
        for key, ev in self._env_versions.items():
            if key in known or len(known) >= MAX_ENV_VERSIONS:
                out[id(ev)] = []
            else:
                known[key] = ev
        self._env_versions = known
        return out

    def wants_more(self) -> bool:
        return self._block is not None or self._cut_warn is not None

    def _rest_of_cut_warn(self, line: LogLine) -> tuple[list[Event], bool]:
        """The events of the held WARN (`_cut_warn`), and whether `line` was the rest of its message.

        NCCL writes each message as one line of its own envelope (log-formats.md section 4.1), so a line
        right after a long WARN that has no envelope, starts with no blank and is no longer than the WARN's
        line is the rest of a message a terminal cut at its width (`... collective mismatch erro` /
        `r, local size ...`); the joined message is classified again.
        """
        assert self._cut_warn is not None
        head, msg, warn = self._cut_warn
        text = line.text
        found = None
        if not (not text or text[:1].isspace() or len(line.raw) > len(head.raw) or text.startswith("[")
                or "NCCL " in text or envelope(text) is not None):
            found = classify_message(msg + text)
        if not found:
            return self._release_cut_warn(), False
        self._cut_warn = None
        ctx = {"pid": warn["pid"], "nccl_host": warn["nccl_host"]}
        return [self.event("nccl_warn", head, message=msg + text, **warn),
                *(self.event(kind, head, **fields, **ctx) for kind, fields in found)], True

    def close(self) -> Iterable[Event]:
        return [*self._release_cut_warn(), *self._flush()]

    def _release_cut_warn(self) -> list[Event]:
        """The held WARN's event as it was (no line completed it)."""
        held, self._cut_warn = self._cut_warn, None
        if held is None:
            return []
        head, msg, warn = held
        return [self.event("nccl_warn", head, message=msg, **warn)]

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        if self._cut_warn is not None:
            held, joined = self._rest_of_cut_warn(line)
            if joined:
                return held
            out.extend(held)
        if self._block is not None:
            if self._continue(line):
                if self._block is not None and (self._block.done or self._block.seen > 6):
                    out.extend(self._flush())
                return out
            out.extend(self._flush())
        text = line.text
        if "nccl" in text:
            h = HEADLESS_CODE_RE.match(text)
            if h:
                self._block = _ErrorBlock(head=line, headless=True, fields={
                    "error_type": h["code"], "reason": None, "nccl_version": None, "location": None,
                    "detail": h["detail"].strip() or None, "last_error": None, "timeout": False})
                return out
        if "NCCL " in text:
            out.extend(self._envelope(line))
        if "NCCL e" in text or "NCCL t" in text:
            out.extend(self._torch_error(line))
        if "NCCL version: " in text:
            m = ENV_VERSION_RE.search(text)
            key = (line.rank, line.local_rank, m["ver"] if m else "")
            if m and key not in self._env_versions and len(self._env_versions) < MAX_ENV_VERSIONS:
                ev = self.event("nccl_version", line, version=normalize_version(m["ver"]), cuda=None,
                                pid=None, nccl_host=None, source="torch_env")
                self._env_versions[key] = ev
                out.append(ev)
        if "remote error detected" in text:
            m = REMOTE_RE.search(text)
            if m:
                out.append(self.event("nccl_error", line, error_type="remote_error", reason=m.group(0),
                                      nccl_version=None, location=None, from_pg_rank=to_count(m["src"]),
                                      **pg_fields(text[: m.start()])))
        return out

    # -- NCCL_DEBUG lines ----------------------------------------------------------------------
    def _envelope(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        m = BANNER_RE.search(text)
        env = envelope(text)
        host = env["host"] if env else None
        pid = to_count(env["pid"]) if env else None
        if m:
            out.append(self.event("nccl_version", line, version=normalize_version(m["ver"]), cuda=m["cuda"],
                                  pid=pid, nccl_host=host, source="banner"))
        if env is None:
            if "Cuda failure" in text:
                out.extend(self._specific(line, text, pid, host))
            return out
        msg = (env["msg"] or "").strip()
        ctx: Fields = {"pid": pid, "nccl_host": host}
        if env["lvl"] == "WARN":
            src = f"{env['src']}:{env['line']}" if env["src"] else None
            if len(line.raw) >= CUT_WARN_MIN and not classify_message(msg):
                self._cut_warn = (line, msg, {"src": src, "cuda_dev": to_count(env["dev"]), **ctx})
            else:
                out.append(self.event("nccl_warn", line, message=msg, src=src, cuda_dev=to_count(env["dev"]),
                                      **ctx))
        if " nranks " in msg:
            out.extend(self._lifecycle(line, msg, ctx))
        if env["lvl"] == "INFO" and msg.startswith("Bootstrap"):
            b = BOOTSTRAP_IF_RE.match(msg)
            if b:
                out.append(self.event("nccl_bootstrap", line, iface=b["iface"], ip=b["ip"], **ctx))
        out.extend(self._specific(line, msg, pid, host))
        return out

    def _lifecycle(self, line: LogLine, msg: str, ctx: Fields) -> list[Event]:
        m = COMM_RE.search(msg)
        if m:
            rest = msg[m.end():]
            phase = COMM_PHASE_RE.search(rest)
            parent = COMM_PARENT_RE.search(rest)
            color = COMM_COLOR_RE.search(rest)
            comm_id = COMM_ID_RE.search(rest)
            return [self.event(
                "nccl_comm_init", line, comm=m["comm"], comm_rank=to_count(m["rank"]),
                nranks=to_count(m["nranks"]),
                cuda_dev=to_count(m["cuda_dev"]), nvml_dev=to_count(m["nvml_dev"]), bus_id=m["bus_id"],
                api=m["api"], comm_id=comm_id["comm_id"] if comm_id else None,
                parent=parent["parent"] if parent else None,
                color=to_int(color["color"]) if color else None, key=to_int(color["key"]) if color else None,
                phase=phase["phase"].lower().replace(" ", "_") if phase else None, **ctx,
            )]
        t = TIMINGS_RE.search(msg)
        if t:
            total = None
            try:
                total = float(t["total"]) if t["total"] else None
            except ValueError:
                total = None
            return [self.event("nccl_comm_init", line, comm=None, comm_rank=to_count(t["rank"]),
                               nranks=to_count(t["nranks"]), api=t["api"], phase="init_timings",
                               total_s=total,
                               **ctx)]
        return []

    def _specific(self, line: LogLine, msg: str, pid: int | None, host: str | None) -> list[Event]:
        return [self.event(kind, line, **fields, pid=pid, nccl_host=host)
                for kind, fields in classify_message(msg)]

    # -- torch's NCCL error messages -----------------------------------------------------------
    def _torch_error(self, line: LogLine) -> list[Event]:
        text = line.text
        m = TORCH_ERROR_RE.search(text) or TORCH_ASYNC_RE.search(text)
        cut = None
        if not m:
            m = TORCH_ERROR_CUT_RE.search(text.rstrip())
            if not m or not VERSION_TAIL.startswith(m["cut"] or ""):
                return []
            cut = m["cut"] or ""
        version = normalize_version(m["ver"]) if cut is None else None
        errstr = m["errstr"].strip()
        error_type = next((t for needle, t in ERRSTR_TYPES if needle in errstr), None)
        fields: Fields = {
            "error_type": error_type, "reason": errstr, "nccl_version": version,
            "location": m.groupdict().get("loc"), "detail": None, "last_error": None,
            "timeout": m["kind"] == "timeout", **pg_fields(text[: m.start()]),
        }
        out: list[Event] = []
        if version is not None:
            out.append(self.event("nccl_version", line, version=version, cuda=None, pid=None, nccl_host=None,
                                  source="torch_error"))
        self._block = _ErrorBlock(head=line, fields=fields, cut=cut)
        if cut is not None:
            return out
        tail = text[m.end():]
        if "\\n" in tail or "\n" in tail:  # the whole message on one physical line (repr / JSON)
            code = INLINE_CODE_RE.search(tail)
            if code:
                fields["error_type"], fields["detail"] = code["code"], code["detail"].strip()
            last = INLINE_LAST_RE.search(tail)
            if last:
                self._set_last(last["last"].strip())
            out.extend(self._flush())
        return out

    def _continue(self, line: LogLine) -> bool:
        """Consume `line` as part of the open error block; False when it is not a continuation."""
        block = self._block
        assert block is not None
        block.seen += 1
        text = line.text
        if block.cut is not None:
            cut, block.cut = block.cut, None
            v = VERSION_TAIL_RE.match(text)
            if v and VERSION_TAIL.startswith(cut + v["head"]) and len(cut + v["head"]) == len(VERSION_TAIL):
                block.fields["nccl_version"] = normalize_version(v["ver"])
                return True
        if block.awaiting_last:
            self._set_last(text.strip())
            return True
        m = CODE_RE.match(text)
        if m and block.fields["detail"] is None:
            block.fields["error_type"] = m["code"]
            block.fields["detail"] = m["detail"].strip() or None
            return True
        if UNKNOWN_RE.match(text):
            return True
        m = LAST_ERROR_RE.match(text)
        if m:
            inline = m["inline"].strip()
            if inline:
                self._set_last(inline)
            else:
                block.awaiting_last = True
            return True
        m = ABORT_REASON_RE.match(text)
        if m and block.fields["detail"] is None:
            block.fields["detail"] = m["reason"]
            # The abort reason names the aborting process group's own rank (ProcessGroupNCCL's `rank_`), as
            # the work prefix `[Rank N]` does; a prefix naming a process group other than the default wins.
            f = block.fields
            if m["rank"] is not None and f.get("stated_rank") is None and f.get("pg") is None:
                f["stated_rank"] = to_count(m["rank"])
            return True
        return False

    def _set_last(self, text: str) -> None:
        block = self._block
        assert block is not None
        block.awaiting_last = False
        block.done = True
        if not text or text.startswith("Unknown NCCL Error"):
            return
        env = envelope(text)
        msg = (env["msg"] or "").strip() if env else text
        block.fields["last_error"] = msg
        block.extra.extend(classify_message(msg))

    def _flush(self) -> list[Event]:
        block, self._block = self._block, None
        if block is None:
            return []
        head = block.head
        if block.headless and not block.extra:
            return []   # a cut message whose `Last error:` says nothing NCCL-specific: not read
        out = [self.event("nccl_error", head, **block.fields)]
        for kind, fields in block.extra:
            out.append(self.event(kind, head, **fields, pid=None, nccl_host=None))
        return out
