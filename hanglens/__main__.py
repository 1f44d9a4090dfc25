"""`python -m hanglens` and the `hanglens` console script: the command line (hanglens.cli).

`hanglens --version` is answered here, before typer and the CLI are imported, so it stays instant.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line with `sys.argv`."""
    if sys.argv[1:] == ["--version"]:
        from hanglens import __version__

        sys.stdout.write(f"hanglens {__version__}\n")
        return
    from hanglens.cli import app

    app(prog_name="hanglens")


if __name__ == "__main__":
    main()
