"""`python -m hanglens` runs the command line."""

from hanglens.cli import app

app(prog_name="hanglens")
