"""Run PyTorch's own Flight Recorder analyzer (`torchfrtrace`) and `hanglens analyze` on the same dumps.

Usage (where torch is installed; hanglens is imported from this checkout):

    python tools/compare_frtrace.py [--torchfrtrace PATH] [--capture] [FIXTURE ...]

For every Flight Recorder fixture (`fixtures/fr-*` and `fixtures/divergence-flight-recorder`):

1. `--capture` runs torchfrtrace on a copy of the fixture's pickles, the way a user would, and writes its
   output, labelled with the command, to `tests/flight/torchfrtrace/<fixture>.txt`:
   a. `torchfrtrace <dir>` as is;
   b. when that fails on gloo dumps (torch 2.13's gloo backend records `pg_config` under an empty group
      name, so torchfrtrace's group lookup raises KeyError), on a repaired copy whose `pg_config` names
      every group the entries use (default group: the world from truth.yaml; other groups: the ranks
      whose dumps use them) -- the fix a user would have to make by hand;
   c. with `--allow-incomplete-ranks` when it refuses because dumps are missing.
2. It reads what torchfrtrace concluded from those captured outputs (never from torch), runs
   `hanglens analyze --format json` on the whole fixture (dumps and logs), and writes the side-by-side
   table to docs/flight-recorder-vs-torchfrtrace.md (tests/flight/test_compare_frtrace.py checks that
   table against the captured outputs and hanglens's current answers, without torch).
"""

from __future__ import annotations

import argparse
import ast
import json
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

CAPTURED = ROOT / "tests" / "flight" / "torchfrtrace"
DOC = ROOT / "docs" / "flight-recorder-vs-torchfrtrace.md"


def fixtures() -> list[Path]:
    found = sorted(p for p in (ROOT / "fixtures").glob("fr-*") if p.is_dir())
    return [ROOT / "fixtures" / "divergence-flight-recorder", *found]


def _members(dumps: dict[int, dict[str, Any]], world: int) -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], set[int]] = {}
    for rank, d in dumps.items():
        for e in d.get("entries", []):
            pg = tuple(e["process_group"])
            out.setdefault(pg, set()).add(rank)
    return {pg: (list(range(world)) if pg[1] == "default_pg" else sorted(r)) for pg, r in out.items()}


def repair(src: Path, dst: Path, world: int) -> None:
    """Copy the pickles with a pg_config naming each group the entries use (see the module docstring)."""
    dumps = {int(p.name.rsplit("_", 1)[1]): pickle.loads(p.read_bytes()) for p in src.glob("fr_trace_rank_*")}
    groups = _members(dumps, world)
    for rank, d in dumps.items():
        d["pg_config"] = {
            name: {"name": name, "desc": desc, "ranks": str(ranks)}
            for (name, desc), ranks in groups.items()
            if rank in ranks
        }
        (dst / f"fr_trace_rank_{rank}").write_bytes(pickle.dumps(d, protocol=2))


def run_frtrace(exe: str, folder: Path, extra: list[str]) -> tuple[int, str]:
    proc = subprocess.run(
        [exe, str(folder), *extra], capture_output=True, text=True, timeout=600, check=False
    )
    text = (proc.stdout + proc.stderr).replace(str(folder), "<dumps>")
    return proc.returncode, text


def capture(exe: str, fixture: Path) -> str:
    world = int(yaml.safe_load((fixture / "truth.yaml").read_text())["world_size"])
    parts = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "as-dumped"
        plain.mkdir()
        for p in fixture.glob("fr_trace_rank_*"):
            shutil.copy2(p, plain / p.name)
        folder, label, extra = plain, "<dumps>", []
        for _ in range(3):
            rc, out = run_frtrace(exe, folder, extra)
            parts.append((" ".join(["torchfrtrace", *extra, label]), rc, out))
            if rc != 0 and "KeyError" in out and folder is plain:
                folder, label = Path(tmp) / "repaired", "<dumps with pg_config repaired>"
                folder.mkdir()
                repair(plain, folder, world)
            elif rc != 0 and "Missing dump files" in out and not extra:
                extra = ["--allow-incomplete-ranks"]
            else:
                break
    chunks = []
    for cmd, rc, out in parts:
        # Tracebacks name the machine's paths: keep the exception line and the analyzer's own output.
        out = re.sub(r'File "[^"]*/(site-packages|bin)/', r'File "<\1>/', out)
        # Frames recorded in a dump name the machine that ran it: keep them neutral here too.
        out = re.sub(r"(?<![\w<])/[^\s:]*/site-packages/", "<site-packages>/", out)
        out = re.sub(r"(?<![\w<])/[^\s:]*/fixtures/generate/", "<repo>/fixtures/generate/", out)
        chunks.append(f"$ {cmd}\n# exit code {rc}\n{out.rstrip()}\n")
    header = (
        f"# torchfrtrace (torch wheel) on fixtures/{fixture.name}; captured by tools/compare_frtrace.py "
        "--capture\n"
    )
    return header + "\n".join(chunks)


