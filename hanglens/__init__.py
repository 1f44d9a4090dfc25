"""hanglens: find the root cause of a hung or failed distributed PyTorch job from its logs."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
