"""Which ranks share a device-mesh group, and which member of a stuck mesh group is the odd one.

torch/distributed/device_mesh.py: `init_device_mesh(device_type, mesh_shape, mesh_dim_names=...)` lays the
world's ranks out row-major (`torch.arange(world_size).view(mesh_shape)`) and creates, for each dimension,
one process group per slice along it: the members of a rank's group along dimension `d` are the ranks whose
coordinates equal its own on every other dimension (`mesh["tp"].get_group()`, FSDP2's `fully_shard(mesh=)`
over its dimension, tensor parallel's functional collectives). A collective on such a group completes only
when every member calls it (failure-signatures.md section 0.5, section 1): a member at another collective
than its fellow members is where the group diverged, and ranks of other groups that wait for those members
are victims.

The layout is read from what the job printed (hanglens/parsers/mesh.py): a DeviceMesh repr (its ranks, or
its sizes and strides), each rank's coordinates, or a shape stated alike by several ranks whose product is
the world size. Nothing is assumed when the logs say none of these.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from math import prod
from typing import Any

from hanglens import lazyre as re
from hanglens.analysis import callsite
from hanglens.model import Event
from hanglens.parsers.mesh import coordinate_statement

Row = dict[str, Any]
MAX_WORLD = 1 << 16

# The expression passed as `group=` in the program's call (`group=tp_group`, `group=mesh["tp"].get_group()`).
_GROUP_EXPR_RE = re.compile(r"\bgroup\s*=\s*(?P<expr>[^,)]{1,120}(?:\([^)]{0,60}\))?)")


@dataclass(frozen=True, slots=True)
class Layout:
    """Each rank's coordinates along named dimensions, for every rank of the world."""

    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    coords: Mapping[int, tuple[int, ...]]
    source: str

    def group(self, rank: int, dim: int) -> tuple[int, ...]:
        """The members of `rank`'s group along dimension `dim`, in order of their index along it."""
        mine = self.coords[rank]
        key = mine[:dim] + mine[dim + 1:]
        members = [(c[dim], r) for r, c in self.coords.items() if c[:dim] + c[dim + 1:] == key]
        return tuple(r for _, r in sorted(members))


def _row_major(sizes: Sequence[int]) -> dict[int, tuple[int, ...]]:
    return {i: c for i, c in enumerate(product(*(range(s) for s in sizes)))}


def _strided(sizes: Sequence[int], strides: Sequence[int]) -> dict[int, tuple[int, ...]] | None:
    out: dict[int, tuple[int, ...]] = {}
    for c in product(*(range(s) for s in sizes)):
        r = sum(a * b for a, b in zip(c, strides, strict=True))
        if r in out:
            return None
        out[r] = c
    return out if set(out) == set(range(len(out))) else None


def _names(dims: str, n: int) -> tuple[str, ...]:
    names = tuple(d for d in dims.split(",") if d) if dims else ()
    return names if len(names) == n else tuple(f"dim{i}" for i in range(n))


def _from_repr(ev: Event, world: int) -> Layout | None:
    sizes = [int(s) for s in ev.get("sizes") or []]
    if not sizes or prod(sizes) != world:
        return None
    names = _names(str(ev.get("dims") or ""), len(sizes))
    ranks = ev.get("ranks")
    if ranks and len(ranks) == world and sorted(ranks) == list(range(world)):
        grid = list(product(*(range(s) for s in sizes)))
        coords = {int(r): grid[i] for i, r in enumerate(ranks)}
        return Layout(names, tuple(sizes), coords, "a printed DeviceMesh")
    strides = ev.get("strides")
    laid = _strided(sizes, strides) if strides else _row_major(sizes)
    return Layout(names, tuple(sizes), laid, "a printed DeviceMesh") if laid else None


Claims = dict[tuple[str, ...], dict[int | None, list[tuple[int, ...]]]]


def _claims(events: Sequence[Event], names_by_len: Mapping[int, tuple[str, ...]]) -> Claims:
    """Per set of dimension names, each rank's distinct statements of values, in the order first seen (under
    None: the statements of lines no rank is known for)."""
    out: Claims = {}
    for e in events:
        if e.kind != "mesh_coordinate":
            continue
        values = tuple(int(v) for v in str(e.get("values") or "").split(",") if v)
        dims = str(e.get("dims") or "")
        names = tuple(dims.split(",")) if dims else names_by_len.get(len(values), ())
        if not names or len(names) != len(values):
            continue
        per = out.setdefault(names, {}).setdefault(e.rank, [])
        if values not in per:
            per.append(values)
    return out


