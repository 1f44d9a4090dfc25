"""Every fixture's truth.yaml holds: the events it expects are found by the real reading pipeline."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from hanglens import api
from hanglens.model import Category, Event

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
EVENTS_DOC = ROOT / "docs" / "events.md"
TRUTH_FILES = sorted(FIXTURES.glob("*/truth.yaml"))
MAX_TOTAL_BYTES = 2 * 1024 * 1024

REQUIRED_KEYS = {"scenario", "description", "origin", "torch", "world_size", "injected", "expect"}
SYNTHETIC_KEYS = {"written_from", "versions"}
REAL_KEYS = {"generated_by", "launcher", "env", "rewrites"}
EVENT_KEYS = {"kind", "rank", "fields", "known_gap"}  # known_gap: what the reader misses today
_KIND_ROW = re.compile(r"^\| `(?P<kind>[a-z0-9_]+)` \|[^|]*\|(?P<fields>[^|]*)\|")
_FIELD = re.compile(r"`([a-z0-9_]+)`")


def _truth(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), f"{path}: not a mapping"
    return doc


def _catalogue() -> dict[str, set[str]]:
    """Event kinds and their fields as documented in docs/events.md (the parsers' contract)."""
    out: dict[str, set[str]] = {}
    for line in EVENTS_DOC.read_text(encoding="utf-8").splitlines():
        m = _KIND_ROW.match(line)
        if m:
            out[m["kind"]] = set(_FIELD.findall(m["fields"]))
    return out


@functools.cache
def _events(folder: Path) -> tuple[Event, ...]:
    # truth.yaml sits next to the logs but is not a log: reading it could invent events.
    inputs = sorted(p for p in folder.iterdir() if p.name != "truth.yaml")
    return tuple(api.read(inputs).events)


def _matches(event: Event, want: dict[str, Any]) -> bool:
    if event.kind != want["kind"]:
        return False
    if "rank" in want and event.rank != want["rank"]:
        return False
    missing = object()
    return all(event.fields.get(k, missing) == v for k, v in (want.get("fields") or {}).items())


def _expectations() -> list[Any]:
    params = []
    for path in TRUTH_FILES:
        for i, want in enumerate(_truth(path)["expect"].get("events") or []):
            rank = f"@{want['rank']}" if "rank" in want else ""
            # An event the reader is known to miss is a strict xfail: finding it fails loudly until the
            # truth drops its `known_gap`.
            gap = want.get("known_gap")
            marks = [pytest.mark.xfail(strict=True, reason=f"known gap: {gap}")] if gap else []
            param_id = f"{path.parent.name}[{i}]:{want['kind']}{rank}"
            params.append(pytest.param(path.parent, want, id=param_id, marks=marks))
    return params


def test_fixtures_exist() -> None:
    assert len(TRUTH_FILES) >= 10, "fixtures/*/truth.yaml not found"


@pytest.mark.parametrize(
    "folder",
    sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "generate"),
    ids=lambda p: p.name,
)
def test_every_fixture_folder_has_truth_and_logs(folder: Path) -> None:
    assert (folder / "truth.yaml").is_file(), f"{folder.name}: no truth.yaml"
    logs = [p for p in folder.rglob("*") if p.is_file() and p.name != "truth.yaml"]
    assert logs, f"{folder.name}: no log files"


def test_fixtures_stay_small() -> None:
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < MAX_TOTAL_BYTES, f"fixtures/ holds {total} bytes (limit {MAX_TOTAL_BYTES})"


@pytest.mark.parametrize("path", TRUTH_FILES, ids=lambda p: p.parent.name)
def test_truth_is_well_formed(path: Path) -> None:
    doc = _truth(path)
    assert doc.keys() >= REQUIRED_KEYS, f"missing keys: {sorted(REQUIRED_KEYS - doc.keys())}"
    assert doc["scenario"] == path.parent.name
    assert doc["origin"] in ("real run", "synthetic")
    extra = SYNTHETIC_KEYS if doc["origin"] == "synthetic" else REAL_KEYS
    assert extra <= doc.keys(), f"{doc['origin']} truth lacks {sorted(extra - doc.keys())}"
    expect = doc["expect"]
    Category(expect["category"])
    culprits = expect["culprit_ranks"]
    assert isinstance(culprits, list)
    assert all(isinstance(r, int) and 0 <= r < doc["world_size"] for r in culprits)
    assert expect.get("events"), "a truth must name at least one event a correct reading finds"
    catalogue = _catalogue()
    for want in expect["events"]:
        assert set(want) <= EVENT_KEYS, f"unknown keys in {want}"
        assert want["kind"] in catalogue, f"{want['kind']!r} is not in docs/events.md"
        unknown = set(want.get("fields") or {}) - catalogue[want["kind"]]
        assert not unknown, f"{want['kind']}: fields {sorted(unknown)} are not documented in docs/events.md"


@pytest.mark.parametrize(("folder", "want"), _expectations())
def test_expected_event_is_found(folder: Path, want: dict[str, Any]) -> None:
    events = _events(folder)
    if any(_matches(e, want) for e in events):
        return
    same_kind = [e for e in events if e.kind == want["kind"]]
    near = "\n".join(f"  {e.ref} rank={e.rank} {dict(e.fields)}" for e in same_kind[:10]) or "  (none)"
    pytest.fail(f"{folder.name}: no event matches {want}; {len(same_kind)} of kind {want['kind']!r}:\n{near}")


def test_readme_scenario_table_is_current() -> None:
    """fixtures/README.md's scenario table is what fixtures/generate/table.py makes of the truth files."""
    import importlib.util

    script = ROOT / "fixtures" / "generate" / "table.py"
    spec = importlib.util.spec_from_file_location("fixture_table", script)
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    readme = (ROOT / "fixtures" / "README.md").read_text(encoding="utf-8")
    assert readme == table.readme_with_table(readme), \
        "fixtures/README.md is stale: run `python fixtures/generate/table.py --write`"
