"""Write hanglens/_patterns.py: the compiled code of hanglens's built-in regular expressions.

    python tools/precompile_patterns.py        # after changing a built-in pattern or a parser's triggers
    python tools/precompile_patterns.py --stdout   # print what the module should hold (the test compares)

`re` parses and compiles a pattern in Python (about 0.2 ms each); a run reading a small job compiles the
hundred-odd patterns its lines reach, a fifth of what hanglens itself spends on the bundled demo job. The
module holds, for every pattern of hanglens's modules (`hanglens.lazyre` stand-ins) and the parsers' trigger
tries, what `re._compiler.compile` hands `_sre.compile`, stamped with the interpreter it was made by
(implementation, version, `_sre.MAGIC`, code size, byte order). `hanglens.lazyre` uses an entry only while the
stamp matches and the pattern and flags are the ones it was made from; otherwise it compiles as before, and
tests/test_lazyre.py fails while the module is out of date for the interpreter running the tests.
"""

from __future__ import annotations

import base64
import gc
import importlib
import marshal
import pkgutil
import sys
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hanglens  # the checkout's hanglens (path set above)
from hanglens import lazyre

OUT = Path(hanglens.__file__).resolve().parent / "_patterns.py"


def patterns() -> list[tuple[Any, int]]:
    """(pattern, flags) of every built-in pattern: every module's stand-ins and the default trigger tries (run
    in a fresh process: the stand-ins are found among all the objects there are)."""
    for mod in pkgutil.walk_packages(hanglens.__path__, "hanglens."):
        if mod.name.endswith("__main__") or mod.name == "hanglens._patterns":
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:  # (an optional dependency missing: its patterns are compiled when used)
            continue
    from hanglens.ingest.dispatch import dispatch_for
    from hanglens.ingest.reader import _other_triggers, compile_triggers
    from hanglens.parsers import PARSERS

    found = {(o.pattern, o._flags) for o in gc.get_objects() if isinstance(o, lazyre.LazyPattern)}
    parsers = tuple(PARSERS)
    found.add((compile_triggers(parsers).pattern, 0))
    found.add((_other_triggers(parsers).pattern, 0))
    dispatch = dispatch_for(tuple(tuple(p.triggers) for p in parsers))
    if dispatch.pattern is not None:
        found.add((dispatch.pattern.pattern, 0))
    return sorted(found, key=lambda pf: (isinstance(pf[0], bytes), repr(pf)))


def source() -> str:
    """The text of hanglens/_patterns.py for this interpreter."""
    table = {key: lazyre.compile_parts(*key) for key in patterns()}
    blob = base64.b64encode(zlib.compress(marshal.dumps(table), 9)).decode("ascii")
    lines = [blob[i:i + 100] for i in range(0, len(blob), 100)]
    return (
        '"""Compiled code of hanglens\'s built-in regular expressions (written by\n'
        "tools/precompile_patterns.py; do not edit).\n\n"
        "`DATA`: zlib-compressed `marshal` of {(pattern, flags): what `_sre.compile` takes after the\n"
        "pattern}, for the interpreter `STAMP` names (see `hanglens.lazyre.precompiled`).\n\"\"\"\n\n"
        f"STAMP = {lazyre.code_stamp()!r}\n"
        f"COUNT = {len(table)}\n"
        "DATA = (\n" + "".join(f'    "{line}"\n' for line in lines) + ")\n"
    )


def main() -> None:
    if sys.argv[1:] == ["--stdout"]:  # (what the module should hold, for the test that it is up to date)
        sys.stdout.write(source())
        return
    OUT.write_text(source(), encoding="utf-8")
    print(f"{OUT}: {len(patterns())} patterns for {lazyre.code_stamp()}")


if __name__ == "__main__":
    main()