def _from_claims(names: tuple[str, ...], claims: Mapping[int | None, list[tuple[int, ...]]], world: int,
                 sizes_known: tuple[int, ...] | None) -> Layout | None:
    """Coordinates from each rank's first statement, or the shape from a statement ranks share.

    Lines no rank is known for (a console without rank prefixes) still give the shape when their distinct
    statements fill the whole grid of a world's size: every rank printed its own coordinates once.
    """
    per_rank = {r: v for r, v in claims.items() if r is not None}
    first = {r: v[0] for r, v in per_rank.items()}
    shared = Counter(first.values())
    # The same values on two ranks (or non-zero on rank 0, whose coordinates are all 0) state the shape.
    shapes = {v for v, n in shared.items() if n >= 2}
    if 0 in first and any(first[0]):
        shapes.add(first[0])
    shapes |= {v for vs in per_rank.values() for v in vs[1:]}
    coords = {r: v for r, v in first.items() if shared[v] == 1 and v not in shapes}
    sizes = sizes_known
    if sizes is None:
        stated = [v for v in shapes if prod(v) == world and min(v) >= 1]
        anonymous = set(claims.get(None, ()))
        grid = tuple(max(c[i] for c in anonymous) + 1 for i in range(len(names))) if anonymous else ()
        if len(set(stated)) == 1:
            sizes = stated[0]
        elif len(coords) >= 2:
            sizes = tuple(max(c[i] for c in coords.values()) + 1 for i in range(len(names)))
        elif grid and prod(grid) == world and len(anonymous) == world:
            return Layout(names, grid, _row_major(grid), "the coordinates the ranks logged")
    if sizes is None or prod(sizes) != world:
        return None
    if any(any(x >= s for x, s in zip(c, sizes, strict=True)) for c in coords.values()):
        return None
    if len(coords) == world and len(set(coords.values())) == world:
        return Layout(names, sizes, dict(coords), "the coordinates the ranks logged")
    rows = _row_major(sizes)
    if all(r < world and rows[r] == c for r, c in coords.items()):
        source = "the coordinates the ranks logged" if len(coords) >= 2 else "the mesh shape the ranks logged"
        return Layout(names, sizes, rows, source)
    return None


def mesh_layout(events: Sequence[Event], world: int | None) -> Layout | None:
    """The job's mesh as its logs state it, covering every rank of the world; None when they do not."""
    if not world or world < 2 or world > MAX_WORLD:
        return None
    reprs = [e for e in events if e.kind == "device_mesh"]
    full = [lay for lay in (_from_repr(e, world) for e in reprs) if lay is not None]
    names_by_len = {len(lay.dims): lay.dims for lay in full}
    claims = _claims(events, names_by_len)
    for names, per_rank in sorted(claims.items(), key=lambda kv: -len(kv[1])):
        known = next((lay.sizes for lay in full if lay.dims == names), None)
        lay = _from_claims(names, per_rank, world, known)
        if lay is not None:
            return lay
    return full[0] if full else None


def attribute(events: list[Event], layout: Layout | None, hosts: Mapping[int, str]) -> list[Event]:
    """Give a line no rank is known for the rank its own coordinates name (`[dp=1 tp=0] ...` on a console
    without rank prefixes), when the layout covers them: a coordinate is one rank's."""
    if layout is None:
        return events
    by_coord = {c: r for r, c in layout.coords.items()}
    out = []
    for e in events:
        if e.rank is None and e.kind != "mesh_coordinate":
            stated = coordinate_statement(e.text)
            if stated is not None:
                dims, values = stated
                names = tuple(dims.split(",")) if dims else layout.dims
                vals = tuple(int(v) for v in values.split(","))
                r = by_coord.get(vals) if names == layout.dims else None
                if r is not None:
                    e = dataclasses.replace(e, rank=r, host=e.host or hosts.get(r))
        out.append(e)
    return out


def group_rows(layout: Layout | None, hosts: Mapping[int, str]) -> list[Row]:
    """One row per rank and mesh dimension: the members of its group along it.

    Columns: rank, host, dim, members (global ranks, by index along the dimension), size, world (the group
    holds every rank: a one-dimensional mesh, or the other dimensions of size 1, so the mesh makes no
    other group along it), source (DeviceMesh, coordinates or stated shape).
    """
    if layout is None:
        return []
    rows = []
    for r in sorted(layout.coords):
        for i, name in enumerate(layout.dims):
            members = list(layout.group(r, i))
            rows.append({"rank": r, "host": hosts.get(r), "dim": name, "members": members,
                         "size": len(members), "world": len(members) == len(layout.coords),
                         "source": layout.source})
    return rows


