"""Read what a job says about its device mesh: the DeviceMesh it printed and each rank's coordinates in it.

A collective on a mesh dimension's group (`mesh["tp"].get_group()`, FSDP2's `fully_shard(mesh=...)`, tensor
parallel's functional collectives) completes only when every member of that group calls it; the members
are the ranks that share every other coordinate (torch/distributed/device_mesh.py: `init_device_mesh`
lays the world's ranks out row-major, `torch.arange(world_size).view(mesh_shape)`, and builds one group
per slice along each dimension). Torch prints no group's members when a collective fails; users print
the mesh or their coordinates:

- `DeviceMesh((pp=2, dp=2, tp=2), 'cpu', stride=(4, 2, 1))`: the repr of torch 2.9+ (sizes per named
  dimension and their strides; `, Mesh: [[...]]` with TORCH_DISTRIBUTED_DEBUG=DETAIL);
  `DeviceMesh('cuda', [[0, 1], [2, 3]], mesh_dim_names=('dp', 'tp'))`: torch 2.2-2.8, the ranks
  themselves (`DeviceMesh([[0, 1], [2, 3]], ...)` without the device type in some releases);
- a rank's coordinates: `[dp=1 tp=0]`, `pp0 dp1 tp0`, `replicate=0, shard=3` (two or more dimension names
  a parallel trainer uses, each with its index), or `get_coordinate()`'s tuple after the word
  `coordinate` (`coordinate [1, 0, 1]`; the dimensions are the printed mesh's).

Each distinct statement is one event per rank and file (a prefix on every line gives one event): the
analysis (hanglens/analysis/mesh.py) decides which statements are coordinates and which are the mesh's
shape (`mesh ready dp=2 tp=4`: the same text on every rank, sizes whose product is the world size).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any, ClassVar

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser

# Names parallel trainers give their mesh dimensions (torchtitan's dp_replicate/dp_shard/cp/tp/pp/ep,
# HSDP's replicate/shard, Megatron's tp/pp/dp/cp/ep): a statement of coordinates names two or more of them.
DIM_NAMES = ("dp_shard_cp", "dp_replicate", "dp_shard", "dp_cp", "replicate", "shard", "fsdp", "hsdp", "ddp",
             "dp", "tp", "pp", "cp", "ep", "sp")
_NAME = "|".join(DIM_NAMES)
# One dimension and its index: `dp=1`, `tp:0`, `pp0`, `dp_rank=2` (not inside a longer word: `step=3`).
PAIR_RE = re.compile(
    rf"(?<![\w.])(?P<name>{_NAME})(?:_rank|_idx|_coord)?(?:\s?[=:]\s?)?(?P<v>\d{{1,5}})(?![\w.])"
)
# Between two pairs of one statement: a space, a comma, a bar, a slash (`[dp=1 tp=0]`, `dp1/tp0`).
PAIR_GAP_RE = re.compile(r"^[\s,;|/]{1,3}$")
NEW_REPR_RE = re.compile(
    r"DeviceMesh\(\((?P<dims>[\w=, ]{1,400})\), '(?P<dev>\w{1,16})', stride=\((?P<stride>[\d, ()]{0,400})\)"
    r"(?:, Mesh: (?P<mesh>\[[\d\[\], ]{1,20000}\]))?\)"
)
OLD_REPR_RE = re.compile(
    r"DeviceMesh\((?:'(?P<dev>\w{1,16})', )?(?P<mesh>\[[\d\[\], ]{1,20000}\])"
    r"(?:, mesh_dim_names=\((?P<names>[\w', ]{0,400})\))?\)"
)
COORD_RE = re.compile(r"\b[Cc]oord(?:inate)?s?\b[^\[(\n]{0,24}[\[(](?P<vals>\d{1,5}(?:, ?\d{1,5}){1,7})[\])]")
INT_RE = re.compile(r"\d{1,7}")
QUOTED_RE = re.compile(r"'(\w{1,64})'")
_NAMED_SIZE_RE = re.compile(r"^(?P<name>\w{1,64})=(?P<size>\d{1,7})$")
MAX_STATEMENTS = 8   # distinct statements kept per rank and file (a prefix repeats one; a shape adds one)


def _ints(text: str) -> list[int]:
    return [int(x) for x in INT_RE.findall(text)]


def _nested(text: str) -> tuple[list[int], list[int]] | None:
    """(shape, ranks in row-major order) of a printed nested list `[[0, 1], [2, 3]]`, None when ragged."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    shape: list[int] = []
    level: list[Any] = [value]
    while all(isinstance(v, list) for v in level):
        lengths = {len(v) for v in level}
        if len(lengths) != 1 or 0 in lengths or len(shape) >= 8:
            return None
        shape.append(lengths.pop())
        level = [x for v in level for x in v]
    if not shape or not all(isinstance(v, int) and not isinstance(v, bool) for v in level):
        return None
    return shape, level


