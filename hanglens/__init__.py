"""hanglens: find the root cause of a hung or failed distributed PyTorch job from its logs."""

from __future__ import annotations

__version__ = "0.1.0"

from hanglens.api import Analysis, analyze, load_rules, scan
from hanglens.engine import Verdict

__all__ = ["Analysis", "Verdict", "__version__", "analyze", "load_rules", "scan"]
