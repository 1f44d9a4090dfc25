"""gloo backend errors: transport timeouts, peers closing sockets, socket errors and mesh setup failures."""

from __future__ import annotations

from collections.abc import Iterable

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, to_count

LOC = r"(?:\[(?P<file>[^\[\]\s]{1,255}):(?P<line>\d{1,8})\] )?"
PEER = r"\[(?P<ip>[^\[\]]{1,255})\]:(?P<port>\d{1,10})"
TIMEOUT_RE = re.compile(
    LOC + r"Timed out waiting (?P<ms>\d+) ?ms for (?P<io>recv|send) operation to complete"
)
CLOSED_RE = re.compile(LOC + r"Connection closed by peer " + PEER)
SOCKET_RE = re.compile(
    LOC + r"(?P<kind>Read error|Write error|Read timeout|Write timeout|Connect timeout) " + PEER
    + r"(?:: ?(?P<err>[^.\n]{0,1024}))?"
)
PAIR_CLOSURE_RE = re.compile(r"Application timeout caused pair closure")
MESH_RE = re.compile(r"Gloo connectFullMesh failed with (?P<inner>.*)")
# c10d's base `Work::wait(timeout)` (torch/csrc/distributed/c10d/Work.cpp): when the work a rank waits on
# with `work.wait(timeout=...)` has not completed within that timeout, it raises `Operation timed out!`
# (gloo's async work does not override it; ProcessGroupNCCL's has its own message). The rank timed out
# waiting in a collective: the blocking-wait path of log-formats.md section 2 ("main/user thread:
# `work.wait()` / blocking-wait path; raises Python RuntimeError").
WORK_WAIT_RE = re.compile(r"(?:^|(?:RuntimeError|DistBackendError)(?: ?:)? )Operation timed out!$")
LOOPBACK_RE = re.compile(r"Unable to resolve hostname to a \(local\) address\. Using the loopback address")
# gloo's TCP device for an interface named by GLOO_SOCKET_IFNAME (gloo/transport/tcp/device.cc
# `lookupAddrForIface`: `GLOO_ENFORCE(ifa != nullptr, "Unable to find address for: ", iface)`), raised by
# ProcessGroupGloo's createDeviceForInterface while the process group is created: this host has no such
# interface (or it holds no address).
NO_IFACE_RE = re.compile(r"Unable to find address for: (?P<iface>[^\s,;]{1,64})")
INNER_PEER_RE = re.compile(PEER)
# gloo's full-mesh setup of a process group's context reports on stdout, once per process and group, how many
# peers it connected to (`[Gloo] Rank <r> is connected to <n> peer ranks. Expected number of connected peer
# ranks is : <m>`; gloo rendezvous `Context::connectFullMesh`, linked into libtorch_cpu: the three pieces of
# the text are in `strings libtorch_cpu.so` of torch 2.9.1, 2.13.0 and 2.14.1 alike). `<r>` is the rank in
# that group and `<m> + 1` the group's size: a group rank, not a global one, and a size that is the world's
# only for the default group (a `new_group` prints its own line).
MESH_UP_RE = re.compile(
    r"\[Gloo\] Rank (?P<rank>\d{1,7}) is connected to (?P<n>\d{1,7}) peer ranks\. "
    r"Expected number of connected peer ranks is : (?P<m>\d{1,7})")

SOCKET_ERRORS = {"Read error": "read_error", "Write error": "write_error", "Read timeout": "read_timeout",
                 "Write timeout": "write_timeout", "Connect timeout": "connect_timeout"}


