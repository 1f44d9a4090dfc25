"""`python -m hanglens.parsers` prints the event catalogue (docs/events.md)."""

import sys

from hanglens.parsers import catalog_markdown

sys.stdout.write(catalog_markdown())
