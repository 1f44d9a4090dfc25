"""The parser registry: every parser module, in the order the reader feeds them."""

from __future__ import annotations

from hanglens.parsers.base import EventSpec, Example, Parser
from hanglens.parsers.c10d import C10dParser
from hanglens.parsers.catchall import CatchallParser
from hanglens.parsers.cuda import CudaParser
from hanglens.parsers.dataloader import DataloaderParser
from hanglens.parsers.ddp import DdpParser
from hanglens.parsers.elastic import ElasticParser
from hanglens.parsers.environment import EnvironmentParser
from hanglens.parsers.gloo import GlooParser
from hanglens.parsers.nccl import NcclParser
from hanglens.parsers.progress import ProgressParser
from hanglens.parsers.store import StoreParser
from hanglens.parsers.traceback import TracebackParser
from hanglens.parsers.wrapper import WrapperParser

PARSERS: tuple[type[Parser], ...] = (
    C10dParser,
    WrapperParser,
    DdpParser,
    NcclParser,
    CudaParser,
    GlooParser,
    DataloaderParser,
    ElasticParser,
    StoreParser,
    TracebackParser,
    ProgressParser,
    EnvironmentParser,
    CatchallParser,
)


def event_catalog() -> dict[str, set[str]]:
    """Every event kind any parser declares, with the union of its declared fields."""
    out: dict[str, set[str]] = {"error_file": {"exc_type", "message", "timestamp", "error_code"}}
    for parser in PARSERS:
        for spec in parser.emits:
            out.setdefault(spec.kind, set()).update(spec.fields)
    return out


__all__ = ["PARSERS", "EventSpec", "Example", "Parser", "event_catalog"]
