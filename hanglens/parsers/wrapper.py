"""Read DETAIL-mode (ProcessGroupWrapper) fingerprint checks and gloo monitored_barrier errors.

Example (torch 2.1+): `RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running
collective:
CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE, ...), but Rank 1 is running collective:
CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST, ...).Collectives differ in the following aspects:
Op type: ALLREDUCEvs BROADCAST` → `collective_mismatch` (ranks=[0, 1], ops=[ALLREDUCE, BROADCAST]).

The first rank a mismatch names is the writer's own (`pg->getRank()`, a rank of the wrapped PG), so it is
also reported as `stated_rank`. Fingerprints nest parentheses (`TensorOptions(dtype=float (default), ...)`),
so they are cut by balancing brackets, never by a lazy regex; ops and shapes are read from the fingerprints
(the diff text is glued, `ALLREDUCEvs BROADCAST`, and interleaved writers can run into it).
A monitored_barrier failure and the wrapper error that carries it are one hang: they are merged into one
`hang_detected` (detector=monitored_barrier) when they arrive within a few lines of each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, int_list, to_count, to_int

FP_OPEN = "CollectiveFingerPrint("
MISMATCH_RE = re.compile(
    r"Detected mismatch between collectives on ranks\.(?: ?Rank (?P<r>\d+) is running (?P<inc>inconsistent )?"
    r"collective: (?=CollectiveFingerPrint\())?"
)
SECOND_RE = re.compile(r"\)?,? ?but Rank (?P<k>\d+) is running collective: (?=CollectiveFingerPrint\()")
DIFF_RE = re.compile(r"Collectives differ in the following aspects:(?P<diff>.*)")
DIFF_LABEL_RE = re.compile(
    r"(?P<label>Sequence number|Op type|(?:Tensor )+shapes|(?:Tensor )+dtypes|"
    r"(?:Tensor )+devices): "
)
RUNNING_RE = re.compile(r"(?:\[Rank (?P<r>\d+)\]:? )?Running collective: (?=CollectiveFingerPrint\()")
WRAPPER_MB_RE = re.compile(
    r"Monitored Barrier encountered error running collective: (?=CollectiveFingerPrint\()"
)

SEQ_RE = re.compile(r"SequenceNumber=(?P<v>\d+)")
OP_RE = re.compile(r"OpType=(?P<v>[A-Z_][A-Z0-9_]*)")
SHAPE_RE = re.compile(r"TensorShape=(?=\[)")
DTYPES_RE = re.compile(r"TensorDtypes=(?P<v>.*?)(?:, TensorDeviceTypes=|$)")
DEVICE_RE = re.compile(r"device=(?P<v>[a-z_]+)")

MB_MISSING_RE = re.compile(
    r"(?:\[Rank (?P<me>\d+)\]: )?Ranks? (?P<ks>\d+(?:, ?\d+)*) failed to pass monitoredBarrier "
    r"in (?P<ms>\d+) ms"
)
MB_RANK0_TIMEOUT_RE = re.compile(r"Rank (?P<me>\d+) timed out in monitoredBarrier after (?P<ms>\d+) ms")
MB_POINTS_RE = re.compile(
    r"Rank (?P<me>\d+) successfully reached monitoredBarrier, but received errors while waiting "
    r"for send/recv "
    r"from rank 0"
)

ASPECTS = ("sequence_number", "op_type", "shape", "dtype", "device")
LABEL_ASPECT = {
    "Sequence number": "sequence_number",
    "Op type": "op_type",
    "shapes": "shape",
    "dtypes": "dtype",
    "devices": "device",
}
MB_WINDOW = 6  # lines within which a barrier error and the wrapper error are the same hang


def _balanced(text: str, start: int, opener: str = "(", closer: str = ")") -> tuple[str, int]:
    """The text inside the bracket opened just before `start`, and the index after its closer (EOL if cut)."""
    depth = 1
    for i in range(start, len(text)):
        ch = text[i]
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[start:i], i + 1
    return text[start:], len(text)


def _fingerprint(text: str, start: int) -> tuple[dict[str, Any], int]:
    """Fields of the `CollectiveFingerPrint(...)` starting at `start`, and where it ends."""
    body, end = _balanced(text, start + len(FP_OPEN))
    seq = SEQ_RE.search(body)
    op = OP_RE.search(body)
    shape: str | None = None
    sm = SHAPE_RE.search(body)
    if sm:
        inner, _ = _balanced(body, sm.end() + 1, "[", "]")
        shape = f"[{inner}]"
    dt = DTYPES_RE.search(body)
    dev = DEVICE_RE.search(body)
    return {
        "seq": to_int(seq["v"]) if seq else None,
        "op": op["v"] if op else None,
        "shape": shape,
        "dtype": dt["v"].strip() if dt and dt["v"].strip() else None,
        "device": dev["v"] if dev else None,
    }, end


def _diff_aspects(diff: str) -> list[str]:
    return [
        LABEL_ASPECT.get(m["label"].split()[-1], LABEL_ASPECT.get(m["label"], ""))
        for m in DIFF_LABEL_RE.finditer(diff)
    ]


class WrapperParser(Parser):
    """ProcessGroupWrapper (DETAIL) and monitored_barrier lines, torch 1.10-2.9 and 2.13."""

    name = "wrapper"
    triggers = ("CollectiveFingerPrint", "Detected mismatch between collectives", "monitoredBarrier")
    emits = (
        EventSpec(
            "collective_mismatch",
            ("seq", "seqs", "ranks", "ops", "shapes", "dtypes", "aspects", "stated_rank"),
            "ranks ran different collectives at one SequenceNumber; [writer, other] pairs",
        ),
        EventSpec(
            "collective_fingerprint",
            ("seq", "op", "shape", "dtype", "pg_rank"),
            "DETAIL INFO trace of the collective a rank is about to run",
        ),
        EventSpec(
            "monitored_barrier_failure",
            ("missing_ranks", "timeout_ms", "points_to_rank0", "stated_rank"),
            "monitored_barrier error; missing_ranks None when the message does not name them",
        ),
        EventSpec(
            "hang_detected",
            ("detector", "seq", "op", "timeout_ms", "stated_rank"),
            "monitored_barrier (or the DETAIL wrapper's barrier) found ranks that never arrived",
        ),
    )

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()
        self._mb: tuple[LogLine, dict[str, Any]] | None = None
        self._mb_left = 0

    def wants_more(self) -> bool:
        return self._mb is not None

    def close(self) -> Iterable[Event]:
        return self._flush_mb()

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        if self._mb is not None:
            self._mb_left -= 1
        text = line.text
        m = MISMATCH_RE.search(text)
        if m and m["r"] is None and text[m.end() :].strip():
            m = None  # prose that merely quotes the sentence; a real message names a rank or is cut here
        if m:
            out.extend(self._mismatch(line, m))
        else:
            m = RUNNING_RE.search(text)
            if m:
                fp, _ = _fingerprint(text, m.end())
                out.append(
                    self.event(
                        "collective_fingerprint",
                        line,
                        seq=fp["seq"],
                        op=fp["op"],
                        shape=fp["shape"],
                        dtype=fp["dtype"],
                        pg_rank=to_count(m["r"]),
                    )
                )
        m = WRAPPER_MB_RE.search(text)
        if m:
            fp, _ = _fingerprint(text, m.end())
            out.extend(self._hang(line, {"seq": fp["seq"], "op": fp["op"]}))
        out.extend(self._barrier(line))
        if self._mb is not None and self._mb_left <= 0:
            out.extend(self._flush_mb())
        return out

    def _mismatch(self, line: LogLine, m: re.Match[str]) -> list[Event]:
        text = line.text
        fps: list[dict[str, Any] | None] = [None, None]
        ranks: list[int | None] = [to_count(m["r"]), None]
        pos = m.end()
        if text.startswith(FP_OPEN, pos):
            fps[0], pos = _fingerprint(text, pos)
            m2 = SECOND_RE.match(text, pos) or SECOND_RE.search(text, pos, pos + 4)
            if m2:
                ranks[1] = to_count(m2["k"])
                fps[1], pos = _fingerprint(text, m2.end())
        dm = DIFF_RE.search(text, pos)
        aspects = set(_diff_aspects(dm["diff"])) if dm else set()
        a, b = fps
        if a is not None and b is not None:
            for name, aspect in (
                ("seq", "sequence_number"),
                ("op", "op_type"),
                ("shape", "shape"),
                ("dtype", "dtype"),
                ("device", "device"),
            ):
                if a[name] != b[name]:
                    aspects.add(aspect)

        def pair(key: str) -> list[Any]:
            return [fp[key] if fp is not None else None for fp in fps]

        seqs = pair("seq")
        fields: dict[str, Any] = {
            "seq": seqs[0] if seqs[0] is not None else seqs[1],
            "seqs": seqs,
            "ranks": ranks,
            "ops": pair("op"),
            "shapes": pair("shape"),
            "dtypes": pair("dtype"),
            "aspects": [x for x in ASPECTS if x in aspects],
            "stated_rank": ranks[0],
        }
        key = ("mismatch", line.rank, line.attempt, tuple(ranks), tuple(seqs), tuple(fields["ops"]))
        if key in self._seen:
            return []
        self._seen.add(key)
        return [self.event("collective_mismatch", line, **fields)]

    def _barrier(self, line: LogLine) -> list[Event]:
        text = line.text
        fields: dict[str, Any] | None = None
        m = MB_MISSING_RE.search(text)
        if m:
            fields = {
                "missing_ranks": int_list(m["ks"]),
                "timeout_ms": to_count(m["ms"]),
                "points_to_rank0": False,
                "stated_rank": to_count(m["me"]),
            }
        else:
            m = MB_RANK0_TIMEOUT_RE.search(text)
            if m:
                fields = {
                    "missing_ranks": None,
                    "timeout_ms": to_count(m["ms"]),
                    "points_to_rank0": False,
                    "stated_rank": to_count(m["me"]),
                }
            else:
                m = MB_POINTS_RE.search(text)
                if m:
                    fields = {
                        "missing_ranks": None,
                        "timeout_ms": None,
                        "points_to_rank0": True,
                        "stated_rank": to_count(m["me"]),
                    }
        if fields is None:
            return []
        out: list[Event] = []
        key = (
            "mb",
            line.rank,
            line.attempt,
            *(tuple(v) if isinstance(v, list) else v for v in fields.values()),
        )
        if key not in self._seen:
            self._seen.add(key)
            out.append(self.event("monitored_barrier_failure", line, **fields))
        if not fields["points_to_rank0"]:
            out.extend(
                self._hang(line, {"timeout_ms": fields["timeout_ms"], "stated_rank": fields["stated_rank"]})
            )
        return out

    def _hang(self, line: LogLine, fields: dict[str, Any]) -> list[Event]:
        """Merge into the pending monitored-barrier hang (same rank, within MB_WINDOW lines) or start one."""
        out: list[Event] = []
        if self._mb is not None and self._mb[0].rank != line.rank:
            out.extend(self._flush_mb())
        if self._mb is None:
            base = {
                "detector": "monitored_barrier",
                "seq": None,
                "op": None,
                "timeout_ms": None,
                "stated_rank": None,
            }
            self._mb = (line, base)
            self._mb_left = MB_WINDOW
        merged = self._mb[1]
        for k, v in fields.items():
            if v is not None and merged.get(k) is None:
                merged[k] = v
        return out

    def _flush_mb(self) -> list[Event]:
        if self._mb is None:
            return []
        line, fields = self._mb
        self._mb = None
        key = ("hang", line.rank, line.attempt, fields["seq"], fields["op"], fields["timeout_ms"])
        if key in self._seen:
            return []
        self._seen.add(key)
        return [self.event("hang_detected", line, **fields)]

    examples = (
        # -- collective_mismatch ---------------------------------------------------------------------
        Example(
            "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
            "inconsistent "
            "collective: CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[8, 2], TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided "
            "(default), "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))",
            "collective_mismatch",
            {
                "seq": None,
                "ranks": [1, None],
                "ops": ["ALLGATHER", None],
                "shapes": ["[8, 2]", None],
                "dtypes": ["Float", None],
                "stated_rank": 1,
            },
            "torch 1.10-1.12 (constructed)",
        ),
        Example(
            "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
            "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[10], TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)), but Rank 2 is running "
            "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[12], TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)).",
            "collective_mismatch",
            {
                "seq": None,
                "ranks": [0, 2],
                "ops": ["ALLREDUCE", "ALLREDUCE"],
                "shapes": ["[10]", "[12]"],
                "aspects": ["shape"],
            },
            "torch 1.13-2.0 (constructed)",
        ),
        Example(
            "[rank0]: RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
            "collective: CollectiveFingerPrint(SequenceNumber=31, OpType=ALLREDUCE, TensorShape=[20, "
            "10], "
            "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, "
            "layout=Strided (default))), but Rank 1 is running collective: CollectiveFingerPrint("
            "SequenceNumber=31, OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, TensorDeviceTypes="
            "TensorOptions(dtype=float (default), device=cuda, layout=Strided (default))).Collectives "
            "differ "
            "in the following aspects:   Op type: ALLREDUCEvs BROADCAST  Tensor Tensor shapes: 20, 10vs "
            "1  "
            "Tensor Tensor dtypes: Floatvs Long",
            "collective_mismatch",
            {
                "seq": 31,
                "seqs": [31, 31],
                "ranks": [0, 1],
                "ops": ["ALLREDUCE", "BROADCAST"],
                "shapes": ["[20, 10]", "[1]"],
                "dtypes": ["Float", "Long"],
                "aspects": ["op_type", "shape", "dtype"],
                "stated_rank": 0,
            },
            "torch 2.1-2.9 (constructed)",
        ),
        Example(
            "RuntimeError: Detected mismatch between collectives on ranks. Rank 3 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=905, OpType=BROADCAST, TensorShape=[1], "
            "TensorDtypes=Long, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)), but Rank 0 is running "
            "collective: CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE).Collectives differ in the "
            "following aspects: \t Sequence number: 905vs 0  Op type: BROADCASTvs REDUCE  Tensor Tensor "
            "shapes: 1vs   Tensor Tensor dtypes: Longvs ",
            "collective_mismatch",
            {
                "seq": 905,
                "seqs": [905, 0],
                "ranks": [3, 0],
                "ops": ["BROADCAST", "REDUCE"],
                "shapes": ["[1]", None],
                "aspects": ["sequence_number", "op_type", "shape", "dtype", "device"],
            },
            "torch 2.1-2.9 short fingerprint (constructed)",
        ),
        Example(
            "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=0OpType=BARRIER), but Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=0OpType=GATHER).Collectives differ in the following "
            "aspects: "
            "  Op type: BARRIERvs GATHER",
            "collective_mismatch",
            {"seq": 0, "ranks": [0, 1], "ops": ["BARRIER", "GATHER"], "aspects": ["op_type"]},
            "torch 2.13 (observed here)",
        ),
        Example(
            "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[4], "
            "TensorDtypes=Double, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided "
            "(default), "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), "
            "but Rank 0 "
            "is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, "
            "TensorShape=[4], "
            "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, "
            "layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))).Collectives differ in the following aspects:   Tensor Tensor "
            "dtypes: "
            "Doublevs Float",
            "collective_mismatch",
            {"seq": 0, "ranks": [1, 0], "dtypes": ["Double", "Float"], "aspects": ["dtype"]},
            "torch 2.13 (observed here)",
        ),
        # -- collective_fingerprint ------------------------------------------------------------------
        Example(
            "[I ProcessGroupWrapper.cpp:420] [Rank 0] Running collective: "
            "CollectiveFingerPrint(OpType=ALLREDUCE, "
            "TensorShape=[4], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), "
            "device=cuda))",
            "collective_fingerprint",
            {"seq": None, "op": "ALLREDUCE", "shape": "[4]", "pg_rank": 0},
            "torch 1.13-2.0 (constructed)",
        ),
        Example(
            "[rank1]:[I1130 09:33:41.654666745 ProcessGroupWrapper.cpp:710] [Rank 1] Running collective: "
            "CollectiveFingerPrint(SequenceNumber=1, OpType=BROADCAST, TensorShape=[2], "
            "TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided "
            "(default), "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))",
            "collective_fingerprint",
            {"seq": 1, "op": "BROADCAST", "shape": "[2]", "dtype": "Float", "pg_rank": 1},
            "torch 2.1-2.9, 2.13 (observed here)",
        ),
        Example(
            "[rank0]:[I1130 09:33:02.854427378 ProcessGroupWrapper.cpp:710] [Rank 0] Running collective: "
            "CollectiveFingerPrint(SequenceNumber=0OpType=BARRIER)",
            "collective_fingerprint",
            {"seq": 0, "op": "BARRIER", "shape": None, "pg_rank": 0},
            "torch 2.13 (observed here)",
        ),
        # -- monitored_barrier_failure ---------------------------------------------------------------
        Example(
            "RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms\n Original exception: \n"
            "[gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:8594",
            "monitored_barrier_failure",
            {"missing_ranks": [1], "timeout_ms": 2000, "points_to_rank0": False},
            "torch 1.10-2.9 (constructed from the documentation)",
        ),
        Example(
            "[rank0]:[E1130 09:33:17.585731700 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed to "
            "pass "
            "monitoredBarrier in 2000 ms",
            "monitored_barrier_failure",
            {"missing_ranks": [1], "timeout_ms": 2000, "stated_rank": 0},
            "torch 2.13 (observed here)",
        ),
        Example(
            "RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 5000 ms",
            "monitored_barrier_failure",
            {"missing_ranks": [1, 3], "timeout_ms": 5000, "stated_rank": 0},
            "torch 1.10-2.9 wait_all_ranks (constructed)",
        ),
        Example(
            "RuntimeError: Rank 0 timed out in monitoredBarrier after 3000 ms.\nNo ranks successfully "
            "processed "
            "in monitoredBarrier.",
            "monitored_barrier_failure",
            {"missing_ranks": None, "timeout_ms": 3000, "stated_rank": 0},
            "torch 1.10-2.9 (constructed)",
        ),
        Example(
            "[rank2]:[E1130 09:33:17.586527900 ProcessGroupGloo.cpp:67] Rank 2 successfully reached "
            "monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check "
            "rank 0 "
            "logs for faulty rank.",
            "monitored_barrier_failure",
            {"points_to_rank0": True, "stated_rank": 2, "missing_ranks": None},
            "torch 1.10-2.9, 2.13 (observed here)",
        ),
        # -- hang_detected ---------------------------------------------------------------------------
        Example(
            "[rank0]:[E1130 09:33:30.138331809 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed to "
            "pass "
            "monitoredBarrier in 6000 ms\n"
            "[rank0]:[E1130 09:33:30.138362646 ProcessGroupGloo.cpp:67] [Rank 0]: Ranks 1 failed to pass "
            "monitoredBarrier in 6000 ms",
            "hang_detected",
            {"detector": "monitored_barrier", "timeout_ms": 6000, "stated_rank": 0},
            "torch 2.13 (observed here)",
        ),
        Example(
            "RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running collective: "
            "CollectiveFingerPrint(SequenceNumber=14, OpType=ALLREDUCE, TensorShape=[3], "
            "TensorDtypes=Float, "
            "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)). Error: \n"
            "[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:4493.",
            "hang_detected",
            {"detector": "monitored_barrier", "seq": 14, "op": "ALLREDUCE"},
            "torch 1.13-2.9, 2.13 (observed here)",
        ),
    )
    near_misses = (
        "Use dist.monitored_barrier() to find which rank did not reach the barrier",
        "Rank 2 successfully reached monitoredBarrier.",
        "[Rank 0] Running collective: all_reduce on 4 tensors",
        "debug: serialized CollectiveFingerPrint buffer of 128 bytes",
        "Detected mismatch between collectives on ranks is impossible with a single rank",
    )