def frtrace_answer(text: str) -> dict[str, Any]:
    """What torchfrtrace concluded, read from its captured output (the last command's section)."""
    sections = re.split(r"^\$ ", text, flags=re.M)
    last = sections[-1] if len(sections) > 1 else text
    first = sections[1] if len(sections) > 1 else text
    first_err = re.findall(r"^(\w+(?:Error|Exception)): ?(.*)$", first, re.M)
    as_is = (
        "ran"
        if re.search(r"^# exit code 0", first, re.M)
        else (f"{first_err[-1][0]}: {first_err[-1][1]}" if first_err else "failed")
    )
    rc = int(re.search(r"^# exit code (-?\d+)", last, re.M).group(1))  # type: ignore[union-attr]
    ans: dict[str, Any] = {
        "ran": rc == 0,
        "as_is": as_is,
        "mismatch": None,
        "seq": None,
        "culprits": [],
        "missing": [],
        "command": last.splitlines()[0] if last else "",
    }
    if rc != 0:
        err = re.findall(r"^(\w+(?:Error|Exception)): ?(.*)$", last, re.M)
        ans["mismatch"] = f"crashed: {err[-1][0]} {err[-1][1]}".strip() if err else "crashed"
        return ans
    m = re.search(r"Not all ranks joining collective, sequence number: (\d+)", last)
    e = re.search(r"Collective sequence number: (\d+) has errors", last)
    undecided = "We cannot decide what's wrong" in last
    if m and (not e or int(m.group(1)) <= int(e.group(1))):
        ans.update(mismatch="missing ranks", seq=int(m.group(1)))
        miss = re.search(r"missing ranks: \{([\d, ]*)\}", last[m.start() :])
        ans["missing"] = sorted(int(x) for x in miss.group(1).split(",")) if miss else []
    elif e:
        ans["seq"] = int(e.group(1))
        errs = re.findall(
            r"Culprit rank (\d+); Error type: (\w+)", last[e.start() :].split("collective stack")[0]
        )
        ans["culprits"] = sorted({int(r) for r, _ in errs})
        ans["mismatch"] = ",".join(sorted({t for _, t in errs})) or "errors"
    elif undecided:
        miss = re.search(r"missed FR dumps from ranks \((\{[^)]*\})\)", last)
        ans["mismatch"] = "cannot decide (dumps missing)"
        ans["missing"] = sorted(ast.literal_eval(miss.group(1))) if miss else []
    else:
        ans["mismatch"] = "none"
    return ans


