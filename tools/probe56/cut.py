# ruff: noqa: E501
"""probe56 cutter: a whole real run (gen.py) cut the way users of the Hugging Face stack paste it: the
Trainer's / accelerate's last progress lines (tqdm bars, the `{'loss': ...}` dicts, `step N: loss` prints)
before the first error, the loudest traceback (the longest one in the console), and torchrun's failure table.

One pasted file per case (`issue.txt`); the truth (`case.yaml`) comes from the job's injected fault (job.yaml)
and from what the excerpt still shows, with probe55's rule (tools/probe55/cut.py `shows`): the culprit ranks
stay only when a line of the excerpt is attributable to each of them; otherwise `unknown`.
Usage: python cut.py RAW OUT
"""

import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "probe55"))
from cut import blocks, lines_of, shows, table

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

PROGRESS = re.compile(r"\d+%\|.*\|\s*\d+/\d+|\{'loss': |^(\[default\d+\]:)?step \d+: loss")
ERR = re.compile(r"Traceback|Error\b|Timed out|exitcode")

# job -> number of progress lines kept
CUTS = {
    "cbraise-r1-ws2-tee": 3,
    "savefail-r0-ws4-tee": 4,
    "mpfslow-r0-ws4-tee": 3,
    "skipbwd-r1-ws3-tee": 4,
    "uneven-r2-ws4-nodispatch-acc-tee": 3,
}
# What an excerpt still shows, where it is less than the injected fault (written before hanglens ran):
# case -> (accept, culprit or None to keep, why).
CFD, CM, DDPU, STRAG = "control_flow_divergence", "collective_mismatch", "ddp_unused_parameters", "straggler"
OVERRIDES: dict[str, tuple[list[str], object, str]] = {
    "skipbwd-r1-ws3-tee--paste-4": ([CFD, CM, DDPU, STRAG], "unknown", "one victim's gloo send timeout and a table where all three ranks exited 1; nothing left says which rank skipped"),
    "uneven-r2-ws4-nodispatch-acc-tee--paste-3": ([CFD, CM, STRAG], "unknown", "only rank 2's barrier timeout after its loop is left; nothing shows the other ranks were still in the loop"),
}
HEAD = "Training crashes after a few steps. Last progress lines, then the error and what torchrun printed:"


def paste(console, n):
    first = next((i for i, x in enumerate(console) if ERR.search(x)), len(console))
    prog = [x for x in console[:first] if PROGRESS.search(x)][-n:]
    tbs = [b for b in blocks(console) if len(b) > 1 and "Traceback" in b[0] and not b[0].startswith("Traceback")]
    loud = max(tbs, key=len) if tbs else []
    return [HEAD, "", *prog, "", *loud, "", *table(console)]


def main():
    raw, outdir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    for name, n in CUTS.items():
        job = raw / name
        if not (job / "job.yaml").exists():
            continue
        meta, prov = probelib.job_meta(job)
        cul = meta["culprit_ranks"]
        ranks = [int(x) for x in re.findall(r"\d+", cul)] if cul.startswith("[") and cul != "[]" else []
        out = paste(lines_of(job / "console.log"), n)
        case = outdir / f"{name}--paste-{n}"
        case.mkdir(parents=True, exist_ok=True)
        (case / "issue.txt").write_text("\n".join(out) + "\n")
        culprit = (str(ranks) if shows(out, ranks, None) else "unknown") if ranks else cul
        accept, why = meta["accept"], ""
        if case.name in OVERRIDES:
            acc, c, w = OVERRIDES[case.name]
            accept, culprit, why = f"[{', '.join(acc)}]", c or culprit, f"# why: {w}\n"
        (case / "case.yaml").write_text(
            f"{prov}\n# excerpt: tools/probe56/cut.py paste {n} (the last {n} progress lines, the "
            f"longest traceback, the failure table; culprit kept only when the excerpt still shows it)\n{why}"
            f"category: {meta['category']}\naccept: {accept}\nculprit_ranks: {culprit}\n")


if __name__ == "__main__":
    main()