class GlooParser(Parser):
    """gloo transport failures as torch re-raises them (gloo has no watchdog: the calling thread reports).

    Example: `[tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete`
    """

    name = "gloo"
    triggers = ("Timed out waiting", "Operation timed out!", "pair closure", "closed by peer",
                "connectFullMesh", "error [",
                "timeout [",
                "Unable to resolve hostname", "peer ranks", "Unable to find address for")
    emits = (
        EventSpec("hang_detected", ("detector", "timeout_ms", "io", "src"),
                  "gloo `Timed out waiting Nms for recv|send operation` (io = recv or send); c10d's "
                  "`Operation timed out!` of `work.wait(timeout=...)` (detector blocking_wait)"),
        EventSpec("peer_closed", ("transport", "peer", "port", "src"),
                  "gloo `Connection closed by peer [ip]:port`"),
        EventSpec("network_error", ("transport", "peer", "port", "error", "detail", "src"),
                  "gloo socket Read/Write error or timeout, Connect timeout"),
        EventSpec("gloo_error", ("error", "peer", "port", "detail"),
                  "connectFullMesh failure, pair closure after a timeout, no address for the interface "
                  "GLOO_SOCKET_IFNAME names (error=interface_not_found, detail = the interface)"),
        EventSpec("gloo_mesh", ("group_rank", "group_size", "connected"),
                  "gloo's `[Gloo] Rank <r> is connected to <n> peer ranks. Expected number of connected peer "
                  "ranks is : <m>` after a process group's mesh setup (group_rank r, group_size m + 1, "
                  "connected n): context, no failure"),
        EventSpec("gloo_warning", ("warning",),
                  "ProcessGroupGloo's W `Unable to resolve hostname ... Using the loopback address as "
                  "fallback` (warning=loopback_fallback): context, no failure (log-formats.md section 7: "
                  "only a job spanning hosts then fails, and that failure is a connect line of its own)"),
    )
    examples = (
        Example("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
                "waiting 1800000ms for recv operation to complete", "hang_detected",
                {"detector": "gloo", "timeout_ms": 1800000, "io": "recv",
                 "src": "../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81"}, "torch 1.10-2.x"),
        Example("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] "
                "Timed out waiting 30000ms for send operation to complete", "hang_detected",
                {"detector": "gloo", "timeout_ms": 30000, "io": "send"}, "torch 2.5+"),
        Example("RuntimeError: "
                "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
                "waiting 3000ms for recv operation to complete", "hang_detected",
                {"detector": "gloo", "timeout_ms": 3000, "io": "recv"}, "torch 2.13 (observed here)"),
        Example("[rank2]: RuntimeError: Operation timed out!", "hang_detected",
                {"detector": "blocking_wait", "timeout_ms": None, "io": None},
                "torch 2.x, work.wait(timeout=...) on an async gloo collective (Work.cpp; written here)"),
        Example("  RuntimeError: Operation timed out!", "hang_detected", {"detector": "blocking_wait"},
                "torch 2.x, torchrun failure summary (written here)"),
        Example("RuntimeError: Application timeout caused pair closure", "gloo_error",
                {"error": "pair_closure_after_timeout"}, "torch 1.10+ (also observed here with torch 2.13)"),
        Example("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
                "peer "
                "[10.0.0.12]:8594", "peer_closed", {"transport": "gloo", "peer": "10.0.0.12", "port": 8594,
                                                     "src":
                                                         "../third_party/gloo/gloo/transport/tcp/pair.cc:598"},
                "torch 1.10-2.x"),
        Example("[gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                "[2401:db00:ee"
                "f0:1100:3560:"
                "0:1c05:25d]:8"
                "594", "peer_closed", {"peer": "2401:db00:eef0:1100:3560:0:1c05:25d", "port": 8594},
                "torch 1.10+ (monitored_barrier inner error)"),
        Example("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
                "Connection closed by peer [127.0.0.1]:40843. This is typically caused by a remote worker "
                "crashing. Check the logs of the remote worker before reporting an error.", "peer_closed",
                {"transport": "gloo", "peer": "127.0.0.1", "port": 40843}, "torch 2.13 (observed here)"),
        Example("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:575] Read error "
                "[10.0.0.12]:29501: Connection reset by peer", "network_error",
                {"transport": "gloo", "error": "read_error", "peer": "10.0.0.12", "port": 29501,
                 "detail": "Connection reset by peer"}, "torch 1.10+"),
        Example("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:210] Connect timeout "
                "[10.0.0.12]:41235", "network_error", {"transport": "gloo", "error": "connect_timeout"},
                "torch 1.10+"),
        Example("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:640] Write timeout "
                "[10.0.0.12]:41235", "network_error", {"error": "write_timeout"}, "torch 2.x (sync mode)"),
        Example("RuntimeError: Gloo connectFullMesh failed with "
                "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no "
                "error", "gloo_error", {"error": "connect_full_mesh_failed"}, "torch 2.x"),
        Example("RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                "device.cc:84] ifa != nullptr. Unable to find address for: ib0", "gloo_error",
                {"error": "interface_not_found", "detail": "ib0"}, "torch 2.13 (observed here, probe 46)"),
        Example("[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. "
                "Using the loopback address as fallback. Manually set the network interface to bind to with "
                "GLOO_SOCKET_IFNAME. (function operator())", "gloo_warning", {"warning": "loopback_fallback"},
                "torch 1.10+"),
        Example("[Gloo] Rank 2 is connected to 3 peer ranks. Expected number of connected peer ranks is : 3",
                "gloo_mesh", {"group_rank": 2, "group_size": 4, "connected": 3}, "torch 2.9.1, 2.13, 2.14.1"),
    )
    near_misses = (
        "Rank 2 is connected to 3 peer ranks",
        "curl: (28) Operation timed out after 30001 milliseconds with 0 bytes received",
        "requests.exceptions.ConnectTimeout: Operation timed out! retrying in 5s",
        "Timed out waiting for pending UserRRefs to be confirmed by owner and parent.",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "socketProgress: Connection closed by remote peer node08<43890>",
        "DataLoader timed out after 60 seconds",
        "ssh: Connection closed by peer",
        "Timed out waiting 5 seconds for the checkpoint to flush",
        "Unable to find address for host db-primary in the inventory",
    )

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if "Timed out waiting" in text:
            m = TIMEOUT_RE.search(text)
            if m:
                out.append(self.event("hang_detected", line, detector="gloo", timeout_ms=to_count(m["ms"]),
                                      io=m["io"], src=_src(m)))
        if "Operation timed out!" in text and WORK_WAIT_RE.search(text.rstrip()):
            out.append(self.event("hang_detected", line, detector="blocking_wait", timeout_ms=None, io=None,
                                  src=None))
        if "closed by peer" in text:
            m = CLOSED_RE.search(text)
            if m:
                out.append(self.event("peer_closed", line, transport="gloo", peer=m["ip"],
                                      port=to_count(m["port"]),
                                      src=_src(m)))
        if "error [" in text or "timeout [" in text:
            m = SOCKET_RE.search(text)
            if m:
                err = (m["err"] or "").strip() or None
                out.append(self.event("network_error", line, transport="gloo", peer=m["ip"],
                                      port=to_count(m["port"]), error=SOCKET_ERRORS[m["kind"]], detail=err,
                                      src=_src(m)))
        if "pair closure" in text and PAIR_CLOSURE_RE.search(text):
            out.append(self.event("gloo_error", line, error="pair_closure_after_timeout", peer=None,
                                  port=None,
                                  detail=None))
        if "connectFullMesh" in text:
            m = MESH_RE.search(text)
            if m:
                inner = m["inner"].strip()
                p = INNER_PEER_RE.search(inner)
                out.append(self.event("gloo_error", line, error="connect_full_mesh_failed",
                                      peer=p["ip"] if p else None, port=to_count(p["port"]) if p else None,
                                      detail=inner or None))
        if "peer ranks" in text:
            m = MESH_UP_RE.search(text)
            if m:
                out.append(self.event("gloo_mesh", line, group_rank=to_count(m["rank"]),
                                      group_size=int(m["m"]) + 1, connected=to_count(m["n"])))
        if "Unable to find address for" in text:
            m = NO_IFACE_RE.search(text)
            if m:
                out.append(self.event("gloo_error", line, error="interface_not_found", peer=None, port=None,
                                      detail=m["iface"]))
        if "Unable to resolve hostname" in text and LOOPBACK_RE.search(text):
            # A W line (ProcessGroupGloo.cpp): gloo binds to 127.0.0.1, which is all a one-host job needs;
            # across hosts the peers' connects then fail, and those lines are the failure.
            out.append(self.event("gloo_warning", line, warning="loopback_fallback"))
        return out


def _src(m: re.Match[str]) -> str | None:
    return f"{m['file']}:{m['line']}" if m["file"] else None
