"""The per-trace advisory locks every writer takes on PostgreSQL (ingest, the sweep,
retention), so two collector processes never judge or remove one trace at once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import Connection

from ctxledger_collector.storage.statements import ARRAY_MARK


def advisory_key(trace_id: str) -> int:
    """The transaction-level advisory lock key of one trace (ingest, sweep, retention)."""
    digest = hashlib.blake2b(trace_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_traces(connection: Connection, trace_ids: Iterable[str]) -> None:
    """Take each trace's advisory lock for the transaction (PostgreSQL; nothing on
    SQLite), in the order of the trace ids, as every writer does, so two writers never
    wait on each other in a circle. One statement however many traces a batch holds."""
    if connection.dialect.name != "postgresql":
        return
    keys = [advisory_key(trace_id) for trace_id in sorted(set(trace_ids))]
    if keys:
        connection.exec_driver_sql(
            "SELECT pg_advisory_xact_lock(u.key) "
            f"FROM unnest({ARRAY_MARK}::int8[]) WITH ORDINALITY AS u(key, n) ORDER BY u.n",
            (keys,),
        )
