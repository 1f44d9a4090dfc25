"""The analysis document as stable JSON: sorted keys, UTF-8 kept, one trailing newline."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def _clean(value: Any) -> Any:
    # NaN/inf are not JSON; a float that slipped through from a table must not make the output invalid
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def render_json(doc: Mapping[str, Any]) -> str:
    """Byte-stable JSON of `doc` (the same document always gives the same text)."""
    return json.dumps(_clean(doc), indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n"
