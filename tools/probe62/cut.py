"""probe62 pastes: cut a few gen.py runs the way users paste them into an issue.

  rank0-only   the lines of rank 0 only (`[default0]:` / `[rank0]:` prefixed, or its --log-dir files), as a
               user pastes "the error" from the coordinator's output
  tail-N       the console's last N lines
  no-agent     the --log-dir tree without the launcher console (per-rank files only)
  grep         `grep -iE 'error|exception|fail|timed out|killed'` over the console, as a user filters it

Each cut keeps the source case's truth unless CUTS gives another culprit (decided from the cut's text
before hanglens ran, with the reason). Usage: python cut.py PROBE_DIR
"""

import pathlib
import re
import shutil
import sys

# source case, cut, new name, culprit override (None: keep), why
CUTS = [
    ("dcpfail-r2-ws3-ddp-logdir", "rank0-only", "paste-rank0-dcpfail-r2-ws3", None, ""),
    ("crash-r1-ws4-ddp-tee", "tail-45", "paste-tail-crash-r1-ws4", "unknown",
     "the last 45 lines hold only torchrun's failure table (ranks 0-3 exit 1, no error file); no line says "
     "which rank raised first"),
    ("stall-r0-ws3-fsdp1-logdir", "no-agent", "paste-rankfiles-stall-r0-ws3", None, ""),
    ("shape-r1-ws3-ddp-detail-console", "grep", "paste-grep-shape-r1-ws3", None, ""),
]
RANK0_RE = re.compile(r"^(?:\[default0\]:)?\[rank0\]:|^\[default0\]:")
GREP_RE = re.compile(r"error|exception|fail|timed out|killed", re.I)


def main():
    root = pathlib.Path(sys.argv[1])
    for src, cut, name, culprit, why in CUTS:
        s, d = root / src, root / name
        if not s.exists():
            continue
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        truth = (s / "case.yaml").read_text().splitlines()
        head = f"# cut by tools/probe62/cut.py ({cut}) from the run {src}; truth kept from its run"
        if culprit is not None:
            head += f"; culprit set to {culprit} before hanglens ran: {why}"
            truth = [x if not x.startswith("culprit_ranks:") else f"culprit_ranks: {culprit}" for x in truth]
        (d / "case.yaml").write_text("\n".join([head, *truth]) + "\n")
        console = s / "console.log" if (s / "console.log").exists() else s / "train.log"
        lines = console.read_text().splitlines(keepends=True)
        if cut == "rank0-only":
            if (s / "logs").exists():
                for f in sorted((s / "logs").glob("*/attempt_*/0/*.log")):
                    (d / f"rank0_{f.name}").write_text(f.read_text())
            else:
                (d / "rank0.txt").write_text("".join(x for x in lines if RANK0_RE.match(x)))
        elif cut.startswith("tail-"):
            (d / "console.log").write_text("".join(lines[-int(cut[5:]):]))
        elif cut == "no-agent":
            shutil.copytree(s / "logs", d / "logs")
        elif cut == "grep":
            (d / "errors.txt").write_text("".join(x for x in lines if GREP_RE.search(x)))
        print(name)


if __name__ == "__main__":
    main()
