"""Process-wide tuning of the C allocator, for the command line only (`hanglens.cli._read_and_analyze`).

glibc's malloc serves a block of 128 KiB or more with its own `mmap`, and gives it back to the system when
it is freed; but on the first such free it raises that threshold to the block's size (up to 32 MiB), so
that from then on such blocks come from the heap, which only gives back what is free at its top. A job's
analysis makes and frees many blocks of that size (pandas' arrays of a table's columns, the lists of
rows they are built from): with the threshold raised, the heap keeps their holes. Fixing the threshold at
its default (which also turns the raising off) keeps every such block an `mmap` of its own, given back when
freed. Set after reading, not before: the reader's big blocks (shape (b)) would each pay a fresh mapping
(about 10 % more CPU, measured). Shape (c) at 16,384 ranks (`bench_phases.py`, set from the start): the
job's process held 264 MiB after the fact tables instead of 274.

Linux with glibc only (elsewhere `mallopt` is absent or not the same allocator): anything else is a no-op.
"""

from __future__ import annotations

import sys

M_MMAP_THRESHOLD = -3       # (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's default, kept fixed


def fix_mmap_threshold() -> bool:
    """Keep glibc's mmap threshold at 128 KiB for the rest of the process; True when it was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):   # (musl has a mallopt that does nothing)
            return False
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError, TypeError):
        return False
