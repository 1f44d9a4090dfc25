# ruff: noqa: E501
# (a probe generator kept for provenance: one table of cuts)
"""probe61 assembler and cutter: turns the whole real runs of gen.py into probe cases -- each job as the user
collected it (its folder minus job.yaml, truth in case.yaml) -- and a few jobs also cut the way users paste
them (one pasted file per case; styles as in tools/probe55/cut.py):

- one R       one rank's --log_dir stdout+stderr under the user's one-line summary
- tableonly   torchrun's failure table alone (from the ChildFailedError line to the closing rule)
- vtails N    the last N lines of two ranks outside the fault, each in its own fenced block under a heading
- grepctx     `grep -n -i -B2 -A2` of error words over the console (`NN:` / `NN-` prefixes, `--` separators)

A cut keeps its culprit only where the excerpt still shows each culprit rank (its `[defaultN]:` prefix, a
failure-table entry that is its own exit, its --log_dir file, the script's `rank N` tag), else `unknown`.
Usage: python cut.py RAW OUT
"""

import pathlib
import re
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import probelib  # noqa: E402  (tools/probelib.py)

RAW_PREFIX = re.compile(r"^\[default(\d+)\]:")
GREP = re.compile(r"error|exception|fail|timed out|timeout|killed|signal|mismatch|abort", re.I)
STRAG, CFD, UNK = "straggler", "control_flow_divergence", "unknown"

# job -> cuts: (style, argument)
CUTS = {
    "crash-r2-ws4-logdir-restart": [("one", 2)],
    "extkill-r3-ws4-tee": [("tableonly", 0)],
    "stall-r0-ws4-tee": [("vtails", 15)],
    "opmix-r2-ws4-console-detail": [("grepctx", 0)],
}
# What an excerpt still shows, where it is less than the injected fault (written before hanglens ran):
# case -> (accept, culprit or None to keep, why).
OVERRIDES = {
    "stall-r0-ws4-tee--vtails-15": ([STRAG, CFD, UNK], UNK, "only two victims' gloo recv timeouts are left: a rank that stayed out of the collective reads the same whether slow or diverged"),
}
SUMMARY = "Training crashes at step {step} with torchrun (gloo, 4 processes). Here is the log of rank {r}:"


def lines_of(p):
    return p.read_text(errors="replace").splitlines() if p.exists() else []


def rank_of(line):
    m = RAW_PREFIX.match(line) or re.search(r"\brank (\d+)\b", line)
    return int(m.group(1)) if m else None


def logdir_files(job):
    """rank -> stdout + stderr lines of the last attempt of a --log_dir tree."""
    out = {}
    for p in sorted(job.glob("logs/*/attempt_*/*/stderr.log")):
        out[int(p.parent.name)] = lines_of(p.parent / "stdout.log") + lines_of(p)
    return out


def cut(job, style, arg, culprits):
    console = lines_of(job / "train.log")
    files = logdir_files(job)
    if style == "one":
        return [SUMMARY.format(step=4, r=arg), "", *files[arg]]
    if style == "tableonly":
        return probelib.failure_table(console)
    if style == "vtails":
        ranks = sorted({r for r in map(rank_of, console) if r is not None})
        out = []
        for r in [r for r in ranks if r not in culprits][:2]:
            out += [f"rank {r}:", "```", *[x for x in console if rank_of(x) == r][-arg:], "```", ""]
        return out
    if style == "grepctx":
        return probelib.grep_context(console, GREP)
    raise ValueError(style)


def shows(out, ranks):
    text = "\n".join(out)
    for r in ranks:
        pats = [rf"\[default{r}\]:", rf"rank\s+:\s+{r} \(local_rank: \d+\)\n\s+exitcode\s+:\s+(?!-15)", rf"\brank {r}\b",
                rf"but Rank {r} is running", rf"Here is the log of rank {r}"]
        if not any(re.search(p, text, re.M) for p in pats):
            return False
    return True


def truth(prov, extra, category, accept, culprit):
    return f"{prov}\n{extra}category: {category}\naccept: {accept}\nculprit_ranks: {culprit}\n"


def main():
    raw, outdir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    for job in sorted(p for p in raw.iterdir() if (p / "job.yaml").exists()):
        meta, prov = probelib.job_meta(job)
        case = outdir / job.name
        if case.exists():
            shutil.rmtree(case)
        shutil.copytree(job, case, ignore=shutil.ignore_patterns("job.yaml"))
        (case / "case.yaml").write_text(truth(prov, "", meta["category"], meta["accept"], meta["culprit_ranks"]))
        cul = meta["culprit_ranks"]
        ranks = [int(x) for x in re.findall(r"\d+", cul)] if cul.startswith("[") else []
        for style, arg in CUTS.get(job.name, []):
            out = cut(job, style, arg, ranks)
            name = f"{job.name}--{style}" + (f"-{arg}" if arg else "")
            c = outdir / name
            c.mkdir(parents=True, exist_ok=True)
            (c / "issue.txt").write_text("\n".join(out) + "\n")
            culprit = cul if cul in ("[]", "unknown") else (cul if shows(out, ranks) else "unknown")
            accept, why = meta["accept"], ""
            if name in OVERRIDES:
                acc, c_over, why = OVERRIDES[name]
                accept, culprit, why = f"[{', '.join(acc)}]", c_over or culprit, f"# why: {why}\n"
            extra = f"# excerpt: tools/probe61/cut.py cut {style} {arg} (one pasted file; culprit kept only when the excerpt still shows it)\n{why}"
            (c / "case.yaml").write_text(truth(prov, extra, meta["category"], accept, culprit))


if __name__ == "__main__":
    main()
