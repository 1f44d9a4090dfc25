"""Write the precompiled modules of the HTML report templates (hanglens/report/html.py, PRECOMPILED).

    python tools/precompile_templates.py          # after editing hanglens/report/templates/report.html.j2

Each module holds jinja2's compiled Python for one template, stamped with a fingerprint of the template's
text, the jinja2 version and the environment's syntax options; hanglens uses it only while the stamp
matches (otherwise it compiles the template's text, as before), and tests/report/test_report_html.py
fails while a module is out of date.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hanglens.report import html  # the checkout's hanglens (path set above)


def main() -> None:
    env = html._environment(False)
    for name, module in sorted(html.PRECOMPILED.items()):
        spec = importlib.util.find_spec(module.rpartition(".")[0])
        assert spec is not None and spec.submodule_search_locations
        path = Path(next(iter(spec.submodule_search_locations))) / (module.rpartition(".")[2] + ".py")
        path.write_text(html.precompiled_source(env, name), encoding="utf-8")
        print(f"{path}: {name}")


if __name__ == "__main__":
    main()
