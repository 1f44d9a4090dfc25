"""hanglens: find the root cause of a hung or failed distributed PyTorch job from its logs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from hanglens.api import Analysis, analyze, load_rules, scan
    from hanglens.engine import Verdict

__all__ = ["Analysis", "Verdict", "__version__", "analyze", "load_rules", "scan"]


def __getattr__(name: str) -> Any:
    # Lazy: `import hanglens` (and reading logs) must not pay for pandas, jinja2 and the rule engine.
    if name in ("Analysis", "analyze", "load_rules", "scan"):
        from hanglens import api

        return getattr(api, name)
    if name == "Verdict":
        from hanglens.engine import Verdict

        return Verdict
    raise AttributeError(f"module 'hanglens' has no attribute {name!r}")