def _pairs(text: str) -> tuple[str, str] | None:
    """The first run of two or more `name<index>` pairs with distinct names in the text."""
    run: list[Any] = []
    for m in PAIR_RE.finditer(text):
        gap = text[run[-1].end():m.start()] if run else ""
        if run and PAIR_GAP_RE.match(gap) and m["name"] not in {r["name"] for r in run}:
            run.append(m)
            continue
        if len(run) >= 2:
            break
        run = [m]
    if len(run) < 2:
        return None
    return ",".join(r["name"] for r in run), ",".join(str(int(r["v"])) for r in run)


def coordinate_statement(text: str) -> tuple[str, str] | None:
    """(dimension names, indices), both comma-separated, of the first statement of mesh coordinates in a
    line's text (`[dp=1 tp=0]`; `coordinate [1, 0]` gives no names), or None."""
    coord = _pairs(text)
    if coord is None and "oord" in text:
        m = COORD_RE.search(text)
        if m:
            coord = ("", ",".join(str(v) for v in _ints(m["vals"])))
    return coord


class MeshParser(Parser):
    """The device mesh a job printed (`device_mesh`) and each rank's coordinates in it (`mesh_coordinate`).

    Example: `DeviceMesh((dp=2, tp=4), 'cuda', stride=(4, 1))`; `[dp=1 tp=0] step 3 loss 0.41`
    """

    name = "mesh"
    # No digit in a trigger: the reader remembers which triggers a line holds per shape of line (its digits
    # written as 0), which a trigger holding a digit turns off (hanglens/ingest/dispatch.py). Not `ep=`,
    # which every `step=` line holds, nor ` tp` (torchtitan's `tps:` throughput on every step line) or
    # `(dp` (ProcessGroupNCCL's `PG GUID 2(dp)`); a statement is found by the trigger of another pair.
    triggers = ("DeviceMesh", "oordinate", "Coord", "coord", "dp=", "tp=", "pp=", "cp=", "dp_", "tp_",
                "shard", "replicate", " dp", " pp", "[dp", "[tp", "[pp", "|dp", "|tp", "|pp")
    emits = (
        EventSpec("device_mesh", ("dims", "sizes", "strides", "ranks"),
                  "a printed DeviceMesh: `dims` its dimension names (comma-separated, empty when unnamed), "
                  "`sizes` the length of each, `strides` each dimension's stride in global ranks (torch 2.9+ "
                  "repr) or `ranks` the mesh's global ranks in row-major order (older repr, or "
                  "TORCH_DISTRIBUTED_DEBUG=DETAIL)"),
        EventSpec("mesh_coordinate", ("dims", "values"),
                  "a rank's own statement of indices along named mesh dimensions (`[dp=1 tp=0]`, `pp0 dp1 "
                  "tp0`) or `get_coordinate()`'s tuple after `coordinate` (`dims` empty): `dims` and "
                  "`values` comma-separated; the same text on every rank is the mesh's shape, not a "
                  "coordinate (hanglens/analysis/mesh.py decides)"),
    )
    examples = (
        Example("[default3]:2026-12-04 20:09:17,209 INFO [dp=1 tp=1] dataset shard has 6 batches",
                "mesh_coordinate", {"dims": "dp,tp", "values": "1,1"},
                "user code, python logging (written here)"),
        Example("2026-11-02 10:00:01,100 | pp0 dp1 tp0 | INFO | step 4 loss 0.0547", "mesh_coordinate",
                {"dims": "pp,dp,tp", "values": "0,1,0"}, "user code (written here)"),
        Example("[rank5] DeviceMesh((pp=2, dp=2, tp=2), 'cpu', stride=(4, 2, 1)) coordinate [1, 0, 1]",
                "device_mesh", {"dims": "pp,dp,tp", "sizes": [2, 2, 2], "strides": [4, 2, 1]},
                "torch 2.9+ DeviceMesh.__repr__ (device_mesh.py)"),
        Example("mesh: DeviceMesh('cuda', [[0, 1, 2, 3], [4, 5, 6, 7]], "
                "mesh_dim_names=('replicate', 'shard'))", "device_mesh",
                {"dims": "replicate,shard", "sizes": [2, 4], "ranks": [0, 1, 2, 3, 4, 5, 6, 7]},
                "torch 2.2-2.8 DeviceMesh.__repr__"),
        Example("rank 3 mesh coordinate (1, 1)", "mesh_coordinate", {"dims": "", "values": "1,1"},
                "DeviceMesh.get_coordinate() printed by user code (written here)"),
    )
    history: ClassVar[tuple[str, ...]] = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[tuple[Any, ...], int] = {}

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        if not self.same_as_fresh(earlier) or not isinstance(earlier, MeshParser):
            return None
        return {} if self.merge_seen(earlier) else None

    def _first(self, line: LogLine, key: tuple[Any, ...]) -> bool:
        """Is this statement new for the line's rank in this file (and is there room for it)?"""
        full = (line.rank, *key)
        if full in self._seen:
            return False
        n = sum(1 for k in self._seen if k[0] == line.rank)
        if n >= MAX_STATEMENTS:
            return False
        self._seen[full] = 1
        return True

    def feed(self, line: LogLine) -> Iterable[Event]:
        text = line.text
        out: list[Event] = []
        if "DeviceMesh" in text:
            ev, span = self._repr(line, text)
            if ev is not None:
                out.append(ev)
            if span is not None:   # the repr's `dp=2, tp=4` are sizes, not this rank's coordinates
                text = text[:span[0]] + text[span[1]:]
        coord = coordinate_statement(text)
        if coord is not None and self._first(line, ("c", *coord)):
            out.append(self.event("mesh_coordinate", line, dims=coord[0], values=coord[1]))
        return out


    def _repr(self, line: LogLine, text: str) -> tuple[Event | None, tuple[int, int] | None]:
        """The event of a DeviceMesh repr in the text (None when already given), and the repr's span."""
        m = NEW_REPR_RE.search(text)
        if m:
            return self._new_repr(line, m), m.span()
        m = OLD_REPR_RE.search(text)
        if m:
            return self._old_repr(line, m), m.span()
        return None, None

    def _new_repr(self, line: LogLine, m: Any) -> Event | None:
        dims: list[str] = []
        sizes: list[int] = []
        for part in (p.strip() for p in m["dims"].split(",") if p.strip()):
            named = _NAMED_SIZE_RE.match(part)
            if named:
                dims.append(named["name"])
                sizes.append(int(named["size"]))
            elif part.isdigit():
                sizes.append(int(part))
            else:
                return None
        if dims and len(dims) != len(sizes):
            return None
        strides = _ints(m["stride"])
        if len(strides) != len(sizes) or "(" in m["stride"]:
            strides = []   # a flattened dimension's stride is a tuple: no row-major reading of it
        got = _nested(m["mesh"]) if m["mesh"] else None
        if not self._first(line, ("m", ",".join(dims), tuple(sizes), tuple(strides))):
            return None
        return self.event("device_mesh", line, dims=",".join(dims), sizes=sizes, strides=strides or None,
                          ranks=got[1] if got else None)

    def _old_repr(self, line: LogLine, m: Any) -> Event | None:
        got = _nested(m["mesh"])
        if got is None:
            return None
        shape, ranks = got
        names = QUOTED_RE.findall(m["names"] or "")
        if names and len(names) != len(shape):
            return None
        if not self._first(line, ("m", ",".join(names), tuple(shape), tuple(ranks))):
            return None
        return self.event("device_mesh", line, dims=",".join(names), sizes=shape, strides=None, ranks=ranks)
