"""Events of every rank → pandas tables → cross-rank facts (pure functions, no I/O)."""

from __future__ import annotations

from hanglens.analysis.build import Tables, build
from hanglens.analysis.facts_spec import FACT_SPECS, FactSpec

__all__ = ["FACT_SPECS", "FactSpec", "Tables", "build"]
