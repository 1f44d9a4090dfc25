"""probe59 pastes: cut a few gen.py runs the way users paste them into an issue.

  rank0-only   the lines of rank 0 only (`[rank0]:` / `[default0]:` prefixed, or its --log-dir file),
               as a user pastes "the error" from the coordinator's output
  tail-N       the console's last N lines
  no-agent     the --log-dir tree without the launcher console (per-rank files only)

Each cut keeps the source case's truth (when the cut leaves too little to name the culprit, the truth is
amended here, before hanglens runs, with the reason). Usage: python cut.py PROBE_DIR
"""

import pathlib
import re
import shutil
import sys

# source case, cut, new name, culprit override (None: keep)
CUTS = [
    ("readonly-r2-ws4-ddp-tee", "rank0-only", "paste-rank0-readonly-r2-ws4", None),
    ("shape-load-r1-ws3-ddp-tee", "rank0-only", "paste-rank0-shape-load-r1-ws3", None),
    # amended after the first scoring: the last 45 lines hold only torchrun's failure table (ranks 0-2
    # exit 1, rank 3 SIGTERM); no line says which rank's save failed
    ("full-node-r2-r3-ws4-fsdp-tee", "tail-45", "paste-tail-full-node-r2-r3-ws4", "unknown"),
    ("sdraise-r1-r4-ws6-ddp-logdir", "no-agent", "paste-rankfiles-sdraise-r1-r4-ws6", None),
]
RANK0_RE = re.compile(r"^(?:\[default0\]:)?\[rank0\]:|^\[default0\]:")


def main():
    root = pathlib.Path(sys.argv[1])
    for src, cut, name, culprit in CUTS:
        s, d = root / src, root / name
        if not s.exists():
            continue
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        truth = (s / "case.yaml").read_text().splitlines()
        head = f"# cut by tools/probe59/cut.py ({cut}) from the run {src}; truth kept from its run"
        if culprit is not None:
            head += (f"; culprit amended to {culprit} after the first scoring: the cut keeps no line that "
                     "names the failing ranks")
        if culprit is not None:
            truth = [x if not x.startswith("culprit_ranks:") else f"culprit_ranks: {culprit}" for x in truth]
        (d / "case.yaml").write_text("\n".join([head, *truth]) + "\n")
        lines = (s / "console.log").read_text().splitlines(keepends=True)
        if cut == "rank0-only":
            (d / "rank0.txt").write_text("".join(x for x in lines if RANK0_RE.match(x)))
        elif cut.startswith("tail-"):
            (d / "console.log").write_text("".join(lines[-int(cut[5:]):]))
        elif cut == "no-agent":
            shutil.copytree(s / "logs", d / "logs")
        print(name)


if __name__ == "__main__":
    main()
