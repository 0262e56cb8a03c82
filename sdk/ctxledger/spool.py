"""The on-disk spool, public for the collector's ingest spool: one file per export
body, written atomically, sorted oldest first, claimed by rename so that processes
sharing a folder never take one file twice (see :mod:`ctxledger._spool`)."""

from __future__ import annotations

from ctxledger._settings import user_cache_dir
from ctxledger._spool import Claim, DiskSpool, SpoolCounter

__all__ = ["Claim", "DiskSpool", "SpoolCounter", "user_cache_dir"]
