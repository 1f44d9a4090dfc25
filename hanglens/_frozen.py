"""Import modules with the cyclic garbage collector paused, then freeze what they built.

What the command line imports (typer, pandas, the rule engine: ~10^5 objects) lives until exit; every
collection while they import, and every full collection after, would walk it again. Process-wide, so only
the command line, when it owns the process, calls this (`hanglens.__main__`, `hanglens.cli`).
"""

from __future__ import annotations

import gc
import importlib


def import_frozen(*modules: str) -> None:
    """Import `modules` with the collector paused, then `gc.freeze()` all there is."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
