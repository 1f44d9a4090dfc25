"""`python -m hanglens` and the `hanglens` console script: the command line (hanglens.cli).

`hanglens --version` is answered here, before typer and the CLI are imported, so it stays instant.
"""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    """Run the command line with `sys.argv`."""
    if sys.argv[1:] == ["--version"]:
        from hanglens import __version__

        try:
            sys.stdout.write(f"hanglens {__version__}\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `hanglens --version | true`: quiet, as hanglens.cli.EXIT_STDOUT_CLOSED
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(141)
        return
    # hanglens does no linear algebra: the OpenBLAS thread pool numpy starts on import is pure start-up
    # cost (more so on a busy machine). An explicit setting, and every other BLAS, is left alone.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # pydantic validates only hanglens's own rule schema (and typer's options, for which typer turns plugins
    # off itself): looking for pydantic plugins scans the metadata of every installed package (about 0.01 s
    # on a small environment, more on a big one) for hooks that have nothing of the user's to observe.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    # typer and the command definitions live until exit: imported with the collector paused, then frozen,
    # no collection walks them (hanglens.cli._import_frozen does the same for the reader and pandas).
    from hanglens._frozen import import_frozen

    import_frozen("hanglens.cli")
    from hanglens import cli

    cli.OWNS_PROCESS = True
    try:
        cli.app(prog_name="hanglens")
    finally:
        # The command is done (typer exits through here). Interpreter shutdown would run several full
        # garbage collections over the ~10^5 objects pandas, numpy and pyarrow created on import, only
        # to free memory the OS takes back anyway (about 0.2 s of CPU); frozen objects are skipped.
        # Exit handlers still run and refcounted objects (open files) are still closed.
        gc.freeze()


if __name__ == "__main__":
    main()