def _dim_named(source: str | None, dims: Sequence[str]) -> int | None:
    """The dimension the `group=` expression of a call's source line names (`tp_group`, `mesh["dp"]`)."""
    m = _GROUP_EXPR_RE.search(source or "")
    if not m:
        return None
    words = set(callsite.tokens(m["expr"]))
    named = [i for i, d in enumerate(dims) if d.lower() in words or d.lower().replace("_", "") in words]
    return named[0] if len(named) == 1 else None


def _collective_calls(calls: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """Each rank's call, by rank, leaving out the ranks blocked in a point-to-point op: such a rank waits
    for its one peer (a pipeline stage for its neighbour stage, torch/distributed/pipelining/schedules.py),
    not in a collective of any mesh group, and has not reached its groups' next collective yet."""
    return {int(c["rank"]): c for c in calls
            if c.get("rank") is not None and c.get("call") not in callsite.POINT_TO_POINT}


def _place(call: Mapping[str, Any]) -> tuple[Any, Any]:
    return call.get("call"), call.get("user_frame")


def disagreement_rows(events: Sequence[Event], hosts: Mapping[int, str]) -> list[Row]:
    """mesh_disagreement: the whole-world DeviceMeshes the ranks printed, when they differ."""
    reprs = [e for e in events if e.kind == "device_mesh" and e.get("sizes")]
    if not reprs:
        return []
    def key(e: Event) -> tuple[str, tuple[int, ...]]:
        return str(e.get("dims") or ""), tuple(int(s) for s in e.get("sizes") or ())
    world = max(prod(key(e)[1]) for e in reprs)
    whole = [e for e in reprs if prod(key(e)[1]) == world]
    kinds = {key(e) for e in whole}
    if world < 2 or len(kinds) < 2:
        return []
    stated: dict[tuple[str, tuple[int, ...]], set[int]] = {}
    for e in whole:
        if e.rank is not None:
            stated.setdefault(key(e), set()).add(e.rank)
    writers = set().union(*stated.values()) if stated else set()
    top = max(stated.items(), key=lambda kv: len(kv[1]), default=None)
    majority = top[0] if top is not None and len(top[1]) >= 2 and len(top[1]) * 2 > len(writers) else None
    rows: list[Row] = []
    for e in sorted(whole, key=lambda e: (e.rank if e.rank is not None else -1, e.path, e.line)):
        names, sizes = key(e)
        dims = _names(names, len(sizes))
        odd = majority is not None and e.rank is not None and key(e) != majority
        rows.append({
            "rank": e.rank, "host": hosts.get(e.rank) if e.rank is not None else None,
            "mesh": ", ".join(f"{d}={n}" for d, n in zip(dims, sizes, strict=True)), "meshes": len(kinds),
            "odd": odd, "odd_rank": e.rank if odd else None, "path": e.path, "line": e.line,
        })
    return rows


def peer_elsewhere(layout: Layout | None, quiet: Sequence[Any]) -> None:
    """Fill silent_hang's `mesh_peer_elsewhere` in place: for a rank behind the step most ranks reported,
    the one rank that went where its peers did not (`odd_tail`) when it is in one of the rank's mesh groups
    with no member that reported the step, and each other group of the rank holds one that did.

    A group collective completes only when every member joins (failure-signatures.md section 0.1): a rank
    that got through its other groups' collectives of the step (their members reported it) and stopped
    before its own report waits in the one group whose member left for code of its own. Without a mesh every
    rank shares the world group, and the odd rank's step could not have completed without the rank behind.
    """
    if layout is None:
        return
    by_rank = {r["rank"]: r for r in quiet if r.get("rank") is not None}
    odd = [k for k, r in by_rank.items() if r.get("odd_tail")]
    if len(odd) != 1 or odd[0] not in layout.coords:
        return
    gone = odd[0]
    for rank, r in by_rank.items():
        if r.get("position") != "behind" or rank not in layout.coords:
            continue
        waits, through = False, True
        for dim in range(len(layout.dims)):
            others = [m for m in layout.group(rank, dim) if m != rank]
            if not others:
                continue
            if gone in others and all(
                    m == gone or by_rank.get(m, {}).get("position") == "behind" for m in others):
                waits = True
            elif not any(by_rank.get(m, {}).get("position") == "same" for m in others):
                through = False
        if waits and through:
            r["mesh_peer_elsewhere"] = gone


def split_rows(layout: Layout | None, calls: Sequence[Mapping[str, Any]],
               hosts: Mapping[int, str]) -> list[Row]:
    """The members of each mesh group whose ranks wait in different collectives, and which side each is on.

    A rank blocked in a call with `group=` (collective_call's `subgroup`) waits on one of its mesh groups:
    the one its `group=` expression names (`tp_group`), else the only dimension whose fellow members are
    all blocked in subgroup calls too, not all in this very call (then the collective would have
    completed, so it is not that group's). When those members are at different calls (another function, or
    the same one from another line), the side a strict majority of the group holds is where the group
    is; the others are `odd`. Without a majority (two members, one on each side) every member is `tie`.

    Columns: rank, host, dim, members, size, call, user_frame, side (odd / majority / tie), how (the
    group's name in the call, or its members' calls), source (as group_rows), path and line (the stack).
    """
    if layout is None:
        return []
    by_rank = _collective_calls(calls)
    seen: set[tuple[int, tuple[int, ...]]] = set()
    rows: list[Row] = []
    for r, c in sorted(by_rank.items()):
        if not c.get("subgroup") or r not in layout.coords:
            continue
        dim = _dim_named(c.get("source"), layout.dims)
        how = "name"
        if dim is None:
            how = "calls"
            # A group whose members all wait in this very call is not the call's group: the collective
            # would have completed.
            fits = [i for i in range(len(layout.dims))
                    if all(by_rank.get(m, {}).get("subgroup") for m in layout.group(r, i))
                    and any(_place(by_rank[m]) != _place(c) for m in layout.group(r, i))]
            dim = fits[0] if len(fits) == 1 else None
        if dim is None:
            continue
        members = layout.group(r, dim)
        if (dim, members) in seen or any(m not in by_rank for m in members):
            continue
        seen.add((dim, members))
        place = {m: _place(by_rank[m]) for m in members}
        sides = Counter(place.values()).most_common()
        if len(sides) < 2:
            continue
        major = sides[0][0] if sides[0][1] * 2 > len(members) else None
        for m in members:
            side = "tie" if major is None else ("majority" if place[m] == major else "odd")
            rows.append({"rank": m, "host": hosts.get(m), "dim": layout.dims[dim], "members": list(members),
                         "size": len(members), "call": place[m][0], "user_frame": place[m][1],
                         "side": side, "how": how, "source": layout.source,
                         "path": by_rank[m].get("path"), "line": by_rank[m].get("line")})
    return rows


def waiting_rows(layout: Layout | None, calls: Sequence[Mapping[str, Any]],
                 hosts: Mapping[int, str]) -> list[Row]:
    """Mesh groups whose members with a stack all wait in one call while the others left no stack.

    A collective on a mesh group completes once every member calls it, so a group whose stacked members
    all wait at one place (the same call from the same line), more of them than not, waits for the
    members that are not there: those left no stack because they were never in a collective (still
    working, stalled, or gone). Read only where the call's `group=` names no other dimension.

    Columns: rank, host, dim, members, size, call, user_frame, side (waiting / missing), source.
    """
    if layout is None:
        return []
    by_rank = _collective_calls(calls)
    rows: list[Row] = []
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for dim in range(len(layout.dims)):
        for r in sorted(layout.coords):
            members = layout.group(r, dim)
            if (dim, members) in seen:
                continue
            seen.add((dim, members))
            stacked = [m for m in members if m in by_rank]
            missing = [m for m in members if m not in by_rank]
            if not missing or len(stacked) < 2 or len(stacked) <= len(missing):
                continue
            places = {_place(by_rank[m]) for m in stacked}
            if len(places) != 1:
                continue
            named = {_dim_named(by_rank[m].get("source"), layout.dims) for m in stacked} - {None}
            if named and named != {dim}:
                continue
            call, frame = places.pop()
            for m in members:
                rows.append({"rank": m, "host": hosts.get(m), "dim": layout.dims[dim],
                             "members": list(members), "size": len(members), "call": call,
                             "user_frame": frame, "side": "waiting" if m in by_rank else "missing",
                             "source": layout.source,
                             "path": by_rank[m].get("path") if m in by_rank else None,
                             "line": by_rank[m].get("line") if m in by_rank else None})
    return rows
