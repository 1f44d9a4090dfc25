# ruff: noqa: E501
# (a probe generator kept for provenance: long case tables, log calls written the way users write them)
"""Run a command and record every line it writes, with the time it arrived and its stream (probe47).

Usage: capture.py OUT.jsonl -- CMD...   Writes one {"t": epoch seconds, "stream": "stdout"|"stderr", "line": text}
record per line, in arrival order, and exits with the command's status. This is what a log agent sees (Docker's
json-file driver, the kubelet's CRI log, journald's stream): the raw capture the exporters in gen.py reshape.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time


def main() -> int:
    out = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    carry = {"stdout": b"", "stderr": b""}
    with open(out, "w") as f:
        open_streams = 2
        while open_streams:
            for key, _ in sel.select():
                data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                name = key.data
                if not data:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    if carry[name]:
                        f.write(json.dumps({"t": time.time(), "stream": name,
                                            "line": carry[name].decode("utf-8", "replace")}) + "\n")
                    continue
                buf = carry[name] + data
                *lines, carry[name] = buf.split(b"\n")
                now = time.time()
                for ln in lines:
                    f.write(json.dumps({"t": now, "stream": name, "line": ln.decode("utf-8", "replace")}) + "\n")
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
