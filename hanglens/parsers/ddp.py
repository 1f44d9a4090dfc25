"""Read DistributedDataParallel reducer errors: unfinished reduction, parameters without grad, model mismatch.

Example (torch 1.10-2.9): `RuntimeError: Expected to have finished reduction in the prior iteration before
starting a new one. ...` followed (within the same message, split over lines) by `Parameter indices which did
not receive grad for rank 1: 60 61` → `ddp_reduction_unfinished` and `ddp_unused_parameters` (for_rank=1,
param_indices=[60, 61]).

Lightning 1.6-2.6 (`DDPStrategy.on_exception`, lightning/pytorch/strategies/ddp.py) replaces that message with
its own sentence `It looks like your LightningModule has parameters that were not used in producing the loss
returned by training_step. ...` before it propagates; it does so only for the reducer's message and only with
`find_unused_parameters` off (the sentence asks to turn it on), so it is the same event with
find_unused=False.

The reducer message spans several lines, so after its first sentence the parser looks at the next
WINDOW lines for the variant sentences (find_unused_parameters / static_graph). The "Parameter indices"
and "Parameters which did not receive grad" lines of one rank are merged into ONE `ddp_unused_parameters`
when they come within WINDOW lines of each other (in either order); otherwise each is emitted alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hanglens import lazyre as re
from hanglens.model import Event, LogLine
from hanglens.parsers.base import EventSpec, Example, Parser, int_list, to_count

UNFINISHED_RE = re.compile(r"Expected to have finished reduction in the prior iteration")
LIGHTNING_UNFINISHED_RE = re.compile(
    r"LightningModule has parameters that were not used in producing the loss returned by training_step"
)
FIND_UNUSED_ON_RE = re.compile(r"Since `?find_unused_parameters=True`? is enabled")
FIND_UNUSED_OFF_RE = re.compile(r"You can enable unused parameter detection by passing the keyword argument")
STATIC_RE = re.compile(r"static_graph set to True|training graph has changed in this iteration")
INDICES_RE = re.compile(r"Parameter indices which did not receive grad for rank (?P<rank>\d+):?(?P<rest>.*)")
NAMES_RE = re.compile(r"Parameters which did not receive grad for rank (?P<rank>\d+):?(?P<rest>.*)")
NAME_RE = re.compile(r"^[A-Za-z_][\w.\[\]-]*$")
COUNT_RE = re.compile(
    r"DDP expects same model across all ranks, but Rank (?P<r>\d+) has (?P<n>\d+) params, "
    r"while rank (?P<k>\d+) "
    r"has inconsistent (?P<m>\d+) params"
)
SIZES_RE = re.compile(
    r"(?:params\[(?P<i>\d+)\] in this process.*?)?appears not to match (?P<what>sizes|strides) "
    r"of the same param "
    r"in process (?P<k>\d+)"
)

WINDOW = 8  # lines one reducer message may span


class DdpParser(Parser):
    """DDP reducer/logger errors (torch 1.10-2.9)."""

    name = "ddp"
    triggers = (
        "finished reduction",
        "were not used in producing the loss",
        "did not receive grad",
        "DDP expects same model",
        "appears not to match",
    )
    emits = (
        EventSpec(
            "ddp_reduction_unfinished",
            ("find_unused", "static_graph"),
            "a DDP backward never finished reducing (unused parameters or a changed graph)",
        ),
        EventSpec(
            "ddp_unused_parameters",
            ("for_rank", "param_indices", "param_names"),
            "parameters that got no grad on one rank (both lines merged when close together)",
        ),
        EventSpec(
            "ddp_model_mismatch",
            ("for_rank", "params", "other_rank", "other_params", "aspect", "param_index"),
            "DDP construction found a different model; aspect count/sizes/strides (0 params: failed gather)",
        ),
    )

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()
        self._red: tuple[LogLine, dict[str, Any]] | None = None
        self._red_left = 0
        self._unused: dict[int, tuple[LogLine, dict[str, Any], int]] = {}

    idle_ignores = ("_red_left",)
    history = ("_seen",)

    def take_history(self, earlier: Parser, events: list[Event]) -> dict[int, list[Event]] | None:
        return {} if self.same_as_fresh(earlier) and self.merge_seen(earlier) else None

    def wants_more(self) -> bool:
        return self._red is not None or bool(self._unused)

    def close(self) -> Iterable[Event]:
        out = self._flush_red()
        for rank in sorted(self._unused):
            out.extend(self._flush_unused(rank))
        return out

    def feed(self, line: LogLine) -> Iterable[Event]:
        out: list[Event] = []
        text = line.text
        if self._red is not None:
            self._red_left -= 1
        m = UNFINISHED_RE.search(text)
        if m:
            out.extend(self._flush_red())
            self._red = (line, {"find_unused": None, "static_graph": False})
            self._red_left = WINDOW
        elif LIGHTNING_UNFINISHED_RE.search(text):
            out.extend(self._flush_red())
            self._red = (line, {"find_unused": False, "static_graph": False})
            self._red_left = 0
        if self._red is not None:
            fields = self._red[1]
            if FIND_UNUSED_ON_RE.search(text):
                fields["find_unused"] = True
            elif FIND_UNUSED_OFF_RE.search(text) and fields["find_unused"] is None:
                fields["find_unused"] = False
            if STATIC_RE.search(text):
                fields["static_graph"] = True
        out.extend(self._unused_line(line))
        out.extend(self._mismatch(line))
        if self._red is not None and self._red_left <= 0:
            out.extend(self._flush_red())
        for rank in sorted(self._unused):
            ln, fields, left = self._unused[rank]
            if left <= 1:
                out.extend(self._flush_unused(rank))
            else:
                self._unused[rank] = (ln, fields, left - 1)
        return out

    def _unused_line(self, line: LogLine) -> list[Event]:
        text = line.text
        out: list[Event] = []
        mi = INDICES_RE.search(text)
        mn = NAMES_RE.search(text)
        for m, key in ((mi, "param_indices"), (mn, "param_names")):
            if m is None:
                continue
            rank = to_count(m["rank"])
            if rank is None:  # a rank beyond int64 is not a rank
                continue
            value: list[Any]
            if key == "param_indices":
                value = int_list(m["rest"])
            else:
                value = [
                    n.strip()
                    for n in m["rest"].split(",")
                    if NAME_RE.match(n.strip()) and not n.strip().endswith(".")
                ]
            pending = self._unused.get(rank)
            if pending is not None and pending[1][key] is not None:
                out.extend(self._flush_unused(rank))
                pending = None
            if pending is None:
                fields: dict[str, Any] = {"for_rank": rank, "param_indices": None, "param_names": None}
                self._unused[rank] = (line, fields, WINDOW)
                pending = self._unused[rank]
            pending[1][key] = value
            if pending[1]["param_indices"] is not None and pending[1]["param_names"] is not None:
                out.extend(self._flush_unused(rank))
        return out

    def _flush_unused(self, rank: int) -> list[Event]:
        pending = self._unused.pop(rank, None)
        if pending is None:
            return []
        line, fields, _ = pending
        key = (
            "unused",
            line.rank,
            line.attempt,
            rank,
            tuple(fields["param_indices"] or ()),
            tuple(fields["param_names"] or ()),
        )
        if key in self._seen:
            return []
        self._seen.add(key)
        return [self.event("ddp_unused_parameters", line, **fields)]

    def _flush_red(self) -> list[Event]:
        if self._red is None:
            return []
        line, fields = self._red
        self._red = None
        key = ("red", line.rank, line.attempt, fields["find_unused"], fields["static_graph"])
        if key in self._seen:
            return []
        self._seen.add(key)
        return [self.event("ddp_reduction_unfinished", line, **fields)]

    def _mismatch(self, line: LogLine) -> list[Event]:
        text = line.text
        m = COUNT_RE.search(text)
        if m:
            return [
                self.event(
                    "ddp_model_mismatch",
                    line,
                    for_rank=to_count(m["r"]),
                    params=to_count(m["n"]),
                    other_rank=to_count(m["k"]),
                    other_params=to_count(m["m"]),
                    aspect="count",
                    param_index=None,
                )
            ]
        m = SIZES_RE.search(text)
        if m:
            return [
                self.event(
                    "ddp_model_mismatch",
                    line,
                    for_rank=None,
                    params=None,
                    other_rank=to_count(m["k"]),
                    other_params=None,
                    aspect=m["what"],
                    param_index=to_count(m["i"]),
                )
            ]
        return []

    examples = (
        Example(
            "RuntimeError: Expected to have finished reduction in the prior iteration before starting a "
            "new one. "
            "This error indicates that your module has parameters that were not used in producing loss. "
            "You can "
            "enable unused parameter detection by passing the keyword argument "
            "`find_unused_parameters=True` to "
            "`torch.nn.parallel.DistributedDataParallel`, and by \n"
            "making sure all `forward` function outputs participate in calculating loss. \n"
            "Parameter indices which did not receive grad for rank 1: 60 61\n"
            " In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO "
            "or DETAIL "
            "to print out information about which particular parameters did not receive gradient on this "
            "rank "
            "as part of this error",
            "ddp_reduction_unfinished",
            {"find_unused": False, "static_graph": False},
            "torch 1.10-2.9 (constructed)",
        ),
        Example(
            "[rank0]: RuntimeError: Expected to have finished reduction in the prior iteration before "
            "starting a "
            "new one. This error indicates that your module has parameters that were not used in "
            "producing loss. "
            "Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` "
            "outputs "
            "participate in computing loss.",
            "ddp_reduction_unfinished",
            {"find_unused": True, "static_graph": False},
            "torch 2.4-2.9 (constructed)",
        ),
        Example(
            "RuntimeError: Expected to have finished reduction in the prior iteration before starting a "
            "new one. "
            "This error indicates that your training graph has changed in this iteration, e.g., one "
            "parameter is "
            "used in first iteration, but then got unused in the second iteration. this is not "
            "compatible with "
            "static_graph set to True.",
            "ddp_reduction_unfinished",
            {"static_graph": True},
            "torch 1.10-2.9 (constructed)",
        ),
        Example(
            "[rank2]: RuntimeError: It looks like your LightningModule has parameters that were not used in "
            "producing the loss returned by training_step. If this is intentional, you must enable the "
            "detection of unused parameters in DDP, either by setting the string value "
            "`strategy='ddp_find_unused_parameters_true'` or by setting the flag in the strategy with "
            "`strategy=DDPStrategy(find_unused_parameters=True)`.",
            "ddp_reduction_unfinished",
            {"find_unused": False, "static_graph": False},
            "Lightning 1.6-2.6 DDPStrategy.on_exception rewrite (constructed)",
        ),
        Example(
            "RuntimeError: Expected to have finished reduction in the prior iteration before starting a "
            "new one.\n"
            "Parameter indices which did not receive grad for rank 1: 60 61\n",
            "ddp_unused_parameters",
            {"for_rank": 1, "param_indices": [60, 61], "param_names": None},
            "torch 1.10-2.9 debug off (constructed)",
        ),
        Example(
            "Parameters which did not receive grad for rank 2: head.fc.bias, head.fc.weight\n"
            "Parameter indices which did not receive grad for rank 2: 118 119 \n",
            "ddp_unused_parameters",
            {"for_rank": 2, "param_indices": [118, 119], "param_names": ["head.fc.bias", "head.fc.weight"]},
            "torch 1.10-2.9 TORCH_DISTRIBUTED_DEBUG=INFO/DETAIL (constructed)",
        ),
        Example(
            "[rank3]: Parameter indices which did not receive grad for rank 3: 7 8 9\n"
            "[rank3]: Parameters which did not receive grad for rank 3: enc.layers.1.norm.weight, "
            "enc.layers.1.norm.bias, enc.proj.weight",
            "ddp_unused_parameters",
            {
                "for_rank": 3,
                "param_indices": [7, 8, 9],
                "param_names": ["enc.layers.1.norm.weight", "enc.layers.1.norm.bias", "enc.proj.weight"],
            },
            "torch 2.4-2.9 (constructed)",
        ),
        Example(
            "RuntimeError: DDP expects same model across all ranks, but Rank 1 has 220 params, while "
            "rank 0 has "
            "inconsistent 0 params.",
            "ddp_model_mismatch",
            {"for_rank": 1, "params": 220, "other_rank": 0, "other_params": 0, "aspect": "count"},
            "torch 1.10-2.9 (constructed)",
        ),
        Example(
            "[rank2]: RuntimeError: params[4] in this process with sizes [128, 64] appears not to match "
            "sizes of "
            "the same param in process 0.",
            "ddp_model_mismatch",
            {"aspect": "sizes", "param_index": 4, "other_rank": 0},
            "torch 1.10-2.9 (constructed)",
        ),
    )
    near_misses = (
        "find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
        "parameters in the "
        "forward pass. This flag results in an extra traversal of the autograd graph every iteration.",
        "[Rank 0]: DDP Initialized with: broadcast_buffers: 1, find_unused_parameters: 0",
        "all parameters received grad for rank 0",
        "Tip: parameters that were not used in producing the loss can be frozen with requires_grad=False",
        "the reduction finished reduction stats: 12 buckets",
        "layer sizes appears not to match the checkpoint; loading with strict=False",
    )
