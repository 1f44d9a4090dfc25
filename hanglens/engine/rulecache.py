"""A disk cache of the built-in rules once they validated clean, so each start skips YAML and checks.

Every `hanglens analyze` loads the same built-in rules; composing their YAML with positions and checking
their meaning (templates, fields, bindings) costs a few hundred milliseconds per start. The cache keeps
the parsed data of each file under a key that hashes every input of that validation: the rule files'
names and bytes, the event catalogue and fact columns they were checked against, the two limits that
bear on reading them, and the source of the code that checks them. A hit is validated again by the
schema (pydantic), so a cached rule is built exactly as a freshly read one; anything unexpected (no
cache folder, a corrupt or foreign file) falls back to reading the rules. Only a clean validation of
the whole built-in set is stored. JSON, not pickle: the cache never runs code.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hanglens import __version__
from hanglens.limits import Limits

__all__ = ["cache_dir", "cache_key", "load", "store"]

_FORMAT = 1
# The code whose checks a cached entry passed: a change to any of them is a new key.
_CHECKERS = ("loader.py", "schema.py", "template.py", "rulecache.py")


def cache_dir() -> Path | None:
    """`$HANGLENS_CACHE_DIR`, else `$XDG_CACHE_HOME/hanglens` (default ~/.cache/hanglens); None when no
    home is known or `HANGLENS_CACHE_DIR` is `off` (then nothing is ever written)."""
    own = os.environ.get("HANGLENS_CACHE_DIR")
    if own:
        return None if own.strip().lower() in ("off", "0", "no", "none") else Path(own)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:
            return None
    return Path(base) / "hanglens"


def cache_key(root: Path, files: Sequence[Path], catalog: Mapping[str, Iterable[str]],
              facts: Mapping[str, Sequence[str]], limits: Limits) -> str | None:
    """The key of one validation of `files` (under `root`); None when a file cannot be read."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    checkers = [here / name for name in _CHECKERS] + [here.parent / "analysis" / "facts_spec.py"]
    extra = json.dumps([_FORMAT, __version__, str(root.resolve()), limits.max_rule_bytes,
                        limits.max_yaml_aliases, sorted((k, sorted(v)) for k, v in catalog.items()),
                        sorted((k, list(v)) for k, v in facts.items())])
    h.update(extra.encode())
    try:
        for path in [*checkers, *files]:
            data = path.read_bytes()
            name = path.relative_to(root) if path.is_relative_to(root) else path.name
            h.update(f"\0{name}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
            h.update(data)
    except (OSError, ValueError):
        return None
    return h.hexdigest()[:32]


def load(key: str, files: Sequence[Path]) -> list[dict[str, Any]] | None:
    """The parsed data of each of `files` (same order) stored under `key`, or None."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        doc = json.loads((folder / f"rules-{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key:
        return None
    datas = doc.get("rules")
    names = doc.get("files")
    if (not isinstance(datas, list) or names != [p.name for p in files] or len(datas) != len(files)
            or not all(isinstance(d, dict) for d in datas)):
        return None
    return datas


def store(key: str, files: Sequence[Path], datas: Sequence[Any]) -> None:
    """Keep the parsed data of `files` under `key` when it survives JSON unchanged; errors are ignored."""
    folder = cache_dir()
    if folder is None or len(datas) != len(files):
        return
    try:
        text = json.dumps({"key": key, "files": [p.name for p in files], "rules": list(datas)},
                          ensure_ascii=False)  # insertion order kept: it reaches reports
        if json.loads(text)["rules"] != list(datas):  # a YAML value JSON would change (a date, an int key)
            return
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".rules-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, folder / f"rules-{key}.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        week_ago = os.path.getmtime(folder / f"rules-{key}.json") - 7 * 86400
        for old in folder.glob("rules-*.json"):  # entries of other checkouts or versions, unused for a week
            if old.stat().st_mtime < week_ago:
                old.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError):
        return