def hanglens_answer(fixture: Path) -> dict[str, Any]:
    from hanglens import api

    inputs = [str(p) for p in sorted(fixture.iterdir()) if p.name != "truth.yaml"]
    analysis = api.analyze(inputs)
    doc = analysis.to_dict()
    v = doc["verdict"]
    fr = analysis.tables.fact("fr_match")
    first = None
    if len(fr):
        bad = fr[
            fr["mismatch"].isin(
                ["op", "size", "dtype", "missing", "unmatched_send", "unmatched_recv", "no_dump"]
            )
        ]
        if len(bad):
            order = sorted(
                range(len(bad)),
                key=lambda i: (
                    not bad["culprit"].iloc[i],
                    bad["pg"].iloc[i],
                    bad["seq"].iloc[i] or 0,
                    bad["rank"].iloc[i],
                ),
            )
            row = bad.iloc[order[0]]
            first = f"{row['mismatch']} at PG {row['pg']} #{row['seq']}"
    dumps = analysis.tables.fact("fr_dumps")
    missing = sorted(int(r) for r, has in zip(dumps["rank"], dumps["has_dump"], strict=True) if not has)
    return {
        "category": v["category"],
        "rule": v.get("rule_id"),
        "culprits": v.get("culprit_ranks") or [],
        "fr_first": first,
        "missing_dumps": missing,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Flight Recorder: hanglens side by side with torchfrtrace",
        "",
        "Generated by `python tools/compare_frtrace.py` (needs torch for `--capture`; the table itself is",
        "checked without torch by tests/flight/test_compare_frtrace.py). torchfrtrace is the analyzer in the",
        "torch 2.13.0 wheel (`torch.distributed.flight_recorder`); its raw output per fixture, labelled with",
        "the command, is in tests/flight/torchfrtrace/. Dumps come from real torchrun runs on CPU/gloo",
        "(fixtures/generate/flight.py; truth.yaml in each fixture says what was injected).",
        "",
        "What the two tools read:",
        "",
        "- torchfrtrace: one folder of pickles named `<prefix><rank>` (a common prefix inferred or given), every",
        "  rank's dump unless `--allow-incomplete-ranks`, nothing else. As shipped in torch 2.13 it raises",
        "  `KeyError` on every gloo dump of torch 2.13: gloo records `pg_config` under an empty group name, and",
        "  the analyzer looks groups up by the name in each entry. The table shows what it says on a copy whose",
        "  `pg_config` was repaired by hand (the harness does it the way a user would; see its docstring).",
        "- hanglens: pickle and JSON dumps (`_dump_fr_trace[_json]`, `_dump_nccl_trace[_json]`, dump-on-timeout",
        "  files), any prefix, plain, compressed or inside archives, next to the job's logs; format versions",
        "  1.x (torch 2.2-2.3: `seq_id`), 2.2-2.10 (torch 2.4+: `collective_seq_id`/`p2p_seq_id`) read by key",
        "  presence (FlightRecorder.hpp `version_val` is 2.10 in torch 2.13). Group membership comes from",
        "  `pg_config` when it names the group, else from the world size (default group) or the ranks that",
        "  recorded the group. JSON dumps carry no stack frames (torch leaves them out).",
        "",
        "| fixture | injected | truth | torchfrtrace as shipped | torchfrtrace: finding (command) | seq | "
        "culprit / missing | hanglens: FR mismatch | hanglens: dumps missing | hanglens: verdict (rule) | "
        "hanglens: culprit | who is right |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t, h = r["frtrace"], r["hanglens"]
        who = r.get("note", "")
        named = " / ".join(
            x for x in (_ranks(t["culprits"]), "missing " + _ranks(t["missing"])) if x != "missing "
        )
        lines.append(
            f"| {r['fixture']} | {r['injected']} | {r['truth']} | {t['as_is']} | {t['mismatch']} "
            f"(`{t['command']}`) | {t['seq'] or ''} | "
            f"{named} | "
            f"{h['fr_first'] or 'none'} | {_ranks(h['missing_dumps']) or 'none'} | {h['category']} "
            f"({h['rule'] or '-'}) | {_ranks(h['culprits']) or 'none'} | {who} |"
        )
    return "\n".join(lines) + "\n"


def _ranks(rs: list[int]) -> str:
    return ", ".join(str(r) for r in rs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fixtures", nargs="*")
    ap.add_argument(
        "--torchfrtrace",
        default=shutil.which("torchfrtrace") or "torchfrtrace",
        help="the torchfrtrace console script of a torch install (only with --capture)",
    )
    ap.add_argument("--capture", action="store_true", help="(re)run torchfrtrace and store its output")
    ap.add_argument(
        "--notes",
        default=str(ROOT / "tests" / "flight" / "notes.yaml"),
        help="who-is-right notes per fixture (YAML: fixture -> text)",
    )
    args = ap.parse_args()
    chosen = [ROOT / "fixtures" / f for f in args.fixtures] if args.fixtures else fixtures()
    CAPTURED.mkdir(parents=True, exist_ok=True)
    notes = yaml.safe_load(Path(args.notes).read_text()) if Path(args.notes).exists() else {}
    rows = []
    for fx in chosen:
        out = CAPTURED / f"{fx.name}.txt"
        if args.capture:
            out.write_text(capture(args.torchfrtrace, fx), encoding="utf-8")
        truth = yaml.safe_load((fx / "truth.yaml").read_text())
        rows.append(
            {
                "fixture": fx.name,
                "injected": truth["injected"],
                "truth": f"{truth['expect']['category']} {_ranks(truth['expect']['culprit_ranks'])}",
                "frtrace": frtrace_answer(out.read_text(encoding="utf-8")),
                "hanglens": hanglens_answer(fx),
                "note": (notes or {}).get(fx.name, ""),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    DOC.write_text(table(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
