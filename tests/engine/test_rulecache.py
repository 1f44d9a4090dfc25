"""The disk cache of the built-in rules: same rules as a fresh read, never stale, never trusted blindly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hanglens.engine import load_rules, loader, rulecache
from hanglens.errors import RuleError


@pytest.fixture
def rules_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder and a private copy of the built-in rules (so a test may edit them)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    found = loader.builtin_rules_dir()
    assert found is not None
    copy = tmp_path / "rules"
    shutil.copytree(found, copy)
    monkeypatch.setattr(loader, "builtin_rules_dir", lambda: copy)
    loader._CACHE.clear()
    return copy


def _fresh() -> list[tuple[object, ...]]:
    """Each rule as loaded, its data as ordered text: mapping order reaches reports (`where a and b`)."""
    loader._CACHE.clear()  # the in-process cache would hide the disk cache
    return [(json.dumps(r.model_dump(), default=str), r.path, r.root, r.builtin) for r in load_rules()]


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = loader._check_file_uncached

    def counting(path: Path, *args: object, **kw: object) -> object:
        seen.append(path)
        return real(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "_check_file_uncached", counting)
    return seen


def test_second_load_comes_from_the_cache_and_is_the_same(rules_home: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch)
    first = _fresh()
    assert reads and len(list((rules_home.parent / "cache" / "hanglens").glob("rules-*.json"))) == 1
    reads.clear()
    assert _fresh() == first
    assert reads == []


def test_an_edited_rule_is_read_again(rules_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh()
    path = sorted(rules_home.rglob("*.yaml"))[0]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\ntitle: ", "\ntitle: Edited ", 1), encoding="utf-8")
    reads = _reads(monkeypatch)
    rules = {r[1]: r[0] for r in _fresh()}
    assert path in reads
    assert str(json.loads(str(rules[path]))["title"]).startswith("Edited ")


def test_a_broken_rule_set_is_never_stored(rules_home: Path) -> None:
    path = sorted(rules_home.rglob("*.yaml"))[0]
    path.write_text(path.read_text(encoding="utf-8") + "\nunknown_key: 1\n", encoding="utf-8")
    loader._CACHE.clear()
    with pytest.raises(RuleError):
        load_rules()
    assert not list((rules_home.parent / "cache").rglob("rules-*.json"))


DAMAGES = ["not json", '{"key": "other"}', '{"key": "KEY", "files": [], "rules": []}']


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_cache_falls_back_to_reading(rules_home: Path, monkeypatch: pytest.MonkeyPatch,
                                               damage: str) -> None:
    first = _fresh()
    (entry,) = (rules_home.parent / "cache" / "hanglens").glob("rules-*.json")
    entry.write_text(damage.replace("KEY", entry.stem.removeprefix("rules-")), encoding="utf-8")
    reads = _reads(monkeypatch)
    assert _fresh() == first
    assert reads


def test_a_cached_entry_that_fails_the_schema_is_not_used(rules_home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first = _fresh()
    (entry,) = (rules_home.parent / "cache" / "hanglens").glob("rules-*.json")
    text = entry.read_text(encoding="utf-8")
    entry.write_text(text.replace('"confidence": "high"', '"confidence": "urgent"', 1), encoding="utf-8")
    assert '"urgent"' in entry.read_text(encoding="utf-8")
    reads = _reads(monkeypatch)
    assert _fresh() == first
    assert reads


def test_no_cache_folder_still_loads(rules_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = rules_home.parent / "cache"
    blocker.write_text("a file where the cache folder would go", encoding="utf-8")
    monkeypatch.setattr(rulecache, "cache_dir", lambda: blocker / "hanglens")
    assert len(_fresh()) == len(list(rules_home.rglob("*.yaml")))


def test_cache_can_be_turned_off_or_moved(rules_home: Path, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    """`HANGLENS_CACHE_DIR=off` writes nothing anywhere; a path puts the cache there."""
    monkeypatch.setenv("HANGLENS_CACHE_DIR", "off")
    _fresh()
    assert not (rules_home.parent / "cache").exists()
    monkeypatch.setenv("HANGLENS_CACHE_DIR", str(tmp_path / "mine"))
    _fresh()
    assert len(list((tmp_path / "mine").glob("rules-*.json"))) == 1
    assert not (rules_home.parent / "cache").exists()
