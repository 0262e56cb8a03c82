"""A fixed glibc mmap threshold for the collector's process and the workers it starts.

glibc serves an allocation of at least ``M_MMAP_THRESHOLD`` bytes (128 KiB at start) with
a mapping of its own, returned to the kernel when freed. But it moves the threshold up to
the size of every such block freed (up to 32 MiB), so after the first request body of a
few MiB, blocks of that size come from the heap instead, between the small objects the
ingest threads keep, and a heap only shrinks from its top: the memory stays resident.
100 gzip bombs inflated in 1 MiB pieces left 20-66 MiB behind under normal load that way
(``bench/gzip_bombs.py``); with the threshold fixed at 1 MiB (which also turns glibc's
moving of it off) they leave nothing beyond the load's own 13-20 MiB.
"""

from __future__ import annotations

from ctxledger_collector.ops.malloc_arenas import set_malloc_option

#: glibc's mallopt parameter for the mmap threshold (malloc.h).
M_MMAP_THRESHOLD = -3
#: The variable glibc itself reads at start-up; an operator's value is left alone.
ENVIRONMENT_VARIABLE = "MALLOC_MMAP_THRESHOLD_"


def fix_mmap_threshold(threshold_bytes: int) -> bool:
    """Serve every allocation of ``threshold_bytes`` or more with a mapping of its own,
    in this process and the processes it starts (see
    :func:`~ctxledger_collector.ops.malloc_arenas.set_malloc_option`)."""
    return set_malloc_option(M_MMAP_THRESHOLD, threshold_bytes, ENVIRONMENT_VARIABLE)
